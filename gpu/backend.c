/* The GPU backend: plain C that decides what the device computes (gpu/ executes it).
 *
 * A band is cut into root chunks of at most CHUNK_PX pixels. A chunk is computed by walking
 * the design from the root: a node over rect R gets a device buffer from the arena, its base
 * (fill and source) is one launch, then each edge asks its trait what child rects it needs
 * (need(), the same function the CPU uses), computes the child over the bounding box of those
 * (recursively, into the arena above), and launches the trait's kernel, which computes the
 * layer and blends it in. Nothing recurses on the device; the arena is reset after each edge,
 * so a chunk holds one path of the DAG at a time. The root's chunk is converted to samples on
 * the device, into the band's device buffer at its place in output order (rows flipped for
 * bands written bottom-up), and after the last chunk the band goes to the host in one
 * contiguous copy, into the writer's own (pinned) buffer, on the copy stream: while band k is
 * copied and written, band k + 1 computes. Up to DEPTH bands are in flight.
 *
 * Storage classes, decided when the backend opens (`tessera check --tree` prints them):
 * - periodic: a node whose period engine/plan.c found; its period tile is computed once by
 *   the CPU reference, uploaded, and read modulo the period. A periodic root streams by the
 *   host's row copies (engine.c), as on the CPU: those bytes are made in host memory.
 * - device: computed on the device as above.
 * - resident: a small node (up to RESIDENT_PX, RESIDENT_BYTES in all): computed once on the
 *   device, whole, and kept; readers get the whole node.
 * - host: a node the device cannot yet compute (a repeat lattice the CPU walks in a reduced
 *   basis with an order-dependent overlap), or should not (a polygon of many points, which
 *   the CPU fills by scanline): computed by the CPU reference over the rect and uploaded.
 *   Same bits; slower for the first kind.
 * - cached (beside device or host): a node whose pixels several chunks read (through a blur's
 *   or a distance's halo, a repeat of the whole node, or several edges) and that costs more to
 *   compute than to copy (a blur or distance below it, or the host computes it). Its pixels live
 *   in DEV_TILE x DEV_TILE tiles in the device tile cache: cache/'s LRU, whose tiles here are
 *   blocks of one device pool (tiles/tiles.h `release`). A chunk gathers the tiles of what it
 *   reads (device-to-device copies), computes the missing ones as one region (one launch per
 *   stage over their bounding box, never one per tile), and keeps them. Without room (a small
 *   --gpu-memory) a tile is computed and not kept: same bits, more work.
 *
 * Bit-identity: every kernel evaluates nodes/pointwise.h's expressions or the traits' exact
 * integer/float sequences (gpu/), tables come from the host, so the device's values equal the
 * CPU's bit for bit (tests/test_gpu.c compares them). */
#include "cache/cache.h"
#include "cpu/cpu.h"
#include "geom/geom.h"
#include "gpu/dither.h"
#include "gpu/gpu.h"
#include "nodes/params.h"
#include "tiles/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 3                          /* bands in flight on the device */
#define CHUNK_PX ((int64_t)4 << 20)      /* root pixels per chunk (4 Mpx measured best of 2..16) */
#define BAND_BYTES ((int64_t)16 << 20)   /* copies at least this big run at link speed */
#define SMALL_CHILD_PX ((int64_t)4 << 20) /* a repeat's child up to this is computed whole */
#define RESIDENT_PX ((int64_t)1 << 20)    /* nodes up to this are computed once and kept */
#define RESIDENT_BYTES ((int64_t)256 << 20) /* and that many bytes of them in all */
#define DEV_TILE ((int64_t)512)           /* the device tile cache's tiles: 1 MiB of floats */

enum { CLASS_DEVICE, CLASS_PERIODIC, CLASS_HOST, CLASS_RESIDENT };


typedef struct gpu_state {
    const tsr_backend_ctx *ctx;
    tsr_backend_shape shape;
    tsr_cpu *host;         /* the reference, for host nodes and period tiles */
    tsr_gpu *g;
    int *cls;              /* per node id: CLASS_* */
    float **period;        /* per node id: the host's period tile of a periodic node */
    uint8_t *slot[DEPTH];  /* device band buffers (attached pipelines) */
    size_t slot_bytes;
    uint8_t *pslot[DEPTH]; /* packed outputs (depth 1, 2, 4): each band's rows dithered on the
                            * device, copied instead of its samples; NULL: dithered on the host */
    size_t pslot_bytes;
    tsr_gpu_dither *gd;    /* the pipeline's threshold array on the device (first packed band) */
    const tsr_dither *gd_src;
    uint64_t slot_ticket[DEPTH];
    bool slot_used[DEPTH];
    size_t slots_mark;     /* arena level below the band buffers */
    struct {
        bool copy;         /* false: a band the host filled (periodic root) */
        uint64_t ticket;
    } pend[DEPTH + 1];
    size_t phead, pn;
    uint64_t nsubmit;
    int64_t chunk_px;      /* root pixels per chunk */
    bool *shared;          /* per node id: read by more than one edge (ref:) */
    float **res;           /* per node id: a resident node's whole pixels, once computed */
    struct memo {          /* shared nodes computed in this chunk, kept to its end */
        size_t id;
        tsr_rect r;
        float *px;
    } *memo;
    size_t nmemo, capmemo;
    uint64_t fault_at;     /* TSR_GPU_FAULT=N: a device error is faked at band N (tests) */
    bool *cached;          /* per node id: kept in the device tile cache */
    tsr_cache *dc;         /* the device tile cache; its tiles are blocks of `blocks` */
    float *blocks;         /* nblocks blocks of DEV_TILE^2 floats (the arena's kept end) */
    tsr_tile *btile;       /* per block: the tile struct that lends it to the cache */
    uint32_t *freeb;       /* free blocks' numbers, nfree of them */
    size_t nblocks, nfree;
    int64_t arena;         /* the device memory plan's arena bytes */
    uint64_t host_ns;      /* the CPU's time computing host-class nodes */
    bool period_host;      /* TSR_GPU_PERIOD=host: see gpu_submit */
    uint8_t *att_mem;      /* the writer pool attached (pinned, band buffers carved), or NULL */
    size_t att_len;
} gpu_state;

static const char *const class_names[] = {"device", "periodic", "host", "resident"};
static const char *const cached_names[] = {"device, cached", "periodic", "host, cached", "resident"};

/* Whether the device computes node n (gpu/traits.c: the tables' GPU columns). */
static bool
device_can(const tsr_node *n)
{
    return tsr_gpu_node_why(n, NULL, 0);
}

/* The period tile of node n that repeats (over its rect, or inside a border), computed once by
 * the CPU reference (host memory) over tsr_period_rect. */
static tsr_status
period_tile(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, const float **out, tsr_error *err)
{
    if (!s->period[n->id]) {
        int64_t pw = e->inner[n->id].p[0], ph = e->inner[n->id].p[1];
        float *t = malloc((size_t)(pw * ph) * sizeof *t);
        if (!t)
            return tsr_fail(err, TSR_ENOMEM, "out of memory (period of %s)", n->name);
        tsr_status st = tsr_cpu_compute_direct(s->host, n, tsr_period_rect(e, n), t, err);
        if (st != TSR_OK) {
            free(t);
            return st;
        }
        s->period[n->id] = t;
    }
    *out = s->period[n->id];
    return TSR_OK;
}

/* Whether edge ed's kernel reads its child whole over any parent rect: a small repeated
 * motif, taken whole without walking its copies (need() visits each copy that meets the rect,
 * which for a tiny motif over a big chunk is millions). */
static bool
reads_whole(const tsr_edge *ed)
{
    const tsr_node *c = ed->child;
    return tsr_trait_has(ed->trait, TSR_CAP_LATTICE) && c->w <= SMALL_CHILD_PX / c->h;
}

/* The child rect an edge's kernel reads over parent rect r: the bounding box of need()'s
 * rects, or the whole child (reads_whole). Empty when the layer misses r. */
static tsr_rect
child_region(const tsr_edge *ed, tsr_rect r)
{
    if (reads_whole(ed))
        return tsr_rect_make(0, 0, ed->child->w, ed->child->h);
    tsr_rect want[TSR_NEED_MAX], u = {0, 0, 0, 0};
    size_t nw = ed->trait->need(ed, r, want);
    for (size_t i = 0; i < nw; i++)
        u = tsr_rect_union(u, want[i]);
    return u;
}

static tsr_status eval(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, tsr_rect r,
                       tsr_gpu_buf *out, const tsr_gpu_out *to, tsr_error *err);

/* Edge ed of a node over P: its child over what need() asks for, then the trait's kernel (which
 * writes samples to `to` when it is the root chunk's last stage). */
static tsr_status
edge(const tsr_backend_ctx *e, gpu_state *s, const tsr_edge *ed, tsr_gpu_buf P, const tsr_gpu_out *to,
     tsr_error *err)
{
    const tsr_node *c = ed->child;
    tsr_trait_id id = tsr_trait_id_of(ed->trait);
    tsr_rect u = child_region(ed, P.r);
    if (tsr_rect_empty(u)) /* the layer misses P */
        return to ? tsr_gpu_convert(s->g, P, to, err) : TSR_OK;
    size_t mark = tsr_gpu_mark(s->g);
    tsr_gpu_buf cb;
    tsr_status st = eval(e, s, c, u, &cb, NULL, err);
    if (st == TSR_OK) {
        int tm = tsr_gpu_stage_begin(s->g);
        tsr_gpu_edge_fn launch = tsr_gpu_traits[id].launch; /* device_can checked it */
        st = launch ? launch(s->g, ed, P, cb, to, err)
                    : tsr_fail(err, TSR_EINTERNAL, "gpu: trait %s has no kernel", ed->trait->name);
        tsr_gpu_stage_end(s->g, tm, TSR_GPU_TRAIT0 + (int)id);
    }
    tsr_gpu_reset(s->g, mark); /* later launches reuse it after this edge's (stream order) */
    return st;
}

/* ---- a pattern of a shape's leaf node: over the shape's box (as cpu/compute.c) ------------
 * The child is computed over its shape's box alone and blended there; its fill is blended over
 * the rest of the covered rect only where that can change a pixel. The device's buffers are
 * not read back to decide it: a bound on the node's values from the design (its fill and
 * source, the values each earlier layer can bring) stands in for the CPU's scan. Same bits
 * either way: a skipped blend is one that leaves every pixel as it is. */

typedef struct vrange {
    float lo, hi; /* every non-NaN value of the node so far lies in [lo, hi] */
    bool negz;    /* a -0 may be among them */
} vrange;

static const vrange VR_ANY = {-INFINITY, INFINITY, true};

static void
vr_add(vrange *v, float x)
{
    if (x == x) {
        v->lo = x < v->lo ? x : v->lo;
        v->hi = x > v->hi ? x : v->hi;
    }
    v->negz |= x == 0.0f && signbit(x);
}

/* The values node n's base (fill, source) can hold: an aa shape mixes its value with the fill
 * (a rounded convex mix: between them), a gradient lies between its ends, an image in [0, 1]. */
static vrange
vr_base(const tsr_node *n)
{
    vrange v = {INFINITY, -INFINITY, false};
    vr_add(&v, n->fill);
    const tsr_source *src = n->source;
    if (!src)
        return v;
    if (tsr_source_has(src, TSR_SRC_CAP_BOXED)) {
        vr_add(&v, src->value);
    } else if (tsr_source_has(src, TSR_SRC_CAP_FILE)) {
        vr_add(&v, 0.0f);
        vr_add(&v, 1.0f);
    } else {
        vr_add(&v, src->values[0]);
        vr_add(&v, src->values[1]);
    }
    return v;
}

/* Whether edge ed is a pattern of a leaf node drawn by a shape, which the device computes
 * itself each time it is asked (not resident, cached, shared or the host's). */
static bool
boxed_pattern(const gpu_state *s, const tsr_edge *ed)
{
    const tsr_node *c = ed->child;
    return tsr_trait_id_of(ed->trait) == TSR_TRAIT_pattern && c->nedges == 0 && c->source &&
           tsr_source_has(c->source, TSR_SRC_CAP_BOXED) && s->cls[c->id] == CLASS_DEVICE &&
           !s->cached[c->id] && !s->shared[c->id] && !s->res[c->id];
}

/* Whether blending the constant f (blend b, mask) leaves every pixel in v as it is
 * (cpu/compute.c: blend_keeps). */
static bool
vr_keeps(tsr_blend b, int mask, float f, const vrange *v)
{
    if (mask && f == 0.0f)
        return true;
    switch (b) {
    case TSR_BLEND_OVER: return false;
    case TSR_BLEND_MAX: return !(f > v->lo);
    case TSR_BLEND_MIN: return !(f < v->hi);
    case TSR_BLEND_ADD: return f == 0.0f && (signbit(f) || !v->negz);
    case TSR_BLEND_MULTIPLY: return f == 1.0f;
    }
    return false;
}

/* Child c of edge ed over child rect part, blended into P by the pattern kernel through an
 * edge whose child is that part alone (its offset moved by the part's corner). */
static tsr_status
blend_part(const tsr_backend_ctx *e, gpu_state *s, const tsr_edge *ed, tsr_rect part,
           tsr_gpu_buf P, const tsr_gpu_out *to, tsr_error *err)
{
    tsr_node sub = *ed->child;
    tsr_edge se = *ed;
    sub.w = part.w;
    sub.h = part.h;
    se.child = &sub;
    se.offset[0] += part.x;
    se.offset[1] += part.y;
    size_t mark = tsr_gpu_mark(s->g);
    tsr_gpu_buf cb;
    tsr_status st = eval(e, s, ed->child, part, &cb, NULL, err);
    if (st == TSR_OK) {
        int tm = tsr_gpu_stage_begin(s->g);
        cb.r = tsr_rect_make(0, 0, part.w, part.h);
        st = tsr_gpu_pattern(s->g, &se, P, cb, to, err);
        tsr_gpu_stage_end(s->g, tm, TSR_GPU_TRAIT0 + (int)TSR_TRAIT_pattern);
    }
    tsr_gpu_reset(s->g, mark);
    return st;
}

static tsr_status
boxed_edge(const tsr_backend_ctx *e, gpu_state *s, const tsr_edge *ed, tsr_gpu_buf P,
           const tsr_gpu_out *to, vrange *v, tsr_error *err)
{
    const tsr_node *c = ed->child;
    tsr_rect cc = tsr_edge_covered(ed, P.r);
    tsr_rect bc = tsr_rect_empty(cc) ? cc : tsr_source_box(c->source, cc);
    tsr_status st = TSR_OK;
    if (!tsr_rect_empty(cc) && !vr_keeps(ed->blend, ed->mask, c->fill, v)) {
        tsr_rect parts[4];
        size_t np = tsr_rect_empty(bc) ? (parts[0] = cc, 1) : tsr_rect_minus(cc, bc, parts);
        for (size_t k = 0; k < np && st == TSR_OK; k++)
            st = blend_part(e, s, ed, parts[k], P, tsr_rect_empty(bc) && k + 1 == np ? to : NULL,
                            err);
        if (tsr_rect_empty(bc))
            to = NULL; /* the last part sent the samples */
    }
    if (st == TSR_OK && !tsr_rect_empty(bc))
        st = blend_part(e, s, ed, bc, P, to, err);
    else if (st == TSR_OK && to)
        st = tsr_gpu_convert(s->g, P, to, err);
    vrange cv = vr_base(c);
    if (ed->blend == TSR_BLEND_OVER || ed->blend == TSR_BLEND_MAX || ed->blend == TSR_BLEND_MIN) {
        vr_add(v, cv.lo); /* each pixel is what it was or the child's */
        vr_add(v, cv.hi);
        v->negz |= cv.negz;
    } else {
        *v = VR_ANY;
    }
    return st;
}

/* Whether node n's first layer replaces its base at every pixel of r: drawn `over` without a
 * mask by a trait whose layer covers its whole covered rect (TSR_CAP_COVERS; a lattice may
 * leave gaps), which spans all of r. Then the base is never read (the blend of a
 * covered pixel `over` is the layer's value) and is not launched, as the CPU skips it
 * (cpu/compute.c). */
static bool
base_is_dead(const tsr_node *n, tsr_rect r)
{
    if (n->nedges == 0)
        return false;
    const tsr_edge *first = &n->edges[0];
    if (first->blend != TSR_BLEND_OVER || first->mask ||
        !tsr_trait_has(first->trait, TSR_CAP_COVERS))
        return false;
    tsr_rect c = tsr_edge_covered(first, r);
    return c.w == r.w && c.h == r.h;
}

/* Node n's pixels over out.r from its period tile (uploaded once): the period's origin is
 * the top-left of where n repeats, so out is read at that phase. */
static tsr_status
from_period(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, tsr_gpu_buf out, tsr_error *err)
{
    const float *t = NULL;
    tsr_status st = period_tile(e, s, n, &t, err);
    if (st != TSR_OK)
        return st;
    tsr_rect pr = tsr_period_rect(e, n);
    const float *dt = tsr_gpu_resident(s->g, t, (size_t)(pr.w * pr.h) * sizeof(float), err);
    if (!dt)
        return TSR_ENOMEM;
    out.r.x -= pr.x; /* the same memory, its rect in the period's frame */
    out.r.y -= pr.y;
    return tsr_gpu_periodic(s->g, dt, pr.w, pr.h, out, err);
}

static tsr_status eval_into(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, tsr_gpu_buf out,
                            const tsr_gpu_out *to, tsr_error *err);

/* A scratch buffer of floats over r from the arena (px NULL, err filled, when it is full). */
static tsr_gpu_buf
scratch(gpu_state *s, tsr_rect r, tsr_error *err)
{
    return (tsr_gpu_buf){r, tsr_gpu_alloc(s->g, (size_t)r.w * (size_t)r.h * sizeof(float), err)};
}

/* A device node that repeats inside a border (a lattice through a distance or a blur), over
 * out.r, which meets that interior: the interior's part from its period, as the CPU copies it
 * (the same bits), and only the rest computed, each piece in a buffer of its own copied into
 * out. Below a chunk's scale nothing else changes: the pieces are computed as any rect is. */
static tsr_status
eval_inside(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, tsr_gpu_buf out, tsr_rect in,
            tsr_error *err)
{
    tsr_rect rest[4];
    size_t nrest = tsr_rect_minus(out.r, in, rest), mark = tsr_gpu_mark(s->g);
    tsr_status st = TSR_OK;
    int tm = tsr_gpu_stage_begin(s->g);
    if (nrest == 0) {
        st = from_period(e, s, n, out, err);
    } else {
        tsr_gpu_buf b = scratch(s, in, err);
        st = b.px ? from_period(e, s, n, b, err) : TSR_ENOMEM;
        if (st == TSR_OK)
            st = tsr_gpu_copy_rect(s->g, out, b, in, err);
    }
    tsr_gpu_stage_end(s->g, tm, TSR_GPU_COPIES);
    for (size_t i = 0; i < nrest && st == TSR_OK; i++) {
        tsr_gpu_buf b = scratch(s, rest[i], err);
        st = b.px ? eval_into(e, s, n, b, NULL, err) : TSR_ENOMEM;
        if (st == TSR_OK) {
            tm = tsr_gpu_stage_begin(s->g);
            st = tsr_gpu_copy_rect(s->g, out, b, rest[i], err);
            tsr_gpu_stage_end(s->g, tm, TSR_GPU_COPIES);
        }
    }
    tsr_gpu_reset(s->g, mark); /* later launches reuse it after the copies (stream order) */
    return st;
}

/* What eval computes into out (allocated by the caller). */
static tsr_status
eval_into(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, tsr_gpu_buf out,
          const tsr_gpu_out *to, tsr_error *err)
{
    tsr_rect r = out.r;
    tsr_status st = TSR_OK;
    if (s->cls[n->id] == CLASS_DEVICE && !to && tsr_repeats(e, n)) {
        tsr_rect in = tsr_rect_intersect(r, e->inner[n->id].in);
        if (!tsr_rect_empty(in))
            return eval_inside(e, s, n, out, in, err);
    }
    int tm = tsr_gpu_stage_begin(s->g);
    switch (s->cls[n->id]) {
    case CLASS_PERIODIC:
        st = from_period(e, s, n, out, err);
        break;
    case CLASS_HOST: {
        float *h = malloc((size_t)r.w * (size_t)r.h * sizeof *h);
        uint64_t t0 = tsr_now_ns();
        /* on the host's team: one thread made the GPU 14x slower than the CPU backend on a
         * lattice of per-copy sources (lens-array-graded: 96 against 1391 MB/s, H200 host) */
        st = h ? tsr_cpu_compute_team(s->host, n, r, h, err)
               : tsr_fail(err, TSR_ENOMEM, "out of memory (%s on the host)", n->name);
        s->host_ns += tsr_now_ns() - t0;
        if (st == TSR_OK)
            st = tsr_gpu_upload(s->g, out, h, err);
        free(h);
        break;
    }
    default:
    {
        bool dead = base_is_dead(n, r);
        if (!dead)
            st = tsr_gpu_base(s->g, n, out, n->nedges == 0 ? to : NULL, err);
        tsr_gpu_stage_end(s->g, tm, TSR_GPU_BASE);
        vrange v = dead ? VR_ANY : vr_base(n);
        for (size_t k = 0; k < n->nedges && st == TSR_OK; k++) {
            const tsr_edge *ed = &n->edges[k];
            const tsr_gpu_out *tk = k + 1 == n->nedges ? to : NULL;
            if (boxed_pattern(s, ed) && !(k == 0 && dead)) {
                st = boxed_edge(e, s, ed, out, tk, &v, err);
            } else {
                st = edge(e, s, ed, out, tk, err);
                v = VR_ANY;
            }
        }
        return st;
    }
    }
    tsr_gpu_stage_end(s->g, tm, TSR_GPU_COPIES);
    if (st == TSR_OK && to) { /* a root the device did not compute: convert its floats */
        tm = tsr_gpu_stage_begin(s->g);
        st = tsr_gpu_convert(s->g, out, to, err);
        tsr_gpu_stage_end(s->g, tm, TSR_GPU_CONVERT);
    }
    return st;
}

/* Resident nodes (small ones: computed once, whole, and kept on the device) that are not
 * computed yet, children first; between chunks, since their memory comes from the kept end. */
static tsr_status
ensure_resident(const tsr_backend_ctx *e, gpu_state *s, tsr_error *err)
{
    for (size_t i = 0; i < e->d->nnodes; i++) {
        const tsr_node *n = e->d->nodes[i];
        if (s->cls[n->id] != CLASS_RESIDENT || s->res[n->id])
            continue;
        float *px = tsr_gpu_alloc_resident(s->g, (size_t)(n->w * n->h) * sizeof(float), err);
        if (!px)
            return TSR_ENOMEM;
        size_t mark = tsr_gpu_mark(s->g);
        tsr_gpu_buf b = {tsr_rect_make(0, 0, n->w, n->h), px};
        tsr_status st = eval_into(e, s, n, b, NULL, err);
        tsr_gpu_reset(s->g, mark);
        tsr_gpu_release_kept(s->g);
        s->nmemo = 0;
        if (st != TSR_OK)
            return st;
        s->res[n->id] = px;
    }
    return TSR_OK;
}

/* The chunk is done: shared nodes' buffers go. */
static void
memo_clear(gpu_state *s)
{
    s->nmemo = 0;
    tsr_gpu_release_kept(s->g);
}

/* Remember shared node `id` over r in px, for the rest of the chunk (best effort: without
 * room for the entry it is simply computed again when asked again). */
static void
memo_add(gpu_state *s, size_t id, tsr_rect r, float *px)
{
    if (s->nmemo == s->capmemo) {
        size_t cap = s->capmemo ? 2 * s->capmemo : 16;
        struct memo *m = realloc(s->memo, cap * sizeof *m);
        if (!m)
            return;
        s->memo = m;
        s->capmemo = cap;
    }
    s->memo[s->nmemo++] = (struct memo){id, r, px};
}

/* ---- the device tile cache ---------------------------------------------------------------- */

/* A block comes back from the cache (evicted, or the cache freed): the cache's lock is held. */
static void
block_back(void *ctx, tsr_tile *t)
{
    gpu_state *s = ctx;
    s->freeb[s->nfree++] = (uint32_t)(t - s->btile);
}

/* A free block for a tile of rect r, evicting the least recently used tile when none is free;
 * NULL when every block holds a pinned tile (or there are none). */
static tsr_tile *
block_get(gpu_state *s, tsr_rect r)
{
    if (s->nfree == 0)
        (void)tsr_cache_evict_lru(s->dc); /* its block comes back through block_back */
    if (s->nfree == 0)
        return NULL;
    tsr_tile *t = &s->btile[s->freeb[--s->nfree]];
    t->r = r;
    return t;
}

/* The rect of node n's device tile (tx, ty), clipped to the node. */
static tsr_rect
dev_tile_rect(const tsr_node *n, int64_t tx, int64_t ty)
{
    return tsr_rect_intersect(tsr_rect_make(tx * DEV_TILE, ty * DEV_TILE, DEV_TILE, DEV_TILE),
                              tsr_rect_make(0, 0, n->w, n->h));
}

/* The device tiles that cover r (inside node n), as one rect. */
static tsr_rect
dev_tile_cover(const tsr_node *n, tsr_rect r)
{
    int64_t x0 = r.x / DEV_TILE * DEV_TILE, y0 = r.y / DEV_TILE * DEV_TILE;
    int64_t x1 = (r.x + r.w + DEV_TILE - 1) / DEV_TILE * DEV_TILE;
    int64_t y1 = (r.y + r.h + DEV_TILE - 1) / DEV_TILE * DEV_TILE;
    return tsr_rect_intersect(tsr_rect_make(x0, y0, x1 - x0, y1 - y0),
                              tsr_rect_make(0, 0, n->w, n->h));
}

/* Cached node n over out.r (inside the node, as need() asks): the tiles the cache holds are
 * copied in; the missing ones are computed as one region over their bounding box (into arena
 * scratch), kept in free blocks, and copied in. Every copy and launch is on the compute stream,
 * so a block the cache evicts is rewritten only after its earlier readers. */
static tsr_status
eval_cached(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, tsr_gpu_buf out, tsr_error *err)
{
    tsr_rect c = dev_tile_cover(n, out.r);
    int64_t tx0 = c.x / DEV_TILE, ty0 = c.y / DEV_TILE;
    int64_t ntx = (c.w + DEV_TILE - 1) / DEV_TILE, nty = (c.h + DEV_TILE - 1) / DEV_TILE;
    struct missing {
        tsr_cache_entry *ce;
        tsr_rect r;
    } *miss = malloc((size_t)(ntx * nty) * sizeof *miss);
    if (!miss)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (device tiles of %s)", n->name);
    tsr_status st = TSR_OK;
    tsr_rect m = {0, 0, 0, 0};
    size_t nmiss = 0, kept = 0;
    int tm = tsr_gpu_stage_begin(s->g);
    for (int64_t ty = ty0; ty < ty0 + nty && st == TSR_OK; ty++)
        for (int64_t tx = tx0; tx < tx0 + ntx && st == TSR_OK; tx++) {
            bool must = false;
            tsr_cache_key key = {(int64_t)n->id, tx, ty};
            tsr_cache_entry *ce = tsr_cache_acquire(s->dc, key, &must);
            if (!ce) {
                st = tsr_fail(err, TSR_ENOMEM, "out of memory (device tile cache)");
            } else if (must) {
                miss[nmiss] = (struct missing){ce, dev_tile_rect(n, tx, ty)};
                m = tsr_rect_union(m, miss[nmiss++].r);
            } else {
                const tsr_tile *t = tsr_cache_tile(ce);
                st = tsr_gpu_copy_rect(s->g, out, (tsr_gpu_buf){t->r, t->px}, out.r, err);
                tsr_cache_release(s->dc, ce);
            }
        }
    tsr_gpu_stage_end(s->g, tm, TSR_GPU_COPIES);
    if (nmiss > 0 && st == TSR_OK) {
        size_t mark = tsr_gpu_mark(s->g);
        tsr_gpu_buf mb = scratch(s, m, err);
        st = mb.px ? eval_into(e, s, n, mb, NULL, err) : TSR_ENOMEM;
        tm = tsr_gpu_stage_begin(s->g);
        for (; kept < nmiss && st == TSR_OK; kept++) {
            tsr_tile *t = block_get(s, miss[kept].r);
            if (!t) /* every block pinned or none: computed, not kept */
                break;
            st = tsr_gpu_copy_rect(s->g, (tsr_gpu_buf){t->r, t->px}, mb, t->r, err);
            if (st == TSR_OK) {
                tsr_cache_publish(s->dc, miss[kept].ce, t);
                tsr_cache_release(s->dc, miss[kept].ce);
            } else {
                block_back(s, t);
                break;
            }
        }
        if (st == TSR_OK)
            st = tsr_gpu_copy_rect(s->g, out, mb, out.r, err);
        tsr_gpu_stage_end(s->g, tm, TSR_GPU_COPIES);
        tsr_gpu_reset(s->g, mark);
    }
    for (size_t i = kept; i < nmiss; i++) /* not computed, or no room: forgotten */
        tsr_cache_abandon(s->dc, miss[i].ce);
    free(miss);
    return st;
}

/* Node n over rect r: floats into a new arena buffer *out, or, with `to` (a root chunk), its
 * last stage's samples to `to` (out->px is then NULL for a node without edges).
 *
 * A node several edges read (ref:) is computed once per chunk for each rect asked: without
 * that, a DAG of shared nodes (n20 reading n19 four times, ... down to n0) would be walked as
 * the tree of its 4^20 paths. Its buffer comes from the arena's kept end, so the resets after
 * each edge leave it, and the chunk's end releases it. */
static tsr_status
eval(const tsr_backend_ctx *e, gpu_state *s, const tsr_node *n, tsr_rect r, tsr_gpu_buf *out,
     const tsr_gpu_out *to, tsr_error *err)
{
    out->r = r;
    out->px = NULL;
    if (s->res[n->id]) { /* resident: the whole node, more than asked (kernels allow it) */
        *out = (tsr_gpu_buf){tsr_rect_make(0, 0, n->w, n->h), s->res[n->id]};
        return TSR_OK;
    }
    bool keep = s->shared[n->id] && !to;
    if (keep)
        for (size_t i = 0; i < s->nmemo; i++)
            if (s->memo[i].id == n->id && memcmp(&s->memo[i].r, &r, sizeof r) == 0) {
                out->px = s->memo[i].px;
                return TSR_OK;
            }
    bool fused = to && s->cls[n->id] == CLASS_DEVICE;
    if (!(fused && n->nedges == 0)) {
        size_t bytes = (size_t)r.w * (size_t)r.h * sizeof(float);
        out->px = keep ? tsr_gpu_alloc_kept(s->g, bytes, err) : tsr_gpu_alloc(s->g, bytes, err);
        if (!out->px)
            return TSR_ENOMEM;
    }
    tsr_status st = s->cached[n->id] && !to && s->nblocks > 0 ? eval_cached(e, s, n, *out, err)
                                                                : eval_into(e, s, n, *out, to, err);
    if (st == TSR_OK && keep)
        memo_add(s, n->id, r, out->px);
    return st;
}

/* A stop was requested (tsr_engine_opts.stop): the device's work is abandoned between chunks
 * (its kernels do not poll). */
static bool
stopped(const tsr_backend_ctx *e)
{
    return e->opts->stop && *e->opts->stop;
}

/* ---- the table ------------------------------------------------------------------------------- */

static tsr_status
gpu_values(void *bk, tsr_rect r, float *out, tsr_error *err)
{
    gpu_state *s = bk;
    const tsr_backend_ctx *e = s->ctx;
    tsr_gpu_bind(s->g); /* the thread that calls may not be the one that opened it */
    tsr_status rs = ensure_resident(e, s, err);
    if (rs != TSR_OK)
        return rs;
    int64_t rows = s->chunk_px / r.w > 0 ? s->chunk_px / r.w : 1;
    for (int64_t y = r.y; y < r.y + r.h; y += rows) {
        if (stopped(e))
            return tsr_fail(err, TSR_EINTR, "interrupted");
        int64_t h = r.y + r.h - y < rows ? r.y + r.h - y : rows;
        size_t mark = tsr_gpu_mark(s->g);
        tsr_gpu_buf b;
        tsr_status st = eval(e, s, e->d->root, tsr_rect_make(r.x, y, r.w, h), &b, NULL, err);
        if (st == TSR_OK)
            st = tsr_gpu_download(s->g, b, out + (y - r.y) * r.w, err);
        tsr_gpu_reset(s->g, mark);
        memo_clear(s);
        if (st != TSR_OK)
            return st;
    }
    return TSR_OK;
}

/* Previews (engine/backend.h: rowsums): whole rows of r in chunks as gpu_values computes them,
 * each chunk's row sums taken on the device (gpu/preview.cu), so only they cross the link. */
static tsr_status
gpu_rowsums(void *bk, tsr_rect r, int64_t kx, double *out, tsr_error *err)
{
    gpu_state *s = bk;
    const tsr_backend_ctx *e = s->ctx;
    tsr_gpu_bind(s->g);
    tsr_status rs = ensure_resident(e, s, err);
    if (rs != TSR_OK)
        return rs;
    int64_t nb = r.w / kx + (r.w % kx != 0);
    int64_t rows = s->chunk_px / r.w > 0 ? s->chunk_px / r.w : 1;
    for (int64_t y = r.y; y < r.y + r.h; y += rows) {
        if (stopped(e))
            return tsr_fail(err, TSR_EINTR, "interrupted");
        int64_t h = r.y + r.h - y < rows ? r.y + r.h - y : rows;
        size_t mark = tsr_gpu_mark(s->g);
        tsr_gpu_buf b;
        tsr_status st = eval(e, s, e->d->root, tsr_rect_make(r.x, y, r.w, h), &b, NULL, err);
        if (st == TSR_OK)
            st = tsr_gpu_rowsums(s->g, b, kx, out + (y - r.y) * nb, err);
        tsr_gpu_reset(s->g, mark);
        memo_clear(s);
        if (st != TSR_OK)
            return st;
    }
    return TSR_OK;
}

/* Rect r of band j (root coordinates) computed on the device into band buffer k, in chunks of
 * about chunk_px root pixels, each one launch per node stage ending in samples. */
static tsr_status
band_rect(const tsr_backend_ctx *e, gpu_state *s, const tsr_band_job *j, size_t k, tsr_rect r,
          tsr_error *err)
{
    tsr_status st = TSR_OK;
    int64_t cw = s->chunk_px / r.h > 0 ? s->chunk_px / r.h : 1;
    for (int64_t x = r.x; x < r.x + r.w && st == TSR_OK; x += cw) {
        if (stopped(e))
            return tsr_fail(err, TSR_EINTR, "interrupted");
        int64_t w = r.x + r.w - x < cw ? r.x + r.w - x : cw;
        size_t mark = tsr_gpu_mark(s->g);
        tsr_gpu_buf b;
        tsr_gpu_out to = {&e->d->out, s->slot[k], (size_t)(j->w * j->bps), j->x, j->y, j->h,
                          j->up};
        st = eval(e, s, e->d->root, tsr_rect_make(x, r.y, w, r.h), &b, &to, err);
        tsr_gpu_reset(s->g, mark);
        memo_clear(s);
    }
    return st;
}

/* The part `in` of band j inside a periodic root's interior, into band buffer k, from the
 * converted period kept on the device (uploaded once). */
static tsr_status
band_period(const tsr_backend_ctx *e, gpu_state *s, const tsr_band_job *j, size_t k, tsr_rect in,
            tsr_error *err)
{
    const tsr_node *root = e->d->root;
    const tsr_inner *per = &e->inner[root->id];
    const uint8_t *period = NULL;
    tsr_status st = tsr_cpu_root_period(s->host, &period, err);
    if (st != TSR_OK)
        return st;
    const uint8_t *dp = tsr_gpu_resident(s->g, period,
                                         (size_t)(per->p[0] * per->p[1] * j->bps), err);
    if (!dp)
        return TSR_ENOMEM;
    tsr_gpu_out to = {&e->d->out, s->slot[k], (size_t)(j->w * j->bps), j->x, j->y, j->h, j->up};
    int tm = tsr_gpu_stage_begin(s->g);
    st = tsr_gpu_period_fill(s->g, dp, per->p[0], per->p[1], per->in.x, per->in.y, in, &to, err);
    tsr_gpu_stage_end(s->g, tm, TSR_GPU_PERIOD);
    return st;
}

/* Band j's samples in slot k dithered and packed on the device into pslot[k], as the stream
 * carries them (the pipeline then leaves the band alone: *j->packed), when the pipeline allows
 * it (j->dither) and the room is there; *bytes becomes the packed size. False: the host
 * dithers the samples (nothing changed). The threshold array is uploaded at the first such
 * band: 2 x N^2 bytes (N <= 256), the one device allocation outside the arena. */
static bool
pack_band(gpu_state *s, const tsr_band_job *j, size_t k, size_t *bytes, tsr_error *err)
{
    const tsr_output *o = &s->ctx->d->out;
    if (!j->dither || !j->packed || !o->bits || !s->pslot[k])
        return false;
    size_t rb = (size_t)tsr_output_row_bytes(o, j->w);
    if (rb > s->pslot_bytes / (size_t)j->h)
        return false;
    if (s->gd_src != j->dither) {
        tsr_error ignore;
        tsr_gpu_dither_free(s->gd);
        s->gd = tsr_gpu_dither_new(j->dither, o->depth, &ignore);
        s->gd_src = s->gd ? j->dither : NULL;
        if (!s->gd)
            return false;
    }
    int tm = tsr_gpu_stage_begin(s->g);
    tsr_status st = tsr_gpu_dither_band(s->g, s->gd, s->slot[k], (size_t)(j->w * j->bps), j->x,
                                        j->y, j->w, j->h, j->up, o->bits, s->pslot[k], rb, err);
    tsr_gpu_stage_end(s->g, tm, TSR_GPU_CONVERT);
    if (st != TSR_OK)
        return false;
    *bytes = rb * (size_t)j->h;
    *j->packed = true;
    return true;
}

/* A band: the part inside a periodic root's interior from its period (on the device, or by
 * the host's row copies when the whole band is inside and s->period_host), the rest computed
 * on the device; then one copy to the host. */
static tsr_status
gpu_submit(void *bk, const tsr_band_job *j, tsr_error *err)
{
    gpu_state *s = bk;
    const tsr_backend_ctx *e = s->ctx;
    tsr_gpu_bind(s->g);
    size_t at = (s->phead + s->pn) % (DEPTH + 1);
    const tsr_node *root = e->d->root;
    tsr_rect band = tsr_rect_make(j->x, j->y, j->w, j->h), rest[4];
    tsr_rect in = tsr_repeats(e, root) ? tsr_rect_intersect(band, e->inner[root->id].in)
                                       : tsr_rect_make(0, 0, 0, 0);
    size_t nrest = tsr_rect_minus(band, in, rest);
    tsr_status st = TSR_OK;
    /* How a band wholly inside a periodic root's interior is filled: by the device's period fill
     * and the band's copy (bound by the link; the default), or by the host's row copies on all
     * its cores (TSR_GPU_PERIOD=host, no copy across the link). Measured on machines of one kind
     * (docs/performance.md), the host's copies ran at 0.65-1.09 x the link at 8 bits and 0.4-0.8 x
     * at 16; a choice timed on the first bands misjudged the host (its first, small bands ran at
     * 36 against 57 GB/s later) and cost ~100 ms of probing, so the device's way is kept: it is
     * at the link every time and leaves the host's cores to the sink (framing, deflate). */
    /* A root the device cannot compute (a lattice of per-copy sources, a long polygon): the
     * band as the CPU backend makes it, in host memory. Through the device (computed on the
     * host's team, uploaded, converted, copied back) it ran at a quarter of the CPU backend's
     * rate (lens-array-graded, H200 host: 474 against 1987 MB/s). */
    if (s->cls[root->id] == CLASS_HOST) {
        uint64_t t0 = tsr_now_ns();
        st = tsr_cpu_band(s->host, j, err);
        s->host_ns += tsr_now_ns() - t0;
        if (st != TSR_OK)
            return st;
        s->pend[at].copy = false;
        s->pn++;
        return TSR_OK;
    }
    if (nrest == 0 && s->period_host) {
        if ((st = tsr_cpu_fill_inner(s->host, j, rest, &nrest, err)) != TSR_OK)
            return st;
        s->pend[at].copy = false;
        s->pn++;
        return TSR_OK;
    }
    if ((st = ensure_resident(e, s, err)) != TSR_OK)
        return st;
    size_t k = (size_t)(s->nsubmit++ % DEPTH), bytes = (size_t)(j->w * j->h * j->bps);
    if (!s->slot[k] || bytes > s->slot_bytes)
        return tsr_fail(err, TSR_EINTERNAL, "gpu: band of %zu bytes without a device buffer",
                        bytes);
    /* the buffer's last band must be on the host before this one overwrites it */
    if (s->slot_used[k] && (st = tsr_gpu_after(s->g, s->slot_ticket[k], err)) != TSR_OK)
        return st;
    if (!tsr_rect_empty(in))
        st = band_period(e, s, j, k, in, err);
    for (size_t i = 0; i < nrest && st == TSR_OK; i++)
        st = band_rect(e, s, j, k, rest[i], err);
    const uint8_t *from = s->slot[k];
    if (st == TSR_OK && pack_band(s, j, k, &bytes, err))
        from = s->pslot[k];
    uint64_t t = 0;
    if (st == TSR_OK)
        st = tsr_gpu_copy_out(s->g, j->dst, from, bytes, &t, err);
    if (st == TSR_OK && s->fault_at && s->nsubmit == s->fault_at)
        tsr_gpu_inject_fault(s->g);
    if (st != TSR_OK)
        return st;
    s->slot_ticket[k] = t;
    s->slot_used[k] = true;
    s->pend[at].copy = true;
    s->pend[at].ticket = t;
    s->pn++;
    return TSR_OK;
}

static tsr_status
gpu_complete(void *bk, tsr_error *err)
{
    gpu_state *s = bk;
    tsr_gpu_bind(s->g);
    if (s->pn == 0)
        return TSR_OK;
    bool copy = s->pend[s->phead].copy;
    uint64_t t = s->pend[s->phead].ticket;
    s->phead = (s->phead + 1) % (DEPTH + 1);
    s->pn--;
    return copy ? tsr_gpu_wait(s->g, t, err) : TSR_OK;
}

/* The engine lets its writer pool go: unpin it, give back the band buffers. */
static void
gpu_detach(void *bk, uint8_t *mem)
{
    gpu_state *s = bk;
    tsr_gpu_bind(s->g);
    if (!s->att_mem)
        return;
    (void)tsr_gpu_sync(s->g, NULL);
    tsr_gpu_unregister(s->g, mem);
    tsr_gpu_reset(s->g, s->slots_mark);
    memset(s->slot, 0, sizeof s->slot);
    memset(s->pslot, 0, sizeof s->pslot);
    s->att_mem = NULL;
    s->att_len = 0;
}

/* Pin the writer's pool and carve DEPTH device band buffers as big as its buffers; the pool
 * the engine keeps (engine.c pipe_open) is pinned once, and later streams over it find it
 * attached. */
static tsr_status
gpu_attach(void *bk, uint8_t *mem, size_t len, tsr_error *err)
{
    gpu_state *s = bk;
    tsr_gpu_bind(s->g);
    s->phead = s->pn = 0;
    if (s->att_mem == mem && s->att_len == len)
        return TSR_OK; /* the band buffers' copies were all waited for by the last stream */
    if (s->att_mem)
        gpu_detach(s, s->att_mem);
    tsr_status st = tsr_gpu_register(s->g, mem, len, err);
    if (st != TSR_OK)
        return st;
    s->slots_mark = tsr_gpu_mark(s->g);
    s->slot_bytes = len / (size_t)s->shape.writer_bufs;
    for (int k = 0; k < DEPTH; k++) {
        s->slot[k] = tsr_gpu_alloc(s->g, s->slot_bytes, err);
        s->slot_used[k] = false;
        if (!s->slot[k]) {
            tsr_gpu_reset(s->g, s->slots_mark);
            tsr_gpu_unregister(s->g, mem);
            return TSR_ENOMEM;
        }
    }
    /* packed outputs: a packed band is at most half its 8-bit samples and a byte a row; where
     * the arena has no room for these, the host dithers as before */
    if (s->ctx->d->out.bits) {
        tsr_error ignore;
        size_t mark = tsr_gpu_mark(s->g);
        s->pslot_bytes = s->slot_bytes / 2 + 4096;
        for (int k = 0; k < DEPTH; k++)
            s->pslot[k] = tsr_gpu_alloc(s->g, s->pslot_bytes, &ignore);
        if (!s->pslot[DEPTH - 1]) { /* all or none: what was carved goes back */
            tsr_gpu_reset(s->g, mark);
            memset(s->pslot, 0, sizeof s->pslot);
        }
    }
    s->att_mem = mem;
    s->att_len = len;
    return TSR_OK;
}

static void
gpu_close(void *bk)
{
    gpu_state *s = bk;
    if (!s)
        return;
    tsr_gpu_bind(s->g);
    tsr_cache_free(s->dc); /* its tiles' blocks go back to freeb first */
    tsr_gpu_close(s->g);
    free(s->btile);
    free(s->freeb);
    free(s->cached);
    if (s->period)
        for (size_t i = 0; i < s->ctx->d->nnodes; i++)
            free(s->period[i]);
    free(s->period);
    free(s->cls);
    free(s->shared);
    free(s->memo);
    free(s->res);
    tsr_cpu_free(s->host);
    tsr_gpu_dither_free(s->gd);
    free(s);
}

/* Bytes of r's floats, saturating. */
static int64_t
px_bytes(tsr_rect r)
{
    return r.w > INT64_MAX / 4 / (r.h > 0 ? r.h : 1) ? INT64_MAX / 4 : r.w * r.h * 4;
}

static int64_t dry_node(const gpu_state *s, const tsr_node *n, tsr_rect r, int64_t *seen);

/* Arena bytes eval takes at most for node n over r (seen: per node id, a shared node's figure
 * once known, else -1): its own buffer, then for each edge its
 * child's region (recursively) and the trait kernel's scratch (blur and distance: at most ~3 x
 * the child region), freed after the edge; a cached node also the scratch of its missing
 * tiles' region (at most the tiles covering r) and what computing that takes. Resident and
 * periodic children take nothing here (resident bytes are counted apart); shared ones are
 * counted as if not shared. Saturating. */
static int64_t
dry_run(const gpu_state *s, const tsr_node *n, tsr_rect r, int64_t *seen)
{
    if (s->shared[n->id] && seen[n->id] >= 0) /* a DAG is not walked as the tree of its paths */
        return seen[n->id];
    int64_t b = s->cached[n->id] ? px_bytes(r) + dry_node(s, n, dev_tile_cover(n, r), seen)
                                 : dry_node(s, n, r, seen);
    b = b < INT64_MAX / 4 ? b : INT64_MAX / 4;
    seen[n->id] = b;
    return b;
}

static int64_t
dry_node(const gpu_state *s, const tsr_node *n, tsr_rect r, int64_t *seen)
{
    int64_t own = px_bytes(r);
    if (s->cls[n->id] == CLASS_RESIDENT || s->cls[n->id] == CLASS_PERIODIC ||
        s->cls[n->id] == CLASS_HOST)
        return own;
    int64_t peak = own;
    for (size_t k = 0; k < n->nedges; k++) {
        const tsr_edge *ed = &n->edges[k];
        tsr_rect u = child_region(ed, r);
        if (tsr_rect_empty(u))
            continue;
        int64_t child = dry_run(s, ed->child, u, seen);
        int64_t scratch = tsr_trait_has(ed->trait, TSR_CAP_NEIGHBOURS)
                              ? (u.w > INT64_MAX / 12 / u.h ? INT64_MAX / 4 : 3 * u.w * u.h * 4)
                              : 0;
        int64_t here = own + (child < INT64_MAX / 4 ? child : INT64_MAX / 4) + scratch;
        if (here > peak)
            peak = here;
    }
    return peak;
}

/* The rows a chunk of node n reads above (and below) itself down its chains of halos (blur,
 * distance): the deepest sum of the edges' vertical halos. memo[id] < 0: not yet known. */
static int64_t
chain_halo_rows(const tsr_node *n, int64_t *memo)
{
    if (memo[n->id] >= 0)
        return memo[n->id];
    int64_t most = 0;
    for (size_t k = 0; k < n->nedges; k++) {
        const tsr_edge *ed = &n->edges[k];
        if (!ed->trait->halo || tsr_trait_has(ed->trait, TSR_CAP_LATTICE))
            continue;
        int64_t h[2] = {0, 0};
        ed->trait->halo(ed, h);
        int64_t below = chain_halo_rows(ed->child, memo);
        if (h[1] + below > most)
            most = h[1] + below;
    }
    return memo[n->id] = most;
}

/* The share of an edge's child that a chunk computes again because its neighbours read it
 * too, for chunks of cw x ch root pixels: a motif read whole (reads_whole) is computed again
 * by every chunk; a halo h around the chunk adds its ring; a bigger repeated child is read
 * where its copies land, apart. */
static double
recompute_share(const tsr_edge *ed, int64_t cw, int64_t ch)
{
    if (reads_whole(ed))
        return 1e9;
    if (tsr_trait_has(ed->trait, TSR_CAP_LATTICE))
        return 0.0;
    int64_t h[2] = {0, 0};
    if (ed->trait->halo)
        ed->trait->halo(ed, h);
    return ((double)(cw + 2 * h[0]) * (double)(ch + 2 * h[1])) / ((double)cw * (double)ch) - 1.0;
}

/* Below this share recomputed, a cached node costs more than it saves: its copies and the
 * tiles' rounding outweigh the ring. Measured on the H100 (docs/performance.md): lens-blur,
 * whose blur reads a distance node with a 5 px ring (~0.5 %), ran 20 % slower cached. */
#define CACHE_MIN_SHARE 0.25

/* Which device and host nodes keep their pixels in the device tile cache (file comment): a
 * node several edges read; a node that costs more to compute than to copy (a blur or
 * distance below it, or the host computes it) of which chunks compute a large share again
 * (recompute_share) for bands of s->shape.band_rows rows across `sw` columns; and a motif with
 * layers of its own that a repeat reads whole, which every chunk would compute again
 * (fresnel-lens-array's 4 Mpx lens of 57 rings: 3.1 s of base launches in a profile).
 * The gpu_cache knob caches every one (tests: the cache's paths on every design) or none
 * (measurements). False on out of memory. */
static bool
choose_cached(const tsr_backend_ctx *e, gpu_state *s, int64_t sw)
{
    const tsr_design *d = e->d;
    s->cached = calloc(d->nnodes, sizeof *s->cached);
    bool *costly = calloc(d->nnodes, sizeof *costly);
    double *share = calloc(d->nnodes, sizeof *share); /* the most any reader recomputes */
    if (!s->cached || !costly || !share) {
        free(costly);
        free(share);
        return false;
    }
    bool all = tsr_tune_get()->gpu_cache == 1, none = tsr_tune_get()->gpu_cache == 2;
    int64_t ch = s->shape.band_rows, cw = s->chunk_px / ch > 0 ? s->chunk_px / ch : 1;
    cw = cw < sw ? cw : sw;
    for (size_t i = 0; i < d->nnodes; i++) { /* children before parents */
        const tsr_node *n = d->nodes[i];
        int cl = s->cls[n->id];
        costly[n->id] = cl == CLASS_HOST;
        for (size_t k = 0; k < n->nedges && cl == CLASS_DEVICE; k++) {
            const tsr_edge *ed = &n->edges[k];
            int cc = s->cls[ed->child->id];
            if (tsr_trait_has(ed->trait, TSR_CAP_NEIGHBOURS) ||
                ((cc == CLASS_DEVICE || cc == CLASS_HOST) && costly[ed->child->id]))
                costly[n->id] = true;
        }
        for (size_t k = 0; k < n->nedges; k++) {
            double f = recompute_share(&n->edges[k], cw, ch);
            size_t c = n->edges[k].child->id;
            share[c] = f > share[c] ? f : share[c];
        }
    }
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        int cl = s->cls[n->id];
        s->cached[n->id] = !none && n != d->root && (cl == CLASS_DEVICE || cl == CLASS_HOST) &&
                           (all || s->shared[n->id] ||
                            (costly[n->id] && share[n->id] >= CACHE_MIN_SHARE) ||
                            (n->nedges > 0 && share[n->id] >= 1.0));
    }
    free(costly);
    free(share);
    return true;
}

/* Device tile cache bytes a stream wants in steady state: for each cached node, the tiles of
 * a band's rows and three tile rows more (the halo above and below, the next band's start)
 * across its width, or the whole node when smaller. */
static int64_t
cache_want(const tsr_backend_ctx *e, const gpu_state *s)
{
    int64_t want = 0, tb = DEV_TILE * DEV_TILE * 4;
    for (size_t i = 0; i < e->d->nnodes; i++) {
        const tsr_node *n = e->d->nodes[i];
        if (!s->cached[n->id])
            continue;
        int64_t tw = (n->w + DEV_TILE - 1) / DEV_TILE, th = (n->h + DEV_TILE - 1) / DEV_TILE;
        int64_t rows = (s->shape.band_rows + DEV_TILE - 1) / DEV_TILE + 3;
        int64_t tiles = tw * (th < rows ? th : rows);
        want += tiles < (INT64_MAX / 4 - want) / tb ? tiles * tb : INT64_MAX / 4 - want;
    }
    return want;
}

/* The device tile cache over `bytes` of the arena: whole blocks of DEV_TILE^2 floats from its
 * kept end, for the context's life. No block at all is fine: cached nodes are then computed as
 * the others are. */
static tsr_status
open_tile_cache(gpu_state *s, size_t nnodes, int64_t bytes, tsr_error *err)
{
    size_t tb = (size_t)(DEV_TILE * DEV_TILE) * sizeof(float);
    size_t n = bytes > 0 ? (size_t)bytes / tb : 0;
    if (n > UINT32_MAX)
        n = UINT32_MAX;
    bool any = false;
    for (size_t i = 0; i < nnodes; i++)
        any = any || s->cached[i];
    if (n == 0 || !any)
        return TSR_OK;
    s->blocks = tsr_gpu_alloc_resident(s->g, n * tb, err);
    s->btile = calloc(n, sizeof *s->btile);
    s->freeb = calloc(n, sizeof *s->freeb);
    s->dc = tsr_cache_new(n * tb);
    if (!s->blocks || !s->btile || !s->freeb || !s->dc)
        return s->blocks ? tsr_fail(err, TSR_ENOMEM, "out of memory") : TSR_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        s->btile[i] = (tsr_tile){.px = s->blocks + i * (size_t)(DEV_TILE * DEV_TILE),
                                 .release = block_back, .release_ctx = s, .bytes = tb};
        s->freeb[i] = (uint32_t)(n - 1 - i);
    }
    s->nblocks = s->nfree = n;
    return TSR_OK;
}

/* Bands of about BAND_BYTES (whole copies at link speed; bigger ones only cost pinning time and
 * host memory), DEPTH in flight plus three for the writer, within what the host plan allows for
 * bands (a quarter of --memory, or the plan's own bands when they are bigger). The device
 * arena: --gpu-memory, or 90 % of what is free. */
/* tsr_geom_team's runner over the host evaluator's team */
static tsr_status
host_team_run(void *team, size_t n, tsr_geom_item_fn fn, void *fctx, tsr_error *err)
{
    return tsr_cpu_team_run(team, n, fn, fctx, err);
}

static tsr_status
gpu_open(const tsr_backend_ctx *e, void **bk, tsr_backend_shape *shape, tsr_error *err)
{
    const tsr_design *d = e->d;
    const tsr_tune *tune = tsr_tune_get();
    gpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    s->ctx = e;
    /* the host's share (nodes of class host, period tiles) has the host plan's cache */
    if (!(s->host = tsr_cpu_new(e, e->plan->cache, err))) {
        free(s);
        return TSR_ENOMEM;
    }
    s->chunk_px = e->opts->gpu_chunk > 0 ? e->opts->gpu_chunk : CHUNK_PX;
    /* measurement knobs (scripts/bench-gpu.sh: TSR_GPU_TUNE) */
    int64_t band_bytes = BAND_BYTES;
    if (tune->gpu_chunk_px > 0 && tune->gpu_band_bytes > 0) {
        s->chunk_px = tune->gpu_chunk_px;
        band_bytes = tune->gpu_band_bytes;
    }
    bool trace = tune->gpu_trace;
    uint64_t t0 = tsr_now_ns();
    s->period_host = tune->gpu_period_host;
    s->fault_at = tune->gpu_fault_band;
    s->cls = calloc(d->nnodes, sizeof *s->cls);
    s->period = calloc(d->nnodes, sizeof *s->period);
    s->shared = calloc(d->nnodes, sizeof *s->shared);
    s->res = calloc(d->nnodes, sizeof *s->res);
    size_t *uses = calloc(d->nnodes, sizeof *uses);
    if (uses)
        for (size_t i = 0; i < d->nnodes; i++)
            for (size_t k = 0; k < d->nodes[i]->nedges; k++)
                uses[d->nodes[i]->edges[k].child->id]++;
    bool counted = uses != NULL;
    for (size_t i = 0; counted && s->shared && i < d->nnodes; i++)
        s->shared[i] = uses[i] > 1;
    free(uses);
    if (!s->cls || !s->period || !s->shared || !s->res || !counted) {
        gpu_close(s);
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        s->cls[n->id] = tsr_periodic_whole(e, n) ? CLASS_PERIODIC
                        : device_can(n)     ? CLASS_DEVICE
                                            : CLASS_HOST;
    }
    /* small device nodes (motifs, crosses, a blurred line) are computed once and kept, up to
     * RESIDENT_BYTES in all: a chunk then reads them instead of computing them again */
    int64_t resident = 0;
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        int64_t bytes = n->w * n->h * 4; /* <= RESIDENT_PX * 4 when it counts */
        if (s->cls[n->id] == CLASS_DEVICE && n != d->root && n->w <= RESIDENT_PX / n->h &&
            resident + bytes <= RESIDENT_BYTES) {
            s->cls[n->id] = CLASS_RESIDENT;
            resident += bytes;
        }
    }
    int64_t W = d->root->w, H = e->rows1 - e->rows0, bps = d->out.depth / 8;
    int64_t sw = tsr_band_width(d);
    s->shape.depth = DEPTH;
    s->shape.writer_bufs = DEPTH + 3;
    int64_t rows = (band_bytes + sw * bps - 1) / (sw * bps);
    /* A chain of halos reads `halo` rows above and below each band: bands of a few halos' rows
     * (and chunks to match) keep that overhead small. Measured on an H200 (docs/performance.md
     * §3.9): a sigma-32 blur over a non-periodic field (halo 128) at 168-row bands and 4 Mpx
     * chunks 4.3 GB/s, at 672 rows and 16 Mpx 8.1-8.4 GB/s; a sigma-4 blur (halo 16) gains
     * nothing from it, so small halos keep the default. */
    if (!(tune->gpu_chunk_px > 0 && tune->gpu_band_bytes > 0)) {
        int64_t *memo = malloc(d->nnodes * sizeof *memo);
        if (!memo) {
            gpu_close(s);
            return tsr_fail(err, TSR_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < d->nnodes; i++)
            memo[i] = -1;
        int64_t halo = chain_halo_rows(d->root, memo);
        free(memo);
        if (rows < 4 * halo) {
            rows = 4 * halo;
            if (e->opts->gpu_chunk <= 0 && s->chunk_px < 4 * CHUNK_PX)
                s->chunk_px = 4 * CHUNK_PX;
        }
    }
    int64_t allow = e->plan->bands > e->plan->budget / 4 ? e->plan->bands : e->plan->budget / 4;
    while (rows > 1 && s->shape.writer_bufs * sw * rows * bps > allow)
        rows /= 2;
    /* a small job still goes in several bands: progress, stops and resumes keep their grain */
    int64_t eighth = (H + 7) / 8 > e->plan->band_rows ? (H + 7) / 8 : e->plan->band_rows;
    if (rows > eighth)
        rows = eighth;
    s->shape.band_rows = rows < H ? rows : H;
    s->shape.band_bytes = sw * s->shape.band_rows * bps;
    if (!choose_cached(e, s, sw)) {
        gpu_close(s);
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    }

    size_t freeb = 0, total = 0;
    tsr_status st = tsr_gpu_meminfo(e->opts->gpu_device, &freeb, &total, err);
    if (st != TSR_OK) {
        gpu_close(s);
        return st;
    }
    /* the smallest arena that renders: the band buffers, the resident nodes and what one chunk
     * in the middle of the root takes along its costliest path of child regions (a dry run of
     * eval's allocations: halos grow down a chain of blurs; border chunks take less) */
    int64_t ch = s->shape.band_rows, cw = s->chunk_px / ch > 0 ? s->chunk_px / ch : 1;
    cw = cw < sw ? cw : sw;
    tsr_rect mid = tsr_rect_intersect(
        tsr_rect_make(W / 2 - cw / 2, d->root->h / 2 - ch / 2, cw, ch),
        tsr_rect_make(0, 0, W, d->root->h));
    int64_t *seen = malloc(d->nnodes * sizeof *seen);
    if (!seen) {
        gpu_close(s);
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < d->nnodes; i++)
        seen[i] = -1;
    int64_t path = dry_run(s, d->root, mid, seen);
    free(seen);
    int64_t minimum = DEPTH * sw * s->shape.band_rows * bps + path + resident;
    /* Without --gpu-memory: half of what is free on the device (docs/tuning.md), and at least
     * room for the chunks' trees of child regions (4 x the minimum, at least 2 GiB) and for the
     * device tile cache's steady state (cache_want), never more than 90 % of what is free. A
     * fixed few GiB starved the tile cache of halo-heavy designs (a sigma-32 blur re-made 17 %
     * of its tiles, 0.7 s of 2.2 s in copies, on a 141 GB card); half leaves the other half to
     * other jobs sharing the card. */
    int64_t want = 4 * minimum > ((int64_t)2 << 30) ? 4 * minimum : ((int64_t)2 << 30);
    want += cache_want(e, s);
    int64_t most = (int64_t)(freeb / 10 * 9);
    if (want < (int64_t)(freeb / 2))
        want = (int64_t)(freeb / 2);
    int64_t arena = e->opts->gpu_memory > 0 ? e->opts->gpu_memory : (want < most ? want : most);
    if (arena < minimum) {
        gpu_close(s);
        return tsr_fail(err, TSR_EPLAN,
                        "device memory plan: needs at least %.1f MiB (--gpu-memory %lld), have "
                        "%.1f MiB",
                        (double)minimum / 1048576.0, (long long)minimum,
                        (double)arena / 1048576.0);
    }
    uint64_t t1 = tsr_now_ns();
    s->arena = arena;
    s->g = tsr_gpu_open(e->opts->gpu_device, (size_t)arena, err);
    /* The default is a share of what was free a moment ago: other processes on the card (a
     * second job, the ranks of mpirun on one GPU, test suites run side by side) may have taken
     * it since. Then half as much, or 90 % of what is free now when that is less, down to the
     * minimum the plan needs; an explicit --gpu-memory is taken as given or refused. */
    for (int tries = 0; !s->g && e->opts->gpu_memory <= 0 && err && err->status == TSR_ENOMEM &&
                        arena > minimum && tries < 16 && !tsr_ctx_stopping(e);
         tries++) {
        arena /= 2;
        if (tsr_gpu_meminfo(e->opts->gpu_device, &freeb, &total, NULL) == TSR_OK &&
            (int64_t)(freeb / 10 * 9) < arena)
            arena = (int64_t)(freeb / 10 * 9);
        if (arena < minimum)
            arena = minimum;
        s->arena = arena;
        s->g = tsr_gpu_open(e->opts->gpu_device, (size_t)arena, err);
    }
    if (s->g && !tune->gpu_host_serial) {
        /* a chunk's polygons are made and united in pieces on the host's team */
        tsr_geom_team team = {host_team_run, s->host, tsr_cpu_team_threads(s->host)};
        tsr_gpu_set_team(s->g, &team);
    }
    if (!s->g) {
        gpu_close(s);
        /* a stop that came while the arena was being mapped (a signal in the driver's call
         * fails the allocation: seen on an H200 host, a SIGTERM 1.5 s into an 80 GB arena) is
         * the stop, not a lack of memory */
        if (tsr_ctx_stopping(e))
            return tsr_fail(err, TSR_EINTR, "interrupted");
        return err ? err->status : TSR_EIO;
    }
    /* the device tile cache takes 7/8 of what the minimum leaves (the rest: alignment slack) */
    if ((st = open_tile_cache(s, d->nnodes, (arena - minimum) / 8 * 7, err)) != TSR_OK) {
        gpu_close(s);
        return st;
    }
    if (trace)
        fprintf(stderr, "gpu: plan %.1f ms, context and %.1f GiB arena %.1f ms; bands of %lld rows "
                "(%.1f MiB), chunks of %lld px\n", (double)(t1 - t0) * 1e-6,
                (double)arena / 1073741824.0, (double)(tsr_now_ns() - t1) * 1e-6,
                (long long)s->shape.band_rows, (double)(sw * s->shape.band_rows * bps) / 1048576.0,
                (long long)s->chunk_px);
    *shape = s->shape;
    *bk = s;
    return TSR_OK;
}

static void
gpu_stats(void *bk, tsr_engine_stats *st)
{
    gpu_state *s = bk;
    tsr_cpu_stats(s->host, st); /* the host's share: cache, node and trait seconds */
    tsr_cache_stats cs = tsr_cache_get_stats(s->dc);
    st->dev_hits = cs.hits;
    st->dev_misses = cs.misses;
    st->dev_evictions = cs.evictions;
    st->dev_cache_bytes = (int64_t)cs.bytes;
    st->dev_cache_budget = (int64_t)cs.budget;
    st->dev_arena = s->arena;
    st->dev_bands = DEPTH;
    st->dev_arena_peak = s->g ? (int64_t)tsr_gpu_arena_peak(s->g) : 0;
    tsr_gpu_stage_seconds(s->g, st->gpu_stage_seconds);
    st->gpu_host_seconds = (double)s->host_ns * 1e-9;
}

/* How the backend keeps node n, for `tessera check --tree`. */
static const char *
gpu_node_class(void *bk, const tsr_node *n)
{
    const gpu_state *s = bk;
    return (s->cached[n->id] ? cached_names : class_names)[s->cls[n->id]];
}

const tsr_backend_ops tsr_backend_gpu = {
    .name = "gpu",
    .open = gpu_open,
    .close = gpu_close,
    .attach = gpu_attach,
    .detach = gpu_detach,
    .submit = gpu_submit,
    .complete = gpu_complete,
    .values = gpu_values,
    .rowsums = gpu_rowsums,
    .stats = gpu_stats,
    .node_class = gpu_node_class,
};
