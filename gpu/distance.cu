/* distance on the GPU: nodes/distance.c's exact separable transform, three launches per call,
 * over the rect need() reads: the dmax halo, or the box where the child's mask can be (a seed
 * far from the output: the output's rows and columns then lie partly or wholly outside it).
 * The arithmetic of every thread is a work item of gpu/distance_math.h, which
 * tests/test_gpu_math.c runs on the host against the CPU reference.
 *
 *   columns  one thread per (halo column, segment of max(64, dmax) output rows): forward and
 *            backward scans started dmax rows outside the segment; int16 g into G (halo
 *            columns x output rows). Neighbouring columns in neighbouring threads: coalesced.
 *   blocks   one thread per 32 columns of a G row: their least g (the pruning bound).
 *   pixels   one thread per output pixel: the outward scan over G's row with block pruning,
 *            then L = table[a] (the edge's float32 table, uploaded once).
 * Then L, which covers exactly the covered child rect, is blended into P. The scratch (G, the
 * block minima, L) comes from the arena and goes back to it on return. */
#include "gpu/gpu_int.cuh"
#include "gpu/distance_math.h"

#define THREADS 256
/* launches: tsr_grid2 and TSR_FOR_PIXELS (gpu_int.cuh) */
#define FOR_XY(nx, ny) TSR_FOR_PIXELS((nx), (ny), x, y)

/* x = the halo column, y = the segment */
static __global__ void
columns_k(const float *col, int64_t stride, int64_t nr, int64_t oy, int64_t th, float thr,
          int32_t dmax, int16_t *G, int64_t hw, int64_t nseg)
{
    FOR_XY(hw, nseg)
    tsr_dm_column_item(col + x, stride, nr, oy, th, thr, dmax, G, hw, x, y);
}

static __global__ void
blocks_k(const int16_t *G, int16_t *gmin, int64_t hw, int64_t nb, int64_t th)
{
    FOR_XY(nb, th)
    tsr_dm_block_item(G, gmin, hw, nb, x, y);
}

static __global__ void
pixels_k(const int16_t *G, const int16_t *gmin, int64_t hw, int64_t nb, int64_t ox, int32_t dmax,
         const float *table, float *L, int64_t tw, int64_t th)
{
    FOR_XY(tw, th)
    tsr_dm_pixel_item(G, gmin, hw, nb, ox, dmax, table, L, tw, x, y);
}

/* The status a NULL from tsr_gpu_alloc / tsr_gpu_resident filled in. */
static tsr_status
failed(const tsr_error *err)
{
    return err && err->status != TSR_OK ? err->status : TSR_ENOMEM;
}

static tsr_status
distance(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child, tsr_rect cr,
         tsr_rect hr, const tsr_gpu_out *to, tsr_error *err)
{
    const tsr_distance_params *p = (const tsr_distance_params *)e->params;
    const tsr_distance_state *st = (const tsr_distance_state *)e->state;
    const int32_t dmax = (int32_t)p->dmax;
    const int64_t tw = cr.w, th = cr.h, hw = hr.w, nb = (hw + TSR_DM_BLOCK - 1) / TSR_DM_BLOCK;
    const int64_t nseg = (th + tsr_dm_seg_rows(dmax) - 1) / tsr_dm_seg_rows(dmax);

    const float *table =
        (const float *)tsr_gpu_resident(g, st->table, (size_t)st->ntable * sizeof(float), err);
    if (!table)
        return failed(err);
    int16_t *G = (int16_t *)tsr_gpu_alloc(g, (size_t)hw * (size_t)th * sizeof(int16_t), err);
    if (!G)
        return failed(err);
    int16_t *gmin = (int16_t *)tsr_gpu_alloc(g, (size_t)nb * (size_t)th * sizeof(int16_t), err);
    if (!gmin)
        return failed(err);
    float *L = (float *)tsr_gpu_alloc(g, (size_t)tw * (size_t)th * sizeof(float), err);
    if (!L)
        return failed(err);

    /* the child at (hr.x, hr.y) */
    const float *col = child.px + (hr.y - child.r.y) * child.r.w + (hr.x - child.r.x);
    columns_k<<<tsr_grid2(hw, nseg), THREADS, 0, g->compute>>>(col, child.r.w, hr.h, cr.y - hr.y, th,
                                                           p->threshold, dmax, G, hw, nseg);
    TSR_LAUNCHED("distance columns", err);
    blocks_k<<<tsr_grid2(nb, th), THREADS, 0, g->compute>>>(G, gmin, hw, nb, th);
    TSR_LAUNCHED("distance blocks", err);
    pixels_k<<<tsr_grid2(tw, th), THREADS, 0, g->compute>>>(G, gmin, hw, nb, cr.x - hr.x, dmax, table,
                                                        L, tw, th);
    TSR_LAUNCHED("distance rows", err);
    return tsr_gpu_blend_rect(g, e, P, cr, L, to, err);
}

/* Edges up to dmax 4096 run on the device, whose int16/int32 arithmetic and whole table hold
 * that far; a larger dmax (a lens across a plate, read sparsely: nodes/distance.c) is the
 * host's: the CPU computes the node over the rect and uploads it, the same bits. */
extern "C" bool
tsr_gpu_distance_can(const tsr_edge *e)
{
    const tsr_distance_params *p = (const tsr_distance_params *)e->params;
    return p->dmax >= 1 && p->dmax <= 4096;
}

extern "C" tsr_status
tsr_gpu_distance(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,
                 const tsr_gpu_out *to, tsr_error *err)
{
    const tsr_distance_params *p = (const tsr_distance_params *)e->params;
    const tsr_distance_state *st = (const tsr_distance_state *)e->state;
    const char *where = e->where ? e->where : "distance";
    tsr_rect cr = tsr_edge_covered(e, P.r);
    if (tsr_rect_empty(cr)) /* the layer misses P: P as it is */
        return to ? tsr_gpu_blend_rect(g, e, P, cr, NULL, to, err) : TSR_OK;
    if (!st || st->ntable != p->dmax * p->dmax + 1 || p->dmax < 1 || p->dmax > 4096)
        return tsr_fail(err, TSR_EINTERNAL, "%s: gpu distance: the edge was not prepared", where);
    tsr_rect hr;
    if (e->trait->need(e, P.r, &hr) != 1 || !tsr_rect_contains(child.r, hr))
        return tsr_fail(err, TSR_EINTERNAL,
                        "%s: gpu distance: the child buffer %lldx%lld+%lld+%lld does not hold "
                        "the halo %lldx%lld+%lld+%lld",
                        where, (long long)child.r.w, (long long)child.r.h, (long long)child.r.x,
                        (long long)child.r.y, (long long)hr.w, (long long)hr.h, (long long)hr.x,
                        (long long)hr.y);
    size_t mark = tsr_gpu_mark(g);
    tsr_status rc = distance(g, e, P, child, cr, hr, to, err);
    tsr_gpu_reset(g, mark);
    return rc;
}
