/* The backend seam (engine-internal): what the stream loop, drain and previews ask of whoever
 * computes pixels. One table of functions per backend, one file each: engine/cpu.c (a worker team,
 * the reference) and engine/gpu_backend.c (CUDA through gpu/). The stream loop is a small
 * in-order pipeline over it: submit band k, and once `depth` bands are in flight, complete the
 * oldest and hand it to the writer. A synchronous backend (the CPU) does everything in submit. */
#ifndef TSR_ENGINE_BACKEND_H
#define TSR_ENGINE_BACKEND_H

#include "engine/engine.h"

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
} tsr_band_job;

/* Bands in flight at most (e->depth): the CPU asks for 1, the GPU up to 4, rank 0 of an MPI job
 * a few per worker rank (dist/mpi.c: its reorder window). */
#define TSR_PIPE_MAX 256

typedef struct tsr_backend_ops {
    const char *name; /* "cpu", "gpu": for people (check, profile), never compared */
    /* Build the backend's state in e->bk; set e->band_rows and e->depth. */
    tsr_status (*open)(tsr_engine *e, tsr_error *err);
    /* Free e->bk (waits for work in flight). */
    void (*close)(tsr_engine *e);
    /* The writer's pool [mem, mem + len) that jobs' dst lie in, before the first submit (the
     * GPU pins it), and its release before the pool goes away. */
    tsr_status (*attach)(tsr_engine *e, uint8_t *mem, size_t len, tsr_error *err);
    void (*detach)(tsr_engine *e, uint8_t *mem);
    /* Start computing a band into j->dst (may return before it is done). */
    tsr_status (*submit)(tsr_engine *e, const tsr_band_job *j, tsr_error *err);
    /* Wait until the oldest submitted band is in its dst. */
    tsr_status (*complete)(tsr_engine *e, tsr_error *err);
    /* Root values of rect r (inside the root) into out (r.w * r.h floats): previews, tests. */
    tsr_status (*values)(tsr_engine *e, tsr_rect r, float *out, tsr_error *err);
    /* The backend's own figures into st (may be NULL: none beyond the engine's). */
    void (*stats)(tsr_engine *e, tsr_engine_stats *st);
} tsr_backend_ops;

/* Swath k's columns [*x, *x + *w) of swaths `sw` wide, for the output's start corner: from
 * the left, or from the right edge inward (the last swath may be narrower). The stream loop
 * (engine.c) and the pull reader (job.c) walk bands with it. */
void
tsr_engine_swath_cols(const tsr_engine *e, int64_t sw, int64_t k, int64_t *x, int64_t *w);

extern const tsr_backend_ops tsr_backend_cpu;
extern const tsr_backend_ops tsr_backend_gpu;
extern const tsr_backend_ops tsr_backend_multi; /* --gpus: bands on several engines */

/* TSR_MULTI_CPU=1: --gpus makes CPU engines (engine/multi.c's tests on machines without a
 * GPU: the same hand-out and reorder path). */
bool
tsr_multi_cpu(void);

/* Band (x, w, y, h; bottom row first when up) into dst (w * h * bps bytes), computed by e's
 * backend synchronously in bands of e's own size (its plan counts those), whoever cut the
 * band: a worker of another engine's stream (dist/mpi.c, engine/multi.c). For a backend that
 * attaches a pool (the GPU), dst lies in the pool attached, of at least
 * tsr_engine_band_pool(e, bytes of the largest band) bytes. */
tsr_status
tsr_engine_band(tsr_engine *e, int64_t x, int64_t w, int64_t y, int64_t h, bool up,
                uint8_t *dst, tsr_error *err);

/* The pool tsr_engine_band needs for bands of up to max_band bytes: twice that (one band
 * computing, one being handed on), and for an attaching backend at least one of e's own bands
 * per writer buffer (its device band buffers are carved from the pool). -1 on overflow. */
int64_t
tsr_engine_band_pool(const tsr_engine *e, int64_t max_band);

/* A periodic root's period (tsr_period_rect) as output samples in e->root_period, computed
 * by the CPU reference and converted once (the GPU fills bands from it on the device). */
tsr_status
tsr_engine_root_period(tsr_engine *e, tsr_error *err);

/* Shared by both backends: a periodic root's band by row copies of its converted period
 * (engine.c), true when the root is periodic over its whole rect (then the band is filled,
 * synchronously). */
tsr_status
tsr_engine_fill_periodic(tsr_engine *e, const tsr_band_job *j, bool *done, tsr_error *err);

/* The CPU's: the part of band j inside the root's periodic interior (the whole band when the
 * root is periodic everywhere) filled the same way; rest[0..*nrest) get what is left to
 * compute (the band itself when the root does not repeat). */
tsr_status
tsr_engine_fill_inner(tsr_engine *e, const tsr_band_job *j, tsr_rect rest[4], size_t *nrest,
                      tsr_error *err);

#endif
