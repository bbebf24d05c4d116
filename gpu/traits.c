/* The trait table's GPU column: nodes/traits.def's gpu names, turned into launchers. Plain C,
 * built with or without CUDA (without, the launchers are gpu_none.c's stubs and no device is
 * ever usable). */
#include "gpu/gpu.h"

#include <stddef.h>

/* a trait whose gpu column says none has no launcher */
#define tsr_gpu_none NULL
#define tsr_gpu_none_can NULL

const tsr_gpu_trait tsr_gpu_traits[TSR_TRAIT_COUNT] = {
#define X(id, gpu, caps) [TSR_TRAIT_##id] = {tsr_gpu_##gpu, tsr_gpu_##gpu##_can},
#include "nodes/traits.def"
#undef X
};

bool
tsr_gpu_edge_can(const tsr_edge *e)
{
    const tsr_gpu_trait *t = &tsr_gpu_traits[tsr_trait_id_of(e->trait)];
    return t->launch && t->can && t->can(e);
}
