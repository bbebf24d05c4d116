/* Seeded noise that tiles (docs/optics.md): every value is a function of (seed, lattice
 * coordinates) through a counter-based hash, so any tile, band, thread, backend or resumed
 * stream computes the same bits. Shared by nodes/noise.c and gpu/noise.cu; plain C on integers
 * and doubles (the rules of nodes/pointwise.h: -ffp-contract=off, --fmad=false, no libm but
 * sqrt, floor and frexp). The logarithm is written here because libm's log differs between the
 * host and the device. */
#ifndef TSR_NODES_NOISE_MATH_H
#define TSR_NODES_NOISE_MATH_H

#include "nodes/pointwise.h"

#include <stdint.h>

#define TSR_NZ_GAMMA 0x9E3779B97F4A7C15ull /* SplitMix64's increment (2^64 / golden ratio) */

enum { TSR_NZ_VALUE, TSR_NZ_GAUSSIAN };

/* A noise source ready to evaluate (tsr_noise_make, nodes/noise.c). */
typedef struct tsr_noise {
    int kind;          /* TSR_NZ_* */
    uint64_t seed;
    double cell;       /* value noise: lattice cell, px */
    double inv_cell;   /* value noise: 1 / cell, rounded once */
    int64_t block;     /* gaussian: block edge, px (1: per pixel) */
    int octaves;       /* value noise: 1..16 */
    double scale;      /* amplitude or sigma */
    double mean;
} tsr_noise;

#ifdef __cplusplus
extern "C" {
#endif
struct tsr_source;
/* Fill n from a checked noise source (nodes/noise.c). Thread-safe; cannot fail. */
void
tsr_noise_make(const struct tsr_source *src, tsr_noise *n);
#ifdef __cplusplus
}
#endif

/* SplitMix64's output function (Steele, Lea, Flood 2014): a bijection of 64-bit words whose
 * every output bit depends on every input bit. */
TSR_HD static inline uint64_t
tsr_nz_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The hash of (seed, i, j): h = mix(seed + G), then h = mix((h ^ i) + G), h = mix((h ^ j) + G),
 * with i and j as two's-complement 64-bit words. */
TSR_HD static inline uint64_t
tsr_nz_hash(uint64_t seed, int64_t i, int64_t j)
{
    uint64_t h = tsr_nz_mix(seed + TSR_NZ_GAMMA);
    h = tsr_nz_mix((h ^ (uint64_t)i) + TSR_NZ_GAMMA);
    return tsr_nz_mix((h ^ (uint64_t)j) + TSR_NZ_GAMMA);
}

/* A hash's top 53 bits as a double in [0, 1). */
TSR_HD static inline double
tsr_nz_unit(uint64_t h)
{
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* ln(x) for finite x > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m -
 * 1) / (m + 1), |s| < 0.172, whose series to s^25 reaches 2^-60; ln 2 in two parts. */
TSR_HD static inline double
tsr_nz_log(double x)
{
    int e;
    double m = frexp(x, &e);
    if (m < 0.7071067811865476) {
        m *= 2.0;
        e -= 1;
    }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s, t = 0.0;
    for (int n = 12; n >= 0; n--)
        t = 1.0 / (double)(2 * n + 1) + s2 * t;
    double lm = 2.0 * (s * t);
    return (double)e * 6.93147180369123816490e-01 + (lm + (double)e * 1.90821492927058770002e-10);
}

/* The standard normal quantile at p in (0, 1): Acklam's rational approximation (relative
 * error below 1.2e-9), in its published form and constants. */
TSR_HD static inline double
tsr_nz_normal_quantile(double p)
{
    const double a1 = -3.969683028665376e+01, a2 = 2.209460984245205e+02,
                 a3 = -2.759285104469687e+02, a4 = 1.383577518672690e+02,
                 a5 = -3.066479806614716e+01, a6 = 2.506628277459239e+00;
    const double b1 = -5.447609879822406e+01, b2 = 1.615858368580409e+02,
                 b3 = -1.556989798598866e+02, b4 = 6.680131188771972e+01,
                 b5 = -1.328068155288572e+01;
    const double c1 = -7.784894002430293e-03, c2 = -3.223964580411365e-01,
                 c3 = -2.400758277161838e+00, c4 = -2.549732539343734e+00,
                 c5 = 4.374664141464968e+00, c6 = 2.938163982698783e+00;
    const double d1 = 7.784695709041462e-03, d2 = 3.224671290700398e-01,
                 d3 = 2.445134137142996e+00, d4 = 3.754408661907416e+00;
    const double plow = 0.02425, phigh = 1.0 - 0.02425;
    if (p < plow) {
        double q = sqrt(-2.0 * tsr_nz_log(p));
        return (((((c1 * q + c2) * q + c3) * q + c4) * q + c5) * q + c6) /
               ((((d1 * q + d2) * q + d3) * q + d4) * q + 1.0);
    }
    if (p > phigh) {
        double q = sqrt(-2.0 * tsr_nz_log(1.0 - p));
        return -(((((c1 * q + c2) * q + c3) * q + c4) * q + c5) * q + c6) /
               ((((d1 * q + d2) * q + d3) * q + d4) * q + 1.0);
    }
    double q = p - 0.5, r = q * q;
    return (((((a1 * r + a2) * r + a3) * r + a4) * r + a5) * r + a6) * q /
           (((((b1 * r + b2) * r + b3) * r + b4) * r + b5) * r + 1.0);
}

/* floor(a / b) for b > 0. */
TSR_HD static inline int64_t
tsr_nz_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* The quintic fade 6t^5 - 15t^4 + 10t^3, as t^3 (t (6t - 15) + 10). */
TSR_HD static inline double
tsr_nz_fade(double t)
{
    return t * t * t * (t * (t * 6.0 - 15.0) + 10.0);
}

/* Value noise at pixel (x, y): per octave o (cell / 2^o, weight 2^-o), the pixel centre's
 * lattice cell (i, j) = floor(p * inv_o), inv_o = 2^o (1 / cell) (1 / cell rounded once, the
 * powers of two exact), the hashes of its four corners under seed + o G as
 * values in [0, 1), blended by the quintic fade 6t^5 - 15t^4 + 10t^3 of the fractions; the
 * octaves' weighted sum over the sum of the weights. */
TSR_HD static inline double
tsr_nz_value(const tsr_noise *n, int64_t x, int64_t y)
{
    double px = (double)x + 0.5, py = (double)y + 0.5, inv = n->inv_cell, w = 1.0;
    double sum = 0.0, wsum = 0.0;
    for (int o = 0; o < n->octaves; o++) {
        uint64_t seed = n->seed + (uint64_t)o * TSR_NZ_GAMMA;
        double fx = px * inv, fy = py * inv;
        double ix = floor(fx), iy = floor(fy);
        double tx = fx - ix, ty = fy - iy;
        int64_t i = (int64_t)ix, j = (int64_t)iy;
        double ux = tsr_nz_fade(tx), uy = tsr_nz_fade(ty);
        double v00 = tsr_nz_unit(tsr_nz_hash(seed, i, j));
        double v10 = tsr_nz_unit(tsr_nz_hash(seed, i + 1, j));
        double v01 = tsr_nz_unit(tsr_nz_hash(seed, i, j + 1));
        double v11 = tsr_nz_unit(tsr_nz_hash(seed, i + 1, j + 1));
        double a = v00 + ux * (v10 - v00), b = v01 + ux * (v11 - v01);
        sum += w * (a + uy * (b - a));
        wsum += w;
        w *= 0.5;
        inv *= 2.0;
    }
    return sum / wsum;
}

/* Gaussian white noise at pixel (x, y): one N(0, 1) draw per block (floor(x / b), floor(y / b)),
 * the normal quantile of (top 53 bits of its hash + 0.5) / 2^53, in (0, 1). */
TSR_HD static inline double
tsr_nz_gaussian(const tsr_noise *n, int64_t x, int64_t y)
{
    int64_t i = n->block > 1 ? tsr_nz_floor_div(x, n->block) : x;
    int64_t j = n->block > 1 ? tsr_nz_floor_div(y, n->block) : y;
    uint64_t h = tsr_nz_hash(n->seed, i, j);
    double p = ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return tsr_nz_normal_quantile(p);
}

/* The value of pixel (x, y): mean + scale * noise, rounded once to float32. */
TSR_HD static inline float
tsr_nz_pixel(const tsr_noise *n, int64_t x, int64_t y)
{
    double v = n->kind == TSR_NZ_VALUE ? tsr_nz_value(n, x, y) : tsr_nz_gaussian(n, x, y);
    return (float)(n->mean + n->scale * v);
}

#endif
