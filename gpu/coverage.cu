/* gpu: the coverage rasterizer's accumulate and resolve (gpu/coverage.h). The arithmetic is
 * geom/coverage_math.h's, the CPU reference's; the sums are int64, exact in any order, so the
 * atomics' order changes no bit. */
#include "gpu/gpu_int.cuh"

extern "C" {
#include "gpu/coverage.h"
}

/* A thread a piece (an edge in one row): the piece's edge by binary search over the piece
 * offsets, then its cells, each adding to two accumulators. */
static __global__ void
cov_accumulate_k(const tsr_geom_edge *edges, const uint64_t *first, size_t n, uint64_t pieces,
                 int64_t w, int64_t h, unsigned long long *acc)
{
    for (uint64_t p = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; p < pieces;
         p += (uint64_t)gridDim.x * blockDim.x) {
        size_t lo = 0, hi = n; /* first[lo] <= p < first[hi] */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (first[mid] <= p)
                lo = mid;
            else
                hi = mid;
        }
        tsr_geom_edge g = edges[lo];
        int64_t j0, j1;
        tsr_cov_rows(&g, h, &j0, &j1);
        int64_t j = j0 + (int64_t)(p - first[lo]);
        tsr_cov_piece pc;
        tsr_cov_piece_make(&g, j, &pc);
        unsigned long long *row = acc + (g.by + j) * w;
        for (int64_t c = pc.c0; c <= pc.c1; c++) {
            int64_t v[2], x = g.bx + c;
            tsr_cov_cell(&pc, c, v);
            /* cells left of the rect add to its first (tsr_geom_accumulate says why) */
            if (x < w && v[0] != 0)
                atomicAdd(row + (x < 0 ? 0 : x), (unsigned long long)v[0]);
            if (x + 1 < w && v[1] != 0)
                atomicAdd(row + (x + 1 < 0 ? 0 : x + 1), (unsigned long long)v[1]);
        }
    }
}

/* A warp a row: the row's prefix sums 32 accumulators at a time (a shuffle scan), carried
 * from step to step. Integer sums: any order gives the same bits. */
static __global__ void
cov_resolve_k(const long long *acc, int64_t w, int64_t h, float *out)
{
    int lane = threadIdx.x & 31;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t y = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; y < h;
         y += warps) {
        long long carry = 0;
        for (int64_t x0 = 0; x0 < w; x0 += 32) {
            int64_t x = x0 + lane;
            long long v = x < w ? acc[y * w + x] : 0;
            for (int d = 1; d < 32; d *= 2) {
                long long u = __shfl_up_sync(0xffffffffu, v, d);
                if (lane >= d)
                    v += u;
            }
            if (x < w)
                out[y * w + x] = tsr_cov_resolve(carry + v);
            carry += __shfl_sync(0xffffffffu, v, 31);
        }
    }
}

extern "C" tsr_status
tsr_gpu_coverage(tsr_gpu *g, const tsr_geom_edge *edges, const uint64_t *first, size_t n,
                 uint64_t pieces, tsr_rect r, int64_t *acc, float *out, tsr_error *err)
{
    if (tsr_rect_empty(r))
        return TSR_OK;
    size_t cells = (size_t)r.w * (size_t)r.h;
    TSR_CUDA_TRY(cudaMemsetAsync(acc, 0, cells * sizeof *acc, g->compute), err);
    if (n && pieces) {
        cov_accumulate_k<<<tsr_blocks(pieces, 256), 256, 0, g->compute>>>(
            edges, first, n, pieces, r.w, r.h, (unsigned long long *)acc);
        TSR_LAUNCHED("cov_accumulate_k", err);
    }
    /* 8 rows a block of 256 */
    cov_resolve_k<<<tsr_blocks((size_t)r.h, 8), 256, 0, g->compute>>>(
        (const long long *)acc, r.w, r.h, out);
    TSR_LAUNCHED("cov_resolve_k", err);
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_coverage_host(const tsr_geom_edges *e, float *out, tsr_error *err)
{
    if (!tsr_gpu_available())
        return tsr_fail(err, TSR_EINVAL, "gpu: no device for the coverage");
    if (tsr_rect_empty(e->r))
        return TSR_OK;
    size_t cells = (size_t)e->r.w * (size_t)e->r.h, n = e->n;
    size_t be = (n ? n : 1) * sizeof *e->e, bf = (n + 1) * sizeof *e->first;
    size_t arena = be + bf + cells * (sizeof(int64_t) + sizeof(float)) + 4 * 256;
    tsr_gpu *g = tsr_gpu_open(0, arena, err);
    if (!g)
        return err ? err->status : TSR_EIO;
    tsr_status st = TSR_OK;
    tsr_geom_edge *de = (tsr_geom_edge *)tsr_gpu_alloc(g, be, err);
    uint64_t *df = de ? (uint64_t *)tsr_gpu_alloc(g, bf, err) : NULL;
    int64_t *acc = df ? (int64_t *)tsr_gpu_alloc(g, cells * sizeof *acc, err) : NULL;
    float *dout = acc ? (float *)tsr_gpu_alloc(g, cells * sizeof *dout, err) : NULL;
    cudaError_t ce = cudaSuccess;
    if (!dout) {
        st = TSR_ENOMEM;
        goto done;
    }
    if (n)
        ce = cudaMemcpyAsync(de, e->e, n * sizeof *e->e, cudaMemcpyHostToDevice, g->compute);
    if (ce == cudaSuccess)
        ce = cudaMemcpyAsync(df, e->first, bf, cudaMemcpyHostToDevice, g->compute);
    if (ce != cudaSuccess) {
        st = tsr_fail(err, TSR_EIO, "gpu: coverage upload: %s", cudaGetErrorString(ce));
        goto done;
    }
    st = tsr_gpu_coverage(g, de, df, n, e->first[n], e->r, acc, dout, err);
    if (st == TSR_OK) {
        ce = cudaMemcpyAsync(out, dout, cells * sizeof *out, cudaMemcpyDeviceToHost, g->compute);
        if (ce == cudaSuccess)
            ce = cudaStreamSynchronize(g->compute);
        if (ce != cudaSuccess)
            st = tsr_fail(err, TSR_EIO, "gpu: coverage: %s", cudaGetErrorString(ce));
    }
done:
    tsr_gpu_close(g);
    return st;
}
