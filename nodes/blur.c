/* blur: the child filtered by a Gaussian (sigma) or an explicit kernel, docs/format.md §5.
 *
 * The layer is the child rectangle placed at the edge offset. Every method computes each output
 * pixel from a window of child pixels at fixed offsets, with arithmetic that does not depend on
 * where the window sits in the tile, so results are identical at every tile size (§5). See
 * nodes/blur_int.h for the three methods. */
#include "nodes/blur_int.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const tsr_edge_mode_names[] = {"zero", "clamp", "wrap", NULL};

/* ---- parameters ------------------------------------------------------------------------ */

/* sigma has no TSR_PF_RANGE: its default 0 means "absent", which the range would reject;
 * check() tests the range of a given sigma instead. */
static const tsr_param blur_params[] = {
    {"sigma", TSR_P_F64, offsetof(tsr_blur_params, sigma), 0, 0, 0, 0, NULL,
     "Gaussian standard deviation in px, 0.3..256 (exclusive with kernel)"},
    {"kernel", TSR_P_KERNEL, offsetof(tsr_blur_params, kernel), 0, 0, 0, 0, NULL,
     "explicit kernel, rows are y, both sizes odd and <= 63 (exclusive with sigma)"},
    {"edge", TSR_P_ENUM, offsetof(tsr_blur_params, edge), 0, 0, 0, 0, tsr_edge_mode_names,
     "child values outside the child: zero, clamp (nearest pixel) or wrap (periodic)"},
};

static void
blur_defaults(void *params)
{
    tsr_blur_params *p = params;
    /* sigma 0 and a 0 x 0 kernel mean "not given" (check() wants exactly one); edge zero */
    memset(p, 0, sizeof *p);
    p->kernel.k = NULL;
    p->edge = TSR_EDGE_ZERO;
}

static tsr_status
blur_check(const tsr_edge *e, tsr_check *c)
{
    const tsr_blur_params *p = e->params;
    bool has_sigma = p->sigma != 0, has_kernel = p->kernel.w != 0 || p->kernel.h != 0;
    if (!has_sigma && !has_kernel)
        return c->fail(c, "sigma", "one of sigma or kernel is required");
    if (has_sigma && has_kernel)
        return c->fail(c, "sigma", "sigma and kernel are exclusive");
    /* written so that NaN fails too */
    if (has_sigma && !(p->sigma >= 0.3 && p->sigma <= 256)) {
        char msg[96];
        snprintf(msg, sizeof msg, "must be in 0.3..256, got %g", p->sigma);
        return c->fail(c, "sigma", msg);
    }
    if (has_kernel) {
        const tsr_kernel *k = &p->kernel;
        if (k->w < 1 || k->h < 1 || k->w % 2 == 0 || k->h % 2 == 0 ||
            k->w > TSR_BLUR_KERNEL_MAX || k->h > TSR_BLUR_KERNEL_MAX || !k->k) {
            char msg[160];
            snprintf(msg, sizeof msg, "both sizes must be odd and <= %d (got %lld x %lld)",
                     TSR_BLUR_KERNEL_MAX, (long long)k->w, (long long)k->h);
            return c->fail(c, "kernel", msg);
        }
    }
    if (p->edge < TSR_EDGE_ZERO || p->edge > TSR_EDGE_WRAP)
        return c->fail(c, "edge", "must be zero, clamp or wrap");
    return TSR_OK;
}

/* ---- the spline fit (prepare time, double) ------------------------------------------------ */

#define QSCALE 65536.0f /* 2^TSR_BLUR_QBITS */

/* The discrete cubic B-spline: four boxes of width h, each normalised; 4h - 3 values. */
static int64_t
bspline(int64_t h, double *B, double *tmp)
{
    int64_t n = 1;
    B[0] = 1;
    for (int s = 0; s < TSR_BLUR_STAGES; s++) {
        int64_t nn = n + h - 1;
        for (int64_t i = 0; i < nn; i++)
            tmp[i] = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < h; k++)
                tmp[i + k] += B[i] / (double)h;
        memcpy(B, tmp, (size_t)nn * sizeof *B);
        n = nn;
    }
    return n;
}

/* Solve the n x n system A x = b in place (b becomes x), partial pivoting. False if singular. */
static bool
solve(int n, double A[][TSR_BLUR_TAPS_MAX + 2], double *b)
{
    for (int i = 0; i < n; i++) {
        int p = i;
        for (int k = i + 1; k < n; k++)
            if (fabs(A[k][i]) > fabs(A[p][i]))
                p = k;
        if (!(fabs(A[p][i]) > 1e-300))
            return false;
        for (int k = 0; k < n; k++) {
            double t = A[i][k];
            A[i][k] = A[p][k];
            A[p][k] = t;
        }
        double t = b[i];
        b[i] = b[p];
        b[p] = t;
        for (int k = i + 1; k < n; k++) {
            double f = A[k][i] / A[i][i];
            for (int j = i; j < n; j++)
                A[k][j] -= f * A[i][j];
            b[k] -= f * b[i];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int j = i + 1; j < n; j++)
            s -= A[i][j] * b[j];
        b[i] = s / A[i][i];
    }
    return true;
}

/* The most taps (<= TSR_BLUR_TAPS_MAX) whose spline support R fits in r and is centred on an
 * integer ((m - 1) h even); 0 if none. */
static int64_t
spline_taps(int64_t h, int64_t r, int64_t *R)
{
    int64_t best = 0;
    for (int64_t m = 1; m <= TSR_BLUR_TAPS_MAX; m++) {
        int64_t tot = (m - 1) * h + TSR_BLUR_STAGES * (h - 1);
        if (tot % 2 == 0 && tot / 2 <= r) {
            best = m;
            *R = tot / 2;
        }
    }
    return best;
}

/* Least-squares fit of symmetric taps c (m of them, spacing h) to the reference g[-r..r] with
 * the kernel sum fixed to 1. Returns the L1 distance, or INFINITY if the system is singular.
 * `phi` holds ceil(m/2) * (2r + 1) doubles, `B` and `tmp` 4h doubles. */
static double
spline_fit(const double *g, int64_t r, int64_t h, int64_t m, int64_t R, double *c, double *phi,
           double *B, double *tmp)
{
    int64_t N = 2 * r + 1, P = (m + 1) / 2, L = bspline(h, B, tmp);
    memset(phi, 0, (size_t)(P * N) * sizeof *phi);
    /* basis p: the B-splines of taps p and m-1-p, as c is symmetric */
    for (int64_t j = 0; j < m; j++) {
        int64_t p = j < P ? j : m - 1 - j;
        for (int64_t i = 0; i < L; i++)
            phi[p * N + (-R + j * h + i) + r] += B[i];
    }
    double A[TSR_BLUR_TAPS_MAX + 2][TSR_BLUR_TAPS_MAX + 2], b[TSR_BLUR_TAPS_MAX + 2];
    for (int64_t p = 0; p < P; p++) {
        for (int64_t q = 0; q < P; q++) {
            double s = 0;
            for (int64_t n = 0; n < N; n++)
                s += phi[p * N + n] * phi[q * N + n];
            A[p][q] = s;
        }
        double s = 0, t = 0;
        for (int64_t n = 0; n < N; n++) {
            s += phi[p * N + n] * g[n];
            t += phi[p * N + n];
        }
        b[p] = s;
        /* Lagrange row: sum of the kernel = 1 */
        A[p][P] = A[P][p] = t;
    }
    A[P][P] = 0;
    b[P] = 1;
    if (!solve((int)P + 1, A, b))
        return INFINITY;
    double l1 = 0;
    for (int64_t n = 0; n < N; n++) {
        double a = 0;
        for (int64_t p = 0; p < P; p++)
            a += b[p] * phi[p * N + n];
        l1 += fabs(a - g[n]);
    }
    for (int64_t j = 0; j < m; j++)
        c[j] = b[j < P ? j : m - 1 - j];
    return isfinite(l1) ? l1 : INFINITY;
}

tsr_status
tsr_blur_state_init(tsr_blur_state *st, const tsr_blur_params *p, tsr_error *err)
{
    memset(st, 0, sizeof *st);
    if (p->kernel.w > 0) {
        st->method = TSR_BLUR_KERNEL;
        st->rx = (p->kernel.w - 1) / 2;
        st->ry = (p->kernel.h - 1) / 2;
        return TSR_OK;
    }
    double s = p->sigma;
    int64_t r = (int64_t)ceil(4.0 * s);
    st->r = r;
    if (s <= TSR_BLUR_FIR_SIGMA_MAX) {
        double sum = 0, g[TSR_BLUR_FIR_R_MAX + 1];
        for (int64_t k = 0; k <= r; k++)
            g[k] = exp(-(double)(k * k) / (2 * s * s));
        for (int64_t k = r; k >= 1; k--)
            sum += 2 * g[k];
        sum += g[0];
        for (int64_t k = 0; k <= r; k++)
            st->w[k] = (float)(g[k] / sum);
        st->method = TSR_BLUR_FIR;
        st->rx = st->ry = r;
        return TSR_OK;
    }

    /* spline: try box widths around sigma/2 and keep the most accurate fit */
    int64_t N = 2 * r + 1, hmin = (int64_t)floor(0.35 * s), hmax = (int64_t)ceil(0.65 * s);
    if (hmin < 2)
        hmin = 2;
    if (hmax < hmin)
        hmax = hmin;
    int64_t P = (TSR_BLUR_TAPS_MAX + 1) / 2;
    double *g = malloc((size_t)N * sizeof *g);
    double *phi = malloc((size_t)(P * N) * sizeof *phi);
    double *B = malloc((size_t)(8 * hmax + 8) * sizeof *B);
    tsr_status rc = TSR_OK;
    if (!g || !phi || !B) {
        rc = tsr_fail(err, TSR_ENOMEM, "blur: out of memory fitting sigma %g", s);
        goto done;
    }
    double gs = 0;
    for (int64_t k = -r; k <= r; k++)
        gs += g[k + r] = exp(-(double)(k * k) / (2 * s * s));
    for (int64_t n = 0; n < N; n++)
        g[n] /= gs;
    double best = INFINITY, c[TSR_BLUR_TAPS_MAX];
    for (int64_t h = hmin; h <= hmax; h++) {
        int64_t R = 0, m = spline_taps(h, r, &R);
        if (m < 3)
            continue;
        double l1 = spline_fit(g, r, h, m, R, c, phi, B, B + 4 * hmax + 4);
        if (l1 < best) {
            best = l1;
            st->h = h;
            st->m = m;
            st->rx = st->ry = R;
            for (int64_t j = 0; j < m; j++) {
                st->c[j] = (float)c[j];
                st->cq[j] = st->c[j] / QSCALE;
            }
        }
    }
    if (!(best < INFINITY)) {
        rc = tsr_fail(err, TSR_EINTERNAL, "blur: no spline fits sigma %g", s);
        goto done;
    }
    st->method = TSR_BLUR_SPLINE;
    st->inv_h = 1.0f / (float)st->h;
    /* a box sums h values: |value| <= 2^30 / h keeps every sum, every tap pair and every
     * float-to-int32 conversion inside int32 */
    st->lim = (float)floor(1073741824.0 / (double)st->h);
done:
    free(g);
    free(phi);
    free(B);
    return rc;
}

int64_t
tsr_blur_spline_kernel(const tsr_blur_state *st, double *a)
{
    if (st->method != TSR_BLUR_SPLINE)
        return -1;
    int64_t h = st->h, R = st->rx;
    double *B = malloc((size_t)(8 * h + 8) * sizeof *B);
    if (!B)
        return -1;
    int64_t L = bspline(h, B, B + 4 * h + 4);
    for (int64_t n = 0; n <= 2 * R; n++)
        a[n] = 0;
    for (int64_t j = 0; j < st->m; j++)
        for (int64_t i = 0; i < L; i++)
            a[j * h + i] += (double)st->c[j] * B[i];
    free(B);
    return R;
}

double
tsr_blur_spline_round_bound(const tsr_blur_state *st)
{
    /* In LSB = 2^-16, for values of magnitude <= amp (1 on the first axis, C = sum |c| on the
     * second): quantising costs 0.5; a box 1 (truncation) plus its float product, 3 roundings
     * of 2^-24 relative on a mean of <= amp * 2^16, so amp / 64 is generous; the taps add m
     * products in float: m * C * amp / 128. An error entering a box passes later boxes with
     * gain 1 and the taps with gain C; the first axis' error passes the second with gain C. */
    double C = 0;
    for (int64_t j = 0; j < st->m; j++)
        C += fabs((double)st->c[j]);
    double m = (double)st->m;
    double e1 = C * (0.5 + TSR_BLUR_STAGES * (1 + 1.0 / 64)) + m * C / 128 + 0.5;
    double e2 = C * e1 + C * TSR_BLUR_STAGES * (1 + C / 64) + m * C * C / 128;
    /* + 1 LSB for the final float conversion and its scaling, generously */
    return (e2 + 1) / QSCALE;
}

/* ---- prepare / release ------------------------------------------------------------------ */

static tsr_status
blur_prepare(tsr_edge *e, tsr_error *err)
{
    if (e->state)
        return TSR_OK;
    tsr_blur_state *st = malloc(sizeof *st);
    if (!st)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", e->where ? e->where : "blur");
    tsr_status s = tsr_blur_state_init(st, e->params, err);
    if (s != TSR_OK) {
        free(st);
        return s;
    }
    e->state = st;
    return TSR_OK;
}

static void
blur_release(tsr_edge *e)
{
    free(e->state);
    e->state = NULL;
}

/* ---- need ------------------------------------------------------------------------------ */

/* Halo per side; without a prepared state, the bound r >= R (a superset is always valid). */
static void
halo_of(const tsr_edge *e, int64_t *hx, int64_t *hy)
{
    const tsr_blur_state *st = e->state;
    const tsr_blur_params *p = e->params;
    if (st) {
        *hx = st->rx;
        *hy = st->ry;
    } else if (p->kernel.w > 0) {
        *hx = (p->kernel.w - 1) / 2;
        *hy = (p->kernel.h - 1) / 2;
    } else {
        *hx = *hy = (int64_t)ceil(4.0 * p->sigma);
    }
}

static size_t
blur_need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    const tsr_blur_params *p = e->params;
    tsr_rect cr = tsr_edge_covered(e, pr);
    if (tsr_rect_empty(cr))
        return 0;
    int64_t hx, hy;
    halo_of(e, &hx, &hy);
    tsr_rect g = tsr_rect_make(cr.x - hx, cr.y - hy, cr.w + 2 * hx, cr.h + 2 * hy);
    if (p->edge != TSR_EDGE_WRAP) {
        /* clamp reads the nearest child pixel, which lies in the clipped rect too */
        out[0] = tsr_rect_intersect(g, tsr_rect_make(0, 0, e->child->w, e->child->h));
        return 1;
    }
    int64_t x0[2], xl[2], y0[2], yl[2];
    int nx = tsr_wrap_spans(g.x, g.w, e->child->w, x0, xl);
    int ny = tsr_wrap_spans(g.y, g.h, e->child->h, y0, yl);
    size_t n = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++)
            out[n++] = tsr_rect_make(x0[i], y0[j], xl[i], yl[j]);
    return n;
}

/* ---- reading the child ------------------------------------------------------------------ */

typedef struct source {
    const tsr_view *v;
    size_t nv;
    int64_t cw, ch;
    int edge;
} source;

/* Copy child pixels [sx, sx + n) of row sy (all inside the child) from whichever views hold
 * them. Fails only when no view does: the engine passed views need() did not ask for. */
static tsr_status
copy_run(const source *s, int64_t sx, int64_t sy, int64_t n, float *dst)
{
    while (n > 0) {
        const tsr_view *v = NULL;
        for (size_t i = 0; i < s->nv; i++) {
            tsr_rect r = s->v[i].r;
            if (sy >= r.y && sy < r.y + r.h && sx >= r.x && sx < r.x + r.w) {
                v = &s->v[i];
                break;
            }
        }
        if (!v)
            return TSR_EINTERNAL;
        int64_t k = v->r.x + v->r.w - sx;
        if (k > n)
            k = n;
        memcpy(dst, tsr_view_row(v, sx, sy), (size_t)k * sizeof *dst);
        sx += k;
        dst += k;
        n -= k;
    }
    return TSR_OK;
}

static void
fill(float *d, int64_t n, float v)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = v;
}

/* dst[i] = C(x0 + i, y) for i in [0, n): the child extended by the edge mode. */
static tsr_status
fetch_row(const source *s, int64_t y, int64_t x0, int64_t n, float *dst)
{
    int64_t sy = y;
    if (s->edge == TSR_EDGE_ZERO) {
        if (y < 0 || y >= s->ch) {
            fill(dst, n, 0);
            return TSR_OK;
        }
    } else if (s->edge == TSR_EDGE_CLAMP) {
        sy = y < 0 ? 0 : y >= s->ch ? s->ch - 1 : y;
    } else {
        sy = tsr_floor_mod(y, s->ch);
    }
    int64_t x = x0, end = x0 + n;
    tsr_status st = TSR_OK;
    while (x < end && st == TSR_OK) {
        float *d = dst + (x - x0);
        int64_t k;
        if (s->edge == TSR_EDGE_WRAP) {
            int64_t sx = tsr_floor_mod(x, s->cw);
            k = s->cw - sx < end - x ? s->cw - sx : end - x;
            st = copy_run(s, sx, sy, k, d);
        } else if (x < 0 || x >= s->cw) {
            k = x < 0 ? (end < 0 ? end : 0) - x : end - x;
            float v = 0;
            if (s->edge == TSR_EDGE_CLAMP)
                st = copy_run(s, x < 0 ? 0 : s->cw - 1, sy, 1, &v);
            fill(d, k, v);
        } else {
            k = (end < s->cw ? end : s->cw) - x;
            st = copy_run(s, x, sy, k, d);
        }
        x += k;
    }
    return st;
}

/* Child pixels [x0, x0 + n) of row y straight from a view when one holds them all (the row
 * needs no edge handling), else NULL: most rows of a tile are read without a copy. */
static const float *
direct_row(const source *s, int64_t y, int64_t x0, int64_t n)
{
    if (y < 0 || y >= s->ch || x0 < 0 || x0 + n > s->cw)
        return NULL;
    for (size_t i = 0; i < s->nv; i++) {
        tsr_rect r = s->v[i].r;
        if (y >= r.y && y < r.y + r.h && x0 >= r.x && x0 + n <= r.x + r.w)
            return tsr_view_row(&s->v[i], x0, y);
    }
    return NULL;
}

/* direct_row(), or the row fetched into buf. */
static tsr_status
get_row(const source *s, int64_t y, int64_t x0, int64_t n, float *buf, const float **row)
{
    *row = direct_row(s, y, x0, n);
    if (*row)
        return TSR_OK;
    *row = buf;
    return fetch_row(s, y, x0, n, buf);
}

/* ---- arithmetic kernels ---------------------------------------------------------------------
 * Each works on many pixels at once but does, per pixel, the same operations in the same order
 * as its scalar definition: vector width never changes a bit of the result. */

/* Round to nearest (ties to even) for |f| < 2^22 and to an integral float beyond, by two float
 * adds: vectorises on plain SSE2, unlike lrintf. Callers keep |f| < 2^31. */
#define RND_MAGIC 12582912.0f /* 1.5 * 2^23 */

static inline int32_t
rnd(float f)
{
    return (int32_t)((f + RND_MAGIC) - RND_MAGIC);
}

/* Fixed point of a float, clamped (NaN goes to +lim) so that every later sum fits. */
static inline int32_t
quant(float f, float lim)
{
    f = f < lim ? f : lim;
    f = f > -lim ? f : -lim;
    return rnd(f);
}

/* The kernels below work on LANES adjacent values at a time, walking down rows `stride` apart
 * (or along taps), with their sums in registers for the whole walk. They use generic vectors
 * (GCC and clang): ymm in the AVX2 clone, pairs of xmm in the baseline. The reduced alignment
 * makes every access an unaligned load or store; may_alias lets them view int32/float arrays. */
#define LANES 32
typedef uint32_t vu8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t vi8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef float vf8 __attribute__((vector_size(32), aligned(4), may_alias));
#define VF8(f) ((vf8){(f), (f), (f), (f), (f), (f), (f), (f)})

/* out[x] = w0 c[x] + sum_{k=1..r} w_k (c[x - k step] + c[x + k step]) for x in [0, n), in
 * that order for every pixel: step 1 filters along a row, step = the row stride down columns.
 * LANES pixels at a time keep their sums in registers across all k. */
static void
fir(const float *c, int64_t step, float *restrict out, int64_t n, const float *w, int64_t r)
{
    int64_t x = 0;
    for (; x + LANES <= n; x += LANES) {
        const vf8 *v = (const vf8 *)(c + x);
        vf8 t[4], wk = VF8(w[0]);
        for (int q = 0; q < 4; q++)
            t[q] = wk * v[q];
        /* two taps per iteration: half the loop overhead, the same order of additions */
        int64_t k = 1;
        for (; k + 1 <= r; k += 2) {
            const vf8 *a = (const vf8 *)(c + x - k * step), *b = (const vf8 *)(c + x + k * step);
            const vf8 *a2 = (const vf8 *)(c + x - (k + 1) * step);
            const vf8 *b2 = (const vf8 *)(c + x + (k + 1) * step);
            vf8 w1 = VF8(w[k]), w2 = VF8(w[k + 1]);
            for (int q = 0; q < 4; q++) {
                t[q] += w1 * (a[q] + b[q]);
                t[q] += w2 * (a2[q] + b2[q]);
            }
        }
        if (k == r) {
            const vf8 *a = (const vf8 *)(c + x - k * step), *b = (const vf8 *)(c + x + k * step);
            wk = VF8(w[k]);
            for (int q = 0; q < 4; q++)
                t[q] += wk * (a[q] + b[q]);
        }
        for (int q = 0; q < 4; q++)
            ((vf8 *)(out + x))[q] = t[q];
    }
    for (; x < n; x++) {
        float t = w[0] * c[x];
        for (int64_t k = 1; k <= r; k++)
            t += w[k] * (c[x - k * step] + c[x + k * step]);
        out[x] = t;
    }
}

/* A running sum times 1/h, truncated to int32, 8 lanes. Truncation (one instruction) instead of
 * rounding (three) costs at most 1 LSB = 2^-16 per box, which tsr_blur_spline_round_bound()
 * counts; the sum is read as int32 (it is below 2^30). */
#define MEAN8(a, vinv) __builtin_convertvector(__builtin_convertvector((vi8)(a), vf8) * (vinv), vi8)

/* A box of width h down LANES columns, in place: row i becomes the truncated mean of rows
 * i .. i + h - 1, for i in [0, nout). The running sum is uint32 so that it wraps rather than
 * overflows; the true sum is below 2^30, so it is exact and the same whatever row the walk
 * started at: no tile position can show in the result. */
static inline void
box_lanes(int32_t *buf, int64_t stride, int64_t nout, int64_t h, float inv_h)
{
    vf8 vinv = VF8(inv_h);
    vu8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (int64_t k = 0; k < h; k++) {
        const vu8 *r = (const vu8 *)(buf + k * stride);
        a0 += r[0];
        a1 += r[1];
        a2 += r[2];
        a3 += r[3];
    }
    for (int64_t i = 0;; i++) {
        vu8 *o = (vu8 *)(buf + i * stride);
        vu8 o0 = o[0], o1 = o[1], o2 = o[2], o3 = o[3];
        o[0] = (vu8)MEAN8(a0, vinv);
        o[1] = (vu8)MEAN8(a1, vinv);
        o[2] = (vu8)MEAN8(a2, vinv);
        o[3] = (vu8)MEAN8(a3, vinv);
        if (i + 1 == nout)
            break;
        const vu8 *in = (const vu8 *)(buf + (i + h) * stride);
        a0 += in[0] - o0;
        a1 += in[1] - o1;
        a2 += in[2] - o2;
        a3 += in[3] - o3;
    }
}

/* LANES taps sums: s = sum over pairs c_p (v[p h] + v[(m-1-p) h]) (+ the middle tap), rows
 * `stride` apart, pairs first to last. A pair is added in int32 (exact: |v| < 2^29). */
static inline void
taps_lanes(const int32_t *v, int64_t stride, int64_t h, const float *c, int64_t m, vf8 *s)
{
    int64_t step = h * stride;
    const vi8 *lo = (const vi8 *)v, *hi = (const vi8 *)(v + (m - 1) * step);
    vf8 t[4], cp = VF8(c[0]);
    for (int k = 0; k < 4; k++)
        t[k] = cp * __builtin_convertvector(lo[k] + hi[k], vf8);
    for (int64_t p = 1; p < m / 2; p++) {
        lo = (const vi8 *)((const int32_t *)lo + step);
        hi = (const vi8 *)((const int32_t *)hi - step);
        cp = VF8(c[p]);
        for (int k = 0; k < 4; k++)
            t[k] += cp * __builtin_convertvector(lo[k] + hi[k], vf8);
    }
    if (m % 2) {
        const vi8 *a = (const vi8 *)(v + (m / 2) * step);
        cp = VF8(c[m / 2]);
        for (int k = 0; k < 4; k++)
            t[k] += cp * __builtin_convertvector(a[k], vf8);
    }
    for (int k = 0; k < 4; k++)
        s[k] = t[k];
}

/* dst[c][r] = src[r][c] for an 8 x 8 block of 32-bit values (rows ss and ds apart): unpacks
 * within 128-bit halves, then swaps of halves, as an AVX2 transpose is done by hand. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define HAVE_SHUFFLE 1
#endif
#endif

static inline void
transpose8(const int32_t *src, int64_t ss, int32_t *dst, int64_t ds)
{
#ifdef HAVE_SHUFFLE
    vi8 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = *(const vi8 *)(src + i * ss);
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4)
        for (int k = 0; k < 2; k++) {
            u[i + 2 * k] = __builtin_shufflevector(t[i + k], t[i + k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[i + 2 * k + 1] =
                __builtin_shufflevector(t[i + k], t[i + k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int k = 0; k < 4; k++) {
        *(vi8 *)(dst + k * ds) = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        *(vi8 *)(dst + (k + 4) * ds) =
            __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
#else
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 8; k++)
            dst[k * ds + i] = src[i * ss + k];
#endif
}

/* quant() of 8 lanes, in place (vectors go by pointer: by value they would change the ABI of
 * the baseline clone). C has no vector ?:, so the clamps select through compare masks. */
static inline void
quant8(vf8 *f, float lim, vi8 *out)
{
    vf8 hi = VF8(lim), lo = VF8(-lim), v = *f;
    vi8 k = v < hi; /* false for NaN: it goes to +lim like quant() */
    v = (vf8)(((vi8)v & k) | ((vi8)hi & ~k));
    k = v > lo;
    v = (vf8)(((vi8)v & k) | ((vi8)lo & ~k));
    *out = __builtin_convertvector((v + VF8(RND_MAGIC)) - VF8(RND_MAGIC), vi8);
}

/* ---- scratch layout ----------------------------------------------------------------------- */

#define GROUP 32  /* rows the spline's horizontal pass filters together, one per vector lane */
#define STRIP 256 /* columns the spline's vertical pass filters together */

static int64_t
round_lanes(int64_t n)
{
    return (n + LANES - 1) / LANES * LANES;
}

static size_t
align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* Byte sizes of layer()'s buffers for an output of tw x th, carved from one allocation. */
enum { B_ROW, B_PAD, B_V, B_M, B_T, B_Y, B_COUNT };

typedef struct layout {
    size_t sz[B_COUNT];
    size_t total;
} layout;

static bool
plan(const tsr_blur_state *st, int64_t tw, int64_t th, layout *l)
{
    memset(l, 0, sizeof *l);
    if (tw <= 0 || th <= 0)
        return true;
    int64_t px = tw + 2 * st->rx, py = th + 2 * st->ry;
    /* in floats; double so that absurd tiles are refused instead of overflowing */
    double n[B_COUNT] = {0};
    switch (st->method) {
    case TSR_BLUR_KERNEL:
        n[B_PAD] = (double)px * (double)py;
        break;
    case TSR_BLUR_FIR:
        n[B_ROW] = (double)px;
        n[B_PAD] = (double)tw * (double)py;
        break;
    case TSR_BLUR_SPLINE:
        n[B_ROW] = STRIP;
        n[B_V] = (double)STRIP * (double)py;
        n[B_M] = (double)round_lanes(px) * (double)th;
        n[B_T] = (double)GROUP * (double)round_lanes(px);
        n[B_Y] = (double)GROUP * (double)tw;
        break;
    }
    double sum = 0;
    for (int i = 0; i < B_COUNT; i++)
        sum += n[i];
    if (sum * 4 > 1e18)
        return false;
    for (int i = 0; i < B_COUNT; i++) {
        l->sz[i] = align64((size_t)n[i] * 4);
        l->total += l->sz[i];
    }
    return true;
}

/* Buffer i of the layout inside mem. */
static void *
buf(char *mem, const layout *l, int i)
{
    size_t off = 0;
    for (int k = 0; k < i; k++)
        off += l->sz[k];
    return mem + off;
}

/* ---- layer ----------------------------------------------------------------------------- */

/* The three drivers are compiled twice, for AVX2 and for the baseline, and picked at load time
 * (ifunc): the loops above then run 8 lanes wide where the CPU allows. Both clones do the same
 * IEEE operations per pixel in the same order (no FMA: -ffp-contract=off), so results are
 * bitwise identical on every x86-64. */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(TSR_BLUR_NO_CLONES)
#if __has_attribute(target_clones)
#define HOT __attribute__((target_clones("avx2", "default"), flatten))
#endif
#endif
#ifndef HOT
#define HOT __attribute__((flatten))
#endif

/* Output rows: out + y * ostride, tw floats each, child rect cr. */
typedef struct job {
    const tsr_blur_state *st;
    const tsr_blur_params *p;
    source src;
    tsr_rect cr;
    float *out;
    int64_t ostride;
} job;

HOT static tsr_status
run_kernel(const job *j, char *mem, const layout *l)
{
    const tsr_kernel *K = &j->p->kernel;
    int64_t rx = j->st->rx, ry = j->st->ry, tw = j->cr.w, th = j->cr.h;
    int64_t pw = tw + 2 * rx, ph = th + 2 * ry;
    float *pad = buf(mem, l, B_PAD);
    for (int64_t y = 0; y < ph; y++) {
        tsr_status s = fetch_row(&j->src, j->cr.y - ry + y, j->cr.x - rx, pw, pad + y * pw);
        if (s != TSR_OK)
            return s;
    }
    /* L(x, y) = sum_j sum_i K[j][i] C(x + i - rx, y + j - ry), from 0, j then i */
    for (int64_t y = 0; y < th; y++) {
        if (tsr_stop_requested()) /* a row of a 63 x 63 kernel: 4000 products a pixel */
            return TSR_EINTR;
        float *o = j->out + y * j->ostride;
        int64_t x = 0;
        for (; x + LANES <= tw; x += LANES) {
            vf8 t[4] = {{0}, {0}, {0}, {0}};
            for (int64_t jj = 0; jj < K->h; jj++) {
                const float *row = pad + (y + jj) * pw + x;
                for (int64_t i = 0; i < K->w; i++) {
                    vf8 kv = VF8(K->k[jj * K->w + i]);
                    const vf8 *in = (const vf8 *)(row + i);
                    for (int q = 0; q < 4; q++)
                        t[q] += kv * in[q];
                }
            }
            for (int q = 0; q < 4; q++)
                ((vf8 *)(o + x))[q] = t[q];
        }
        for (; x < tw; x++) {
            float t = 0.0f;
            for (int64_t jj = 0; jj < K->h; jj++)
                for (int64_t i = 0; i < K->w; i++)
                    t += K->k[jj * K->w + i] * pad[(y + jj) * pw + x + i];
            o[x] = t;
        }
    }
    return TSR_OK;
}

HOT static tsr_status
run_fir(const job *j, char *mem, const layout *l)
{
    const tsr_blur_state *st = j->st;
    int64_t r = st->r, tw = j->cr.w, th = j->cr.h, py = th + 2 * r;
    float *row = buf(mem, l, B_ROW), *H = buf(mem, l, B_PAD);
    /* along x, for every row the vertical pass reads */
    for (int64_t y = 0; y < py; y++) {
        const float *in;
        if (tsr_stop_requested())
            return TSR_EINTR;
        tsr_status s = get_row(&j->src, j->cr.y - r + y, j->cr.x - r, tw + 2 * r, row, &in);
        if (s != TSR_OK)
            return s;
        fir(in + r, 1, H + y * tw, tw, st->w, r);
    }
    /* along y, in strips of 128 columns: the 2r + 1 rows a strip reads stay in L1 */
    for (int64_t x0 = 0; x0 < tw; x0 += 128) {
        int64_t n = tw - x0 < 128 ? tw - x0 : 128;
        for (int64_t y = 0; y < th; y++)
            fir(H + (y + r) * tw + x0, tw, j->out + y * j->ostride + x0, n, st->w, r);
    }
    return TSR_OK;
}

/* The spline path goes along y first: the child's rows are quantised as they come (contiguous,
 * vectorised), and only the smaller, already quantised intermediate is transposed for x. */
HOT static tsr_status
run_spline(const job *j, char *mem, const layout *l)
{
    const tsr_blur_state *st = j->st;
    int64_t R = st->rx, h = st->h, m = st->m, tw = j->cr.w, th = j->cr.h;
    int64_t px = tw + 2 * R, py = th + 2 * R, ms = round_lanes(px);
    float *row = buf(mem, l, B_ROW), *Y = buf(mem, l, B_Y);
    int32_t *V = buf(mem, l, B_V), *M = buf(mem, l, B_M), *T = buf(mem, l, B_T);
    float lim = st->lim, inv_h = st->inv_h;

    /* along y, in strips of STRIP columns so that a strip stays in L2; M gets the result */
    for (int64_t sx = 0; sx < px; sx += STRIP) {
        int64_t sw = px - sx < STRIP ? px - sx : STRIP, swp = round_lanes(sw);
        if (tsr_stop_requested()) /* a strip is STRIP columns of the whole haloed height */
            return TSR_EINTR;
        for (int64_t y = 0; y < py; y++) {
            const float *in;
            tsr_status s = get_row(&j->src, j->cr.y - R + y, j->cr.x - R + sx, sw, row, &in);
            if (s != TSR_OK)
                return s;
            int32_t *d = V + y * swp;
            for (int64_t x = 0; x < sw; x++)
                d[x] = quant(in[x] * QSCALE, lim);
            for (int64_t x = sw; x < swp; x++)
                d[x] = 0;
        }
        for (int64_t x0 = 0; x0 < swp; x0 += LANES) {
            int64_t n = py;
            for (int s = 0; s < TSR_BLUR_STAGES; s++) {
                box_lanes(V + x0, swp, n - (h - 1), h, inv_h);
                n -= h - 1;
            }
        }
        for (int64_t y = 0; y < th; y++)
            for (int64_t x0 = 0; x0 < swp; x0 += LANES) {
                vf8 t[4];
                taps_lanes(V + y * swp + x0, swp, h, st->c, m, t);
                vi8 *d = (vi8 *)(M + y * ms + sx + x0);
                for (int k = 0; k < 4; k++)
                    quant8(&t[k], lim, &d[k]);
            }
    }

    /* Along x: GROUP rows at a time, transposed so that the running sums go down columns of
     * GROUP lanes (vectorised across rows) instead of along a row (a serial chain). */
    for (int64_t y0 = 0; y0 < th; y0 += GROUP) {
        int64_t gn = th - y0 < GROUP ? th - y0 : GROUP;
        if (tsr_stop_requested())
            return TSR_EINTR;
        for (int64_t i0 = 0; i0 < px; i0 += 8)
            for (int64_t g0 = 0; g0 < GROUP; g0 += 8) {
                int32_t *d = T + i0 * GROUP + g0;
                if (g0 + 8 <= gn) {
                    /* M rows are padded to a multiple of LANES, T to as many rows */
                    transpose8(M + (y0 + g0) * ms + i0, ms, d, GROUP);
                    continue;
                }
                for (int64_t i = 0; i < 8; i++)
                    for (int64_t g = 0; g < 8; g++)
                        d[i * GROUP + g] = g0 + g < gn ? M[(y0 + g0 + g) * ms + i0 + i] : 0;
            }
        for (int64_t b = 0; b < GROUP; b += LANES) {
            int64_t n = px;
            for (int s = 0; s < TSR_BLUR_STAGES; s++) {
                box_lanes(T + b, GROUP, n - (h - 1), h, inv_h);
                n -= h - 1;
            }
        }
        for (int64_t x = 0; x < tw; x++)
            for (int64_t b = 0; b < GROUP; b += LANES) {
                taps_lanes(T + x * GROUP + b, GROUP, h, st->cq, m, (vf8 *)(Y + x * GROUP + b));
            }
        for (int64_t x0 = 0; x0 < tw; x0 += 8)
            for (int64_t g0 = 0; g0 < gn; g0 += 8) {
                float *o = j->out + (y0 + g0) * j->ostride + x0;
                const float *sy = Y + x0 * GROUP + g0;
                if (x0 + 8 <= tw && g0 + 8 <= gn) {
                    transpose8((const int32_t *)sy, GROUP, (int32_t *)o, j->ostride);
                    continue;
                }
                for (int64_t g = 0; g < 8 && g0 + g < gn; g++)
                    for (int64_t x = 0; x < 8 && x0 + x < tw; x++)
                        o[g * j->ostride + x] = sy[x * GROUP + g];
            }
    }
    return TSR_OK;
}

static tsr_status
blur_layer(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews, float *L,
           uint8_t *cov, tsr_error *err)
{
    const char *where = e->where ? e->where : "blur";
    size_t npx = (size_t)(pr.w * pr.h);
    tsr_rect cr = tsr_edge_covered(e, pr);
    if (tsr_rect_empty(cr)) {
        memset(L, 0, npx * sizeof *L);
        memset(cov, 0, npx);
        return TSR_OK;
    }

    tsr_blur_state tmp;
    const tsr_blur_state *st = e->state;
    if (!st) {
        tsr_status s = tsr_blur_state_init(&tmp, e->params, err);
        if (s != TSR_OK)
            return s;
        st = &tmp;
    }
    layout l;
    if (!plan(st, cr.w, cr.h, &l))
        return tsr_fail(err, TSR_ENOMEM, "%s: blur scratch for %lld x %lld overflows", where,
                        (long long)cr.w, (long long)cr.h);
    char *mem = aligned_alloc(64, l.total ? l.total : 64);
    if (!mem)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (%zu bytes of blur scratch)", where,
                        l.total);
    int64_t ox = cr.x + e->offset[0] - pr.x, oy = cr.y + e->offset[1] - pr.y;
    job j = {st, e->params, {views, nviews, e->child->w, e->child->h, 0}, cr,
             L + oy * pr.w + ox, pr.w};
    j.src.edge = j.p->edge;
    tsr_status s;
    switch (st->method) {
    case TSR_BLUR_KERNEL: s = run_kernel(&j, mem, &l); break;
    case TSR_BLUR_FIR: s = run_fir(&j, mem, &l); break;
    default: s = run_spline(&j, mem, &l); break;
    }
    free(mem);
    if (s == TSR_EINTR)
        return tsr_fail(err, s, "interrupted");
    if (s != TSR_OK) {
        memset(L, 0, npx * sizeof *L);
        memset(cov, 0, npx);
        return tsr_fail(err, s, "%s: blur: child views do not cover what need() asked for",
                        where);
    }
    /* only what the layer does not cover is cleared: a full tile writes each byte once */
    for (int64_t y = 0; y < pr.h; y++) {
        float *lr = L + y * pr.w;
        uint8_t *cv = cov + y * pr.w;
        if (y < oy || y >= oy + cr.h) {
            memset(lr, 0, (size_t)pr.w * sizeof *L);
            memset(cv, 0, (size_t)pr.w);
            continue;
        }
        memset(lr, 0, (size_t)ox * sizeof *L);
        memset(lr + ox + cr.w, 0, (size_t)(pr.w - ox - cr.w) * sizeof *L);
        memset(cv, 0, (size_t)ox);
        memset(cv + ox, 1, (size_t)cr.w);
        memset(cv + ox + cr.w, 0, (size_t)(pr.w - ox - cr.w));
    }
    return TSR_OK;
}

static size_t
blur_scratch(const tsr_edge *e, int64_t tw, int64_t th)
{
    tsr_blur_state tmp;
    const tsr_blur_state *st = e->state;
    if (!st) {
        if (tsr_blur_state_init(&tmp, e->params, NULL) != TSR_OK)
            return 0;
        st = &tmp;
    }
    layout l;
    if (!plan(st, tw, th, &l))
        return SIZE_MAX;
    return l.total;
}

/* the filter's support; the edge mode only matters for windows that leave the child */
static void
blur_halo(const tsr_edge *e, int64_t h[2])
{
    halo_of(e, &h[0], &h[1]);
}

const tsr_trait tsr_trait_blur = {
    .name = "blur",
    .params = blur_params,
    .nparams = sizeof blur_params / sizeof blur_params[0],
    .params_size = sizeof(tsr_blur_params),
    .defaults = blur_defaults,
    .check = blur_check,
    .prepare = blur_prepare,
    .release = blur_release,
    .need = blur_need,
    .layer = blur_layer,
    .scratch = blur_scratch,
    .halo = blur_halo,
};
