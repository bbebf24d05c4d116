/* rank on the GPU: the minimum, maximum or median of the child over the footprint, one thread
 * per output pixel, bit-identical to nodes/rank.c (docs/format.md §9.3): values are compared as
 * the keys of nodes/rank_math.h, whose minimum, maximum and median are unique, so the scans
 * here and the CPU's van Herk passes and quickselect pick the same value.
 *
 *   min, max   a scan of the footprint's rows (the row half-widths come with the launch).
 *   median     a radix select over the keys, most significant bit first: 32 counting passes
 *              over the window, no per-thread array (a window of a 64 px disc is 12 869 keys),
 *              each pass reading what the one before read, from L1.
 *
 * The child is read through the edge mode like blur's (gpu/blur_math.h: zero, clamp, wrap into
 * the child, then into the child buffer, which holds the bounding box of what need() asked
 * for). L comes from the arena and goes back to it on return. */
#include "gpu/gpu_int.cuh"

extern "C" {
#include "nodes/params.h"
}
#include "gpu/blur_math.h"
#include "nodes/rank_math.h"

#define THREADS 256

/* The footprint: radius and the half-width of each row, passed by value with the launch. */
typedef struct foot {
    int r;
    int op;
    int n; /* pixels in it */
    int half[2 * TSR_RANK_RADIUS_MAX + 1];
} foot;

static __device__ uint32_t
key_at(const tsr_bm_src *s, int64_t x, int64_t y, bool inside)
{
    return tsr_rank_key(inside ? *tsr_bm_at(s, x, y) : tsr_bm_child(s, x, y));
}

static __global__ void
rank_k(tsr_bm_src s, foot f, int64_t cx, int64_t cy, float *L, int64_t tw, int64_t th)
{
    TSR_FOR_PIXELS(tw, th, x, y) {
    const int64_t px = cx + x, py = cy + y, r = f.r;
    const bool inside = tsr_bm_inside(&s, px - r, py - r, px + r, py + r);
    uint32_t out;
    if (f.op != TSR_RANK_MEDIAN) {
        out = f.op == TSR_RANK_MIN ? 0xffffffffu : 0u;
        for (int dy = -f.r; dy <= f.r; dy++) {
            int w = f.half[dy + f.r];
            for (int dx = -w; dx <= w; dx++) {
                uint32_t k = key_at(&s, px + dx, py + dy, inside);
                out = f.op == TSR_RANK_MIN ? (k < out ? k : out) : (k > out ? k : out);
            }
        }
    } else {
        /* the key of rank n / 2: fix bits from the top, counting the window's keys that share
         * the bits fixed so far and have a 0 next */
        uint32_t prefix = 0;
        int64_t k = f.n / 2;
        for (int bit = 31; bit >= 0; bit--) {
            const uint32_t hi_mask = bit == 31 ? 0u : ~((1u << (bit + 1)) - 1u);
            int64_t c = 0;
            for (int dy = -f.r; dy <= f.r; dy++) {
                int w = f.half[dy + f.r];
                for (int dx = -w; dx <= w; dx++) {
                    uint32_t v = key_at(&s, px + dx, py + dy, inside);
                    c += (v & hi_mask) == prefix && !((v >> bit) & 1u);
                }
            }
            if (k >= c) {
                k -= c;
                prefix |= 1u << bit;
            }
        }
        out = prefix;
    }
    L[y * tw + x] = tsr_rank_unkey(out);
    }
}

static tsr_status
launch(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_rect cr, tsr_bm_src s, foot f,
       const tsr_gpu_out *to, tsr_error *err)
{
    float *L = (float *)tsr_gpu_alloc(g, (size_t)cr.w * (size_t)cr.h * sizeof(float), err);
    if (!L)
        return err && err->status != TSR_OK ? err->status : TSR_ENOMEM;
    rank_k<<<tsr_grid2(cr.w, cr.h), THREADS, 0, g->compute>>>(s, f, cr.x, cr.y, L, cr.w, cr.h);
    TSR_LAUNCHED("rank", err);
    return tsr_gpu_blend_rect(g, e, P, cr, L, to, err);
}

extern "C" bool
tsr_gpu_rank_can(const tsr_edge *e)
{
    (void)e;
    return true;
}

extern "C" tsr_status
tsr_gpu_rank(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,
             const tsr_gpu_out *to, tsr_error *err)
{
    const tsr_rank_params *p = (const tsr_rank_params *)e->params;
    const char *where = e->where ? e->where : "rank";
    tsr_rect cr = tsr_edge_covered(e, P.r);
    if (tsr_rect_empty(cr)) /* the layer misses P: P as it is */
        return to ? tsr_gpu_blend_rect(g, e, P, cr, NULL, to, err) : TSR_OK;
    if (p->radius < 1 || p->radius > TSR_RANK_RADIUS_MAX)
        return tsr_fail(err, TSR_EINTERNAL, "%s: gpu rank: radius %lld out of range", where,
                        (long long)p->radius);
    /* every pixel a window reads lies in one of need()'s rects, so in their bounding box */
    tsr_rect need[TSR_NEED_MAX], bb = tsr_rect_make(0, 0, 0, 0);
    size_t nn = e->trait->need(e, P.r, need);
    for (size_t i = 0; i < nn; i++)
        bb = tsr_rect_union(bb, need[i]);
    if (nn == 0 || !tsr_rect_contains(child.r, bb))
        return tsr_fail(err, TSR_EINTERNAL,
                        "%s: gpu rank: the child buffer %lldx%lld+%lld+%lld does not hold "
                        "%lldx%lld+%lld+%lld",
                        where, (long long)child.r.w, (long long)child.r.h, (long long)child.r.x,
                        (long long)child.r.y, (long long)bb.w, (long long)bb.h, (long long)bb.x,
                        (long long)bb.y);
    tsr_bm_src s;
    s.px = child.px;
    s.x0 = child.r.x;
    s.y0 = child.r.y;
    s.stride = child.r.w;
    s.cw = e->child->w;
    s.ch = e->child->h;
    s.edge = p->edge;
    foot f;
    f.r = (int)p->radius;
    f.op = p->op;
    int disc = p->footprint == TSR_RANK_DISC;
    f.n = (int)tsr_rank_count(p->radius, disc);
    for (int dy = -f.r; dy <= f.r; dy++)
        f.half[dy + f.r] = (int)tsr_rank_half(p->radius, disc, dy);
    size_t mark = tsr_gpu_mark(g);
    tsr_status rc = launch(g, e, P, cr, s, f, to, err);
    tsr_gpu_reset(g, mark);
    return rc;
}
