/* The backend seam: what the engine asks of whoever computes pixels, and the one header of the
 * engine a backend includes. A backend is one table of functions over its own state (a `void
 * *`), in a file of its own: cpu/backend.c (a worker team, the reference), gpu/backend.c (CUDA
 * through gpu/), and the ones a caller injects (tsr_engine_opts.ops): dist/gpus.c (bands on
 * several GPUs) and dist/mpi.c (bands on MPI ranks). A backend sees the design and what the
 * engine planned for it through a small read-only context, and tells the engine the shape of
 * its bands; it never reaches into the engine (docs/architecture.md).
 *
 * The stream loop is a small in-order pipeline over the table: submit band k, and once `depth`
 * bands are in flight, complete the oldest and hand it to the writer. A synchronous backend
 * (the CPU) does everything in submit. */
#ifndef TSR_ENGINE_BACKEND_H
#define TSR_ENGINE_BACKEND_H

#include "engine/engine.h"

#include <stdatomic.h>

/* Where a node repeats (engine/plan.c): value(x, y) = value(x + p[0], y) = value(x, y + p[1])
 * wherever both points lie inside `in` (node coordinates); p[0] == 0 when nowhere. One period
 * tile, in's top-left p[0] x p[1], is computed and copied over `in`. */
typedef struct tsr_inner {
    int64_t p[2];
    tsr_rect in;
} tsr_inner;

/* What a backend sees of the engine: the design and the engine's plan for it. Owned by the
 * engine, read-only, valid from open to close. */
typedef struct tsr_backend_ctx {
    const tsr_design *d;
    const tsr_engine_opts *opts;
    const tsr_plan *plan;       /* the host memory plan (tsr_plan.cache: the host tile cache) */
    const int64_t *tile;        /* per node id: the tile edge in use */
    const tsr_grid *grid;       /* per node id */
    const tsr_inner *inner;     /* per node id: where it repeats */
    const bool *uncached;       /* per node id: read by one pattern edge only, so computed
                                 * straight into that parent's buffer, never cached */
    int threads;                /* CPU worker threads, the caller's included */
    size_t stack;               /* the stack the CPU's worker threads get */
    int64_t nest;               /* nodes on the design's longest chain, the root included */
    int64_t rows0, rows1;       /* the stream's crop: root rows [rows0, rows1) */
} tsr_backend_ctx;

/* What a backend's bands look like, from its open(). */
typedef struct tsr_backend_shape {
    int64_t band_rows;   /* rows per stream band */
    int64_t band_bytes;  /* 0, or the bytes a band should hold whatever its width (a backend that
                          * pins its buffers: profile's regions) */
    int depth;           /* bands it keeps in flight (1 .. TSR_PIPE_MAX) */
    int64_t writer_bufs; /* writer buffers of band_rows rows the stream needs */
} tsr_backend_shape;

/* One band of the stream: root columns [x, x + w), root rows [y, y + h), written bottom row
 * first when `up`, as samples of bps bytes into dst (w * h * bps bytes, a writer buffer). */
typedef struct tsr_band_job {
    int64_t x, w, y, h;
    bool up;
    int64_t bps;
    uint8_t *dst;
    uint64_t seq; /* band number in submission order */
    _Atomic uint64_t *done; /* may be NULL: a backend that finishes the band in parts adds
                             * each part's bytes as it is done (the CPU: per root rect), for
                             * the progress display; the pipeline accounts the rest */
    /* May be NULL: the threshold array of a packed output (depth 1, 2, 4) whose band needs no
     * other row work (no overlap, reversal, overscan, planes). A backend may
     * then deliver the band dithered and packed as the stream carries it (row i at dst + i *
     * tsr_output_row_bytes(w), nodes/nodes.h) and set *packed during submit; else the
     * pipeline dithers the samples on the host. */
    const struct tsr_dither *dither;
    bool *packed;
} tsr_band_job;

/* Bands in flight at most: the CPU keeps 1, the GPU up to 4, --gpus a run per engine, rank 0
 * of an MPI job a few per worker rank (its reorder window). */
#define TSR_PIPE_MAX 256

typedef struct tsr_backend_ops {
    const char *name; /* "cpu", "gpu": for people (check, profile), never compared */
    /* Build the backend's state over ctx (borrowed until close) into *bk and its bands' shape
     * into *shape. On failure nothing is left to close. */
    tsr_status (*open)(const tsr_backend_ctx *ctx, void **bk, tsr_backend_shape *shape,
                       tsr_error *err);
    /* Free the state (waits for work in flight). */
    void (*close)(void *bk);
    /* The writer's pool [mem, mem + len) that jobs' dst lie in, before the first submit (the
     * GPU pins it), and its release before the pool goes away. Both NULL when not needed. */
    tsr_status (*attach)(void *bk, uint8_t *mem, size_t len, tsr_error *err);
    void (*detach)(void *bk, uint8_t *mem);
    /* Start computing a band into j->dst (may return before it is done). */
    tsr_status (*submit)(void *bk, const tsr_band_job *j, tsr_error *err);
    /* Wait until the oldest submitted band is in its dst. */
    tsr_status (*complete)(void *bk, tsr_error *err);
    /* Root values of rect r (inside the root) into out (r.w * r.h floats): previews, tests. */
    tsr_status (*values)(void *bk, tsr_rect r, float *out, tsr_error *err);
    /* May be NULL: the values of n small root rects at once, out[k] the first value of rects[k]
     * (fast previews: only the child tiles under them are computed); `done` (may be NULL)
     * counts the rects finished. Without it the engine asks values() for each. */
    tsr_status (*samples)(void *bk, const tsr_rect *rects, size_t n, float *out,
                          _Atomic uint64_t *done, tsr_error *err);
    /* May be NULL: row sums for previews. For rect r (inside the root), cut from its left
     * edge into blocks of kx columns (the last clipped at r's right edge), nb = ceil(r.w / kx):
     * out[(y - r.y) * nb + b] is the sum in double, left to right, of row y's values in block
     * b. The GPU sums on the device (gpu/preview.cu), so only nb doubles a row cross the
     * link; without it the engine sums values() on the host, in the same order. */
    tsr_status (*rowsums)(void *bk, tsr_rect r, int64_t kx, double *out, tsr_error *err);
    /* The backend's figures into st (may be NULL: none beyond the engine's). */
    void (*stats)(void *bk, tsr_engine_stats *st);
    /* May be NULL: how it keeps node n, for `tessera check --tree` (the GPU: "device",
     * "periodic", "host", ...); NULL for nothing to say. */
    const char *(*node_class)(void *bk, const tsr_node *n);
} tsr_backend_ops;

/* The backends `--backend` names and `auto` walks (engine/engine.c: tsr_backends[]), in the
 * order auto prefers them: the first usable one wins. */
typedef struct tsr_backend_entry {
    const char *name;
    const tsr_backend_ops *ops;
    /* Whether it can run here; when not, why into why[0 .. n) ("no CUDA device: ..."). */
    bool (*usable)(char *why, size_t n);
} tsr_backend_entry;

extern const tsr_backend_entry tsr_backends[]; /* terminated by a NULL name */

extern const tsr_backend_ops tsr_backend_cpu; /* cpu/backend.c */
extern const tsr_backend_ops tsr_backend_gpu; /* gpu/backend.c */

/* ---- what backends share of the plan (read-only helpers over the context) ------------------ */

/* The swath's step: its columns in swath order (the last may be narrower), else the root's
 * width. */
static inline int64_t
tsr_swath_step(const tsr_design *d)
{
    const tsr_output *o = &d->out;
    return o->order == TSR_ORDER_SWATH && o->swath_width < d->root->w ? o->swath_width
                                                                      : d->root->w;
}

/* Columns of the widest stream band: a swath and the overlap it goes on into the next one
 * (docs/outputs.md §8), at most the root's width. */
static inline int64_t
tsr_band_width(const tsr_design *d)
{
    int64_t sw = tsr_swath_step(d), W = d->root->w;
    return sw < W && d->out.overlap > 0 ? (sw + d->out.overlap < W ? sw + d->out.overlap : W)
                                        : sw;
}

/* Whether node n repeats somewhere (engine/plan.c). */
static inline bool
tsr_repeats(const tsr_backend_ctx *c, const tsr_node *n)
{
    return c->inner && c->inner[n->id].p[0];
}

/* Whether node n repeats over its whole rect: its period tile then sits at the origin, and a
 * whole root streams by copies of converted rows. */
static inline bool
tsr_periodic_whole(const tsr_backend_ctx *c, const tsr_node *n)
{
    const tsr_rect in = tsr_repeats(c, n) ? c->inner[n->id].in : tsr_rect_make(0, 0, 0, 0);
    return in.x == 0 && in.y == 0 && in.w == n->w && in.h == n->h;
}

/* Node n's period tile's rect: the period at the top-left of where it repeats. */
static inline tsr_rect
tsr_period_rect(const tsr_backend_ctx *c, const tsr_node *n)
{
    const tsr_inner *per = &c->inner[n->id];
    return tsr_rect_make(per->in.x, per->in.y, per->p[0], per->p[1]);
}

/* Whether a stop was requested (tsr_engine_opts.stop). */
static inline bool
tsr_ctx_stopping(const tsr_backend_ctx *c)
{
    return c->opts->stop && *c->opts->stop;
}

/* ---- engines inside a backend (the injected ones: dist/) ----------------------------------- */

/* Band (x, w, y, h; bottom row first when up) into dst (w * h * bps bytes), computed by e's
 * backend synchronously in bands of e's own size (its plan counts those), whoever cut the
 * band: a worker of another engine's stream (dist/mpi.c, dist/gpus.c). For a backend that
 * attaches a pool (the GPU), dst lies in the pool attached (tsr_engine_attach), of at least
 * tsr_engine_band_pool(e, bytes of the largest band) bytes. */
tsr_status
tsr_engine_band(tsr_engine *e, int64_t x, int64_t w, int64_t y, int64_t h, bool up,
                uint8_t *dst, tsr_error *err);

/* The pool tsr_engine_band needs for bands of up to max_band bytes: twice that (one band
 * computing, one being handed on), and for an attaching backend at least one of e's own bands
 * per writer buffer (its device band buffers are carved from the pool). -1 on overflow. */
int64_t
tsr_engine_band_pool(const tsr_engine *e, int64_t max_band);

/* Give e's backend the pool its bands will be written into (pinned by the GPU), and take it
 * back; nothing for a backend that needs no pool. */
tsr_status
tsr_engine_attach(tsr_engine *e, uint8_t *mem, size_t len, tsr_error *err);

void
tsr_engine_detach(tsr_engine *e, uint8_t *mem);

/* One band of e's stream started (the job's dst in the pool attached, j->h at most e's band
 * rows), and the oldest started one waited for: e's backend's submit and complete, for a
 * caller that keeps e's pipeline full (dist/gpus.c), at most tsr_engine_shape(e)->depth bands
 * in flight. */
tsr_status
tsr_engine_submit(tsr_engine *e, const tsr_band_job *j, tsr_error *err);

tsr_status
tsr_engine_complete(tsr_engine *e, tsr_error *err);

/* e's bands' shape (what its backend's open said). */
const tsr_backend_shape *
tsr_engine_shape(const tsr_engine *e);

/* Swath k's columns [*x, *x + *w) of swaths `sw` wide, for the output's start corner: from
 * the left, or from the right edge inward (the last swath may be narrower). */
void
tsr_swath_cols(const tsr_design *d, int64_t sw, int64_t k, int64_t *x, int64_t *w);

#endif
