/* Boolean sources (docs/booleans.md): union, intersection, difference or xor of two lists of
 * operands (shapes, transformed or not, and text, as outlines in the node's pixels), then an offset (a bias: grow or
 * shrink with round, square or mitred corners), all on polygons before anything is rasterized
 * (Clipper, through geom/), so a keep-out or an etch bias is one node and costs no per-pixel
 * layers. The result is drawn as every vector source is (nodes/vector.h): exact area, the same
 * bits on the GPU. */
#include "geom/geom.h"
#include "nodes/nodes.h"
#include "nodes/vector.h"

#include <math.h>
#include <stdlib.h>

tsr_status
tsr_src_boolean_check(const tsr_source *s, tsr_check *c)
{
    (void)s;
    (void)c;
    return TSR_OK;
}

size_t
tsr_src_boolean_scratch(const tsr_source *s, int64_t w)
{
    (void)s;
    return (size_t)(w > 0 ? w : 0) * TSR_GEOM_BLOCK * (sizeof(float) + sizeof(int64_t));
}

void
tsr_src_boolean_render(const tsr_source *s, tsr_rect r, float *px)
{
    tsr_vec_render(s->vec, s->value, s->where, r, px);
}

/* An ellipse (or a circle: rx = ry) as a ring of points on it, counterclockwise in (x, y);
 * reversed for a hole. */
static tsr_status
add_ellipse(tsr_geom_polys *p, double cx, double cy, double rx, double ry, double tol, bool hole,
            tsr_error *err)
{
    size_t n = 0;
    tsr_status st = tsr_geom_arc_segments(rx > ry ? rx : ry, 2 * M_PI, tol, &n, err);
    if (st != TSR_OK)
        return st;
    tsr_geom_pt *pt = malloc((n + 1) * sizeof *pt);
    if (!pt)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    tsr_geom_arc(0, 0, 1, 0, hole ? -2 * M_PI : 2 * M_PI, n, pt);
    for (size_t i = 0; i < n; i++) {
        pt[i].x = cx + rx * pt[i].x;
        pt[i].y = cy + ry * pt[i].y;
    }
    st = tsr_geom_polys_add(p, pt, n, err); /* the last point is the first again */
    free(pt);
    return st;
}

/* A shape operand's rings, appended to p; a transformed one's mapped (nodes/vector.h: a circle
 * or ring about its own centre is a circle of the scaled radius around the moved centre, the
 * rest point by point; an ellipse gets the points its scaled size needs within tol). */
static tsr_status
shape_operand(const tsr_source *o, double tol, tsr_geom_polys *p, tsr_error *err)
{
    bool xf = tsr_shape_transformed(o);
    tsr_xform t = {0};
    if (xf)
        tsr_shape_xform(o, &t);
    double k = xf ? o->scale : 1;
    double cx = xf ? t.ox : o->center[0], cy = xf ? t.oy : o->center[1];
    size_t from = p->npt;
    tsr_status st = TSR_OK;
    switch (o->kind) {
    case TSR_SRC_CIRCLE:
        return add_ellipse(p, cx, cy, o->radius * k, o->radius * k, tol, false, err);
    case TSR_SRC_ELLIPSE:
        st = add_ellipse(p, o->center[0], o->center[1], o->radii[0], o->radii[1], tol / k, false,
                         err);
        break;
    case TSR_SRC_RING: {
        st = add_ellipse(p, cx, cy, o->radii[1] * k, o->radii[1] * k, tol, false, err);
        if (st == TSR_OK && o->radii[0] > 0)
            st = add_ellipse(p, cx, cy, o->radii[0] * k, o->radii[0] * k, tol, true, err);
        return st;
    }
    case TSR_SRC_RECT:
        st = tsr_geom_polys_add_rect(p, o->rect[0], o->rect[1], o->rect[2], o->rect[3], err);
        break;
    default: { /* a polygon */
        tsr_geom_pt *pt = malloc((o->points.n ? o->points.n : 1) * sizeof *pt);
        if (!pt)
            return tsr_fail(err, TSR_ENOMEM, "out of memory");
        for (size_t i = 0; i < o->points.n; i++)
            pt[i] = (tsr_geom_pt){o->points.p[i][0], o->points.p[i][1]};
        st = tsr_geom_polys_add(p, pt, o->points.n, err);
        free(pt);
        break;
    }
    }
    if (st == TSR_OK && xf)
        tsr_xform_polys(&t, p, from);
    return st;
}

tsr_status
tsr_src_boolean_operand(tsr_source *o, double tol, void *pv, tsr_error *err)
{
    tsr_geom_polys *p = pv;
    switch (o->kind) {
    case TSR_SRC_CIRCLE:
    case TSR_SRC_ELLIPSE:
    case TSR_SRC_RING:
    case TSR_SRC_RECT:
    case TSR_SRC_POLYGON: return shape_operand(o, tol, p, err);
    case TSR_SRC_TEXT:
    case TSR_SRC_BOOL_UNION:
    case TSR_SRC_BOOL_INTERSECTION:
    case TSR_SRC_BOOL_DIFFERENCE:
    case TSR_SRC_BOOL_XOR: {
        const tsr_geom_polys *q = o->vec ? tsr_vec_polys(o->vec) : NULL;
        for (size_t k = 0; q && k < q->nring; k++) {
            size_t a = k ? q->end[k - 1] : 0;
            tsr_status st = tsr_geom_polys_add(p, q->pt + a, q->end[k] - a, err);
            if (st != TSR_OK)
                return st;
        }
        return TSR_OK;
    }
    default:
        return tsr_fail(err, TSR_EINVAL, "a %s has no outline: operands are shapes, text and "
                        "booleans", tsr_source_descs[o->kind].disc_value
                                        ? tsr_source_descs[o->kind].disc_value
                                        : tsr_source_descs[o->kind].disc_key);
    }
}

tsr_status
tsr_src_boolean_make(tsr_source *s, void *av, void *bv, tsr_error *err)
{
    tsr_geom_polys *a = av, *b = bv, r, g;
    tsr_geom_polys_init(&r);
    tsr_geom_polys_init(&g);
    tsr_geom_op op = s->kind == TSR_SRC_BOOL_UNION          ? TSR_GEOM_UNION
                     : s->kind == TSR_SRC_BOOL_INTERSECTION ? TSR_GEOM_INTERSECTION
                     : s->kind == TSR_SRC_BOOL_DIFFERENCE   ? TSR_GEOM_DIFFERENCE
                                                            : TSR_GEOM_XOR;
    tsr_status st = tsr_geom_boolean(op, a, b, &r, err);
    if (st == TSR_OK && s->offset != 0) {
        st = tsr_geom_offset(&r, s->offset, (tsr_geom_join)s->join, s->tolerance, &g, err);
        tsr_geom_polys_free(&r);
        r = g;
        tsr_geom_polys_init(&g);
    }
    tsr_geom_polys_free(a);
    tsr_geom_polys_free(b);
    if (st != TSR_OK) {
        tsr_geom_polys_free(&r);
        return st;
    }
    tsr_vec *v = NULL;
    if ((st = tsr_vec_new(&r, &v, err)) != TSR_OK)
        return st;
    tsr_vec_free(s->vec);
    s->vec = v;
    return TSR_OK;
}
