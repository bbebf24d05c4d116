/* geom: vector geometry. Polygon sets in double pixel coordinates, boolean operations and
 * offsets on them (Clipper), circles and arcs as polygons, and the exact-area coverage
 * rasterizer that turns a polygon set into the float32 coverage of a pixel rect.
 *
 * Conventions: pixel (i, j) is the square [i, i+1) x [j, j+1); the coverage of a pixel by a
 * polygon set is the area of the pixel's intersection with the union of the polygons under the
 * nonzero winding rule (overlapping shapes count once; a ring wound against its outer ring is
 * a hole), in [0, 1].
 *
 * The coverage is computed in three steps, the last two also on the GPU (gpu/coverage.h):
 *   tsr_geom_edges_build   host: per 64 x 64 block of the plane, the polygons clipped to the
 *                          block and united (Clipper), as oriented integer edges
 *   tsr_geom_accumulate    signed areas per cell into int64 (geom/coverage_math.h)
 *   tsr_geom_resolve       row prefix sums into floats clamped to [0, 1]
 * A pixel's coverage depends only on its block's polygons, never on the rect asked for: any
 * tiling of a region gives the same bits (docs/coverage.md says why blocks).
 *
 * Coordinates: inputs must be finite and within +-TSR_GEOM_LIMIT px of the origin (they are
 * rounded to 2^-24 px and Clipper holds them in int64); the rect too. Functions here are
 * thread-safe on distinct objects. */
#ifndef TSR_GEOM_H
#define TSR_GEOM_H

#include "geom/coverage_math.h"
#include "tiles/tiles.h"

#include <stddef.h>
#include <stdint.h>

/* Side of a block in pixels: blocks are aligned to multiples of it in the plane. */
#define TSR_GEOM_BLOCK 64
/* Largest |coordinate| accepted, pixels (2^37): rounded to 2^-24 px it fits Clipper's range
 * with room for differences. */
#define TSR_GEOM_LIMIT 137438953472.0

typedef struct tsr_geom_pt {
    double x, y;
} tsr_geom_pt;

/* A set of closed rings (polygons, holes wound the other way). Ring k is the points
 * pt[k ? end[k - 1] : 0] .. pt[end[k] - 1]; the last point joins the first. Zero-init or
 * tsr_geom_polys_init, then tsr_geom_polys_free. */
typedef struct tsr_geom_polys {
    tsr_geom_pt *pt;  /* every ring's points, ring after ring */
    size_t npt, cappt;
    size_t *end;      /* one past each ring's last point */
    size_t nring, capring;
} tsr_geom_polys;

void
tsr_geom_polys_init(tsr_geom_polys *p);

void
tsr_geom_polys_free(tsr_geom_polys *p);

/* Empty the set, keeping its memory. */
void
tsr_geom_polys_clear(tsr_geom_polys *p);

/* Append a ring of n points (copied). Rings of fewer than 3 points are kept and cover nothing.
 * TSR_ENOMEM; p unchanged on failure. Coordinates are checked where they are used. */
tsr_status
tsr_geom_polys_add(tsr_geom_polys *p, const tsr_geom_pt *pts, size_t n, tsr_error *err);

/* Append the rectangle [x, x + w] x [y, y + h] (w, h > 0). */
tsr_status
tsr_geom_polys_add_rect(tsr_geom_polys *p, double x, double y, double w, double h,
                        tsr_error *err);

/* ---- circles and arcs ---------------------------------------------------------------------- */

/* Circles are polygons: the vertices lie on the circle, so the polygon is inside it and no
 * point of the circle is farther than `tol` px from the polygon (sagitta r (1 - cos(pi / n))
 * <= tol). The most segments an arc or circle gets; more needs a larger tolerance. */
#define TSR_GEOM_ARC_MAX 65536

/* Segments for an arc of radius r (px) sweeping |sweep| radians within tol px: at least 1 (at
 * least 3 for a whole circle, sweep = 2 pi). TSR_EINVAL (r or tol not > 0 and finite, sweep
 * not finite, or more than TSR_GEOM_ARC_MAX segments). */
tsr_status
tsr_geom_arc_segments(double r, double sweep, double tol, size_t *n, tsr_error *err);

/* The n + 1 points of an arc of n segments: centre (cx, cy), radius r, from angle a0 (radians,
 * from the x axis towards y) sweeping `sweep` (negative: the other way). out has n + 1 points;
 * the first and last are exact functions of a0 and a0 + sweep. */
void
tsr_geom_arc(double cx, double cy, double r, double a0, double sweep, size_t n,
             tsr_geom_pt *out);

/* Append a circle as a ring of tsr_geom_arc_segments(r, 2 pi, tol) points from angle 0,
 * counterclockwise in the plane's (x, y) (clockwise on a y-down screen). */
tsr_status
tsr_geom_polys_add_circle(tsr_geom_polys *p, double cx, double cy, double r, double tol,
                          tsr_error *err);

/* ---- boolean operations and offsets (Clipper) ------------------------------------------------ */

typedef enum tsr_geom_op {
    TSR_GEOM_UNION,
    TSR_GEOM_INTERSECTION,
    TSR_GEOM_DIFFERENCE, /* a less b */
    TSR_GEOM_XOR,
    TSR_GEOM_UNION_EVENODD = 4 /* the union of a and b, each read with the even-odd rule (a
                                * self-crossing polygon as the sampled fill reads it) */
} tsr_geom_op;

/* `out` (replaced; must be neither a nor b) = a op b, each set read with the nonzero rule.
 * The result's rings do not overlap: outer rings and holes, wound opposite ways, vertices on
 * the 2^-24 px grid. b may be NULL (empty). TSR_EINVAL for a coordinate that is not finite or
 * beyond TSR_GEOM_LIMIT (naming the set, ring and point), TSR_ENOMEM; out unchanged then. */
tsr_status
tsr_geom_boolean(tsr_geom_op op, const tsr_geom_polys *a, const tsr_geom_polys *b,
                 tsr_geom_polys *out, tsr_error *err);

typedef enum tsr_geom_join {
    TSR_GEOM_JOIN_ROUND,  /* arcs within the tolerance */
    TSR_GEOM_JOIN_SQUARE, /* corners cut square at distance |delta| */
    TSR_GEOM_JOIN_MITER   /* sharp corners, cut square beyond 2 |delta| */
} tsr_geom_join;

/* `out` (replaced; not a) = the union of a grown by delta px (negative: shrunk), corners joined
 * as `join`; round joins within tol px (tol > 0). Errors as tsr_geom_boolean's, and TSR_EINVAL
 * for delta or tol out of range. */
tsr_status
tsr_geom_offset(const tsr_geom_polys *a, double delta, tsr_geom_join join, double tol,
                tsr_geom_polys *out, tsr_error *err);

/* ---- coverage -------------------------------------------------------------------------------- */

/* The oriented edges of a polygon set's union over a target rect, block by block. The pieces
 * (edge, row) are numbered: edge k's are first[k] .. first[k + 1] - 1, its rows j0 + (piece -
 * first[k]) (tsr_cov_rows), so a GPU thread per piece finds its edge by binary search. */
typedef struct tsr_geom_edges {
    tsr_rect r;          /* the target rect */
    tsr_geom_edge *e;    /* n edges, block-relative */
    uint64_t *first;     /* n + 1 piece offsets; first[n] pieces in all */
    size_t n, cap;
} tsr_geom_edges;

void
tsr_geom_edges_init(tsr_geom_edges *e);

void
tsr_geom_edges_free(tsr_geom_edges *e);

/* The region whose polygons decide r's pixels: r's blocks, grown by the 1 px margin at which
 * polygons are cut. A caller that picks polygons from an index passes every polygon whose
 * bounding box meets this closed rect (more is harmless): then the pixels of r get the bits
 * that any other rect would give them. Fewer can change bits near a block's polygons that do
 * not reach r, at 2^-25 px: Clipper rounds the points where edges cross. */
tsr_rect
tsr_geom_reach(tsr_rect r);

/* Clip the polygons to each TSR_GEOM_BLOCK block that meets r and unite them there (nonzero),
 * into `out` (replaced). Single-threaded. TSR_EINVAL for a coordinate not finite or beyond
 * TSR_GEOM_LIMIT ("geom: ring 3 point 7: x = nan is not finite"), a rect beyond it or with
 * w * h overflowing; TSR_ENOMEM. On failure out is empty. */
tsr_status
tsr_geom_edges_build(const tsr_geom_polys *p, tsr_rect r, tsr_geom_edges *out, tsr_error *err);

/* The host reference of the accumulation: acc (e->r.w * e->r.h int64, row-major) is zeroed and
 * every piece's cell values are added (tsr_cov_cell). */
void
tsr_geom_accumulate(const tsr_geom_edges *e, int64_t *acc);

/* acc's row prefix sums as coverage (tsr_cov_resolve): out is w * h floats. */
void
tsr_geom_resolve(const int64_t *acc, int64_t w, int64_t h, float *out);

/* The three steps on the host: out is r.w * r.h floats. Errors as tsr_geom_edges_build's. */
tsr_status
tsr_geom_coverage(const tsr_geom_polys *p, tsr_rect r, float *out, tsr_error *err);

/* ---- the edges of a large rect in pieces, on a team ------------------------------------------ */

/* A team of threads that runs fn(fctx, worker, k) for every k in [0, n), workers numbered 0 ..
 * threads - 1, and returns when all are done (cpu/'s team, lent by the GPU backend). */
typedef void (*tsr_geom_item_fn)(void *fctx, int worker, size_t k);
typedef struct tsr_geom_team {
    tsr_status (*run)(void *team, size_t n, tsr_geom_item_fn fn, void *fctx, tsr_error *err);
    void *team;
    int threads;
} tsr_geom_team;

/* The polygon sets that decide rect r (every polygon meeting tsr_geom_reach(r)): sets[0 ..
 * nsets) are empty on entry. Called from several threads at once on distinct rects. */
typedef tsr_status (*tsr_geom_make_fn)(void *mctx, tsr_rect r, tsr_geom_polys *sets,
                                       tsr_error *err);

/* Rows of a piece of tsr_geom_edges_pieces (one block row) and its width in blocks. */
#define TSR_GEOM_PIECE_BLOCKS 16

/* out[0 .. nsets) (initialized; each replaced) = the edges of each set over r, made in pieces of one block
 * row by TSR_GEOM_PIECE_BLOCKS blocks, aligned to the plane's blocks, on the team (NULL: this
 * thread): make() for the piece, tsr_geom_edges_build of each set, and the pieces' lists joined
 * in block order. The lists are those one tsr_geom_edges_build over r with every polygon that
 * meets tsr_geom_reach(r) gives, edge for edge: a block's edges depend on its polygons only.
 * The first piece's error is returned (out emptied); TSR_ENOMEM. */
tsr_status
tsr_geom_edges_pieces(tsr_rect r, size_t nsets, tsr_geom_make_fn make, void *mctx,
                      const tsr_geom_team *team, tsr_geom_edges *out, tsr_error *err);

#endif
