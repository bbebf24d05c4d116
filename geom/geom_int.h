/* geom-private: what geom.c and coverage.c share. */
#ifndef TSR_GEOM_INT_H
#define TSR_GEOM_INT_H

#include "geom/clip.h"
#include "geom/geom.h"

/* Point i of p rounded to 2^-24 px: q[2 i], q[2 i + 1]. TSR_EINVAL naming `set` (a prefix such
 * as "a: ", may be ""), the ring and the point for a coordinate that is not finite or beyond
 * TSR_GEOM_LIMIT. *q is malloc'd (NULL for an empty set), the caller frees it. */
tsr_status
tsr_geom_quantize(const tsr_geom_polys *p, const char *set, int64_t **q, tsr_error *err);

/* The same into o (room for 2 * p->npt values). */
tsr_status
tsr_geom_quantize_into(const tsr_geom_polys *p, const char *set, int64_t *o, tsr_error *err);

/* tsr_geom_edges_build over target rect r (the edges' coordinates, the rows and columns they
 * are kept for) of the blocks that meet `part` only (within r): the edges of those blocks as
 * one build over r gives them, in the same order. How tsr_geom_edges_pieces builds a piece: an
 * edge on a piece's right side still counts for the columns of r beyond it. */
typedef struct tsr_geom_scratch tsr_geom_scratch;

/* A build's buffers, kept by one thread between builds (NULL on out of memory). */
tsr_geom_scratch *
tsr_geom_scratch_new(void);

void
tsr_geom_scratch_free(tsr_geom_scratch *ws);

tsr_status
tsr_geom_edges_build_in(const tsr_geom_polys *p, tsr_rect r, tsr_rect part, tsr_geom_edges *out,
                        tsr_geom_scratch *ws, tsr_error *err);

#endif
