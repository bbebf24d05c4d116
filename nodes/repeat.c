/* repeat and repeat-vector: copies of the child at offset + i*u + j*v for all integers i, j
 * (docs/format.md §5). `repeat` is the same trait with u = [px, 0], v = [0, py].
 *
 * Work is per parent rect: only the copies that touch it are enumerated (a 2e6 px root with a
 * 50 px period has 1.6e9 copies; a 512 px tile meets a few dozen). Lattice coordinates are
 * found with exact 128-bit integer arithmetic, never floats.
 *
 * A lattice given by long, nearly parallel vectors (u = [2^40, 1], v = [2^40 - 1, 1] is the
 * whole integer grid) cannot be walked in its own coordinates: a tile's copies are spread over
 * ~2^49 values of i and j. Such a lattice is walked in its Lagrange-reduced basis (the same
 * points, short vectors) and, where the overlap mode depends on copy order, the copies found
 * are sorted back into copy order (ascending j, then i, of the u, v given): same bits. */
#include "nodes/expr_eval.h"
#include "nodes/nodes.h"
#include "nodes/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const tsr_overlap_names[] = {"average", "max", "add", "first", NULL};

#define OFF(f) offsetof(tsr_repeat_params, f)
#define COORD_RANGE TSR_PF_RANGE, -(double)TSR_COORD_MAX, (double)TSR_COORD_MAX
#define OVERLAP {"overlap", TSR_P_ENUM, OFF(overlap), 0, 0, 0, 0, tsr_overlap_names, \
                 "how overlapping copies combine: average | max | add | first"}
#define REGION {"region", TSR_P_INT4, OFF(region), TSR_PF_RECT | COORD_RANGE, 0, NULL, \
                "[x, y, w, h] in parent px the layer is clipped to, default the whole parent"}
/* per-copy variation, docs/variation.md */
#define VARY(k, f, what) {k, TSR_P_EXPR, OFF(f), 0, 0, 0, 0, NULL, what " per copy (i, j): a number, " \
                          "an expression, {table: ...} or {ramp: [a, di, dj]}"}
#define VARIATION \
    VARY("scale", scale, "value scale"), VARY("bias", bias, "value bias"), \
    VARY("source-radius", src_radius, "the child source's radius"), \
    VARY("source-value", src_value, "the child source's value"), \
    {"jitter", TSR_P_INT2, OFF(jitter), TSR_PF_RANGE, 0, TSR_JITTER_MAX, 0, NULL, \
     "[bx, by]: each copy moves by a seeded integer vector within +-b, px"}, \
    {"seed", TSR_P_INT, OFF(seed), TSR_PF_UNITLESS, 0, 0, 0, NULL, "the jitter's seed"}

#define TSR_JITTER_MAX ((double)(1 << 20))
#define JITTER_CANDIDATES 4096

static const tsr_param repeat_params[] = {
    {"period", TSR_P_INT2, OFF(period), TSR_PF_RANGE, 1, (double)TSR_COORD_MAX, 0, NULL,
     "[px, py], default the child size"},
    OVERLAP,
    REGION,
    VARIATION,
};

static const tsr_param vector_params[] = {
    {"u", TSR_P_INT2, OFF(u), TSR_PF_REQUIRED | COORD_RANGE, 0, NULL, "lattice vector [ux, uy], px"},
    {"v", TSR_P_INT2, OFF(v), TSR_PF_REQUIRED | COORD_RANGE, 0, NULL, "lattice vector [vx, vy], px"},
    OVERLAP,
    REGION,
    VARIATION,
};

static void
repeat_defaults(void *p)
{
    tsr_repeat_params *r = p;
    memset(r, 0, sizeof *r);
    r->overlap = TSR_OVERLAP_FIRST;
}

static void
vector_defaults(void *p)
{
    tsr_repeat_params *r = p;
    memset(r, 0, sizeof *r);
    r->overlap = TSR_OVERLAP_AVERAGE;
}

/* The loader refuses a given region with w or h <= 0 (TSR_PF_RECT), [0, 0, 0, 0] included;
 * this holds parameters made in code to the same rule (all zero: no region). */
static tsr_status
check_region(const tsr_repeat_params *r, tsr_check *c)
{
    bool given = r->region[0] || r->region[1] || r->region[2] || r->region[3];
    if (given && (r->region[2] <= 0 || r->region[3] <= 0))
        return tsr_check_failf(c, "region", "w and h must be > 0");
    return TSR_OK;
}

const tsr_param *
tsr_source_key(const tsr_node *child, const char *key)
{
    if (!child->source)
        return NULL;
    const tsr_source_desc *d = &tsr_source_descs[child->source->kind];
    for (size_t k = 0; k < d->nparams; k++)
        if (strcmp(d->params[k].key, key) == 0 &&
            (d->params[k].type == TSR_P_F64 || d->params[k].type == TSR_P_F32))
            return &d->params[k];
    return NULL;
}

/* Per-copy source parameters draw the child's source per copy, so the child must be that
 * source alone (fill and source: no children to evaluate per copy). */
static tsr_status
check_variation(const tsr_edge *e, tsr_check *c)
{
    const tsr_repeat_params *r = e->params;
    static const struct {
        const char *yaml, *key;
        size_t off;
    } vs[] = {{"source-radius", "radius", offsetof(tsr_repeat_params, src_radius)},
              {"source-value", "value", offsetof(tsr_repeat_params, src_value)}};
    for (size_t k = 0; k < sizeof vs / sizeof vs[0]; k++) {
        const tsr_expr *x = *(tsr_expr *const *)((const char *)r + vs[k].off);
        if (!x)
            continue;
        if (e->child->nedges)
            return tsr_check_failf(c, vs[k].yaml, "needs a child without children (its source "
                                   "is drawn per copy); %s has %zu", e->child->name,
                                   e->child->nedges);
        if (!tsr_source_key(e->child, vs[k].key))
            return tsr_check_failf(c, vs[k].yaml, "the child %s has no source with a '%s'",
                                   e->child->name, vs[k].key);
    }
    /* each pixel's copies are looked for among those whose unmoved origin lies within the
     * bound: (2bx + 1)(2by + 1) / |det| of them; beyond this a tile would take hours */
    __int128 det = (__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0];
    if (det == 0) /* repeat, checked before prepare() puts its period into u and v */
        det = (__int128)(r->period[0] ? r->period[0] : e->child->w) *
              (r->period[1] ? r->period[1] : e->child->h);
    if (det < 0)
        det = -det;
    double cand = (double)(2 * r->jitter[0] + 1) * (double)(2 * r->jitter[1] + 1) / (double)det;
    if ((r->jitter[0] || r->jitter[1]) && det > 0 && cand > JITTER_CANDIDATES)
        return tsr_check_failf(c, "jitter", "[%lld, %lld] over a lattice cell of %.0f px puts "
                               "%.0f candidate copies on each pixel (at most %d)",
                               (long long)r->jitter[0], (long long)r->jitter[1], (double)det,
                               cand, JITTER_CANDIDATES);
    return TSR_OK;
}

static tsr_status
repeat_check(const tsr_edge *e, tsr_check *c)
{
    tsr_status st = check_region(e->params, c);
    return st == TSR_OK ? check_variation(e, c) : st;
}

static tsr_status
vector_check(const tsr_edge *e, tsr_check *c)
{
    const tsr_repeat_params *r = e->params;
    __int128 det = (__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0];
    if (det == 0)
        return tsr_check_failf(c, "v", "u and v are colinear (u = [%lld, %lld], v = [%lld, %lld])",
                               (long long)r->u[0], (long long)r->u[1], (long long)r->v[0],
                               (long long)r->v[1]);
    tsr_status st = check_region(r, c);
    return st == TSR_OK ? check_variation(e, c) : st;
}

static bool copies_disjoint(const tsr_edge *e);

/* Complete the variation flags, and give a table's `outside` left out (NaN) the identity: scale
 * 1, bias 0, a source parameter as the child's source has it. */
static void
prepare_variation(tsr_edge *e)
{
    tsr_repeat_params *r = e->params;
    struct {
        tsr_expr *x;
        double id;
    } vs[4] = {{r->scale, 1.0}, {r->bias, 0.0}, {r->src_radius, 0.0}, {r->src_value, 0.0}};
    const tsr_source *s = e->child->source;
    if (s) {
        vs[2].id = s->radius;
        vs[3].id = s->value;
    }
    r->varies = r->jitter[0] || r->jitter[1];
    for (int k = 0; k < 4; k++) {
        tsr_expr *x = vs[k].x;
        if (x && x->nops && x->op[0] == TSR_XOP_TABLE && isnan(x->k[4]))
            x->k[4] = vs[k].id;
        if (x && !tsr_expr_is_const(x, NULL))
            r->varies = true;
    }
    r->values = r->scale || r->bias;
    r->sources = r->src_radius || r->src_value;
}

static tsr_status
repeat_prepare(tsr_edge *e, tsr_error *err)
{
    (void)err;
    tsr_repeat_params *r = e->params;
    if (r->period[0] == 0)
        r->period[0] = e->child->w;
    if (r->period[1] == 0)
        r->period[1] = e->child->h;
    r->u[0] = r->period[0];
    r->u[1] = 0;
    r->v[0] = 0;
    r->v[1] = r->period[1];
    prepare_variation(e);
    r->disjoint = copies_disjoint(e);
    return TSR_OK;
}

/* floor(a / b) and ceil(a / b) for 128-bit a, b != 0 */
static __int128
fdiv128(__int128 a, __int128 b)
{
    __int128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static __int128
cdiv128(__int128 a, __int128 b)
{
    return -fdiv128(-a, b);
}

/* The basis a copy walk uses: (u, v) itself, or its Lagrange reduction when (u, v) is so
 * skewed that walking it would visit far more lattice coordinates than copies. */
typedef struct walk_basis {
    int64_t u[2], v[2]; /* the basis walked */
    __int128 t[4];      /* walked copy (i, j) is copy (t[0] i + t[2] j, t[1] i + t[3] j) of (u, v) */
    bool reduced;       /* walked in another basis: not in copy order */
} walk_basis;

/* Candidates visited per copy found, roughly, for a square area: (|vx| + |vy|)(|ux| + |uy|) /
 * |det|. 1 for axis-aligned vectors, < 2.4 for a reduced basis, 2^80 for the grid above. */
static double
skew(const int64_t u[2], const int64_t v[2])
{
    double det = fabs((double)((__int128)u[0] * v[1] - (__int128)u[1] * v[0]));
    return ((fabs((double)v[0]) + fabs((double)v[1])) * (fabs((double)u[0]) + fabs((double)u[1]))) /
           det;
}

#define SKEW_MAX 64.0

static __int128
dot128(const __int128 a[2], const __int128 b[2])
{
    return a[0] * b[0] + a[1] * b[1];
}

/* Lagrange (Gauss) reduction of a 2-D lattice basis, tracking the unimodular transform, when
 * (u, v) is skewed beyond SKEW_MAX or `always`. Every quantity stays below ~2^84 (coordinates
 * <= 2^41, their products, the transform's entries bounded by |b1| |b2| / det), so 128-bit
 * arithmetic is exact. */
static void
lattice_basis(const tsr_repeat_params *r, walk_basis *b, bool always)
{
    memcpy(b->u, r->u, sizeof b->u);
    memcpy(b->v, r->v, sizeof b->v);
    b->t[0] = 1, b->t[1] = 0, b->t[2] = 0, b->t[3] = 1;
    b->reduced = false;
    if (!always && skew(r->u, r->v) <= SKEW_MAX)
        return;
    __int128 a[2] = {r->u[0], r->u[1]}, c[2] = {r->v[0], r->v[1]};
    __int128 ta[2] = {1, 0}, tc[2] = {0, 1}; /* a = ta[0] u + ta[1] v, c likewise */
    for (int step = 0; step < 1000; step++) {
        if (dot128(a, a) > dot128(c, c)) {
            __int128 x[2] = {a[0], a[1]}, tx[2] = {ta[0], ta[1]};
            a[0] = c[0], a[1] = c[1], ta[0] = tc[0], ta[1] = tc[1];
            c[0] = x[0], c[1] = x[1], tc[0] = tx[0], tc[1] = tx[1];
        }
        __int128 n = dot128(a, a), d = dot128(a, c);
        __int128 mu = fdiv128(2 * d + n, 2 * n); /* nearest integer to d / n */
        if (mu == 0)
            break;
        c[0] -= mu * a[0], c[1] -= mu * a[1];
        tc[0] -= mu * ta[0], tc[1] -= mu * ta[1];
    }
    b->u[0] = (int64_t)a[0], b->u[1] = (int64_t)a[1];
    b->v[0] = (int64_t)c[0], b->v[1] = (int64_t)c[1];
    /* walked (i, j) -> i*a + j*c = (i ta[0] + j tc[0]) u + (i ta[1] + j tc[1]) v */
    b->t[0] = ta[0], b->t[1] = ta[1], b->t[2] = tc[0], b->t[3] = tc[1];
    b->reduced = true;
}

/* Iterates the copies whose rect meets `area` (parent coords). Copy origins lie in
 * B = [area.x - w + 1, area.x + area.w - 1] x (same in y); the walked basis coordinates of
 * B's corners bound i and j, then each candidate is tested exactly. In copy order (ascending
 * j, then ascending i) unless the basis was reduced. With skew <= SKEW_MAX (the walked basis
 * always), |i*u| and |j*v| stay below 2^42 * 64, so positions fit int64. */
typedef struct copy_iter {
    walk_basis b;
    int64_t ox, oy, cw, ch; /* lattice origin, child size */
    int64_t jb[2];          /* jitter bound (0, 0: none) */
    uint64_t seed;
    tsr_rect area;
    int64_t i0, i1, j0, j1, i, j; /* inclusive bounds, cursor (walked basis) */
} copy_iter;

/* The walk of basis b (lattice_basis) over `area`. */
static void
iter_init_in(copy_iter *it, const tsr_edge *e, tsr_rect area, const walk_basis *b)
{
    it->b = *b;
    const int64_t *u = it->b.u, *v = it->b.v;
    it->ox = e->offset[0];
    it->oy = e->offset[1];
    it->cw = e->child->w;
    it->ch = e->child->h;
    const tsr_repeat_params *r = e->params;
    it->jb[0] = r->jitter[0];
    it->jb[1] = r->jitter[1];
    it->seed = (uint64_t)r->seed;
    it->area = area;
    it->i0 = 1;
    it->i1 = 0;
    it->j0 = 1;
    it->j1 = 0;
    it->i = it->i0;
    it->j = it->j0;
    if (tsr_rect_empty(area))
        return;
    __int128 det = (__int128)u[0] * v[1] - (__int128)u[1] * v[0];
    /* a copy moved by at most jb: its unmoved origin lies within jb of B */
    __int128 bx[2] = {(__int128)area.x - it->cw + 1 - it->ox - it->jb[0],
                      (__int128)area.x + area.w - 1 - it->ox + it->jb[0]};
    __int128 by[2] = {(__int128)area.y - it->ch + 1 - it->oy - it->jb[1],
                      (__int128)area.y + area.h - 1 - it->oy + it->jb[1]};
    __int128 imin = 0, imax = 0, jmin = 0, jmax = 0;
    for (int k = 0; k < 4; k++) {
        __int128 px = bx[k & 1], py = by[k >> 1];
        /* solve p = i*u + j*v: i = (px*vy - py*vx)/det, j = (py*ux - px*uy)/det */
        __int128 ni = px * v[1] - py * v[0];
        __int128 nj = py * u[0] - px * u[1];
        __int128 lo_i = fdiv128(ni, det), hi_i = cdiv128(ni, det);
        __int128 lo_j = fdiv128(nj, det), hi_j = cdiv128(nj, det);
        if (k == 0 || lo_i < imin) imin = lo_i;
        if (k == 0 || hi_i > imax) imax = hi_i;
        if (k == 0 || lo_j < jmin) jmin = lo_j;
        if (k == 0 || hi_j > jmax) jmax = hi_j;
    }
    it->i0 = (int64_t)imin;
    it->i1 = (int64_t)imax;
    it->j0 = (int64_t)jmin;
    it->j1 = (int64_t)jmax;
    it->i = it->i0;
    it->j = it->j0;
}

static void
iter_init(copy_iter *it, const tsr_edge *e, tsr_rect area)
{
    walk_basis b;
    lattice_basis(e->params, &b, false);
    iter_init_in(it, e, area, &b);
}

/* Next copy meeting the area: its rect clipped to the area, in parent coords, and the child
 * coords of that clip's corner; *key (may be NULL) gets its (j, i) of the given u, v. False
 * when done. */
static bool
iter_next(copy_iter *it, tsr_rect *clip, int64_t *cx, int64_t *cy, __int128 key[2])
{
    const int64_t *u = it->b.u, *v = it->b.v;
    while (it->j <= it->j1) {
        while (it->i <= it->i1) {
            int64_t i = it->i++;
            int64_t px = it->ox + i * u[0] + it->j * v[0];
            int64_t py = it->oy + i * u[1] + it->j * v[1];
            /* (j, i) of the given u, v: within 2^41 for any copy near the parent */
            __int128 kj = it->b.t[1] * i + it->b.t[3] * it->j;
            __int128 ki = it->b.t[0] * i + it->b.t[2] * it->j;
            if (it->jb[0] || it->jb[1]) {
                int64_t d[2];
                tsr_jitter(it->seed, it->jb, (int64_t)ki, (int64_t)kj, d);
                px += d[0];
                py += d[1];
            }
            tsr_rect c = tsr_rect_intersect(tsr_rect_make(px, py, it->cw, it->ch), it->area);
            if (tsr_rect_empty(c))
                continue;
            *clip = c;
            *cx = c.x - px;
            *cy = c.y - py;
            if (key) {
                key[0] = kj;
                key[1] = ki;
            }
            return true;
        }
        it->i = it->i0;
        it->j++;
    }
    return false;
}

/* Upper bound of the copies meeting any w x h area: the candidates a walk visits there (the
 * corner bounds move by at most 1 each way when the area is translated). */
static size_t
copies_bound(const tsr_edge *e, int64_t w, int64_t h)
{
    copy_iter it;
    iter_init(&it, e, tsr_rect_make(0, 0, w, h));
    double n = ((double)(it.i1 - it.i0) + 3) * ((double)(it.j1 - it.j0) + 3);
    return n < 1e15 ? (size_t)n : (size_t)1e15;
}

/* The range of integers i with lo < a*i + b < hi (a, b, lo, hi exact), as [*i0, *i1]; false
 * when it is empty. */
static bool
open_range(__int128 a, __int128 b, __int128 lo, __int128 hi, __int128 *i0, __int128 *i1)
{
    if (a == 0) {
        *i0 = -((__int128)1 << 100);
        *i1 = (__int128)1 << 100;
        return lo < b && b < hi;
    }
    /* lo - b < a*i < hi - b: strict, so step one inward from each exact quotient */
    __int128 p = lo - b, q = hi - b;
    if (a < 0) {
        __int128 t = -q;
        q = -p;
        p = t;
        a = -a;
    }
    *i0 = fdiv128(p, a) + 1;
    *i1 = cdiv128(q, a) - 1;
    return *i0 <= *i1;
}

/* True when no copy other than (0, 0) meets copy (0, 0): then at most one copy covers any
 * pixel. That is: no lattice vector p != 0 with |px| < w and |py| < h. Bounded by the design's
 * size, not by its copy count (a dense lattice of a 2^40 px child has ~2^40 copies meeting the
 * child, a skewed one as many empty candidates):
 * - the box (-w, w) x (-h, h) is convex, symmetric and of area 4wh, so when wh > |det| it holds
 *   a lattice point besides 0 (Minkowski's theorem): not disjoint, nothing walked;
 * - else the rows of the reduced basis (lines along its first vector) that cross the box are
 *   walked, each row's candidates solved as one interval: with wh <= |det| there are at most
 *   ~2.5 sqrt(w/h + h/w) rows (the reduced first vector is < 1.08 sqrt(|det|) long and rows are
 *   |det| / |u| apart), ~2.6 million for a 2^40 x 1 child. */
static bool
copies_disjoint(const tsr_edge *e)
{
    const tsr_repeat_params *r = e->params;
    /* jittered copies move apart or together by up to 2b: as if each were that much bigger */
    __int128 w = (__int128)e->child->w + 2 * r->jitter[0], h = (__int128)e->child->h + 2 * r->jitter[1];
    __int128 det = (__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0];
    if (det < 0)
        det = -det;
    if (w * h > det)
        return false;
    tsr_edge at0 = *e;
    at0.offset[0] = at0.offset[1] = 0;
    tsr_node grown = *e->child; /* the bounds below for a child of w x h, jitter off */
    grown.w = (int64_t)w;
    grown.h = (int64_t)h;
    at0.child = &grown;
    tsr_repeat_params still = *r;
    still.jitter[0] = still.jitter[1] = 0;
    at0.params = &still;
    walk_basis b;
    lattice_basis(r, &b, true);
    copy_iter it;
    iter_init_in(&it, &at0, tsr_rect_make(0, 0, grown.w, grown.h), &b);
    const int64_t *u = it.b.u, *v = it.b.v;
    for (int64_t j = it.j0; j <= it.j1; j++) {
        __int128 x0, x1, y0, y1;
        if (!open_range(u[0], (__int128)j * v[0], -w, w, &x0, &x1) ||
            !open_range(u[1], (__int128)j * v[1], -h, h, &y0, &y1))
            continue;
        __int128 lo = x0 > y0 ? x0 : y0, hi = x1 < y1 ? x1 : y1;
        if (lo > hi)
            continue;
        if (j != 0 || lo != 0 || hi != 0) /* a copy other than (0, 0) itself */
            return false;
    }
    return true;
}

/* The parent area the layer can cover within `pr`: pr ∩ region. */
static tsr_rect
active_area(const tsr_edge *e, tsr_rect pr)
{
    const tsr_repeat_params *r = e->params;
    if (r->region[2] > 0)
        pr = tsr_rect_intersect(pr, tsr_rect_make(r->region[0], r->region[1], r->region[2], r->region[3]));
    return pr;
}

/* Candidates need() walks one by one; beyond this many the copies overlap so densely that the
 * rects they read are the whole child (a walk would cost the copy count: 2^31 candidates for a
 * [1, 0], [0, 1] lattice of a 4194304 x 1 child over a 512 px tile, and the memory plan calls
 * need() on every node before anything renders). */
#define NEED_WALK_MAX ((double)(1 << 16))

static size_t need_copies(const tsr_edge *e, tsr_rect pr, tsr_rect *out);

static size_t
need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    size_t n = need_copies(e, pr, out);
    /* every copy's pixels are drawn from its own source by layer(), which must still run
     * where copies are (the engine skips an edge that needs nothing): one pixel is asked */
    if (n && ((const tsr_repeat_params *)e->params)->sources) {
        out[0] = tsr_rect_make(0, 0, 1, 1);
        n = 1;
    }
    return n;
}

static size_t
need_copies(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    copy_iter it;
    iter_init(&it, e, active_area(e, pr));
    if (it.i0 > it.i1 || it.j0 > it.j1)
        return 0;
    if (((double)(it.i1 - it.i0) + 1) * ((double)(it.j1 - it.j0) + 1) > NEED_WALK_MAX) {
        out[0] = tsr_rect_make(0, 0, e->child->w, e->child->h); /* a superset is valid */
        return 1;
    }
    size_t n = 0;
    tsr_rect all = {0, 0, 0, 0}, clip;
    int64_t cx, cy;
    bool overflow = false;
    while (iter_next(&it, &clip, &cx, &cy, NULL)) {
        tsr_rect c = tsr_rect_make(cx, cy, clip.w, clip.h);
        all = tsr_rect_union(all, c);
        if (overflow)
            continue;
        /* keep only rects not already inside a kept one; grow a kept one that is inside c */
        bool kept = false;
        for (size_t k = 0; k < n && !kept; k++) {
            if (tsr_rect_contains(out[k], c))
                kept = true;
            else if (tsr_rect_contains(c, out[k])) {
                out[k] = c;
                kept = true;
            }
        }
        if (!kept) {
            if (n == TSR_NEED_MAX)
                overflow = true;
            else
                out[n++] = c;
        }
    }
    if (overflow) {
        out[0] = all;
        return 1;
    }
    /* growing one rect may have swallowed others: drop contained duplicates */
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        bool dup = false;
        for (size_t q = 0; q < m && !dup; q++)
            dup = tsr_rect_contains(out[q], out[k]);
        if (!dup)
            out[m++] = out[k];
    }
    return m;
}

static const tsr_view *
find_view(const tsr_view *views, size_t nviews, tsr_rect c)
{
    for (size_t k = 0; k < nviews; k++)
        if (tsr_rect_contains(views[k].r, c))
            return &views[k];
    return NULL;
}

/* A copy found by a walk in a reduced basis, kept to be applied in copy order. */
typedef struct copy_rec {
    __int128 key[2]; /* (j, i) of the given u, v */
    tsr_rect clip;
    int64_t cx, cy;
} copy_rec;

static int
rec_cmp(const void *pa, const void *pb)
{
    const copy_rec *a = pa, *b = pb;
    for (int k = 0; k < 2; k++)
        if (a->key[k] != b->key[k])
            return a->key[k] < b->key[k] ? -1 : 1;
    return 0;
}

/* What the layer accumulates; count is uint16_t per pixel, or uint32_t (count32) when more
 * than 65535 copies can cover one pixel. */
typedef struct acc {
    const tsr_repeat_params *r;
    int ov;
    tsr_rect pr;
    float *L;
    uint8_t *cov;
    uint16_t *count;
    uint32_t *count32;
    float *row;    /* values: one copy row through the scale and bias (pr.w floats) */
    double sc, bi; /* values: this copy's scale and bias */
    float *own;    /* sources: one copy's pixels drawn from its own source (pr.w * pr.h) */
    struct memo *memo; /* sources, small child: whole children drawn, by parameter values */
    int nmemo, next;   /* entries in use; the one replaced next when all are */
} acc;

/* Blend one copy (clip in parent coords, (cx, cy) its corner in child coords) into the layer. */
static void
apply_copy(acc *a, const tsr_view *v, tsr_rect clip, int64_t cx, int64_t cy)
{
    for (int64_t y = 0; y < clip.h; y++) {
        const float *restrict src = tsr_view_row(v, cx, cy + y);
        if (a->r->values) { /* docs/variation.md: (float)(bias + scale * child), in double */
            for (int64_t x = 0; x < clip.w; x++)
                a->row[x] = (float)(a->bi + a->sc * (double)src[x]);
            src = a->row;
        }
        size_t at = (size_t)((clip.y - a->pr.y + y) * a->pr.w + (clip.x - a->pr.x));
        float *restrict l = a->L + at;
        uint8_t *restrict c = a->cov + at;
        int64_t w = clip.w;
        if (a->r->disjoint) {
            memcpy(l, src, (size_t)w * sizeof(float));
            memset(c, 1, (size_t)w);
            continue;
        }
        switch (a->ov) {
        case TSR_OVERLAP_FIRST:
            for (int64_t x = 0; x < w; x++) {
                l[x] = c[x] ? l[x] : src[x];
                c[x] = 1;
            }
            break;
        case TSR_OVERLAP_ADD:
            for (int64_t x = 0; x < w; x++) {
                l[x] = c[x] ? l[x] + src[x] : src[x];
                c[x] = 1;
            }
            break;
        case TSR_OVERLAP_MAX:
            for (int64_t x = 0; x < w; x++) {
                l[x] = (c[x] && !(src[x] > l[x])) ? l[x] : src[x];
                c[x] = 1;
            }
            break;
        default: { /* average: float32 sum of the non-zero values in copy order */
            if (a->count32) {
                uint32_t *restrict n = a->count32 + at;
                for (int64_t x = 0; x < w; x++) {
                    float s = src[x];
                    uint32_t nz = s != 0.0f;
                    l[x] = (c[x] ? l[x] : 0.0f) + (nz ? s : 0.0f);
                    n[x] += nz;
                    c[x] = 1;
                }
                break;
            }
            /* Branch-free so it vectorises: a first touch starts the sum at +0, and 0 + s = s
             * exactly; adding +0 for a zero value leaves the sum unchanged. Same bits as
             * "first non-zero value, then add each later one". */
            uint16_t *restrict n = a->count + at;
            for (int64_t x = 0; x < w; x++) {
                float s = src[x];
                uint16_t nz = s != 0.0f;
                l[x] = (c[x] ? l[x] : 0.0f) + (nz ? s : 0.0f);
                n[x] = (uint16_t)(n[x] + nz);
                c[x] = 1;
            }
            break;
        }
        }
    }
}

/* Copies with equal parameters have equal pixels: within one layer() call, a small child is
 * drawn whole once per distinct set of parameter values (keyed by their bits) and its copies
 * read it, so a graded lattice costs a drawing per distinct value in the tile, not per copy.
 * Kept per call (no lock, nothing outlives the tile); replaced round robin when full. */
#define MEMO_N 32
#define MEMO_BYTES ((size_t)4 << 20) /* the most all entries of one call hold */

typedef struct memo {
    double key[2]; /* the copy's radius and value as set (NaN bits never match: not drawn) */
    float *px;     /* the child's w * h pixels */
} memo;

/* Entries of the memo for edge e: 0 when its child is too big to draw whole per value. */
static int
memo_entries(const tsr_edge *e)
{
    size_t px = (size_t)e->child->w * (size_t)e->child->h;
    if (px > MEMO_BYTES / sizeof(float) / 4)
        return 0;
    size_t n = MEMO_BYTES / (px * sizeof(float));
    return n < MEMO_N ? (int)n : MEMO_N;
}

/* The copy's own source: the child's, with the per-copy parameters set. False when a value is
 * outside the key's range (or not a number): that copy is not drawn (docs/variation.md). */
static bool
copy_source(const tsr_edge *e, int64_t i, int64_t j, tsr_source *s)
{
    const tsr_repeat_params *r = e->params;
    *s = *e->child->source; /* shallow: the copy only reads the pointers it shares */
    const struct {
        const tsr_expr *x;
        const char *key;
    } vs[] = {{r->src_radius, "radius"}, {r->src_value, "value"}};
    for (size_t k = 0; k < sizeof vs / sizeof vs[0]; k++) {
        if (!vs[k].x)
            continue;
        const tsr_param *pm = tsr_source_key(e->child, vs[k].key);
        double v = tsr_expr_eval(vs[k].x, i, j);
        if (!isfinite(v))
            return false;
        if (pm->flags & TSR_PF_RANGE) {
            bool lo = (pm->flags & TSR_PF_MIN_OPEN) ? v > pm->min : v >= pm->min;
            bool hi = (pm->flags & TSR_PF_MAX_OPEN) ? v < pm->max : v <= pm->max;
            if (!lo || !hi)
                return false;
        }
        if (pm->type == TSR_P_F64) {
            *(double *)((char *)s + pm->offset) = v;
        } else {
            float f = (float)v;
            if (!isfinite(f))
                return false;
            *(float *)((char *)s + pm->offset) = f;
        }
    }
    return true;
}

/* One copy (clip in parent coords, (cx, cy) its corner in child coords, key its (j, i)) into
 * the layer: its child pixels from the views, or drawn from its own source; its scale and
 * bias. */
static tsr_status
put_copy(acc *a, const tsr_edge *e, const tsr_view *views, size_t nviews, tsr_rect clip,
         int64_t cx, int64_t cy, const __int128 key[2], tsr_error *err)
{
    const tsr_repeat_params *r = a->r;
    int64_t i = (int64_t)key[1], j = (int64_t)key[0];
    tsr_rect cr = tsr_rect_make(cx, cy, clip.w, clip.h);
    const tsr_view *v;
    tsr_view own;
    if (r->sources) {
        tsr_source s;
        if (!copy_source(e, i, j, &s))
            return TSR_OK;
        tsr_node leaf = *e->child;
        leaf.source = &s;
        if (a->memo) {
            double k[2] = {s.radius, (double)s.value};
            int m = 0;
            while (m < a->nmemo && memcmp(a->memo[m].key, k, sizeof k) != 0)
                m++;
            if (m == a->nmemo) { /* not drawn yet in this call */
                int cap = memo_entries(e);
                if (a->nmemo < cap) {
                    size_t bytes = (size_t)leaf.w * (size_t)leaf.h * sizeof(float);
                    if (!(a->memo[m].px = malloc(bytes)))
                        return tsr_fail(err, TSR_ENOMEM, "repeat: out of memory (copies drawn)");
                    a->nmemo++;
                } else {
                    m = a->next;
                    a->next = (a->next + 1) % cap;
                }
                /* keyed once drawn: a draw that ran out of memory leaves no entry behind */
                memset(a->memo[m].key, 0xff, sizeof k);
                tsr_status st = tsr_node_base_draw(&leaf, tsr_rect_make(0, 0, leaf.w, leaf.h),
                                                   a->memo[m].px, err);
                if (st != TSR_OK)
                    return st;
                memcpy(a->memo[m].key, k, sizeof k);
            }
            own = (tsr_view){tsr_rect_make(0, 0, leaf.w, leaf.h), a->memo[m].px, leaf.w};
        } else {
            tsr_status st = tsr_node_base_draw(&leaf, cr, a->own, err);
            if (st != TSR_OK)
                return st;
            own = (tsr_view){cr, a->own, cr.w};
        }
        v = &own;
    } else if (!(v = find_view(views, nviews, cr))) {
        return tsr_fail(err, TSR_EINTERNAL, "repeat: child rect not fetched");
    }
    if (r->values) {
        a->sc = r->scale ? tsr_expr_eval(r->scale, i, j) : 1.0;
        a->bi = r->bias ? tsr_expr_eval(r->bias, i, j) : 0.0;
    }
    apply_copy(a, v, clip, cx, cy);
    return TSR_OK;
}

/* More copies than a uint16_t counts can cover one pixel (a dense lattice of a big child). */
static bool
wide_counts(const tsr_edge *e)
{
    return copies_bound(e, 1, 1) > UINT16_MAX;
}

static tsr_status
layer(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews, float *L,
      uint8_t *cov, tsr_error *err)
{
    const tsr_repeat_params *r = e->params;
    acc a = {r, r->overlap, pr, L, cov, NULL, NULL, NULL, 0.0, 0.0, NULL, NULL, 0, 0};
    copy_rec *recs = NULL;
    size_t nrec = 0, cap = 0;
    tsr_status st = TSR_OK;
    if (r->disjoint) /* one contribution per pixel: average s/1 = s, first/max/add = s */
        a.ov = TSR_OVERLAP_FIRST;
    size_t total = (size_t)pr.w * (size_t)pr.h;
    if (a.ov == TSR_OVERLAP_AVERAGE) {
        if (wide_counts(e))
            a.count32 = calloc(total, sizeof *a.count32);
        else
            a.count = calloc(total, sizeof *a.count);
        if (!a.count && !a.count32)
            return tsr_fail(err, TSR_ENOMEM, "repeat: out of memory");
    }
    if ((r->values && !(a.row = malloc((size_t)pr.w * sizeof *a.row))) ||
        (r->sources && memo_entries(e) &&
         !(a.memo = calloc((size_t)memo_entries(e), sizeof *a.memo))) ||
        (r->sources && !a.memo && !(a.own = malloc(total * sizeof *a.own)))) {
        free(a.memo);
        free(a.count);
        free(a.count32);
        free(a.row);
        return tsr_fail(err, TSR_ENOMEM, "repeat: out of memory (per-copy values)");
    }
    copy_iter it;
    iter_init(&it, e, active_area(e, pr));
    /* a reduced walk is out of copy order: where order matters, collect, sort, then apply */
    bool sort = it.b.reduced && !r->disjoint;
    tsr_rect clip;
    int64_t cx, cy;
    __int128 key[2];
    uint64_t seen = 0;
    while (iter_next(&it, &clip, &cx, &cy, key)) {
        /* a dense lattice puts millions of copies on one tile */
        if ((++seen & 4095) == 0 && tsr_stop_requested()) {
            st = tsr_fail(err, TSR_EINTR, "interrupted");
            break;
        }
        if (sort) {
            if (nrec == cap) {
                size_t ncap = cap ? cap * 2 : 256;
                copy_rec *n = realloc(recs, ncap * sizeof *n);
                if (!n) {
                    st = tsr_fail(err, TSR_ENOMEM, "repeat: out of memory (copy list)");
                    break;
                }
                recs = n;
                cap = ncap;
            }
            recs[nrec++] = (copy_rec){{key[0], key[1]}, clip, cx, cy};
            continue;
        }
        if ((st = put_copy(&a, e, views, nviews, clip, cx, cy, key, err)) != TSR_OK)
            break;
    }
    if (sort && st == TSR_OK) {
        if (nrec > 1)
            qsort(recs, nrec, sizeof *recs, rec_cmp);
        for (size_t k = 0; k < nrec; k++) {
            const copy_rec *c = &recs[k];
            if ((k & 4095) == 4095 && tsr_stop_requested()) {
                st = tsr_fail(err, TSR_EINTR, "interrupted");
                break;
            }
            if ((st = put_copy(&a, e, views, nviews, c->clip, c->cx, c->cy, c->key, err)) != TSR_OK)
                break;
        }
    }
    free(recs);
    free(a.row);
    free(a.own);
    for (int m = 0; m < a.nmemo; m++)
        free(a.memo[m].px);
    free(a.memo);
    if (a.count || a.count32) {
        if (st == TSR_OK) {
            for (size_t i = 0; i < total; i++) {
                uint32_t n = a.count ? a.count[i] : a.count32[i];
                if (cov[i]) /* covered with no non-zero value: the sum is +0 and stays 0 */
                    L[i] = n ? L[i] / (float)n : 0.0f;
            }
        }
        free(a.count);
        free(a.count32);
    }
    return st;
}

static size_t
scratch(const tsr_edge *e, int64_t tw, int64_t th)
{
    const tsr_repeat_params *r = e->params;
    size_t b = 0;
    if (r->values) /* a copy row through scale and bias */
        b += (size_t)tw * sizeof(float);
    if (r->sources) { /* the copies drawn (memo) or one copy's pixels, and what drawing takes */
        int m = memo_entries(e);
        b += m ? (size_t)m * (size_t)(e->child->w * e->child->h) * sizeof(float) +
                     MEMO_N * sizeof(memo)
               : (size_t)tw * (size_t)th * sizeof(float);
        b += tsr_source_scratch(e->child->source, m ? e->child->w : tw);
    }
    if (r->disjoint)
        return b;
    if (r->overlap == TSR_OVERLAP_AVERAGE)
        b = (size_t)tw * (size_t)th * (wide_counts(e) ? sizeof(uint32_t) : sizeof(uint16_t));
    walk_basis wb;
    lattice_basis(r, &wb, false);
    if (wb.reduced) /* the copy list, grown by doubling */
        b += 2 * copies_bound(e, tw, th) * sizeof(copy_rec);
    return b;
}

const tsr_trait tsr_trait_repeat = {
    .name = "repeat",
    .params = repeat_params,
    .nparams = sizeof repeat_params / sizeof repeat_params[0],
    .params_size = sizeof(tsr_repeat_params),
    .defaults = repeat_defaults,
    .check = repeat_check,
    .prepare = repeat_prepare,
    .need = need,
    .layer = layer,
    .scratch = scratch,
};

static tsr_status
vector_prepare(tsr_edge *e, tsr_error *err)
{
    (void)err;
    tsr_repeat_params *r = e->params;
    prepare_variation(e);
    r->disjoint = copies_disjoint(e);
    return TSR_OK;
}

const tsr_trait tsr_trait_repeat_vector = {
    .name = "repeat-vector",
    .params = vector_params,
    .nparams = sizeof vector_params / sizeof vector_params[0],
    .params_size = sizeof(tsr_repeat_params),
    .defaults = vector_defaults,
    .check = vector_check,
    .prepare = vector_prepare,
    .need = need,
    .layer = layer,
    .scratch = scratch,
};
