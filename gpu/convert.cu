/* The output conversion on the device (docs/format.md §7): root values to 8/16-bit samples in
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
    if (g->stab_o != o) { /* once per output: the 16-bit table takes a few ms of host time */
        tsr_sample_table_free(&g->stab);
        g->stab_o = NULL;
        if (tsr_sample_table_make(o, &g->stab, err) != TSR_OK)
            return TSR_ENOMEM;
        g->stab_o = o;
    }
    if (g->stab.dir != 0 && g->stab.smax > g->stab.smin) {
        c->thr = (const float *)tsr_gpu_resident(
            g, g->stab.thr, (size_t)(g->stab.smax - g->stab.smin) * sizeof(float), err);
        if (!c->thr)
            return TSR_ENOMEM;
        c->smin = g->stab.smin;
        c->smax = g->stab.smax;
        c->dir = g->stab.dir;
        c->flo = (float)c->lo;
        c->finv = (float)(1.0 / (c->hi - c->lo));
        c->fmax = (float)c->max;
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

/* A periodic root's samples, from its converted period (engine.c makes it once on the host,
 * with the CPU's conversion: the same bits). Each thread writes 16 bytes of a band row as one
 * aligned store; byte k of the rect's row is byte (x0b + k) mod prow of period row
 * (py0 + b) mod ph. A thread finds its phase with one remainder and then steps it, none per
 * vector. A block takes PF_VECS vectors of a row; rows go round the grid's y.
 *
 * SH (the period row fits shared memory, the common case: small motifs): each block copies
 * the row there, repeated to 2 x prow + 32 bytes, so a vector's 16 bytes are contiguous from
 * its phase and are read as five aligned words realigned by funnel shifts (byte gathers held
 * the fill at 28 % of the device's store bandwidth). Otherwise they are gathered byte by byte
 * from the period in global memory, through the L1. */
#define PF_VECS 1024

template <bool SH>
__device__ static inline uint4
pf_vec(const uint32_t *D32, const uint8_t *src, uint32_t prow, uint32_t s)
{
    if constexpr (SH) {
        uint32_t w = s >> 2, sh = (s & 3) * 8, v[5];
        for (int q = 0; q < 5; q++)
            v[q] = D32[w + q];
        return make_uint4(__funnelshift_r(v[0], v[1], sh), __funnelshift_r(v[1], v[2], sh),
                          __funnelshift_r(v[2], v[3], sh), __funnelshift_r(v[3], v[4], sh));
    } else {
        uint32_t w[4];
        for (int q = 0; q < 4; q++) {
            uint32_t v = 0;
            for (int i = 0; i < 4; i++) {
                v |= (uint32_t)__ldg(src + s) << (8 * i);
                s = s + 1 == prow ? 0 : s + 1;
            }
            w[q] = v;
        }
        return make_uint4(w[0], w[1], w[2], w[3]);
    }
}

template <bool SH>
static __global__ void
period_fill_kernel(const uint8_t *__restrict__ per, uint32_t prow, uint32_t ph, uint32_t py0,
                   uint32_t x0b, int64_t rows, size_t len, uint8_t *dst, size_t pitch,
                   size_t xoff, int64_t row0, int64_t h, bool up, uint32_t dlen)
{
    extern __shared__ uint32_t D32[];
    uint8_t *D = (uint8_t *)D32;
    const uint32_t step = (uint32_t)((size_t)blockDim.x * 16 % prow); /* a thread's stride */
    for (int64_t b = blockIdx.y; b < rows; b += gridDim.y) {
        int64_t row = row0 + b;
        uint8_t *d = dst + (size_t)(up ? h - 1 - row : row) * pitch + xoff;
        const uint8_t *src = per + (size_t)((py0 + (uint64_t)b) % ph) * prow;
        if constexpr (SH) {
            __syncthreads(); /* the last row's readers are done with D */
            for (uint32_t i = threadIdx.x, j = threadIdx.x % prow; i < dlen; i += blockDim.x) {
                D[i] = __ldg(src + j);
                j += blockDim.x % prow;
                j = j >= prow ? j - prow : j;
            }
            __syncthreads();
        }
        size_t lead = (size_t)((16 - ((uintptr_t)d & 15)) & 15); /* bytes before d is aligned */
        if (lead > len)
            lead = len;
        size_t nvec = (len - lead) / 16;
        for (size_t c = blockIdx.x; c * PF_VECS < nvec + 2; c += gridDim.x) {
            size_t t = c * PF_VECS + threadIdx.x, t1 = (c + 1) * PF_VECS;
            t1 = t1 < nvec + 2 ? t1 : nvec + 2;
            if (t < 2) { /* t = 0: the unaligned head, t = 1: the tail */
                size_t k0 = t == 0 ? 0 : lead + nvec * 16, n = t == 0 ? lead : len - k0;
                uint32_t s = (uint32_t)((x0b + k0) % prow);
                for (size_t i = 0; i < n; i++) {
                    d[k0 + i] = SH ? D[s] : __ldg(src + s);
                    s = s + 1 == prow ? 0 : s + 1;
                }
                t += blockDim.x;
            }
            /* t >= 2: the aligned vectors */
            uint32_t s = (uint32_t)((x0b + lead + (t - 2) * 16) % prow);
            for (; t < t1; t += blockDim.x) {
                *(uint4 *)(d + lead + (t - 2) * 16) = pf_vec<SH>(D32, src, prow, s);
                s += step;
                s = s >= prow ? s - prow : s;
            }
        }
    }
}

extern "C" tsr_status
tsr_gpu_period_fill(tsr_gpu *g, const uint8_t *period, int64_t pw, int64_t ph, int64_t px,
                    int64_t py, tsr_rect r, const tsr_gpu_out *to, tsr_error *err)
{
    int64_t bps = to->o->depth == 16 ? 2 : 1;
    if (r.w <= 0 || r.h <= 0)
        return TSR_OK;
    if (pw <= 0 || ph <= 0 || pw * bps > UINT32_MAX || ph > UINT32_MAX)
        return tsr_fail(err, TSR_EINTERNAL, "gpu: period of %lld x %lld px out of range",
                        (long long)pw, (long long)ph);
    uint32_t prow = (uint32_t)(pw * bps);
    uint32_t x0b = (uint32_t)(tsr_floor_mod(r.x - px, pw) * bps);
    uint32_t py0 = (uint32_t)tsr_floor_mod(r.y - py, ph);
    size_t len = (size_t)(r.w * bps), nvec = len / 16 + 2;
    /* the period row repeated, with room for the last vector's fifth word */
    size_t dlen = ((size_t)prow * 2 + 32 + 3) & ~(size_t)3;
    size_t bx = (nvec + PF_VECS - 1) / PF_VECS;
    size_t by = (TSR_GRID_BLOCKS + bx - 1) / bx;
    by = by > (size_t)r.h ? (size_t)r.h : by;
    dim3 grid(bx > 65535 ? 65535 : (unsigned)bx, by > 65535 ? 65535 : (unsigned)by);
    size_t xoff = (size_t)((r.x - to->x0) * bps);
    if (dlen <= 48 * 1024)
        period_fill_kernel<true><<<grid, 256, dlen, g->compute>>>(
            period, prow, (uint32_t)ph, py0, x0b, r.h, len, to->dst, to->pitch, xoff,
            r.y - to->y0, to->h, to->up, (uint32_t)dlen);
    else
        period_fill_kernel<false><<<grid, 256, 0, g->compute>>>(
            period, prow, (uint32_t)ph, py0, x0b, r.h, len, to->dst, to->pitch, xoff,
            r.y - to->y0, to->h, to->up, 0);
    TSR_LAUNCHED("period fill", err);
    return TSR_OK;
}
