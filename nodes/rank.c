/* rank: the minimum, maximum or median of the child over a square or disc of radius r around
 * each pixel (erosion, dilation, despeckling), docs/format.md §5.6.
 *
 * The layer is the child rectangle placed at the edge offset, like blur's: pixel (x, y) of the
 * child reads child pixels (x + dx, y + dy) for the footprint's (dx, dy), the child extended
 * past its edges by the edge mode (zero, clamp: the nearest pixel, default; wrap: periodic).
 * need() asks for the covered rect grown by r, so any tile computes alone with a halo of r,
 * and a value depends only on those pixels: results do not depend on the tile size.
 *
 * Values are compared as keys (nodes/rank_math.h), so each result is one unique child value.
 * The CPU keeps the 2r + 1 child rows of a window in a ring of keys; min and max run van
 * Herk / Gil-Werman passes along each row of the footprint (three comparisons per pixel and
 * footprint row, whatever r) and fold them down the column (a square's passes are all of one
 * width: each child row's is made once and kept in a second ring); the median selects the
 * middle key of each window by quickselect. */
#include "nodes/params.h"
#include "nodes/rank_math.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const tsr_rank_op_names[] = {"min", "max", "median", NULL};
const char *const tsr_rank_shape_names[] = {"square", "disc", NULL};

/* ---- parameters ------------------------------------------------------------------------ */

static const tsr_param rank_params[] = {
    {"op", TSR_P_ENUM, offsetof(tsr_rank_params, op), TSR_PF_REQUIRED, 0, 0, 0, tsr_rank_op_names,
     "min (erosion) | max (dilation) | median (despeckle)"},
    {"radius", TSR_P_INT, offsetof(tsr_rank_params, radius), TSR_PF_REQUIRED | TSR_PF_RANGE, 1,
     TSR_RANK_RADIUS_MAX, 0, NULL, "r, px, 1..64: the footprint's radius, also the tile halo"},
    {"footprint", TSR_P_ENUM, offsetof(tsr_rank_params, footprint), 0, 0, 0, 0,
     tsr_rank_shape_names, "square ((2r+1)^2 px, default) | disc (dx^2 + dy^2 <= r^2)"},
    {"edge", TSR_P_ENUM, offsetof(tsr_rank_params, edge), 0, 0, 0, 0, tsr_edge_mode_names,
     "child values outside the child: clamp (nearest pixel, default), zero or wrap"},
};

static void
rank_defaults(void *params)
{
    tsr_rank_params *p = params;
    memset(p, 0, sizeof *p);
    p->op = TSR_RANK_MIN;
    p->radius = 0; /* required */
    p->footprint = TSR_RANK_SQUARE;
    /* clamp: a minimum over zeros past the edge would erode every border of the child */
    p->edge = TSR_EDGE_CLAMP;
}

/* The loader checked the table; this catches a hand-made edge. */
static tsr_status
rank_check(const tsr_edge *e, tsr_check *c)
{
    const tsr_rank_params *p = e->params;
    if (p->radius < 1 || p->radius > TSR_RANK_RADIUS_MAX)
        return tsr_check_failf(c, "radius", "must be in 1..%d, got %lld", TSR_RANK_RADIUS_MAX,
                               (long long)p->radius);
    if (p->op < TSR_RANK_MIN || p->op > TSR_RANK_MEDIAN)
        return c->fail(c, "op", "must be min, max or median");
    if (p->footprint < TSR_RANK_SQUARE || p->footprint > TSR_RANK_DISC)
        return c->fail(c, "footprint", "must be square or disc");
    if (p->edge < TSR_EDGE_ZERO || p->edge > TSR_EDGE_WRAP)
        return c->fail(c, "edge", "must be zero, clamp or wrap");
    return TSR_OK;
}

/* ---- need ------------------------------------------------------------------------------ */

static size_t
rank_need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    const tsr_rank_params *p = e->params;
    tsr_rect cr = tsr_edge_covered(e, pr);
    if (tsr_rect_empty(cr))
        return 0;
    int64_t r = p->radius;
    tsr_rect g = tsr_rect_make(cr.x - r, cr.y - r, cr.w + 2 * r, cr.h + 2 * r);
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

/* Child pixel (x, y), inside the child, from whichever view holds it; false when none does
 * (the engine passed views need() did not ask for). */
static bool
pixel(const source *s, int64_t x, int64_t y, float *out)
{
    for (size_t i = 0; i < s->nv; i++) {
        tsr_rect r = s->v[i].r;
        if (y >= r.y && y < r.y + r.h && x >= r.x && x < r.x + r.w) {
            *out = *tsr_view_row(&s->v[i], x, y);
            return true;
        }
    }
    return false;
}

/* keys of C(x0 + i, y), i in [0, n): the child extended by the edge mode. Runs inside one
 * view are copied a row at a time; only the pixels past the child's edges are mapped. */
static bool
fetch_keys(const source *s, int64_t y, int64_t x0, int64_t n, uint32_t *dst)
{
    int64_t sy = y;
    if (s->edge == TSR_EDGE_ZERO && (y < 0 || y >= s->ch)) {
        uint32_t z = tsr_rank_key(0.0f);
        for (int64_t i = 0; i < n; i++)
            dst[i] = z;
        return true;
    }
    if (s->edge == TSR_EDGE_CLAMP)
        sy = y < 0 ? 0 : y >= s->ch ? s->ch - 1 : y;
    else if (s->edge == TSR_EDGE_WRAP)
        sy = tsr_floor_mod(y, s->ch);
    for (int64_t i = 0; i < n;) {
        int64_t x = x0 + i, sx = x;
        if (x < 0 || x >= s->cw) {
            float f = 0.0f;
            if (s->edge == TSR_EDGE_CLAMP)
                sx = x < 0 ? 0 : s->cw - 1;
            else if (s->edge == TSR_EDGE_WRAP)
                sx = tsr_floor_mod(x, s->cw);
            if (s->edge != TSR_EDGE_ZERO && !pixel(s, sx, sy, &f))
                return false;
            dst[i++] = tsr_rank_key(f);
            continue;
        }
        /* a run inside the child: as far as one view holds it */
        const tsr_view *v = NULL;
        for (size_t k = 0; k < s->nv && !v; k++) {
            tsr_rect r = s->v[k].r;
            if (sy >= r.y && sy < r.y + r.h && sx >= r.x && sx < r.x + r.w)
                v = &s->v[k];
        }
        if (!v)
            return false;
        int64_t end = v->r.x + v->r.w < s->cw ? v->r.x + v->r.w : s->cw;
        int64_t k = end - sx < n - i ? end - sx : n - i;
        const float *row = tsr_view_row(v, sx, sy);
        for (int64_t j = 0; j < k; j++)
            dst[i + j] = tsr_rank_key(row[j]);
        i += k;
    }
    return true;
}

/* ---- the passes ------------------------------------------------------------------------- */

static inline uint32_t
pick(int op, uint32_t a, uint32_t b)
{
    return op == TSR_RANK_MIN ? (a < b ? a : b) : (a > b ? a : b);
}

/* out[i] = op of a[i .. i + k - 1] for i in [0, n - k], van Herk / Gil-Werman: forward and
 * backward runs within blocks of k, then one comparison per output. g and h hold n keys. */
static void
run_extreme(int op, const uint32_t *a, int64_t n, int64_t k, uint32_t *g, uint32_t *h,
            uint32_t *out)
{
    if (k == 1) {
        memcpy(out, a, (size_t)n * sizeof *out);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        g[i] = i % k == 0 ? a[i] : pick(op, g[i - 1], a[i]);
    for (int64_t i = n - 1; i >= 0; i--)
        h[i] = (i % k == k - 1 || i == n - 1) ? a[i] : pick(op, h[i + 1], a[i]);
    for (int64_t i = 0; i + k <= n; i++)
        out[i] = pick(op, h[i], g[i + k - 1]);
}

/* The k-th smallest of a[0 .. n-1] (0-based), reordering a: Hoare's selection. */
static uint32_t
select_kth(uint32_t *a, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t pv = a[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pv)
                i++;
            while (a[j] > pv)
                j--;
            if (i <= j) {
                uint32_t t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return a[k];
    }
    return a[k];
}

/* Child row y into its ring slot, and with `sep` its pass along x (width 2r + 1) into hring's. */
static bool
load_row(const source *s, int64_t y, int64_t x0, int64_t W, int op, int64_t r, bool sep,
         uint32_t *ring, uint32_t *hring, uint32_t *g, uint32_t *h, int64_t cw)
{
    int64_t nrow = 2 * r + 1;
    uint32_t *row = ring + tsr_floor_mod(y, nrow) * W;
    if (!fetch_keys(s, y, x0, W, row))
        return false;
    if (sep)
        run_extreme(op, row, W, nrow, g, h, hring + tsr_floor_mod(y, nrow) * cw);
    return true;
}

static tsr_status
rank_layer(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews, float *L,
           uint8_t *cov, tsr_error *err)
{
    const tsr_rank_params *p = e->params;
    const char *where = e->where ? e->where : "rank";
    size_t npx = (size_t)(pr.w * pr.h);
    memset(L, 0, npx * sizeof *L);
    memset(cov, 0, npx);
    tsr_rect cr = tsr_edge_covered(e, pr);
    if (tsr_rect_empty(cr))
        return TSR_OK;
    const int64_t r = p->radius, nrow = 2 * r + 1, W = cr.w + 2 * r;
    const int disc = p->footprint == TSR_RANK_DISC;
    const int64_t n = tsr_rank_count(r, disc);
    int64_t half[2 * TSR_RANK_RADIUS_MAX + 1];
    for (int64_t dy = -r; dy <= r; dy++)
        half[dy + r] = tsr_rank_half(r, disc, dy);
    /* the ring of 2r + 1 key rows, then g, h, a pass's output and the accumulator (or the
     * median's window) */
    /* a square's min or max is separable: each child row's pass along x is made once, when
     * the row enters the ring, into a second ring, and only the fold down runs per output */
    const bool sep = !disc && p->op != TSR_RANK_MEDIAN;
    size_t ring = (size_t)(nrow * W), extra = p->op == TSR_RANK_MEDIAN ? (size_t)n : 0;
    if (sep)
        extra = (size_t)(nrow * cr.w);
    uint32_t *mem = malloc((ring + 4 * (size_t)W + extra) * sizeof *mem);
    if (!mem)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (rank scratch for %lld x %lld)", where,
                        (long long)cr.w, (long long)cr.h);
    uint32_t *g = mem + ring, *h = g + W, *pass = h + W, *acc = pass + W, *win = acc + W;
    uint32_t *hring = win; /* sep: row cy's pass along x at slot floor_mod(cy, nrow) */
    source s = {views, nviews, e->child->w, e->child->h, p->edge};
    tsr_status st = TSR_OK;
    int64_t ox = cr.x + e->offset[0] - pr.x, oy = cr.y + e->offset[1] - pr.y;
    /* row cy + dy of the child lives in ring slot floor_mod(cy + dy, nrow) */
    for (int64_t y = cr.y - r; y < cr.y + r && st == TSR_OK; y++)
        if (!load_row(&s, y, cr.x - r, W, p->op, r, sep, mem, hring, g, h, cr.w))
            st = TSR_EINTERNAL;
    for (int64_t y = cr.y; y < cr.y + cr.h && st == TSR_OK; y++) {
        if (!load_row(&s, y + r, cr.x - r, W, p->op, r, sep, mem, hring, g, h, cr.w)) {
            st = TSR_EINTERNAL;
            break;
        }
        if ((y & 63) == 0 && tsr_stop_requested()) {
            st = TSR_EINTR;
            break;
        }
        float *out = L + (oy + y - cr.y) * pr.w + ox;
        if (p->op == TSR_RANK_MEDIAN) {
            for (int64_t x = 0; x < cr.w; x++) {
                int64_t m = 0;
                for (int64_t dy = -r; dy <= r; dy++) {
                    const uint32_t *row = mem + tsr_floor_mod(y + dy, nrow) * W + x + r;
                    for (int64_t dx = -half[dy + r]; dx <= half[dy + r]; dx++)
                        win[m++] = row[dx];
                }
                out[x] = tsr_rank_unkey(select_kth(win, n, n / 2));
            }
            continue;
        }
        if (sep) {
            memcpy(acc, hring + tsr_floor_mod(y - r, nrow) * cr.w, (size_t)cr.w * sizeof *acc);
            for (int64_t dy = -r + 1; dy <= r; dy++) {
                const uint32_t *hr = hring + tsr_floor_mod(y + dy, nrow) * cr.w;
                for (int64_t x = 0; x < cr.w; x++)
                    acc[x] = pick(p->op, acc[x], hr[x]);
            }
            for (int64_t x = 0; x < cr.w; x++)
                out[x] = tsr_rank_unkey(acc[x]);
            continue;
        }
        for (int64_t dy = -r; dy <= r; dy++) {
            const uint32_t *row = mem + tsr_floor_mod(y + dy, nrow) * W;
            int64_t w = half[dy + r];
            /* pass[i] covers row[i .. i + 2w]: output x reads it at i = x + r - w */
            run_extreme(p->op, row + r - w, cr.w + 2 * w, 2 * w + 1, g, h, pass);
            if (dy == -r)
                memcpy(acc, pass, (size_t)cr.w * sizeof *acc);
            else
                for (int64_t x = 0; x < cr.w; x++)
                    acc[x] = pick(p->op, acc[x], pass[x]);
        }
        for (int64_t x = 0; x < cr.w; x++)
            out[x] = tsr_rank_unkey(acc[x]);
    }
    free(mem);
    if (st == TSR_EINTR)
        return tsr_fail(err, st, "interrupted");
    if (st != TSR_OK) {
        memset(L, 0, npx * sizeof *L);
        return tsr_fail(err, st, "%s: rank: child views do not cover what need() asked for",
                        where);
    }
    for (int64_t y = 0; y < cr.h; y++)
        memset(cov + (oy + y) * pr.w + ox, 1, (size_t)cr.w);
    return TSR_OK;
}

/* the ring, four rows and the median's window or the square's second ring, for a parent tile of
 * tw x th */
static size_t
rank_scratch(const tsr_edge *e, int64_t tw, int64_t th)
{
    (void)th;
    const tsr_rank_params *p = e->params;
    int64_t r = p->radius, W = tw + 2 * r;
    int64_t n = p->op == TSR_RANK_MEDIAN ? (2 * r + 1) * (2 * r + 1) : (2 * r + 1) * tw;
    return (size_t)((2 * r + 1) * W + 4 * W + n) * sizeof(uint32_t);
}

static void
rank_halo(const tsr_edge *e, int64_t h[2])
{
    const tsr_rank_params *p = e->params;
    h[0] = h[1] = p->radius;
}

const tsr_trait tsr_trait_rank = {
    .name = "rank",
    .params = rank_params,
    .nparams = sizeof rank_params / sizeof rank_params[0],
    .params_size = sizeof(tsr_rank_params),
    .defaults = rank_defaults,
    .check = rank_check,
    .need = rank_need,
    .layer = rank_layer,
    .scratch = rank_scratch,
    .halo = rank_halo,
};
