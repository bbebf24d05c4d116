/* The knobs in force: one process-wide struct, set by the program, read by every module. */
#include "tiles/tune.h"

static tsr_tune knobs = {.gpu_grid_blocks = -1};

tsr_tune
tsr_tune_defaults(void)
{
    return (tsr_tune){.gpu_grid_blocks = -1};
}

const tsr_tune *
tsr_tune_get(void)
{
    return &knobs;
}

void
tsr_tune_set(const tsr_tune *t)
{
    knobs = t ? *t : tsr_tune_defaults();
}
