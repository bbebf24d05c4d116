/* geom: the coverage rasterizer's host side: the union of the polygons block by block (the
 * edges), the reference accumulation and the resolve. The arithmetic of a piece is
 * geom/coverage_math.h's, shared with the GPU. */
#include "geom/geom_int.h"

#include <stdlib.h>
#include <string.h>

#define B TSR_GEOM_BLOCK
#define U TSR_COV_UNIT
/* Polygons are cut a pixel outside the block before Clipper cuts them at its sides: the cut's
 * rounded points lie outside the block, where they move nothing we keep. */
#define MARGIN 1

void
tsr_geom_edges_init(tsr_geom_edges *e)
{
    memset(e, 0, sizeof *e);
}

void
tsr_geom_edges_free(tsr_geom_edges *e)
{
    free(e->e);
    free(e->first);
    tsr_geom_edges_init(e);
}

/* ---- Sutherland-Hodgman on the integer grid -------------------------------------------------- */

/* floor(n / d), d > 0 */
static __int128
floor_div128(__int128 n, __int128 d)
{
    __int128 q = n / d;
    return (n % d != 0 && n < 0) ? q - 1 : q;
}

/* The point where p -> q crosses the line axis = v (0: x, 1: y), the other coordinate rounded
 * half up from its exact value, so the same whichever way the edge runs. */
static void
cross(const int64_t *p, const int64_t *q, int axis, int64_t v, int64_t *o)
{
    int b = 1 - axis;
    __int128 num = (__int128)(v - p[axis]) * (q[b] - p[b]), den = q[axis] - p[axis];
    if (den < 0)
        num = -num, den = -den;
    o[axis] = v;
    o[b] = p[b] + (int64_t)floor_div128(2 * num + den, 2 * den);
}

/* Keep the part of ring in (n points) on side `keep_ge` (1: axis >= v, 0: axis <= v) into out
 * (room for 2 n points); returns the count. */
static size_t
clip_side(const int64_t *in, size_t n, int axis, int64_t v, int keep_ge, int64_t *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t *p = in + 2 * (i ? i - 1 : n - 1), *q = in + 2 * i;
        int pin = keep_ge ? p[axis] >= v : p[axis] <= v;
        int qin = keep_ge ? q[axis] >= v : q[axis] <= v;
        if (pin != qin) {
            cross(p, q, axis, v, out + 2 * m);
            m++;
        }
        if (qin) {
            out[2 * m] = q[0], out[2 * m + 1] = q[1];
            m++;
        }
    }
    return m;
}

/* A convex ring (no self-crossing, turning one way once) needs no union of its own: it can skip
 * Clipper when it is alone. Collinear and repeated points are fine. */
static int
convex(const int64_t *p, size_t n)
{
    int sign = 0, xflips = 0, yflips = 0, xs = 0, ys = 0;
    for (size_t i = 0, i1 = 1 % n, i2 = 2 % n; i < n; i++) {
        const int64_t *a = p + 2 * i, *b = p + 2 * i1, *c = p + 2 * i2;
        i1 = i1 + 1 == n ? 0 : i1 + 1, i2 = i2 + 1 == n ? 0 : i2 + 1;
        int64_t dx = b[0] - a[0], dy = b[1] - a[1], ex = c[0] - b[0], ey = c[1] - b[1];
        __int128 z = (__int128)dx * ey - (__int128)dy * ex;
        int zs = (z > 0) - (z < 0), sx = (dx > 0) - (dx < 0), sy = (dy > 0) - (dy < 0);
        if (zs && sign && zs != sign)
            return 0;
        sign = zs ? zs : sign;
        if (sx && xs && sx != xs)
            xflips++;
        if (sy && ys && sy != ys)
            yflips++;
        xs = sx ? sx : xs, ys = sy ? sy : ys;
    }
    return xflips <= 2 && yflips <= 2;
}

/* Twice the ring's signed area, in the sign of Clipper's outer rings (positive: covers). */
static __int128
area2(const int64_t *p, size_t n)
{
    __int128 a = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t *u = p + 2 * i, *v = p + 2 * ((i + 1) % n);
        a += (__int128)u[0] * v[1] - (__int128)v[0] * u[1];
    }
    return a;
}

/* ---- the blocks ------------------------------------------------------------------------------ */

/* A ring's bounding box on the grid, for binning and the canonical order. */
typedef struct ring {
    int64_t x0, y0, x1, y1;
    size_t at, n; /* its points in the quantized array */
    int convex;   /* convex(): -1 until a block asks */
} ring;

/* The polygons of a block in an order of their own (bounding box, size, points), so the
 * block's union, and with it every bit of its pixels, does not depend on the order in which
 * the caller listed them. */
static int
ring_cmp(const void *a, const void *b, void *ctx)
{
    const ring *p = *(const ring *const *)a, *q = *(const ring *const *)b;
    const int64_t *pts = ctx;
    int64_t u[5] = {p->y0, p->x0, p->y1, p->x1, (int64_t)p->n};
    int64_t v[5] = {q->y0, q->x0, q->y1, q->x1, (int64_t)q->n};
    for (int i = 0; i < 5; i++)
        if (u[i] != v[i])
            return u[i] < v[i] ? -1 : 1;
    /* bytes, not numbers: any total order will do; equal rings are interchangeable */
    int c = memcmp(pts + 2 * p->at, pts + 2 * q->at, 2 * p->n * sizeof *pts);
    return (c > 0) - (c < 0);
}

/* A ring cut to a block row's slab (cy +- cut): the row's blocks share it, so a ring that spans
 * many blocks of the row is cut at the row's sides once, and each block cuts only the slab's
 * points at its own sides. */
typedef struct slab {
    int64_t row;      /* the block row it was cut for (INT64_MIN: none yet) */
    size_t at, n;     /* its points in work.sp */
    int64_t x0, x1;   /* their x range */
} slab;

typedef struct work {
    const ring *rings; /* the build's rings: slab k (x2) is ring k's */
    slab *sl;          /* [2 * nring]: per ring, cut at the block's side and at the margin */
    int64_t *sp;       /* the current row's slab points */
    size_t nsp, capsp;
    int64_t slab_row;  /* the row sp holds */
    int64_t *a, *b; /* two clip buffers */
    size_t cap;     /* points each holds */
    int64_t *xy[2]; /* the block's clipped rings: [0] for Clipper, [1] added as they are */
    size_t *end[2];
    size_t capxy[2], capend[2];
    size_t *group;  /* per ring of the block: union-find parents, the order, group ends */
    size_t capgroup;
} work;

static int
reserve(void **p, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < want) {
        if (c > SIZE_MAX / 2 / size)
            return -1;
        c *= 2;
    }
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Room for n points in both clip buffers (they keep their contents). */
static int
ab_room(work *w, size_t n)
{
    if (n <= w->cap)
        return 0;
    if (n > SIZE_MAX / 4 / sizeof *w->a)
        return -1;
    size_t c = 2 * n;
    int64_t *a = realloc(w->a, c * 2 * sizeof *a);
    if (a)
        w->a = a;
    int64_t *b = a ? realloc(w->b, c * 2 * sizeof *b) : NULL;
    if (!b)
        return -1;
    w->b = b;
    w->cap = c;
    return 0;
}

static tsr_status
push_edges(tsr_geom_edges *out, const tsr_clip_set *s, int64_t bx, int64_t by, tsr_error *err)
{
    tsr_rect r = out->r;
    size_t at = 0;
    for (size_t k = 0; k < s->nring; k++) {
        size_t a = at, n = s->end[k] - at;
        at = s->end[k];
        for (size_t i = 0; i < n; i++) {
            const int64_t *p = s->xy + 2 * (a + i);
            const int64_t *q = s->xy + 2 * (a + (i + 1 == n ? 0 : i + 1));
            if (p[1] == q[1])
                continue; /* horizontal: no height, nothing to add */
            tsr_geom_edge e = {(int32_t)(p[0] + B / 2 * U), (int32_t)(p[1] + B / 2 * U),
                               (int32_t)(q[0] + B / 2 * U), (int32_t)(q[1] + B / 2 * U), bx, by};
            int64_t j0, j1, xmin = e.x0 < e.x1 ? e.x0 : e.x1;
            tsr_cov_rows(&e, r.h, &j0, &j1);
            if (j0 == j1 || bx + (xmin >> TSR_COV_UNIT_BITS) >= r.w)
                continue; /* outside the rect's rows, or right of it: adds to no pixel */
            if (out->n == out->cap) {
                size_t c = out->cap ? 2 * out->cap : 1024;
                tsr_geom_edge *ne = realloc(out->e, c * sizeof *ne);
                if (ne)
                    out->e = ne;
                uint64_t *nf = ne ? realloc(out->first, (c + 1) * sizeof *nf) : NULL;
                if (!nf)
                    return tsr_fail(err, TSR_ENOMEM, "geom: no memory for %zu edges", c);
                out->first = nf;
                out->cap = c;
            }
            out->first[out->n + 1] = out->first[out->n] + (uint64_t)(j1 - j0);
            out->e[out->n++] = e;
        }
    }
    return TSR_OK;
}

/* Ring g cut to the slab cy +- cut of block row `row` (kind 0: cut at the block's sides, 1: at
 * the margin), made on the row's first ask: *out its points (absolute), NULL when the ring lies
 * within the slab (its own points serve). -1: no memory. The cut is translation-exact (cross()
 * uses differences), so cutting in absolute units here and at the block's x sides later is
 * cutting the ring moved to the block's centre. */
static int
row_slab(work *w, const int64_t *q, const ring *g, int kind, int64_t row, int64_t cy, int64_t cut,
         const slab **out)
{
    *out = NULL;
    if (g->y0 >= cy - cut && g->y1 <= cy + cut)
        return 0;
    if (w->slab_row != row) { /* a new row: the old row's slabs are done with */
        w->slab_row = row;
        w->nsp = 0;
    }
    slab *s = &w->sl[2 * (size_t)(g - w->rings) + (size_t)kind];
    if (s->row != row) {
        size_t n = g->n;
        if (ab_room(w, 2 * n))
            return -1;
        memcpy(w->a, q + 2 * g->at, 2 * n * sizeof *q);
        /* a side's cut keeps the points on its side and adds one per crossing: at most twice
         * as many */
        n = clip_side(w->a, n, 1, cy - cut, 1, w->b);
        if (ab_room(w, 2 * n))
            return -1;
        n = n ? clip_side(w->b, n, 1, cy + cut, 0, w->a) : 0;
        if (n > SIZE_MAX / 2 - w->nsp ||
            reserve((void **)&w->sp, &w->capsp, 2 * (w->nsp + n), sizeof *w->sp))
            return -1;
        if (n) /* an empty slab may meet an empty buffer: no copy from or to NULL */
            memcpy(w->sp + 2 * w->nsp, w->a, 2 * n * sizeof *w->a);
        s->row = row, s->at = w->nsp, s->n = n;
        s->x0 = INT64_MAX, s->x1 = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            int64_t x = w->a[2 * i];
            s->x0 = x < s->x0 ? x : s->x0, s->x1 = x > s->x1 ? x : s->x1;
        }
        w->nsp += n;
    }
    *out = s;
    return 0;
}

/* Ring g moved to the block's centre and cut at +-cut (units), first to its block row's slab
 * (shared by the row: row_slab), then at the block's x sides, into w->a or w->b: returns the
 * buffer, *n its points. NULL: no memory. */
static const int64_t *
cut_ring(work *w, const int64_t *q, const ring *g, int kind, int64_t row, int64_t cx, int64_t cy,
         int64_t cut, size_t *np)
{
    const slab *s;
    if (row_slab(w, q, g, kind, row, cy, cut, &s))
        return NULL;
    const int64_t *src = s ? w->sp + 2 * s->at : q + 2 * g->at;
    size_t n = s ? s->n : g->n;
    int64_t x0 = s ? s->x0 : g->x0, x1 = s ? s->x1 : g->x1;
    if (ab_room(w, 2 * n))
        return NULL;
    for (size_t i = 0; i < n; i++) {
        w->a[2 * i] = src[2 * i] - cx;
        w->a[2 * i + 1] = src[2 * i + 1] - cy;
    }
    if (n && (x0 - cx < -cut || x1 - cx > cut)) {
        /* as row_slab's cuts, on the other axis */
        n = clip_side(w->a, n, 0, -cut, 1, w->b);
        if (ab_room(w, 2 * n))
            return NULL;
        n = n ? clip_side(w->b, n, 0, cut, 0, w->a) : 0;
    }
    *np = n;
    return w->a;
}

/* Append ring (n points at p) to set d of the work, reversed when `flip`. -1: no memory. */
static int
append(work *w, int d, size_t *npt, size_t *nring, const int64_t *p, size_t n, int flip)
{
    if (reserve((void **)&w->xy[d], &w->capxy[d], 2 * (*npt + n), sizeof *w->xy[d]) ||
        reserve((void **)&w->end[d], &w->capend[d], *nring + 1, sizeof *w->end[d]))
        return -1;
    int64_t *to = w->xy[d] + 2 * *npt;
    if (!flip) {
        memcpy(to, p, 2 * n * sizeof *p);
    } else {
        for (size_t i = 0; i < n; i++)
            to[2 * i] = p[2 * (n - 1 - i)], to[2 * i + 1] = p[2 * (n - 1 - i) + 1];
    }
    *npt += n;
    w->end[d][(*nring)++] = *npt;
    return 0;
}

static size_t
find(size_t *parent, size_t k)
{
    while (parent[k] != k)
        k = parent[k] = parent[parent[k]];
    return k;
}

/* The union of the rings rs[0..nr) within block (gx, gy) (block units), appended to out.
 *
 * Rings whose boxes (closed, cut to the grown block) meet are grouped (union-find over a sweep
 * down the block: rs is sorted by top); groups cannot overlap each other, so the block's union
 * is the groups' unions side by side. A group of one convex ring is that ring itself, added as
 * it is (cut at the block's sides, wound to cover); every other group goes to Clipper on its
 * own, which keeps Clipper's sweep narrow in a dense block (its cost grows with the edges
 * active at once). Groups and their order depend on the block's rings only. */
static tsr_status
do_block(tsr_geom_edges *out, const int64_t *q, ring **rs, size_t nr, int64_t gx, int64_t gy,
         work *w, tsr_error *err)
{
    int64_t cx = (gx * B + B / 2) * U, cy = (gy * B + B / 2) * U; /* the block's centre */
    int64_t lim = (B / 2 + MARGIN) * U, edge = B / 2 * U;
    int64_t bx = gx * B - out->r.x, by = gy * B - out->r.y;
    if (nr > SIZE_MAX / 3 || reserve((void **)&w->group, &w->capgroup, 3 * nr, sizeof(size_t)))
        goto nomem;
    size_t *parent = w->group, *order = parent + nr, *start = order + nr;
    for (size_t k = 0; k < nr; k++)
        parent[k] = k;
    for (size_t k = 0; k < nr; k++) {
        const ring *g = rs[k];
        int64_t gx0 = g->x0 - cx < -lim ? cx - lim : g->x0;
        int64_t gx1 = g->x1 - cx > lim ? cx + lim : g->x1;
        int64_t gy1 = g->y1 - cy > lim ? cy + lim : g->y1;
        for (size_t i = k + 1; i < nr && rs[i]->y0 <= gy1; i++) {
            const ring *h = rs[i];
            int64_t hx0 = h->x0 - cx < -lim ? cx - lim : h->x0;
            int64_t hx1 = h->x1 - cx > lim ? cx + lim : h->x1;
            if (hx0 <= gx1 && gx0 <= hx1) {
                size_t a = find(parent, k), b = find(parent, i);
                if (a != b) /* the smaller index is the root: an order of its own */
                    parent[a > b ? a : b] = a < b ? a : b;
            }
        }
    }
    /* members by group (counting sort on the root), groups in the order of their roots */
    memset(start, 0, nr * sizeof *start);
    for (size_t k = 0; k < nr; k++)
        start[parent[k] = find(parent, k)]++;
    for (size_t k = 0, at = 0; k < nr; k++) {
        size_t c = start[k];
        start[k] = at;
        at += c;
    }
    for (size_t k = 0; k < nr; k++)
        order[start[parent[k]]++] = k;
    /* start[r] is now the end of group r */
    size_t npt1 = 0, nring1 = 0;
    int64_t h = B / 2 * U;
    int64_t box[8] = {-h, -h, h, -h, h, h, -h, h};
    size_t boxend = 4;
    tsr_status st = TSR_OK;
    for (size_t at = 0; at < nr && st == TSR_OK;) {
        size_t root = order[at], stop = start[root], n;
        ring *one = rs[root];
        if (stop - at == 1 && one->convex < 0)
            one->convex = convex(q + 2 * one->at, one->n);
        if (stop - at == 1 && one->convex) {
            const int64_t *p = cut_ring(w, q, one, 0, gy, cx, cy, edge, &n);
            if (!p)
                goto nomem;
            __int128 a2 = n >= 3 ? area2(p, n) : 0;
            if (a2 != 0 && append(w, 1, &npt1, &nring1, p, n, a2 < 0))
                goto nomem;
            at = stop;
            continue;
        }
        size_t npt0 = 0, nring0 = 0;
        for (; at < stop; at++) {
            const int64_t *p = cut_ring(w, q, rs[order[at]], 1, gy, cx, cy, lim, &n);
            if (!p)
                goto nomem;
            if (n >= 3 && append(w, 0, &npt0, &nring0, p, n, 0))
                goto nomem;
        }
        if (nring0 == 0)
            continue;
        tsr_clip_set sub = {w->xy[0], npt0, w->end[0], nring0};
        tsr_clip_set clip = {box, 4, &boxend, 1}, res;
        char msg[200] = "";
        int rc = tsr_clip_execute(1, &sub, &clip, &res, msg, sizeof msg);
        if (rc == TSR_CLIP_NOMEM)
            goto nomem;
        if (rc != TSR_CLIP_OK)
            return tsr_fail(err, TSR_EIO, "geom: block %lld,%lld: %s", (long long)gx,
                            (long long)gy, msg);
        st = push_edges(out, &res, bx, by, err);
        tsr_clip_set_free(&res);
    }
    if (st == TSR_OK && nring1) {
        tsr_clip_set direct = {w->xy[1], npt1, w->end[1], nring1};
        st = push_edges(out, &direct, bx, by, err);
    }
    return st;
nomem:
    return tsr_fail(err, TSR_ENOMEM, "geom: no memory for block %lld,%lld", (long long)gx,
                    (long long)gy);
}

tsr_rect
tsr_geom_reach(tsr_rect r)
{
    if (tsr_rect_empty(r))
        return r;
    int64_t x0 = tsr_floor_div(r.x, B) * B, y0 = tsr_floor_div(r.y, B) * B;
    int64_t x1 = (tsr_floor_div(r.x + r.w - 1, B) + 1) * B;
    int64_t y1 = (tsr_floor_div(r.y + r.h - 1, B) + 1) * B;
    return tsr_rect_make(x0 - MARGIN, y0 - MARGIN, x1 - x0 + 2 * MARGIN, y1 - y0 + 2 * MARGIN);
}

/* What a build allocates, kept by one thread between builds (tsr_geom_edges_pieces' workers):
 * its buffers grow and are reused, so a build takes no heap lock once they are large enough. */
struct tsr_geom_scratch {
    work w;
    int64_t *q;      /* quantized points */
    size_t capq;
    ring *rings;
    size_t caprings;
    size_t *cnt;     /* per block: rings binned */
    size_t capcnt;
    ring **bin;
    size_t capbin;
    size_t capsl;
};

tsr_geom_scratch *
tsr_geom_scratch_new(void)
{
    return calloc(1, sizeof(tsr_geom_scratch));
}

/* Free the buffers ws holds (not ws itself). */
static void
scratch_release(tsr_geom_scratch *ws)
{
    work *w = &ws->w;
    free(w->a), free(w->b), free(w->xy[0]), free(w->xy[1]), free(w->end[0]), free(w->end[1]);
    free(w->sl), free(w->sp), free(w->group);
    free(ws->q), free(ws->rings), free(ws->cnt), free(ws->bin);
}

void
tsr_geom_scratch_free(tsr_geom_scratch *ws)
{
    if (!ws)
        return;
    scratch_release(ws);
    free(ws);
}

tsr_status
tsr_geom_edges_build(const tsr_geom_polys *p, tsr_rect r, tsr_geom_edges *out, tsr_error *err)
{
    return tsr_geom_edges_build_in(p, r, r, out, NULL, err);
}

tsr_status
tsr_geom_edges_build_in(const tsr_geom_polys *p, tsr_rect r, tsr_rect part, tsr_geom_edges *out,
                        tsr_geom_scratch *keep, tsr_error *err)
{
    out->n = 0;
    out->r = r;
    if (!out->first && !(out->first = calloc(1, sizeof *out->first)))
        return tsr_fail(err, TSR_ENOMEM, "geom: no memory for an edge list");
    out->first[0] = 0;
    const int64_t L = (int64_t)1 << 37;
    int64_t x1, y1, area;
    if (r.w < 0 || r.h < 0 || r.x < -L || r.y < -L || !tsr_add_checked(r.x, r.w, &x1) ||
        !tsr_add_checked(r.y, r.h, &y1) || x1 > L || y1 > L || !tsr_mul_checked(r.w, r.h, &area))
        return tsr_fail(err, TSR_EINVAL,
                        "geom: rect %lld,%lld %lldx%lld: must lie within +-2^37 px",
                        (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h);
    part = tsr_rect_intersect(part, r);
    if (tsr_rect_empty(part) || p->nring == 0)
        return TSR_OK;
    tsr_geom_scratch own = {0}, *ws = keep ? keep : &own;
    tsr_status st = TSR_OK;
    /* the blocks that meet the part; a ring is binned into those its box, grown by the margin,
     * meets */
    int64_t gx0 = tsr_floor_div(part.x, B), gx1 = tsr_floor_div(part.x + part.w - 1, B);
    int64_t gy0 = tsr_floor_div(part.y, B), gy1 = tsr_floor_div(part.y + part.h - 1, B);
    size_t nbx = (size_t)(gx1 - gx0 + 1), nby = (size_t)(gy1 - gy0 + 1), nb = nbx * nby;
    if (p->npt > SIZE_MAX / 2 || p->nring > SIZE_MAX / 2 || nb > SIZE_MAX - 1 ||
        reserve((void **)&ws->q, &ws->capq, 2 * p->npt, sizeof *ws->q) ||
        reserve((void **)&ws->rings, &ws->caprings, p->nring, sizeof *ws->rings) ||
        reserve((void **)&ws->cnt, &ws->capcnt, nb + 1, sizeof *ws->cnt) ||
        reserve((void **)&ws->w.sl, &ws->capsl, 2 * p->nring, sizeof *ws->w.sl))
        goto nomem;
    if ((st = tsr_geom_quantize_into(p, "", ws->q, err)) != TSR_OK)
        goto done;
    const int64_t *q = ws->q;
    ring *rings = ws->rings;
    size_t *cnt = ws->cnt;
    memset(cnt, 0, (nb + 1) * sizeof *cnt);
    work *w = &ws->w;
    w->rings = rings;
    w->slab_row = INT64_MIN;
    w->nsp = 0;
    for (size_t k = 0; k < 2 * p->nring; k++)
        w->sl[k].row = INT64_MIN;
    ring **bin = NULL;
    for (int pass = 0; pass < 2; pass++) {
        size_t at = 0;
        for (size_t k = 0; k < p->nring; k++) {
            ring *g = &rings[k];
            g->at = at;
            g->n = p->end[k] - at;
            g->convex = -1;
            at = p->end[k];
            if (g->n < 3)
                continue;
            if (pass == 0) {
                g->x0 = g->x1 = q[2 * g->at], g->y0 = g->y1 = q[2 * g->at + 1];
                for (size_t i = 1; i < g->n; i++) {
                    int64_t x = q[2 * (g->at + i)], y = q[2 * (g->at + i) + 1];
                    g->x0 = x < g->x0 ? x : g->x0, g->x1 = x > g->x1 ? x : g->x1;
                    g->y0 = y < g->y0 ? y : g->y0, g->y1 = y > g->y1 ? y : g->y1;
                }
            }
            int64_t bu = B * U, m = MARGIN * U;
            int64_t a0 = tsr_floor_div(g->x0 - m - 1, bu), a1 = tsr_floor_div(g->x1 + m, bu);
            int64_t b0 = tsr_floor_div(g->y0 - m - 1, bu), b1 = tsr_floor_div(g->y1 + m, bu);
            a0 = a0 < gx0 ? gx0 : a0, a1 = a1 > gx1 ? gx1 : a1;
            b0 = b0 < gy0 ? gy0 : b0, b1 = b1 > gy1 ? gy1 : b1;
            for (int64_t by = b0; by <= b1; by++)
                for (int64_t bx = a0; bx <= a1; bx++) {
                    size_t i = (size_t)(by - gy0) * nbx + (size_t)(bx - gx0);
                    if (pass == 0)
                        cnt[i + 1]++;
                    else
                        bin[cnt[i]++] = g;
                }
        }
        if (pass == 0) {
            for (size_t i = 0; i < nb; i++)
                cnt[i + 1] += cnt[i];
            if (reserve((void **)&ws->bin, &ws->capbin, cnt[nb] ? cnt[nb] : 1, sizeof *ws->bin))
                goto nomem;
            bin = ws->bin;
        }
    }
    /* pass 1 advanced cnt[i] to the end of bin i, the start of bin i + 1 */
    for (size_t i = 0; i < nb && st == TSR_OK; i++) {
        size_t a = i ? cnt[i - 1] : 0, n = cnt[i] - a;
        if (n == 0)
            continue;
        qsort_r(bin + a, n, sizeof *bin, ring_cmp, (void *)q);
        st = do_block(out, q, bin + a, n, gx0 + (int64_t)(i % nbx), gy0 + (int64_t)(i / nbx),
                      w, err);
    }
    goto done;
nomem:
    st = tsr_fail(err, TSR_ENOMEM, "geom: no memory for %zu rings over %zu blocks", p->nring, nb);
done:
    if (ws == &own)
        scratch_release(&own);
    if (st != TSR_OK)
        out->n = 0;
    return st;
}

/* ---- accumulate and resolve ------------------------------------------------------------------ */

void
tsr_geom_accumulate(const tsr_geom_edges *e, int64_t *acc)
{
    int64_t w = e->r.w, h = e->r.h;
    if (w <= 0 || h <= 0)
        return;
    memset(acc, 0, (size_t)w * (size_t)h * sizeof *acc);
    for (size_t k = 0; k < e->n; k++) {
        const tsr_geom_edge *g = &e->e[k];
        int64_t j0, j1;
        tsr_cov_rows(g, h, &j0, &j1);
        for (int64_t j = j0; j < j1; j++) {
            tsr_cov_piece pc;
            tsr_cov_piece_make(g, j, &pc);
            int64_t *row = acc + (g->by + j) * w;
            for (int64_t c = pc.c0; c <= pc.c1; c++) {
                int64_t v[2], x = g->bx + c;
                tsr_cov_cell(&pc, c, v);
                /* cells left of the rect add to its first: the row's prefix sums from there
                 * on are the same */
                if (x < w)
                    row[x < 0 ? 0 : x] += v[0];
                if (x + 1 < w)
                    row[x + 1 < 0 ? 0 : x + 1] += v[1];
            }
        }
    }
}

void
tsr_geom_resolve(const int64_t *acc, int64_t w, int64_t h, float *out)
{
    for (int64_t y = 0; y < h; y++) {
        int64_t s = 0;
        for (int64_t x = 0; x < w; x++) {
            s += acc[y * w + x];
            out[y * w + x] = tsr_cov_resolve(s);
        }
    }
}

tsr_status
tsr_geom_coverage(const tsr_geom_polys *p, tsr_rect r, float *out, tsr_error *err)
{
    tsr_geom_edges e;
    tsr_geom_edges_init(&e);
    tsr_status st = tsr_geom_edges_build(p, r, &e, err);
    if (st == TSR_OK && !tsr_rect_empty(r)) {
        /* edges_build checked r.w * r.h in int64 */
        uint64_t cells = (uint64_t)r.w * (uint64_t)r.h;
        int64_t *acc = cells <= SIZE_MAX / sizeof *acc ? malloc(cells * sizeof *acc) : NULL;
        if (!acc) {
            st = tsr_fail(err, TSR_ENOMEM, "geom: no memory for %lldx%lld accumulators",
                          (long long)r.w, (long long)r.h);
        } else {
            tsr_geom_accumulate(&e, acc);
            tsr_geom_resolve(acc, r.w, r.h, out);
            free(acc);
        }
    }
    tsr_geom_edges_free(&e);
    return st;
}
