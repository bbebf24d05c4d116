/* The output conversion on the device (DESIGN.md §2.4): root values to 8/16-bit samples in
 * their place in the band buffer, rows flipped for bands written bottom-up, with
 * nodes/pointwise.h's range, clamp, calibration and rounding in double. */
#include "gpu/gpu_int.cuh"

struct conv_args {
    const float *in;
    tsr_rect r;
    int64_t x0, y0, h;
    bool up;
    uint8_t *dst;
    size_t pitch;
    double lo, hi, max;
    const double (*cal)[2];
    int64_t ncal;
    int bps;
};

static __global__ void
convert_kernel(conv_args a)
{
    TSR_FOR_PIXELS(a.r.w, a.r.h, lx, ly) {
        int64_t row = a.r.y + ly - a.y0;
        if (a.up)
            row = a.h - 1 - row;
        double t = tsr_pw_to_unit(a.lo, a.hi, a.cal, a.ncal, (double)a.in[ly * a.r.w + lx]);
        uint32_t s = tsr_pw_sample(t, a.max);
        uint8_t *d = a.dst + (size_t)row * a.pitch + (size_t)(a.r.x + lx - a.x0) * a.bps;
        d[0] = (uint8_t)(s & 0xff);
        if (a.bps == 2)
            d[1] = (uint8_t)(s >> 8);
    }
}

extern "C" tsr_status
tsr_gpu_convert(tsr_gpu *g, const tsr_output *o, tsr_gpu_buf in, int64_t x0, int64_t y0,
                int64_t h, bool up, uint8_t *dst, size_t pitch, tsr_error *err)
{
    conv_args a;
    memset(&a, 0, sizeof a);
    a.in = in.px;
    a.r = in.r;
    a.x0 = x0;
    a.y0 = y0;
    a.h = h;
    a.up = up;
    a.dst = dst;
    a.pitch = pitch;
    a.lo = o->range[0];
    a.hi = o->range[1];
    a.bps = o->depth == 16 ? 2 : 1;
    a.max = o->depth == 16 ? 65535.0 : 255.0;
    if (o->calibration.n >= 2) {
        a.cal = (const double (*)[2])tsr_gpu_resident(g, o->calibration.p,
                                                      o->calibration.n * sizeof(double[2]), err);
        if (!a.cal)
            return TSR_ENOMEM;
        a.ncal = (int64_t)o->calibration.n;
    }
    convert_kernel<<<tsr_grid2(in.r.w, in.r.h), 256, 0, g->compute>>>(a);
    TSR_LAUNCHED("convert", err);
    return TSR_OK;
}
