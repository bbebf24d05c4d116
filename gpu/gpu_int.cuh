/* gpu internals shared by the .cu files: the context, the CUDA error macros, launch shapes and
 * the device side of blending. Included only by gpu/*.cu. */
#ifndef TSR_GPU_INT_CUH
#define TSR_GPU_INT_CUH

extern "C" {
#include "gpu/gpu.h"
#include "nodes/params.h"
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

struct tsr_gpu {
    cudaStream_t compute;  /* every kernel, in order */
    cudaStream_t copy;     /* device-to-host copies of bands */
    char *arena;           /* one cudaMalloc, carved by `used` */
    size_t arena_bytes, used, peak;
    struct tsr_upload *up; /* resident uploads */
    size_t nup, capup;
    cudaEvent_t *ev;       /* copy events, a ring indexed by ticket % nev */
    size_t nev;
    uint64_t next_ticket;  /* tickets handed out so far */
    void **reg;            /* registered host ranges */
    size_t nreg, capreg;
    bool fault;            /* injected sticky error pending */
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

/* A 2-D launch over a w x h rect: x across a row (coalesced), y one row per block row; the
 * kernels loop (TSR_FOR_PIXELS) so any size fits the grid limits, and no pixel index is divided
 * back into a row and a column. */
static inline dim3
tsr_grid2(int64_t w, int64_t h)
{
    size_t bx = ((size_t)w + 255) / 256;
    return dim3(bx == 0 ? 1 : (bx > 65535 ? 65535 : (unsigned)bx),
                h <= 0 ? 1 : (h > 65535 ? 65535 : (unsigned)h));
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

/* Blend a layer that covers exactly the child rect `cr` (child coordinates) placed at the edge's
 * offset into P: what pattern, distance and blur do after computing L over cr (L row-major,
 * stride cr.w). Pixels of P outside cr + offset keep their value. */
tsr_status
tsr_gpu_blend_rect(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_rect cr, const float *L,
                   tsr_error *err);

#endif
