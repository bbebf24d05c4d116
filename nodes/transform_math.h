/* transform's per-pixel arithmetic (docs/transforms.md), shared by the CPU reference
 * (nodes/transform.c) and the GPU kernel (gpu/transform.cu) through TSR_HD, so both map a
 * parent pixel to the same child point and weigh the same child values in the same order: the
 * same bits (-ffp-contract=off, --fmad=false).
 *
 * The map is built once per edge on the host (nodes/transform.c, prepare): the cosine and sine
 * come from the host's libm and reach the device as doubles, so no device math function takes
 * part. Per pixel there are only products, sums, comparisons and conversions, in double; the
 * filtered value is rounded once to float. */
#ifndef TSR_NODES_TRANSFORM_MATH_H
#define TSR_NODES_TRANSFORM_MATH_H

#include "nodes/pointwise.h" /* TSR_HD */

#include <stdbool.h>
#include <stdint.h>

typedef enum tsr_xf_filter {
    TSR_XF_BILINEAR, /* 2 x 2 child pixels, default */
    TSR_XF_BICUBIC,  /* 4 x 4, Keys' cubic convolution with a = -0.5 */
    TSR_XF_NEAREST   /* the child pixel the point falls in */
} tsr_xf_filter;

/* `outside`: what the filter reads past the child's edges, and which parent pixels the layer
 * covers (docs/transforms.md). */
typedef enum tsr_xf_edge {
    TSR_XF_NONE,  /* default: covers the pixels whose point falls inside the child; the filter
                   * reads the nearest child pixel past the edges */
    TSR_XF_ZERO,  /* the child on a background of 0: covers as far as the filter carries the
                   * child (half a pixel past its edges bilinear, 1.5 bicubic), a soft edge */
    TSR_XF_CLAMP, /* covers everywhere: the nearest child pixel */
    TSR_XF_WRAP   /* covers everywhere: the child repeats with its size (floor modulo) */
} tsr_xf_edge;

/* The parameters as written (the trait's table); prepare() resolves them into a tsr_xf. */
typedef struct tsr_transform_params {
    double rotate;   /* degrees, counterclockwise as the image is seen */
    bool mirror;     /* left-right about the pivot, before the rotation */
    double scale;    /* > 0, default 1 */
    double pivot[2]; /* child px; NaN (default): floor(w / 2), floor(h / 2) */
    double shift[2]; /* px, added to the integer offset, default 0 */
    int filter;      /* tsr_xf_filter */
    int outside;     /* tsr_xf_edge */
} tsr_transform_params;

/* The inverse map and what the kernels read, made by prepare() into the edge's state: child
 * point (u, v) of parent pixel (x, y) is
 *     u = m[0] * X + (m[1] * Y + t[0]),   v = m[2] * X + (m[3] * Y + t[1])
 * with X = x + 0.5, Y = y + 0.5 (the row's part first: each row computes it once). */
typedef struct tsr_xf {
    double m[4];
    double t[2];
    int filter;     /* tsr_xf_filter; nearest when `exact` */
    int edge;       /* tsr_xf_edge */
    int64_t cw, ch; /* child size */
    bool exact;     /* the map sends pixel centres to pixel centres: a copy of child pixels */
} tsr_xf;

/* Fill f with edge e's map (its parameters, offset and child size): what prepare() keeps in
 * e->state. Host only. */
#ifdef __cplusplus
extern "C" {
#endif
struct tsr_edge;
void
tsr_transform_map(const struct tsr_edge *e, tsr_xf *f);
#ifdef __cplusplus
}
#endif

/* floor(a) as an int64 for |a| < 2^62 (what need() and the kernels keep to): a conversion and
 * a compare, no libm (generic x86-64 has no rounding instruction to inline). */
TSR_HD static inline int64_t
tsr_xf_floor(double a)
{
    int64_t k = (int64_t)a;
    return (double)k > a ? k - 1 : k;
}

/* The child point of parent pixel (x, y), given its row's part ru = m[1] * Y + t[0] (rv
 * likewise): the expression above, in that order. */
TSR_HD static inline double
tsr_xf_row_u(const tsr_xf *f, int64_t y)
{
    return f->m[1] * ((double)y + 0.5) + f->t[0];
}

TSR_HD static inline double
tsr_xf_row_v(const tsr_xf *f, int64_t y)
{
    return f->m[3] * ((double)y + 0.5) + f->t[1];
}

TSR_HD static inline double
tsr_xf_u(const tsr_xf *f, int64_t x, double ru)
{
    return f->m[0] * ((double)x + 0.5) + ru;
}

TSR_HD static inline double
tsr_xf_v(const tsr_xf *f, int64_t x, double rv)
{
    return f->m[2] * ((double)x + 0.5) + rv;
}

/* How far past the child's edges a filter's footprint still reaches a child pixel centre with
 * a weight that can be non-zero: what `outside: zero` covers. */
TSR_HD static inline double
tsr_xf_reach(int filter)
{
    return filter == TSR_XF_NEAREST ? 0.0 : filter == TSR_XF_BILINEAR ? 0.5 : 1.5;
}

/* Whether the layer covers a pixel whose point is (u, v): [0, w) x [0, h) for none (and for
 * zero with the nearest filter), the open rect grown by the reach for zero, everywhere for
 * clamp and wrap. */
TSR_HD static inline bool
tsr_xf_covers(const tsr_xf *f, double u, double v)
{
    if (f->edge == TSR_XF_CLAMP || f->edge == TSR_XF_WRAP)
        return true;
    if (f->edge == TSR_XF_ZERO && f->filter != TSR_XF_NEAREST) {
        double r = tsr_xf_reach(f->filter);
        return u > -r && u < (double)f->cw + r && v > -r && v < (double)f->ch + r;
    }
    return u >= 0.0 && u < (double)f->cw && v >= 0.0 && v < (double)f->ch;
}

/* Child column k through the edge mode into [0, n), or -1 for a zero. */
TSR_HD static inline int64_t
tsr_xf_index(int edge, int64_t k, int64_t n)
{
    if (k >= 0 && k < n)
        return k;
    if (edge == TSR_XF_ZERO)
        return -1;
    if (edge == TSR_XF_WRAP) {
        int64_t m = k % n;
        return m < 0 ? m + n : m;
    }
    return k < 0 ? 0 : n - 1; /* none, clamp: the nearest pixel */
}

/* The first child column (row) of the filter's footprint for a point at u, and the weights of
 * its taps along that axis (1, 2 or 4 of them; tsr_xf_taps says how many). Footprint offsets
 * relative to that first column: [0, taps). */
TSR_HD static inline int
tsr_xf_taps(int filter)
{
    return filter == TSR_XF_NEAREST ? 1 : filter == TSR_XF_BILINEAR ? 2 : 4;
}

/* Keys' cubic with a = -0.5 at distance d >= 0, as written in docs/transforms.md:
 * (1.5 d - 2.5) d^2 + 1 for d <= 1, ((-0.5 d + 2.5) d - 4) d + 2 for 1 < d < 2, else 0. */
TSR_HD static inline double
tsr_xf_keys(double d)
{
    if (d <= 1.0)
        return (1.5 * d - 2.5) * d * d + 1.0;
    if (d < 2.0)
        return ((-0.5 * d + 2.5) * d - 4.0) * d + 2.0;
    return 0.0;
}

TSR_HD static inline int64_t
tsr_xf_weights(int filter, double u, double w[4])
{
    if (filter == TSR_XF_NEAREST) {
        w[0] = 1.0;
        return tsr_xf_floor(u);
    }
    double a = u - 0.5;
    int64_t k = tsr_xf_floor(a);
    double t = a - (double)k; /* in [0, 1): exact */
    if (filter == TSR_XF_BILINEAR) {
        w[0] = 1.0 - t;
        w[1] = t;
        return k;
    }
    w[0] = tsr_xf_keys(1.0 + t);
    w[1] = tsr_xf_keys(t);
    w[2] = tsr_xf_keys(1.0 - t);
    w[3] = tsr_xf_keys(2.0 - t);
    return k - 1;
}

/* The filtered value from the footprint's child values c[j * 4 + i] (row j, column i of the
 * taps, already through the edge mode; a zero is 0.0f) and the weights along x and y: each
 * row's weighted sum left to right, then the rows' top to bottom, in double, rounded once to
 * float. The nearest filter returns its one value as it is (the exact copy). */
TSR_HD static inline float
tsr_xf_combine(int filter, const float c[16], const double wx[4], const double wy[4])
{
    if (filter == TSR_XF_NEAREST)
        return c[0];
    int n = filter == TSR_XF_BILINEAR ? 2 : 4;
    double s = 0.0;
    for (int j = 0; j < n; j++) {
        double r = 0.0;
        for (int i = 0; i < n; i++)
            r = r + wx[i] * (double)c[j * 4 + i];
        s = s + wy[j] * r;
    }
    return (float)s;
}

#endif
