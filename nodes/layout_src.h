/* The layout source's pieces that the GPU launcher shares with the CPU (nodes/layout_src.c,
 * gpu/sources.cu): the polygons a rect needs, per table entry, in pixel coordinates, and the
 * blend of one entry's coverage, compiled alike by gcc and nvcc (no fused multiply-add), so
 * both backends give the same bits. */
#ifndef TSR_NODES_LAYOUT_SRC_H
#define TSR_NODES_LAYOUT_SRC_H

#include "geom/geom.h"
#include "nodes/nodes.h"

/* Into polys[0 .. s->layers.n) (each cleared first; zero-initialised or tsr_geom_polys_init
 * sets, the caller frees them): the shapes of each table entry's layer that a coverage of rect
 * r needs (those meeting tsr_geom_reach(r)), mapped into the node's pixels. An unopened source
 * gives empty sets. TSR_ENOMEM; thread-safe. */
tsr_status
tsr_src_layout_polys(const tsr_source *s, tsr_rect r, tsr_geom_polys *polys, tsr_error *err);

/* `aa: exact` shapes (nodes/exact.c). polys: shape s (rect, polygon, circle, ellipse, ring)
 * as rings in pixels (replacing out's), a polygon already united under its even-odd rule.
 * exact: s drawn over the pixels of `box` (inside r, px holding r) with its exact coverage.
 * exact_fits: whether a shape whose bounds are [x0, x1] x [y0, y1] px is in the range that
 * exact coverage takes (the loader refuses it otherwise). TSR_ENOMEM. */
tsr_status
tsr_src_shape_polys(const tsr_source *s, tsr_geom_polys *out, tsr_error *err);
/* prepare: make s's rings once (s->exact) when s is drawn by exact coverage, so a tile or a
 * GPU piece copies them instead of making them again (a large circle is 65536 points, each a
 * cos and a sin); nothing for other sources. release: free them (tsr_source_free does). */
tsr_status
tsr_src_shape_prepare(tsr_source *s, tsr_error *err);
void
tsr_src_shape_release(tsr_source *s);
/* Bytes s->exact holds (the memory plan counts them with the design). */
int64_t
tsr_src_shape_bytes(const tsr_source *s);
tsr_status
tsr_src_shape_exact(const tsr_source *s, tsr_rect box, tsr_rect r, float *px, tsr_error *err);
bool
tsr_src_shape_exact_fits(const tsr_source *s, double x0, double y0, double x1, double y1);

/* P drawn over by value v with coverage c in [0, 1]: P (1 - c) + v c in double, rounded once;
 * P itself where c is 0. */
TSR_HD static inline float
tsr_src_layout_mix(float P, float c, float v)
{
    if (!(c > 0.0f))
        return P;
    double cd = (double)c;
    return (float)((double)P * (1.0 - cd) + (double)v * cd);
}

#endif
