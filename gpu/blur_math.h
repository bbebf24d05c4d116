/* The per-pixel arithmetic of the blur trait (docs/format.md §5, nodes/blur_int.h), once for the
 * GPU kernels (gpu/blur.cu, nvcc: TSR_HD is __host__ __device__) and for the host test that
 * proves it equal, bit for bit, to the CPU reference (tests/test_gpu_math.c, gcc).
 *
 * Each function does, per output value, the operations of nodes/blur.c's scalar definitions in
 * their order: float32 adds and products rounded to nearest, never fused (on the device the
 * _rn intrinsics state it whatever the flags; gcc gets -ffp-contract=off), truncating float to
 * int32 conversions, int32 box sums that are exact in any order (uint32, wrapping: the true sum
 * is below 2^30 in magnitude). Plain C, no libm.
 *
 * The work items (`*_item`) are what one GPU thread does; the kernels and the host test run
 * the same items, so the test covers the index arithmetic too. */
#ifndef TSR_GPU_BLUR_MATH_H
#define TSR_GPU_BLUR_MATH_H

#ifdef __cplusplus
extern "C" {
#endif
#include "nodes/params.h"
#ifdef __cplusplus
}
#endif
#include "nodes/pointwise.h" /* TSR_HD */

#include <stdint.h>

#ifdef __CUDA_ARCH__
#define TSR_BM_FADD(a, b) __fadd_rn((a), (b))
#define TSR_BM_FSUB(a, b) __fsub_rn((a), (b))
#define TSR_BM_FMUL(a, b) __fmul_rn((a), (b))
#define TSR_BM_I2F(i) __int2float_rn(i)
#define TSR_BM_F2I(f) __float2int_rz(f)
#else
#define TSR_BM_FADD(a, b) ((a) + (b))
#define TSR_BM_FSUB(a, b) ((a) - (b))
#define TSR_BM_FMUL(a, b) ((a) * (b))
#define TSR_BM_I2F(i) ((float)(i))
#define TSR_BM_F2I(f) ((int32_t)(f))
#endif

#define TSR_BM_QSCALE 65536.0f      /* 2^TSR_BLUR_QBITS, blur.c's QSCALE */
#define TSR_BM_RND_MAGIC 12582912.0f /* 1.5 * 2^23, blur.c's RND_MAGIC */
#define TSR_BM_SEG 64               /* outputs of one box work item (a running sum) */

/* The child as the kernels read it: pixels of the buffer rect (x0, y0, ., .) at px, `stride`
 * floats per row, holding (at least) every child pixel a window reads after the edge mode maps
 * it into the child. */
typedef struct tsr_bm_src {
    const float *px; /* child (x0, y0) */
    int64_t x0, y0;  /* child coordinates of px[0] */
    int64_t stride;  /* floats per row */
    int64_t cw, ch;  /* child size */
    int edge;        /* tsr_edge_mode */
} tsr_bm_src;

/* C(x, y): the child extended by the edge mode (zero, clamp to the nearest pixel, or periodic
 * by floor mod), any int64 child coordinates. */
TSR_HD static inline float
tsr_bm_child(const tsr_bm_src *s, int64_t x, int64_t y)
{
    if (s->edge == TSR_EDGE_ZERO) {
        if (x < 0 || y < 0 || x >= s->cw || y >= s->ch)
            return 0.0f;
    } else if (s->edge == TSR_EDGE_CLAMP) {
        x = x < 0 ? 0 : x >= s->cw ? s->cw - 1 : x;
        y = y < 0 ? 0 : y >= s->ch ? s->ch - 1 : y;
    } else {
        x %= s->cw;
        x = x < 0 ? x + s->cw : x;
        y %= s->ch;
        y = y < 0 ? y + s->ch : y;
    }
    return s->px[(y - s->y0) * s->stride + (x - s->x0)];
}

/* Child pixel (x, y), which must be inside the child. */
TSR_HD static inline const float *
tsr_bm_at(const tsr_bm_src *s, int64_t x, int64_t y)
{
    return s->px + (y - s->y0) * s->stride + (x - s->x0);
}

/* True when the window [x0, x1] x [y0, y1] lies inside the child, where every edge mode reads
 * the pixels as they are: the fast paths below skip the per-read mapping there, and read the
 * same values in the same order. */
TSR_HD static inline int
tsr_bm_inside(const tsr_bm_src *s, int64_t x0, int64_t y0, int64_t x1, int64_t y1)
{
    return x0 >= 0 && y0 >= 0 && x1 < s->cw && y1 < s->ch;
}

/* ---- explicit kernel ------------------------------------------------------------------------- */

/* L at child (x, y): sum over j, i of K[j][i] C(x + i - rx, y + j - ry), from 0, j then i
 * (blur.c: run_kernel). */
TSR_HD static inline float
tsr_bm_kernel_px(const tsr_bm_src *s, const float *k, int64_t kw, int64_t kh, int64_t x,
                 int64_t y)
{
    int64_t rx = (kw - 1) / 2, ry = (kh - 1) / 2;
    float t = 0.0f;
    if (tsr_bm_inside(s, x - rx, y - ry, x + rx, y + ry)) {
        const float *c = tsr_bm_at(s, x - rx, y - ry);
        for (int64_t j = 0; j < kh; j++, c += s->stride)
            for (int64_t i = 0; i < kw; i++)
                t = TSR_BM_FADD(t, TSR_BM_FMUL(k[j * kw + i], c[i]));
        return t;
    }
    for (int64_t j = 0; j < kh; j++)
        for (int64_t i = 0; i < kw; i++)
            t = TSR_BM_FADD(t, TSR_BM_FMUL(k[j * kw + i], tsr_bm_child(s, x + i - rx, y + j - ry)));
    return t;
}

/* ---- FIR (sigma <= 6) ------------------------------------------------------------------------ */

/* w0 c[0], then += w_k (c[-k step] + c[k step]) for k = 1..r (blur.c: fir). */
TSR_HD static inline float
tsr_bm_fir(const float *c, int64_t step, const float *w, int64_t r)
{
    float t = TSR_BM_FMUL(w[0], c[0]);
    for (int64_t k = 1; k <= r; k++)
        t = TSR_BM_FADD(t, TSR_BM_FMUL(w[k], TSR_BM_FADD(c[-k * step], c[k * step])));
    return t;
}

/* The same along x straight from the child at (x, y): the first pass. */
TSR_HD static inline float
tsr_bm_fir_child(const tsr_bm_src *s, const float *w, int64_t r, int64_t x, int64_t y)
{
    if (tsr_bm_inside(s, x - r, y, x + r, y))
        return tsr_bm_fir(tsr_bm_at(s, x, y), 1, w, r);
    float t = TSR_BM_FMUL(w[0], tsr_bm_child(s, x, y));
    for (int64_t k = 1; k <= r; k++)
        t = TSR_BM_FADD(t, TSR_BM_FMUL(w[k], TSR_BM_FADD(tsr_bm_child(s, x - k, y),
                                                          tsr_bm_child(s, x + k, y))));
    return t;
}

/* ---- kernel and FIR work items ----------------------------------------------------------------
 * The layer over child rect cr (tw x th) goes to L (row stride tw); (cx, cy) = (cr.x, cr.y). The
 * FIR's first pass fills H, tw x (th + 2r) floats, whose row 0 is child row cy - r. */

TSR_HD static inline void
tsr_bm_kernel_item(const tsr_bm_src *s, const float *k, int64_t kw, int64_t kh, int64_t cx,
                   int64_t cy, float *L, int64_t tw, int64_t x, int64_t y)
{
    L[y * tw + x] = tsr_bm_kernel_px(s, k, kw, kh, cx + x, cy + y);
}

TSR_HD static inline void
tsr_bm_firx_item(const tsr_bm_src *s, const float *w, int64_t r, int64_t cx, int64_t cy,
                 float *H, int64_t tw, int64_t x, int64_t yy)
{
    H[yy * tw + x] = tsr_bm_fir_child(s, w, r, cx + x, cy - r + yy);
}

TSR_HD static inline void
tsr_bm_firy_item(const float *H, const float *w, int64_t r, float *L, int64_t tw, int64_t x,
                 int64_t y)
{
    L[y * tw + x] = tsr_bm_fir(H + (y + r) * tw + x, tw, w, r);
}

/* ---- spline (sigma > 6) ---------------------------------------------------------------------- */

/* Fixed point of a float, clamped (NaN goes to +lim), rounded by the magic number (blur.c:
 * quant, rnd). */
TSR_HD static inline int32_t
tsr_bm_quant(float f, float lim)
{
    f = f < lim ? f : lim;
    f = f > -lim ? f : -lim;
    return TSR_BM_F2I(TSR_BM_FSUB(TSR_BM_FADD(f, TSR_BM_RND_MAGIC), TSR_BM_RND_MAGIC));
}

/* The quantised child at (x, y): the input of the first (vertical) box. */
TSR_HD static inline int32_t
tsr_bm_qchild(const tsr_bm_src *s, float lim, int64_t x, int64_t y)
{
    return tsr_bm_quant(TSR_BM_FMUL(tsr_bm_child(s, x, y), TSR_BM_QSCALE), lim);
}

/* A box mean: the exact sum of h values (read as int32) times 1/h, truncated (blur.c: MEAN8). */
TSR_HD static inline int32_t
tsr_bm_mean(uint32_t sum, float inv_h)
{
    return TSR_BM_F2I(TSR_BM_FMUL(TSR_BM_I2F((int32_t)sum), inv_h));
}

/* n >= 1 consecutive box means along an axis: out[i ostep] = mean of in[(i + k) step] for
 * k in [0, h), by a running sum. */
TSR_HD static inline void
tsr_bm_box_run(const int32_t *in, int64_t step, int64_t h, float inv_h, int32_t *out,
               int64_t ostep, int64_t n)
{
    uint32_t sum = 0;
    for (int64_t k = 0; k < h; k++)
        sum += (uint32_t)in[k * step];
    for (int64_t i = 0;; i++) {
        out[i * ostep] = tsr_bm_mean(sum, inv_h);
        if (i + 1 >= n)
            break;
        sum += (uint32_t)in[(i + h) * step] - (uint32_t)in[i * step];
    }
}

/* The same down child column x from row y0, over the quantised child: the first vertical box. */
TSR_HD static inline void
tsr_bm_box_run_child(const tsr_bm_src *s, float lim, int64_t x, int64_t y0, int64_t h,
                     float inv_h, int32_t *out, int64_t ostep, int64_t n)
{
    /* inside the child: straight down the column */
    const float *c = (const float *)0;
    if (tsr_bm_inside(s, x, y0, x, y0 + n + h - 2))
        c = tsr_bm_at(s, x, y0);
    const int64_t st = s->stride;
#define TSR_BM_Q(k)                                                                           \
    (c ? tsr_bm_quant(TSR_BM_FMUL(c[(k) * st], TSR_BM_QSCALE), lim)                           \
       : tsr_bm_qchild(s, lim, x, y0 + (k)))
    uint32_t sum = 0;
    for (int64_t k = 0; k < h; k++)
        sum += (uint32_t)TSR_BM_Q(k);
    for (int64_t i = 0;; i++) {
        out[i * ostep] = tsr_bm_mean(sum, inv_h);
        if (i + 1 >= n)
            break;
        sum += (uint32_t)TSR_BM_Q(i + h) - (uint32_t)TSR_BM_Q(i);
    }
#undef TSR_BM_Q
}

/* The m taps at spacing h (v[p h step], p < m): pairs first to last, each pair added in int32
 * (exact) and converted, then the middle tap when m is odd (blur.c: taps_lanes). */
TSR_HD static inline float
tsr_bm_taps(const int32_t *v, int64_t step, int64_t h, const float *c, int64_t m)
{
    int64_t s = h * step;
    float t = TSR_BM_FMUL(c[0], TSR_BM_I2F(v[0] + v[(m - 1) * s]));
    for (int64_t p = 1; p < m / 2; p++)
        t = TSR_BM_FADD(t, TSR_BM_FMUL(c[p], TSR_BM_I2F(v[p * s] + v[(m - 1 - p) * s])));
    if (m % 2)
        t = TSR_BM_FADD(t, TSR_BM_FMUL(c[m / 2], TSR_BM_I2F(v[(m / 2) * s])));
    return t;
}

/* ---- spline work items --------------------------------------------------------------------
 * The spline layer over child rect cr (tw x th) with support R goes through int32 planes of
 * pw = tw + 2R columns (row stride pw), whose row 0 / column 0 is child row / column
 * cr.y - R / cr.x - R:
 *   y box 1   child -> A, ph - (h - 1) rows (ph = th + 2R)   tsr_bm_ybox1_item
 *   y box 2-4 A -> B -> A -> B, h - 1 rows fewer each        tsr_bm_box_item (along = pw)
 *   y taps    B -> A, th rows, requantised                   tsr_bm_ytaps_item
 *   x box 1-4 A -> B -> A -> B -> A, h - 1 columns fewer     tsr_bm_box_item (along = 1)
 *   x taps    A -> L (tw x th floats, cq taps, no quant)     tsr_bm_xtaps_item
 * Box item (a, sg): line `a` across the axis, outputs [sg SEG, sg SEG + SEG) along it. */

/* Number of box items along an axis of nout outputs. */
TSR_HD static inline int64_t
tsr_bm_nseg(int64_t nout)
{
    return (nout + TSR_BM_SEG - 1) / TSR_BM_SEG;
}

/* First vertical box: column a (of pw), rows [sg SEG, ...) of nout = ph - (h - 1); A has row
 * stride pw. (cx, cy) = (cr.x - R, cr.y - R). */
TSR_HD static inline void
tsr_bm_ybox1_item(const tsr_bm_src *s, float lim, int64_t cx, int64_t cy, int64_t h,
                  float inv_h, int32_t *A, int64_t pw, int64_t nout, int64_t a, int64_t sg)
{
    int64_t i0 = sg * TSR_BM_SEG, n = nout - i0 < TSR_BM_SEG ? nout - i0 : TSR_BM_SEG;
    tsr_bm_box_run_child(s, lim, cx + a, cy + i0, h, inv_h, A + i0 * pw + a, pw, n);
}

/* A later box: line a, outputs [sg SEG, ...) of nout. `along` is the step along the axis
 * (pw for y, 1 for x), `across` the step between lines (1 for y, pw for x). */
TSR_HD static inline void
tsr_bm_box_item(const int32_t *in, int32_t *out, int64_t along, int64_t across, int64_t h,
                float inv_h, int64_t nout, int64_t a, int64_t sg)
{
    int64_t i0 = sg * TSR_BM_SEG, n = nout - i0 < TSR_BM_SEG ? nout - i0 : TSR_BM_SEG;
    int64_t o = a * across + i0 * along;
    tsr_bm_box_run(in + o, along, h, inv_h, out + o, along, n);
}

/* Vertical taps at (x, y), x < pw, y < th: requantised into M (row stride pw). */
TSR_HD static inline void
tsr_bm_ytaps_item(const int32_t *B, int32_t *M, int64_t pw, int64_t h, const float *c,
                  int64_t m, float lim, int64_t x, int64_t y)
{
    M[y * pw + x] = tsr_bm_quant(tsr_bm_taps(B + y * pw + x, pw, h, c, m), lim);
}

/* Horizontal taps at (x, y), x < tw: the layer value (L row stride tw). */
TSR_HD static inline void
tsr_bm_xtaps_item(const int32_t *A, float *L, int64_t pw, int64_t tw, int64_t h,
                  const float *cq, int64_t m, int64_t x, int64_t y)
{
    L[y * tw + x] = tsr_bm_taps(A + y * pw + x, 1, h, cq, m);
}

#endif
