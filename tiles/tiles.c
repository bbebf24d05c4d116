/* tiles: rects, tiles, grids, errors. See tiles.h. */
#include "tiles/tiles.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

tsr_status
tsr_fail(tsr_error *err, tsr_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        char full[4 * sizeof err->msg];
        int n = vsnprintf(full, sizeof full, fmt, ap);
        va_end(ap);
        size_t cap = sizeof err->msg, len = n < 0 ? 0 : (size_t)n;
        if (len >= sizeof full)
            len = sizeof full - 1;
        if (len < cap) {
            memcpy(err->msg, full, len + 1);
        } else {
            /* too long (a long path or key path first): the reason comes last, so keep the
             * head and the tail with "..." between rather than cut the reason off */
            size_t head = cap / 3, tail = cap - head - 4;
            memcpy(err->msg, full, head);
            memcpy(err->msg + head, "...", 3);
            memcpy(err->msg + head + 3, full + len - tail, tail);
            err->msg[cap - 1] = '\0';
        }
        err->status = st;
    }
    return st;
}

int
tsr_status_exit_code(tsr_status st)
{
    switch (st) {
    case TSR_OK: return 0;
    case TSR_EINVAL:
    case TSR_EPLAN: return 2;
    default: return 1;
    }
}

const char *
tsr_status_name(tsr_status st)
{
    switch (st) {
    case TSR_OK: return "ok";
    case TSR_EINVAL: return "invalid input";
    case TSR_EPLAN: return "memory plan";
    case TSR_ENOMEM: return "out of memory";
    case TSR_EIO: return "i/o error";
    case TSR_EINTR: return "interrupted";
    case TSR_EINTERNAL: return "internal error";
    }
    return "unknown";
}

bool
tsr_add_checked(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

bool
tsr_mul_checked(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return false;
    *out = r;
    return true;
}

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t
max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

tsr_rect
tsr_rect_intersect(tsr_rect a, tsr_rect b)
{
    int64_t x0 = max64(a.x, b.x), y0 = max64(a.y, b.y);
    int64_t x1 = min64(a.x + a.w, b.x + b.w), y1 = min64(a.y + a.h, b.y + b.h);
    if (x1 <= x0 || y1 <= y0)
        return tsr_rect_make(a.x, a.y, 0, 0);
    return tsr_rect_make(x0, y0, x1 - x0, y1 - y0);
}

tsr_rect
tsr_rect_union(tsr_rect a, tsr_rect b)
{
    if (tsr_rect_empty(a))
        return b;
    if (tsr_rect_empty(b))
        return a;
    int64_t x0 = min64(a.x, b.x), y0 = min64(a.y, b.y);
    int64_t x1 = max64(a.x + a.w, b.x + b.w), y1 = max64(a.y + a.h, b.y + b.h);
    return tsr_rect_make(x0, y0, x1 - x0, y1 - y0);
}

size_t
tsr_rect_minus(tsr_rect r, tsr_rect in, tsr_rect out[4])
{
    if (tsr_rect_empty(in)) {
        out[0] = r;
        return tsr_rect_empty(r) ? 0 : 1;
    }
    size_t n = 0;
    int64_t ry1 = r.y + r.h, iy1 = in.y + in.h, rx1 = r.x + r.w, ix1 = in.x + in.w;
    if (in.y > r.y)
        out[n++] = tsr_rect_make(r.x, r.y, r.w, in.y - r.y);
    if (ry1 > iy1)
        out[n++] = tsr_rect_make(r.x, iy1, r.w, ry1 - iy1);
    if (in.x > r.x)
        out[n++] = tsr_rect_make(r.x, in.y, in.x - r.x, in.h);
    if (rx1 > ix1)
        out[n++] = tsr_rect_make(ix1, in.y, rx1 - ix1, in.h);
    return n;
}

tsr_rect
tsr_rect_grow(tsr_rect r, int64_t m)
{
    return tsr_rect_make(r.x - m, r.y - m, r.w + 2 * m, r.h + 2 * m);
}

size_t
tsr_tile_bytes(tsr_rect r)
{
    int64_t n;
    if (r.w < 0 || r.h < 0 || !tsr_mul_checked(r.w, r.h, &n) || !tsr_mul_checked(n, 4, &n))
        return 0;
    /* round the pixel block up to the 64-byte allocation granule */
    return sizeof(tsr_tile) + (((size_t)n + 63) & ~(size_t)63);
}

tsr_tile *
tsr_tile_new(tsr_rect r)
{
    size_t bytes = tsr_tile_bytes(r);
    if (bytes == 0)
        return NULL;
    tsr_tile *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    size_t pxbytes = bytes - sizeof(tsr_tile);
    *t = (tsr_tile){.mapped = 0}; /* release NULL: host pixels of its own */
    if (pxbytes >= TSR_TILE_MAP_MIN) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (pxbytes + page - 1) & ~(page - 1);
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        t->px = m == MAP_FAILED ? NULL : m;
        t->mapped = len;
    } else {
        t->px = pxbytes ? aligned_alloc(64, pxbytes) : NULL;
    }
    if (pxbytes && !t->px) {
        free(t);
        return NULL;
    }
    t->r = r;
    return t;
}

void
tsr_tile_free(tsr_tile *t)
{
    if (!t)
        return;
    if (t->release) {
        t->release(t->release_ctx, t);
        return;
    }
    if (t->mapped)
        munmap(t->px, t->mapped);
    else
        free(t->px);
    free(t);
}

tsr_grid
tsr_grid_make(int64_t w, int64_t h, int64_t t)
{
    tsr_grid g = {w, h, t, (w + t - 1) / t, (h + t - 1) / t};
    return g;
}

tsr_rect
tsr_grid_tile_rect(const tsr_grid *g, int64_t tx, int64_t ty)
{
    int64_t x = tx * g->t, y = ty * g->t;
    return tsr_rect_make(x, y, min64(g->t, g->w - x), min64(g->t, g->h - y));
}

void
tsr_grid_tiles_of(const tsr_grid *g, tsr_rect r, int64_t *tx0, int64_t *ty0, int64_t *tx1,
                  int64_t *ty1)
{
    tsr_rect c = tsr_rect_intersect(r, tsr_rect_make(0, 0, g->w, g->h));
    if (tsr_rect_empty(c)) {
        *tx0 = *tx1 = *ty0 = *ty1 = 0;
        return;
    }
    *tx0 = c.x / g->t;
    *ty0 = c.y / g->t;
    *tx1 = (c.x + c.w - 1) / g->t + 1;
    *ty1 = (c.y + c.h - 1) / g->t + 1;
}

uint64_t
tsr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
