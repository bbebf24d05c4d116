/* The arithmetic of the distance trait's GPU kernels (gpu/distance.cu), plain C so that the host
 * test (tests/test_gpu_math.c) runs the same functions and compares them, bit for bit, with the
 * CPU reference nodes/distance.c. TSR_HD is __host__ __device__ under nvcc.
 *
 * The transform is nodes/distance.c's, exact and all integer:
 *   column pass  g(x, y) = the vertical distance to the nearest mask pixel (child > threshold,
 *                a float32 compare) of column x, saturated at dmax: a forward and a backward
 *                scan over a segment of rows, each started dmax rows outside it (a mask pixel
 *                farther away is clamped anyway), so segments are independent work items.
 *   row pass     a(x) = min(dmax^2, min over q of (x - q)^2 + g(q)^2), the q of the halo row
 *                scanned outwards from x and stopped once (x - q)^2 reaches the best a: the
 *                cost follows the real distance, not dmax. Columns are grouped in blocks of
 *                TSR_DM_BLOCK with their least g; a block whose nearest column and least g
 *                cannot beat the best is skipped, so mask-free areas cost dmax / BLOCK steps.
 *   L = table[a], the edge's float32 table.
 * g <= dmax <= 4096 (the device runs distances up to that dmax; beyond it the node is the
 * host's), so g fits int16 and every square and sum the loops form fits int32.
 *
 * The rect read (need()) is the dmax halo of the output, or, where the child's structure says
 * the mask can only be in a smaller box (nodes/distance.c), that box: it may lie anywhere in
 * the halo, so output rows and columns may lie outside it (no mask pixel there). */
#ifndef TSR_GPU_DISTANCE_MATH_H
#define TSR_GPU_DISTANCE_MATH_H

#include "nodes/pointwise.h" /* TSR_HD */

#include <stdint.h>

#define TSR_DM_BLOCK 32 /* columns per block of the row pass' pruning */

/* Rows per column work item: the dmax rows each scan reads outside its segment cost at most
 * twice the segment. */
TSR_HD static inline int64_t
tsr_dm_seg_rows(int64_t dmax)
{
    return dmax > 64 ? dmax : 64;
}

/* One scan step: the distance to the nearest mask pixel seen so far, saturating at dmax
 * (distance.c: vstep). */
TSR_HD static inline int32_t
tsr_dm_step(int32_t prev, float v, float thr, int32_t dmax)
{
    int32_t g = prev + 1 < dmax ? prev + 1 : dmax;
    return v > thr ? 0 : g;
}

/* The step at row i of the nr rows that exist: rows outside [0, nr) hold no mask pixel (the
 * read rect need() gives may be a box where the mask can be, away from the output rows). */
TSR_HD static inline int32_t
tsr_dm_step_at(int32_t prev, const float *col, int64_t stride, int64_t nr, int64_t i, float thr,
               int32_t dmax)
{
    int32_t g = prev + 1 < dmax ? prev + 1 : dmax;
    return i >= 0 && i < nr && col[i * stride] > thr ? 0 : g;
}

/* g after k steps over rows without a mask pixel. */
TSR_HD static inline int32_t
tsr_dm_skip(int32_t g, int64_t k, int32_t dmax)
{
    return k >= dmax - g ? dmax : g + (int32_t)k;
}

/* The column pass over rows [s0, s1) of one column. col[i * stride] is the child value of row
 * i of the nr rows that exist (the read rect's rows); rows outside [0, nr) hold no mask pixel,
 * and [s0, s1) may lie partly or wholly outside. Writes g of row s0 + j to g[j * gstride]. */
TSR_HD static inline void
tsr_dm_column(const float *col, int64_t stride, int64_t nr, int64_t s0, int64_t s1, float thr,
              int32_t dmax, int16_t *g, int64_t gstride)
{
    int32_t up = dmax;
    int64_t a = s0 - dmax > 0 ? s0 - dmax : 0, b = s0 < nr ? s0 : nr;
    for (int64_t i = a; i < b; i++)
        up = tsr_dm_step(up, col[i * stride], thr, dmax);
    if (a < b)
        up = tsr_dm_skip(up, s0 - b, dmax);
    for (int64_t i = s0; i < s1; i++) {
        up = tsr_dm_step_at(up, col, stride, nr, i, thr, dmax);
        g[(i - s0) * gstride] = (int16_t)up;
    }
    int32_t dn = dmax;
    a = s1 > 0 ? s1 : 0, b = s1 + dmax < nr ? s1 + dmax : nr;
    for (int64_t i = b - 1; i >= a; i--)
        dn = tsr_dm_step(dn, col[i * stride], thr, dmax);
    if (a < b)
        dn = tsr_dm_skip(dn, a - s1, dmax);
    for (int64_t i = s1 - 1; i >= s0; i--) {
        dn = tsr_dm_step_at(dn, col, stride, nr, i, thr, dmax);
        int16_t *o = g + (i - s0) * gstride;
        *o = *o < dn ? *o : (int16_t)dn;
    }
}

/* The least of n > 0 values of g (one block of a row). */
TSR_HD static inline int16_t
tsr_dm_block_min(const int16_t *g, int64_t n)
{
    int16_t m = g[0];
    for (int64_t i = 1; i < n; i++)
        m = g[i] < m ? g[i] : m;
    return m;
}

/* a at column i (any, inside the row or not) of a g row of n columns (columns outside hold no
 * mask pixel), by the plain outward scan: the definition the pruned one is tested against. */
TSR_HD static inline int32_t
tsr_dm_row(const int16_t *g, int64_t n, int64_t i, int32_t dmax)
{
    int32_t d2 = dmax * dmax, best = d2;
    if (i >= 0 && i < n) {
        int32_t gi = g[i];
        best = gi * gi < d2 ? gi * gi : d2;
    }
    for (int32_t k = 1; k * k < best; k++) {
        if (i - k >= 0 && i - k < n) {
            int32_t q = g[i - k], t = k * k + q * q;
            best = t < best ? t : best;
        }
        if (i + k >= 0 && i + k < n) {
            int32_t q = g[i + k], t = k * k + q * q;
            best = t < best ? t : best;
        }
    }
    return best;
}

/* min(best, (i - q)^2 + g[q]^2) over the columns q of [q0, q1). */
TSR_HD static inline int32_t
tsr_dm_scan(const int16_t *g, int64_t i, int64_t q0, int64_t q1, int32_t best)
{
    /* 32-bit counters (a row is a chunk's halo wide): the same terms, without the 64-bit
     * compare and increment per column that held pixels_k compute-bound (ncu: 78 % of SMs) */
    const int16_t *p = g + q0;
    const int32_t n = (int32_t)(q1 - q0);
    int32_t d = (int32_t)(q0 - i);
    for (int32_t k = 0; k < n; k++, d++) {
        int32_t v = p[k], t = d * d + v * v;
        best = t < best ? t : best;
    }
    return best;
}

/* a at a column i outside the row (i < 0 or i >= n): the blocks from the nearest one outwards,
 * each read only while its nearest column is closer than sqrt(best) and its least g could beat
 * best, as in tsr_dm_row_blocks. */
TSR_HD static inline int32_t
tsr_dm_row_outside(const int16_t *g, const int16_t *gmin, int64_t n, int64_t i, int32_t dmax)
{
    const int64_t B = TSR_DM_BLOCK, nb = (n + B - 1) / B;
    int32_t best = dmax * dmax;
    for (int64_t s = 0; s < nb; s++) {
        int64_t b = i < 0 ? s : nb - 1 - s;
        int64_t q0 = b * B, q1 = q0 + B < n ? q0 + B : n;
        int64_t k = i < 0 ? q0 - i : i - (q1 - 1); /* the nearest column's offset, > 0 */
        if (k * k >= best)
            break;
        if (k * k + (int64_t)gmin[b] * gmin[b] < best)
            best = tsr_dm_scan(g, i, q0, q1, best);
    }
    return best;
}

/* a at column i, as tsr_dm_row, with the block pruning: gmin[b] is the least g of columns
 * [b BLOCK, b BLOCK + BLOCK) of the row (the last block may be short). A block is read only
 * while its nearest column is closer than sqrt(best), and only if its nearest column with its
 * least g could beat best; every term skipped is >= best, so the result is exact. */
TSR_HD static inline int32_t
tsr_dm_row_blocks(const int16_t *g, const int16_t *gmin, int64_t n, int64_t i, int32_t dmax)
{
    if (i < 0 || i >= n)
        return tsr_dm_row_outside(g, gmin, n, i, dmax);
    const int64_t B = TSR_DM_BLOCK, bi = i / B, nb = (n + B - 1) / B;
    int32_t d2 = dmax * dmax, gi = g[i];
    int32_t best = gi * gi < d2 ? gi * gi : d2;
    best = tsr_dm_scan(g, i, bi * B, (bi + 1) * B < n ? (bi + 1) * B : n, best);
    for (int64_t s = 1; bi - s >= 0 || bi + s < nb; s++) {
        int64_t bl = bi - s, br = bi + s;
        int64_t kl = bl >= 0 ? i - (bl * B + B - 1) : INT32_MAX; /* nearest column's offset */
        int64_t kr = br < nb ? br * B - i : INT32_MAX;
        int64_t k = kl < kr ? kl : kr;
        if (k * k >= best)
            break; /* these blocks and every farther one are no closer than sqrt(best) */
        if (bl >= 0 && kl * kl + (int64_t)gmin[bl] * gmin[bl] < best)
            best = tsr_dm_scan(g, i, bl * B, bl * B + B, best);
        if (br < nb && kr * kr + (int64_t)gmin[br] * gmin[br] < best)
            best = tsr_dm_scan(g, i, br * B, br * B + B < n ? br * B + B : n, best);
    }
    return best;
}

/* ---- work items (one GPU thread each; the host test runs the same) ----------------------------
 * Geometry: the halo rect hr (need(): the covered child rect cr grown by dmax, clipped to the
 * child) and cr. G holds g over hr's hw columns and cr's th rows (int16, row stride hw);
 * gmin the least g of each TSR_DM_BLOCK columns of a G row (nb per row). */

/* Column item (x, sg): G column x (child column hr.x + x), output rows [sg S, sg S + S) of th,
 * S = tsr_dm_seg_rows(dmax). col: the child value at (hr.x + x, hr.y), row stride `stride`;
 * nr = hr.h; oy = cr.y - hr.y. */
TSR_HD static inline void
tsr_dm_column_item(const float *col, int64_t stride, int64_t nr, int64_t oy, int64_t th,
                   float thr, int32_t dmax, int16_t *G, int64_t hw, int64_t x, int64_t sg)
{
    int64_t S = tsr_dm_seg_rows(dmax), j0 = sg * S, j1 = j0 + S < th ? j0 + S : th;
    tsr_dm_column(col, stride, nr, oy + j0, oy + j1, thr, dmax, G + j0 * hw + x, hw);
}

/* Block item (b, y): gmin[y nb + b]. */
TSR_HD static inline void
tsr_dm_block_item(const int16_t *G, int16_t *gmin, int64_t hw, int64_t nb, int64_t b, int64_t y)
{
    int64_t q0 = b * TSR_DM_BLOCK, q1 = q0 + TSR_DM_BLOCK < hw ? q0 + TSR_DM_BLOCK : hw;
    gmin[y * nb + b] = tsr_dm_block_min(G + y * hw + q0, q1 - q0);
}

/* Pixel item (x, y) of cr: L[y tw + x] = table[a]; ox = cr.x - hr.x. */
TSR_HD static inline void
tsr_dm_pixel_item(const int16_t *G, const int16_t *gmin, int64_t hw, int64_t nb, int64_t ox,
                  int32_t dmax, const float *table, float *L, int64_t tw, int64_t x, int64_t y)
{
    int32_t a = tsr_dm_row_blocks(G + y * hw, gmin + y * nb, hw, ox + x, dmax);
    L[y * tw + x] = table[a];
}

#endif
