/* `aa: exact` on the shapes (rect, polygon, circle, ellipse, ring): each pixel takes the exact
 * area of its intersection with the shape (geom/'s coverage rasterizer), blended as a sampled
 * shape's count is, P = P (1 - c) + value c, beside the n x n sampling of nodes/sources.c.
 * Curves are polygons with their vertices on the curve, within EXACT_TOL px of it (or the
 * tolerance that fits TSR_GEOM_ARC_MAX segments, for very large curves); a polygon keeps the
 * even-odd rule of its sampled fill (Clipper unites it under that rule first). The GPU builds
 * the same polygons on the host and accumulates on the device (gpu/sources.cu): the same bits. */
#include "nodes/layout_src.h"

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

/* An ellipse (rx, ry) around (cx, cy), counterclockwise in (x, y), or clockwise when `hole`. */
static tsr_status
add_ellipse(tsr_geom_polys *p, double cx, double cy, double rx, double ry, int hole,
            tsr_error *err)
{
    size_t n = 0;
    tol_for(rx > ry ? rx : ry, &n);
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

tsr_status
tsr_src_shape_polys(const tsr_source *s, tsr_geom_polys *out, tsr_error *err)
{
    tsr_geom_polys_clear(out);
    switch (s->kind) {
    case TSR_SRC_RECT:
        return tsr_geom_polys_add_rect(out, s->rect[0], s->rect[1], s->rect[2], s->rect[3], err);
    case TSR_SRC_CIRCLE: {
        size_t n;
        double tol = tol_for(s->radius, &n);
        return tsr_geom_polys_add_circle(out, s->center[0], s->center[1], s->radius, tol, err);
    }
    case TSR_SRC_ELLIPSE:
        return add_ellipse(out, s->center[0], s->center[1], s->radii[0], s->radii[1], 0, err);
    case TSR_SRC_RING: {
        tsr_status st =
            add_ellipse(out, s->center[0], s->center[1], s->radii[1], s->radii[1], 0, err);
        if (st == TSR_OK && s->radii[0] > 0) /* the hole, wound the other way */
            st = add_ellipse(out, s->center[0], s->center[1], s->radii[0], s->radii[0], 1, err);
        return st;
    }
    case TSR_SRC_POLYGON: {
        tsr_geom_polys raw;
        tsr_geom_polys_init(&raw);
        tsr_status st = tsr_geom_polys_add(&raw, (const tsr_geom_pt *)s->points.p, s->points.n,
                                           err);
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
