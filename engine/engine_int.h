/* engine internals shared by its files. */
#ifndef TSR_ENGINE_INT_H
#define TSR_ENGINE_INT_H

#include "cache/cache.h"
#include "engine/engine.h"
#include "engine/pool.h"
#include "stream/stream.h"

#include <stdatomic.h>

/* Where a node repeats (engine/plan.c): value(x, y) = value(x + p[0], y) = value(x, y + p[1])
 * wherever both points lie inside `in` (node coordinates); p[0] == 0 when nowhere. One period
 * tile, in's top-left p[0] x p[1], is computed and copied over `in` (compute.c). */
typedef struct tsr_inner {
    int64_t p[2];
    tsr_rect in;
} tsr_inner;

struct tsr_engine {
    const tsr_design *d;
    tsr_engine_opts opts;
    tsr_plan plan;
    tsr_cache *cache;
    int threads;
    const struct tsr_backend_ops *ops; /* the backend computing pixels (engine/backend.h) */
    void *bk;                   /* its state */
    int64_t band_rows;          /* rows per stream band (the backend's choice) */
    int64_t band_bytes;         /* 0, or the bytes a band should hold whatever its width (a
                                 * backend that pins its buffers: profile's regions) */
    int depth;                  /* bands the backend keeps in flight */
    int64_t writer_bufs;        /* writer buffers of band_rows rows (the host plan's bands) */
    tsr_writer_mem wmem;        /* a pinning backend's writer pool, kept across streams */
    int64_t *tile;              /* per node id: tile edge in use */
    tsr_grid *grid;             /* per node id */
    _Atomic uint64_t *node_ns;  /* per node id: nanoseconds computing its pixels (self) */
    _Atomic uint64_t trait_ns[16]; /* per trait table index: nanoseconds in layer + blend */
    double *node_seconds;       /* filled by get_stats */
    int64_t rows0, rows1;       /* the crop: stream rows [rows0, rows1) of the root */
    tsr_inner *inner;           /* per node id: where it repeats, whole nodes included
                                 * (plan.c), else p[0] == 0 */
    bool *uncached;             /* per node id: read by one pattern edge only, so computed
                                 * straight into that parent's buffer, never cached (plan.c) */
    uint8_t *root_period;       /* a periodic root's period as output samples, made by the
                                 * first band that needs it (engine.c), else NULL */
    int64_t nest;               /* nodes on the design's longest chain, the root included */
    int64_t design_bytes;       /* what the loaded design keeps on the heap (plan: fixed) */
    size_t stack;               /* the stack its worker threads get (stack.c) */
    tsr_pool *pool;             /* the CPU backend's worker team, started on first use */
};

/* Columns of a stream band: the swath's in swath order (the last may be narrower), else the
 * root's width. */
static inline int64_t
tsr_band_width(const tsr_design *d)
{
    const tsr_output *o = &d->out;
    return o->order == TSR_ORDER_SWATH && o->swath_width < d->root->w ? o->swath_width
                                                                      : d->root->w;
}

/* Whether node n repeats somewhere (engine/plan.c). */
static inline bool
tsr_repeats(const struct tsr_engine *e, const tsr_node *n)
{
    return e->inner && e->inner[n->id].p[0];
}

/* Whether node n repeats over its whole rect: its period tile then sits at the origin, and a
 * whole root streams by copies of converted rows. */
static inline bool
tsr_periodic_whole(const struct tsr_engine *e, const tsr_node *n)
{
    const tsr_rect in = tsr_repeats(e, n) ? e->inner[n->id].in : tsr_rect_make(0, 0, 0, 0);
    return in.x == 0 && in.y == 0 && in.w == n->w && in.h == n->h;
}

/* Node n's period tile's rect: the period at the top-left of where it repeats. */
static inline tsr_rect
tsr_period_rect(const struct tsr_engine *e, const tsr_node *n)
{
    const tsr_inner *per = &e->inner[n->id];
    return tsr_rect_make(per->in.x, per->in.y, per->p[0], per->p[1]);
}

/* `row` bytes of a periodic row into dst, from one period's row src of `prow` bytes starting at
 * byte x0b: one period from that phase, then doubling copies of what is already there (a
 * whole number of periods each time). Float rows of a period tile (compute.c) and sample rows
 * of a periodic root's band (engine.c) alike. */
void
tsr_period_row(const uint8_t *src, size_t prow, size_t x0b, uint8_t *dst, size_t row);

/* Child rects of one edge layer that compute.c keeps in its own frame; more (up to
 * TSR_NEED_MAX) take TSR_FETCH_BYTES each on the heap (the plan counts them). That frame is on
 * the stack once per node level while children compute (docs/reliability.md, "Deep chains and
 * thread stacks"), and most edges need one to four rects. */
#define TSR_FETCH_INLINE 4
#define TSR_FETCH_BYTES (sizeof(tsr_view) + 2 * sizeof(void *)) /* view, pin, copy */

/* Compute node `n` over rect r (inside the node) into px (r.w * r.h floats). Thread-safe;
 * recursive through the cache for children. CPU backend. */
tsr_status
tsr_cpu_compute(tsr_engine *e, const tsr_node *n, tsr_rect r, float *px, tsr_error *err);

/* The same without the periodic shortcut: fill, source, then every edge. */
tsr_status
tsr_cpu_compute_direct(tsr_engine *e, const tsr_node *n, tsr_rect r, float *px, tsr_error *err);

/* malloc's settings for tiles (compute.c): once per process, before threads start. */
void
tsr_cpu_tune_malloc(void);

/* Start e's worker team (e->threads, e->stack) if it is not running yet. */
tsr_status
tsr_cpu_team(tsr_engine *e, tsr_error *err);

/* Compute the root rects rects[0..n) in parallel and call emit(ctx, k, px) for each (from a
 * worker thread; px valid during the call). First error wins; the rest are skipped. */
typedef void (*tsr_emit_fn)(void *ctx, size_t k, const float *px);
tsr_status
tsr_cpu_root_batch(tsr_engine *e, const tsr_rect *rects, size_t n, tsr_emit_fn emit, void *ctx,
                   tsr_error *err);

/* Root rect r cut into pieces one root tile wide (the last narrower) and r.h tall, into *out
 * (malloc'd): the rects the CPU backend computes a band in, and the band schedule's chunks
 * (engine/schedule.c). Returns their count; 0 on out of memory. */
size_t
tsr_cpu_cut_rects(const tsr_engine *e, tsr_rect r, tsr_rect **out);

/* Fill e->plan, e->nest and e->stack for e->opts and set up thread stacks (stack.c);
 * TSR_EPLAN when the plan does not fit, or its threads do not fit ulimit -v. */
tsr_status
tsr_plan_make(tsr_engine *e, tsr_error *err);

uint64_t
tsr_now_ns(void);

/* ---- thread stacks (stack.c) ---------------------------------------------------------- */

/* Stack the recursion leaves free below its last check: one more node level (a few KiB), a
 * leaf's layer() (blur keeps 4 KiB), malloc, libgomp and, under ASan, its runtime. */
#define TSR_STACK_MARGIN ((size_t)128 << 10)

/* True when the caller's frame lies within TSR_STACK_MARGIN of the end of its thread's stack,
 * so recursing further could overflow it. The first call on a thread learns the stack's
 * bounds (pthread_getattr_np, cached thread-locally); a thread whose bounds cannot be learned
 * is never low. Thread-safe; no allocation after the first call. */
bool
tsr_stack_low(void);

/* The calling thread's stack size as tsr_stack_low counts it (0 when unknown); *main_thread
 * (may be NULL) tells whether it is the process's initial thread, whose stack is ulimit -s. */
size_t
tsr_stack_size(bool *main_thread);

/* Nodes on the longest chain of d, the root included; -1 when out of memory. */
int64_t
tsr_design_depth(const tsr_design *d);

/* The thread stack a chain of `depth` nested nodes needs (whole MiB, at least a floor). */
size_t
tsr_stack_for_depth(int64_t depth);

/* The part of such a stack a render touches (resident): what the memory plan counts. */
int64_t
tsr_stack_touched(int64_t depth);

/* After the plan fits (e->plan, e->threads, e->stack, e->nest set): refuse with TSR_EPLAN,
 * naming the remedy, when the threads' stacks and the plan's minimum do not fit the address
 * space an RLIMIT_AS (ulimit -v) leaves; then make e->stack the default stack of threads the
 * process creates from now on (never below what an earlier engine or the host asked for). */
tsr_status
tsr_stack_setup(tsr_engine *e, tsr_error *err);

#endif
