/* geom: the arithmetic of exact-area coverage, once, for the CPU reference (geom/coverage.c)
 * and the GPU kernel (gpu/coverage.cu): gcc and nvcc compile these same lines without fused
 * multiply-add (-ffp-contract=off, --fmad=false), so both give the same bits.
 *
 * The method is the signed-area accumulation of font rasterizers: an oriented edge, cut into
 * the pieces it has in each pixel row and each pixel of that row, adds to its pixel the area
 * of the pixel right of it (times the piece's height, signed by its direction) and the rest
 * of its height to the next pixel; a prefix sum along the row then gives, at every pixel, the
 * area of the pixel inside the closed outline. Every addition is an int64 fixed-point value
 * rounded once here, so the sum is exact and does not depend on the order of the additions:
 * the GPU adds with atomics and still gets the CPU's bits.
 *
 * Edges come from the union of the polygons clipped to one block (geom.h): coordinates are
 * integers, TSR_COV_UNIT per pixel, in [0, TSR_GEOM_BLOCK * TSR_COV_UNIT] from the block's
 * corner; rows and cells here are the block's. Only plain C (floor), no libm beyond it. */
#ifndef TSR_GEOM_COVERAGE_MATH_H
#define TSR_GEOM_COVERAGE_MATH_H

#include <math.h>
#include <stdint.h>

#ifndef TSR_HD
#ifdef __CUDACC__
#define TSR_HD __host__ __device__
#else
#define TSR_HD
#endif
#endif

/* Coordinate units per pixel (2^24): a vertex moves by at most 2^-25 px when rounded, so an
 * area by ~1e-7 px at most, far below a 16-bit step (1.5e-5). */
#define TSR_COV_UNIT_BITS 24
#define TSR_COV_UNIT ((int64_t)1 << TSR_COV_UNIT_BITS)
/* Accumulator units per pixel of area (2^32): y in 2^-32 px times an x fraction. */
#define TSR_COV_ONE_BITS 32

/* One edge of a block's outline: from (x0, y0) to (x1, y1), TSR_COV_UNIT per pixel from the
 * block's corner, which is pixel (bx, by) of the target rect (bx, by may be negative: the
 * block starts left of or above the rect). */
typedef struct tsr_geom_edge {
    int32_t x0, y0, x1, y1;
    int64_t bx, by;
} tsr_geom_edge;

/* Rows [j0, j1) of the block the edge crosses, limited to the target rect's rows 0..h-1
 * (block row j is rect row by + j). Empty (j0 == j1) for a horizontal edge. */
TSR_HD static inline void
tsr_cov_rows(const tsr_geom_edge *e, int64_t h, int64_t *j0, int64_t *j1)
{
    int64_t lo = e->y0 < e->y1 ? e->y0 : e->y1, hi = e->y0 < e->y1 ? e->y1 : e->y0;
    /* coordinates are >= 0: shifts are floors */
    int64_t a = lo >> TSR_COV_UNIT_BITS, b = (hi + TSR_COV_UNIT - 1) >> TSR_COV_UNIT_BITS;
    if (lo == hi)
        b = a;
    if (a < -e->by)
        a = -e->by;
    if (b > h - e->by)
        b = h - e->by;
    *j0 = a;
    *j1 = b > a ? b : a;
}

/* The piece of an edge in one row, top to bottom. */
typedef struct tsr_cov_piece {
    int64_t tx, ty, ux, uy; /* the edge from its top end (tx, ty) to its bottom end (ux, uy) */
    int64_t row;            /* the row's top, units */
    int64_t yt, yb;         /* the piece's top and bottom, 2^-32 px from the row's top */
    double xa, xb;          /* x at the piece's top and bottom, units */
    int64_t c0, c1;         /* the cells it crosses, c0 <= c1 */
    int sign;               /* +1 for an edge going up (y decreasing), -1 going down */
} tsr_cov_piece;

/* Round to nearest (halves up) for |v| < 2^52: v + 0.5 is exact there. */
TSR_HD static inline int64_t
tsr_cov_round(double v)
{
    return (int64_t)floor(v + 0.5);
}

/* x of the edge at height y (units, ty <= y <= uy): exact at both ends. The product is exact
 * in int64 (both factors < 2^31). */
TSR_HD static inline double
tsr_cov_x_at(const tsr_cov_piece *p, int64_t y)
{
    if (y == p->ty)
        return (double)p->tx;
    if (y == p->uy)
        return (double)p->ux;
    return (double)p->tx + (double)((y - p->ty) * (p->ux - p->tx)) / (double)(p->uy - p->ty);
}

/* Piece of edge e in block row j (tsr_cov_rows gave j). */
TSR_HD static inline void
tsr_cov_piece_make(const tsr_geom_edge *e, int64_t j, tsr_cov_piece *p)
{
    if (e->y0 < e->y1) {
        p->tx = e->x0, p->ty = e->y0, p->ux = e->x1, p->uy = e->y1, p->sign = -1;
    } else {
        p->tx = e->x1, p->ty = e->y1, p->ux = e->x0, p->uy = e->y0, p->sign = 1;
    }
    p->row = j * TSR_COV_UNIT;
    int64_t top = p->ty > p->row ? p->ty : p->row;
    int64_t bot = p->uy < p->row + TSR_COV_UNIT ? p->uy : p->row + TSR_COV_UNIT;
    p->yt = (top - p->row) << (TSR_COV_ONE_BITS - TSR_COV_UNIT_BITS);
    p->yb = (bot - p->row) << (TSR_COV_ONE_BITS - TSR_COV_UNIT_BITS);
    p->xa = tsr_cov_x_at(p, top);
    p->xb = tsr_cov_x_at(p, bot);
    double lo = p->xa < p->xb ? p->xa : p->xb, hi = p->xa < p->xb ? p->xb : p->xa;
    p->c0 = (int64_t)floor(lo * (1.0 / (double)TSR_COV_UNIT));
    p->c1 = (int64_t)floor(hi * (1.0 / (double)TSR_COV_UNIT));
    /* a piece that ends exactly on a cell's left side has nothing in that cell */
    if (p->c1 > p->c0 && hi == (double)(p->c1 * TSR_COV_UNIT))
        p->c1--;
}

/* The height (2^-32 px from the row's top) at which the edge crosses the vertical line
 * x = c (pixels), held to the piece. The same value for the two cells that share the line,
 * so a piece's heights over its cells add up to its height exactly. */
TSR_HD static inline int64_t
tsr_cov_y_at(const tsr_cov_piece *p, int64_t c)
{
    int64_t xc = c * TSR_COV_UNIT;
    double y = (double)p->ty +
               (double)((xc - p->tx) * (p->uy - p->ty)) / (double)(p->ux - p->tx);
    int64_t f = tsr_cov_round((y - (double)p->row) *
                              (double)((int64_t)1 << (TSR_COV_ONE_BITS - TSR_COV_UNIT_BITS)));
    return f < p->yt ? p->yt : (f > p->yb ? p->yb : f);
}

/* What the piece adds to cell c (c0 <= c <= c1) and to cell c + 1, in 2^-32 px of area,
 * signed: out[0] + out[1] is the signed height of the piece in the cell. */
TSR_HD static inline void
tsr_cov_cell(const tsr_cov_piece *p, int64_t c, int64_t out[2])
{
    int64_t ylo, yhi;
    if (p->c0 == p->c1) {
        ylo = p->yt, yhi = p->yb;
    } else if (p->xa < p->xb) { /* going right: enters through the left side */
        ylo = c == p->c0 ? p->yt : tsr_cov_y_at(p, c);
        yhi = c == p->c1 ? p->yb : tsr_cov_y_at(p, c + 1);
    } else { /* going left: enters through the right side */
        ylo = c == p->c1 ? p->yt : tsr_cov_y_at(p, c + 1);
        yhi = c == p->c0 ? p->yb : tsr_cov_y_at(p, c);
    }
    double cl = (double)(c * TSR_COV_UNIT), cr = (double)((c + 1) * TSR_COV_UNIT);
    double lo = p->xa < p->xb ? p->xa : p->xb, hi = p->xa < p->xb ? p->xb : p->xa;
    double xl = lo > cl ? lo : cl, xr = hi < cr ? hi : cr;
    /* the part of the cell right of the piece: its mean distance from the right side */
    double f = (cr - 0.5 * (xl + xr)) * (1.0 / (double)TSR_COV_UNIT);
    int64_t dy = yhi - ylo;
    int64_t a = tsr_cov_round((double)dy * f);
    out[0] = p->sign * a;
    out[1] = p->sign * (dy - a);
}

/* A row's prefix sum (2^-32 px) as a coverage in [0, 1]. */
TSR_HD static inline float
tsr_cov_resolve(int64_t sum)
{
    double v = (double)sum * (1.0 / 4294967296.0);
    v = v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0;
    return (float)v;
}

#endif
