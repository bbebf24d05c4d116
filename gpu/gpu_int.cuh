/* gpu internals shared by the .cu files: the context, the CUDA error macros, launch shapes and
 * the device side of blending. Included only by gpu/*.cu. */
#ifndef TSR_GPU_INT_CUH
#define TSR_GPU_INT_CUH

extern "C" {
#include "geom/geom.h"
#include "gpu/gpu.h"
#include "nodes/params.h"
#include "tiles/tune.h"
}
#include "nodes/pointwise.h"

#include <cuda_runtime.h>
#include <stdint.h>

/* Every CUDA call goes through this: a cudaError_t becomes a tsr_status with a message. */
#define TSR_CUDA_TRY(call, err)                                                               \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess)                                                                \
            return tsr_fail((err), TSR_EIO, "gpu: %s: %s", #call, cudaGetErrorString(e_));   \
    } while (0)

/* After every launch: a bad configuration is reported here; faults inside the kernel surface
 * at the next synchronizing call. */
#define TSR_LAUNCHED(what, err)                                                               \
    do {                                                                                      \
        cudaError_t e_ = cudaGetLastError();                                                  \
        if (e_ != cudaSuccess)                                                                \
            return tsr_fail((err), TSR_EIO, "gpu: launch of %s: %s", (what),                 \
                            cudaGetErrorString(e_));                                          \
    } while (0)

struct tsr_upload {
    const void *host;
    void *dev;
    size_t bytes;
};

/* An event pair around work of one stage on the compute stream. */
struct tsr_gpu_timer {
    cudaEvent_t a, b;
    int stage; /* -1: free; TSR_GPU_STAGES: begun, not ended */
};

struct tsr_gpu {
    int device;            /* the CUDA device (tsr_gpu_bind) */
    cudaStream_t compute;  /* every kernel, in order */
    cudaStream_t copy;     /* device-to-host copies of bands */
    char *arena;           /* one cudaMalloc, carved by `used` */
    size_t arena_bytes, used, peak;
    size_t top;            /* kept allocations live in [top, arena_bytes) */
    size_t base;           /* resident ones in [base, arena_bytes): top never rises above */
    struct tsr_upload *up; /* resident uploads */
    size_t nup, capup;
    cudaEvent_t *ev;       /* copy events, a ring indexed by ticket % nev */
    size_t nev;
    uint64_t next_ticket;  /* tickets handed out so far */
    void **reg;            /* registered host ranges */
    size_t nreg, capreg;
    bool fault;            /* injected sticky error pending */
    struct tsr_gpu_timer *tm; /* stage timing: event pairs (tsr_gpu_stage_begin) */
    size_t ntm;
    double stage_ms[TSR_GPU_STAGES];
    const tsr_output *stab_o; /* the output stab was made for (tsr_gpu_conv_make) */
    tsr_sample_table stab;
    tsr_geom_team team;       /* the host team lent for host work (tsr_gpu_set_team); run NULL:
                               * none */
};

/* Blocks of 256 threads over n items: at most 2^31 - 1 blocks, items above that are covered by
 * grid-stride loops in the kernels. */
static inline unsigned
tsr_blocks(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    if (b == 0)
        b = 1;
    return b > 0x7fffffffu ? 0x7fffffffu : (unsigned)b;
}

/* A 2-D launch over a w x h rect: x across a row (coalesced), rows spread over the block rows;
 * the kernels loop (TSR_FOR_PIXELS) so any size fits the grid limits, and no pixel index is
 * divided back into a row and a column. About TSR_GRID_BLOCKS blocks (a few waves of the
 * device's SMs), so a thread takes several rows of a tall rect: its prologue (the kernel's
 * arguments, the rect's bounds, 64-bit set-up) is paid once for them (ncu: with one pixel per
 * thread, repeat's and the base's launches executed ~250 instructions a pixel, the prologue a
 * good part of them). */
#define TSR_GRID_BLOCKS 4096
size_t
tsr_grid_blocks(void); /* TSR_GRID_BLOCKS, or TSR_GPU_GRID_BLOCKS (measurements; 0: a block
                        * row per row, as before) */

static inline dim3
tsr_grid2(int64_t w, int64_t h)
{
    size_t bx = ((size_t)w + 255) / 256, blocks = tsr_grid_blocks();
    bx = bx == 0 ? 1 : (bx > 65535 ? 65535 : bx);
    size_t by = blocks ? (blocks + bx - 1) / bx : (size_t)(h > 0 ? h : 1);
    if (h > 0 && by > (size_t)h)
        by = (size_t)h;
    return dim3((unsigned)bx, by == 0 ? 1 : (by > 65535 ? 65535 : (unsigned)by));
}

#define TSR_FOR_PIXELS(W, H, lx, ly)                                                           \
    for (int64_t ly = blockIdx.y; ly < (H); ly += gridDim.y)                                   \
        for (int64_t lx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lx < (W);            \
             lx += (int64_t)gridDim.x * blockDim.x)

/* floor(a / b), floor(a mod b) for b > 0, in int64 (tiles.h's tsr_floor_mod, on the device). */
__device__ static inline int64_t
tsr_dfloor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

__device__ static inline int64_t
tsr_dfloor_mod(int64_t a, int64_t b)
{
    int64_t m = a % b;
    return m < 0 ? m + b : m;
}

/* A tsr_gpu_out made ready for kernels (by value): the output conversion's constants and the
 * calibration points on the device. `dst` NULL: floats, no conversion. */
struct tsr_gpu_conv {
    uint8_t *dst;
    size_t pitch;
    int64_t x0, y0, h;
    bool up;
    double lo, hi, max;
    const double (*cal)[2];
    int64_t ncal;
    int bps;
    /* the threshold table (nodes.h, tsr_sample_table) on the device, NULL: none (convert in
     * double); without calibration the guess is the conversion in float */
    const float *thr;
    uint32_t smin, smax;
    int dir;
    float flo, finv, fmax;
};

/* Fill c from `to` (NULL: c->dst = NULL). */
tsr_status
tsr_gpu_conv_make(tsr_gpu *g, const tsr_gpu_out *to, tsr_gpu_conv *c, tsr_error *err);

/* Root pixel (x, y)'s value v, converted, to its place in the band. */
__device__ static inline void
tsr_gpu_put(const tsr_gpu_conv &c, int64_t x, int64_t y, float v)
{
    int64_t row = y - c.y0;
    if (c.up)
        row = c.h - 1 - row;
    uint32_t s;
    if (c.thr && v == v) {
        /* the table: a few float compares where the double division would be the kernel's
         * main cost (blend_out was bound by it); NaN takes the reference */
        float w = c.dir < 0 ? -v : v;
        uint32_t guess;
        if (c.ncal == 0) {
            float t = (v - c.flo) * c.finv;
            t = t > 0.0f ? (t < 1.0f ? t : 1.0f) : 0.0f;
            guess = (uint32_t)(t * c.fmax + 0.5f);
        } else { /* a binary search: the thresholds at most w */
            uint32_t a = 0, b = c.smax - c.smin;
            while (a < b) {
                uint32_t m = (a + b) / 2;
                if (c.thr[m] <= w)
                    a = m + 1;
                else
                    b = m;
            }
            guess = c.smin + a;
        }
        s = tsr_pw_table_sample(c.thr, c.smin, c.smax, w, guess);
    } else {
        s = tsr_pw_sample(tsr_pw_to_unit(c.lo, c.hi, c.cal, c.ncal, (double)v), c.max);
    }
    uint8_t *d = c.dst + (size_t)row * c.pitch + (size_t)(x - c.x0) * c.bps;
    d[0] = (uint8_t)(s & 0xff);
    if (c.bps == 2)
        d[1] = (uint8_t)(s >> 8);
}

/* Blend a layer that covers exactly the child rect `cr` (child coordinates) placed at the edge's
 * offset into P: what pattern, distance and blur do after computing L over cr (L row-major,
 * stride cr.w). Pixels of P outside cr + offset keep their value. With `to`, every pixel of P.r
 * goes out as a sample instead (cr may then be empty). */
tsr_status
tsr_gpu_blend_rect(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_rect cr, const float *L,
                   const tsr_gpu_out *to, tsr_error *err);

#endif
