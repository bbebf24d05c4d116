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

tsr_status
tsr_src_shape_polys(const tsr_source *s, tsr_geom_polys *out, tsr_error *err)
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
    tsr_status st = cov ? tsr_src_shape_polys(s, &p, err)
                        : tsr_fail(err, TSR_ENOMEM, "aa exact: out of memory");
    if (st == TSR_OK)
        st = tsr_geom_coverage(&p, box, cov, err);
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
