/* stream: the stream's geometry (docs/outputs.md §2, §8): swaths in stream order, the overlap
 * each carries into the next, the overscan at row ends, bit planes. One place for the sender
 * (engine/), the header's check (frame.c) and the file sinks (sink_image.c, sidecar.c). */
#include "stream/stream.h"

uint64_t
tsr_geom_swaths(const tsr_stream_geom *g)
{
    if (g->swath_width == 0 || g->swath_width >= g->width)
        return 1;
    return g->width / g->swath_width + (g->width % g->swath_width != 0);
}

/* Base columns of swath k: full swaths, the last one narrower (counted in stream order,
 * whichever side the swaths start from). */
static uint64_t
base_of(const tsr_stream_geom *g, uint64_t n, uint64_t k)
{
    if (n == 1)
        return g->width;
    return k + 1 < n ? g->swath_width : g->width - (n - 1) * g->swath_width;
}

void
tsr_geom_swath(const tsr_stream_geom *g, uint64_t k, uint64_t *base, uint64_t *lead,
               uint64_t *trail)
{
    uint64_t n = tsr_geom_swaths(g);
    *base = base_of(g, n, k);
    *trail = 0;
    *lead = 0;
    if (k + 1 < n) { /* the overlap is inside the next swath: never more than its width */
        uint64_t next = base_of(g, n, k + 1);
        *trail = g->overlap < next ? g->overlap : next;
    }
    if (k > 0)
        *lead = g->overlap < *base ? g->overlap : *base;
}

bool
tsr_geom_row_bytes(const tsr_stream_geom *g, uint64_t k, uint64_t *rb)
{
    uint64_t base, lead, trail, pad, px, bits;
    tsr_geom_swath(g, k, &base, &lead, &trail);
    if (__builtin_mul_overflow(g->overscan, (uint64_t)2, &pad) ||
        __builtin_add_overflow(base, trail, &px) || __builtin_add_overflow(px, pad, &px))
        return false;
    if (g->planes) { /* `bits` 1-bit rows of (px + 7) / 8 bytes */
        *rb = (px / 8 + (px % 8 != 0)) * (uint64_t)g->bits;
        return *rb / (uint64_t)g->bits == px / 8 + (px % 8 != 0);
    }
    if (__builtin_mul_overflow(px, (uint64_t)g->bits, &bits))
        return false;
    *rb = bits / 8 + (bits % 8 != 0);
    return true;
}

bool
tsr_geom_total(const tsr_stream_geom *g, uint64_t *total)
{
    uint64_t n = tsr_geom_swaths(g), sum = 0, rb;
    /* swaths of one width have one row length: the first, the full ones, the last two */
    for (uint64_t k = 0; k < n; k++) {
        if (k == 2 && n > 4) { /* swaths 1 .. n - 3 are alike (full, overlaps both sides) */
            uint64_t many;
            if (!tsr_geom_row_bytes(g, 1, &rb) || __builtin_mul_overflow(rb, n - 4, &many) ||
                __builtin_add_overflow(sum, many, &sum))
                return false;
            k = n - 2;
        }
        if (!tsr_geom_row_bytes(g, k, &rb) || __builtin_add_overflow(sum, rb, &sum))
            return false;
    }
    return !__builtin_mul_overflow(sum, g->height, total);
}

void
tsr_geom_from_header(const tsr_header *h, tsr_stream_geom *g)
{
    g->width = h->width;
    g->height = h->height;
    g->swath_width = h->swath_width;
    g->bits = h->depth;
    g->overlap = h->overlap;
    g->overscan = h->overscan;
    g->planes = h->planes;
}
