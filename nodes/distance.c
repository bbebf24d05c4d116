/* distance: a profile of the Euclidean distance to the nearest mask pixel (docs/format.md §5).
 *
 * The mask is child > threshold. For each child pixel the squared distance a to the nearest
 * mask pixel (clamped to dmax^2) indexes a float32 table built once per edge, so every
 * backend reads the same bits. Because of the clamp a mask pixel farther than dmax never
 * matters: a tile needs a halo of dmax and nothing else, and its result cannot depend on
 * where tiles start.
 *
 * The transform is exact and separable:
 *   pass 1: per column, the vertical distance g to the nearest mask pixel, saturated at dmax.
 *           It runs along rows (all columns at once), a forward and a backward scan, so the
 *           inner loops are contiguous and vectorise.
 *   pass 2: per row, a(x) = min over columns q of (x - q)^2 + g(q)^2. Two exact ways, chosen
 *           per run of RUN pixels: a windowed scan over offsets |x - q| < K, stopped as soon
 *           as K^2 reaches every a of the run (branch-free, 16-bit lanes; wins when mask
 *           pixels are near), else Felzenszwalb & Huttenlocher's lower envelope of parabolas
 *           (O(1) per pixel whatever the distances, but branchy).
 * Everything is integer: envelope breakpoints are rounded up to the first integer x where a
 * parabola wins, which is all an integer lattice needs, so no rounding enters the result and
 * both ways give the same a.
 *
 * Work is cut into column chunks and row bands so the temporaries stay small (cache-sized for
 * ordinary tiles) and every coordinate inside a chunk fits comfortably in int32. */
#include "nodes/nodes.h"
#include "nodes/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* g values of the dense path, <= dmax <= DENSE_DMAX: 16 bits halve the band's footprint, and
 * signed because a signed 16-bit min is baseline x86-64 (SSE2) while the unsigned one needs
 * SSE4.1. */
typedef int16_t gval;

/* dmax up to 2^22 px (4.2 m at 1 um: the diagonal of a 2 m plate twice over). Every square the
 * sparse path forms is then below 2^48 and exact in int64 and in double. */
#define DMAX_MAX ((int64_t)1 << 22)
/* Up to this dmax the dense path (int16 g, int32 sums) may run, and the table holds every a. */
#define DENSE_DMAX 4096
#define TABLE_A ((int64_t)DENSE_DMAX * DENSE_DMAX) /* the table holds a = 0..min(dmax^2, this) */

static const tsr_param params[] = {
    {.key = "threshold",
     .type = TSR_P_F32,
     .offset = offsetof(tsr_distance_params, threshold),
     .help = "mask = child > threshold (float32 compare), default 0.5"},
    {.key = "dmax",
     .type = TSR_P_INT,
     .offset = offsetof(tsr_distance_params, dmax),
     .flags = TSR_PF_REQUIRED | TSR_PF_RANGE,
     .min = 1,
     .max = (double)DMAX_MAX,
     .help = "largest distance in px that matters (1..4194304, required); also the tile halo"},
    {.key = "profile",
     .type = TSR_P_PROFILE,
     .offset = offsetof(tsr_distance_params, profile),
     .help = "f(d): linear | sphere | cosine | {gaussian: s} | {points: [[d, z], ...]}, "
             "default linear"},
    {.key = "scale",
     .type = TSR_P_F64,
     .flags = TSR_PF_UNITLESS,
     .offset = offsetof(tsr_distance_params, scale),
     .help = "k in bias + k * f(d), default 1"},
    {.key = "bias",
     .type = TSR_P_F64,
     .flags = TSR_PF_UNITLESS,
     .offset = offsetof(tsr_distance_params, bias),
     .help = "b in b + scale * f(d), default 0"},
};

static void
defaults(void *p)
{
    tsr_distance_params *d = p;
    memset(d, 0, sizeof *d);
    d->threshold = 0.5f;
    d->dmax = 0; /* required: the loader refuses a design without it */
    d->profile.kind = TSR_PROFILE_LINEAR;
    d->scale = 1.0;
    d->bias = 0.0;
}

static tsr_status
check(const tsr_edge *e, tsr_check *c)
{
    const tsr_distance_params *p = e->params;
    /* The loader enforces the range from the table; layer() relies on it for its int32
     * arithmetic, so a hand-built edge is held to it too. */
    if (p->dmax < 1 || p->dmax > DMAX_MAX)
        return tsr_check_failf(c, "dmax", "must be in 1..%lld", (long long)DMAX_MAX);
    const tsr_profile *f = &p->profile;
    switch (f->kind) {
    case TSR_PROFILE_LINEAR:
    case TSR_PROFILE_SPHERE:
    case TSR_PROFILE_COSINE:
        return TSR_OK;
    case TSR_PROFILE_GAUSSIAN:
        if (!(f->s > 0)) /* also refuses NaN */
            return tsr_check_failf(c, "profile", "gaussian: s must be > 0 (got %g)", f->s);
        return TSR_OK;
    case TSR_PROFILE_POINTS:
        if (f->pts.n < 1 || !f->pts.p)
            return tsr_check_failf(c, "profile", "points: needs at least one [d, z] point");
        if (!(f->pts.p[0][0] >= 0))
            return tsr_check_failf(c, "profile", "points: d0 must be >= 0 (got %g)",
                                   f->pts.p[0][0]);
        for (size_t i = 1; i < f->pts.n; i++)
            if (!(f->pts.p[i][0] > f->pts.p[i - 1][0]))
                return tsr_check_failf(c, "profile",
                                       "points: d must be strictly increasing (point %zu: d = %g "
                                       "after %g)",
                                       i, f->pts.p[i][0], f->pts.p[i - 1][0]);
        return TSR_OK;
    }
    return tsr_check_failf(c, "profile", "unknown profile kind %d", (int)f->kind);
}

/* f(d) of a points profile; `*seg` carries the segment between calls, since the table is
 * built with d increasing (the walk is then linear in the table size). */
static double
points_f(const tsr_points *pts, double d, size_t *seg)
{
    size_t n = pts->n;
    if (d < pts->p[0][0])
        return pts->p[0][1];
    if (d >= pts->p[n - 1][0])
        return pts->p[n - 1][1];
    size_t i = *seg;
    if (d < pts->p[i][0]) /* not increasing after all: start over */
        i = 0;
    while (d >= pts->p[i + 1][0])
        i++;
    *seg = i;
    double d0 = pts->p[i][0], z0 = pts->p[i][1];
    double d1 = pts->p[i + 1][0], z1 = pts->p[i + 1][1];
    return z0 + (z1 - z0) * ((d - d0) / (d1 - d0));
}

/* A table entry: (float)(bias + scale * f(d)), written exactly as docs/format.md states it, in
 * double, without fused multiply-add. */
static float
entry(const tsr_distance_params *p, const tsr_profile *f, double dmax, double d, size_t *seg)
{
    double v;
    switch (f->kind) {
    case TSR_PROFILE_SPHERE: v = sqrt(1 - (d / dmax) * (d / dmax)); break;
    case TSR_PROFILE_COSINE: v = 0.5 * (1 + cos(M_PI * d / dmax)); break;
    case TSR_PROFILE_GAUSSIAN: v = exp(-(d * d) / (2 * f->s * f->s)); break;
    case TSR_PROFILE_POINTS: v = points_f(&f->pts, d, seg); break;
    case TSR_PROFILE_LINEAR:
    default: v = 1 - d / dmax; break;
    }
    return (float)(p->bias + p->scale * v);
}

float
tsr_distance_value(const tsr_distance_params *p, double d)
{
    size_t seg = 0;
    return entry(p, &p->profile, (double)p->dmax, d, &seg);
}

static void
release(tsr_edge *e)
{
    tsr_distance_state *st = e->state;
    if (!st)
        return;
    free(st->table);
    free(st);
    e->state = NULL;
}

/* check() reporting into a tsr_error, for prepare(). */
typedef struct err_check {
    tsr_check c;
    tsr_error *err;
    const char *where;
} err_check;

static tsr_status
err_fail(tsr_check *c, const char *key, const char *msg)
{
    err_check *ec = (err_check *)c;
    return tsr_fail(ec->err, TSR_EINVAL, "%s: %s: %s", ec->where, key, msg);
}

/* The loader has checked already; an edge built by hand must not reach the table walk
 * (points_f indexes the points) with a profile that was never checked. */
static tsr_status
recheck(const tsr_edge *e, tsr_error *err)
{
    err_check ec = {{err_fail}, err, e->where ? e->where : "distance"};
    return check(e, &ec.c);
}

/* At load only the check: the table (up to 67 MB at dmax 4096) waits for build(), after the
 * memory plan has counted it. */
static tsr_status
prepare(tsr_edge *e, tsr_error *err)
{
    return recheck(e, err);
}

/* Table entries: every a up to dmax^2, or up to TABLE_A (67 MB) beyond DENSE_DMAX, where the
 * rest is computed per pixel by the same entry() (value_of): the same bits as a whole table. */
static int64_t
table_entries(int64_t dmax)
{
    return (dmax * dmax < TABLE_A ? dmax * dmax : TABLE_A) + 1;
}

static size_t
build_bytes(const tsr_edge *e)
{
    const tsr_distance_params *p = e->params;
    return sizeof(tsr_distance_state) + (size_t)table_entries(p->dmax) * sizeof(float);
}

static tsr_status
build(tsr_edge *e, tsr_error *err)
{
    const tsr_distance_params *p = e->params;
    const char *where = e->where ? e->where : "distance";
    tsr_status rc = recheck(e, err);
    if (rc != TSR_OK)
        return rc;
    int64_t n = table_entries(p->dmax);
    tsr_distance_state *st = malloc(sizeof *st);
    float *table = malloc((size_t)n * sizeof *table);
    if (!st || !table) {
        free(st);
        free(table);
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory for a distance table of %lld entries",
                        where, (long long)n);
    }
    const tsr_profile *f = &p->profile;
    double dmax = (double)p->dmax;
    size_t seg = 0;
    for (int64_t a = 0; a < n; a++) {
        if ((a & 0xffff) == 0xffff && tsr_stop_requested()) { /* 16.8 M entries at dmax 4096 */
            free(st);
            free(table);
            return tsr_fail(err, TSR_EINTR, "interrupted");
        }
        table[a] = entry(p, f, dmax, sqrt((double)a), &seg);
    }
    st->table = table;
    st->ntable = n;
    release(e); /* idempotent: a second build replaces the first table */
    e->state = st;
    return TSR_OK;
}

/* ---- where the mask can be ---------------------------------------------------------------
 *
 * A child is often mostly its fill: one seed in a plate, a few shapes. Reading its whole dmax
 * halo per tile then costs (T + 2 dmax)^2 pixels for T^2 of output (290x at dmax 4096 and 512
 * px tiles). The child's structure says where its value can differ from the fill: its
 * source's box (a shape), and each edge's covered rect (deeper, for a `pattern` whose child's
 * fill cannot make a mask through the blend). When the fill is no mask, every mask pixel lies
 * in the bounding box of those rects, and that box (clipped to the halo) is all a tile reads.
 * The result is exact whatever the box: a pixel outside it is the fill, not a mask pixel. */

#define SUPPORT_VISITS 16384 /* nodes an analysis visits before it gives up (says "anywhere") */

/* Whether blending the constant layer value f (blend b, mask) into a pixel that is not a mask
 * pixel (<= thr, or NaN) leaves it one that is not (float32 as docs/format.md §5.1 states it:
 * each result is the rounding of a value no larger than the largest operand allowed). */
static bool
keeps_unmasked(tsr_blend b, int mask, float f, float thr)
{
    if (mask && f == 0)
        return true; /* not covered: the pixel stays */
    switch (b) {
    case TSR_BLEND_OVER:
    case TSR_BLEND_MAX: return f <= thr;
    case TSR_BLEND_MIN: return true;
    case TSR_BLEND_ADD: return f <= 0;
    case TSR_BLEND_MULTIPLY: return f >= 0 && f <= 1 && thr >= 0;
    }
    return false;
}

/* Grows *bb (node n's coordinates) by every pixel of q where n may hold a value > thr; false
 * when that may be anywhere (a fill or a source that may be a mask, a visit budget spent). */
static bool
support(const tsr_node *n, tsr_rect q, float thr, tsr_rect *bb, int *visits)
{
    if (tsr_rect_empty(q))
        return true;
    if (--*visits < 0 || !(n->fill <= thr))
        return false;
    if (n->source) {
        if (!tsr_source_has(n->source, TSR_SRC_CAP_BOXED))
            return false;
        *bb = tsr_rect_union(*bb, tsr_source_box(n->source, q));
    }
    for (size_t k = 0; k < n->nedges; k++) {
        const tsr_edge *ed = &n->edges[k];
        if (tsr_trait_has(ed->trait, TSR_CAP_LATTICE)) { /* copies anywhere in its region */
            *bb = tsr_rect_union(*bb, q);
            continue;
        }
        tsr_rect c = tsr_edge_covered(ed, q); /* child coordinates */
        if (tsr_rect_empty(c))
            continue;
        if (tsr_trait_id_of(ed->trait) == TSR_TRAIT_pattern &&
            keeps_unmasked(ed->blend, ed->mask, ed->child->fill, thr)) {
            tsr_rect cb = {0, 0, 0, 0};
            if (support(ed->child, c, thr, &cb, visits)) {
                *bb = tsr_rect_union(*bb, tsr_rect_shift(cb, ed->offset[0], ed->offset[1]));
                continue;
            }
            if (*visits < 0)
                return false;
        }
        *bb = tsr_rect_union(*bb, tsr_rect_shift(c, ed->offset[0], ed->offset[1]));
    }
    return true;
}

/* The child rect a layer over covered child rect cr (non-empty) reads, and how: *dense when it
 * is the whole halo for the dense path (dmax <= DENSE_DMAX, the mask anywhere or spread over a
 * quarter of the halo or more); else the sparse path reads the box where the mask can be, or
 * the child's pixel (0, 0) when there is none (need() never returns an empty rect). */
static tsr_rect
read_rect(const tsr_edge *e, tsr_rect cr, bool *dense)
{
    const tsr_distance_params *p = e->params;
    tsr_rect hr = tsr_rect_intersect(tsr_rect_grow(cr, p->dmax),
                                     tsr_rect_make(0, 0, e->child->w, e->child->h));
    tsr_rect bb = {0, 0, 0, 0};
    int visits = SUPPORT_VISITS;
    bool sparse = support(e->child, hr, p->threshold, &bb, &visits);
    bb = sparse ? tsr_rect_intersect(bb, hr) : hr;
    *dense = p->dmax <= DENSE_DMAX && (!sparse || bb.w * bb.h > hr.w * hr.h / 4);
    if (*dense)
        return hr;
    /* no mask pixel within reach: the child's first pixel stands in (any pixel read gives
     * the exact result, a mask pixel beyond dmax only the clamp), the same one for every
     * tile so it is computed once */
    return tsr_rect_empty(bb) ? tsr_rect_make(0, 0, 1, 1) : bb;
}

static size_t
need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    tsr_rect cr = tsr_edge_covered(e, pr);
    if (tsr_rect_empty(cr))
        return 0;
    bool dense;
    out[0] = read_rect(e, cr, &dense);
    return 1;
}

/* Chunk geometry. A column chunk of cw output columns reads cw + 2*dmax halo columns; a wide
 * chunk keeps that overhead small, a bounded one keeps the band small and every coordinate
 * below 6*4096 (so squares and their sums fit in int32). A row band of bh rows re-reads dmax
 * rows below it for the backward scan; bh >= 2*dmax bounds that to half the band. */
static int64_t
chunk_cols(int64_t dmax)
{
    return dmax * 4 > 2048 ? dmax * 4 : 2048;
}

static int64_t
band_rows(int64_t dmax)
{
    return dmax * 2 > 64 ? dmax * 2 : 64;
}

/* Pass 2 works on runs of RUN output pixels. A run whose nearest mask pixels are all within
 * KLIM columns is done by the windowed scan (branch-free, vectorised), the others by the
 * lower envelope. */
#define RUN 128
#define KLIM 96
#define RUNS_MAX (16384 / RUN + 1) /* runs in the widest column chunk */
_Static_assert(4 * DENSE_DMAX <= 16384, "chunk_cols() must stay within RUNS_MAX runs");
_Static_assert(2 * KLIM * KLIM < 32767, "window sums must fit in int16 with CAP > KLIM^2");

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The scratch layout for halo width hw, band height bh and padding pad; the single
 * allocation holds, in order, the int32 envelope arrays, then the 16-bit rows. */
typedef struct scratch_plan {
    size_t bytes;
    size_t off_site, off_val, off_key, off_from, off_g2, off_up, off_dn, off_band;
} scratch_plan;

static scratch_plan
plan(int64_t hw, int64_t bh, int64_t pad)
{
    scratch_plan s;
    size_t w = (size_t)hw, o = 0;
    s.off_site = o, o += w * sizeof(int32_t);
    s.off_val = o, o += w * sizeof(int32_t);
    s.off_key = o, o += w * sizeof(int32_t);
    s.off_from = o, o += (w + 1) * sizeof(int32_t); /* + the sentinel */
    s.off_g2 = o, o += (w + 2 * (size_t)pad) * sizeof(int16_t);
    s.off_up = o, o += w * sizeof(gval);
    s.off_dn = o, o += w * sizeof(gval);
    s.off_band = o, o += w * (size_t)bh * sizeof(gval);
    s.bytes = o;
    return s;
}

/* The sparse path's scratch for a read rect bw columns wide and th output rows: g of every
 * output row (int32) and, per column, the scan state and the envelope (int64). */
static size_t
sparse_bytes(int64_t bw, int64_t tw, int64_t th)
{
    /* G (bw x th int32) rounded up to a whole int64, so the int64 arrays after it are aligned */
    return ((size_t)bw * (size_t)th + 1) / 2 * sizeof(int64_t) + (size_t)bw * 7 * sizeof(int64_t) +
           (size_t)(tw + 1) * sizeof(int64_t);
}

static size_t
scratch(const tsr_edge *e, int64_t tw, int64_t th)
{
    const tsr_distance_params *p = e->params;
    size_t dense = 0;
    if (p->dmax <= DENSE_DMAX) {
        int64_t cw = min64(min64(tw, e->child->w), chunk_cols(p->dmax));
        int64_t hw = min64(cw + 2 * p->dmax, e->child->w);
        int64_t bh = min64(min64(th, e->child->h), band_rows(p->dmax));
        if (cw > 0 && bh > 0)
            dense = plan(hw, bh, min64(KLIM, p->dmax)).bytes;
    }
    /* The sparse path reads at most the halo's width, and at most the width of where the mask
     * can be in the whole child (the analysis only shrinks with the rect it is asked about). */
    int64_t bw = min64(min64(tw, e->child->w) + 2 * p->dmax, e->child->w);
    tsr_rect all = tsr_rect_make(0, 0, e->child->w, e->child->h), bb = {0, 0, 0, 0};
    int visits = SUPPORT_VISITS;
    if (support(e->child, all, p->threshold, &bb, &visits))
        bw = min64(bw, bb.w > 0 ? bb.w : 1);
    size_t sparse = sparse_bytes(bw, min64(tw, e->child->w), min64(th, e->child->h));
    return dense > sparse ? dense : sparse;
}

/* One vertical step: the distance to the nearest mask pixel seen so far in each column,
 * saturating at dmax (farther is as good as none). dst may be prev (in-place scans). */
static void
vstep(gval *dst, const gval *prev, const float *restrict src, int64_t n, float thr, gval dmax)
{
    for (int64_t i = 0; i < n; i++) {
        gval g = prev[i] + 1;
        g = g < dmax ? g : dmax;
        dst[i] = src[i] > thr ? 0 : g;
    }
}

/* The backward step, merged into a band row: dn as in vstep, row = min(row, dn). */
static void
vstep_merge(gval *restrict dn, gval *restrict row, const float *restrict src, int64_t n,
            float thr, gval dmax)
{
    for (int64_t i = 0; i < n; i++) {
        gval g = dn[i] + 1;
        g = g < dmax ? g : dmax;
        g = src[i] > thr ? 0 : g;
        dn[i] = g;
        row[i] = row[i] < g ? row[i] : g;
    }
}

/* Scratch arrays of one layer() call. */
typedef struct work {
    int32_t *site; /* envelope columns, increasing */
    int32_t *val;  /* g^2 at those columns */
    int32_t *key;  /* g^2 + site^2: the parabola's constant, reused by every intersection */
    int32_t *from; /* the first integer x where the site is the lowest; from[0] unused */
    int16_t *g2;   /* min(g^2, CAP) of the row, `pad` far entries on either side */
    gval *up, *dn; /* forward and backward scan state */
    gval *band;    /* g of the band's rows, hw per row */
    int32_t pad;   /* min(KLIM, dmax) */
    uint8_t hard[RUNS_MAX]; /* run i needed the envelope in the previous row */
} work;

/* ceil(num / den) for den > 0; C division truncates, which is already the ceiling below 0. */
static inline int32_t
ceil_div(int32_t num, int32_t den)
{
    return num / den + (num % den > 0);
}

/* The lower envelope of the parabolas (x - q)^2 + g[q]^2 over the row's columns with
 * g < dmax (the others cannot beat the clamp); returns the number of sites.
 *
 * It is kept on integers only: site q is the lowest from the first integer
 * x >= (key[q] - key[v]) / (2 (q - v)) on, and a site whose integer interval is empty is
 * dropped. Halo width < 6*4096, so every key and numerator fits in int32 (< 2^31). */
static int32_t
envelope(const work *wk, const gval *g, int32_t hw, int32_t dmax)
{
    int32_t *site = wk->site, *val = wk->val, *key = wk->key, *from = wk->from;
    int32_t k = -1;
    for (int32_t q = 0; q < hw; q++) {
        int32_t gq = g[q];
        if (gq >= dmax)
            continue;
        int32_t fq = gq * gq, cq = fq + q * q, s = 0;
        /* Drop the top site while q overtakes it no later than it took over. */
        while (k >= 0) {
            int32_t num = cq - key[k], den = 2 * (q - site[k]);
            if (k > 0 && (int64_t)num <= (int64_t)from[k] * den) {
                k--;
                continue;
            }
            s = ceil_div(num, den);
            break;
        }
        k++;
        site[k] = q;
        val[k] = fq;
        key[k] = cq;
        from[k] = s;
    }
    from[k + 1] = INT32_MAX; /* sentinel for the walk */
    return k + 1;
}

/* Windowed scan over one run: acc[i] = min over |k| < K of k^2 + g2[i + k], stopping once
 * k^2 reaches the largest acc (no farther column can lower anything) or `kmax` (every acc
 * <= its own g^2 <= kmax^2). Returns false, with acc unusable, if that takes KLIM or more.
 *
 * Signed 16-bit lanes (8 per SSE2 op): g2 is capped at CAP, and k^2 < KLIM^2 keeps every sum
 * below 2^15. A capped term is >= CAP > KLIM^2 while each accepted acc is <= K^2 < KLIM^2, so
 * no capped term is ever the minimum of a run this returns. */
#define CAP (32767 - KLIM * KLIM)

static bool
window(int16_t *restrict acc, const int16_t *restrict g2, int32_t n, int32_t kmax)
{
    for (int32_t i = 0; i < n; i++)
        acc[i] = g2[i];
    for (int32_t k = 1; k < kmax; k++) {
        if ((k & 7) == 0) {
            int16_t m = 0;
            for (int32_t i = 0; i < n; i++)
                m = acc[i] > m ? acc[i] : m;
            if (k * k >= m)
                return true;
        }
        if (k >= KLIM)
            return false;
        const int16_t k2 = (int16_t)(k * k), *l = g2 - k, *r = g2 + k;
        for (int32_t i = 0; i < n; i++) {
            int16_t t = (int16_t)((l[i] < r[i] ? l[i] : r[i]) + k2);
            acc[i] = acc[i] < t ? acc[i] : t;
        }
    }
    return true;
}

/* Pass 2 for one row: out[x - xs] = table[min over q of (x - q)^2 + g[q]^2, clamped] for
 * halo-local columns x in [xs, xe). */
static void
row_pass(work *wk, const gval *g, int32_t hw, int32_t xs, int32_t xe, int32_t dmax,
         const float *restrict table, float *restrict out)
{
    const int32_t d2 = dmax * dmax, pad = wk->pad;
    const int16_t far2 = (int16_t)(d2 < CAP ? d2 : CAP);
    int16_t *g2 = wk->g2 + pad;
    for (int32_t i = -pad; i < 0; i++)
        g2[i] = far2; /* outside the child: no mask pixel, as good as g = dmax */
    for (int32_t i = 0; i < hw; i++) {
        int32_t sq = (int32_t)g[i] * g[i];
        g2[i] = (int16_t)(sq < CAP ? sq : CAP);
    }
    for (int32_t i = hw; i < hw + pad; i++)
        g2[i] = far2;

    int32_t nsites = -1, k = 0; /* the envelope, built on the first run that needs it */
    int16_t acc[RUN];
    out -= xs;
    for (int32_t x0 = xs, run = 0; x0 < xe; x0 += RUN, run++) {
        int32_t n = xe - x0 < RUN ? xe - x0 : RUN;
        gval gm = 0;
        for (int32_t i = 0; i < n; i++)
            gm = g[x0 + i] > gm ? g[x0 + i] : gm;
        if (gm == dmax && pad == dmax) {
            /* No column within dmax holds a mask pixel within dmax: all clamped. */
            int32_t lo = x0 - pad + 1 > 0 ? x0 - pad + 1 : 0;
            int32_t hi = x0 + n + pad - 1 < hw ? x0 + n + pad - 1 : hw;
            gval gl = gm;
            for (int32_t i = lo; i < hi; i++)
                gl = g[i] < gl ? g[i] : gl;
            if (gl == dmax) {
                float f = table[d2];
                for (int32_t i = 0; i < n; i++)
                    out[x0 + i] = f;
                continue;
            }
        }
        /* A run that needed the envelope one row up most likely needs it again. */
        if ((gm <= KLIM || !wk->hard[run]) && window(acc, g2 + x0, n, gm)) {
            wk->hard[run] = 0;
            for (int32_t i = 0; i < n; i++)
                out[x0 + i] = table[acc[i]];
            continue;
        }
        wk->hard[run] = 1;
        if (nsites < 0)
            nsites = envelope(wk, g, hw, dmax);
        if (nsites == 0) {
            for (int32_t i = 0; i < n; i++)
                out[x0 + i] = table[d2];
            continue;
        }
        /* from[] strictly increases, so from one x to the next the lowest site moves on by
         * at most one: a compare and an add, no unpredictable branch. */
        while (wk->from[k + 1] <= x0)
            k++;
        for (int32_t x = x0; x < x0 + n; x++) {
            k += wk->from[k + 1] <= x;
            int32_t dx = x - wk->site[k];
            int32_t a = dx * dx + wk->val[k];
            out[x] = table[a < d2 ? a : d2];
        }
    }
}

/* ---- the sparse path: any dmax, the mask inside a read rect b ---------------------------
 *
 * The same exact transform over b's columns only: per column, the row of the nearest mask pixel
 * above and below each output row (scans over b's rows; rows outside b hold none), then per
 * output row the lower envelope of the parabolas (x - q)^2 + g(q)^2 of b's columns, evaluated at
 * every output column whether inside b or not. All in int64 on integers: squares stay below
 * 2^48 (dmax <= 2^22), breakpoints are rounded up to integers as in envelope(). */

#define NO_ROW (INT64_MAX / 4) /* "no mask pixel" distance, far beyond any dmax */

/* ceil(num / den) for den > 0 (C division truncates toward 0: already the ceiling below 0). */
static inline int64_t
ceil_div64(int64_t num, int64_t den)
{
    return num / den + (num % den > 0);
}

/* L for squared distance a (clamped to dmax^2 already): the table, or past it the table's own
 * expression (entry(), the same bits). */
static inline float
value_of(const tsr_distance_params *p, const tsr_distance_state *st, int64_t a)
{
    if (a < st->ntable)
        return st->table[a];
    size_t seg = 0;
    return entry(p, &p->profile, (double)p->dmax, sqrt((double)a), &seg);
}

/* L for a row of n squared distances (each <= dmax^2). A lens far from its seed reads the
 * table at a new cache line every pixel (a grows by 2 dx + 1 a step): for the linear and
 * sphere profiles entry()'s own expression (double, as written: the same bits) costs less
 * than those misses; the others read the table as far as it goes. */
static void
values(const tsr_distance_params *p, const tsr_distance_state *st, const int64_t *restrict a,
       int64_t n, float *restrict out)
{
    const double dm = (double)p->dmax, b = p->bias, k = p->scale;
    switch (p->profile.kind) {
    case TSR_PROFILE_LINEAR:
        for (int64_t i = 0; i < n; i++) {
            double d = sqrt((double)a[i]);
            out[i] = (float)(b + k * (1 - d / dm));
        }
        return;
    case TSR_PROFILE_SPHERE:
        for (int64_t i = 0; i < n; i++) {
            double d = sqrt((double)a[i]);
            out[i] = (float)(b + k * sqrt(1 - (d / dm) * (d / dm)));
        }
        return;
    default:
        for (int64_t i = 0; i < n; i++)
            out[i] = value_of(p, st, a[i]);
        return;
    }
}

static tsr_status
layer_sparse(const tsr_edge *e, tsr_rect pr, tsr_rect cr, tsr_rect b, const tsr_view *v,
             float *L, uint8_t *cov, tsr_error *err)
{
    const tsr_distance_params *p = e->params;
    const tsr_distance_state *st = e->state;
    const char *where = e->where ? e->where : "distance";
    const int64_t dmax = p->dmax, d2 = dmax * dmax, bw = b.w, th = cr.h, tw = cr.w;
    const int64_t by0 = b.y, by1 = b.y + b.h, y0 = cr.y, y1 = cr.y + cr.h;
    const float thr = p->threshold;
    char *mem = malloc(sparse_bytes(bw, tw, th));
    if (!mem)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (%zu bytes of distance scratch)",
                        where, sparse_bytes(bw, tw, th));
    int32_t *G = (int32_t *)mem;                     /* th x bw: g, saturated at dmax */
    int64_t *near = (int64_t *)mem + ((size_t)bw * (size_t)th + 1) / 2; /* the scan's mask row,
                                                                           * aligned past G */
    int64_t *site = near + bw, *val = site + bw, *key = val + bw, *from = key + bw;
    int64_t *arow = from + bw + 1; /* a of an output row */
    tsr_status rc = TSR_OK;

    /* down the rows: the nearest mask row at or above each output row, from dmax rows above */
    for (int64_t q = 0; q < bw; q++)
        near[q] = -NO_ROW;
    for (int64_t y = (y0 - dmax > by0 ? y0 - dmax : by0); y < y0 && y < by1; y++) {
        const float *row = tsr_view_row(v, b.x, y);
        for (int64_t q = 0; q < bw; q++)
            near[q] = row[q] > thr ? y : near[q];
    }
    for (int64_t y = y0; y < y1; y++) {
        if (y >= by0 && y < by1) {
            const float *row = tsr_view_row(v, b.x, y);
            for (int64_t q = 0; q < bw; q++)
                near[q] = row[q] > thr ? y : near[q];
        }
        int32_t *g = G + (y - y0) * bw;
        for (int64_t q = 0; q < bw; q++) {
            int64_t d = y - near[q];
            g[q] = (int32_t)(d < dmax ? d : dmax);
        }
    }
    /* up the rows: at or below, from dmax rows below */
    for (int64_t q = 0; q < bw; q++)
        near[q] = NO_ROW;
    for (int64_t y = (y1 + dmax < by1 ? y1 + dmax : by1) - 1; y >= y1 && y >= by0; y--) {
        const float *row = tsr_view_row(v, b.x, y);
        for (int64_t q = 0; q < bw; q++)
            near[q] = row[q] > thr ? y : near[q];
    }
    for (int64_t y = y1 - 1; y >= y0; y--) {
        if (y >= by0 && y < by1) {
            const float *row = tsr_view_row(v, b.x, y);
            for (int64_t q = 0; q < bw; q++)
                near[q] = row[q] > thr ? y : near[q];
        }
        int32_t *g = G + (y - y0) * bw;
        for (int64_t q = 0; q < bw; q++) {
            int64_t d = near[q] - y;
            g[q] = d < g[q] ? (int32_t)d : g[q];
        }
    }

    const float far = value_of(p, st, d2);
    for (int64_t y = y0; y < y1; y++) {
        if (((y - y0) & 63) == 63 && tsr_stop_requested()) {
            rc = tsr_fail(err, TSR_EINTR, "interrupted");
            break;
        }
        const int32_t *g = G + (y - y0) * bw;
        float *out = L + (y + e->offset[1] - pr.y) * pr.w + (cr.x + e->offset[0] - pr.x);
        memset(cov + (out - L), 1, (size_t)tw);
        /* the lower envelope over b's columns, in output-local x (b.x + q - cr.x) */
        int64_t k = -1;
        for (int64_t q = 0; q < bw; q++) {
            int64_t gq = g[q];
            if (gq >= dmax)
                continue; /* cannot beat the clamp */
            int64_t sq = b.x + q - cr.x, fq = gq * gq, cq = fq + sq * sq, at = 0;
            while (k >= 0) {
                at = ceil_div64(cq - key[k], 2 * (sq - site[k]));
                if (k > 0 && at <= from[k]) { /* site k is never the lowest */
                    k--;
                    continue;
                }
                break;
            }
            k++;
            site[k] = sq;
            val[k] = fq;
            key[k] = cq;
            from[k] = k ? at : INT64_MIN;
        }
        if (k < 0) {
            for (int64_t x = 0; x < tw; x++)
                out[x] = far;
            continue;
        }
        from[k + 1] = INT64_MAX;
        int64_t j = 0;
        for (int64_t x = 0; x < tw; x++) {
            while (from[j + 1] <= x)
                j++;
            int64_t dx = x - site[j], a = dx * dx + val[j];
            arow[x] = a < d2 ? a : d2;
        }
        values(p, st, arow, tw, out);
    }
    free(mem);
    return rc;
}

static tsr_status
layer(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews, float *L,
      uint8_t *cov, tsr_error *err)
{
    const tsr_distance_params *p = e->params;
    const tsr_distance_state *st = e->state;
    const char *where = e->where ? e->where : "distance";
    tsr_rect cr = tsr_edge_covered(e, pr);
    if (tsr_rect_empty(cr))
        return TSR_OK;
    bool dense;
    tsr_rect hr = read_rect(e, cr, &dense);
    if (!st || nviews < 1 || !tsr_rect_contains(views[0].r, hr))
        return tsr_fail(err, TSR_EINTERNAL, "%s: layer called without its table or halo", where);
    if (!dense)
        return layer_sparse(e, pr, cr, hr, &views[0], L, cov, err);

    const int64_t dmax = p->dmax, cw_max = chunk_cols(dmax), bh_max = band_rows(dmax);
    const int64_t hw_max = min64(min64(cr.w, cw_max) + 2 * dmax, hr.w);
    work wk;
    wk.pad = (int32_t)min64(KLIM, dmax);
    scratch_plan sp = plan(hw_max, min64(cr.h, bh_max), wk.pad);
    char *mem = malloc(sp.bytes);
    if (!mem)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (%zu bytes of distance scratch)",
                        where, sp.bytes);
    wk.site = (int32_t *)(mem + sp.off_site);
    wk.val = (int32_t *)(mem + sp.off_val);
    wk.key = (int32_t *)(mem + sp.off_key);
    wk.from = (int32_t *)(mem + sp.off_from);
    wk.g2 = (int16_t *)(mem + sp.off_g2);
    wk.up = (gval *)(mem + sp.off_up);
    wk.dn = (gval *)(mem + sp.off_dn);
    wk.band = (gval *)(mem + sp.off_band);

    const tsr_view *v = &views[0];
    const float thr = p->threshold;
    const gval gmax = (gval)dmax;
    const int64_t r0 = hr.y, r1 = hr.y + hr.h; /* halo rows */
    const int64_t y0 = cr.y, y1 = cr.y + cr.h; /* output rows */
    const int64_t cend = cr.x + cr.w, hend = hr.x + hr.w;

    for (int64_t c0 = cr.x; c0 < cend; c0 += cw_max) {
        int64_t c1 = min64(c0 + cw_max, cend);
        int64_t h0 = c0 - dmax > hr.x ? c0 - dmax : hr.x;
        int64_t h1 = min64(c1 + dmax, hend);
        int64_t hw = h1 - h0;
        memset(wk.hard, 0, sizeof wk.hard);

        /* forward over the halo rows above the output */
        for (int64_t i = 0; i < hw; i++)
            wk.up[i] = gmax;
        for (int64_t y = r0; y < y0; y++)
            vstep(wk.up, wk.up, tsr_view_row(v, h0, y), hw, thr, gmax);

        for (int64_t b0 = y0; b0 < y1; b0 += bh_max) {
            int64_t b1 = min64(b0 + bh_max, y1);
            if (tsr_stop_requested()) { /* a band is ~2 dmax rows: milliseconds */
                free(mem);
                return tsr_fail(err, TSR_EINTR, "interrupted");
            }
            const gval *prev = wk.up;
            for (int64_t y = b0; y < b1; y++) {
                gval *row = wk.band + (y - b0) * hw;
                vstep(row, prev, tsr_view_row(v, h0, y), hw, thr, gmax);
                prev = row;
            }
            memcpy(wk.up, prev, (size_t)hw * sizeof(gval));

            /* backward from dmax rows below the band: a mask pixel farther down is clamped */
            for (int64_t i = 0; i < hw; i++)
                wk.dn[i] = gmax;
            for (int64_t y = min64(b1 + dmax, r1) - 1; y >= b1; y--)
                vstep(wk.dn, wk.dn, tsr_view_row(v, h0, y), hw, thr, gmax);
            for (int64_t y = b1 - 1; y >= b0; y--)
                vstep_merge(wk.dn, wk.band + (y - b0) * hw, tsr_view_row(v, h0, y), hw, thr,
                            gmax);

            for (int64_t y = b0; y < b1; y++) {
                int64_t ly = y + e->offset[1] - pr.y, lx = c0 + e->offset[0] - pr.x;
                row_pass(&wk, wk.band + (y - b0) * hw, (int32_t)hw, (int32_t)(c0 - h0),
                         (int32_t)(c1 - h0), (int32_t)dmax, st->table, L + ly * pr.w + lx);
                memset(cov + ly * pr.w + lx, 1, (size_t)(c1 - c0));
            }
        }
    }
    free(mem);
    return TSR_OK;
}

/* every mask pixel within dmax lies in the (2 dmax + 1)^2 window; those further only reach
 * the clamp, which no mask pixel at all gives too */
static void
halo(const tsr_edge *e, int64_t h[2])
{
    const tsr_distance_params *p = e->params;
    h[0] = h[1] = p->dmax;
}

const tsr_trait tsr_trait_distance = {
    .name = "distance",
    .params = params,
    .nparams = sizeof params / sizeof params[0],
    .params_size = sizeof(tsr_distance_params),
    .defaults = defaults,
    .check = check,
    .prepare = prepare,
    .build = build,
    .build_bytes = build_bytes,
    .release = release,
    .need = need,
    .layer = layer,
    .scratch = scratch,
    .halo = halo,
};
