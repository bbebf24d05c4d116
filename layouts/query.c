/* Hierarchy checks, cell boxes, spatial indexes and window queries (to be written). */
#include "layouts/layouts.h"

#include <stdlib.h>

void
tsr_lay_index_free(void *index);

void
tsr_lay_index_free(void *index)
{
    free(index);
}

tsr_status
tsr_layout_index(tsr_layout *l, tsr_error *err)
{
    return tsr_fail(err, TSR_EINVAL, "%s: layouts are not indexed yet", l->path);
}
