/* The multi backend (`--gpus N`): bands of one stream computed by N engines of their own, one
 * per GPU, each driven by a thread of its own, and handed to the writer in order.
 *
 * Engine i is a GPU engine on device i % (devices present): `--gpus 2` on a machine of one GPU
 * runs two engines on it (what the tests do there: it exercises the reorder path). Each has
 * its own context, streams, arena, device tile cache and pinned pool (tsr_engine_band_pool),
 * made here one after the other (engines over one design must not be made at once).
 *
 * Bands go out in runs of RUN consecutive bands per engine, so an engine's tile cache keeps
 * the halo rows its next band reads. The stream loop's in-order pipeline is the reorder
 * window: a run per engine is in flight, and `complete` waits for the oldest. Bands are the
 * first engine's (a GPU's ~16 MiB), halved until the window and the writer's buffers fit the
 * bands the host plan counts (tsr_plan.bands). A worker computes a band into its own
 * pinned pool (tsr_engine_band) and copies it into the writer's buffer: the writer's pool is
 * pinned by no one (one host range cannot be registered by several contexts of a device).
 *
 * A failure in any engine is the band's status: the stream ends there, every band before it
 * delivered (a resumable abort, as a sink failure). A stop reaches every engine through the
 * shared opts.stop. One --memory bounds them all (engine_memory). TSR_MULTI_CPU=1 makes the engines CPU ones (tests of the reorder path on
 * machines without a GPU). A periodic root's bands are filled on the host, as the CPU fills
 * them (cpu/periodic.c), by an evaluator of its own. */
#include "cpu/cpu.h"
#include "dist/dist.h"
#include "gpu/gpu.h"
#include "tiles/tune.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN 4 /* consecutive bands per engine, and bands in flight per engine */
#define MULTI_MAX 64 /* tsr_engine_stats.engines */

typedef struct mjob {
    tsr_band_job j;
    int worker;
    bool started, done;
    tsr_status st;
    tsr_error err;
} mjob;

typedef struct multi multi;

typedef struct mworker {
    multi *m;
    int idx;
    tsr_engine *e;
    uint8_t *pool; /* tsr_engine_band_pool bytes, attached to e when its backend pins */
    size_t pool_len;
    bool attached;
    pthread_t thread;
    bool running;
    int device;
    uint64_t bytes;   /* of the bands it computed (under the mutex) */
    uint64_t busy_ns; /* computing them */
} mworker;

struct multi {
    const tsr_backend_ctx *ctx;
    tsr_cpu *host;        /* a periodic root's bands */
    int n;
    mworker w[MULTI_MAX];
    mjob q[TSR_PIPE_MAX]; /* submitted, not yet completed: a ring */
    size_t head, count;
    uint64_t seq;
    bool quit;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    int64_t max_band;
};

/* Worker: the oldest job of its own not started, computed into its pool and copied out. */
static void *
worker_main(void *arg)
{
    mworker *w = arg;
    multi *m = w->m;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        mjob *job = NULL;
        for (size_t i = 0; i < m->count && !job; i++) {
            mjob *c = &m->q[(m->head + i) % TSR_PIPE_MAX];
            if (c->worker == w->idx && !c->started)
                job = c;
        }
        if (!job && m->quit)
            break;
        if (!job) {
            pthread_cond_wait(&m->work, &m->mu);
            continue;
        }
        job->started = true;
        tsr_band_job j = job->j;
        pthread_mutex_unlock(&m->mu);
        tsr_error err = {TSR_OK, ""};
        uint64_t t0 = tsr_now_ns();
        tsr_status st = tsr_engine_band(w->e, j.x, j.w, j.y, j.h, j.up, w->pool, &err);
        if (st == TSR_OK)
            memcpy(j.dst, w->pool, (size_t)(j.w * j.h * j.bps));
        uint64_t t1 = tsr_now_ns();
        pthread_mutex_lock(&m->mu);
        w->busy_ns += t1 - t0;
        w->bytes += st == TSR_OK ? (uint64_t)(j.w * j.h * j.bps) : 0;
        job->st = st;
        job->err = err;
        job->done = true;
        pthread_cond_broadcast(&m->done);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

static void
multi_close(void *bk)
{
    multi *m = bk;
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->quit = true;
    pthread_cond_broadcast(&m->work);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->n; i++) {
        mworker *w = &m->w[i];
        if (w->running)
            pthread_join(w->thread, NULL);
        if (w->attached)
            tsr_engine_detach(w->e, w->pool);
        tsr_engine_free(w->e);
        free(w->pool);
    }
    pthread_cond_destroy(&m->work);
    pthread_cond_destroy(&m->done);
    pthread_mutex_destroy(&m->mu);
    tsr_cpu_free(m->host);
    free(m);
}

/* One --memory for the process (docs/semantics.md: it bounds the process's peak): the
 * writer's buffers take at most a quarter of it, or the host plan's bands where those are more
 * (multi_open), the engines' pools at most half that again (two bands each, the bands sized so
 * the writer's n * RUN + 3 of them fit), and each engine plans with an equal part of the rest. */
static int64_t
engine_memory(const tsr_plan *p, int n)
{
    int64_t allow = p->bands > p->budget / 4 ? p->bands : p->budget / 4;
    int64_t rest = p->budget - allow - allow / 2;
    return rest / n > 1 ? rest / n : 1;
}

/* Worker i's engine. */
static tsr_status
open_engine(multi *m, int i, int n, int devices, bool cpu, tsr_error *err)
{
    mworker *w = &m->w[i];
    w->m = m;
    w->idx = i;
    tsr_engine_opts o = *m->ctx->opts;
    o.memory = engine_memory(m->ctx->plan, n);
    o.gpus = 0;
    o.ops = NULL;
    o.gpu_device = devices > 0 ? i % devices : 0;
    o.backend = cpu ? "cpu" : "gpu";
    w->device = o.gpu_device;
    w->e = tsr_engine_new(m->ctx->d, &o, err);
    if (!w->e && err && err->status == TSR_EPLAN) {
        char each[32], all[32];
        tsr_human_bytes(each, sizeof each, (double)o.memory);
        tsr_human_bytes(all, sizeof all, (double)m->ctx->plan->budget);
        tsr_error e2 = *err;
        tsr_fail(err, TSR_EPLAN, "--gpus %d: each engine plans with %s of --memory %s: %s", n,
                 each, all, e2.msg);
    }
    return w->e ? TSR_OK : (err ? err->status : TSR_EINVAL);
}

/* Worker i's pool (attached to its engine when that pins) and thread. */
static tsr_status
start_worker(multi *m, int i, tsr_error *err)
{
    mworker *w = &m->w[i];
    int64_t len = tsr_engine_band_pool(w->e, m->max_band);
    w->pool = len > 0 ? malloc((size_t)len) : NULL;
    if (!w->pool)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (--gpus: %lld bytes for engine %d)",
                        (long long)len, i);
    w->pool_len = (size_t)len;
    tsr_status st = tsr_engine_attach(w->e, w->pool, w->pool_len, err);
    if (st != TSR_OK)
        return st;
    w->attached = true;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
        return tsr_fail(err, TSR_ENOMEM, "--gpus: cannot start a thread for engine %d", i);
    w->running = true;
    return TSR_OK;
}

static tsr_status
multi_open(const tsr_backend_ctx *ctx, void **bk, tsr_backend_shape *shape, tsr_error *err)
{
    const tsr_design *d = ctx->d;
    int devices = tsr_gpu_count();
    bool cpu = tsr_tune_get()->gpus_on_cpu;
    int n = ctx->opts->gpus < 0 ? devices : ctx->opts->gpus;
    if (ctx->opts->backend && strcmp(ctx->opts->backend, "cpu") == 0)
        return tsr_fail(err, TSR_EINVAL, "--gpus: needs the GPU backend, not --backend cpu");
    if (!cpu && devices == 0) {
        char why[256];
        tsr_gpu_describe(why, sizeof why);
        return tsr_fail(err, TSR_EINVAL, "--gpus: no usable GPU (%s); use --backend cpu", why);
    }
    if (n < 1 || n > MULTI_MAX)
        return tsr_fail(err, TSR_EINVAL, "--gpus %d: must be 1 to %d, or all", n, MULTI_MAX);
    multi *m = calloc(1, sizeof *m);
    if (!m)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->work, NULL);
    pthread_cond_init(&m->done, NULL);
    m->ctx = ctx;
    m->host = tsr_cpu_new(ctx, 0, err);
    tsr_status st = m->host ? TSR_OK : TSR_ENOMEM;
    for (; m->n < n && st == TSR_OK; m->n++)
        st = open_engine(m, m->n, n, devices, cpu, err);
    if (st == TSR_OK) {
        /* the first engine's bands, halved until the window and the writer's buffers fit
         * the host plan's bands */
        const tsr_plan *p = ctx->plan;
        const tsr_backend_shape *first = tsr_engine_shape(m->w[0].e);
        int64_t sw = tsr_band_width(d), bps = d->out.depth / 8;
        shape->depth = n * RUN;
        shape->writer_bufs = shape->depth + 3;
        int64_t rows = first->band_rows;
        int64_t allow = p->bands > p->budget / 4 ? p->bands : p->budget / 4;
        while (rows > 1 && shape->writer_bufs * sw * rows * bps > allow)
            rows /= 2;
        shape->band_rows = rows;
        shape->band_bytes = first->band_bytes > 0 ? sw * rows * bps : 0;
        m->max_band = sw * rows * bps;
    }
    for (int i = 0; i < m->n && st == TSR_OK; i++)
        st = start_worker(m, i, err);
    if (st != TSR_OK) {
        multi_close(m);
        return st;
    }
    *bk = m;
    return TSR_OK;
}

static tsr_status
multi_submit(void *bk, const tsr_band_job *j, tsr_error *err)
{
    multi *m = bk;
    bool done = false;
    tsr_status st = tsr_cpu_fill_periodic(m->host, j, &done, err);
    if (st != TSR_OK)
        return st;
    pthread_mutex_lock(&m->mu);
    if (m->count == TSR_PIPE_MAX) {
        pthread_mutex_unlock(&m->mu);
        return tsr_fail(err, TSR_EINTERNAL, "--gpus: more bands in flight than the window");
    }
    mjob *q = &m->q[(m->head + m->count) % TSR_PIPE_MAX];
    *q = (mjob){.j = *j, .worker = (int)((m->seq / RUN) % (uint64_t)m->n)};
    q->started = q->done = done; /* a periodic root's band is filled already */
    q->st = TSR_OK;
    m->seq++;
    m->count++;
    pthread_cond_broadcast(&m->work);
    pthread_mutex_unlock(&m->mu);
    return TSR_OK;
}

static tsr_status
multi_complete(void *bk, tsr_error *err)
{
    multi *m = bk;
    pthread_mutex_lock(&m->mu);
    if (m->count == 0) {
        pthread_mutex_unlock(&m->mu);
        return TSR_OK;
    }
    mjob *q = &m->q[m->head];
    while (!q->done)
        pthread_cond_wait(&m->done, &m->mu);
    tsr_status st = q->st;
    if (st != TSR_OK && err)
        *err = q->err;
    m->head = (m->head + 1) % TSR_PIPE_MAX;
    m->count--;
    pthread_mutex_unlock(&m->mu);
    return st;
}

/* Previews and tests: the first engine computes them (its thread is idle meanwhile: the
 * stream and a preview never run at once on one engine). */
static tsr_status
multi_values(void *bk, tsr_rect r, float *out, tsr_error *err)
{
    multi *m = bk;
    return tsr_engine_render_rect(m->w[0].e, r, out, err);
}

static void
multi_stats(void *bk, tsr_engine_stats *st)
{
    multi *m = bk;
    tsr_cpu_stats(m->host, st); /* a periodic root's fill */
    pthread_mutex_lock(&m->mu);
    st->nengines = m->n;
    for (int i = 0; i < m->n; i++) {
        st->engines[i].device = m->w[i].device;
        st->engines[i].bytes = m->w[i].bytes;
        st->engines[i].busy_seconds = (double)m->w[i].busy_ns * 1e-9;
    }
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->n; i++) {
        tsr_engine_stats s = tsr_engine_get_stats(m->w[i].e);
        st->dev_hits += s.dev_hits;
        st->dev_misses += s.dev_misses;
        st->dev_evictions += s.dev_evictions;
        st->dev_cache_bytes += s.dev_cache_bytes;
        st->dev_cache_budget += s.dev_cache_budget;
        st->dev_arena += s.dev_arena;
        st->dev_bands += s.dev_bands;
        st->dev_arena_peak += s.dev_arena_peak;
        for (int k = 0; k < TSR_GPU_STAGES; k++)
            st->gpu_stage_seconds[k] += s.gpu_stage_seconds[k];
        st->gpu_host_seconds += s.gpu_host_seconds;
    }
}

const tsr_backend_ops tsr_backend_gpus = {
    .name = "gpus",
    .open = multi_open,
    .close = multi_close,
    .submit = multi_submit,
    .complete = multi_complete,
    .values = multi_values,
    .stats = multi_stats,
};
