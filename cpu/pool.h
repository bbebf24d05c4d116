/* A team of worker threads for the CPU backend (cpu-internal).
 *
 * Why not an OpenMP parallel region per band: libgomp's threads spin at the region's end
 * (GOMP_SPINCOUNT, 300000 turns) before they sleep, and a spinning thread takes the core the
 * last worker, the sink's writer or another process needs. On a 2-core box with load, two
 * threads then ran a design at a third of one thread's rate (docs/performance.md). This team's
 * idle threads sleep on a condition variable at once, and it counts each thread's busy time for
 * `tessera profile`. */
#ifndef TSR_CPU_POOL_H
#define TSR_CPU_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct tsr_pool tsr_pool;

/* A team of `threads` (the caller counts as one: threads - 1 are started, each with a stack
 * of `stack` bytes, 0 for the process default). NULL on failure (out of memory, or a thread
 * the system refused: errno is kept). */
tsr_pool *
tsr_pool_new(int threads, size_t stack);

/* Stops and joins the workers. NULL is fine. */
void
tsr_pool_free(tsr_pool *p);

/* Items handed to fn as they are claimed, one at a time, in order. `worker` is the caller's
 * 0 or a worker's 1..threads-1 (for per-thread state in ctx). */
typedef void (*tsr_pool_fn)(void *ctx, int worker, size_t item);

/* fn(ctx, worker, k) for every k in [0, n), spread over the team, the caller included;
 * returns when all are done. One job at a time: the engine runs it from one caller thread
 * (engine.h); a call from inside an item (never made today) runs its items inline. */
void
tsr_pool_run(tsr_pool *p, size_t n, tsr_pool_fn fn, void *ctx);

/* Team size, the caller included. */
int
tsr_pool_threads(const tsr_pool *p);

/* Nanoseconds the team spent inside items since it started, summed over its threads. */
uint64_t
tsr_pool_busy_ns(const tsr_pool *p);

#endif
