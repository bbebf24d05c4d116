/* engine internals shared by its files (never included outside engine/: backends see
 * engine/backend.h). */
#ifndef TSR_ENGINE_INT_H
#define TSR_ENGINE_INT_H

#include "engine/backend.h"
#include "engine/engine.h"
#include "stream/stream.h"

struct tsr_engine {
    const tsr_design *d;
    tsr_engine_opts opts;
    tsr_plan plan;
    tsr_backend_ctx ctx;        /* what the backend sees (points into this struct) */
    const tsr_backend_ops *ops; /* the backend computing pixels (engine/backend.h) */
    void *bk;                   /* its state */
    tsr_backend_shape shape;    /* its bands (its open()) */
    tsr_writer_mem wmem;        /* a pinning backend's writer pool, kept across streams */
    int64_t *tile;              /* per node id: tile edge in use */
    tsr_grid *grid;             /* per node id */
    tsr_inner *inner;           /* per node id: where it repeats (plan.c), else p[0] == 0 */
    bool *uncached;             /* per node id: read by one pattern edge only (plan.c) */
    double *node_seconds;       /* filled by get_stats */
    int threads;
    int cores;                  /* the default thread count (one per core) */
    size_t stack;               /* the stack the CPU's workers get (from the design's depth) */
    int64_t nest;               /* nodes on the design's longest chain, the root included */
    int64_t design_bytes;       /* what the loaded design keeps on the heap (plan: fixed) */
    int64_t rows0, rows1;       /* the crop: stream rows [rows0, rows1) of the root */
};

/* Swath k of design d's stream (geometry g, tsr_design_geom): the root columns [*x, *x + *w)
 * its bands compute, the overlap it shares with the next swath included, and its overlaps
 * (tsr_geom_swath). */
void
tsr_stream_swath(const tsr_design *d, const tsr_stream_geom *g, int64_t k, int64_t *x,
                 int64_t *w, uint64_t *lead, uint64_t *trail);

/* Fill e->plan, e->nest, e->stack, e->inner and e->uncached for e->opts; TSR_EPLAN when the
 * plan does not fit, or its threads do not fit ulimit -v. */
tsr_status
tsr_plan_make(tsr_engine *e, tsr_error *err);

/* Bytes of the tiles one band reads of the cached nodes below the root (what the tile cache
 * must hold for each to be computed once per band); -1 when out of memory. */
int64_t
tsr_plan_band_tiles(const tsr_engine *e);

/* `check`'s warnings about the plan (a tile cache too small for a band's tiles: recomputation,
 * and the --memory that avoids it), one line each to f; returns how many. */
size_t
tsr_plan_print_warnings(const tsr_engine *e, FILE *f);

#endif
