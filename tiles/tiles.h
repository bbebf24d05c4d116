/* tiles: the value types every other module speaks.
 *
 * tsr_status / tsr_error   how every fallible function reports failure (public: tessera.h)
 * tsr_rect                 an int64 pixel rectangle, half-open
 * tsr_tile                 float32 pixels of a rectangle
 * tsr_grid                 how a node of w x h splits into T x T tiles (ragged edges)
 * tsr_*_checked            overflow-checked int64 arithmetic
 *
 * Depends on libc only. */
#ifndef TSR_TILES_H
#define TSR_TILES_H

#include "tessera.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors -------------------------------------------------------------- */

/* tsr_status, tsr_error and tsr_status_name are the public API's (include/tessera.h). */

/* Fill `err` (may be NULL) with a printf-formatted message; returns `st`
 * so callers can write `return tsr_fail(err, TSR_EINVAL, "...")`. */
tsr_status
tsr_fail(tsr_error *err, tsr_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Process exit status for a status: 0, 1 or 2 (docs/semantics.md §1). */
int
tsr_status_exit_code(tsr_status st);

/* ---- clocks ------------------------------------------------------------------ */

/* CLOCK_MONOTONIC in nanoseconds: what per-node and per-stage timings add up. */
uint64_t
tsr_now_ns(void);

/* ---- checked arithmetic ---------------------------------------------------- */

/* Each returns false (and leaves *out untouched) on int64 overflow. */
bool tsr_add_checked(int64_t a, int64_t b, int64_t *out);
bool tsr_mul_checked(int64_t a, int64_t b, int64_t *out);

/* Floor division and floor modulo for b > 0: floor_div(-1, 4) = -1, floor_mod(-1, 4) = 3. */
static inline int64_t
tsr_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static inline int64_t
tsr_floor_mod(int64_t a, int64_t b)
{
    int64_t m = a % b;
    return m < 0 ? m + b : m;
}

/* [a, a + len) taken modulo n (n > 0, len >= 0) as at most two spans inside [0, n): starts in
 * s0, lengths in sl, their count returned. The wrapped reads of blur, rank and transform. */
static inline int
tsr_wrap_spans(int64_t a, int64_t len, int64_t n, int64_t *s0, int64_t *sl)
{
    if (len >= n) {
        s0[0] = 0;
        sl[0] = n;
        return 1;
    }
    int64_t b = tsr_floor_mod(a, n);
    if (b + len <= n) {
        s0[0] = b;
        sl[0] = len;
        return 1;
    }
    s0[0] = b;
    sl[0] = n - b;
    s0[1] = 0;
    sl[1] = b + len - n;
    return 2;
}

/* ---- rectangles ---------------------------------------------------------- */

/* Pixels [x, x+w) x [y, y+h). A rect with w <= 0 or h <= 0 is empty. */
typedef struct tsr_rect {
    int64_t x, y, w, h;
} tsr_rect;

static inline tsr_rect
tsr_rect_make(int64_t x, int64_t y, int64_t w, int64_t h)
{
    tsr_rect r = {x, y, w, h};
    return r;
}

static inline bool
tsr_rect_empty(tsr_rect r)
{
    return r.w <= 0 || r.h <= 0;
}

/* The intersection; empty rects come back as {a.x, a.y, 0, 0}. */
tsr_rect
tsr_rect_intersect(tsr_rect a, tsr_rect b);

/* The smallest rect holding both; an empty argument is ignored. */
tsr_rect
tsr_rect_union(tsr_rect a, tsr_rect b);

/* r less its part `in` (inside r, or empty) as up to four disjoint rects into out: the rows
 * above and below `in` at r's full width, then the columns left and right of it at its
 * height. An empty `in` leaves r itself. Returns the count. */
size_t
tsr_rect_minus(tsr_rect r, tsr_rect in, tsr_rect out[4]);

/* Grown by `m` on every side (m >= 0). */
tsr_rect
tsr_rect_grow(tsr_rect r, int64_t m);

static inline tsr_rect
tsr_rect_shift(tsr_rect r, int64_t dx, int64_t dy)
{
    r.x += dx;
    r.y += dy;
    return r;
}

/* [a, a + aw) starts at or after b and ends at or before b + bw, exactly for every int64 input
 * (a --region of 9223372036854775807,0,1,1 must not wrap): no sum is formed. When a >= b and
 * aw <= bw, both a - b and bw - aw are exact as uint64. Plain C, no builtins: nvcc sees this. */
static inline bool
tsr_span_within(int64_t a, int64_t aw, int64_t b, int64_t bw)
{
    if (a < b || aw > bw)
        return false;
    return (uint64_t)a - (uint64_t)b <= (uint64_t)bw - (uint64_t)aw;
}

/* inner.x >= outer.x, inner.x + inner.w <= outer.x + outer.w and the same for y, as integers
 * (no overflow whatever the values). */
static inline bool
tsr_rect_contains(tsr_rect outer, tsr_rect inner)
{
    return tsr_span_within(inner.x, inner.w, outer.x, outer.w) &&
           tsr_span_within(inner.y, inner.h, outer.y, outer.h);
}

static inline bool
tsr_rect_equal(tsr_rect a, tsr_rect b)
{
    return a.x == b.x && a.y == b.y && a.w == b.w && a.h == b.h;
}

/* ---- views and tiles --------------------------------------------------------- */

/* Borrowed float32 pixels of rect `r`: pixel (x, y) is px[(y - r.y) * stride + (x - r.x)]. */
typedef struct tsr_view {
    tsr_rect r;
    const float *px;
    int64_t stride; /* floats per row, >= r.w */
} tsr_view;

static inline const float *
tsr_view_row(const tsr_view *v, int64_t x, int64_t y)
{
    return v->px + (y - v->r.y) * v->stride + (x - v->r.x);
}

/* An owned float32 raster of rect `r`, rows contiguous (stride = r.w).
 *
 * Pixels that live elsewhere (the GPU backend's device tiles, gpu/backend.c) set
 * `release`: tsr_tile_free then hands the tile to release(release_ctx, t), which owns it from
 * there (px and the struct; the cache calls it with its lock held, so it must not call the
 * cache), and the cache counts `bytes` for it instead of what tsr_cache_tile_cost says of host
 * memory. The tile cache (cache/) is one LRU for both. */
typedef struct tsr_tile {
    tsr_rect r;
    float *px;
    size_t mapped; /* bytes of px's own mapping (whole pages), or 0 when px is from malloc */
    void (*release)(void *ctx, struct tsr_tile *t); /* NULL: px is host memory we own */
    void *release_ctx;
    size_t bytes; /* with release: what the tile costs its owner */
} tsr_tile;

/* Pixel blocks from this size up are mappings of their own, not heap memory: tiles are
 * allocated and freed by many threads in many sizes, and in the heap their holes were taken
 * by smaller allocations, so the heap outgrew what was live (a 200000 px design held ~1.9x
 * its --memory). A mapping goes back whole when freed; the tile cache reuses them meanwhile
 * (tsr_cache_tile_new). Mapped with MAP_POPULATE: every pixel is written anyway, and one
 * population instead of a fault per 4 KiB page took a Siemens-star region from 39402 faults
 * and 162 ms of CPU to 1098 and 150 ms (docs/performance.md). */
#define TSR_TILE_MAP_MIN ((size_t)64 << 10)

/* Allocate w*h floats (uninitialised); NULL on overflow or out of memory. Free with
 * tsr_tile_free. Pixel buffers are 64-byte aligned so SIMD loops start on a cache line
 * (page-aligned from TSR_TILE_MAP_MIN up). */
tsr_tile *
tsr_tile_new(tsr_rect r);

void
tsr_tile_free(tsr_tile *t);

/* Bytes a tile of `r` occupies (header + pixels), for cache budgets; 0 on overflow. */
size_t
tsr_tile_bytes(tsr_rect r);

static inline tsr_view
tsr_tile_view(const tsr_tile *t)
{
    tsr_view v = {t->r, t->px, t->r.w};
    return v;
}

/* ---- grids ------------------------------------------------------------------ */

/* A node of w x h split into T x T tiles; the last column and row are ragged. */
typedef struct tsr_grid {
    int64_t w, h; /* node size, >= 1 */
    int64_t t;    /* tile edge, >= 1 */
    int64_t nx, ny; /* tile counts: ceil(w / t), ceil(h / t) */
} tsr_grid;

tsr_grid
tsr_grid_make(int64_t w, int64_t h, int64_t t);

/* The node rect of tile (tx, ty), ragged at the right and bottom edges. */
tsr_rect
tsr_grid_tile_rect(const tsr_grid *g, int64_t tx, int64_t ty);

/* The tile index range [*tx0, *tx1) x [*ty0, *ty1) whose tiles meet `r`
 * (r is clipped to the node first; an empty result has tx0 == tx1). */
void
tsr_grid_tiles_of(const tsr_grid *g, tsr_rect r, int64_t *tx0, int64_t *ty0, int64_t *tx1,
                  int64_t *ty1);

/* ---- stop requests ------------------------------------------------------------------- */

/* The stop flag the calling thread's long loops poll (tiles/stop.c): sources per row, blur
 * and distance per row block, repeat per batch of copies, table builds, PNG decoding per row.
 * A loop that sees it set returns early, leaving its output unfinished, and a function with a
 * status returns TSR_EINTR; whoever bound the flag must then drop that output (the engine
 * does: nothing interrupted reaches the cache). Once set, the flag must stay set until the
 * work that polls it has returned. `flag` is borrowed; NULL unbinds. Thread-local: each
 * thread binds its own. */
void
tsr_stop_bind(const volatile sig_atomic_t *flag);

/* Whether the flag bound to the calling thread is set (false when none is bound). */
bool
tsr_stop_requested(void);

#endif
