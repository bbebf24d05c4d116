/* cache: LRU order, byte budget, pins, transient tiles, exact counters, one computer per key,
 * abandon hand-off, and many threads hammering a tiny cache. Every tile's pixels encode its
 * key, so a tile handed out for the wrong key (or freed under a reader) shows up as a wrong
 * value, and under ASan as a use-after-free. */
#include <criterion/criterion.h>

#include "cache/cache.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

/* ---- helpers ---------------------------------------------------------------- */

#define EDGE 16 /* default test tile edge */

static tsr_cache_key
key(int64_t node, int64_t tx, int64_t ty)
{
    tsr_cache_key k = {node, tx, ty};
    return k;
}

/* A value no other test key shares, exact in float32 for the small keys used here. */
static float
code(tsr_cache_key k)
{
    return (float)(k.node * 10000 + k.tx * 100 + k.ty);
}

static size_t
tile_bytes(int64_t w, int64_t h)
{
    return tsr_cache_tile_cost(tsr_rect_make(0, 0, w, h));
}

/* Bytes of one EDGE x EDGE tile: the unit budgets are counted in. */
static size_t
unit(void)
{
    return tile_bytes(EDGE, EDGE);
}

static tsr_tile *
make_tile(tsr_cache_key k, int64_t w, int64_t h)
{
    tsr_tile *t = tsr_tile_new(tsr_rect_make(k.tx * w, k.ty * h, w, h));
    if (!t)
        return NULL;
    for (int64_t i = 0; i < w * h; i++)
        t->px[i] = code(k);
    return t;
}

static bool
tile_holds(const tsr_tile *t, tsr_cache_key k, int64_t w, int64_t h)
{
    if (!t || t->r.w != w || t->r.h != h || t->r.x != k.tx * w || t->r.y != k.ty * h)
        return false;
    for (int64_t i = 0; i < w * h; i++)
        if (t->px[i] != code(k))
            return false;
    return true;
}

/* Acquire `k`, computing it (w x h) when asked to; the entry comes back pinned. */
static tsr_cache_entry *
get_sized(tsr_cache *c, tsr_cache_key k, int64_t w, int64_t h, bool *computed)
{
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, k, &must);
    cr_assert_not_null(e);
    if (must) {
        cr_assert_null(tsr_cache_tile(e), "a tile being computed has no pixels yet");
        tsr_tile *t = make_tile(k, w, h);
        cr_assert_not_null(t);
        tsr_cache_publish(c, e, t);
    }
    cr_assert(tile_holds(tsr_cache_tile(e), k, w, h));
    if (computed)
        *computed = must;
    return e;
}

static tsr_cache_entry *
get(tsr_cache *c, tsr_cache_key k, bool *computed)
{
    return get_sized(c, k, EDGE, EDGE, computed);
}

/* Acquire and release at once; returns whether the tile had to be computed. */
static bool
touch(tsr_cache *c, tsr_cache_key k)
{
    bool computed;
    tsr_cache_release(c, get(c, k, &computed));
    return computed;
}

/* Whether `k` is held (ready) now. Costs one hit or one miss and, on a hit, makes `k` the most
 * recently used; on a miss leaves nothing behind. */
static bool
held(tsr_cache *c, tsr_cache_key k)
{
    bool must;
    tsr_cache_entry *e = tsr_cache_acquire(c, k, &must);
    cr_assert_not_null(e);
    if (must) {
        tsr_cache_abandon(c, e);
        return false;
    }
    tsr_cache_release(c, e);
    return true;
}

static void
nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Wait until `n` acquires are blocked on someone else's computation (stats.waits counts an
 * acquire when it starts waiting). */
static void
await_waits(tsr_cache *c, uint64_t n)
{
    for (int i = 0; i < 20000 && tsr_cache_get_stats(c).waits < n; i++)
        nap_ms(1);
    cr_assert_eq(tsr_cache_get_stats(c).waits, n);
    /* "counted" happens just before the cond wait; give the thread time to reach it (the
     * result does not depend on it, only which path gets exercised) */
    nap_ms(20);
}

/* ---- single thread: basics ------------------------------------------------------ */

Test(cache, new_cache_reports_its_budget_and_zero_counters)
{
    tsr_cache *c = tsr_cache_new(12345);
    cr_assert_not_null(c);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.budget, 12345);
    cr_assert_eq(s.hits + s.misses + s.evictions + s.waits + s.overflow, 0);
    cr_assert_eq(s.bytes, 0);
    cr_assert_eq(s.peak_bytes, 0);
    tsr_cache_free(c);
}

Test(cache, free_of_null_is_a_no_op)
{
    tsr_cache_free(NULL);
}

Test(cache, first_acquire_makes_the_caller_the_computer)
{
    tsr_cache *c = tsr_cache_new(4 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(1, 2, 3), &must);
    cr_assert_not_null(e);
    cr_assert(must);
    cr_assert_null(tsr_cache_tile(e));
    tsr_tile *t = make_tile(key(1, 2, 3), EDGE, EDGE);
    tsr_cache_publish(c, e, t);
    cr_assert_eq(tsr_cache_tile(e), t, "the published tile is the one handed out");
    tsr_cache_release(c, e);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.hits, 0);
    cr_assert_eq(s.bytes, unit());
    tsr_cache_free(c);
}

Test(cache, published_tile_is_a_hit_for_the_next_acquire)
{
    tsr_cache *c = tsr_cache_new(4 * unit());
    tsr_cache_entry *e = get(c, key(1, 0, 0), NULL);
    const tsr_tile *t = tsr_cache_tile(e);
    tsr_cache_release(c, e);

    bool must = true;
    tsr_cache_entry *f = tsr_cache_acquire(c, key(1, 0, 0), &must);
    cr_assert_not_null(f);
    cr_assert_not(must);
    cr_assert_eq(tsr_cache_tile(f), t);
    cr_assert(tile_holds(tsr_cache_tile(f), key(1, 0, 0), EDGE, EDGE));
    tsr_cache_release(c, f);
    cr_assert_eq(tsr_cache_get_stats(c).hits, 1);
    tsr_cache_free(c);
}

Test(cache, keys_differing_in_one_field_are_different_tiles)
{
    tsr_cache *c = tsr_cache_new(8 * unit());
    cr_assert(touch(c, key(1, 2, 3)));
    cr_assert(touch(c, key(2, 2, 3)));
    cr_assert(touch(c, key(1, 3, 3)));
    cr_assert(touch(c, key(1, 2, 4)));
    cr_assert(touch(c, key(-1, -2, -3)));
    cr_assert_not(touch(c, key(1, 2, 3)));
    cr_assert_not(touch(c, key(-1, -2, -3)));
    tsr_cache_free(c);
}

/* ---- eviction order and pins ------------------------------------------------------ */

Test(cache, least_recently_used_tile_is_evicted_first)
{
    tsr_cache *c = tsr_cache_new(3 * unit());
    touch(c, key(0, 0, 0)); /* A */
    touch(c, key(0, 1, 0)); /* B */
    touch(c, key(0, 2, 0)); /* C */
    touch(c, key(0, 0, 0)); /* A used again: B is now the oldest */
    touch(c, key(0, 3, 0)); /* D must push one out */
    cr_assert_eq(tsr_cache_get_stats(c).evictions, 1);
    cr_assert_not(held(c, key(0, 1, 0)), "B was least recently used");
    cr_assert(held(c, key(0, 0, 0)));
    cr_assert(held(c, key(0, 2, 0)));
    cr_assert(held(c, key(0, 3, 0)));
    tsr_cache_free(c);
}

Test(cache, recency_counts_from_release_not_from_acquire)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    tsr_cache_entry *a = get(c, key(0, 0, 0), NULL);
    tsr_cache_entry *b = get(c, key(0, 1, 0), NULL);
    tsr_cache_release(c, b); /* B unpinned first ... */
    tsr_cache_release(c, a); /* ... so A is the more recent */
    touch(c, key(0, 2, 0));
    cr_assert_not(held(c, key(0, 1, 0)));
    cr_assert(held(c, key(0, 0, 0)));
    tsr_cache_free(c);
}

Test(cache, eviction_walks_the_whole_order_one_tile_per_insert)
{
    tsr_cache *c = tsr_cache_new(3 * unit());
    for (int i = 0; i < 3; i++)
        touch(c, key(0, i, 0));
    /* each new key evicts exactly the oldest remaining one */
    for (int i = 3; i < 10; i++) {
        touch(c, key(0, i, 0));
        tsr_cache_stats s = tsr_cache_get_stats(c);
        cr_assert_eq(s.evictions, (uint64_t)(i - 2));
        cr_assert_eq(s.bytes, 3 * unit());
    }
    /* the three newest survive; checking them in age order keeps that order intact */
    cr_assert(held(c, key(0, 7, 0)));
    cr_assert(held(c, key(0, 8, 0)));
    cr_assert(held(c, key(0, 9, 0)));
    cr_assert_not(held(c, key(0, 6, 0)));
    tsr_cache_free(c);
}

Test(cache, pinned_tile_is_never_evicted)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    tsr_cache_entry *a = get(c, key(0, 0, 0), NULL); /* the oldest, but pinned throughout */
    for (int i = 1; i < 20; i++)
        touch(c, key(0, i, 0));
    cr_assert(tile_holds(tsr_cache_tile(a), key(0, 0, 0), EDGE, EDGE));
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.evictions, 18, "every other tile pushed out its predecessor");
    cr_assert_eq(s.overflow, 0);
    tsr_cache_release(c, a);
    cr_assert(held(c, key(0, 0, 0)));
    tsr_cache_free(c);
}

Test(cache, tile_that_meets_only_pinned_tiles_becomes_transient)
{
    tsr_cache *c = tsr_cache_new(1 * unit());
    tsr_cache_entry *a = get(c, key(0, 0, 0), NULL);
    bool computed;
    tsr_cache_entry *b = get(c, key(0, 1, 0), &computed);
    cr_assert(computed);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.overflow, 1);
    cr_assert_eq(s.evictions, 0, "a pinned tile is not evicted to make room");
    cr_assert_eq(s.bytes, unit(), "a transient tile is not counted in bytes");
    cr_assert_eq(s.peak_bytes, 2 * unit(), "but it is counted in the peak");
    tsr_cache_release(c, b);
    tsr_cache_release(c, a);
    cr_assert(held(c, key(0, 0, 0)), "the pinned tile survived");
    cr_assert_not(held(c, key(0, 1, 0)), "the transient tile went with its last pin");
    tsr_cache_free(c);
}

Test(cache, transient_tile_is_shared_while_pinned_and_freed_after_last_release)
{
    tsr_cache *c = tsr_cache_new(1 * unit());
    tsr_cache_entry *a = get(c, key(0, 0, 0), NULL);
    tsr_cache_entry *b1 = get(c, key(0, 1, 0), NULL); /* transient */
    bool computed = true;
    tsr_cache_entry *b2 = get(c, key(0, 1, 0), &computed);
    cr_assert_not(computed, "a live transient tile is found, not recomputed");
    cr_assert_eq(tsr_cache_tile(b1), tsr_cache_tile(b2));
    tsr_cache_release(c, b1);
    cr_assert(tile_holds(tsr_cache_tile(b2), key(0, 1, 0), EDGE, EDGE), "one pin keeps it");
    tsr_cache_release(c, b2);
    tsr_cache_release(c, a);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.overflow, 1);
    cr_assert_eq(s.bytes, unit());
    cr_assert(touch(c, key(0, 1, 0)), "after the last release it must be computed again");
    tsr_cache_free(c);
}

Test(cache, tile_larger_than_the_budget_is_transient_and_evicts_nothing)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    touch(c, key(0, 0, 0));
    touch(c, key(0, 1, 0));
    tsr_cache_release(c, get_sized(c, key(1, 0, 0), 3 * EDGE, EDGE, NULL));
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.overflow, 1);
    cr_assert_eq(s.evictions, 0, "emptying the cache would not have made it fit");
    cr_assert(held(c, key(0, 0, 0)));
    cr_assert(held(c, key(0, 1, 0)));
    tsr_cache_free(c);
}

Test(cache, big_tile_evicts_only_as_many_tiles_as_it_needs)
{
    cr_assert_leq(tile_bytes(2 * EDGE, EDGE), 2 * unit());
    cr_assert_gt(tile_bytes(2 * EDGE, EDGE), unit());
    tsr_cache *c = tsr_cache_new(4 * unit());
    for (int i = 0; i < 4; i++)
        touch(c, key(0, i, 0));
    tsr_cache_release(c, get_sized(c, key(1, 0, 0), 2 * EDGE, EDGE, NULL));
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.evictions, 2);
    cr_assert_eq(s.overflow, 0);
    cr_assert_eq(s.bytes, 2 * unit() + tile_bytes(2 * EDGE, EDGE));
    cr_assert_not(held(c, key(0, 0, 0)));
    cr_assert_not(held(c, key(0, 1, 0)));
    cr_assert(held(c, key(0, 2, 0)));
    cr_assert(held(c, key(0, 3, 0)));
    tsr_cache_free(c);
}

Test(cache, budget_counts_ragged_tiles_by_their_own_size)
{
    /* a ragged edge tile is smaller than a full one, so more of them fit */
    size_t small = tile_bytes(5, 3);
    cr_assert_lt(small, unit());
    tsr_cache *c = tsr_cache_new(3 * small);
    for (int i = 0; i < 3; i++)
        tsr_cache_release(c, get_sized(c, key(0, i, 0), 5, 3, NULL));
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.bytes, 3 * small);
    cr_assert_eq(s.evictions, 0);
    tsr_cache_release(c, get_sized(c, key(0, 3, 0), 5, 3, NULL));
    cr_assert_eq(tsr_cache_get_stats(c).evictions, 1);
    tsr_cache_free(c);
}

Test(cache, budget_zero_caches_nothing)
{
    tsr_cache *c = tsr_cache_new(0);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 4; i++)
            cr_assert(touch(c, key(0, i, 0)), "every acquire is a miss");
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.misses, 12);
    cr_assert_eq(s.hits, 0);
    cr_assert_eq(s.overflow, 12);
    cr_assert_eq(s.evictions, 0);
    cr_assert_eq(s.bytes, 0);
    cr_assert_eq(s.peak_bytes, unit(), "one transient tile at a time");
    tsr_cache_free(c);
}

Test(cache, budget_zero_still_shares_a_pinned_tile)
{
    tsr_cache *c = tsr_cache_new(0);
    tsr_cache_entry *a = get(c, key(0, 0, 0), NULL);
    bool computed = true;
    tsr_cache_entry *b = get(c, key(0, 0, 0), &computed);
    cr_assert_not(computed);
    cr_assert_eq(tsr_cache_tile(a), tsr_cache_tile(b));
    tsr_cache_release(c, a);
    tsr_cache_release(c, b);
    cr_assert_eq(tsr_cache_get_stats(c).peak_bytes, unit());
    tsr_cache_free(c);
}

Test(cache, stats_count_every_hit_miss_eviction_and_overflow_exactly)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    touch(c, key(0, 0, 0));                          /* miss            A       */
    touch(c, key(0, 1, 0));                          /* miss            A B     */
    touch(c, key(0, 0, 0));                          /* hit             B A     */
    touch(c, key(0, 2, 0));                          /* miss, evict B   A C     */
    touch(c, key(0, 1, 0));                          /* miss, evict A   C B     */
    tsr_cache_entry *p = get(c, key(0, 1, 0), NULL); /* hit, B pinned           */
    tsr_cache_entry *q = get(c, key(0, 2, 0), NULL); /* hit, C pinned           */
    touch(c, key(0, 3, 0));                          /* miss, overflow  C B + D */
    tsr_cache_release(c, p);
    tsr_cache_release(c, q);
    touch(c, key(0, 3, 0)); /* miss (D was transient), evict B                  */
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.hits, 3);
    cr_assert_eq(s.misses, 6);
    cr_assert_eq(s.evictions, 3);
    cr_assert_eq(s.overflow, 1);
    cr_assert_eq(s.waits, 0);
    cr_assert_eq(s.bytes, 2 * unit());
    cr_assert_eq(s.peak_bytes, 3 * unit());
    cr_assert_eq(s.budget, 2 * unit());
    tsr_cache_free(c);
}

Test(cache, bytes_never_exceed_budget_under_a_random_workload)
{
    const size_t budget = 3 * unit();
    tsr_cache *c = tsr_cache_new(budget);
    tsr_cache_entry *pinned[4] = {0};
    uint32_t rng = 12345;
    for (int step = 0; step < 5000; step++) {
        rng = rng * 1664525u + 1013904223u;
        int k = (int)(rng >> 24) % 23;
        int slot = (int)(rng >> 8) % 4;
        /* a key's size is a function of the key, as a tile's rect is */
        int64_t w = 1 + k % EDGE, h = 1 + (k * 7) % (2 * EDGE);
        if (pinned[slot]) {
            tsr_cache_release(c, pinned[slot]);
            pinned[slot] = NULL;
        }
        tsr_cache_entry *e = get_sized(c, key(3, k, 0), w, h, NULL);
        if ((rng >> 4) & 1)
            pinned[slot] = e;
        else
            tsr_cache_release(c, e);
        tsr_cache_stats s = tsr_cache_get_stats(c);
        cr_assert_leq(s.bytes, budget);
        cr_assert_geq(s.peak_bytes, s.bytes);
    }
    for (int i = 0; i < 4; i++)
        tsr_cache_release(c, pinned[i]);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.hits + s.misses, 5000);
    cr_assert_gt(s.evictions, 0);
    cr_assert_gt(s.hits, 0);
    tsr_cache_free(c);
}

Test(cache, free_releases_every_cached_tile)
{
    /* run under ASan/LSan: a leak here fails the suite */
    tsr_cache *c = tsr_cache_new(64 * unit());
    for (int i = 0; i < 50; i++)
        touch(c, key(0, i, i));
    cr_assert_eq(tsr_cache_get_stats(c).bytes, 50 * unit());
    tsr_cache_free(c);
}

/* ---- abandon, misuse --------------------------------------------------------------- */

Test(cache, abandon_without_waiters_forgets_the_key)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(0, 0, 0), &must);
    cr_assert(must);
    tsr_cache_abandon(c, e);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.bytes, 0);
    cr_assert(touch(c, key(0, 0, 0)), "the next acquire computes it");
    s = tsr_cache_get_stats(c);
    cr_assert_eq(s.misses, 2);
    cr_assert_eq(s.bytes, unit());
    tsr_cache_free(c);
}

Test(cache, release_of_an_entry_being_computed_abandons_it)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(0, 0, 0), &must);
    cr_assert(must);
    tsr_cache_release(c, e);
    cr_assert(touch(c, key(0, 0, 0)));
    tsr_cache_free(c);
}

Test(cache, publish_of_a_null_tile_fails_the_computation_and_keeps_the_pin)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(0, 0, 0), &must);
    cr_assert(must);
    tsr_cache_publish(c, e, NULL);
    cr_assert_null(tsr_cache_tile(e));
    cr_assert(touch(c, key(0, 0, 0)), "the key is computed afresh");
    tsr_cache_release(c, e); /* the failed entry goes now */
    cr_assert_not(touch(c, key(0, 0, 0)), "and the fresh tile is unaffected");
    tsr_cache_free(c);
}

Test(cache, second_publish_is_ignored_and_its_tile_freed)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(0, 0, 0), &must);
    tsr_tile *t = make_tile(key(0, 0, 0), EDGE, EDGE);
    tsr_cache_publish(c, e, t);
    tsr_cache_publish(c, e, make_tile(key(9, 9, 9), EDGE, EDGE));
    cr_assert_eq(tsr_cache_tile(e), t);
    tsr_cache_abandon(c, e); /* not computing any more: ignored too */
    cr_assert_eq(tsr_cache_tile(e), t);
    tsr_cache_release(c, e);
    cr_assert_not(touch(c, key(0, 0, 0)));
    tsr_cache_free(c);
}

/* ---- tiles of another owner's memory (the GPU backend's device tiles) ----------------- */

/* A pool of `n` blocks a test hands out as tiles with `release`: counts what comes back. */
typedef struct pool {
    tsr_tile tiles[8];
    float px[8][4];
    bool out[8];
    int returned;
} pool;

static void
pool_return(void *ctx, tsr_tile *t)
{
    pool *p = ctx;
    p->out[t - p->tiles] = false;
    p->returned++;
}

static tsr_tile *
pool_tile(pool *p, int i, size_t bytes)
{
    cr_assert(!p->out[i]);
    p->out[i] = true;
    p->tiles[i] = (tsr_tile){.r = tsr_rect_make(i, 0, 1, 1), .px = p->px[i], .release = pool_return,
                             .release_ctx = p, .bytes = bytes};
    return &p->tiles[i];
}

Test(cache, owner_tiles_cost_their_own_bytes_and_go_back_to_their_owner)
{
    pool p = {0};
    tsr_cache *c = tsr_cache_new(3000);
    for (int i = 0; i < 3; i++) {
        bool must;
        tsr_cache_entry *e = tsr_cache_acquire(c, key(1, i, 0), &must);
        cr_assert(must);
        tsr_cache_publish(c, e, pool_tile(&p, i, 1000));
        tsr_cache_release(c, e);
    }
    /* a 1 x 1 host tile costs ~350 bytes; these cost what they said: 3 x 1000 fill the cache */
    cr_assert_eq(tsr_cache_get_stats(c).bytes, 3000);
    cr_assert_eq(p.returned, 0);
    bool must;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(1, 3, 0), &must);
    tsr_cache_publish(c, e, pool_tile(&p, 3, 1000));
    tsr_cache_release(c, e);
    cr_assert_eq(p.returned, 1, "the least recently used went back to its owner");
    cr_assert(!p.out[0] && p.out[1] && p.out[2] && p.out[3]);
    tsr_cache_free(c);
    cr_assert_eq(p.returned, 4);
}

Test(cache, evict_lru_gives_back_the_oldest_unpinned_tile_and_never_a_pinned_one)
{
    pool p = {0};
    tsr_cache *c = tsr_cache_new(1 << 20);
    tsr_cache_entry *pinned = NULL;
    for (int i = 0; i < 3; i++) {
        bool must;
        tsr_cache_entry *e = tsr_cache_acquire(c, key(1, i, 0), &must);
        tsr_cache_publish(c, e, pool_tile(&p, i, 100));
        if (i == 0)
            pinned = e; /* the oldest, but held */
        else
            tsr_cache_release(c, e);
    }
    cr_assert(tsr_cache_evict_lru(c));
    cr_assert(p.out[0] && !p.out[1] && p.out[2], "tile 1, the oldest unpinned, went back");
    cr_assert(tsr_cache_evict_lru(c));
    cr_assert(!p.out[2]);
    cr_assert(!tsr_cache_evict_lru(c), "only a pinned tile is left");
    cr_assert(p.out[0]);
    cr_assert_eq(tsr_cache_get_stats(c).evictions, 2);
    cr_assert_eq(tsr_cache_get_stats(c).bytes, 100);
    tsr_cache_release(c, pinned);
    cr_assert(tsr_cache_evict_lru(c));
    cr_assert_eq(tsr_cache_get_stats(c).bytes, 0);
    cr_assert(!tsr_cache_evict_lru(c));
    cr_assert(!tsr_cache_evict_lru(NULL));
    tsr_cache_free(c);
    cr_assert_eq(p.returned, 3);
}

Test(cache, tile_new_never_reuses_an_owner_tile)
{
    pool p = {0};
    size_t one = tsr_cache_tile_cost(tsr_rect_make(0, 0, 1, 1));
    tsr_cache *c = tsr_cache_new(one);
    bool must;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(1, 0, 0), &must);
    tsr_cache_publish(c, e, pool_tile(&p, 0, one)); /* the cache is full of an owner tile */
    tsr_cache_release(c, e);
    tsr_tile *t = tsr_cache_tile_new(c, tsr_rect_make(0, 0, 1, 1));
    cr_assert_not_null(t);
    cr_assert_neq(t, &p.tiles[0], "a host tile, not the owner's");
    cr_assert(p.out[0], "the owner tile stays cached");
    tsr_tile_free(t);
    tsr_cache_free(c);
}

Test(cache, null_arguments_are_refused_without_crashing)
{
    bool must = true;
    cr_assert_null(tsr_cache_acquire(NULL, key(0, 0, 0), &must));
    tsr_cache *c = tsr_cache_new(unit());
    cr_assert_null(tsr_cache_acquire(c, key(0, 0, 0), NULL));
    tsr_cache_publish(NULL, NULL, make_tile(key(0, 0, 0), EDGE, EDGE)); /* tile freed */
    tsr_cache_publish(c, NULL, NULL);
    tsr_cache_abandon(c, NULL);
    tsr_cache_abandon(NULL, NULL);
    tsr_cache_release(c, NULL);
    tsr_cache_release(NULL, NULL);
    cr_assert_null(tsr_cache_tile(NULL));
    tsr_cache_stats s = tsr_cache_get_stats(NULL);
    cr_assert_eq(s.budget, 0);
    s = tsr_cache_get_stats(c);
    cr_assert_eq(s.hits + s.misses, 0);
    tsr_cache_free(c);
}

/* ---- two threads: waiting and hand-off ----------------------------------------------- */

typedef struct waiter {
    tsr_cache *c;          /* shared cache */
    tsr_cache_key k;       /* key to acquire */
    bool computed;         /* it became the computer (and published) */
    bool ok;               /* it ended up with a correct tile */
    const tsr_tile *seen;  /* the tile it got */
    atomic_int *computers; /* threads computing the key right now, when shared */
    atomic_int *peak;      /* the most computers at once */
} waiter;

static void *
waiter_main(void *arg)
{
    waiter *w = arg;
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(w->c, w->k, &must);
    if (!e)
        return NULL;
    w->computed = must;
    if (must) {
        if (w->computers) {
            int now = atomic_fetch_add(w->computers, 1) + 1;
            int seen = atomic_load(w->peak);
            while (now > seen && !atomic_compare_exchange_weak(w->peak, &seen, now))
                ;
            nap_ms(20); /* give a wrongly woken second computer time to show up */
            atomic_fetch_sub(w->computers, 1);
        }
        tsr_cache_publish(w->c, e, make_tile(w->k, EDGE, EDGE));
    }
    w->seen = tsr_cache_tile(e);
    w->ok = tile_holds(w->seen, w->k, EDGE, EDGE);
    tsr_cache_release(w->c, e);
    return NULL;
}

Test(cache, waiter_receives_the_tile_its_computer_publishes, .timeout = 30)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(0, 0, 0), &must);
    cr_assert(must);

    waiter w = {.c = c, .k = key(0, 0, 0)};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, waiter_main, &w), 0);
    await_waits(c, 1);
    tsr_tile *t = make_tile(key(0, 0, 0), EDGE, EDGE);
    tsr_cache_publish(c, e, t);
    pthread_join(th, NULL);

    cr_assert_not(w.computed, "the waiter did not compute it again");
    cr_assert(w.ok);
    cr_assert_eq(w.seen, t);
    tsr_cache_release(c, e);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.hits, 1, "a wait that ends in a tile is a hit");
    cr_assert_eq(s.waits, 1);
    tsr_cache_free(c);
}

Test(cache, abandon_hands_the_computation_to_a_waiter, .timeout = 30)
{
    tsr_cache *c = tsr_cache_new(2 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(0, 0, 0), &must);
    cr_assert(must);

    waiter w = {.c = c, .k = key(0, 0, 0)};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, waiter_main, &w), 0);
    await_waits(c, 1);
    tsr_cache_abandon(c, e);
    pthread_join(th, NULL);

    cr_assert(w.computed, "the waiter became the computer");
    cr_assert(w.ok);
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.misses, 2, "both computations are misses");
    cr_assert_eq(s.hits, 0);
    cr_assert_eq(s.waits, 1);
    cr_assert_not(touch(c, key(0, 0, 0)), "the waiter's tile is cached");
    tsr_cache_free(c);
}

Test(cache, abandon_makes_exactly_one_of_many_waiters_the_computer, .timeout = 30)
{
    enum { N = 6 };
    tsr_cache *c = tsr_cache_new(2 * unit());
    bool must = false;
    tsr_cache_entry *e = tsr_cache_acquire(c, key(0, 0, 0), &must);
    cr_assert(must);

    atomic_int computers = 0, peak = 0;
    waiter w[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        w[i] = (waiter){.c = c, .k = key(0, 0, 0), .computers = &computers, .peak = &peak};
        cr_assert_eq(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
    }
    await_waits(c, N);
    tsr_cache_abandon(c, e);
    int n_computed = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_assert(w[i].ok);
        n_computed += w[i].computed;
    }
    cr_assert_eq(n_computed, 1);
    cr_assert_eq(atomic_load(&peak), 1);
    for (int i = 1; i < N; i++)
        cr_assert_eq(w[i].seen, w[0].seen, "everyone got the one published tile");
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.misses, 2);
    cr_assert_eq(s.hits, N - 1);
    cr_assert_eq(s.waits, N);
    tsr_cache_free(c);
}

/* ---- many threads --------------------------------------------------------------- */

enum { HAMMER_THREADS = 8, HAMMER_KEYS = 50, HAMMER_ITERS = 3000 };

typedef struct hammer {
    tsr_cache *c;           /* shared cache */
    atomic_int *computing;  /* per key: threads computing it now (must stay <= 1) */
    atomic_int *violations; /* two computers of one key at once, shared */
    atomic_int *bad_tiles;  /* tiles with the wrong size or pixels, shared */
    atomic_int *failures;   /* NULL from acquire, shared */
    uint32_t seed;          /* per-thread random state */
    uint64_t acquires;      /* successful acquires by this thread */
    uint64_t computations;  /* times this thread was made computer */
} hammer;

static uint32_t
next_rand(uint32_t *s)
{
    /* xorshift32: a private stream per thread, no shared state */
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static tsr_cache_key
hammer_key(int k)
{
    return key(k % 5, k / 5, (k * 3) % 7);
}

/* Ragged sizes per key, so the budget sees tiles of different byte counts. */
static void
hammer_size(int k, int64_t *w, int64_t *h)
{
    *w = 4 + k % 9;
    *h = 3 + (k * 7) % 11;
}

/* Acquire key k (pinned on return), computing it when told to, sometimes failing. */
static tsr_cache_entry *
hammer_get(hammer *hm, int k)
{
    tsr_cache_key kk = hammer_key(k);
    int64_t w, h;
    hammer_size(k, &w, &h);
    for (;;) {
        bool must = false;
        tsr_cache_entry *e = tsr_cache_acquire(hm->c, kk, &must);
        if (!e) {
            atomic_fetch_add(hm->failures, 1);
            return NULL;
        }
        hm->acquires++;
        if (!must)
            return e;
        hm->computations++;
        if (atomic_fetch_add(&hm->computing[k], 1) != 0)
            atomic_fetch_add(hm->violations, 1);
        if (next_rand(&hm->seed) % 4 == 0)
            sched_yield(); /* widen the window in which others must wait */
        if (next_rand(&hm->seed) % 10 == 0) {
            atomic_fetch_sub(&hm->computing[k], 1);
            tsr_cache_abandon(hm->c, e); /* a failed computation: try again */
            continue;
        }
        tsr_cache_publish(hm->c, e, make_tile(kk, w, h));
        /* still pinned: nobody else may start computing this key until we release */
        atomic_fetch_sub(&hm->computing[k], 1);
        return e;
    }
}

static void
hammer_check(hammer *hm, tsr_cache_entry *e, int k)
{
    int64_t w, h;
    hammer_size(k, &w, &h);
    if (!tile_holds(tsr_cache_tile(e), hammer_key(k), w, h))
        atomic_fetch_add(hm->bad_tiles, 1);
}

static void *
hammer_main(void *arg)
{
    hammer *hm = arg;
    for (int i = 0; i < HAMMER_ITERS; i++) {
        int k1 = (int)(next_rand(&hm->seed) % HAMMER_KEYS);
        tsr_cache_entry *e1 = hammer_get(hm, k1);
        if (!e1)
            return NULL;
        hammer_check(hm, e1, k1);
        /* Sometimes hold a second tile while the first stays pinned, as a parent tile pins
         * its children; only after e1 is ready, so no thread waits while computing. */
        if (next_rand(&hm->seed) % 3 == 0) {
            int k2 = (int)(next_rand(&hm->seed) % HAMMER_KEYS);
            tsr_cache_entry *e2 = hammer_get(hm, k2);
            if (e2) {
                hammer_check(hm, e2, k2);
                tsr_cache_release(hm->c, e2);
            }
        }
        hammer_check(hm, e1, k1);
        tsr_cache_release(hm->c, e1);
    }
    return NULL;
}

Test(cache, concurrent_getters_compute_each_key_once_at_a_time_and_read_correct_tiles,
     .timeout = 120)
{
    /* a budget of about three tiles: constant eviction, frequent transients and waits */
    int64_t wmax = 4 + 8, hmax = 3 + 10;
    const size_t budget = 3 * tile_bytes(wmax, hmax);
    tsr_cache *c = tsr_cache_new(budget);
    atomic_int computing[HAMMER_KEYS];
    for (int k = 0; k < HAMMER_KEYS; k++)
        atomic_init(&computing[k], 0);
    atomic_int violations = 0, bad_tiles = 0, failures = 0;

    hammer hm[HAMMER_THREADS];
    pthread_t th[HAMMER_THREADS];
    for (int i = 0; i < HAMMER_THREADS; i++) {
        hm[i] = (hammer){.c = c,
                         .computing = computing,
                         .violations = &violations,
                         .bad_tiles = &bad_tiles,
                         .failures = &failures,
                         .seed = 0x9e3779b9u * (uint32_t)(i + 1)};
        cr_assert_eq(pthread_create(&th[i], NULL, hammer_main, &hm[i]), 0);
    }
    uint64_t acquires = 0, computations = 0;
    for (int i = 0; i < HAMMER_THREADS; i++) {
        pthread_join(th[i], NULL);
        acquires += hm[i].acquires;
        computations += hm[i].computations;
    }

    cr_assert_eq(atomic_load(&failures), 0);
    cr_assert_eq(atomic_load(&violations), 0, "a key had two computers at once");
    cr_assert_eq(atomic_load(&bad_tiles), 0, "a tile did not hold its key's pixels");
    tsr_cache_stats s = tsr_cache_get_stats(c);
    cr_assert_eq(s.hits + s.misses, acquires);
    cr_assert_eq(s.misses, computations);
    cr_assert_leq(s.bytes, budget);
    cr_assert_leq(s.waits, acquires);
    cr_assert_gt(s.evictions, 0);
    cr_assert_gt(s.hits, 0);
    for (int k = 0; k < HAMMER_KEYS; k++)
        cr_assert_eq(atomic_load(&computing[k]), 0);
    tsr_cache_free(c);
}
