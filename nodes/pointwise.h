/* Pointwise arithmetic of docs/format.md §2, once, for every backend: gcc compiles it into nodes/
 * and engine/, nvcc into gpu/ kernels (TSR_HD is __host__ __device__ there). Each function is
 * the exact expression the spec writes, in the stated precision; with -ffp-contract=off (gcc)
 * and --fmad=false (nvcc) both compilers emit the same IEEE operations, so both backends get
 * the same bits. The CPU's vectorised loops keep these operations in the same order and are
 * tested equal to them; kernels call them directly.
 *
 * Only plain C: no libm beyond sqrt (correctly rounded on both), no fmaxf/fminf (their NaN
 * rules differ from the ternaries the spec's reference uses). */
#ifndef TSR_NODES_POINTWISE_H
#define TSR_NODES_POINTWISE_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TSR_HD __host__ __device__
#else
#define TSR_HD
#endif

/* ---- sources (§2.2) -------------------------------------------------------------------- */

TSR_HD static inline int
tsr_pw_in_circle(double dx, double dy, double r)
{
    return dx * dx + dy * dy <= r * r;
}

TSR_HD static inline int
tsr_pw_in_ellipse(double dx, double dy, double rx, double ry)
{
    double ex = dx / rx, ey = dy / ry;
    return ex * ex + ey * ey <= 1.0;
}

TSR_HD static inline int
tsr_pw_in_ring(double dx, double dy, double rin, double rout)
{
    double d2 = dx * dx + dy * dy;
    return rin * rin <= d2 && d2 <= rout * rout;
}

TSR_HD static inline int
tsr_pw_in_rect(double px, double py, const double rect[4])
{
    return rect[0] <= px && px <= rect[0] + rect[2] && rect[1] <= py && py <= rect[1] + rect[3];
}

/* Even-odd rule over n points (x, y pairs): the edge test of the spec, edge i from point i to
 * point i + 1 (the last back to the first). */
TSR_HD static inline int
tsr_pw_in_polygon(const double (*p)[2], int64_t n, double px, double py)
{
    int odd = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = i + 1 == n ? 0 : i + 1;
        double x1 = p[i][0], y1 = p[i][1], x2 = p[k][0], y2 = p[k][1];
        if ((y1 > py) != (y2 > py) && px < (x2 - x1) * (py - y1) / (y2 - y1) + x1)
            odd ^= 1;
    }
    return odd;
}

/* Sub-sample coordinate i of n inside pixel x: x + (i + 0.5) / n. */
TSR_HD static inline double
tsr_pw_sub(int64_t x, int64_t i, int64_t n)
{
    return (double)x + ((double)i + 0.5) / (double)n;
}

/* aa mix: coverage count / n^2, P (1 - c) + value c in double, rounded once. */
TSR_HD static inline float
tsr_pw_aa_mix(float P, float value, int64_t count, int64_t n)
{
    double c = (double)count / (double)(n * n);
    return (float)((double)P * (1.0 - c) + (double)value * c);
}

TSR_HD static inline double
tsr_pw_clamp01(double t)
{
    return t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
}

/* Linear gradient at pixel centre (px, py): from (fx, fy), direction (gx, gy), |g|^2 len2. */
TSR_HD static inline float
tsr_pw_linear(double a, double b, double fx, double fy, double gx, double gy, double len2,
              double px, double py)
{
    double t = tsr_pw_clamp01(((px - fx) * gx + (py - fy) * gy) / len2);
    return (float)(a + t * (b - a));
}

TSR_HD static inline float
tsr_pw_radial(double a, double b, double dx, double dy, double radius)
{
    double t = tsr_pw_clamp01(sqrt(dx * dx + dy * dy) / radius);
    return (float)(a + t * (b - a));
}

/* ---- blends and masks (§2.3): P' for a covered pixel ------------------------------------ */

/* Blend modes, in the order of tsr_blend (nodes.h). */
TSR_HD static inline float
tsr_pw_blend(int blend, float p, float l)
{
    switch (blend) {
    case 0: return l;                /* over */
    case 1: return p + l;            /* add */
    case 2: return l > p ? l : p;    /* max */
    case 3: return l < p ? l : p;    /* min */
    default: return p * l;           /* multiply */
    }
}

/* The parent value after an edge: covered (cov) and not masked out (mask nonzero drops L == 0). */
TSR_HD static inline float
tsr_pw_apply(int blend, int mask_nonzero, float p, float l, int cov)
{
    if (!cov || (mask_nonzero && l == 0.0f))
        return p;
    return tsr_pw_blend(blend, p, l);
}

/* ---- repeat overlaps (§2.3): the running layer value after one more copy's value s -------
 * `c`: the pixel was covered by an earlier copy; l: the running value. average keeps the sum
 * of the non-zero values (and counts them apart); the caller divides at the end. */
TSR_HD static inline float
tsr_pw_overlap(int ov, int c, float l, float s)
{
    switch (ov) {
    case 1: return (c && !(s > l)) ? l : s;          /* max */
    case 2: return c ? l + s : s;                    /* add */
    case 3: return c ? l : s;                        /* first */
    default: return (c ? l : 0.0f) + (s != 0.0f ? s : 0.0f); /* average: the sum */
    }
}

/* ---- output (§2.4) ------------------------------------------------------------------------- */

/* value -> [0, 1]: range, clamp (NaN -> 0), calibration over n points (t_i, c_i). */
TSR_HD static inline double
tsr_pw_to_unit(double lo, double hi, const double (*cal)[2], int64_t n, double v)
{
    double t = (v - lo) / (hi - lo);
    t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0;
    if (n >= 2) {
        if (t == 1.0)
            return cal[n - 1][1];
        int64_t i = 0;
        while (i + 2 < n && !(t < cal[i + 1][0]))
            i++;
        double t0 = cal[i][0], t1 = cal[i + 1][0], c0 = cal[i][1], c1 = cal[i + 1][1];
        t = c0 + (c1 - c0) * ((t - t0) / (t1 - t0));
    }
    return t;
}

/* [0, 1] -> sample: floor(t * max + 0.5) (t * max + 0.5 >= 0.5, so truncation is floor). */
TSR_HD static inline uint32_t
tsr_pw_sample(double t, double max)
{
    return (uint32_t)(t * max + 0.5);
}

/* The sample of w = dir * v from a threshold table (nodes/output.c, tsr_sample_table): the s in
 * [smin, smax] with thr[s - smin - 1] <= w < thr[s - smin] (thr holds the least w of each
 * sample above smin), found by stepping from any guess in [smin, smax]. Exact wherever the
 * table exists (the conversion is monotone in v); a guess within a sample or two of the answer
 * (the conversion in float) makes it two or three compares instead of double arithmetic. */
TSR_HD static inline uint32_t
tsr_pw_table_sample(const float *thr, uint32_t smin, uint32_t smax, float w, uint32_t guess)
{
    uint32_t s = guess < smin ? smin : guess > smax ? smax : guess;
    while (s < smax && w >= thr[s - smin])
        s++;
    while (s > smin && w < thr[s - smin - 1])
        s--;
    return s;
}

#endif
