/* pattern (the child placed at the edge's offset), the blend of a layer that covers one rect
 * (pattern, distance, blur), and a periodic node's gather from its period tile. */
#include "gpu/gpu_int.cuh"

/* P over the part `pr` of P.r that the layer covers; L(x, y) for parent pixel (x, y) is
 * L[(y - Ly) * lstride + (x - Lx)]. */
static __global__ void
blend_kernel(float *P, tsr_rect Pr, tsr_rect pr, const float *L, int64_t Lx, int64_t Ly,
             int64_t lstride, int blend, int mask)
{
    TSR_FOR_PIXELS(pr.w, pr.h, lx, ly) {
        int64_t x = pr.x + lx, y = pr.y + ly;
        float *p = P + (y - Pr.y) * Pr.w + (x - Pr.x);
        *p = tsr_pw_apply(blend, mask, *p, L[(y - Ly) * lstride + (x - Lx)], 1);
    }
}

/* The same over all of P.r, every pixel out as a sample (the root's last edge). */
static __global__ void
blend_out_kernel(const float *P, tsr_rect Pr, tsr_rect pr, const float *L, int64_t Lx,
                 int64_t Ly, int64_t lstride, int blend, int mask, tsr_gpu_conv c)
{
    TSR_FOR_PIXELS(Pr.w, Pr.h, lx, ly) {
        int64_t x = Pr.x + lx, y = Pr.y + ly;
        float p = P[ly * Pr.w + lx];
        if (x >= pr.x && x < pr.x + pr.w && y >= pr.y && y < pr.y + pr.h)
            p = tsr_pw_apply(blend, mask, p, L[(y - Ly) * lstride + (x - Lx)], 1);
        tsr_gpu_put(c, x, y, p);
    }
}

/* Blend layer values held at child rect lr (child coordinates, stride lr.w) over the child
 * rect cr it covers. */
static tsr_status
blend_layer(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_rect cr, const float *L,
            tsr_rect lr, const tsr_gpu_out *to, tsr_error *err)
{
    if (to) {
        tsr_gpu_conv c;
        tsr_status st = tsr_gpu_conv_make(g, to, &c, err);
        if (st != TSR_OK)
            return st;
        tsr_rect pr = tsr_rect_empty(cr) ? tsr_rect_make(P.r.x, P.r.y, 0, 0)
                                          : tsr_rect_shift(cr, e->offset[0], e->offset[1]);
        blend_out_kernel<<<tsr_grid2(P.r.w, P.r.h), 256, 0, g->compute>>>(
            P.px, P.r, pr, L, lr.x + e->offset[0], lr.y + e->offset[1], lr.w, (int)e->blend,
            e->mask, c);
        TSR_LAUNCHED("blend", err);
        return TSR_OK;
    }
    if (tsr_rect_empty(cr))
        return TSR_OK;
    tsr_rect pr = tsr_rect_shift(cr, e->offset[0], e->offset[1]);
    blend_kernel<<<tsr_grid2(pr.w, pr.h), 256, 0, g->compute>>>(
        P.px, P.r, pr, L, lr.x + e->offset[0], lr.y + e->offset[1], lr.w, (int)e->blend,
        e->mask);
    TSR_LAUNCHED("blend", err);
    return TSR_OK;
}

tsr_status
tsr_gpu_blend_rect(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_rect cr, const float *L,
                   const tsr_gpu_out *to, tsr_error *err)
{
    return blend_layer(g, e, P, cr, L, cr, to, err);
}

/* Every edge of this trait runs on the device (nodes/traits.def). */
extern "C" bool
tsr_gpu_pattern_can(const tsr_edge *e)
{
    (void)e;
    return true;
}

extern "C" tsr_status
tsr_gpu_pattern(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,
                const tsr_gpu_out *to, tsr_error *err)
{
    tsr_rect cr = tsr_edge_covered(e, P.r);
    return blend_layer(g, e, P, cr, child.px, child.r, to, err);
}

static __global__ void
periodic_kernel(const float *period, int64_t pw, int64_t ph, float *out, tsr_rect r)
{
    TSR_FOR_PIXELS(r.w, r.h, lx, ly) {
        int64_t x = r.x + lx, y = r.y + ly;
        out[ly * r.w + lx] = period[tsr_dfloor_mod(y, ph) * pw + tsr_dfloor_mod(x, pw)];
    }
}

/* The same where every index fits 32 bits (a period of at most 1 Mpx, regions below 2^31 px a
 * side: every chunk): the rect's start is reduced on the host, so a pixel costs two 32-bit
 * remainders instead of two 64-bit ones, which the GPU emulates (ncu: the 64-bit kernel was
 * compute-bound at 75 % of the SMs, 13 % of memory bandwidth). */
static __global__ void
periodic32_kernel(const float *period, uint32_t pw, uint32_t ph, uint32_t x0, uint32_t y0,
                  float *out, uint32_t w, uint32_t h)
{
    for (uint32_t ly = blockIdx.y; ly < h; ly += gridDim.y) {
        const float *row = period + (size_t)((y0 + ly) % ph) * pw;
        float *o = out + (size_t)ly * w;
        for (uint32_t lx = blockIdx.x * blockDim.x + threadIdx.x; lx < w; lx += gridDim.x * blockDim.x)
            o[lx] = row[(x0 + lx) % pw];
    }
}

extern "C" tsr_status
tsr_gpu_periodic(tsr_gpu *g, const float *period, int64_t pw, int64_t ph, tsr_gpu_buf out,
                 tsr_error *err)
{
    const int64_t lim = (int64_t)1 << 31;
    if (pw < lim && ph < lim && out.r.w < lim - pw && out.r.h < lim - ph)
        periodic32_kernel<<<tsr_grid2(out.r.w, out.r.h), 256, 0, g->compute>>>(
            period, (uint32_t)pw, (uint32_t)ph, (uint32_t)tsr_floor_mod(out.r.x, pw),
            (uint32_t)tsr_floor_mod(out.r.y, ph), out.px, (uint32_t)out.r.w, (uint32_t)out.r.h);
    else
        periodic_kernel<<<tsr_grid2(out.r.w, out.r.h), 256, 0, g->compute>>>(period, pw, ph,
                                                                           out.px, out.r);
    TSR_LAUNCHED("periodic", err);
    return TSR_OK;
}
