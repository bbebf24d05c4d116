/* The reference evaluator (cpu/cpu.h): a node's pixels over a rect = base (fill, source), then
 * every edge's layer blended in order. Child pixels come through the tile cache: the first
 * thread to need a child tile computes it (recursively), others wait for it or find it
 * cached. */
#include "cpu/cpu_int.h"
#include "nodes/pointwise.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* A pinned child tile, ready to read. */
static tsr_status
get_tile(tsr_cpu *cp, const tsr_node *n, int64_t tx, int64_t ty, tsr_cache_entry **out,
         tsr_error *err)
{
    bool compute = false;
    tsr_cache_key key = {(int64_t)n->id, tx, ty};
    tsr_cache_entry *ce = tsr_cache_acquire(cp->cache, key, &compute);
    if (!ce)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (tile cache)");
    if (compute) {
        tsr_rect r = tsr_grid_tile_rect(&cp->ctx->grid[n->id], tx, ty);
        tsr_tile *t = tsr_cache_tile_new(cp->cache, r);
        if (!t) {
            tsr_cache_abandon(cp->cache, ce);
            return tsr_fail(err, TSR_ENOMEM, "out of memory (tile %s %lldx%lld)", n->name,
                            (long long)r.w, (long long)r.h);
        }
        /* a grid tile is computed directly even where the node repeats: tiles are only
         * asked for along the border of its interior (compute_periodic) */
        tsr_status st = tsr_cpu_compute_direct(cp, n, r, t->px, err);
        if (st != TSR_OK) {
            tsr_tile_free(t);
            tsr_cache_abandon(cp->cache, ce);
            return st;
        }
        tsr_cache_publish(cp->cache, ce, t);
    }
    *out = ce;
    return TSR_OK;
}

/* Copy rect `part` of node c from the grid tiles it meets into dst (rows of `stride` floats,
 * dst[0] at part's top-left). */
static tsr_status
assemble(tsr_cpu *cp, const tsr_node *c, tsr_rect part, float *dst, int64_t stride,
         tsr_error *err)
{
    int64_t tx0, ty0, tx1, ty1;
    tsr_grid_tiles_of(&cp->ctx->grid[c->id], part, &tx0, &ty0, &tx1, &ty1);
    for (int64_t ty = ty0; ty < ty1; ty++) {
        for (int64_t tx = tx0; tx < tx1; tx++) {
            tsr_cache_entry *ce;
            tsr_status st = get_tile(cp, c, tx, ty, &ce, err);
            if (st != TSR_OK)
                return st;
            tsr_view tv = tsr_tile_view(tsr_cache_tile(ce));
            tsr_rect q = tsr_rect_intersect(tv.r, part);
            for (int64_t y = 0; y < q.h; y++)
                memcpy(dst + (q.y - part.y + y) * stride + (q.x - part.x),
                       tsr_view_row(&tv, q.x, q.y + y), (size_t)q.w * sizeof(float));
            tsr_cache_release(cp->cache, ce);
        }
    }
    return TSR_OK;
}

/* The pixels of child rect `want` as a view: a pinned tile's own pixels when `want` lies in one
 * tile (no copy), else assembled into `*buf` (caller frees): from the tiles it meets; for a
 * child that repeats, copied from its period tile; for an uncached child (plan.c), computed
 * right there. The pin, if any, is returned in *pin for release after use. */
static tsr_status
fetch(tsr_cpu *cp, const tsr_node *c, tsr_rect want, tsr_view *v, tsr_cache_entry **pin,
      float **buf, tsr_error *err)
{
    const tsr_grid *g = &cp->ctx->grid[c->id];
    int64_t tx0, ty0, tx1, ty1;
    tsr_grid_tiles_of(g, want, &tx0, &ty0, &tx1, &ty1);
    *pin = NULL;
    *buf = NULL;
    bool copy = tsr_repeats(cp->ctx, c) || cp->ctx->uncached[c->id];
    if (!copy && tx1 - tx0 == 1 && ty1 - ty0 == 1) {
        tsr_status st = get_tile(cp, c, tx0, ty0, pin, err);
        if (st != TSR_OK)
            return st;
        *v = tsr_tile_view(tsr_cache_tile(*pin));
        return TSR_OK;
    }
    float *b = malloc((size_t)want.w * (size_t)want.h * sizeof(float));
    if (!b)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (assembling %lldx%lld of %s)",
                        (long long)want.w, (long long)want.h, c->name);
    /* a repeating child costs a row copy per row: copy it straight into the view instead of
     * caching tiles of it and copying those again; an uncached one is computed into it */
    tsr_status st = copy ? tsr_cpu_compute(cp, c, want, b, err) : assemble(cp, c, want, b, want.w, err);
    if (st != TSR_OK) {
        free(b);
        return st;
    }
    v->r = want;
    v->px = b;
    v->stride = want.w;
    *buf = b;
    return TSR_OK;
}

/* The child rects of one edge layer, from need() until the layer is computed. */
typedef struct fetches {
    size_t n;                      /* child rects */
    tsr_view *views;               /* [n] what layer() reads; views[i].r is need()'s rect
                                    * until fetched */
    tsr_cache_entry **pins;        /* [n] the pinned tile a view reads, or NULL */
    float **bufs;                  /* [n] the assembled copy a view reads (owned), or NULL */
    void *heap;                    /* the block the arrays live in when n > TSR_FETCH_INLINE */
    tsr_view view_in[TSR_FETCH_INLINE];
    tsr_cache_entry *pin_in[TSR_FETCH_INLINE];
    float *buf_in[TSR_FETCH_INLINE];
} fetches;

/* need() of edge ed over r into f. need() writes up to TSR_NEED_MAX rects: they stay in this
 * frame, which is gone before any child computes. */
static __attribute__((noinline)) tsr_status
need_rects(const tsr_edge *ed, tsr_rect r, fetches *f, tsr_error *err)
{
    tsr_rect want[TSR_NEED_MAX];
    size_t n = ed->trait->need(ed, r, want);
    f->n = n;
    f->heap = NULL;
    f->views = f->view_in;
    f->pins = f->pin_in;
    f->bufs = f->buf_in;
    if (n > TSR_FETCH_INLINE) {
        f->heap = malloc(n * TSR_FETCH_BYTES);
        if (!f->heap)
            return tsr_fail(err, TSR_ENOMEM, "out of memory (layer of %s)", ed->child->name);
        f->views = f->heap;
        f->pins = (tsr_cache_entry **)(f->views + n);
        f->bufs = (float **)(f->pins + n);
    }
    for (size_t i = 0; i < n; i++)
        f->views[i].r = want[i];
    return TSR_OK;
}

/* Fetch what edge `ed` needs over r and compute its layer into L/cov. *nothing is set when the
 * layer does not reach r at all (cov untouched). */
static tsr_status
edge_layer(tsr_cpu *cp, const tsr_edge *ed, tsr_rect r, float *L, uint8_t *cov, bool *nothing,
           uint64_t *child_ns, tsr_error *err)
{
    fetches f;
    tsr_status st = need_rects(ed, r, &f, err);
    size_t got = 0;
    *nothing = st == TSR_OK && f.n == 0;
    if (st != TSR_OK || f.n == 0)
        return st;
    uint64_t c0 = tsr_now_ns();
    for (; got < f.n; got++) {
        st = fetch(cp, ed->child, f.views[got].r, &f.views[got], &f.pins[got], &f.bufs[got], err);
        if (st != TSR_OK)
            break;
    }
    uint64_t l0 = tsr_now_ns();
    *child_ns += l0 - c0;
    if (st == TSR_OK) {
        memset(cov, 0, (size_t)r.w * (size_t)r.h);
        st = ed->trait->layer(ed, r, f.views, f.n, L, cov, err);
        atomic_fetch_add(&cp->trait_ns[tsr_trait_id_of(ed->trait)], tsr_now_ns() - l0);
    }
    for (size_t i = 0; i < got; i++) {
        if (f.pins[i])
            tsr_cache_release(cp->cache, f.pins[i]);
        free(f.bufs[i]);
    }
    free(f.heap);
    return st;
}

static bool
all_set(const uint8_t *cov, size_t n)
{
    uint8_t acc = 1;
    for (size_t i = 0; i < n; i++)
        acc &= cov[i];
    return acc;
}

/* Node n's period tile (engine/plan.c: tsr_backend_ctx.inner), pinned: computed once, through the cache (key
 * tx = ty = -1), by the ordinary path over the period's rect at the top-left of its interior.
 * *inner gets the nanoseconds spent computing it (counted by compute_direct itself). */
static tsr_status
period_tile(tsr_cpu *cp, const tsr_node *n, tsr_cache_entry **out, uint64_t *inner,
            tsr_error *err)
{
    bool compute = false;
    tsr_cache_key key = {(int64_t)n->id, -1, -1};
    tsr_cache_entry *ce = tsr_cache_acquire(cp->cache, key, &compute);
    if (!ce)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (tile cache)");
    if (compute) {
        tsr_tile *t = tsr_cache_tile_new(cp->cache, tsr_period_rect(cp->ctx, n));
        uint64_t c0 = tsr_now_ns();
        tsr_status st = t ? tsr_cpu_compute_direct(cp, n, t->r, t->px, err)
                          : tsr_fail(err, TSR_ENOMEM, "out of memory (period of %s)", n->name);
        *inner = tsr_now_ns() - c0;
        if (st != TSR_OK) {
            tsr_tile_free(t);
            tsr_cache_abandon(cp->cache, ce);
            return st;
        }
        tsr_cache_publish(cp->cache, ce, t);
    }
    *out = ce;
    return TSR_OK;
}

/* Rect r (inside n's interior) from n's period tile into dst, rows of `stride` floats. */
static void
copy_period(const tsr_cpu *cp, const tsr_node *n, const float *base, tsr_rect r, float *dst,
            int64_t stride)
{
    const tsr_inner *per = &cp->ctx->inner[n->id];
    const int64_t pw = per->p[0], ph = per->p[1];
    size_t x0b = (size_t)tsr_floor_mod(r.x - per->in.x, pw) * sizeof(float);
    int64_t y = tsr_floor_mod(r.y - per->in.y, ph);
    for (int64_t j = 0; j < r.h; j++) {
        tsr_period_row((const uint8_t *)(base + y * pw), (size_t)pw * sizeof(float), x0b,
                       (uint8_t *)(dst + j * stride), (size_t)r.w * sizeof(float));
        if (++y == ph)
            y = 0;
    }
}

/* A node that repeats (engine/plan.c: tsr_backend_ctx.inner) over rect r: its interior part copied from the period
 * tile, the rest (a border strip along up to four sides) from its grid tiles, which compute
 * directly. */
static tsr_status
compute_periodic(tsr_cpu *cp, const tsr_node *n, tsr_rect r, float *px, tsr_error *err)
{
    uint64_t t0 = tsr_now_ns(), inner = 0;
    tsr_rect parts[4];
    tsr_rect in = tsr_rect_intersect(r, cp->ctx->inner[n->id].in);
    size_t np = tsr_rect_minus(r, in, parts);
    tsr_status st = TSR_OK;
    if (!tsr_rect_empty(in)) {
        tsr_cache_entry *ce = NULL;
        st = period_tile(cp, n, &ce, &inner, err);
        if (st != TSR_OK)
            return st;
        copy_period(cp, n, tsr_cache_tile(ce)->px, in, px + (in.y - r.y) * r.w + (in.x - r.x), r.w);
        tsr_cache_release(cp->cache, ce);
    }
    /* the copies are this node's own time too (profile's per-node seconds); the border's
     * tiles count their own */
    atomic_fetch_add(&cp->node_ns[n->id], tsr_now_ns() - t0 - inner);
    for (size_t k = 0; k < np && st == TSR_OK; k++)
        st = assemble(cp, n, parts[k], px + (parts[k].y - r.y) * r.w + (parts[k].x - r.x), r.w, err);
    return st;
}

tsr_status
tsr_cpu_compute(tsr_cpu *cp, const tsr_node *n, tsr_rect r, float *px, tsr_error *err)
{
    if (tsr_repeats(cp->ctx, n))
        return compute_periodic(cp, n, r, px, err);
    return tsr_cpu_compute_direct(cp, n, r, px, err);
}

/* The recursion would outgrow this thread's stack: say how deep the design goes and how to
 * give the thread more (the engine's workers get cp->ctx->stack, cpu/pool.c; the main thread's
 * stack is ulimit -s; a thread an application starts is its own). */
static tsr_status
out_of_stack(const tsr_cpu *cp, const tsr_node *n, tsr_error *err)
{
    bool main_thread = false;
    size_t size = tsr_stack_size(&main_thread);
    return tsr_fail(err, TSR_ENOMEM,
                    "node %s: out of thread stack (%zu KiB on the %s thread) in a chain of "
                    "nested nodes %lld deep; give it more stack: ulimit -s %zu for the main "
                    "thread, %zu MiB for a thread an application starts",
                    n->name, size >> 10, main_thread ? "main" : "worker",
                    (long long)cp->ctx->nest, cp->ctx->stack >> 10, cp->ctx->stack >> 20);
}

/* A stop was requested (tsr_engine_opts.stop): what is being computed is dropped. */
static bool
stopping(const tsr_cpu *cp)
{
    return cp->ctx->opts->stop && *cp->ctx->opts->stop;
}

static tsr_status
interrupted(tsr_error *err)
{
    return tsr_fail(err, TSR_EINTR, "interrupted");
}

/* ---- a shape placed by a pattern: its layer only over the shape's box -------------------
 *
 * A pattern of a leaf node with a shape source is the node's fill everywhere but inside the
 * shape's box (tsr_source_box). A layout converted into thousands of full-size rect nodes
 * computed and blended every node's whole rectangle (0.27 MB/s against 193 MB/s for tight
 * nodes placed by offset). Here the child is drawn over the box alone, and the fill is blended
 * over the rest of the covered rect only when that can change a pixel: never under `mask:
 * nonzero` with a fill of 0, nor for `max` by a fill no larger than every pixel, `min` no
 * smaller, `add` of -0 (or of +0 where no pixel is -0), `multiply` by 1. What the node holds so
 * far is bounded (range) to decide it: the same floats as blending everywhere. */

/* Conservative facts about every pixel of a node's buffer: each non-NaN value in [lo, hi],
 * and whether a -0 may be among them. Scanned once when first asked, then widened by what
 * each later blend writes. */
typedef struct range {
    bool known;
    float lo, hi;
    bool negz;
} range;

static void
range_add(range *g, const float *px, int64_t stride, tsr_rect part)
{
    float lo = g->lo, hi = g->hi;
    bool negz = g->negz;
    for (int64_t y = 0; y < part.h; y++) {
        const float *row = px + y * stride;
        for (int64_t x = 0; x < part.w; x++) {
            float v = row[x];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            negz |= v == 0.0f && signbit(v);
        }
    }
    g->lo = lo, g->hi = hi, g->negz = negz;
}

static void
range_scan(range *g, const float *px, tsr_rect r)
{
    if (g->known)
        return;
    g->known = true;
    g->lo = INFINITY, g->hi = -INFINITY, g->negz = false;
    range_add(g, px, r.w, tsr_rect_make(0, 0, r.w, r.h));
}

/* Whether edge ed is a pattern of a leaf node drawn by a shape. */
static bool
boxed_pattern(const tsr_edge *ed)
{
    const tsr_node *c = ed->child;
    return tsr_trait_id_of(ed->trait) == TSR_TRAIT_pattern && c->nedges == 0 && c->source &&
           tsr_source_has(c->source, TSR_SRC_CAP_BOXED);
}

/* Whether blending the constant f (blend b, mask) leaves every pixel of g's buffer as it is. */
static bool
blend_keeps(tsr_blend b, int mask, float f, const range *g)
{
    if (mask && f == 0.0f)
        return true; /* not covered */
    switch (b) {
    case TSR_BLEND_OVER: return false;
    case TSR_BLEND_MAX: return !(f > g->lo); /* no pixel below f (NaN: kept by max) */
    case TSR_BLEND_MIN: return !(f < g->hi);
    case TSR_BLEND_ADD: return f == 0.0f && (signbit(f) || !g->negz); /* p + -0 == p */
    case TSR_BLEND_MULTIPLY: return f == 1.0f;
    }
    return false;
}

/* Edge ed (boxed_pattern) over node rect r into px: the shape's box drawn and blended, the fill
 * blended over the rest of the covered rect unless that keeps every pixel. */
static tsr_status
boxed_layer(const tsr_edge *ed, tsr_rect r, float *px, range *g, tsr_error *err)
{
    const tsr_node *c = ed->child;
    const int64_t ox = ed->offset[0], oy = ed->offset[1];
    tsr_rect cc = tsr_edge_covered(ed, r); /* child coordinates */
    if (tsr_rect_empty(cc))
        return TSR_OK;
    tsr_rect bc = tsr_source_box(c->source, cc);
    tsr_rect cp = tsr_rect_shift(cc, ox, oy), bp = tsr_rect_shift(bc, ox, oy);
    range_scan(g, px, r);
    if (!blend_keeps(ed->blend, ed->mask, c->fill, g)) {
        tsr_rect parts[4];
        size_t np = tsr_rect_empty(bp) ? (parts[0] = cp, 1) : tsr_rect_minus(cp, bp, parts);
        const float f = c->fill;
        for (size_t k = 0; k < np; k++) {
            float *P = px + (parts[k].y - r.y) * r.w + (parts[k].x - r.x);
            for (int64_t y = 0; y < parts[k].h; y++) {
                float *row = P + y * r.w;
                for (int64_t x = 0; x < parts[k].w; x++)
                    row[x] = tsr_pw_apply((int)ed->blend, ed->mask, row[x], f, 1);
            }
            range_add(g, P, r.w, parts[k]);
        }
    }
    if (tsr_rect_empty(bc))
        return TSR_OK;
    size_t n = (size_t)bc.w * (size_t)bc.h;
    float *L = malloc(n * sizeof *L);
    uint8_t *cov = malloc((size_t)bc.w);
    if (!L || !cov) {
        free(L);
        free(cov);
        return tsr_fail(err, TSR_ENOMEM, "out of memory (node %s)", c->name);
    }
    /* the child's own pixels: fill, then the shape (an exact or vector outline can run out of
     * memory: an error, never the fill passed off as the shape) */
    tsr_status st = tsr_node_base_draw(c, bc, L, err);
    if (st != TSR_OK) {
        free(L);
        free(cov);
        return st;
    }
    memset(cov, 1, (size_t)bc.w);
    float *P = px + (bp.y - r.y) * r.w + (bp.x - r.x);
    for (int64_t y = 0; y < bc.h; y++)
        tsr_blend_apply(ed->blend, ed->mask, P + y * r.w, L + y * bc.w, cov, (size_t)bc.w);
    range_add(g, P, r.w, bp);
    free(L);
    free(cov);
    return TSR_OK;
}

tsr_status
tsr_cpu_compute_direct(tsr_cpu *cp, const tsr_node *n, tsr_rect r, float *px, tsr_error *err)
{
    /* every node level of the recursion passes here: fail cleanly before the stack runs out
     * (a leaf does not recurse, and the margin covers it) */
    if (n->nedges && tsr_stack_low())
        return out_of_stack(cp, n, err);
    if (stopping(cp))
        return interrupted(err);
    uint64_t t0 = tsr_now_ns(), child_ns = 0;
    size_t count = (size_t)r.w * (size_t)r.h;
    float *L = NULL;
    uint8_t *cov = NULL;
    tsr_status st = TSR_OK;
    if (n->nedges == 0) {
        st = tsr_node_base_draw(n, r, px, err);
        goto done;
    }
    L = malloc(count * sizeof *L);
    cov = malloc(count);
    if (!L || !cov) {
        st = tsr_fail(err, TSR_ENOMEM, "out of memory (node %s)", n->name);
        goto done;
    }
    size_t k = 0;
    const tsr_edge *first = &n->edges[0];
    if (first->blend == TSR_BLEND_OVER && !first->mask) {
        /* The first layer drawn `over` replaces the base wherever it covers: compute it straight
         * into px, and the base (fill, source) only if some pixel is left uncovered. Same
         * values as base-then-blend, one or two passes fewer. */
        bool nothing;
        st = edge_layer(cp, first, r, px, cov, &nothing, &child_ns, err);
        if (st != TSR_OK)
            goto done;
        if (nothing) {
            st = tsr_node_base_draw(n, r, px, err);
        } else if (!all_set(cov, count)) {
            st = tsr_node_base_draw(n, r, L, err);
            for (size_t i = 0; i < count && st == TSR_OK; i++)
                px[i] = cov[i] ? px[i] : L[i];
        }
        k = 1;
    } else {
        st = tsr_node_base_draw(n, r, px, err);
    }
    range g = {false, 0, 0, false};
    for (; k < n->nedges && st == TSR_OK; k++) {
        const tsr_edge *ed = &n->edges[k];
        if (boxed_pattern(ed)) {
            uint64_t b0 = tsr_now_ns();
            st = boxed_layer(ed, r, px, &g, err);
            atomic_fetch_add(&cp->trait_ns[TSR_TRAIT_pattern], tsr_now_ns() - b0);
            continue;
        }
        bool nothing;
        st = edge_layer(cp, ed, r, L, cov, &nothing, &child_ns, err);
        if (st == TSR_OK && !nothing) {
            tsr_blend_apply(ed->blend, ed->mask, px, L, cov, count);
            g.known = false; /* anything may have changed */
        }
    }
done:
    /* sources and layers return early, unfinished, once they see the stop (tiles/stop.c):
     * such pixels must never be cached or emitted */
    if (st == TSR_OK && stopping(cp))
        st = interrupted(err);
    free(L);
    free(cov);
    atomic_fetch_add(&cp->node_ns[n->id], tsr_now_ns() - t0 - child_ns);
    return st;
}

/* A team job's errors: each worker's own (errs[w]), and the first worker that failed, whose
 * error is the job's; once one fails the rest of the items are skipped. */
typedef struct team_errs {
    tsr_error *errs;     /* [threads] */
    _Atomic int failed;  /* set once */
    _Atomic int first;
} team_errs;

/* After worker w's item: record w when its error is the job's first. */
static void
team_errs_note(team_errs *t, int w)
{
    if (t->errs[w].status != TSR_OK && atomic_exchange(&t->failed, 1) == 0)
        atomic_store(&t->first, w);
}

/* The job's status, its first error into err. */
static tsr_status
team_errs_take(team_errs *t, tsr_error *err)
{
    if (!atomic_load(&t->failed))
        return TSR_OK;
    const tsr_error *e = &t->errs[atomic_load(&t->first)];
    if (err)
        *err = *e;
    return e->status;
}

/* One band's root rects, shared by the team (cpu/pool.c). */
typedef struct batch {
    tsr_cpu *cp;
    const tsr_rect *rects;
    size_t n;
    bool far;            /* claimed in far_order: several threads */
    tsr_emit_fn emit;
    void *ctx;
    int64_t maxpx;
    float **px;          /* [threads] each worker's rect buffer, made on its first rect */
    team_errs te;
} batch;

/* The k-th rect claimed is rect far_order(k): 0, n-1, 1, n-2, ... Threads claim in turn, so
 * two threads work from the band's two ends inwards rather than on neighbours, which share
 * child tiles (a lattice's motif, a field under a repeat) and would wait for each other's
 * computation of them (a wafer-map region at 2 threads: 216 cache waits, 31 after); each
 * still walks its own neighbours in turn. */
static size_t
far_order(size_t k, size_t n)
{
    return k % 2 == 0 ? k / 2 : n - 1 - k / 2;
}

static void
batch_rect(void *ctx, int w, size_t k)
{
    batch *b = ctx;
    tsr_cpu *cp = b->cp;
    tsr_error *mine = &b->te.errs[w];
    if (atomic_load(&b->te.failed))
        return;
    if (b->far)
        k = far_order(k, b->n);
    if (!b->px[w] && !(b->px[w] = malloc((size_t)b->maxpx * sizeof(float))))
        tsr_fail(mine, TSR_ENOMEM, "out of memory (band)");
    else if (stopping(cp))
        interrupted(mine);
    if (mine->status == TSR_OK) {
        tsr_stop_bind(cp->ctx->opts->stop); /* the long loops of sources and layers poll it */
        if (tsr_cpu_compute(cp, cp->ctx->d->root, b->rects[k], b->px[w], mine) == TSR_OK)
            b->emit(b->ctx, k, b->px[w]);
        tsr_stop_bind(NULL);
    }
    team_errs_note(&b->te, w);
}

tsr_status
tsr_cpu_team(tsr_cpu *cp, tsr_error *err)
{
    if (!cp->pool && !(cp->pool = tsr_pool_new(cp->ctx->threads, cp->ctx->stack)))
        return tsr_fail(err, TSR_ENOMEM, "cannot start %d worker threads (%s)", cp->ctx->threads - 1,
                        strerror(errno));
    return TSR_OK;
}

/* One node's rect cut into strips of rows, shared by the team (tsr_cpu_compute_team). */
typedef struct strips {
    tsr_cpu *cp;
    const tsr_node *n;
    tsr_rect r;
    float *px;
    int64_t rows;        /* per strip; the last is shorter */
    team_errs te;
} strips;

static void
strip_rect(void *ctx, int w, size_t k)
{
    strips *b = ctx;
    tsr_error *mine = &b->te.errs[w];
    if (atomic_load(&b->te.failed) || mine->status != TSR_OK)
        return;
    int64_t y = b->r.y + (int64_t)k * b->rows;
    int64_t h = b->r.y + b->r.h - y < b->rows ? b->r.y + b->r.h - y : b->rows;
    tsr_rect sub = tsr_rect_make(b->r.x, y, b->r.w, h);
    if (stopping(b->cp))
        interrupted(mine);
    else {
        tsr_stop_bind(b->cp->ctx->opts->stop);
        tsr_cpu_compute(b->cp, b->n, sub, b->px + (size_t)(y - b->r.y) * (size_t)b->r.w, mine);
        tsr_stop_bind(NULL);
    }
    team_errs_note(&b->te, w);
}

tsr_status
tsr_cpu_compute_team(tsr_cpu *cp, const tsr_node *n, tsr_rect r, float *px, tsr_error *err)
{
    tsr_status st = tsr_cpu_team(cp, err);
    if (st != TSR_OK)
        return st;
    int threads = tsr_pool_threads(cp->pool);
    /* two strips a thread (their costs differ: a lattice's edge, an empty margin), of at least
     * STRIP_ROWS rows, so that a row's tiles are not fetched by many strips */
    enum { STRIP_ROWS = 8 };
    int64_t rows = (r.h + 2 * threads - 1) / (2 * threads);
    if (rows < STRIP_ROWS)
        rows = STRIP_ROWS;
    size_t nstrips = (size_t)((r.h + rows - 1) / rows);
    if (threads == 1 || nstrips < 2)
        return tsr_cpu_compute(cp, n, r, px, err);
    strips b = {cp, n, r, px, rows, {calloc((size_t)threads, sizeof(tsr_error)), 0, 0}};
    if (!b.te.errs)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (strips of %s)", n->name);
    tsr_pool_run(cp->pool, nstrips, strip_rect, &b);
    st = team_errs_take(&b.te, err);
    free(b.te.errs);
    return st;
}

tsr_status
tsr_cpu_team_run(tsr_cpu *cp, size_t n, void (*fn)(void *fctx, int worker, size_t k), void *fctx,
                 tsr_error *err)
{
    tsr_status st = tsr_cpu_team(cp, err);
    if (st == TSR_OK)
        tsr_pool_run(cp->pool, n, fn, fctx);
    return st;
}

int
tsr_cpu_team_threads(const tsr_cpu *cp)
{
    return cp->ctx->threads > 0 ? cp->ctx->threads : 1;
}

tsr_status
tsr_cpu_root_batch(tsr_cpu *cp, const tsr_rect *rects, size_t n, tsr_emit_fn emit, void *ctx,
                   tsr_error *err)
{
    tsr_status st = tsr_cpu_team(cp, err);
    if (st != TSR_OK)
        return st;
    batch b = {cp, rects, n, false, emit, ctx, 0, NULL, {NULL, 0, 0}};
    for (size_t k = 0; k < n; k++)
        if (rects[k].w * rects[k].h > b.maxpx)
            b.maxpx = rects[k].w * rects[k].h;
    int threads = tsr_pool_threads(cp->pool);
    b.far = threads > 1; /* one thread keeps neighbours in turn: their shared tiles stay warm */
    b.px = calloc((size_t)threads, sizeof *b.px);
    b.te.errs = calloc((size_t)threads, sizeof *b.te.errs);
    if (!b.px || !b.te.errs) {
        free(b.px);
        free(b.te.errs);
        return tsr_fail(err, TSR_ENOMEM, "out of memory (band)");
    }
    tsr_pool_run(cp->pool, n, batch_rect, &b);
    for (int w = 0; w < threads; w++)
        free(b.px[w]);
    st = team_errs_take(&b.te, err);
    free(b.px);
    free(b.te.errs);
    return st;
}

tsr_cpu *
tsr_cpu_new(const tsr_backend_ctx *ctx, int64_t cache_bytes, tsr_error *err)
{
    tsr_cpu *cp = calloc(1, sizeof *cp);
    if (cp) {
        cp->ctx = ctx;
        cp->node_ns = calloc(ctx->d->nnodes, sizeof *cp->node_ns);
        cp->cache = tsr_cache_new(cache_bytes > 0 ? (size_t)cache_bytes : 0);
    }
    if (!cp || !cp->node_ns || !cp->cache) {
        tsr_cpu_free(cp);
        tsr_fail(err, TSR_ENOMEM, "out of memory (host tile cache)");
        return NULL;
    }
    return cp;
}

void
tsr_cpu_free(tsr_cpu *cp)
{
    if (!cp)
        return;
    tsr_pool_free(cp->pool); /* its threads may hold pins: gone before the cache */
    tsr_cache_free(cp->cache);
    free(cp->node_ns);
    free(cp->root_period);
    free(cp);
}

tsr_cache *
tsr_cpu_cache(tsr_cpu *cp)
{
    return cp->cache;
}

void
tsr_cpu_stats(tsr_cpu *cp, tsr_engine_stats *st)
{
    tsr_cache_stats cs = tsr_cache_get_stats(cp->cache);
    st->hits += cs.hits;
    st->misses += cs.misses;
    st->evictions += cs.evictions;
    st->waits += cs.waits;
    st->overflow += cs.overflow;
    st->cache_bytes += (int64_t)cs.bytes;
    st->cache_peak += (int64_t)cs.peak_bytes;
    for (size_t i = 0; i < cp->ctx->d->nnodes && i < st->nnodes && st->node_seconds; i++)
        st->node_seconds[i] += (double)atomic_load(&cp->node_ns[i]) * 1e-9;
    for (size_t i = 0; i < TSR_TRAIT_COUNT; i++)
        st->trait_seconds[i] += (double)atomic_load(&cp->trait_ns[i]) * 1e-9;
    st->busy_seconds += cp->pool ? (double)tsr_pool_busy_ns(cp->pool) * 1e-9 : 0.0;
}
