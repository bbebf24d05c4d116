/* transform on the GPU: one thread per parent pixel maps its centre into the child, samples the
 * child with the edge's filter and blends the value into P (or sends the sample out), in one
 * launch: no layer buffer. The map, the weights, the edge mode and the sum are
 * nodes/transform_math.h's, which nodes/transform.c runs too, so the values are the CPU's bit
 * for bit (docs/transforms.md). The child buffer holds the bounding box of what need() asked
 * for, which holds every pixel a covered pixel's footprint reads. */
#include "gpu/gpu_int.cuh"

#include "nodes/transform_math.h"

#define THREADS 256

/* The child buffer: child pixel (x, y) at px[(y - y0) * stride + (x - x0)]. */
typedef struct xf_src {
    const float *px;
    int64_t x0, y0, stride;
} xf_src;

static __device__ float
layer_at(const tsr_xf &f, const xf_src &s, double u, double v)
{
    const int filter = f.filter, n = tsr_xf_taps(filter);
    double wx[4], wy[4];
    int64_t kx = tsr_xf_weights(filter, u, wx), ky = tsr_xf_weights(filter, v, wy);
    int64_t ix[4];
    for (int a = 0; a < n; a++)
        ix[a] = tsr_xf_index(f.edge, kx + a, f.cw);
    float c[16];
    for (int b = 0; b < n; b++) {
        int64_t iy = tsr_xf_index(f.edge, ky + b, f.ch);
        for (int a = 0; a < n; a++)
            c[b * 4 + a] = (iy < 0 || ix[a] < 0) ? 0.0f
                                                 : s.px[(iy - s.y0) * s.stride + (ix[a] - s.x0)];
    }
    return tsr_xf_combine(filter, c, wx, wy);
}

static __global__ void
transform_k(tsr_xf f, xf_src s, float *P, tsr_rect Pr, int blend, int mask)
{
    TSR_FOR_PIXELS(Pr.w, Pr.h, lx, ly) {
        int64_t x = Pr.x + lx, y = Pr.y + ly;
        double u = tsr_xf_u(&f, x, tsr_xf_row_u(&f, y)), v = tsr_xf_v(&f, x, tsr_xf_row_v(&f, y));
        if (!tsr_xf_covers(&f, u, v))
            continue;
        float *p = P + ly * Pr.w + lx;
        *p = tsr_pw_apply(blend, mask, *p, layer_at(f, s, u, v), 1);
    }
}

/* The same with every pixel of P.r out as a sample (the root chunk's last edge). */
static __global__ void
transform_out_k(tsr_xf f, xf_src s, const float *P, tsr_rect Pr, int blend, int mask,
                tsr_gpu_conv c)
{
    TSR_FOR_PIXELS(Pr.w, Pr.h, lx, ly) {
        int64_t x = Pr.x + lx, y = Pr.y + ly;
        double u = tsr_xf_u(&f, x, tsr_xf_row_u(&f, y)), v = tsr_xf_v(&f, x, tsr_xf_row_v(&f, y));
        float p = P[ly * Pr.w + lx];
        if (tsr_xf_covers(&f, u, v))
            p = tsr_pw_apply(blend, mask, p, layer_at(f, s, u, v), 1);
        tsr_gpu_put(c, x, y, p);
    }
}

extern "C" bool
tsr_gpu_transform_can(const tsr_edge *e)
{
    (void)e;
    return true;
}

extern "C" tsr_status
tsr_gpu_transform(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,
                  const tsr_gpu_out *to, tsr_error *err)
{
    const char *where = e->where ? e->where : "transform";
    tsr_rect need[TSR_NEED_MAX], bb = tsr_rect_make(0, 0, 0, 0);
    size_t nn = e->trait->need(e, P.r, need);
    if (nn == 0) /* the layer misses P: P as it is */
        return to ? tsr_gpu_blend_rect(g, e, P, tsr_rect_make(0, 0, 0, 0), NULL, to, err)
                  : TSR_OK;
    for (size_t i = 0; i < nn; i++)
        bb = tsr_rect_union(bb, need[i]);
    if (!tsr_rect_contains(child.r, bb))
        return tsr_fail(err, TSR_EINTERNAL,
                        "%s: gpu transform: the child buffer %lldx%lld+%lld+%lld does not hold "
                        "%lldx%lld+%lld+%lld",
                        where, (long long)child.r.w, (long long)child.r.h, (long long)child.r.x,
                        (long long)child.r.y, (long long)bb.w, (long long)bb.h, (long long)bb.x,
                        (long long)bb.y);
    tsr_xf f;
    if (e->state)
        f = *(const tsr_xf *)e->state;
    else
        tsr_transform_map(e, &f);
    xf_src s = {child.px, child.r.x, child.r.y, child.r.w};
    if (to) {
        tsr_gpu_conv c;
        tsr_status st = tsr_gpu_conv_make(g, to, &c, err);
        if (st != TSR_OK)
            return st;
        transform_out_k<<<tsr_grid2(P.r.w, P.r.h), THREADS, 0, g->compute>>>(
            f, s, P.px, P.r, (int)e->blend, e->mask, c);
    } else {
        transform_k<<<tsr_grid2(P.r.w, P.r.h), THREADS, 0, g->compute>>>(f, s, P.px, P.r,
                                                                         (int)e->blend, e->mask);
    }
    TSR_LAUNCHED("transform", err);
    return TSR_OK;
}
