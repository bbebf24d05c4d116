/* pattern: the child placed with its pixel (0,0) at parent (ox, oy); covers the child rect. */
#include "nodes/nodes.h"

#include <string.h>

/* The part of parent rect `pr` the child covers, in child coordinates. */
static tsr_rect
child_part(const tsr_edge *e, tsr_rect pr)
{
    tsr_rect c = tsr_rect_shift(pr, -e->offset[0], -e->offset[1]);
    return tsr_rect_intersect(c, tsr_rect_make(0, 0, e->child->w, e->child->h));
}

static size_t
need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    tsr_rect c = child_part(e, pr);
    if (tsr_rect_empty(c))
        return 0;
    out[0] = c;
    return 1;
}

static tsr_status
layer(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews, float *L,
      uint8_t *cov, tsr_error *err)
{
    (void)err;
    tsr_rect c = child_part(e, pr);
    if (tsr_rect_empty(c) || nviews == 0)
        return TSR_OK;
    int64_t lx = c.x + e->offset[0] - pr.x, ly = c.y + e->offset[1] - pr.y;
    for (int64_t y = 0; y < c.h; y++) {
        size_t at = (size_t)((ly + y) * pr.w + lx);
        memcpy(L + at, tsr_view_row(&views[0], c.x, c.y + y), (size_t)c.w * sizeof(float));
        memset(cov + at, 1, (size_t)c.w);
    }
    return TSR_OK;
}

const tsr_trait tsr_trait_pattern = {
    .name = "pattern",
    .params = NULL,
    .nparams = 0,
    .params_size = 0,
    .need = need,
    .layer = layer,
};
