/* Optical surfaces on the device (docs/optics.md): one thread per pixel through
 * nodes/surface_math.h, the very functions the CPU runs (nodes/surface.c), so both give the same
 * bits; the source's constants (tsr_surf) go by value. */
#include "gpu/gpu_int.cuh"
#include "nodes/surface_math.h"

struct surf_args {
    tsr_rect r;      /* out's rect */
    float *out;
    tsr_gpu_conv to; /* to.dst: samples instead of floats */
    float fill;
    tsr_surf s;
};

static __global__ void
surface_kernel(surf_args a)
{
    TSR_FOR_PIXELS(a.r.w, a.r.h, lx, ly) {
        int64_t x = a.r.x + lx, y = a.r.y + ly;
        float v = tsr_sf_pixel(&a.s, x, y, a.fill);
        if (a.to.dst)
            tsr_gpu_put(a.to, x, y, v);
        else
            a.out[ly * a.r.w + lx] = v;
    }
}

extern "C" bool
tsr_gpu_src_surface_can(const tsr_source *s)
{
    (void)s;
    return true;
}

extern "C" tsr_status
tsr_gpu_src_surface(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
                    tsr_error *err)
{
    surf_args a;
    memset(&a, 0, sizeof a);
    tsr_status st = tsr_gpu_conv_make(g, to, &a.to, err);
    if (st != TSR_OK)
        return st;
    a.r = out.r;
    a.out = out.px;
    a.fill = n->fill;
    tsr_surf_make(n->source, &a.s);
    surface_kernel<<<tsr_grid2(a.r.w, a.r.h), 256, 0, g->compute>>>(a);
    TSR_LAUNCHED("surface", err);
    return TSR_OK;
}
