/* Output conversion, DESIGN.md §2.4: value -> range -> clamp -> calibration -> sample, in
 * double, exactly as written (a subtraction and a division, not a multiply by a reciprocal),
 * so every backend produces the same samples. */
#include "engine/engine.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif


static inline double
to_unit(const tsr_output *o, double v)
{
    double t = (v - o->range[0]) / (o->range[1] - o->range[0]);
    t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0; /* NaN (inf - inf upstream) becomes 0 */
    const tsr_points *c = &o->calibration;
    if (c->n >= 2) {
        if (t == 1.0)
            return c->p[c->n - 1][1];
        /* segments are few (a handful of points): a linear scan is cheaper than a search */
        size_t i = 0;
        while (i + 2 < c->n && !(t < c->p[i + 1][0]))
            i++;
        double t0 = c->p[i][0], t1 = c->p[i + 1][0], c0 = c->p[i][1], c1 = c->p[i + 1][1];
        t = c0 + (c1 - c0) * ((t - t0) / (t1 - t0));
    }
    return t;
}

uint32_t
tsr_convert_one(const tsr_output *o, double v)
{
    double max = o->depth == 16 ? 65535.0 : 255.0;
    /* t * max + 0.5 >= 0.5, where truncation is floor: no libm call in the hot loop */
    return (uint32_t)(to_unit(o, v) * max + 0.5);
}

void
tsr_convert(const tsr_output *o, const float *v, size_t n, uint8_t *out)
{
    double lo = o->range[0], span = o->range[1] - o->range[0];
    if (o->calibration.n == 0 && o->depth == 8) {
        size_t i = 0;
#ifdef __SSE2__
        /* the common case, two doubles at a time: the same operations as the scalar loop
         * (gcc will not if-convert the clamps itself without -ffinite-math-only). maxpd
         * returns its second operand for NaN, so NaN becomes 0 as in to_unit(). */
        const __m128d vlo = _mm_set1_pd(lo), vspan = _mm_set1_pd(span), zero = _mm_setzero_pd(),
                      one = _mm_set1_pd(1.0), m = _mm_set1_pd(255.0), half = _mm_set1_pd(0.5);
        for (; i + 4 <= n; i += 4) {
            __m128 f = _mm_loadu_ps(v + i);
            __m128d a = _mm_cvtps_pd(f), b = _mm_cvtps_pd(_mm_movehl_ps(f, f));
            a = _mm_min_pd(_mm_max_pd(_mm_div_pd(_mm_sub_pd(a, vlo), vspan), zero), one);
            b = _mm_min_pd(_mm_max_pd(_mm_div_pd(_mm_sub_pd(b, vlo), vspan), zero), one);
            __m128i ia = _mm_cvttpd_epi32(_mm_add_pd(_mm_mul_pd(a, m), half));
            __m128i ib = _mm_cvttpd_epi32(_mm_add_pd(_mm_mul_pd(b, m), half));
            __m128i q = _mm_unpacklo_epi64(ia, ib);         /* 4 x int32 in 0..255 */
            q = _mm_packs_epi32(q, q);                       /* -> int16 */
            q = _mm_packus_epi16(q, q);                      /* -> uint8 */
            uint32_t w = (uint32_t)_mm_cvtsi128_si32(q);
            memcpy(out + i, &w, 4);
        }
#endif
        for (; i < n; i++) {
            double t = ((double)v[i] - lo) / span;
            t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0;
            out[i] = (uint8_t)(int32_t)(t * 255.0 + 0.5); /* >= 0.5: truncation is floor */
        }
        return;
    }
    if (o->depth == 8) {
        for (size_t i = 0; i < n; i++)
            out[i] = (uint8_t)tsr_convert_one(o, v[i]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t s = tsr_convert_one(o, v[i]);
        out[2 * i] = (uint8_t)(s & 0xff);
        out[2 * i + 1] = (uint8_t)(s >> 8);
    }
}
