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

#endif
