/* `aa: exact` on the shapes (rect, polygon, circle, ellipse, ring): each pixel takes the exact
 * area of its intersection with the shape (geom/'s coverage rasterizer), blended as a sampled
 * shape's count is, P = P (1 - c) + value c, beside the n x n sampling of nodes/sources.c.
 * Curves are polygons with their vertices on the curve, within EXACT_TOL px of it (or the
 * tolerance that fits TSR_GEOM_ARC_MAX segments, for very large curves); a polygon keeps the
 * even-odd rule of its sampled fill (Clipper unites it under that rule first). The GPU builds
 * the same polygons on the host and accumulates on the device (gpu/sources.cu): the same bits.
 * A shape placed by a transform (nodes/vector.h) is drawn here too, its rings mapped. */
#include "nodes/layout_src.h"
#include "nodes/vector.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A curve's polygon is within this many pixels of it: a 16-bit step of an edge pixel's area
 * is 1.5e-5 px^2. */
#define EXACT_TOL 1e-6

/* The most a shape may reach from the origin with `aa: exact`, px: the rasterizer's range with
 * room for its 64 px blocks. */
#define EXACT_REACH 68719476736.0 /* 2^36 */

static double
tol_for(double r, size_t *n)
{
    double tol = EXACT_TOL;
    tsr_error e;
    while (tsr_geom_arc_segments(r, 2 * M_PI, tol, n, &e) != TSR_OK && tol < r)
        tol *= 2;
    return tol;
}

/* An ellipse (rx, ry) around (cx, cy), counterclockwise in (x, y), or clockwise when `hole`;
 * as many points as the ellipse scaled by k needs (a transformed shape's). */
static tsr_status
add_ellipse(tsr_geom_polys *p, double cx, double cy, double rx, double ry, int hole, double k,
            tsr_error *err)
{
    size_t n = 0;
    tol_for((rx > ry ? rx : ry) * k, &n);
    if (n < 3)
        n = 3;
    tsr_geom_pt *pts = malloc(n * sizeof *pts);
    if (!pts)
        return tsr_fail(err, TSR_ENOMEM, "aa exact: out of memory");
    for (size_t k = 0; k < n; k++) {
        double t = 2 * M_PI * (double)k / (double)n;
        pts[hole ? n - 1 - k : k] = (tsr_geom_pt){cx + rx * cos(t), cy + ry * sin(t)};
    }
    tsr_status st = tsr_geom_polys_add(p, pts, n, err);
    free(pts);
    return st;
}

/* The shape's rings, before a polygon's even-odd union; a transformed shape's mapped
 * (docs/shape-transforms.md): a circle's or ring's as a circle of the scaled radius around the
 * moved centre (its pivot: a turn or a mirror changes nothing), the others point by point. */
static tsr_status
shape_rings(const tsr_source *s, tsr_geom_polys *out, tsr_error *err)
{
    bool xf = tsr_shape_transformed(s);
    tsr_xform t = {0};
    if (xf)
        tsr_shape_xform(s, &t);
    double k = xf ? s->scale : 1;
    double cx = xf ? t.ox : s->center[0], cy = xf ? t.oy : s->center[1];
    tsr_status st = TSR_OK;
    switch (s->kind) {
    case TSR_SRC_RECT:
        st = tsr_geom_polys_add_rect(out, s->rect[0], s->rect[1], s->rect[2], s->rect[3], err);
        break;
    case TSR_SRC_CIRCLE: {
        size_t n;
        double tol = tol_for(s->radius * k, &n);
        return tsr_geom_polys_add_circle(out, cx, cy, s->radius * k, tol, err);
    }
    case TSR_SRC_ELLIPSE:
        st = add_ellipse(out, s->center[0], s->center[1], s->radii[0], s->radii[1], 0, k, err);
        break;
    case TSR_SRC_RING: {
        double r0 = s->radii[0] * k, r1 = s->radii[1] * k;
        st = add_ellipse(out, cx, cy, r1, r1, 0, 1, err);
        if (st == TSR_OK && s->radii[0] > 0) /* the hole, wound the other way */
            st = add_ellipse(out, cx, cy, r0, r0, 1, 1, err);
        return st;
    }
    case TSR_SRC_POLYGON:
        st = tsr_geom_polys_add(out, (const tsr_geom_pt *)s->points.p, s->points.n, err);
        break;
    default: return TSR_OK;
    }
    if (st == TSR_OK && xf)
        tsr_xform_polys(&t, out, 0);
    return st;
}

/* What a shape's rings depend on: a cache made for one set of them serves a source only when
 * all are equal (a repeat's per-copy copy of a source shares the pointer, not the radius). */
typedef struct shape_key {
    int kind;
    bool mirror;
    double center[2], radius, radii[2], rect[4], rotate, scale, translate[2];
    const void *pts;
    size_t npts;
} shape_key;

typedef struct shape_cache {
    shape_key key;
    tsr_geom_polys rings;
} shape_cache;

static void
key_of(const tsr_source *s, shape_key *k)
{
    memset(k, 0, sizeof *k); /* padding too: keys compare by their bytes */
    k->kind = (int)s->kind;
    k->mirror = s->mirror;
    memcpy(k->center, s->center, sizeof k->center);
    k->radius = s->radius;
    memcpy(k->radii, s->radii, sizeof k->radii);
    memcpy(k->rect, s->rect, sizeof k->rect);
    k->rotate = s->rotate;
    k->scale = s->scale;
    memcpy(k->translate, s->translate, sizeof k->translate);
    k->pts = s->points.p;
    k->npts = s->points.n;
}

/* s's cached rings, or NULL when it has none for its parameters. */
static const tsr_geom_polys *
cached(const tsr_source *s)
{
    const shape_cache *c = s->exact;
    if (!c)
        return NULL;
    shape_key k;
    key_of(s, &k);
    return memcmp(&k, &c->key, sizeof k) == 0 ? &c->rings : NULL;
}

static tsr_status
make_polys(const tsr_source *s, tsr_geom_polys *out, tsr_error *err)
{
    tsr_geom_polys_clear(out);
    switch (s->kind) {
    case TSR_SRC_RECT:
    case TSR_SRC_CIRCLE:
    case TSR_SRC_ELLIPSE:
    case TSR_SRC_RING: return shape_rings(s, out, err);
    case TSR_SRC_POLYGON: {
        tsr_geom_polys raw;
        tsr_geom_polys_init(&raw);
        tsr_status st = shape_rings(s, &raw, err);
        if (st == TSR_OK)
            st = tsr_geom_boolean(TSR_GEOM_UNION_EVENODD, &raw, NULL, out, err);
        tsr_geom_polys_free(&raw);
        return st;
    }
    default: return TSR_OK;
    }
}

tsr_status
tsr_src_shape_polys(const tsr_source *s, tsr_geom_polys *out, tsr_error *err)
{
    const tsr_geom_polys *c = cached(s);
    if (!c)
        return make_polys(s, out, err);
    tsr_geom_polys_clear(out);
    for (size_t k = 0, at = 0; k < c->nring; at = c->end[k++]) {
        tsr_status st = tsr_geom_polys_add(out, c->pt + at, c->end[k] - at, err);
        if (st != TSR_OK)
            return st;
    }
    return TSR_OK;
}

tsr_status
tsr_src_shape_prepare(tsr_source *s, tsr_error *err)
{
    if (s->kind > TSR_SRC_POLYGON || !tsr_shape_exact(s) || s->exact)
        return TSR_OK;
    shape_cache *c = calloc(1, sizeof *c);
    if (!c)
        return tsr_fail(err, TSR_ENOMEM, "aa exact: out of memory");
    key_of(s, &c->key);
    tsr_geom_polys_init(&c->rings);
    s->exact = c;
    tsr_status st = make_polys(s, &c->rings, err);
    if (st != TSR_OK)
        tsr_src_shape_release(s);
    return st;
}

void
tsr_src_shape_release(tsr_source *s)
{
    shape_cache *c = s->exact;
    if (c) {
        tsr_geom_polys_free(&c->rings);
        free(c);
    }
    s->exact = NULL;
}

int64_t
tsr_src_shape_bytes(const tsr_source *s)
{
    const shape_cache *c = s->exact;
    return c ? (int64_t)(sizeof *c + c->rings.cappt * sizeof *c->rings.pt +
                         c->rings.capring * sizeof *c->rings.end)
             : 0;
}

bool
tsr_src_shape_exact_fits(const tsr_source *s, double x0, double y0, double x1, double y1)
{
    (void)s;
    return fabs(x0) <= EXACT_REACH && fabs(x1) <= EXACT_REACH && fabs(y0) <= EXACT_REACH &&
           fabs(y1) <= EXACT_REACH;
}

tsr_status
tsr_src_shape_exact(const tsr_source *s, tsr_rect box, tsr_rect r, float *px, tsr_error *err)
{
    if (tsr_rect_empty(box))
        return TSR_OK;
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    float *cov = malloc((size_t)box.w * (size_t)box.h * sizeof *cov);
    const tsr_geom_polys *use = cached(s); /* read where they are: no copy */
    tsr_status st = !cov ? tsr_fail(err, TSR_ENOMEM, "aa exact: out of memory")
                    : use ? TSR_OK
                          : make_polys(s, &p, err);
    if (st == TSR_OK)
        st = tsr_geom_coverage(use ? use : &p, box, cov, err);
    for (int64_t y = 0; st == TSR_OK && y < box.h; y++) {
        float *row = px + (box.y + y - r.y) * r.w + (box.x - r.x);
        const float *c = cov + y * box.w;
        for (int64_t x = 0; x < box.w; x++)
            row[x] = tsr_src_layout_mix(row[x], c[x], s->value);
    }
    tsr_geom_polys_free(&p);
    free(cov);
    return st;
}
