/* nodes: threshold arrays, dithering of sample rows into 1/2/4-bit rows, bit planes
 * (dither.h, docs/outputs.md). The per-pixel arithmetic is nodes/dither_math.h's. */
#include "nodes/dither.h"
#include "nodes/dither_math.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

struct tsr_dither {
    tsr_dither_kind kind;
    int k;             /* N = 2^k */
    uint32_t n;
    char name[24];
    uint32_t *rank;    /* N * N */
    uint16_t *t8;      /* thresholds for 8-bit samples, N * N */
    uint16_t *t16;     /* ... for 16-bit samples */
    /* The 8-bit thresholds plus one, each row repeated to P + 16 bytes (P = max(N, 16)), so a
     * 16-pixel vector at any phase reads contiguous bytes: s > t is max(s, t + 1) == s. */
    uint8_t *wide;
    /* the 16-bit thresholds the same way, t + 1 (t <= 65534) with the top bit flipped: SSE2
     * compares only signed 16-bit numbers, and flipping both sides keeps the order */
    int16_t *wide16;
    uint32_t period;   /* P */
};

/* ---- blue noise: void-and-cluster ------------------------------------------------------
 *
 * Ulichney's method (1993) on a torus: a Gaussian energy filter, sigma 1.5, summed over the
 * minority pixels at their toroidal distance. Everything is integers so the array is the same
 * on every machine and compiler (no exp() whose last bit may differ): the filter is
 * w(d^2) = 2^32 q^(d^2) with q = exp(-1 / (2 sigma^2)) fixed as Q / 2^32, each power rounded
 * down from the one before (rounding half up would stick at 1); it reaches 0 below d^2 = 128
 * (d ~ 10), the taps beyond are 0. Energies are exact uint64
 * sums; every argmin/argmax takes the lowest index y * N + x on a tie. The start is N^2 / 10
 * minority pixels drawn by a Fisher-Yates prefix from splitmix64 with a fixed seed.
 * tests/oracle/dither.py generates the same arrays independently in numpy. */

#define BLUE_Q 3439140958ull             /* round(exp(-1 / 4.5) * 2^32) */
#define BLUE_SEED 0x7e55e7a0b1e5eedull   /* fixed: the arrays are part of the output's meaning */
#define BLUE_MIN_K 4
#define BLUE_MAX_K 7
#define BLUE_TAPS 128

static uint64_t
splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct vc {
    uint32_t n, mask;
    size_t cells;
    uint64_t *e;       /* energy of each cell: the filter summed over the ones */
    uint8_t *on;
    /* the filter's non-zero taps, toroidal offsets (dx, dy) and weights */
    int32_t *tdx, *tdy;
    uint64_t *tw;
    size_t ntaps;
} vc;

static void
vc_toggle(vc *v, size_t p, bool add)
{
    uint32_t px = (uint32_t)(p & v->mask), py = (uint32_t)(p / v->n);
    v->on[p] = add;
    for (size_t i = 0; i < v->ntaps; i++) {
        size_t q = (size_t)((py + (uint32_t)v->tdy[i]) & v->mask) * v->n +
                   ((px + (uint32_t)v->tdx[i]) & v->mask);
        if (add)
            v->e[q] += v->tw[i];
        else
            v->e[q] -= v->tw[i];
    }
}

/* The one with the most energy (tightest cluster), or the zero with the least (largest
 * void); the lowest index on a tie. */
static size_t
vc_find(const vc *v, bool cluster)
{
    size_t best = SIZE_MAX;
    for (size_t p = 0; p < v->cells; p++) {
        if (v->on[p] != cluster)
            continue;
        if (best == SIZE_MAX || (cluster ? v->e[p] > v->e[best] : v->e[p] < v->e[best]))
            best = p;
    }
    return best;
}

/* ranks[] of a 2^k blue-noise array; false when out of memory. */
static bool
blue_make(int k, uint32_t *rank)
{
    uint32_t n = 1u << k;
    vc v = {.n = n, .mask = n - 1, .cells = (size_t)n * n};
    uint64_t w[BLUE_TAPS]; /* w[d^2]; 0 before the table ends, so beyond it too */
    w[0] = (uint64_t)1 << 32;
    for (size_t d = 1; d < BLUE_TAPS; d++)
        w[d] = (w[d - 1] * BLUE_Q) >> 32;
    bool ok = false;
    uint8_t *on0 = NULL;
    uint64_t *e0 = NULL;
    v.e = calloc(v.cells, sizeof *v.e);
    v.on = calloc(v.cells, 1);
    v.tdx = malloc(v.cells * sizeof *v.tdx);
    v.tdy = malloc(v.cells * sizeof *v.tdy);
    v.tw = malloc(v.cells * sizeof *v.tw);
    on0 = malloc(v.cells);
    e0 = malloc(v.cells * sizeof *e0);
    uint32_t *perm = malloc(v.cells * sizeof *perm);
    if (!v.e || !v.on || !v.tdx || !v.tdy || !v.tw || !on0 || !e0 || !perm)
        goto done;
    for (uint32_t dy = 0; dy < n; dy++)
        for (uint32_t dx = 0; dx < n; dx++) {
            uint32_t ax = dx < n - dx ? dx : n - dx, ay = dy < n - dy ? dy : n - dy;
            uint64_t wt = ax * ax + ay * ay < BLUE_TAPS ? w[ax * ax + ay * ay] : 0;
            if (wt) {
                v.tdx[v.ntaps] = (int32_t)dx;
                v.tdy[v.ntaps] = (int32_t)dy;
                v.tw[v.ntaps++] = wt;
            }
        }
    /* the initial pattern */
    uint64_t seed = BLUE_SEED;
    size_t ones = v.cells / 10;
    for (size_t i = 0; i < v.cells; i++)
        perm[i] = (uint32_t)i;
    for (size_t i = 0; i < ones; i++) {
        size_t j = i + (size_t)(splitmix64(&seed) % (v.cells - i));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        vc_toggle(&v, perm[i], true);
    }
    /* the prototype: move the tightest cluster into the largest void until that is where it
     * came from (a cap keeps a cycle, should one ever happen, finite and still deterministic) */
    for (size_t it = 0; it < 64 * v.cells; it++) {
        size_t c = vc_find(&v, true);
        vc_toggle(&v, c, false);
        size_t z = vc_find(&v, false);
        vc_toggle(&v, z, true);
        if (z == c)
            break;
    }
    memcpy(on0, v.on, v.cells);
    memcpy(e0, v.e, v.cells * sizeof *e0);
    /* phase 1: ranks below `ones`, removing tightest clusters */
    for (size_t r = ones; r-- > 0;) {
        size_t c = vc_find(&v, true);
        vc_toggle(&v, c, false);
        rank[c] = (uint32_t)r;
    }
    /* phases 2 and 3: the rest, filling largest voids. (Ulichney's phase 3 takes the tightest
     * cluster of zeros instead; with exact sums that is the same cell: the zeros' energy at a
     * cell is the whole filter's sum minus the ones'.) */
    memcpy(v.on, on0, v.cells);
    memcpy(v.e, e0, v.cells * sizeof *e0);
    for (size_t r = ones; r < v.cells; r++) {
        size_t z = vc_find(&v, false);
        vc_toggle(&v, z, true);
        rank[z] = (uint32_t)r;
    }
    ok = true;
done:
    free(v.e);
    free(v.on);
    free(v.tdx);
    free(v.tdy);
    free(v.tw);
    free(on0);
    free(e0);
    free(perm);
    return ok;
}

/* One array per size, made once per process. */
static uint32_t *blue[BLUE_MAX_K + 1];
static pthread_once_t blue_once[BLUE_MAX_K + 1] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
                                                   PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
                                                   PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
                                                   PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

#define BLUE_ONCE(K)                                                                          \
    static void blue_init_##K(void)                                                           \
    {                                                                                         \
        uint32_t *r = malloc(((size_t)1 << (2 * K)) * sizeof *r);                                           \
        if (r && !blue_make(K, r)) {                                                          \
            free(r);                                                                          \
            r = NULL;                                                                         \
        }                                                                                     \
        blue[K] = r; /* NULL: out of memory, reported by every tsr_dither_new asking */       \
    }
BLUE_ONCE(4)
BLUE_ONCE(5)
BLUE_ONCE(6)
BLUE_ONCE(7)

static const uint32_t *
blue_ranks(int k)
{
    static void (*const init[BLUE_MAX_K + 1])(void) = {
        NULL, NULL, NULL, NULL, blue_init_4, blue_init_5, blue_init_6, blue_init_7};
    pthread_once(&blue_once[k], init[k]);
    return blue[k];
}

/* ---- arrays ------------------------------------------------------------------------------ */

static int
log2_exact(int size)
{
    if (size < 1 || (size & (size - 1)) != 0)
        return -1;
    int k = 0;
    while ((1 << k) < size)
        k++;
    return k;
}

tsr_dither *
tsr_dither_new(tsr_dither_kind kind, int size, tsr_error *err)
{
    int k = log2_exact(size);
    switch (kind) {
    case TSR_DITHER_THRESHOLD:
        if (size != 1) {
            tsr_fail(err, TSR_EINVAL, "dither: threshold size %d: must be 1", size);
            return NULL;
        }
        break;
    case TSR_DITHER_BAYER:
        if (k < 1 || k > 8) {
            tsr_fail(err, TSR_EINVAL, "dither: bayer size %d: must be a power of two in 2..256",
                     size);
            return NULL;
        }
        break;
    case TSR_DITHER_BLUE:
        if (k < BLUE_MIN_K || k > BLUE_MAX_K) {
            tsr_fail(err, TSR_EINVAL, "dither: blue size %d: must be 16, 32, 64 or 128", size);
            return NULL;
        }
        break;
    default:
        tsr_fail(err, TSR_EINVAL, "dither: unknown kind %d", (int)kind);
        return NULL;
    }
    tsr_dither *d = calloc(1, sizeof *d);
    if (!d)
        goto nomem;
    d->kind = kind;
    d->k = k;
    d->n = (uint32_t)size;
    d->period = d->n < 16 ? 16 : d->n;
    if (kind == TSR_DITHER_THRESHOLD)
        snprintf(d->name, sizeof d->name, "threshold");
    else /* size <= 256 here */
        snprintf(d->name, sizeof d->name, "%s%d", kind == TSR_DITHER_BAYER ? "bayer" : "blue",
                 size & 0x1ff);
    size_t cells = (size_t)size * (size_t)size;
    d->rank = calloc(cells, sizeof *d->rank); /* calloc: gcc -O2 cannot see the loops fill it */
    d->t8 = malloc(cells * sizeof *d->t8);
    d->t16 = malloc(cells * sizeof *d->t16);
    d->wide = malloc((size_t)d->n * (d->period + 16));
    d->wide16 = malloc((size_t)d->n * (d->period + 16) * sizeof *d->wide16);
    if (!d->rank || !d->t8 || !d->t16 || !d->wide || !d->wide16)
        goto nomem;
    if (kind == TSR_DITHER_BLUE) {
        const uint32_t *r = blue_ranks(k);
        if (!r)
            goto nomem;
        memcpy(d->rank, r, cells * sizeof *r);
    } else {
        for (uint32_t y = 0; y < d->n; y++)
            for (uint32_t x = 0; x < d->n; x++)
                d->rank[(size_t)y * d->n + x] = tsr_dm_bayer_rank(k, x, y);
    }
    for (size_t i = 0; i < cells; i++) {
        d->t8[i] = (uint16_t)tsr_dm_threshold(d->rank[i], k, 255);
        d->t16[i] = (uint16_t)tsr_dm_threshold(d->rank[i], k, 65535);
    }
    for (uint32_t y = 0; y < d->n; y++)
        for (uint32_t i = 0; i < d->period + 16; i++) /* t8 <= 254: t + 1 fits */
            d->wide[(size_t)y * (d->period + 16) + i] =
                (uint8_t)(d->t8[(size_t)y * d->n + (i & (d->n - 1))] + 1);
    for (uint32_t y = 0; y < d->n; y++)
        for (uint32_t i = 0; i < d->period + 16; i++) {
            uint16_t t1 = (uint16_t)(d->t16[(size_t)y * d->n + (i & (d->n - 1))] + 1);
            d->wide16[(size_t)y * (d->period + 16) + i] = (int16_t)(t1 ^ 0x8000u);
        }
    return d;
nomem:
    tsr_dither_free(d);
    tsr_fail(err, TSR_ENOMEM, "dither: out of memory (%s %d array)",
             kind == TSR_DITHER_BLUE ? "blue" : "bayer", size);
    return NULL;
}

tsr_status
tsr_dither_spec(const char *spec, tsr_dither_kind *kind, int *size, tsr_error *err)
{
    if (!spec)
        spec = "";
    if (strcmp(spec, "threshold") == 0) {
        *kind = TSR_DITHER_THRESHOLD;
        *size = 1;
        return TSR_OK;
    }
    const char *num;
    if (strncmp(spec, "bayer", 5) == 0) {
        *kind = TSR_DITHER_BAYER;
        num = spec + 5;
    } else if (strncmp(spec, "blue", 4) == 0) {
        *kind = TSR_DITHER_BLUE;
        num = spec + 4;
    } else {
        return tsr_fail(err, TSR_EINVAL,
                        "dither '%s': expected threshold, bayerN (N = 2..256) or blueN (N = "
                        "16..128)", spec);
    }
    char *end;
    long v = (num[0] >= '0' && num[0] <= '9') ? strtol(num, &end, 10) : -1;
    if (v < 0 || *end != '\0' || v > 4096)
        return tsr_fail(err, TSR_EINVAL, "dither '%s': expected a size after '%.*s'", spec,
                        (int)(num - spec), spec);
    int k = log2_exact((int)v);
    if (*kind == TSR_DITHER_BAYER && (k < 1 || k > 8))
        return tsr_fail(err, TSR_EINVAL, "dither: bayer size %ld: must be a power of two in "
                        "2..256", v);
    if (*kind == TSR_DITHER_BLUE && (k < BLUE_MIN_K || k > BLUE_MAX_K))
        return tsr_fail(err, TSR_EINVAL, "dither: blue size %ld: must be 16, 32, 64 or 128", v);
    *size = (int)v;
    return TSR_OK;
}

tsr_dither *
tsr_dither_parse(const char *spec, tsr_error *err)
{
    tsr_dither_kind kind = TSR_DITHER_THRESHOLD;
    int size = 1;
    if (tsr_dither_spec(spec, &kind, &size, err) != TSR_OK)
        return NULL;
    return tsr_dither_new(kind, size, err);
}

void
tsr_dither_free(tsr_dither *d)
{
    if (!d)
        return;
    free(d->rank);
    free(d->t8);
    free(d->t16);
    free(d->wide);
    free(d->wide16);
    free(d);
}

int
tsr_dither_size(const tsr_dither *d)
{
    return (int)d->n;
}

const char *
tsr_dither_name(const tsr_dither *d)
{
    return d->name;
}

const uint32_t *
tsr_dither_ranks(const tsr_dither *d)
{
    return d->rank;
}

const uint16_t *
tsr_dither_thresholds(const tsr_dither *d, int depth)
{
    return depth == 8 ? d->t8 : depth == 16 ? d->t16 : NULL;
}

size_t
tsr_dither_row_bytes(int64_t width, int bits)
{
    int64_t b;
    if (width < 0 || (bits != 1 && bits != 2 && bits != 4 && bits != 8 && bits != 16) ||
        !tsr_mul_checked(width, bits, &b) || !tsr_add_checked(b, 7, &b))
        return 0;
    return (size_t)(b / 8);
}

/* ---- dithering rows ----------------------------------------------------------------------- */

static inline uint32_t
sample_at(const uint8_t *p, int depth, size_t i)
{
    return depth == 8 ? p[i] : (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8;
}

/* Pixels one at a time, each into its bits of its byte (the edges of a piece, and the
 * general case). */
static void
row_slow(const tsr_dither *d, const uint8_t *s, int depth, int64_t x0, size_t n, int64_t y,
         int bits, uint8_t *row)
{
    const uint16_t *t = (depth == 8 ? d->t8 : d->t16) + (size_t)((uint64_t)y & (d->n - 1)) * d->n;
    uint32_t max = depth == 8 ? 255u : 65535u, levels = (1u << bits) - 1u;
    uint32_t m = d->n - 1;
    for (size_t i = 0; i < n; i++) {
        int64_t x = x0 + (int64_t)i;
        uint32_t v = tsr_dm_level(sample_at(s, depth, i), max, levels, t[(uint64_t)x & m]);
        int sh = tsr_dm_shift(x, bits);
        uint8_t *b = row + (size_t)((uint64_t)x * (uint64_t)bits / 8);
        *b = (uint8_t)((*b & ~(levels << sh)) | (v << sh));
    }
}

/* bit-reversed bytes: movemask puts pixel 0 in bit 0, the row wants it in bit 7 */
static uint8_t rev_table[256];
static pthread_once_t rev_once = PTHREAD_ONCE_INIT;

static void
rev_init(void)
{
    for (int i = 0; i < 256; i++) {
        uint8_t v = 0;
        for (int b = 0; b < 8; b++)
            if (i & (1 << b))
                v |= (uint8_t)(0x80 >> b);
        rev_table[i] = v;
    }
}

/* Whole bytes of a depth-1 row from 8-bit samples: x is a multiple of 8, n of 8. The
 * thresholds are read from the array's widened row at the phase x mod P. */
static void
row_bits8(const tsr_dither *d, const uint8_t *s, int64_t x, size_t n, int64_t y, uint8_t *out)
{
    const uint8_t *w = d->wide + (size_t)((uint64_t)y & (d->n - 1)) * (d->period + 16);
    uint32_t p = (uint32_t)((uint64_t)x & (d->period - 1));
    size_t i = 0;
#ifdef __SSE2__
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i t = _mm_loadu_si128((const __m128i *)(w + p));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, t), v));
        out[i / 8] = rev_table[m & 0xff];
        out[i / 8 + 1] = rev_table[m >> 8];
        p = (p + 16) & (d->period - 1);
    }
#endif
    for (; i < n; i += 8) {
        uint8_t b = 0;
        for (int j = 0; j < 8; j++)
            b |= (uint8_t)((s[i + j] >= w[p + j]) << (7 - j));
        out[i / 8] = b;
        p = (p + 8) & (d->period - 1);
    }
}

/* Whole bytes of a depth-1 row from 16-bit samples, as row_bits8: s > t is s >= t + 1,
 * compared signed with both top bits flipped. */
static void
row_bits16(const tsr_dither *d, const uint8_t *s, int64_t x, size_t n, int64_t y, uint8_t *out)
{
    const int16_t *w = d->wide16 + (size_t)((uint64_t)y & (d->n - 1)) * (d->period + 16);
    uint32_t p = (uint32_t)((uint64_t)x & (d->period - 1));
    size_t i = 0;
#ifdef __SSE2__
    const __m128i flip = _mm_set1_epi16((short)0x8000);
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + 2 * i)), flip);
        __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + 2 * i + 16)), flip);
        __m128i ta = _mm_loadu_si128((const __m128i *)(w + p));
        __m128i tb = _mm_loadu_si128((const __m128i *)(w + p + 8));
        /* s >= t + 1: not (t + 1 > s) */
        __m128i lt = _mm_packs_epi16(_mm_cmpgt_epi16(ta, a), _mm_cmpgt_epi16(tb, b));
        unsigned m = ~(unsigned)_mm_movemask_epi8(lt) & 0xffffu;
        out[i / 8] = rev_table[m & 0xff];
        out[i / 8 + 1] = rev_table[m >> 8];
        p = (p + 16) & (d->period - 1);
    }
#endif
    for (; i < n; i += 8) {
        uint8_t b = 0;
        for (int j = 0; j < 8; j++) {
            int16_t v = (int16_t)((uint16_t)(s[2 * (i + j)] | s[2 * (i + j) + 1] << 8) ^ 0x8000u);
            b |= (uint8_t)((v >= w[p + j]) << (7 - j));
        }
        out[i / 8] = b;
        p = (p + 8) & (d->period - 1);
    }
}

/* Whole bytes of any depth and bits (x at a byte's first pixel, n a multiple of its pixels):
 * no read-modify-write; inlined with constant max, levels and bits so the division by max is
 * a multiplication. */
static inline void
row_bytes_any(const tsr_dither *d, const uint8_t *s, int depth, int64_t x, size_t n, int64_t y,
              int bits, uint8_t *out, const uint32_t max, const uint32_t levels)
{
    const uint16_t *t = (depth == 8 ? d->t8 : d->t16) + (size_t)((uint64_t)y & (d->n - 1)) * d->n;
    uint32_t m = d->n - 1;
    int per = 8 / bits;
    for (size_t i = 0; i < n; i += (size_t)per) {
        uint32_t v = 0;
        for (int j = 0; j < per; j++) {
            uint32_t smp = sample_at(s, depth, i + (size_t)j);
            v |= tsr_dm_level(smp, max, levels, t[(uint64_t)(x + (int64_t)i + j) & m])
                 << (8 - bits * (j + 1));
        }
        out[(size_t)(i / (size_t)per)] = (uint8_t)v;
    }
}

static void
row_mid(const tsr_dither *d, const uint8_t *s, int depth, int64_t x, size_t n, int64_t y,
        int bits, uint8_t *out)
{
    if (bits == 1)
        (depth == 8 ? row_bits8 : row_bits16)(d, s, x, n, y, out);
    else if (depth == 8)
        bits == 2 ? row_bytes_any(d, s, 8, x, n, y, 2, out, 255, 3)
                  : row_bytes_any(d, s, 8, x, n, y, 4, out, 255, 15);
    else
        bits == 2 ? row_bytes_any(d, s, 16, x, n, y, 2, out, 65535, 3)
                  : row_bytes_any(d, s, 16, x, n, y, 4, out, 65535, 15);
}

tsr_status
tsr_dither_row(const tsr_dither *d, const void *samples, int depth, int64_t x0, size_t n,
               int64_t y, int bits, uint8_t *row, tsr_error *err)
{
    if (depth != 8 && depth != 16)
        return tsr_fail(err, TSR_EINVAL, "dither: sample depth %d: must be 8 or 16", depth);
    if (bits != 1 && bits != 2 && bits != 4)
        return tsr_fail(err, TSR_EINVAL, "dither: output depth %d: must be 1, 2 or 4", bits);
    int64_t end;
    if (x0 < 0 || y < 0 || n > (size_t)INT64_MAX ||
        !tsr_add_checked(x0, (int64_t)n, &end) || end > INT64_MAX / 4)
        return tsr_fail(err, TSR_EINVAL, "dither: pixels %lld + %zu of row %lld: out of range",
                        (long long)x0, n, (long long)y);
    const uint8_t *s = samples;
    size_t bps = (size_t)depth / 8, per = (size_t)(8 / bits);
    pthread_once(&rev_once, rev_init);
    /* the pixels before x0's next byte boundary and after the last one share bytes with
     * pixels outside the piece: those one by one; the whole bytes between at once */
    size_t head = (size_t)((per - ((uint64_t)x0 & (per - 1))) & (per - 1));
    if (head > n)
        head = n;
    row_slow(d, s, depth, x0, head, y, bits, row);
    int64_t x = x0 + (int64_t)head;
    size_t mid = (n - head) / per * per;
    row_mid(d, s + head * bps, depth, x, mid, y, bits, row + (size_t)((uint64_t)x / per));
    row_slow(d, s + (head + mid) * bps, depth, x + (int64_t)mid, n - head - mid, y, bits, row);
    return TSR_OK;
}

tsr_status
tsr_dither_piece(const tsr_dither *d, const void *samples, int depth, int64_t x, size_t n,
                 int64_t y, int bits, uint8_t *out, tsr_error *err)
{
    if (depth != 8 && depth != 16)
        return tsr_fail(err, TSR_EINVAL, "dither: sample depth %d: must be 8 or 16", depth);
    if (bits != 1 && bits != 2 && bits != 4)
        return tsr_fail(err, TSR_EINVAL, "dither: output depth %d: must be 1, 2 or 4", bits);
    int64_t end;
    if (x < 0 || y < 0 || n > (size_t)INT64_MAX ||
        !tsr_add_checked(x, (int64_t)n, &end) || end > INT64_MAX / 4)
        return tsr_fail(err, TSR_EINVAL, "dither: pixels %lld + %zu of row %lld: out of range",
                        (long long)x, n, (long long)y);
    const uint8_t *s = samples;
    size_t per = (size_t)(8 / bits), mid = n / per * per;
    pthread_once(&rev_once, rev_init);
    /* whole output bytes at any phase (the fast paths take x only for the thresholds) */
    row_mid(d, s, depth, x, mid, y, bits, out);
    if (mid < n) { /* the last, partial byte: its padding 0 */
        const uint16_t *t = (depth == 8 ? d->t8 : d->t16) +
                            (size_t)((uint64_t)y & (d->n - 1)) * d->n;
        uint32_t max = depth == 8 ? 255u : 65535u, levels = (1u << bits) - 1u, v = 0;
        for (size_t i = mid; i < n; i++)
            v |= tsr_dm_level(sample_at(s, depth, i), max, levels,
                              t[(uint64_t)(x + (int64_t)i) & (d->n - 1)])
                 << (8 - bits * (int)(i - mid + 1));
        out[mid / per] = (uint8_t)v;
    }
    return TSR_OK;
}

/* ---- bit planes ---------------------------------------------------------------------------- */

tsr_status
tsr_planes_row(const void *samples, int depth, size_t n, int plane, uint8_t *out,
               tsr_error *err)
{
    if (depth != 8 && depth != 16)
        return tsr_fail(err, TSR_EINVAL, "planes: sample depth %d: must be 8 or 16", depth);
    if (plane < 0 || plane >= depth)
        return tsr_fail(err, TSR_EINVAL, "planes: plane %d: must be in 0..%d", plane,
                        depth - 1);
    const uint8_t *s = samples;
    /* a 16-bit sample's bit b is bit b & 7 of its byte b / 8 (little-endian) */
    size_t step = depth == 8 ? 1 : 2;
    const uint8_t *p = s + (plane >= 8 ? 1 : 0);
    int sh = plane & 7;
    size_t i = 0;
    if (step == 1) {
        /* eight samples at once: their bit `sh` at bits 8j of a word, gathered into the top
         * byte by one multiplication (pixel j to bit 63 - j: each partial product has a place
         * of its own and the ones below the top byte sum to less than 2^56, so none carries
         * into it); sample j is byte j of the word on a little-endian host, swapped into
         * place on a big-endian one */
        for (; i + 8 <= n; i += 8) {
            uint64_t x;
            memcpy(&x, p + i, sizeof x);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            x = __builtin_bswap64(x);
#endif
            out[i / 8] = (uint8_t)((((x >> sh) & 0x0101010101010101ull) *
                                    0x8040201008040201ull) >> 56);
        }
    }
    for (; i + 8 <= n; i += 8) {
        uint8_t b = 0;
        for (int j = 0; j < 8; j++)
            b |= (uint8_t)(((p[(i + (size_t)j) * step] >> sh) & 1u) << (7 - j));
        out[i / 8] = b;
    }
    if (i < n) {
        uint8_t b = 0;
        for (int j = 0; i + (size_t)j < n; j++)
            b |= (uint8_t)(((p[(i + (size_t)j) * step] >> sh) & 1u) << (7 - j));
        out[i / 8] = b;
    }
    return TSR_OK;
}

/* Bytes of a packed 1-bit row of w >= 0 pixels, without the overflow of (w + 7) / 8. */
static int64_t
bytes_of(int64_t w)
{
    return w / 8 + (w % 8 != 0);
}

tsr_status
tsr_planes_total(const tsr_planes *p, uint64_t *total, tsr_error *err)
{
    if (p->depth != 8 && p->depth != 16)
        return tsr_fail(err, TSR_EINVAL, "planes: depth %d: must be 8 or 16", p->depth);
    if (p->width < 1 || p->height < 1)
        return tsr_fail(err, TSR_EINVAL, "planes: size %lld x %lld: must be at least 1 x 1",
                        (long long)p->width, (long long)p->height);
    if (p->order == TSR_PLANES_BAND && p->band_rows < 1)
        return tsr_fail(err, TSR_EINVAL, "planes: band_rows %lld: must be at least 1",
                        (long long)p->band_rows);
    if (p->order == TSR_PLANES_SWATH && p->swath_width < 1)
        return tsr_fail(err, TSR_EINVAL, "planes: swath_width %lld: must be at least 1",
                        (long long)p->swath_width);
    if (p->order != TSR_PLANES_BAND && p->order != TSR_PLANES_SWATH &&
        p->order != TSR_PLANES_WHOLE)
        return tsr_fail(err, TSR_EINVAL, "planes: unknown order %d", (int)p->order);
    /* every unit's rows are whole bytes: the total is planes x height x the units' widths
     * in bytes (swaths: full ones plus the last) */
    int64_t bytes_per_row, t;
    if (p->order == TSR_PLANES_SWATH) {
        int64_t sw = p->swath_width < p->width ? p->swath_width : p->width;
        int64_t full = p->width / sw, last = p->width % sw;
        if (!tsr_mul_checked(full, bytes_of(sw), &bytes_per_row) ||
            !tsr_add_checked(bytes_per_row, bytes_of(last), &bytes_per_row))
            goto overflow;
    } else {
        bytes_per_row = bytes_of(p->width);
    }
    if (!tsr_mul_checked(bytes_per_row, p->height, &t) || !tsr_mul_checked(t, p->depth, &t))
        goto overflow;
    *total = (uint64_t)t;
    return TSR_OK;
overflow:
    return tsr_fail(err, TSR_EINVAL, "planes: %lld x %lld: too large",
                    (long long)p->width, (long long)p->height);
}

uint64_t
tsr_planes_offset(const tsr_planes *p, int plane, int64_t y, int64_t x, size_t *row_bytes)
{
    /* the plane's position within its unit */
    int idx = p->lsb_first ? plane : p->depth - 1 - plane;
    uint64_t rb, unit_start, unit_rows, row_in_unit;
    if (p->order == TSR_PLANES_SWATH) {
        uint64_t sw = (uint64_t)(p->swath_width < p->width ? p->swath_width : p->width);
        uint64_t s = (uint64_t)x / sw;
        uint64_t w = (uint64_t)p->width - s * sw < sw ? (uint64_t)p->width - s * sw : sw;
        rb = (w + 7) / 8;
        unit_start = s * ((sw + 7) / 8) * (uint64_t)p->height * (uint64_t)p->depth;
        unit_rows = (uint64_t)p->height;
        row_in_unit = (uint64_t)y;
    } else {
        uint64_t band = p->order == TSR_PLANES_BAND ? (uint64_t)p->band_rows
                                                    : (uint64_t)p->height;
        uint64_t b = (uint64_t)y / band;
        rb = ((uint64_t)p->width + 7) / 8;
        unit_start = b * band * rb * (uint64_t)p->depth;
        unit_rows = (uint64_t)p->height - b * band < band ? (uint64_t)p->height - b * band
                                                          : band;
        row_in_unit = (uint64_t)y - b * band;
    }
    if (row_bytes)
        *row_bytes = (size_t)rb;
    return unit_start + ((uint64_t)idx * unit_rows + row_in_unit) * rb;
}
