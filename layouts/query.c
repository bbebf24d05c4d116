/* After reading: the hierarchy checked, cell boxes, a spatial index per cell, window queries
 * and statistics (docs/layouts.md, "Queries").
 *
 * Each cell's index covers its own items, shapes first then placements, each with its box in
 * the cell's coordinates (repetitions included) stored as floats rounded outwards. Small cells
 * are scanned; larger ones get a packed R-tree (sort-tile-recursive, 16 children a node) whose
 * hits are sorted back into item order, so a query's visiting order never depends on the
 * tree. A query descends placements lazily: the window is carried into each placed cell's
 * coordinates, and a lattice repetition is cut to the rows (j) that can meet the window
 * through the inverse lattice, then to the columns (i) of each such row; elements outside
 * those ranges are never looked at. */
#include "layouts/layouts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAN 16   /* R-tree children per node */
#define SCAN 32  /* cells with at most this many items are scanned, not treed */
#define MAXLV 16 /* R-tree levels: 16^16 items */

/* Minimum and maximum of finite doubles. Not fmin/fmax: without -ffinite-math-only those are
 * calls into libm (their NaN rules), and the query's box arithmetic made them 4 % of a dense
 * layout's render (perf, docs/performance.md "Layouts"). No value here is NaN. */
static inline double
dmin(double a, double b)
{
    return a < b ? a : b;
}

static inline double
dmax(double a, double b)
{
    return a > b ? a : b;
}

typedef struct cindex {
    bool placed;        /* some cell places this one */
    uint8_t state;      /* hierarchy walk: 0 new, 1 on the path, 2 done */
    uint8_t height;     /* placement levels below this cell */
    uint32_t n;         /* items: shapes, then placements */
    float (*box)[4];    /* per item, in item order; x0 > x1 for an item without a box */
    uint32_t *perm;     /* the items in tree order (NULL: scanned) */
    float (*node)[4];   /* node boxes, level 1 first */
    uint32_t nlevels;   /* node levels above the items */
    uint32_t lvoff[MAXLV + 1], lvn[MAXLV + 1]; /* each level's first node and count */
} cindex;

void
tsr_lay_index_free(void *index);

void
tsr_lay_index_free(void *index)
{
    cindex *x = index;
    if (!x)
        return;
    free(x->box);
    free(x->perm);
    free(x->node);
    free(x);
}

/* ---- transforms ---------------------------------------------------------------------------- */

typedef struct lev {
    double c, s, mag; /* cos, sin of the angle; magnification */
    bool mirror;
    double tx, ty;    /* translation, the repetition's displacement included */
} lev;

/* cos and sin of an angle in degrees, exact at multiples of 90 (cos(pi / 2) is not 0 in
 * doubles, and a quarter turn must map the grid onto itself) */
static void
cossin(double deg, double *c, double *s)
{
    double a = fmod(deg, 360);
    if (a < 0)
        a += 360;
    if (a == 0 || a == 90 || a == 180 || a == 270) {
        static const double cs[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
        int k = (int)(a / 90);
        *c = cs[k][0], *s = cs[k][1];
        return;
    }
    double r = a * (M_PI / 180);
    *c = cos(r), *s = sin(r);
}

static lev
lev_of(const tsr_lay_xform *xf, double ddx, double ddy)
{
    lev v = {.mag = xf->mag, .mirror = xf->mirror};
    cossin(xf->angle, &v.c, &v.s);
    v.tx = (double)xf->dx + ddx;
    v.ty = (double)xf->dy + ddy;
    return v;
}

/* p' = t + R(angle) * (mag * F * p): the order layouts.h states */
static inline void
apply(const lev *v, double *x, double *y)
{
    double mx = v->mag * *x, my = v->mag * (v->mirror ? -*y : *y);
    double nx = v->c * mx - v->s * my, ny = v->s * mx + v->c * my;
    *x = v->tx + nx;
    *y = v->ty + ny;
}

/* the inverse, for carrying windows down (conservative use only) */
static inline void
unapply(const lev *v, double *x, double *y)
{
    double px = *x - v->tx, py = *y - v->ty;
    double rx = v->c * px + v->s * py, ry = -v->s * px + v->c * py;
    *x = rx / v->mag;
    *y = (v->mirror ? -ry : ry) / v->mag;
}

static void
box_through(const lev *v, const double b[4], double out[4], bool inverse)
{
    out[0] = out[1] = INFINITY, out[2] = out[3] = -INFINITY;
    for (int k = 0; k < 4; k++) {
        double x = b[k & 1 ? 2 : 0], y = b[k & 2 ? 3 : 1];
        if (inverse)
            unapply(v, &x, &y);
        else
            apply(v, &x, &y);
        out[0] = dmin(out[0], x), out[1] = dmin(out[1], y);
        out[2] = dmax(out[2], x), out[3] = dmax(out[3], y);
    }
}

/* the span of a repetition's displacements */
static void
rep_extent(const tsr_layout *l, const tsr_lay_rep *r, double e[4])
{
    if (r->n) {
        double a = (double)(r->n - 1), b = (double)(r->m - 1);
        e[0] = dmin(0, a * (double)r->u[0]) + dmin(0, b * (double)r->v[0]);
        e[2] = dmax(0, a * (double)r->u[0]) + dmax(0, b * (double)r->v[0]);
        e[1] = dmin(0, a * (double)r->u[1]) + dmin(0, b * (double)r->v[1]);
        e[3] = dmax(0, a * (double)r->u[1]) + dmax(0, b * (double)r->v[1]);
        return;
    }
    e[0] = e[1] = INFINITY, e[2] = e[3] = -INFINITY;
    for (uint64_t k = 0; k < r->count; k++) {
        const int64_t *d = l->disp[r->off + k];
        e[0] = dmin(e[0], (double)d[0]), e[1] = dmin(e[1], (double)d[1]);
        e[2] = dmax(e[2], (double)d[0]), e[3] = dmax(e[3], (double)d[1]);
    }
}

static void
shape_box(const tsr_lay_cell *c, const tsr_lay_shape *s, double b[4])
{
    const tsr_lay_pt *p = c->pts + s->first;
    if (s->kind == TSR_LAY_CIRCLE) {
        b[0] = (double)p->x - (double)s->r, b[1] = (double)p->y - (double)s->r;
        b[2] = (double)p->x + (double)s->r, b[3] = (double)p->y + (double)s->r;
        return;
    }
    b[0] = b[2] = (double)p->x, b[1] = b[3] = (double)p->y;
    for (uint32_t k = 1; k < s->npts; k++) {
        b[0] = dmin(b[0], (double)p[k].x), b[1] = dmin(b[1], (double)p[k].y);
        b[2] = dmax(b[2], (double)p[k].x), b[3] = dmax(b[3], (double)p[k].y);
    }
}

/* ---- building ------------------------------------------------------------------------------ */

typedef struct keyed {
    float key;
    uint32_t id;
} keyed;

static int
by_key(const void *a, const void *b)
{
    const keyed *p = a, *q = b;
    if (p->key != q->key)
        return p->key < q->key ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

static float
down(double v)
{
    float f = (float)v;
    return (double)f > v ? nextafterf(f, -INFINITY) : f;
}

static float
up(double v)
{
    float f = (float)v;
    return (double)f < v ? nextafterf(f, INFINITY) : f;
}

/* The packed R-tree over x->box (sort-tile-recursive: by x centre into vertical slices of
 * S * FAN items, each by y centre; upper levels group consecutive nodes). */
static tsr_status
build_tree(cindex *x)
{
    uint32_t n = x->n;
    keyed *k = malloc((size_t)n * sizeof *k);
    x->perm = malloc((size_t)n * sizeof *x->perm);
    size_t nodes = 0, lvn = n;
    while (lvn > 1) {
        lvn = (lvn + FAN - 1) / FAN;
        nodes += lvn;
    }
    x->node = malloc(nodes * sizeof *x->node);
    if (!k || !x->perm || !x->node) {
        free(k);
        return TSR_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        const float *b = x->box[i];
        k[i] = (keyed){b[0] <= b[2] ? b[0] / 2 + b[2] / 2 : 0, i};
    }
    qsort(k, n, sizeof *k, by_key);
    size_t leaves = (n + FAN - 1) / FAN;
    size_t slices = (size_t)ceil(sqrt((double)leaves));
    size_t per = slices * FAN;
    for (size_t s0 = 0; s0 < n; s0 += per) {
        size_t s1 = s0 + per < n ? s0 + per : n;
        for (size_t i = s0; i < s1; i++) {
            const float *b = x->box[k[i].id];
            k[i].key = b[0] <= b[2] ? b[1] / 2 + b[3] / 2 : 0;
        }
        qsort(k + s0, s1 - s0, sizeof *k, by_key);
    }
    for (uint32_t i = 0; i < n; i++)
        x->perm[i] = k[i].id;
    free(k);
    /* level L nodes cover FAN entries of level L - 1 (level 0: the items in tree order) */
    size_t below = n, off = 0;
    uint32_t L = 0;
    while (below > 1) {
        size_t cnt = (below + FAN - 1) / FAN;
        x->lvoff[L + 1] = (uint32_t)off, x->lvn[L + 1] = (uint32_t)cnt;
        for (size_t j = 0; j < cnt; j++) {
            float *o = x->node[off + j];
            o[0] = o[1] = INFINITY, o[2] = o[3] = -INFINITY;
            for (size_t c = j * FAN; c < below && c < (j + 1) * FAN; c++) {
                const float *b = L == 0 ? x->box[x->perm[c]] : x->node[x->lvoff[L] + c];
                if (b[0] > b[2])
                    continue;
                o[0] = fminf(o[0], b[0]), o[1] = fminf(o[1], b[1]);
                o[2] = fmaxf(o[2], b[2]), o[3] = fmaxf(o[3], b[3]);
            }
        }
        off += cnt;
        below = cnt;
        L++;
    }
    x->nlevels = L;
    x->lvn[0] = n;
    return TSR_OK;
}

typedef struct walk {
    tsr_layout *l;
    tsr_error *err;
    uint32_t path[TSR_LAYOUT_MAX_DEPTH + 2]; /* cells on the walk */
} walk;

/* "A -> B -> C" of path[from .. to], then `last` when not NULL, shortened to fit */
static void
names(const walk *w, int from, int to, const char *last, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = 0;
    for (int k = from; k <= to + (last != NULL); k++) {
        const char *nm = k <= to ? w->l->cells[w->path[k]].name : last;
        int wrote = snprintf(out + used, cap - used, "%s\"%s\"", k > from ? " -> " : "", nm);
        if (wrote < 0 || (size_t)wrote >= cap - used) {
            if (cap > 5)
                strcpy(out + cap - 5, "...");
            return;
        }
        used += (size_t)wrote;
    }
}

static tsr_status
bad_model(walk *w, uint32_t cell, const char *what)
{
    return tsr_fail(w->err, TSR_EINVAL, "%s: cell \"%s\": %s", w->l->path,
                    w->l->cells[cell].name, what);
}

/* The items' boxes, the cell's box and its index, once every placed cell has them. */
static tsr_status
finish_cell(walk *w, uint32_t ci)
{
    tsr_layout *l = w->l;
    tsr_lay_cell *c = &l->cells[ci];
    cindex *x = c->index;
    size_t n = c->nshapes + c->nrefs;
    if (n > UINT32_MAX - 1)
        return bad_model(w, ci, "more than 2^32 - 2 shapes and placements");
    x->n = (uint32_t)n;
    if (n && !(x->box = malloc(n * sizeof *x->box)))
        return tsr_fail(w->err, TSR_ENOMEM, "%s: out of memory (index)", l->path);
    double cb[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++) {
        double b[4], e[4] = {0, 0, 0, 0};
        uint64_t rep;
        if (i < c->nshapes) {
            const tsr_lay_shape *s = &c->shapes[i];
            shape_box(c, s, b);
            rep = s->rep;
        } else {
            const tsr_lay_ref *r = &c->refs[i - c->nshapes];
            const tsr_lay_cell *ch = &l->cells[r->cell];
            if (!ch->has_box) {
                x->box[i][0] = 1, x->box[i][2] = 0, x->box[i][1] = x->box[i][3] = 0;
                continue;
            }
            lev v = lev_of(&r->xf, 0, 0);
            box_through(&v, ch->box, b, false);
            rep = r->rep;
        }
        if (rep) {
            const tsr_lay_rep *rp = &l->reps[rep - 1];
            if (!rp->n && !rp->count) {
                x->box[i][0] = 1, x->box[i][2] = 0, x->box[i][1] = x->box[i][3] = 0;
                continue;
            }
            rep_extent(l, rp, e);
        }
        for (int k = 0; k < 4; k++)
            b[k] += e[k];
        for (int k = 0; k < 4; k++)
            if (!(fabs(b[k]) <= (double)TSR_LAYOUT_COORD_MAX)) {
                char msg[160];
                snprintf(msg, sizeof msg, "%s %zu reaches %.17g database units, beyond "
                         "+-2^52", i < c->nshapes ? "shape" : "placement",
                         i < c->nshapes ? i : i - c->nshapes, b[k]);
                return bad_model(w, ci, msg);
            }
        x->box[i][0] = down(b[0]), x->box[i][1] = down(b[1]);
        x->box[i][2] = up(b[2]), x->box[i][3] = up(b[3]);
        cb[0] = dmin(cb[0], b[0]), cb[1] = dmin(cb[1], b[1]);
        cb[2] = dmax(cb[2], b[2]), cb[3] = dmax(cb[3], b[3]);
    }
    c->has_box = cb[0] <= cb[2];
    memcpy(c->box, cb, sizeof cb);
    if (n > SCAN && build_tree(x) != TSR_OK)
        return tsr_fail(w->err, TSR_ENOMEM, "%s: out of memory (index)", l->path);
    return TSR_OK;
}

/* Checks what the readers stored (so a reader's slip is an error, not a wild read). */
static tsr_status
check_cell(walk *w, uint32_t ci)
{
    tsr_layout *l = w->l;
    tsr_lay_cell *c = &l->cells[ci];
    char msg[160];
    for (size_t i = 0; i < c->nshapes; i++) {
        const tsr_lay_shape *s = &c->shapes[i];
        uint32_t want = s->kind == TSR_LAY_BOX ? 2 : s->kind == TSR_LAY_CIRCLE ? 1 : 0;
        bool ok = s->kind <= TSR_LAY_CIRCLE && s->first <= c->npts &&
                  s->npts <= c->npts - s->first && (want ? s->npts == want : s->npts >= 3) &&
                  (s->kind != TSR_LAY_CIRCLE || s->r > 0) && s->rep <= l->nreps;
        if (!ok) {
            snprintf(msg, sizeof msg, "shape %zu is malformed (kind %u, %u points)", i,
                     s->kind, s->npts);
            return bad_model(w, ci, msg);
        }
    }
    for (size_t i = 0; i < c->nrefs; i++) {
        const tsr_lay_ref *r = &c->refs[i];
        if (r->cell >= l->ncells || r->rep > l->nreps || !(r->xf.mag > 0) ||
            !isfinite(r->xf.mag) || !isfinite(r->xf.angle)) {
            snprintf(msg, sizeof msg, "placement %zu is malformed", i);
            return bad_model(w, ci, msg);
        }
    }
    return TSR_OK;
}

static tsr_status
check_reps(tsr_layout *l, tsr_error *err)
{
    for (size_t i = 0; i < l->nreps; i++) {
        const tsr_lay_rep *r = &l->reps[i];
        bool ok = r->n ? r->m >= 1 : (r->m == 0 && r->off <= l->ndisp &&
                                       r->count <= l->ndisp - r->off);
        if (!ok)
            return tsr_fail(err, TSR_EINVAL, "%s: repetition %zu is malformed", l->path, i);
    }
    return TSR_OK;
}

/* Depth-first from cell path[d]: cycles, nesting depth, then (children first) boxes and
 * indexes. Recursion stops at TSR_LAYOUT_MAX_DEPTH + 1 levels. */
static tsr_status
dfs(walk *w, int d)
{
    tsr_layout *l = w->l;
    uint32_t ci = w->path[d];
    tsr_lay_cell *c = &l->cells[ci];
    cindex *x = c->index;
    x->state = 1;
    tsr_status st = check_cell(w, ci);
    if (st != TSR_OK)
        return st;
    unsigned height = 0;
    char chain[900];
    for (size_t i = 0; i < c->nrefs; i++) {
        uint32_t ch = c->refs[i].cell;
        cindex *y = l->cells[ch].index;
        y->placed = true;
        if (y->state == 1) {
            int from = d;
            while (w->path[from] != ch)
                from--;
            names(w, from, d, l->cells[ch].name, chain, sizeof chain);
            return tsr_fail(w->err, TSR_EINVAL, "%s: the cells place each other in a cycle: %s",
                            l->path, chain);
        }
        if (y->state == 0) {
            if (d + 1 > TSR_LAYOUT_MAX_DEPTH) {
                names(w, 0, d, l->cells[ch].name, chain, sizeof chain);
                return tsr_fail(w->err, TSR_EINVAL, "%s: placements nested deeper than %d "
                                "levels: %s", l->path, TSR_LAYOUT_MAX_DEPTH, chain);
            }
            w->path[d + 1] = ch;
            if ((st = dfs(w, d + 1)) != TSR_OK)
                return st;
        }
        if (d + 1 + y->height > TSR_LAYOUT_MAX_DEPTH) {
            names(w, 0, d, l->cells[ch].name, chain, sizeof chain);
            return tsr_fail(w->err, TSR_EINVAL, "%s: placements nested deeper than %d levels: "
                            "%s and %u levels below it", l->path, TSR_LAYOUT_MAX_DEPTH, chain,
                            y->height);
        }
        if (y->height + 1u > height)
            height = y->height + 1u;
    }
    x->height = (uint8_t)height;
    if ((st = finish_cell(w, ci)) != TSR_OK)
        return st;
    x->state = 2;
    return TSR_OK;
}

/* Give back what the readers' doubling growth left unused (up to half of the model). */
static void
trim(tsr_lay_cell *c)
{
    if (c->nshapes && c->nshapes < c->capshapes) {
        void *p = realloc(c->shapes, c->nshapes * sizeof *c->shapes);
        if (p)
            c->shapes = p, c->capshapes = c->nshapes;
    }
    if (c->npts && c->npts < c->cappts) {
        void *p = realloc(c->pts, c->npts * sizeof *c->pts);
        if (p)
            c->pts = p, c->cappts = c->npts;
    }
    if (c->nrefs && c->nrefs < c->caprefs) {
        void *p = realloc(c->refs, c->nrefs * sizeof *c->refs);
        if (p)
            c->refs = p, c->caprefs = c->nrefs;
    }
}

tsr_status
tsr_layout_index(tsr_layout *l, tsr_error *err)
{
    if (l->indexed)
        return TSR_OK;
    if (!(l->dbu_m > 0) || !isfinite(l->dbu_m))
        return tsr_fail(err, TSR_EINVAL, "%s: database unit %g m, expected > 0", l->path,
                        l->dbu_m);
    tsr_status st = check_reps(l, err);
    if (st != TSR_OK)
        return st;
    for (size_t i = 0; i < l->ncells; i++) {
        trim(&l->cells[i]);
        tsr_lay_index_free(l->cells[i].index);
        if (!(l->cells[i].index = calloc(1, sizeof(cindex))))
            return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (index)", l->path);
    }
    tsr_lay_cell_find(l, ""); /* makes the name table now: later finds only read */
    walk w = {.l = l, .err = err};
    for (size_t i = 0; i < l->ncells; i++) {
        cindex *x = l->cells[i].index;
        if (x->state)
            continue;
        w.path[0] = (uint32_t)i;
        if ((st = dfs(&w, 0)) != TSR_OK)
            return st;
    }
    l->indexed = true;
    return TSR_OK;
}

/* ---- tops and cells by name ---------------------------------------------------------------- */

size_t
tsr_layout_tops(const tsr_layout *l, uint32_t *out, size_t max)
{
    size_t n = 0;
    if (!l->indexed)
        return 0;
    for (size_t i = 0; i < l->ncells; i++) {
        const cindex *x = l->cells[i].index;
        if (x->placed)
            continue;
        if (out && n < max)
            out[n] = (uint32_t)i;
        n++;
    }
    return n;
}

/* the names of the cells (tops only when `tops`), quoted, shortened to fit */
static void
list_cells(const tsr_layout *l, bool tops, char *out, size_t cap)
{
    size_t used = 0, shown = 0, all = 0;
    out[0] = 0;
    for (size_t i = 0; i < l->ncells; i++) {
        const cindex *x = l->cells[i].index;
        if (tops && x && x->placed)
            continue;
        all++;
        if (used + strlen(l->cells[i].name) + 40 > cap)
            continue;
        used += (size_t)snprintf(out + used, cap - used, "%s\"%s\"", shown ? ", " : "",
                                 l->cells[i].name);
        shown++;
    }
    if (shown < all)
        snprintf(out + used, cap - used, " and %zu more", all - shown);
}

tsr_status
tsr_layout_cell(const tsr_layout *l, const char *name, uint32_t *cell, tsr_error *err)
{
    char list[800];
    if (!l->indexed)
        return tsr_fail(err, TSR_EINVAL, "%s: not indexed", l->path);
    if (name) {
        int64_t k = tsr_lay_cell_find(l, name);
        if (k >= 0) {
            *cell = (uint32_t)k;
            return TSR_OK;
        }
        list_cells(l, false, list, sizeof list);
        return tsr_fail(err, TSR_EINVAL, "%s: no cell named \"%s\"; the cells are %s", l->path,
                        name, l->ncells ? list : "none");
    }
    uint32_t top;
    size_t n = tsr_layout_tops(l, &top, 1);
    if (n == 1) {
        *cell = top;
        return TSR_OK;
    }
    if (n == 0)
        return tsr_fail(err, TSR_EINVAL, "%s: the layout holds no cell", l->path);
    list_cells(l, true, list, sizeof list);
    return tsr_fail(err, TSR_EINVAL, "%s: %zu top cells, name one of %s", l->path, n, list);
}

/* ---- queries ------------------------------------------------------------------------------- */

typedef struct hits {
    uint32_t *id;
    size_t n, cap;
} hits;

typedef struct query {
    const tsr_layout *l;
    double win[4];   /* the query window, in the queried cell's coordinates */
    bool (*want)(void *, uint32_t, uint32_t);
    void *want_ctx;
    tsr_lay_visit visit;
    void *ctx;
    lev lv[TSR_LAYOUT_MAX_DEPTH + 1]; /* placements from the queried cell down */
    hits h[TSR_LAYOUT_MAX_DEPTH + 1]; /* each level's items met */
    double (*pts)[2];
    size_t cappts;
    tsr_status st;
} query;

static bool
meets(const float b[4], const double w[4])
{
    return b[0] <= b[2] && (double)b[0] <= w[2] && (double)b[2] >= w[0] &&
           (double)b[1] <= w[3] && (double)b[3] >= w[1];
}

static bool
hit_add(hits *h, uint32_t id)
{
    if (h->n == h->cap) {
        size_t c = h->cap ? 2 * h->cap : 64;
        uint32_t *p = realloc(h->id, c * sizeof *p);
        if (!p)
            return false;
        h->id = p;
        h->cap = c;
    }
    h->id[h->n++] = id;
    return true;
}

static int
by_id(const void *a, const void *b)
{
    uint32_t p = *(const uint32_t *)a, q = *(const uint32_t *)b;
    return p < q ? -1 : p > q;
}

/* The cell's items whose boxes meet w, in item order, into h. */
static bool
find_items(const cindex *x, const double w[4], hits *h)
{
    h->n = 0;
    if (!x->perm) {
        for (uint32_t i = 0; i < x->n; i++)
            if (meets(x->box[i], w) && !hit_add(h, i))
                return false;
        return true;
    }
    /* depth-first over the tree: a stack of (level, node) */
    struct {
        uint32_t lv, k;
    } stack[MAXLV * FAN + 1];
    int sp = 0;
    stack[sp].lv = x->nlevels, stack[sp++].k = 0;
    while (sp > 0) {
        uint32_t lv = stack[--sp].lv, k = stack[sp].k;
        uint32_t lo = k * FAN, hi = lo + FAN < x->lvn[lv - 1] ? lo + FAN : x->lvn[lv - 1];
        for (uint32_t c = lo; c < hi; c++) {
            if (lv == 1) {
                uint32_t id = x->perm[c];
                if (meets(x->box[id], w) && !hit_add(h, id))
                    return false;
            } else if (meets(x->node[x->lvoff[lv - 1] + c], w)) {
                stack[sp].lv = lv - 1, stack[sp++].k = c;
            }
        }
    }
    if (h->n > 1)
        qsort(h->id, h->n, sizeof *h->id, by_id);
    return true;
}

/* slack for carried windows: they only prune, the exact test comes last */
static void
widen(double w[4])
{
    double m = dmax(dmax(fabs(w[0]), fabs(w[1])), dmax(fabs(w[2]), fabs(w[3])));
    double e = m * 1e-12 + 1e-6;
    w[0] -= e, w[1] -= e, w[2] += e, w[3] += e;
}

/* k with a * k in [lo, hi], intersected into [*k0, *k1] (doubles: the caller clamps) */
static void
slab(double a, double lo, double hi, double *k0, double *k1)
{
    if (a == 0) {
        if (lo > 0 || hi < 0)
            *k0 = 1, *k1 = 0;
        return;
    }
    double p = lo / a, q = hi / a;
    if (a < 0) {
        double t = p;
        p = q, q = t;
    }
    *k0 = dmax(*k0, ceil(p - 1e-9)), *k1 = dmin(*k1, floor(q + 1e-9));
}

/* The rows j of lattice r whose elements i * u + j * v may lie in q (x0, y0, x1, y1). */
static void
rows_of(const tsr_lay_rep *r, const double q[4], double *j0, double *j1)
{
    double ux = (double)r->u[0], uy = (double)r->u[1];
    double vx = (double)r->v[0], vy = (double)r->v[1];
    double det = ux * vy - uy * vx;
    *j0 = 0, *j1 = (double)(r->m - 1);
    if (det != 0) {
        /* the inverse lattice: j = (ux * y - uy * x) / det over the window's corners */
        double lo = INFINITY, hi = -INFINITY;
        for (int k = 0; k < 4; k++) {
            double x = q[k & 1 ? 2 : 0], y = q[k & 2 ? 3 : 1];
            double j = (ux * y - uy * x) / det;
            lo = dmin(lo, j), hi = dmax(hi, j);
        }
        *j0 = dmax(*j0, ceil(lo - 1e-9)), *j1 = dmin(*j1, floor(hi + 1e-9));
        return;
    }
    /* degenerate lattices: j * v within q less any i * u */
    double a = (double)(r->n - 1);
    slab(vx, q[0] - dmax(0, a * ux), q[2] - dmin(0, a * ux), j0, j1);
    slab(vy, q[1] - dmax(0, a * uy), q[3] - dmin(0, a * uy), j0, j1);
}

/* the columns i of row j */
static void
cols_of(const tsr_lay_rep *r, const double q[4], double j, double *i0, double *i1)
{
    double jx = j * (double)r->v[0], jy = j * (double)r->v[1];
    *i0 = 0, *i1 = (double)(r->n - 1);
    slab((double)r->u[0], q[0] - jx, q[2] - jx, i0, i1);
    slab((double)r->u[1], q[1] - jy, q[3] - jy, i0, i1);
}

static void cell_walk(query *qy, uint32_t ci, const double w[4], int d);

/* One shape at displacement (ex, ey) in its cell, through the placements lv[0 .. d). */
static void
emit(query *qy, const tsr_lay_cell *c, const tsr_lay_shape *s, double ex, double ey, int d)
{
    tsr_lay_item it = {.layer = s->layer, .datatype = s->datatype};
    const tsr_lay_pt *p = c->pts + s->first;
    bool flip = false;
    for (int k = 0; k < d; k++)
        flip ^= qy->lv[k].mirror;
    double bb[4];
    if (s->kind == TSR_LAY_CIRCLE) {
        double x = (double)p->x + ex, y = (double)p->y + ey, r = (double)s->r;
        for (int k = d - 1; k >= 0; k--) {
            apply(&qy->lv[k], &x, &y);
            r *= qy->lv[k].mag;
        }
        it.cx = x, it.cy = y, it.r = r;
        bb[0] = x - r, bb[1] = y - r, bb[2] = x + r, bb[3] = y + r;
    } else {
        size_t n = s->kind == TSR_LAY_BOX ? 4 : s->npts;
        if (n > qy->cappts) {
            double(*np)[2] = realloc(qy->pts, n * sizeof *np);
            if (!np) {
                qy->st = TSR_ENOMEM;
                return;
            }
            qy->pts = np;
            qy->cappts = n;
        }
        double(*o)[2] = qy->pts;
        if (s->kind == TSR_LAY_BOX) {
            double x0 = (double)p[0].x, y0 = (double)p[0].y;
            double x1 = (double)p[1].x, y1 = (double)p[1].y;
            double cc[4][2] = {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}};
            for (int k = 0; k < 4; k++) /* a mirror turns the corners clockwise: undo it */
                o[k][0] = cc[flip ? (4 - k) & 3 : k][0], o[k][1] = cc[flip ? (4 - k) & 3 : k][1];
        } else {
            for (size_t k = 0; k < n; k++)
                o[k][0] = (double)p[k].x, o[k][1] = (double)p[k].y;
        }
        bb[0] = bb[1] = INFINITY, bb[2] = bb[3] = -INFINITY;
        for (size_t k = 0; k < n; k++) {
            double x = o[k][0] + ex, y = o[k][1] + ey;
            for (int v = d - 1; v >= 0; v--)
                apply(&qy->lv[v], &x, &y);
            o[k][0] = x, o[k][1] = y;
            bb[0] = dmin(bb[0], x), bb[1] = dmin(bb[1], y);
            bb[2] = dmax(bb[2], x), bb[3] = dmax(bb[3], y);
        }
        it.pts = (const double(*)[2])o;
        it.n = n;
    }
    if (bb[0] > qy->win[2] || bb[2] < qy->win[0] || bb[1] > qy->win[3] || bb[3] < qy->win[1])
        return;
    if (qy->visit(qy->ctx, &it))
        qy->st = TSR_EINTR;
}

/* Every element of repetition `rep` (0: none) of an item of box b (without the repetition)
 * that meets w; for each, at displacement (ex, ey): a shape emitted, or a placement's cell
 * walked. */
static void
each_element(query *qy, uint64_t rep, const double b[4], const double w[4], const tsr_lay_cell *c,
             const tsr_lay_shape *s, const tsr_lay_ref *ref, int d)
{
    const tsr_layout *l = qy->l;
    double q[4] = {w[0] - b[2], w[1] - b[3], w[2] - b[0], w[3] - b[1]}; /* displacements */
    const tsr_lay_rep *r = rep ? &l->reps[rep - 1] : NULL;
    uint64_t n = !r ? 1 : r->n ? r->n * r->m : r->count;
    double j0 = 0, j1 = 0;
    if (r && r->n)
        rows_of(r, q, &j0, &j1);
    else
        j1 = (double)n - 1; /* a list, or no repetition: each element tested */
    /* the placement's own transform, made once (cossin is libm work): each element only adds
     * its displacement, as lev_of would */
    lev base = {0};
    if (ref)
        base = lev_of(&ref->xf, 0, 0);
    for (double j = j0; j <= j1 && qy->st == TSR_OK; j++) {
        double i0 = 0, i1 = 0;
        if (r && r->n)
            cols_of(r, q, j, &i0, &i1);
        for (double i = i0; i <= i1 && qy->st == TSR_OK; i++) {
            double ex = 0, ey = 0;
            if (r && r->n) {
                ex = i * (double)r->u[0] + j * (double)r->v[0];
                ey = i * (double)r->u[1] + j * (double)r->v[1];
            } else if (r) {
                const int64_t *dd = l->disp[r->off + (uint64_t)j];
                ex = (double)dd[0], ey = (double)dd[1];
                if (ex < q[0] || ex > q[2] || ey < q[1] || ey > q[3])
                    continue;
            }
            if (s) {
                if (!qy->want || qy->want(qy->want_ctx, s->layer, s->datatype))
                    emit(qy, c, s, ex, ey, d);
            } else {
                qy->lv[d] = base;
                qy->lv[d].tx = (double)ref->xf.dx + ex;
                qy->lv[d].ty = (double)ref->xf.dy + ey;
                double cw[4];
                box_through(&qy->lv[d], w, cw, true);
                widen(cw);
                cell_walk(qy, ref->cell, cw, d + 1);
            }
        }
    }
}

/* The items of cell ci meeting w (in its coordinates), ci placed through lv[0 .. d). */
static void
cell_walk(query *qy, uint32_t ci, const double w[4], int d)
{
    const tsr_layout *l = qy->l;
    const tsr_lay_cell *c = &l->cells[ci];
    const cindex *x = c->index;
    hits *h = &qy->h[d];
    if (!c->has_box || !find_items(x, w, h)) {
        if (c->has_box)
            qy->st = TSR_ENOMEM;
        return;
    }
    for (size_t k = 0; k < h->n && qy->st == TSR_OK; k++) {
        uint32_t id = h->id[k];
        /* the window cut to the item's box: every range below is finite */
        double cw[4] = {dmax(w[0], x->box[id][0]), dmax(w[1], x->box[id][1]),
                        dmin(w[2], x->box[id][2]), dmin(w[3], x->box[id][3])};
        double b[4];
        if (id < c->nshapes) {
            const tsr_lay_shape *s = &c->shapes[id];
            shape_box(c, s, b);
            each_element(qy, s->rep, b, cw, c, s, NULL, d);
        } else {
            const tsr_lay_ref *r = &c->refs[id - c->nshapes];
            lev v = lev_of(&r->xf, 0, 0);
            box_through(&v, l->cells[r->cell].box, b, false);
            each_element(qy, r->rep, b, cw, c, NULL, r, d);
        }
    }
}

tsr_status
tsr_layout_query(const tsr_layout *l, uint32_t cell, const double win[4],
                 bool (*want)(void *want_ctx, uint32_t layer, uint32_t datatype), void *want_ctx,
                 tsr_lay_visit visit, void *ctx, tsr_error *err)
{
    if (!l->indexed || cell >= l->ncells)
        return tsr_fail(err, TSR_EINVAL, "%s: query of cell %u: %s", l->path, cell,
                        l->indexed ? "no such cell" : "the layout is not indexed");
    if (!(win[0] <= win[2]) || !(win[1] <= win[3]))
        return TSR_OK; /* an empty window (or NaN) meets nothing */
    query *qy = calloc(1, sizeof *qy);
    if (!qy)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (query)", l->path);
    *qy = (query){.l = l, .want = want, .want_ctx = want_ctx, .visit = visit, .ctx = ctx};
    memcpy(qy->win, win, sizeof qy->win);
    double w[4];
    memcpy(w, win, sizeof w);
    cell_walk(qy, cell, w, 0);
    tsr_status st = qy->st;
    for (int k = 0; k <= TSR_LAYOUT_MAX_DEPTH; k++)
        free(qy->h[k].id);
    free(qy->pts);
    free(qy);
    if (st == TSR_ENOMEM)
        return tsr_fail(err, st, "%s: out of memory (query)", l->path);
    if (st == TSR_EINTR)
        return tsr_fail(err, st, "%s: query stopped by its visitor", l->path);
    return TSR_OK;
}

/* ---- statistics ---------------------------------------------------------------------------- */

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t
sat_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t
mult(const tsr_layout *l, uint64_t rep)
{
    if (!rep)
        return 1;
    const tsr_lay_rep *r = &l->reps[rep - 1];
    return r->n ? sat_mul(r->n, r->m) : r->count;
}

/* post-order of the cells under ci (children before parents) into order[*n] */
static void
post_order(const tsr_layout *l, uint32_t ci, uint8_t *seen, uint32_t *order, size_t *n)
{
    seen[ci] = 1;
    const tsr_lay_cell *c = &l->cells[ci];
    for (size_t i = 0; i < c->nrefs; i++)
        if (!seen[c->refs[i].cell])
            post_order(l, c->refs[i].cell, seen, order, n);
    order[(*n)++] = ci;
}

typedef struct lcount {
    uint32_t layer, datatype;
    uint64_t n;
} lcount;

static int
by_layer(const void *a, const void *b)
{
    const lcount *p = a, *q = b;
    if (p->layer != q->layer)
        return p->layer < q->layer ? -1 : 1;
    return p->datatype < q->datatype ? -1 : p->datatype > q->datatype;
}

tsr_status
tsr_layout_get_stats(const tsr_layout *l, uint32_t cell, tsr_layout_stats *st, tsr_error *err)
{
    if (!l->indexed || cell >= l->ncells)
        return tsr_fail(err, TSR_EINVAL, "%s: statistics of cell %u: %s", l->path, cell,
                        l->indexed ? "no such cell" : "the layout is not indexed");
    uint8_t *seen = calloc(l->ncells, 1);
    uint32_t *order = malloc(l->ncells * sizeof *order);
    uint64_t *inst = calloc(l->ncells, sizeof *inst);
    lcount *lc = NULL;
    tsr_layout_stats s = {0};
    if (!seen || !order || !inst)
        goto oom;
    size_t n = 0;
    post_order(l, cell, seen, order, &n);
    inst[cell] = 1;
    size_t nshapes = 0;
    for (size_t k = n; k-- > 0;) {
        const tsr_lay_cell *c = &l->cells[order[k]];
        for (size_t i = 0; i < c->nrefs; i++)
            inst[c->refs[i].cell] = sat_add(inst[c->refs[i].cell],
                                            sat_mul(inst[order[k]], mult(l, c->refs[i].rep)));
        nshapes += c->nshapes;
    }
    s.cells = n;
    if (nshapes && !(lc = malloc(nshapes * sizeof *lc)))
        goto oom;
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        const tsr_lay_cell *c = &l->cells[order[k]];
        uint64_t in = inst[order[k]];
        s.shapes += c->nshapes;
        s.texts = sat_add(s.texts, sat_mul(in, c->ntexts));
        for (size_t i = 0; i < c->nshapes; i++) {
            uint64_t f = sat_mul(in, mult(l, c->shapes[i].rep));
            s.flat_shapes = sat_add(s.flat_shapes, f);
            lc[m++] = (lcount){c->shapes[i].layer, c->shapes[i].datatype, f};
        }
    }
    if (m)
        qsort(lc, m, sizeof *lc, by_layer);
    size_t u = 0;
    for (size_t k = 0; k < m; k++) {
        if (u && lc[u - 1].layer == lc[k].layer && lc[u - 1].datatype == lc[k].datatype)
            lc[u - 1].n = sat_add(lc[u - 1].n, lc[k].n);
        else
            lc[u++] = lc[k];
    }
    if (u) {
        s.layers = malloc(u * sizeof *s.layers);
        if (!s.layers)
            goto oom;
        for (size_t k = 0; k < u; k++)
            s.layers[k] = (struct tsr_layout_layer){lc[k].layer, lc[k].datatype, lc[k].n};
    }
    s.nlayers = u;
    free(seen), free(order), free(inst), free(lc);
    *st = s;
    return TSR_OK;
oom:
    free(seen), free(order), free(inst), free(lc);
    return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (statistics)", l->path);
}

void
tsr_layout_stats_free(tsr_layout_stats *st)
{
    if (!st)
        return;
    free(st->layers);
    st->layers = NULL;
    st->nlayers = 0;
}
