/* The text source's pieces the GPU launcher shares with the CPU (nodes/text_src.c,
 * gpu/vector.cu): the rings a rect needs, in the node's pixel coordinates. */
#ifndef TSR_NODES_TEXT_SRC_H
#define TSR_NODES_TEXT_SRC_H

#include "geom/geom.h"
#include "nodes/nodes.h"

/* Into out (cleared first): the text's rings that a coverage of rect r needs (those whose
 * boxes meet tsr_geom_reach(r)). An unopened source gives an empty set. TSR_ENOMEM;
 * thread-safe. */
tsr_status
tsr_src_text_polys(const tsr_source *s, tsr_rect r, tsr_geom_polys *out, tsr_error *err);

/* The outlines' box, px: x0, y0, x1, y1 (empty: x0 > x1). */
void
tsr_src_text_bounds(const tsr_source *s, double b[4]);

#endif
