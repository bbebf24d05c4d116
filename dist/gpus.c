/* The multi backend (`--gpus N`): bands of one stream computed by N engines of their own, one
 * per GPU, each driven by a thread of its own, and handed to the writer in order.
 *
 * Engine i is a GPU engine on device i % (devices present): `--gpus 2` on a machine of one GPU
 * runs two engines on it (what the tests do there: it exercises the reorder path). Each has
 * its own context, streams, arena and device tile cache, made here one after the other
 * (engines over one design must not be made at once).
 *
 * Bands go out in runs of RUN consecutive bands per engine, so an engine's tile cache keeps
 * the halo rows its next band reads. The stream loop's in-order pipeline is the reorder
 * window: RUN bands per engine are in flight, and `complete` waits for the oldest. Bands are
 * the first engine's (a GPU's ~16 MiB), halved until the window and the writer's buffers fit
 * the bands the host plan counts (tsr_plan.bands). The writer's pool is attached to every
 * engine (attach): the first GPU engine pins it for all devices (portable), so each engine
 * copies its bands straight from its device into the writer's buffer, and each worker keeps
 * its engine's own pipeline full (tsr_engine_submit up to its depth, tsr_engine_complete in
 * order): no band waits for the one before it on the same GPU, and no band is copied again
 * on the host.
 *
 * A failure in any engine is the band's status: the stream ends there, every band before it
 * delivered (a resumable abort, as a sink failure). A stop reaches every engine through the
 * shared opts.stop. One --memory bounds them all (engine_memory). TSR_MULTI_CPU=1 makes the
 * engines CPU ones (tests of the reorder path on machines without a GPU). A periodic root's bands are filled on the host, as the CPU fills
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
    uint8_t *attached; /* the writer's pool attached to e, or NULL */
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

/* A job is cut into parts of at most the engine's band rows (and bytes, for a backend that
 * sizes them so), as tsr_engine_band cuts them: the rows of a part. */
static int64_t
part_rows(const mworker *w, const tsr_band_job *j)
{
    const tsr_backend_shape *sh = tsr_engine_shape(w->e);
    int64_t bh = sh->band_rows;
    if (sh->band_bytes > 0) {
        int64_t b = sh->band_bytes / (j->w * j->bps);
        bh = b < 1 ? 1 : (b > bh ? bh : b);
    }
    return bh;
}

/* Submit job j's parts (from row `from`, at most `max` of them) to w's engine; the number sent
 * into *sent. */
static tsr_status
submit_parts(mworker *w, const tsr_band_job *j, int64_t bh, int64_t from, int max, int *sent,
             tsr_error *err)
{
    tsr_status st = TSR_OK;
    *sent = 0;
    for (int64_t i = from; i < j->h && *sent < max && st == TSR_OK; i += bh) {
        int64_t n = j->h - i < bh ? j->h - i : bh;
        tsr_band_job p = {j->x, j->w, j->up ? j->y + j->h - i - n : j->y + i, n, j->up, j->bps,
                          j->dst + i * j->w * j->bps, j->seq, NULL, NULL, NULL};
        if ((st = tsr_engine_submit(w->e, &p, err)) == TSR_OK)
            (*sent)++;
    }
    return st;
}

/* Called with the mutex held: job finished with status st. */
static void
finish(mworker *w, mjob *job, tsr_status st, const tsr_error *err, uint64_t t0)
{
    multi *m = w->m;
    w->busy_ns += tsr_now_ns() - t0;
    w->bytes += st == TSR_OK ? (uint64_t)(job->j.w * job->j.h * job->j.bps) : 0;
    job->st = st;
    if (err)
        job->err = *err;
    job->done = true;
    pthread_cond_broadcast(&m->done);
}

/* Worker: its jobs in order, each job's parts submitted to its engine while the engine has
 * room (its depth), the oldest completed when it has none or nothing is left to start. After
 * a failure the engine is drained and its later jobs carry the same error (the stream ends at
 * the first failed band anyway). A job with more parts than the engine's depth (not in the
 * shapes multi_open makes) runs alone, part by part. */
static void *
worker_main(void *arg)
{
    mworker *w = arg;
    multi *m = w->m;
    const int depth = tsr_engine_shape(w->e)->depth > 0 ? tsr_engine_shape(w->e)->depth : 1;
    mjob *fly[TSR_PIPE_MAX]; /* jobs whose parts are in flight, oldest first */
    int parts[TSR_PIPE_MAX], nfly = 0, inflight = 0;
    uint64_t t0[TSR_PIPE_MAX];
    tsr_status failed = TSR_OK;
    tsr_error ferr = {TSR_OK, ""};
    pthread_mutex_lock(&m->mu);
    for (;;) {
        mjob *job = NULL;
        for (size_t i = 0; i < m->count && !job; i++) {
            mjob *c = &m->q[(m->head + i) % TSR_PIPE_MAX];
            if (c->worker == w->idx && !c->started)
                job = c;
        }
        if (job && failed != TSR_OK && nfly == 0 && inflight == 0) {
            job->started = true;
            finish(w, job, failed, &ferr, tsr_now_ns());
            continue;
        }
        int64_t bh = job ? part_rows(w, &job->j) : 1;
        int64_t need = job ? (job->j.h + bh - 1) / bh : 0;
        if (job && failed == TSR_OK && need <= depth && inflight + need <= depth &&
            nfly < TSR_PIPE_MAX) {
            job->started = true;
            tsr_band_job j = job->j;
            pthread_mutex_unlock(&m->mu);
            tsr_error err = {TSR_OK, ""};
            int sent = 0;
            uint64_t t = tsr_now_ns();
            tsr_status st = submit_parts(w, &j, bh, 0, (int)need, &sent, &err);
            pthread_mutex_lock(&m->mu);
            inflight += sent;
            if (st != TSR_OK) {
                failed = st;
                ferr = err;
                finish(w, job, st, &err, t);
                continue;
            }
            fly[nfly] = job;
            parts[nfly] = sent;
            t0[nfly++] = t;
            continue;
        }
        if (job && failed == TSR_OK && need > depth && inflight == 0) {
            job->started = true;
            tsr_band_job j = job->j;
            pthread_mutex_unlock(&m->mu);
            tsr_error err = {TSR_OK, ""};
            uint64_t t = tsr_now_ns();
            tsr_status st = TSR_OK;
            for (int64_t from = 0; from < j.h && st == TSR_OK; from += bh) {
                int sent = 0;
                st = submit_parts(w, &j, bh, from, 1, &sent, &err);
                if (sent)
                    st = st == TSR_OK ? tsr_engine_complete(w->e, &err)
                                      : (tsr_engine_complete(w->e, NULL), st);
            }
            pthread_mutex_lock(&m->mu);
            if (st != TSR_OK) {
                failed = st;
                ferr = err;
            }
            finish(w, job, st, &err, t);
            continue;
        }
        if (nfly > 0) { /* complete the oldest job's parts */
            mjob *old = fly[0];
            int np = parts[0];
            uint64_t t = t0[0];
            memmove(fly, fly + 1, (size_t)(nfly - 1) * sizeof *fly);
            memmove(parts, parts + 1, (size_t)(nfly - 1) * sizeof *parts);
            memmove(t0, t0 + 1, (size_t)(nfly - 1) * sizeof *t0);
            nfly--;
            pthread_mutex_unlock(&m->mu);
            tsr_error err = {TSR_OK, ""};
            tsr_status st = TSR_OK;
            for (int k = 0; k < np; k++) {
                tsr_status s1 = tsr_engine_complete(w->e, st == TSR_OK ? &err : NULL);
                st = st == TSR_OK ? s1 : st;
            }
            pthread_mutex_lock(&m->mu);
            inflight -= np;
            if (st != TSR_OK && failed == TSR_OK) {
                failed = st;
                ferr = err;
            }
            finish(w, old, st, &err, t);
            continue;
        }
        if (inflight > 0) { /* the parts a failed job sent: drain them */
            pthread_mutex_unlock(&m->mu);
            (void)tsr_engine_complete(w->e, NULL);
            pthread_mutex_lock(&m->mu);
            inflight--;
            continue;
        }
        if (m->quit)
            break;
        pthread_cond_wait(&m->work, &m->mu);
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
            tsr_engine_detach(w->e, w->attached);
        tsr_engine_free(w->e);
    }
    pthread_cond_destroy(&m->work);
    pthread_cond_destroy(&m->done);
    pthread_mutex_destroy(&m->mu);
    tsr_cpu_free(m->host);
    free(m);
}

/* One --memory for the process (docs/semantics.md: it bounds the process's peak): the
 * writer's buffers take at most a quarter of it, or the host plan's bands where those are more
 * (multi_open; the engines write into them, no pools of their own), and each engine plans with
 * an equal part of the rest. */
static int64_t
engine_memory(const tsr_plan *p, int n)
{
    int64_t allow = p->bands > p->budget / 4 ? p->bands : p->budget / 4;
    int64_t rest = p->budget - allow;
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

/* Worker i's thread. */
static tsr_status
start_worker(multi *m, int i, tsr_error *err)
{
    mworker *w = &m->w[i];
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
        return tsr_fail(err, TSR_ENOMEM, "--gpus: cannot start a thread for engine %d", i);
    w->running = true;
    return TSR_OK;
}

/* The writer's pool to every engine: the first GPU engine pins it for every device
 * (gpu/context.cu: tsr_gpu_register), each carves its device band buffers by its size. */
static void
multi_detach(void *bk, uint8_t *mem)
{
    multi *m = bk;
    /* the engines that found the pool pinned first, the one that pinned it last */
    for (int i = m->n - 1; i >= 0; i--)
        if (m->w[i].attached == mem) {
            tsr_engine_detach(m->w[i].e, mem);
            m->w[i].attached = NULL;
        }
}

static tsr_status
multi_attach(void *bk, uint8_t *mem, size_t len, tsr_error *err)
{
    multi *m = bk;
    for (int i = 0; i < m->n; i++) {
        mworker *w = &m->w[i];
        if (w->attached == mem)
            continue;
        if (w->attached)
            tsr_engine_detach(w->e, w->attached);
        w->attached = NULL;
        tsr_status st = tsr_engine_attach(w->e, mem, len, err);
        if (st != TSR_OK) {
            multi_detach(m, mem);
            return st;
        }
        w->attached = mem;
    }
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
    .attach = multi_attach,
    .detach = multi_detach,
    .submit = multi_submit,
    .complete = multi_complete,
    .values = multi_values,
    .stats = multi_stats,
};
