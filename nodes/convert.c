/* Output conversion, docs/format.md §7: value -> range -> clamp -> calibration -> sample, in
 * double, exactly as written (a subtraction and a division, not a multiply by a reciprocal),
 * so every backend produces the same samples. */
#include "nodes/nodes.h"
#include "nodes/pointwise.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#ifdef __x86_64__
#include <immintrin.h>
#endif


static inline double
to_unit(const tsr_output *o, double v)
{
    return tsr_pw_to_unit(o->range[0], o->range[1], (const double (*)[2])o->calibration.p,
                          (int64_t)o->calibration.n, v);
}

uint32_t
tsr_convert_one(const tsr_output *o, double v)
{
    return tsr_pw_sample(to_unit(o, v), o->depth == 16 ? 65535.0 : 255.0);
}

/* The common case (8 bit, no calibration), several doubles at a time, with the operations of
 * to_unit(): subtract, divide (or multiply by 1/span when span is a power of two, where that is
 * the same number), clamp, scale, round half up. gcc will not if-convert the clamps itself
 * without -ffinite-math-only, hence intrinsics; maxpd returns its second operand for NaN, so
 * NaN becomes 0 as in to_unit(). One AVX2 version chosen at run time where the CPU has it,
 * SSE2 (every x86-64) otherwise, and a scalar tail. */
#ifdef __x86_64__
__attribute__((target("avx2"))) static size_t
convert8_avx2(const float *v, size_t n, uint8_t *out, double lo, double span, bool recip)
{
    const __m256d vlo = _mm256_set1_pd(lo), vs = _mm256_set1_pd(recip ? 1.0 / span : span),
                  zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0),
                  m = _mm256_set1_pd(255.0), half = _mm256_set1_pd(0.5);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 f = _mm256_loadu_ps(v + i);
        __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
        __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
        a = _mm256_sub_pd(a, vlo);
        b = _mm256_sub_pd(b, vlo);
        a = recip ? _mm256_mul_pd(a, vs) : _mm256_div_pd(a, vs);
        b = recip ? _mm256_mul_pd(b, vs) : _mm256_div_pd(b, vs);
        a = _mm256_min_pd(_mm256_max_pd(a, zero), one);
        b = _mm256_min_pd(_mm256_max_pd(b, zero), one);
        __m128i ia = _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_mul_pd(a, m), half));
        __m128i ib = _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_mul_pd(b, m), half));
        __m128i q = _mm_packs_epi32(ia, ib); /* 8 x int16 in 0..255 */
        q = _mm_packus_epi16(q, q);
        _mm_storel_epi64((__m128i *)(out + i), q);
    }
    return i;
}

/* 16-bit samples, little-endian, no calibration: the same steps with max 65535. */
__attribute__((target("avx2"))) static size_t
convert16_avx2(const float *v, size_t n, uint8_t *out, double lo, double span, bool recip)
{
    const __m256d vlo = _mm256_set1_pd(lo), vs = _mm256_set1_pd(recip ? 1.0 / span : span),
                  zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0),
                  m = _mm256_set1_pd(65535.0), half = _mm256_set1_pd(0.5);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 f = _mm256_loadu_ps(v + i);
        __m256d a = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(f)), vlo);
        __m256d b = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)), vlo);
        a = recip ? _mm256_mul_pd(a, vs) : _mm256_div_pd(a, vs);
        b = recip ? _mm256_mul_pd(b, vs) : _mm256_div_pd(b, vs);
        a = _mm256_min_pd(_mm256_max_pd(a, zero), one);
        b = _mm256_min_pd(_mm256_max_pd(b, zero), one);
        __m128i ia = _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_mul_pd(a, m), half));
        __m128i ib = _mm256_cvttpd_epi32(_mm256_add_pd(_mm256_mul_pd(b, m), half));
        /* 0..65535 into unsigned 16 bits; x86 is little-endian, as the stream is */
        _mm_storeu_si128((__m128i *)(out + 2 * i), _mm_packus_epi32(ia, ib));
    }
    return i;
}
#endif

#ifdef __x86_64__
static int
have_avx2(void)
{
    static int avx2 = -1; /* racy first use is harmless: every thread writes the same */
    if (avx2 < 0)
        avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    return avx2;
}
#endif

static size_t
convert8_sse2(const float *v, size_t n, uint8_t *out, double lo, double span, bool recip)
{
    size_t i = 0;
#ifdef __SSE2__
    const __m128d vlo = _mm_set1_pd(lo), vs = _mm_set1_pd(recip ? 1.0 / span : span),
                  zero = _mm_setzero_pd(), one = _mm_set1_pd(1.0), m = _mm_set1_pd(255.0),
                  half = _mm_set1_pd(0.5);
    for (; i + 4 <= n; i += 4) {
        __m128 f = _mm_loadu_ps(v + i);
        __m128d a = _mm_sub_pd(_mm_cvtps_pd(f), vlo), b = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(f, f)), vlo);
        a = recip ? _mm_mul_pd(a, vs) : _mm_div_pd(a, vs);
        b = recip ? _mm_mul_pd(b, vs) : _mm_div_pd(b, vs);
        a = _mm_min_pd(_mm_max_pd(a, zero), one);
        b = _mm_min_pd(_mm_max_pd(b, zero), one);
        __m128i ia = _mm_cvttpd_epi32(_mm_add_pd(_mm_mul_pd(a, m), half));
        __m128i ib = _mm_cvttpd_epi32(_mm_add_pd(_mm_mul_pd(b, m), half));
        __m128i q = _mm_unpacklo_epi64(ia, ib); /* 4 x int32 in 0..255 */
        q = _mm_packs_epi32(q, q);
        q = _mm_packus_epi16(q, q);
        uint32_t w = (uint32_t)_mm_cvtsi128_si32(q);
        memcpy(out + i, &w, 4);
    }
#else
    (void)v, (void)n, (void)out, (void)lo, (void)span, (void)recip;
#endif
    return i;
}

/* x / span == x * (1 / span) exactly when span is a power of two (and nothing underflows:
 * |x| >= 2^-126 / 2^1000 is far beyond any float32 value here). */
static bool
power_of_two(double span)
{
    int ex;
    double m = frexp(span < 0 ? -span : span, &ex);
    return m == 0.5 && ex > -1000 && ex < 1000;
}

void
tsr_convert(const tsr_output *o, const float *v, size_t n, uint8_t *out)
{
    double lo = o->range[0], span = o->range[1] - o->range[0];
    if (o->calibration.n == 0 && o->depth == 8) {
        bool recip = power_of_two(span);
        size_t i;
#ifdef __x86_64__
        i = have_avx2() ? convert8_avx2(v, n, out, lo, span, recip)
                        : convert8_sse2(v, n, out, lo, span, recip);
#else
        i = convert8_sse2(v, n, out, lo, span, recip);
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
    size_t i = 0;
#ifdef __x86_64__
    if (o->calibration.n == 0 && have_avx2())
        i = convert16_avx2(v, n, out, lo, span, power_of_two(span));
#endif
    for (; i < n; i++) {
        uint32_t s = tsr_convert_one(o, v[i]);
        out[2 * i] = (uint8_t)(s & 0xff);
        out[2 * i + 1] = (uint8_t)(s >> 8);
    }
}
