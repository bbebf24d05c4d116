/* cpu: the CPU backend, and the reference evaluator every other backend, the previews and the
 * tests call openly.
 *
 * A tsr_cpu evaluates nodes over rects: a node's pixels = its base (fill, source), then every
 * edge's layer blended in order; child pixels come through its host tile cache, the first
 * thread to need a child tile computing it (recursively), the others waiting for it or finding
 * it cached. A node that repeats (tsr_backend_ctx.inner) is copied from its period tile inside
 * its interior. Its worker team (cpu/pool.c) starts on first use. cpu/backend.c is the backend
 * table over it; the GPU backend keeps one for the nodes it leaves to the host and for period
 * tiles. */
#ifndef TSR_CPU_H
#define TSR_CPU_H

#include "cache/cache.h"
#include "engine/backend.h"

#include <stdint.h>

typedef struct tsr_cpu tsr_cpu;

/* An evaluator over ctx (borrowed, must outlive it) with a host tile cache of `cache_bytes`.
 * NULL on out of memory (err filled). */
tsr_cpu *
tsr_cpu_new(const tsr_backend_ctx *ctx, int64_t cache_bytes, tsr_error *err);

/* Stops its team and frees it. NULL is fine. */
void
tsr_cpu_free(tsr_cpu *c);

/* Node n over rect r (inside the node) into px (r.w * r.h floats). Thread-safe; recursive
 * through the cache for children. Fails with TSR_ENOMEM, TSR_EINTR (a stop), or what a layer
 * reports. */
tsr_status
tsr_cpu_compute(tsr_cpu *c, const tsr_node *n, tsr_rect r, float *px, tsr_error *err);

/* tsr_cpu_compute of n over r cut into strips of rows on c's team (started if need be), the
 * caller included: how the GPU backend computes the nodes it leaves to the host. Not from two
 * threads at once (one team job at a time); from inside a team item it runs inline. */
tsr_status
tsr_cpu_compute_team(tsr_cpu *c, const tsr_node *n, tsr_rect r, float *px, tsr_error *err);

/* fn(fctx, worker, k) for every k in [0, n) on c's team (started if need be), the caller
 * included, workers 0 .. tsr_cpu_team_threads - 1: host work of the GPU backend that is not a
 * node (a chunk's polygons in pieces). Same rule as tsr_cpu_compute_team: one job at a time. */
tsr_status
tsr_cpu_team_run(tsr_cpu *c, size_t n, void (*fn)(void *fctx, int worker, size_t k), void *fctx,
                 tsr_error *err);

/* The team's size as tsr_cpu_team_run numbers its workers (the context's threads). */
int
tsr_cpu_team_threads(const tsr_cpu *c);

/* The same without the periodic shortcut: fill, source, then every edge. */
tsr_status
tsr_cpu_compute_direct(tsr_cpu *c, const tsr_node *n, tsr_rect r, float *px, tsr_error *err);

/* Start c's worker team (ctx->threads, ctx->stack) if it is not running yet. */
tsr_status
tsr_cpu_team(tsr_cpu *c, tsr_error *err);

/* Compute the root rects rects[0..n) in parallel and call emit(ctx, k, px) for each (from a
 * worker thread; px valid during the call). First error wins; the rest are skipped. */
typedef void (*tsr_emit_fn)(void *ctx, size_t k, const float *px);
tsr_status
tsr_cpu_root_batch(tsr_cpu *c, const tsr_rect *rects, size_t n, tsr_emit_fn emit, void *ctx,
                   tsr_error *err);

/* Band j as the CPU backend makes it: the periodic shortcut over the root's interior, the rest
 * in root tiles on c's team, quantized into j->dst. The GPU backend's way for a root it leaves
 * to the host (no device work, nothing across the link). */
tsr_status
tsr_cpu_band(tsr_cpu *c, const tsr_band_job *j, tsr_error *err);

/* Root rect r cut into pieces one root tile wide (the last narrower) and r.h tall, into *out
 * (malloc'd): the rects the CPU computes a band in. Returns their count; 0 on out of memory. */
size_t
tsr_cpu_cut_rects(const tsr_backend_ctx *ctx, tsr_rect r, tsr_rect **out);

/* A periodic root's period (tsr_period_rect) as output samples, computed by the reference
 * and converted once, kept by c (*out valid until c is freed). */
tsr_status
tsr_cpu_root_period(tsr_cpu *c, const uint8_t **out, tsr_error *err);

/* The part of band j inside the root's periodic interior (the whole band when the root is
 * periodic everywhere) filled by row copies of the converted period on c's team; rest[0 ..
 * *nrest) get what is left to compute (the band itself when the root does not repeat). */
tsr_status
tsr_cpu_fill_inner(tsr_cpu *c, const tsr_band_job *j, tsr_rect rest[4], size_t *nrest,
                   tsr_error *err);

/* tsr_cpu_fill_inner for a root periodic over its whole rect: *done when it filled the band
 * (then synchronously), false (and nothing done) otherwise. */
tsr_status
tsr_cpu_fill_periodic(tsr_cpu *c, const tsr_band_job *j, bool *done, tsr_error *err);

/* `row` bytes of a periodic row into dst, from one period's row src of `prow` bytes starting at
 * byte x0b: one period from that phase, then doubling copies of what is already there. */
void
tsr_period_row(const uint8_t *src, size_t prow, size_t x0b, uint8_t *dst, size_t row);

/* c's figures into st: host cache counters, seconds per node and per trait (added into
 * st->node_seconds, which holds st->nnodes entries, and st->trait_seconds), team time. */
void
tsr_cpu_stats(tsr_cpu *c, tsr_engine_stats *st);

/* The host tile cache (its counters; the GPU's host nodes share it). */
tsr_cache *
tsr_cpu_cache(tsr_cpu *c);

/* Child rects of one edge layer that compute.c keeps in its own frame; more (up to
 * TSR_NEED_MAX) take TSR_FETCH_BYTES each on the heap (the plan counts them). That frame is on
 * the stack once per node level while children compute (docs/reliability.md, "Deep chains and
 * thread stacks"), and most edges need one to four rects. */
#define TSR_FETCH_INLINE 4
#define TSR_FETCH_BYTES (sizeof(tsr_view) + 2 * sizeof(void *)) /* view, pin, copy */

/* ---- thread stacks (cpu/stack.c) ------------------------------------------------------------
 * The evaluator recurses once per node level on its workers and the caller's thread. */

/* Stack the recursion leaves free below its last check: one more node level (a few KiB), a
 * leaf's layer() (blur keeps 4 KiB), malloc and, under ASan, its runtime. */
#define TSR_STACK_MARGIN ((size_t)128 << 10)

/* True when the caller's frame lies within TSR_STACK_MARGIN of the end of its thread's stack.
 * The first call on a thread learns the stack's bounds (cached thread-locally); a thread whose
 * bounds cannot be learned is never low. Thread-safe. */
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

/* TSR_EPLAN naming the remedy when `threads` stacks of `stack` bytes (for a chain of `nest`
 * nodes) and `minimum` bytes of plan do not fit the address space an RLIMIT_AS (ulimit -v)
 * leaves. Changes nothing. */
tsr_status
tsr_stack_check(int threads, size_t stack, int64_t nest, int64_t minimum, tsr_error *err);

#endif
