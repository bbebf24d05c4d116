/* blur on the GPU: the three methods of nodes/blur_int.h, bit-identical to the CPU reference
 * (docs/format.md §9.3). The arithmetic of every thread is a work item of gpu/blur_math.h, which
 * tests/test_gpu_math.c runs on the host against nodes/blur.c; this file only shapes the
 * launches and carves the scratch.
 *
 *   kernel   one thread per output pixel, the direct 2D sum (kw x kh reads).
 *   fir      one thread per pixel of each pass: x into H (tw x (th + 2r) floats), then y.
 *   spline   int32 planes A and B of (tw + 2R) x (th + 2R - (h - 1)): the first vertical box
 *            reads the quantised child, three more ping-pong down columns, the vertical taps
 *            requantise into A, four boxes along rows, then the horizontal taps write L. A box
 *            thread runs TSR_BM_SEG outputs of one line by an exact running sum; vertical
 *            boxes put neighbouring columns in neighbouring threads (coalesced), horizontal
 *            ones neighbouring segments of a row (each thread walks its own cache lines).
 *
 * The child is read through the edge mode (zero, clamp, wrap by floor mod into the child, then
 * into the child buffer, which holds the bounding box of what need() asked for). The scratch
 * comes from the arena and goes back to it on return (later launches are ordered after ours). */
#include "gpu/gpu_int.cuh"

#include <atomic>

extern "C" {
#include "nodes/blur_int.h"
}
#include "gpu/blur_math.h"

#define THREADS 256
/* launches: tsr_grid2 and TSR_FOR_PIXELS (gpu_int.cuh) */
#define FOR_XY(nx, ny) TSR_FOR_PIXELS((nx), (ny), x, y)

static __global__ void
kernel_k(tsr_bm_src s, const float *k, int64_t kw, int64_t kh, int64_t cx, int64_t cy, float *L,
         int64_t tw, int64_t th)
{
    FOR_XY(tw, th)
    tsr_bm_kernel_item(&s, k, kw, kh, cx, cy, L, tw, x, y);
}

static __global__ void
firx_k(tsr_bm_src s, const tsr_blur_state *st, int64_t cx, int64_t cy, float *H, int64_t tw,
       int64_t nrows)
{
    FOR_XY(tw, nrows)
    tsr_bm_firx_item(&s, st->w, st->r, cx, cy, H, tw, x, y);
}

static __global__ void
firy_k(const float *H, const tsr_blur_state *st, float *L, int64_t tw, int64_t th)
{
    FOR_XY(tw, th)
    tsr_bm_firy_item(H, st->w, st->r, L, tw, x, y);
}

/* The FIR in one launch: a block's 64 x 64 outputs need the first pass over 64 + 2r rows of 64
 * columns, which it computes into shared memory (the same tsr_bm_fir_child per element as
 * firx_k), then the second pass reads them from there (the same tsr_bm_fir as firy_k): the
 * same operations in the same order, so the same bits, without H going through global memory
 * (ncu: the two-pass firy_k was bound by L1/L2 traffic, 81 % of it, 78 us per 4 Mpx chunk). */
#define FT 64
static __global__ void
fir_fused_k(tsr_bm_src s, const tsr_blur_state *st, int64_t cx, int64_t cy, float *L, int64_t tw,
            int64_t th)
{
    extern __shared__ float Hs[];
    const int64_t r = st->r;
    const int64_t bx = (int64_t)blockIdx.x * FT, by = (int64_t)blockIdx.y * FT;
    const int nrows = FT + 2 * (int)r;
    const int64_t hrows = th + 2 * r - by; /* rows of H this block may need */
    for (int i = threadIdx.x; i < nrows * FT; i += blockDim.x) {
        int yy = i / FT, x = i % FT;
        if (bx + x < tw && yy < hrows)
            Hs[i] = tsr_bm_fir_child(&s, st->w, r, cx + bx + x, cy + by - r + yy);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < FT * FT; i += blockDim.x) {
        int y = i / FT, x = i % FT;
        if (bx + x < tw && by + y < th)
            L[(by + y) * tw + bx + x] = tsr_bm_fir(Hs + (y + r) * FT + x, FT, st->w, r);
    }
}

/* The FIR in one launch with the child staged: a block's FT x FT outputs read the child over
 * (FT + 2r)^2 pixels, which it copies once into shared memory through the edge mode (S), then
 * runs the x pass into H (shared) and the y pass into L. Each thread computes QB neighbouring
 * outputs along its pass, keeping the 2 x QB values of the taps' two windows in registers and
 * sliding them by one load per side per tap (QB x fewer shared loads than one output per
 * thread). Per output the operations are those of tsr_bm_fir in its order (w0 c0, then += w_k
 * (c[-k] + c[k]) for k = 1..r) on the same values, so the bits are fir_fused_k's. Strides are
 * odd and lanes take neighbouring rows (x pass) or columns (y pass): no bank conflicts.
 * Measured on an H200: np-blur4's blur stage 0.402 s -> see docs/performance.md. */
#define QB 4
static __global__ void
fir_staged_k(tsr_bm_src s, const tsr_blur_state *st, int64_t cx, int64_t cy, float *L, int64_t tw,
             int64_t th)
{
    extern __shared__ float smf[];
    __shared__ float w[TSR_BLUR_FIR_R_MAX + 1];
    const int r = (int)st->r, n = FT + 2 * r;
    const int ls = n | 1, lh = FT + 1; /* odd strides */
    float *S = smf, *H = smf + n * ls;
    const int64_t bx = (int64_t)blockIdx.x * FT, by = (int64_t)blockIdx.y * FT;
    const int vw = (int)(tw - bx < FT ? tw - bx : FT), vh = (int)(th - by < FT ? th - by : FT);
    const int nx = vw + 2 * r, ny = vh + 2 * r; /* the part of S that valid outputs read */
    for (int i = threadIdx.x; i <= r; i += blockDim.x)
        w[i] = st->w[i];
    const int64_t x0 = cx + bx - r, y0 = cy + by - r;
    if (tsr_bm_inside(&s, x0, y0, x0 + nx - 1, y0 + ny - 1)) {
        const float *c = tsr_bm_at(&s, x0, y0);
        for (int i = threadIdx.x; i < n * n; i += blockDim.x) {
            int yy = i / n, xx = i - yy * n;
            S[yy * ls + xx] = xx < nx && yy < ny ? c[yy * s.stride + xx] : 0.0f;
        }
    } else {
        for (int i = threadIdx.x; i < n * n; i += blockDim.x) {
            int yy = i / n, xx = i - yy * n;
            S[yy * ls + xx] = xx < nx && yy < ny ? tsr_bm_child(&s, x0 + xx, y0 + yy) : 0.0f;
        }
    }
    __syncthreads();
    /* x pass: H row yy (0..n-1), columns q*QB .. q*QB+QB-1; lanes take neighbouring rows */
    for (int i = threadIdx.x; i < n * (FT / QB); i += blockDim.x) {
        const int yy = i % n, x = (i / n) * QB;
        const float *c = S + yy * ls + r + x;
        float t[QB], a[QB], b[QB];
#pragma unroll
        for (int q = 0; q < QB; q++) {
            t[q] = TSR_BM_FMUL(w[0], c[q]);
            a[q] = r > 0 ? c[q - 1] : 0.0f;
            b[q] = r > 0 ? c[q + 1] : 0.0f;
        }
        for (int k = 1; k <= r; k++) {
            const float wk = w[k];
#pragma unroll
            for (int q = 0; q < QB; q++)
                t[q] = TSR_BM_FADD(t[q], TSR_BM_FMUL(wk, TSR_BM_FADD(a[q], b[q])));
            if (k < r) {
#pragma unroll
                for (int q = QB - 1; q > 0; q--)
                    a[q] = a[q - 1];
                a[0] = c[-k - 1];
#pragma unroll
                for (int q = 0; q < QB - 1; q++)
                    b[q] = b[q + 1];
                b[QB - 1] = c[QB - 1 + k + 1];
            }
        }
#pragma unroll
        for (int q = 0; q < QB; q++)
            H[yy * lh + x + q] = t[q];
    }
    __syncthreads();
    /* y pass: L rows p*QB .. p*QB+QB-1 of column x; lanes take neighbouring columns */
    for (int i = threadIdx.x; i < FT * (FT / QB); i += blockDim.x) {
        const int x = i % FT, y = (i / FT) * QB;
        if (x >= vw || y >= vh)
            continue;
        const float *c = H + (y + r) * lh + x;
        float t[QB], a[QB], b[QB];
#pragma unroll
        for (int q = 0; q < QB; q++) {
            t[q] = TSR_BM_FMUL(w[0], c[q * lh]);
            a[q] = r > 0 ? c[(q - 1) * lh] : 0.0f;
            b[q] = r > 0 ? c[(q + 1) * lh] : 0.0f;
        }
        for (int k = 1; k <= r; k++) {
            const float wk = w[k];
#pragma unroll
            for (int q = 0; q < QB; q++)
                t[q] = TSR_BM_FADD(t[q], TSR_BM_FMUL(wk, TSR_BM_FADD(a[q], b[q])));
            if (k < r) {
#pragma unroll
                for (int q = QB - 1; q > 0; q--)
                    a[q] = a[q - 1];
                a[0] = c[(-k - 1) * lh];
#pragma unroll
                for (int q = 0; q < QB - 1; q++)
                    b[q] = b[q + 1];
                b[QB - 1] = c[(QB - 1 + k + 1) * lh];
            }
        }
        float *o = L + (by + y) * tw + bx + x;
#pragma unroll
        for (int q = 0; q < QB; q++)
            if (y + q < vh)
                o[q * tw] = t[q];
    }
}

static __global__ void
ybox1_k(tsr_bm_src s, float lim, int64_t cx, int64_t cy, int64_t h, float inv_h, int32_t *A,
        int64_t pw, int64_t nout)
{
    FOR_XY(pw, tsr_bm_nseg(nout))
    tsr_bm_ybox1_item(&s, lim, cx, cy, h, inv_h, A, pw, nout, x, y);
}

/* Vertical boxes: x = the column, y = the segment. */
static __global__ void
ybox_k(const int32_t *in, int32_t *out, int64_t pw, int64_t h, float inv_h, int64_t nout)
{
    FOR_XY(pw, tsr_bm_nseg(nout))
    tsr_bm_box_item(in, out, pw, 1, h, inv_h, nout, x, y);
}

/* Horizontal boxes: x = the segment, y = the row. */
static __global__ void
xbox_k(const int32_t *in, int32_t *out, int64_t pw, int64_t th, int64_t h, float inv_h,
       int64_t nout)
{
    FOR_XY(tsr_bm_nseg(nout), th)
    tsr_bm_box_item(in, out, 1, pw, h, inv_h, nout, y, x);
}

/* Horizontal boxes through shared memory: a block takes XB_ROWS rows of one segment, loads
 * their inputs row by row (coalesced), runs each row's box from there on one thread (the same
 * tsr_bm_box_run, so the same bits), and stores the outputs row by row. xbox_k's threads walk
 * their segments straight in global memory, neighbouring lanes a segment (256 bytes) apart:
 * ncu had its launches at 130 us per 4 Mpx chunk, memory 57 %, SMs 3 %. Strides in shared
 * memory are odd, so the rows' threads hit distinct banks. */
#define XB_ROWS 32
static __global__ void
xbox_tile_k(const int32_t *in, int32_t *out, int64_t pw, int64_t th, int64_t h, float inv_h,
            int64_t nout, int64_t lds)
{
    extern __shared__ int32_t sm[];
    int32_t *si = sm, *so = sm + XB_ROWS * lds;
    const int64_t ldo = TSR_BM_SEG + 1;
    for (int64_t sg = blockIdx.x; sg < tsr_bm_nseg(nout); sg += gridDim.x)
        for (int64_t y0 = (int64_t)blockIdx.y * XB_ROWS; y0 < th; y0 += (int64_t)gridDim.y * XB_ROWS) {
            int64_t i0 = sg * TSR_BM_SEG, n = nout - i0 < TSR_BM_SEG ? nout - i0 : TSR_BM_SEG;
            int64_t rows = th - y0 < XB_ROWS ? th - y0 : XB_ROWS, w = n + h - 1;
            __syncthreads(); /* the last round's stores have read so */
            for (int64_t k = threadIdx.x; k < rows * w; k += blockDim.x) {
                int64_t r = k / w, c = k - r * w;
                si[r * lds + c] = in[(y0 + r) * pw + i0 + c];
            }
            __syncthreads();
            if ((int64_t)threadIdx.x < rows)
                tsr_bm_box_run(si + threadIdx.x * lds, 1, h, inv_h, so + threadIdx.x * ldo, 1, n);
            __syncthreads();
            for (int64_t k = threadIdx.x; k < rows * n; k += blockDim.x) {
                int64_t r = k / n, c = k - r * n;
                out[(y0 + r) * pw + i0 + c] = so[r * ldo + c];
            }
        }
}

static __global__ void
ytaps_k(const int32_t *B, int32_t *M, int64_t pw, int64_t th, const tsr_blur_state *st,
        int64_t h, int64_t m, float lim)
{
    FOR_XY(pw, th)
    tsr_bm_ytaps_item(B, M, pw, h, st->c, m, lim, x, y);
}

static __global__ void
xtaps_k(const int32_t *A, float *L, int64_t pw, int64_t tw, int64_t th, const tsr_blur_state *st,
        int64_t h, int64_t m)
{
    FOR_XY(tw, th)
    tsr_bm_xtaps_item(A, L, pw, tw, h, st->cq, m, x, y);
}

/* The status a NULL from tsr_gpu_alloc / tsr_gpu_resident filled in. */
static tsr_status
failed(const tsr_error *err)
{
    return err && err->status != TSR_OK ? err->status : TSR_ENOMEM;
}

static tsr_status
spline(tsr_gpu *g, const tsr_blur_state *st, const tsr_blur_state *dst, tsr_bm_src s,
       tsr_rect cr, float *L, tsr_error *err)
{
    const int64_t R = st->rx, h = st->h, m = st->m, tw = cr.w, th = cr.h;
    const int64_t pw = tw + 2 * R, ph = th + 2 * R;
    const float lim = st->lim, inv_h = st->inv_h;
    int64_t n = ph - (h - 1);
    size_t plane = (size_t)pw * (size_t)n * sizeof(int32_t);
    int32_t *A = (int32_t *)tsr_gpu_alloc(g, plane, err);
    if (!A)
        return failed(err);
    int32_t *B = (int32_t *)tsr_gpu_alloc(g, plane, err);
    if (!B)
        return failed(err);

    ybox1_k<<<tsr_grid2(pw, tsr_bm_nseg(n)), THREADS, 0, g->compute>>>(s, lim, cr.x - R, cr.y - R,
                                                                     h, inv_h, A, pw, n);
    TSR_LAUNCHED("blur spline y box", err);
    int32_t *in = A, *out = B;
    for (int stage = 1; stage < TSR_BLUR_STAGES; stage++) {
        n -= h - 1;
        ybox_k<<<tsr_grid2(pw, tsr_bm_nseg(n)), THREADS, 0, g->compute>>>(in, out, pw, h, inv_h, n);
        TSR_LAUNCHED("blur spline y box", err);
        int32_t *t = in;
        in = out;
        out = t;
    }
    /* the vertical taps, requantised: `out` becomes M (th rows) */
    ytaps_k<<<tsr_grid2(pw, th), THREADS, 0, g->compute>>>(in, out, pw, th, dst, h, m, lim);
    TSR_LAUNCHED("blur spline y taps", err);
    {
        int32_t *t = in;
        in = out;
        out = t;
    }
    int64_t nc = pw;
    for (int stage = 0; stage < TSR_BLUR_STAGES; stage++) {
        nc -= h - 1;
        int64_t lds = (TSR_BM_SEG + h - 1) | 1; /* odd: a row a bank apart */
        size_t shared = (size_t)(XB_ROWS * lds + XB_ROWS * (TSR_BM_SEG + 1)) * sizeof(int32_t);
        int64_t gy = (th + XB_ROWS - 1) / XB_ROWS, gx = tsr_bm_nseg(nc);
        dim3 grid((unsigned)(gx < 65535 ? gx : 65535), (unsigned)(gy < 65535 ? gy : 65535));
        if (shared <= 48 * 1024)
            xbox_tile_k<<<grid, 128, shared, g->compute>>>(in, out, pw, th, h, inv_h, nc, lds);
        else
            xbox_k<<<tsr_grid2(tsr_bm_nseg(nc), th), THREADS, 0, g->compute>>>(in, out, pw, th, h,
                                                                             inv_h, nc);
        TSR_LAUNCHED("blur spline x box", err);
        int32_t *t = in;
        in = out;
        out = t;
    }
    xtaps_k<<<tsr_grid2(tw, th), THREADS, 0, g->compute>>>(in, L, pw, tw, th, dst, h, m);
    TSR_LAUNCHED("blur spline x taps", err);
    return TSR_OK;
}

/* The layer over cr into a fresh L, then blended into P. */
static tsr_status
blur(tsr_gpu *g, const tsr_edge *e, const tsr_blur_state *st, tsr_gpu_buf P, tsr_rect cr,
     tsr_bm_src s, const tsr_gpu_out *to, tsr_error *err)
{
    const tsr_blur_params *p = (const tsr_blur_params *)e->params;
    const int64_t tw = cr.w, th = cr.h;
    float *L = (float *)tsr_gpu_alloc(g, (size_t)tw * (size_t)th * sizeof(float), err);
    if (!L)
        return failed(err);
    const tsr_blur_state *dst =
        (const tsr_blur_state *)tsr_gpu_resident(g, st, sizeof *st, err);
    if (!dst)
        return failed(err);
    switch (st->method) {
    case TSR_BLUR_KERNEL: {
        const tsr_kernel *K = &p->kernel;
        const float *k = (const float *)tsr_gpu_resident(
            g, K->k, (size_t)K->w * (size_t)K->h * sizeof(float), err);
        if (!k)
            return failed(err);
        kernel_k<<<tsr_grid2(tw, th), THREADS, 0, g->compute>>>(s, k, K->w, K->h, cr.x, cr.y, L, tw,
                                                             th);
        TSR_LAUNCHED("blur kernel", err);
        break;
    }
    case TSR_BLUR_FIR: {
        const int64_t r = st->r, nrows = th + 2 * r;
        size_t shared = (size_t)(FT + 2 * r) * FT * sizeof(float);
        int64_t gx = (tw + FT - 1) / FT, gy = (th + FT - 1) / FT;
        size_t staged = ((size_t)(FT + 2 * r) * (size_t)((FT + 2 * r) | 1) +
                         (size_t)(FT + 2 * r) * (FT + 1)) * sizeof(float);
        if (!tsr_tune_get()->gpu_blur_unstaged && gx < 0x7fffffff && gy <= 65535 &&
            staged <= 160 * 1024) {
            /* the dynamic shared memory past 48 KiB is opted into once per device (the
             * attribute is the current device's: --gpus runs engines on several) */
            static std::atomic<unsigned long long> opted{0};
            int dev = 0;
            TSR_CUDA_TRY(cudaGetDevice(&dev), err);
            unsigned long long bit = dev < 64 ? 1ull << dev : 0;
            if (!bit || !(opted.load() & bit)) {
                TSR_CUDA_TRY(cudaFuncSetAttribute(fir_staged_k,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  160 * 1024), err);
                opted.fetch_or(bit);
            }
            fir_staged_k<<<dim3((unsigned)gx, (unsigned)gy), 256, staged, g->compute>>>(
                s, dst, cr.x, cr.y, L, tw, th);
            TSR_LAUNCHED("blur fir", err);
            break;
        }
        if (shared <= 48 * 1024 && gx < 0x7fffffff && gy <= 65535) {
            fir_fused_k<<<dim3((unsigned)gx, (unsigned)gy), 256, shared, g->compute>>>(
                s, dst, cr.x, cr.y, L, tw, th);
            TSR_LAUNCHED("blur fir", err);
            break;
        }
        float *H = (float *)tsr_gpu_alloc(g, (size_t)tw * (size_t)nrows * sizeof(float), err);
        if (!H)
            return failed(err);
        firx_k<<<tsr_grid2(tw, nrows), THREADS, 0, g->compute>>>(s, dst, cr.x, cr.y, H, tw, nrows);
        TSR_LAUNCHED("blur fir x", err);
        firy_k<<<tsr_grid2(tw, th), THREADS, 0, g->compute>>>(H, dst, L, tw, th);
        TSR_LAUNCHED("blur fir y", err);
        break;
    }
    default: {
        tsr_status rc = spline(g, st, dst, s, cr, L, err);
        if (rc != TSR_OK)
            return rc;
        break;
    }
    }
    return tsr_gpu_blend_rect(g, e, P, cr, L, to, err);
}

/* Every edge of this trait runs on the device (nodes/traits.def). */
extern "C" bool
tsr_gpu_blur_can(const tsr_edge *e)
{
    (void)e;
    return true;
}

extern "C" tsr_status
tsr_gpu_blur(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,
             const tsr_gpu_out *to, tsr_error *err)
{
    const tsr_blur_params *p = (const tsr_blur_params *)e->params;
    const tsr_blur_state *st = (const tsr_blur_state *)e->state;
    const char *where = e->where ? e->where : "blur";
    tsr_rect cr = tsr_edge_covered(e, P.r);
    if (tsr_rect_empty(cr)) /* the layer misses P: P as it is */
        return to ? tsr_gpu_blend_rect(g, e, P, cr, NULL, to, err) : TSR_OK;
    if (!st)
        return tsr_fail(err, TSR_EINTERNAL, "%s: gpu blur: the edge was not prepared", where);
    /* every pixel a window reads lies in one of need()'s rects, so in their bounding box */
    tsr_rect need[TSR_NEED_MAX], bb = tsr_rect_make(0, 0, 0, 0);
    size_t nn = e->trait->need(e, P.r, need);
    for (size_t i = 0; i < nn; i++)
        bb = tsr_rect_union(bb, need[i]);
    if (nn == 0 || !tsr_rect_contains(child.r, bb))
        return tsr_fail(err, TSR_EINTERNAL,
                        "%s: gpu blur: the child buffer %lldx%lld+%lld+%lld does not hold "
                        "%lldx%lld+%lld+%lld",
                        where, (long long)child.r.w, (long long)child.r.h, (long long)child.r.x,
                        (long long)child.r.y, (long long)bb.w, (long long)bb.h, (long long)bb.x,
                        (long long)bb.y);
    tsr_bm_src s;
    s.px = child.px;
    s.x0 = child.r.x;
    s.y0 = child.r.y;
    s.stride = child.r.w;
    s.cw = e->child->w;
    s.ch = e->child->h;
    s.edge = p->edge;
    size_t mark = tsr_gpu_mark(g);
    tsr_status rc = blur(g, e, st, P, cr, s, to, err);
    tsr_gpu_reset(g, mark);
    return rc;
}
