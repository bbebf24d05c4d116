/* cache: the LRU tile cache, keyed by (node id, tx, ty), under a hard byte budget.
 *
 * The cache is only an accelerator: a result never depends on what it holds. Every tile it
 * returns is pinned for the caller until tsr_cache_release; a pinned tile is never evicted.
 * A tile is computed by exactly one thread: the first to acquire a missing key becomes its
 * computer (must_compute = true) and must publish or abandon it; others acquiring the same
 * key meanwhile wait for it.
 *
 * Budget: `bytes` (tiles held by the cache) never exceeds the budget. A tile published when
 * everything else is pinned and it does not fit is handed to its holders as *transient*: it
 * lives until its last pin goes, then is freed, and is counted in `overflow`. The engine's
 * memory plan budgets those separately (pinned working set per thread).
 *
 * All functions are thread-safe (one mutex, one condition variable). */
#ifndef TSR_CACHE_H
#define TSR_CACHE_H

#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tsr_cache tsr_cache;
typedef struct tsr_cache_entry tsr_cache_entry;

typedef struct tsr_cache_key {
    int64_t node; /* node id (or any namespace the caller chooses) */
    int64_t tx, ty;
} tsr_cache_key;

typedef struct tsr_cache_stats {
    uint64_t hits;      /* acquire found the tile ready (or waited for it) */
    uint64_t misses;    /* acquire made the caller the computer */
    uint64_t evictions; /* tiles dropped to stay under budget */
    uint64_t waits;     /* acquires that waited for another thread's computation */
    uint64_t overflow;  /* tiles that could not be cached (transient) */
    uint64_t reused;    /* evictions whose memory tsr_cache_tile_new handed to a new tile */
    size_t bytes;       /* bytes of cached tiles now */
    size_t peak_bytes;  /* most bytes ever held, cached plus transient */
    size_t budget;      /* the budget it was made with */
} tsr_cache_stats;

/* A cache of at most `budget` bytes (tsr_cache_tile_cost of each tile, or the tile's own
 * `bytes` when its memory is another owner's: tiles/tiles.h). NULL on out of memory. A budget of 0 caches nothing (every tile transient). */
tsr_cache *
tsr_cache_new(size_t budget);

/* The bytes a cached tile of rect r really takes: its pixels and struct (tsr_tile_bytes),
 * its cache entry, the hash table's share and the allocator's overhead. What the budget and
 * the byte counts are in. 0 for an invalid rect. */
size_t
tsr_cache_tile_cost(tsr_rect r);

/* Frees every tile. No entry may still be pinned. NULL is fine. */
void
tsr_cache_free(tsr_cache *c);

/* Pin tile `key`. Returns NULL only on out of memory. If *must_compute comes back true the
 * caller owns the computation: it must call tsr_cache_publish or tsr_cache_abandon exactly
 * once, and still tsr_cache_release after publishing. Otherwise tsr_cache_tile(e) is ready. */
tsr_cache_entry *
tsr_cache_acquire(tsr_cache *c, tsr_cache_key key, bool *must_compute);

/* The tile of a ready entry (borrowed; valid while pinned). */
const tsr_tile *
tsr_cache_tile(const tsr_cache_entry *e);

/* A tile of rect r to compute into (then publish, or tsr_tile_free). When the cache is full,
 * the least recently used unpinned tile of the same size is evicted now and its memory
 * reused: a cache that churns (more tiles than fit, every band) then neither faults in fresh
 * pages for each tile nor leaves holes behind. Else tsr_tile_new. NULL on out of memory;
 * `c` may be NULL. Thread-safe. */
tsr_tile *
tsr_cache_tile_new(tsr_cache *c, tsr_rect r);

/* Hand the computed tile to the cache (ownership taken), wake waiters. The caller's pin stays.
 * May evict other unpinned tiles. */
void
tsr_cache_publish(tsr_cache *c, tsr_cache_entry *e, tsr_tile *tile);

/* The computation failed: drop the entry (and the caller's pin). One waiter, if any, becomes
 * the new computer. */
void
tsr_cache_abandon(tsr_cache *c, tsr_cache_entry *e);

/* Drop one pin taken by tsr_cache_acquire. */
void
tsr_cache_release(tsr_cache *c, tsr_cache_entry *e);

/* Called by tsr_cache_acquire for every acquire that returns an entry: `computed` is true when
 * that call made the caller the computer, false when it found the tile ready (after waiting,
 * if it did). It runs with the cache's lock held, so calls never overlap (whichever thread
 * acquires) and it must not call the cache. Tests use it to record the tiles a computation
 * asks for. */
typedef void (*tsr_cache_observer)(void *ctx, tsr_cache_key key, bool computed);

/* Install `fn` (NULL removes it) with its `ctx` (borrowed). Thread-safe, but acquires already
 * under way may still call the previous observer. */
void
tsr_cache_set_observer(tsr_cache *c, tsr_cache_observer fn, void *ctx);

/* Evict the least recently used unpinned tile now (its tile is freed: a tile with `release`
 * goes back to its owner, tiles/tiles.h). False when every tile is pinned or there is none.
 * For an owner that carves tiles from a fixed pool (the GPU backend's device tiles): when the
 * pool is empty it asks the cache to give one back. */
bool
tsr_cache_evict_lru(tsr_cache *c);

/* A consistent snapshot of the counters. */
tsr_cache_stats
tsr_cache_get_stats(tsr_cache *c);

#endif
