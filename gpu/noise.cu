/* Seeded noise on the device (docs/optics.md): one thread per pixel through
 * nodes/noise_math.h, the very hash and arithmetic the CPU runs (nodes/noise.c). */
#include "gpu/gpu_int.cuh"
#include "nodes/noise_math.h"

struct noise_args {
    tsr_rect r;      /* out's rect */
    float *out;
    tsr_gpu_conv to; /* to.dst: samples instead of floats */
    tsr_noise n;
};

static __global__ void
noise_kernel(noise_args a)
{
    TSR_FOR_PIXELS(a.r.w, a.r.h, lx, ly) {
        int64_t x = a.r.x + lx, y = a.r.y + ly;
        float v = tsr_nz_pixel(&a.n, x, y);
        if (a.to.dst)
            tsr_gpu_put(a.to, x, y, v);
        else
            a.out[ly * a.r.w + lx] = v;
    }
}

extern "C" bool
tsr_gpu_src_noise_can(const tsr_source *s)
{
    (void)s;
    return true;
}

extern "C" tsr_status
tsr_gpu_src_noise(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
                  tsr_error *err)
{
    noise_args a;
    memset(&a, 0, sizeof a);
    tsr_status st = tsr_gpu_conv_make(g, to, &a.to, err);
    if (st != TSR_OK)
        return st;
    a.r = out.r;
    a.out = out.px;
    tsr_noise_make(n->source, &a.n);
    noise_kernel<<<tsr_grid2(a.r.w, a.r.h), 256, 0, g->compute>>>(a);
    TSR_LAUNCHED("noise", err);
    return TSR_OK;
}
