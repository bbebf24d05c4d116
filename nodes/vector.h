/* Vector sources' outlines (text, booleans): a polygon set in the node's pixels, made once when
 * the design is loaded, and drawn per rect with the exact-area coverage (geom/) on the CPU and,
 * through the same per-rect selection and unions, on the GPU (gpu/sources.cu): P = P (1 - c) +
 * v c, as a layout's layer is drawn. */
#ifndef TSR_NODES_VECTOR_H
#define TSR_NODES_VECTOR_H

#include "geom/geom.h"
#include "nodes/nodes.h"

typedef struct tsr_vec tsr_vec;

/* A set of outlines over `p`'s rings, which it takes (p is left empty). TSR_ENOMEM (p freed). */
tsr_status
tsr_vec_new(tsr_geom_polys *p, tsr_vec **out, tsr_error *err);

void
tsr_vec_free(tsr_vec *v);

/* Every ring. */
const tsr_geom_polys *
tsr_vec_polys(const tsr_vec *v);

/* Into out (cleared first): the rings a coverage of rect r needs (those whose boxes meet
 * tsr_geom_reach(r): a pixel's bits never depend on the rect asked for). TSR_ENOMEM. */
tsr_status
tsr_vec_select(const tsr_vec *v, tsr_rect r, tsr_geom_polys *out, tsr_error *err);

/* The outlines' box, px: x0, y0, x1, y1 (empty: x0 > x1). */
void
tsr_vec_bounds(const tsr_vec *v, double b[4]);

/* Draw v over px (rect r of the node) with value `value`; `where` names the source in the one
 * message a failure (out of memory) writes on stderr, leaving the rect as it was. */
void
tsr_vec_render(const tsr_vec *v, float value, const char *where, tsr_rect r, float *px);

/* The same, reporting a failure (TSR_ENOMEM; the rect as it was) instead: what the evaluators
 * call (tsr_source_draw), so a render short of memory fails rather than loses the outlines. */
tsr_status
tsr_vec_draw(const tsr_vec *v, float value, tsr_rect r, float *px, tsr_error *err);

/* ---- shapes placed by a transform (docs/shape-transforms.md) ----------------------------------
 *
 * A shape (rect, polygon, circle, ellipse, ring) with `rotate`, `mirror`, `scale` or `translate`
 * is mirrored left-right, scaled and rotated (counterclockwise as the image is seen) about its
 * centre, then moved by `translate`; its outline is mapped point by point on the host and drawn
 * with its exact coverage, whatever `aa` says (the loader takes only `aa: exact` or none), so
 * the GPU, which accumulates the same rings, gives the same bits. */

/* The map x' = ox + (m[0] (x - px) + m[1] (y - py)), y' = oy + (m[2] (x - px) + m[3] (y - py)),
 * evaluated in that order in double (no fused multiply-add: -ffp-contract=off). */
typedef struct tsr_xform {
    double px, py; /* the pivot: the shape's centre */
    double ox, oy; /* where the pivot goes: pivot + translate */
    double m[4];   /* row-major 2 x 2: scale, rotation, mirror; entries exact 0 and +-scale at
                    * multiples of 90 degrees */
} tsr_xform;

/* Whether shape s is placed by a transform (any of its keys away from the identity). */
bool
tsr_shape_transformed(const tsr_source *s);

/* Whether shape s is drawn with its exact coverage: `aa: exact`, or transformed. */
bool
tsr_shape_exact(const tsr_source *s);

/* s's map (the identity for an untransformed shape). The pivot is the centre of a circle,
 * ellipse or ring, the middle of a rect, the middle of a polygon's box. */
void
tsr_shape_xform(const tsr_source *s, tsr_xform *t);

/* (x, y) through t, in place. */
void
tsr_xform_point(const tsr_xform *t, double *x, double *y);

/* Every point of p from point `from` on through t, in place. */
void
tsr_xform_polys(const tsr_xform *t, tsr_geom_polys *p, size_t from);

#endif
