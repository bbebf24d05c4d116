/* The output conversion on the device (DESIGN.md §2.4): root values to 8/16-bit samples in
 * their place in the band buffer, rows flipped for bands written bottom-up, with
 * nodes/pointwise.h's range, clamp, calibration and rounding in double (tsr_gpu_put). */
#include "gpu/gpu_int.cuh"

tsr_status
tsr_gpu_conv_make(tsr_gpu *g, const tsr_gpu_out *to, tsr_gpu_conv *c, tsr_error *err)
{
    memset(c, 0, sizeof *c);
    if (!to)
        return TSR_OK;
    const tsr_output *o = to->o;
    c->dst = to->dst;
    c->pitch = to->pitch;
    c->x0 = to->x0;
    c->y0 = to->y0;
    c->h = to->h;
    c->up = to->up;
    c->lo = o->range[0];
    c->hi = o->range[1];
    c->bps = o->depth == 16 ? 2 : 1;
    c->max = o->depth == 16 ? 65535.0 : 255.0;
    if (o->calibration.n >= 2) {
        c->cal = (const double (*)[2])tsr_gpu_resident(g, o->calibration.p,
                                                       o->calibration.n * sizeof(double[2]), err);
        if (!c->cal)
            return TSR_ENOMEM;
        c->ncal = (int64_t)o->calibration.n;
    }
    return TSR_OK;
}

static __global__ void
convert_kernel(const float *in, tsr_rect r, tsr_gpu_conv c)
{
    TSR_FOR_PIXELS(r.w, r.h, lx, ly)
        tsr_gpu_put(c, r.x + lx, r.y + ly, in[ly * r.w + lx]);
}

extern "C" tsr_status
tsr_gpu_convert(tsr_gpu *g, tsr_gpu_buf in, const tsr_gpu_out *to, tsr_error *err)
{
    tsr_gpu_conv c;
    tsr_status st = tsr_gpu_conv_make(g, to, &c, err);
    if (st != TSR_OK)
        return st;
    convert_kernel<<<tsr_grid2(in.r.w, in.r.h), 256, 0, g->compute>>>(in.px, in.r, c);
    TSR_LAUNCHED("convert", err);
    return TSR_OK;
}
