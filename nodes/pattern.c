/* pattern: the child placed with its pixel (0,0) at parent (ox, oy); covers the child rect. */
#include "nodes/nodes.h"

#include <string.h>

static size_t
need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    tsr_rect c = tsr_edge_covered(e, pr);
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
    tsr_rect c = tsr_edge_covered(e, pr);
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

/* a copy: the layer at p is the child pixel p - o */
static void
halo(const tsr_edge *e, int64_t h[2])
{
    (void)e;
    h[0] = h[1] = 0;
}

const tsr_trait tsr_trait_pattern = {
    .name = "pattern",
    .params = NULL,
    .nparams = 0,
    .params_size = 0,
    .need = need,
    .layer = layer,
    .halo = halo,
};
