/* cache: the LRU tile cache. See cache.h for the contract.
 *
 * One mutex guards everything; one condition variable wakes threads waiting for a tile that
 * another thread computes. An entry is in exactly one of three states:
 *
 *   COMPUTING  in the table, no tile yet; one thread (the computer) owns the computation,
 *              any other pins belong to threads blocked in tsr_cache_acquire.
 *   READY      in the table with its tile. Either *cached* (its bytes count in c->bytes; when
 *              it has no pins it sits in the LRU list, the only place eviction looks) or
 *              *transient* (did not fit; freed when its last pin goes).
 *   DEAD       out of the table, no tile: an abandoned computation whose shell is still
 *              pinned by waiters that have not woken yet (or by a computer that published
 *              NULL). Freed when its last pin goes. A waiter that finds its entry DEAD
 *              starts over with a fresh lookup, so the first waiter to run becomes the new
 *              computer and the rest wait on it.
 *
 * Invariants (under the mutex): an entry is in the LRU list iff READY && cached && pins == 0;
 * c->bytes = sum of cached entries' bytes <= c->budget; c->lru_bytes = the LRU part of it. */
#include "cache/cache.h"

#include <pthread.h>
#include <stdlib.h>

/* An out-of-memory in HASH_ADD must not exit() the process (docs/architecture.md, house style: never exit in a
 * library); uthash then leaves the item out and sets its hh.tbl to NULL, which we test. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

typedef enum entry_state {
    ST_COMPUTING, /* a computer owns it; tile is NULL */
    ST_READY,     /* tile is set and readable while pinned */
    ST_DEAD       /* out of the table; lingers only until its last pin goes */
} entry_state;

struct tsr_cache_entry {
    tsr_cache_key key;          /* the hash key; a struct of three int64, so no padding */
    UT_hash_handle hh;          /* uthash linkage into c->table */
    tsr_tile *tile;             /* owned; NULL until published */
    size_t bytes;               /* tsr_cache_tile_cost(tile->r), fixed at publish */
    uint64_t pins;              /* holders: the computer, waiters, readers */
    entry_state state;          /* see the file comment */
    bool cached;                /* READY and counted in c->bytes (else transient) */
    tsr_cache_entry *lru_prev;  /* towards the most recently used end */
    tsr_cache_entry *lru_next;  /* towards the least recently used end */
};

struct tsr_cache {
    pthread_mutex_t mu;        /* guards every field and every entry */
    pthread_cond_t ready;      /* broadcast when a computation is published or abandoned */
    tsr_cache_entry *table;    /* uthash head: all COMPUTING and READY entries */
    tsr_cache_entry *lru_head; /* most recently released unpinned cached entry */
    tsr_cache_entry *lru_tail; /* next victim */
    size_t budget;             /* hard limit on bytes */
    size_t bytes;              /* bytes of cached entries, pinned or not */
    size_t lru_bytes;          /* bytes of the entries in the LRU list (evictable now) */
    size_t transient_bytes;    /* bytes of live transient tiles, outside the budget */
    tsr_cache_stats stats;     /* counters; bytes/peak_bytes/budget filled on snapshot */
    tsr_cache_observer observe; /* told of every acquire, or NULL (tsr_cache_set_observer) */
    void *observe_ctx;          /* its argument */
};

/* What a tile costs beyond tsr_tile_bytes: glibc's chunk header (8 bytes, rounded to 16) on
 * the entry and the tile struct; the pixels' own pages when they are a mapping of their own
 * (TSR_TILE_MAP_MIN), else their chunk header and aligned_alloc's leading slack (up to the
 * 64-byte alignment, a free fragment small allocations rarely reuse); the hash table's share
 * (uthash doubles its 16-byte buckets to keep ~10 entries a bucket: 16 bytes an entry covers
 * the peak just after a doubling). For 1 x 1 tiles this is most of the cost: 352 bytes
 * counted, ~330 measured per cached tile (docs/reliability.md §7); counting the pixels alone
 * (104 bytes) let the cache hold 3.2x its budget. */
#define CHUNK(n) (((n) + 8 + 15) & ~(size_t)15)
#define PAGE_BYTES ((size_t)4096)

size_t
tsr_cache_tile_cost(tsr_rect r)
{
    size_t b = tsr_tile_bytes(r);
    if (b == 0)
        return 0;
    size_t px = b - sizeof(tsr_tile);
    size_t pixels = px >= TSR_TILE_MAP_MIN ? (px + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1)
                                           : CHUNK(px) + 64;
    return CHUNK(sizeof(tsr_cache_entry)) + CHUNK(sizeof(tsr_tile)) + pixels + 16;
}

/* ---- LRU list ---------------------------------------------------------------- */

static void
lru_push_head(tsr_cache *c, tsr_cache_entry *e)
{
    e->lru_prev = NULL;
    e->lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->lru_prev = e;
    else
        c->lru_tail = e;
    c->lru_head = e;
    c->lru_bytes += e->bytes;
}

static void
lru_unlink(tsr_cache *c, tsr_cache_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
    c->lru_bytes -= e->bytes;
}

/* ---- entries ----------------------------------------------------------------- */

static void
entry_destroy(tsr_cache_entry *e)
{
    tsr_tile_free(e->tile);
    free(e);
}

static void
note_peak(tsr_cache *c)
{
    size_t now = c->bytes + c->transient_bytes;
    if (now > c->stats.peak_bytes)
        c->stats.peak_bytes = now;
}

/* Take `e` out of the table and out of the byte counts; it becomes DEAD. Its tile goes now
 * (only unpinned tiles and never-published computations are killed, so no reader holds it);
 * the shell lives while pinned, so waiters still holding it can see that it died. */
static void
entry_kill(tsr_cache *c, tsr_cache_entry *e)
{
    if (e->state != ST_DEAD)
        HASH_DELETE(hh, c->table, e);
    if (e->state == ST_READY) {
        if (e->cached)
            c->bytes -= e->bytes;
        else
            c->transient_bytes -= e->bytes;
    }
    e->state = ST_DEAD;
    e->cached = false;
    tsr_tile_free(e->tile);
    e->tile = NULL;
    if (e->pins == 0)
        free(e);
}

/* Evict least recently used unpinned tiles until `need` more bytes fit. The caller has
 * checked that they can: need <= budget - (bytes - lru_bytes). */
static void
evict_for(tsr_cache *c, size_t need)
{
    while (c->budget - c->bytes < need && c->lru_tail) {
        tsr_cache_entry *v = c->lru_tail;
        lru_unlink(c, v);
        entry_kill(c, v);
        c->stats.evictions++;
    }
}

/* Drop one pin of `e`, with the mutex held. The last pin of an unpinned cached tile puts it
 * at the head of the LRU; the last pin of a transient or dead entry frees it. */
static void
unpin(tsr_cache *c, tsr_cache_entry *e)
{
    if (e->pins == 0)
        return; /* a release without a pin: ignore rather than corrupt the counts */
    if (--e->pins > 0)
        return;
    if (e->state == ST_DEAD)
        free(e);
    else if (e->state == ST_READY && e->cached)
        lru_push_head(c, e);
    else if (e->state == ST_READY)
        entry_kill(c, e); /* transient: its only reason to exist is gone */
    /* COMPUTING with no pins cannot happen: the computer's pin stays until publish/abandon */
}

/* The computer gives up on `e` (mutex held): it leaves the table so the next acquire of the
 * key, typically the first waiter to wake, starts a fresh computation. */
static void
abandon_locked(tsr_cache *c, tsr_cache_entry *e)
{
    if (e->pins > 0)
        e->pins--; /* the computer's pin */
    entry_kill(c, e);
    pthread_cond_broadcast(&c->ready);
}

/* ---- public API ------------------------------------------------------------ */

/* Misuse the header leaves open, and what happens (no asserts on input, docs/architecture.md, house style):
 *   acquire with c or must_compute NULL        returns NULL, like out of memory
 *   publish of a NULL tile                     a failed computation: waiters are handed it
 *                                              as by abandon; the caller's pin stays on a
 *                                              dead entry whose tile is NULL until release
 *   publish/abandon of an entry not computing  ignored (publish frees the tile it was given)
 *   release of an entry still being computed   the computer gave up: same as abandon
 *   release without a pin                      ignored
 *   free with pins left                        everything in the table is freed anyway */

tsr_cache *
tsr_cache_new(size_t budget)
{
    tsr_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (pthread_mutex_init(&c->mu, NULL) != 0)
        goto fail_mutex;
    if (pthread_cond_init(&c->ready, NULL) != 0)
        goto fail_cond;
    c->budget = budget;
    return c;

fail_cond:
    pthread_mutex_destroy(&c->mu);
fail_mutex:
    free(c);
    return NULL;
}

void
tsr_cache_free(tsr_cache *c)
{
    if (!c)
        return;
    /* Everything still reachable is in the table. With the contract kept (nothing pinned)
     * there are no DEAD entries left; pinned ones, if a caller broke it, go too. */
    tsr_cache_entry *e, *tmp;
    HASH_ITER(hh, c->table, e, tmp)
    {
        HASH_DELETE(hh, c->table, e);
        entry_destroy(e);
    }
    pthread_cond_destroy(&c->ready);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

tsr_cache_entry *
tsr_cache_acquire(tsr_cache *c, tsr_cache_key key, bool *must_compute)
{
    if (!c || !must_compute)
        return NULL;
    *must_compute = false;
    bool waited = false;
    tsr_cache_entry *e;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        HASH_FIND(hh, c->table, &key, sizeof key, e);
        if (!e) {
            e = calloc(1, sizeof *e);
            if (!e)
                goto fail;
            e->key = key;
            e->state = ST_COMPUTING;
            e->pins = 1;
            HASH_ADD(hh, c->table, key, sizeof e->key, e);
            if (!e->hh.tbl) { /* uthash ran out of memory and left e out */
                free(e);
                goto fail;
            }
            c->stats.misses++;
            *must_compute = true;
            break;
        }
        if (e->pins == 0 && e->state == ST_READY && e->cached)
            lru_unlink(c, e);
        e->pins++;
        if (e->state == ST_READY) {
            c->stats.hits++;
            break;
        }
        /* COMPUTING by someone else: our pin keeps the shell alive while we sleep */
        if (!waited) {
            waited = true;
            c->stats.waits++;
        }
        while (e->state == ST_COMPUTING)
            pthread_cond_wait(&c->ready, &c->mu);
        if (e->state == ST_READY) {
            c->stats.hits++;
            break;
        }
        /* DEAD: abandoned. Let go of the shell and look again; whoever gets here first
         * finds the key missing and becomes the computer. */
        unpin(c, e);
    }
    if (c->observe)
        c->observe(c->observe_ctx, key, *must_compute);
    pthread_mutex_unlock(&c->mu);
    return e;

fail:
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

const tsr_tile *
tsr_cache_tile(const tsr_cache_entry *e)
{
    /* No lock: a holder other than the computer only gets the entry (under the mutex) after
     * its tile was set, and a pinned entry's tile never changes. */
    return e ? e->tile : NULL;
}

/* Unpinned tiles, from the least recently used, that tsr_cache_tile_new looks at for one
 * of the size it wants: the lock is held meanwhile. */
#define REUSE_SCAN 64

tsr_tile *
tsr_cache_tile_new(tsr_cache *c, tsr_rect r)
{
    size_t want = tsr_tile_bytes(r), cost = tsr_cache_tile_cost(r);
    tsr_tile *t = NULL;
    if (c && want) {
        pthread_mutex_lock(&c->mu);
        if (c->budget - c->bytes < cost) {
            /* full: publishing would evict anyway, so evict now and reuse the memory */
            tsr_cache_entry *v = c->lru_tail;
            for (int k = 0; v && k < REUSE_SCAN; k++, v = v->lru_prev) {
                if (v->tile->release || tsr_tile_bytes(v->tile->r) != want)
                    continue; /* a tile of another owner's memory, or another size */
                t = v->tile;
                v->tile = NULL; /* entry_kill frees the tile: this one lives on */
                lru_unlink(c, v);
                entry_kill(c, v);
                c->stats.evictions++;
                c->stats.reused++;
                break;
            }
        }
        pthread_mutex_unlock(&c->mu);
    }
    if (!t)
        return tsr_tile_new(r);
    t->r = r;
    return t;
}

void
tsr_cache_publish(tsr_cache *c, tsr_cache_entry *e, tsr_tile *tile)
{
    if (!c || !e) {
        tsr_tile_free(tile); /* ownership was taken */
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (e->state != ST_COMPUTING) {
        /* not ours to publish (published twice, or abandoned): keep the entry as it is */
        if (tile != e->tile)
            tsr_tile_free(tile);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    if (!tile) {
        /* Nothing to publish is a failed computation: hand it on to a waiter as abandon
         * does, but keep the caller's pin (it will still release) on the dead shell. */
        e->pins++;
        abandon_locked(c, e);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    e->tile = tile;
    e->bytes = tile->release ? tile->bytes : tsr_cache_tile_cost(tile->r);
    e->state = ST_READY;
    /* Only evict when it helps: if the tile cannot fit even with every unpinned tile gone,
     * emptying the cache would cost hits and gain nothing. */
    size_t pinned = c->bytes - c->lru_bytes;
    if (e->bytes <= c->budget - pinned) {
        evict_for(c, e->bytes);
        c->bytes += e->bytes;
        e->cached = true;
    } else {
        c->transient_bytes += e->bytes;
        c->stats.overflow++;
    }
    note_peak(c);
    pthread_cond_broadcast(&c->ready);
    pthread_mutex_unlock(&c->mu);
}

void
tsr_cache_abandon(tsr_cache *c, tsr_cache_entry *e)
{
    if (!c || !e)
        return;
    pthread_mutex_lock(&c->mu);
    if (e->state == ST_COMPUTING)
        abandon_locked(c, e);
    pthread_mutex_unlock(&c->mu);
}

void
tsr_cache_release(tsr_cache *c, tsr_cache_entry *e)
{
    if (!c || !e)
        return;
    pthread_mutex_lock(&c->mu);
    if (e->state == ST_COMPUTING)
        abandon_locked(c, e); /* only the computer can release it now: it gave up */
    else
        unpin(c, e);
    pthread_mutex_unlock(&c->mu);
}

void
tsr_cache_set_observer(tsr_cache *c, tsr_cache_observer fn, void *ctx)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->observe = fn;
    c->observe_ctx = ctx;
    pthread_mutex_unlock(&c->mu);
}

bool
tsr_cache_evict_lru(tsr_cache *c)
{
    if (!c)
        return false;
    pthread_mutex_lock(&c->mu);
    tsr_cache_entry *v = c->lru_tail;
    if (v) {
        lru_unlink(c, v);
        entry_kill(c, v);
        c->stats.evictions++;
    }
    pthread_mutex_unlock(&c->mu);
    return v != NULL;
}

tsr_cache_stats
tsr_cache_get_stats(tsr_cache *c)
{
    tsr_cache_stats s = {0};
    if (!c)
        return s;
    pthread_mutex_lock(&c->mu);
    s = c->stats;
    s.bytes = c->bytes;
    s.budget = c->budget;
    pthread_mutex_unlock(&c->mu);
    return s;
}
