/* Dithering on the device (gpu/dither.h): one thread per output byte, its 8 / bits pixels
 * computed with nodes/dither_math.h as tsr_dither_row does on the host. The edge bytes of a
 * piece keep the bits of pixels outside it (read, merged, written by that byte's one thread). */
#include "gpu/gpu_int.cuh"

extern "C" {
#include "gpu/dither.h"
}
#include "nodes/dither_math.h"

#include <stdlib.h>

struct tsr_gpu_dither {
    uint16_t *t;     /* N * N thresholds on the device */
    int k;           /* N = 2^k */
    int depth;       /* of the samples they are for */
};

extern "C" tsr_gpu_dither *
tsr_gpu_dither_new(const tsr_dither *d, int depth, tsr_error *err)
{
    if (!tsr_gpu_available()) { /* none, or hidden (TSR_NOGPU): as every GPU path says */
        char why[256];
        tsr_gpu_describe(why, sizeof why);
        tsr_fail(err, TSR_EINVAL, "gpu: dither: %s", why);
        return NULL;
    }
    const uint16_t *t = tsr_dither_thresholds(d, depth);
    if (!t) {
        tsr_fail(err, TSR_EINVAL, "gpu: dither: sample depth %d: must be 8 or 16", depth);
        return NULL;
    }
    tsr_gpu_dither *g = (tsr_gpu_dither *)calloc(1, sizeof *g);
    if (!g) {
        tsr_fail(err, TSR_ENOMEM, "gpu: dither: out of memory");
        return NULL;
    }
    int n = tsr_dither_size(d);
    while ((1 << g->k) < n)
        g->k++;
    g->depth = depth;
    size_t bytes = (size_t)n * (size_t)n * sizeof(uint16_t);
    cudaError_t e = cudaMalloc((void **)&g->t, bytes);
    if (e == cudaSuccess)
        e = cudaMemcpy(g->t, t, bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        tsr_fail(err, TSR_EIO, "gpu: dither: %s", cudaGetErrorString(e));
        cudaFree(g->t);
        free(g);
        return NULL;
    }
    return g;
}

extern "C" void
tsr_gpu_dither_free(tsr_gpu_dither *g)
{
    if (!g)
        return;
    cudaFree(g->t);
    free(g);
}

/* Sample i of a row of `depth`-bit samples (16-bit little-endian). */
__device__ static inline uint32_t
sample_of(const uint8_t *s, int depth, size_t i)
{
    return depth == 8 ? s[i] : (uint32_t)s[2 * i] | (uint32_t)s[2 * i + 1] << 8;
}

/* The launchers' one argument check: TSR_EINVAL naming them, else TSR_OK. */
static tsr_status
check_args(const tsr_gpu_dither *d, int bits, int64_t x0, int64_t y0, int64_t w, int64_t h,
           tsr_error *err)
{
    if (!d || (bits != 1 && bits != 2 && bits != 4) || x0 < 0 || y0 < 0 || w < 0 || h < 0 ||
        x0 > INT64_MAX / 8 - w)
        return tsr_fail(err, TSR_EINVAL, "gpu: dither: bad arguments (bits %d, %lld x %lld at "
                        "%lld, %lld)", bits, (long long)w, (long long)h, (long long)x0,
                        (long long)y0);
    return TSR_OK;
}

static __global__ void
dither_kernel(const uint16_t *t, int k, int depth, const uint8_t *in, size_t in_pitch,
              int64_t x0, int64_t y0, int64_t w, int64_t h, int bits, uint8_t *out,
              size_t out_pitch)
{
    int per = 8 / bits;
    int64_t b0 = x0 / per, b1 = (x0 + w + per - 1) / per; /* the bytes the piece touches */
    uint32_t m = (1u << k) - 1u, max = depth == 8 ? 255u : 65535u, levels = (1u << bits) - 1u;
    TSR_FOR_PIXELS(b1 - b0, h, lb, ly) {
        int64_t y = y0 + ly;
        const uint16_t *trow = t + (size_t)((uint64_t)y & m) * ((size_t)m + 1);
        const uint8_t *s = in + (size_t)ly * in_pitch;
        uint8_t *o = out + (size_t)ly * out_pitch + (size_t)(b0 + lb);
        int64_t xa = (b0 + lb) * per;
        uint32_t v = *o;
        for (int j = 0; j < per; j++) {
            int64_t x = xa + j;
            if (x < x0 || x >= x0 + w)
                continue;
            uint32_t lv = tsr_dm_level(sample_of(s, depth, (size_t)(x - x0)), max, levels,
                                       trow[(uint64_t)x & m]);
            int sh = tsr_dm_shift(x, bits);
            v = (v & ~(levels << sh)) | (lv << sh);
        }
        *o = (uint8_t)v;
    }
}

extern "C" tsr_status
tsr_gpu_dither_rows(const tsr_gpu_dither *g, const void *in, size_t in_pitch, int64_t x0,
                    int64_t y0, int64_t w, int64_t h, int bits, uint8_t *out, size_t out_pitch,
                    void *stream, tsr_error *err)
{
    tsr_status st = check_args(g, bits, x0, y0, w, h, err);
    if (st != TSR_OK || w == 0 || h == 0)
        return st;
    int per = 8 / bits;
    int64_t nb = (x0 + w + per - 1) / per - x0 / per;
    dither_kernel<<<tsr_grid2(nb, h), 256, 0, (cudaStream_t)stream>>>(
        g->t, g->k, g->depth, (const uint8_t *)in, in_pitch, x0, y0, w, h, bits, out,
        out_pitch);
    TSR_LAUNCHED("dither", err);
    return TSR_OK;
}

/* A band's rows as the stream packs them (nodes/dither.c tsr_dither_piece): pixel i of a row
 * piece in bits [8 - bits (i % per + 1), ...) of byte i / per, counted from the piece's first
 * pixel x0, the thresholds at the root's (x0 + i, y), row j at y0 + j (up: y0 + h - 1 - j); the
 * last byte's padding 0. One thread per output byte, every byte written. */
static __global__ void
piece_kernel(const uint16_t *t, int k, int depth, const uint8_t *in, size_t in_pitch,
             int64_t x0, int64_t y0, int64_t w, int64_t h, bool up, int bits, uint8_t *out,
             size_t out_pitch)
{
    int per = 8 / bits;
    uint32_t m = (1u << k) - 1u, max = depth == 8 ? 255u : 65535u, levels = (1u << bits) - 1u;
    TSR_FOR_PIXELS((w + per - 1) / per, h, lb, ly) {
        int64_t y = up ? y0 + h - 1 - ly : y0 + ly;
        const uint16_t *trow = t + (size_t)((uint64_t)y & m) * ((size_t)m + 1);
        const uint8_t *s = in + (size_t)ly * in_pitch;
        uint32_t v = 0;
        for (int j = 0; j < per; j++) {
            int64_t i = lb * per + j;
            if (i >= w)
                break;
            v |= tsr_dm_level(sample_of(s, depth, (size_t)i), max, levels,
                              trow[(uint64_t)(x0 + i) & m])
                 << (8 - bits * (j + 1));
        }
        out[(size_t)ly * out_pitch + (size_t)lb] = (uint8_t)v;
    }
}

extern "C" tsr_status
tsr_gpu_dither_band(tsr_gpu *g, const tsr_gpu_dither *d, const void *in, size_t in_pitch,
                    int64_t x0, int64_t y0, int64_t w, int64_t h, bool up, int bits, uint8_t *out,
                    size_t out_pitch, tsr_error *err)
{
    tsr_status st = check_args(d, bits, x0, y0, w, h, err);
    if (st != TSR_OK || w == 0 || h == 0)
        return st;
    int64_t nb = (w + 8 / bits - 1) / (8 / bits);
    piece_kernel<<<tsr_grid2(nb, h), 256, 0, g->compute>>>(d->t, d->k, d->depth,
                                                           (const uint8_t *)in, in_pitch, x0, y0,
                                                           w, h, up, bits, out, out_pitch);
    TSR_LAUNCHED("dither band", err);
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_dither_row_host(const tsr_dither *d, const void *samples, int depth, int64_t x0,
                        size_t n, int64_t y, int bits, uint8_t *row, tsr_error *err)
{
    if (bits != 1 && bits != 2 && bits != 4)
        return tsr_fail(err, TSR_EINVAL, "gpu: dither: output depth %d: must be 1, 2 or 4", bits);
    tsr_gpu_dither *g = tsr_gpu_dither_new(d, depth, err);
    if (!g)
        return err ? err->status : TSR_EIO;
    size_t in_bytes = n * (size_t)(depth / 8);
    size_t row_bytes = tsr_dither_row_bytes(x0 + (int64_t)n, bits);
    uint8_t *din = NULL, *dout = NULL;
    tsr_status st = TSR_OK;
    cudaError_t e = cudaMalloc((void **)&din, in_bytes ? in_bytes : 1);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&dout, row_bytes ? row_bytes : 1);
    if (e == cudaSuccess && in_bytes)
        e = cudaMemcpy(din, samples, in_bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && row_bytes)
        e = cudaMemcpy(dout, row, row_bytes, cudaMemcpyHostToDevice);
    if (e != cudaSuccess)
        st = tsr_fail(err, TSR_EIO, "gpu: dither: %s", cudaGetErrorString(e));
    if (st == TSR_OK)
        st = tsr_gpu_dither_rows(g, din, in_bytes, x0, y, (int64_t)n, 1, bits, dout, row_bytes,
                                 NULL, err);
    if (st == TSR_OK && row_bytes &&
        (e = cudaMemcpy(row, dout, row_bytes, cudaMemcpyDeviceToHost)) != cudaSuccess)
        st = tsr_fail(err, TSR_EIO, "gpu: dither: %s", cudaGetErrorString(e));
    cudaFree(din);
    cudaFree(dout);
    tsr_gpu_dither_free(g);
    return st;
}
