/* The CPU backend's worker team: see pool.h. */
#include "cpu/pool.h"
#include "tiles/tiles.h" /* tsr_now_ns */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct worker_arg {
    struct tsr_pool *p;
    int id;
} worker_arg;

struct tsr_pool {
    int n;                   /* team size, the caller included */
    int started;             /* workers running (n - 1 once set up) */
    pthread_t *tid;          /* [n - 1] */
    struct worker_arg *args; /* [n - 1] what each worker is told (no heap in the worker: its
                              * first malloc or free would reserve a 64-128 MiB glibc arena,
                              * which an address-space limit may not have for 63 threads) */
    pthread_mutex_t mu;
    pthread_cond_t go;       /* a new job, or quit */
    pthread_cond_t done;     /* the last worker left the job */
    uint64_t job;            /* job number, under mu */
    bool quit;               /* under mu */
    int active;              /* workers not yet done with the job, under mu */
    /* the job: set under mu before `job` moves, read by workers after they see it */
    tsr_pool_fn fn;
    void *ctx;
    size_t items;
    _Atomic size_t next;     /* the next item to claim */
    _Atomic uint64_t busy;   /* ns inside items */
};


/* which team, if any, the calling thread is working for, and as which worker (a run from
 * inside an item goes inline, as that worker) */
static _Thread_local const tsr_pool *in_team;
static _Thread_local int in_id;

/* Claim and run items until none is left. */
static void
work(tsr_pool *p, int id)
{
    in_team = p;
    in_id = id;
    uint64_t t0 = tsr_now_ns();
    for (;;) {
        size_t k = atomic_fetch_add(&p->next, 1);
        if (k >= p->items)
            break;
        p->fn(p->ctx, id, k);
    }
    atomic_fetch_add(&p->busy, tsr_now_ns() - t0);
    in_team = NULL;
}

static void *
worker(void *arg)
{
    worker_arg a = *(worker_arg *)arg;
    tsr_pool *p = a.p;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->job == seen && !p->quit)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->quit)
            break;
        seen = p->job;
        pthread_mutex_unlock(&p->mu);
        work(p, a.id);
        pthread_mutex_lock(&p->mu);
        if (--p->active == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

tsr_pool *
tsr_pool_new(int threads, size_t stack)
{
    tsr_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = threads > 1 ? threads : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    if (p->n == 1)
        return p;
    p->tid = calloc((size_t)p->n - 1, sizeof *p->tid);
    p->args = calloc((size_t)p->n - 1, sizeof *p->args);
    pthread_attr_t attr;
    bool attr_ok = pthread_attr_init(&attr) == 0;
    if (!p->tid || !p->args || !attr_ok || (stack && pthread_attr_setstacksize(&attr, stack) != 0))
        goto fail;
    for (int i = 1; i < p->n; i++) {
        p->args[i - 1] = (worker_arg){p, i};
        int rc = pthread_create(&p->tid[i - 1], &attr, worker, &p->args[i - 1]);
        if (rc != 0) {
            errno = rc;
            goto fail;
        }
        p->started++;
    }
    pthread_attr_destroy(&attr);
    return p;
fail:;
    int saved = errno;
    if (attr_ok)
        pthread_attr_destroy(&attr);
    tsr_pool_free(p);
    errno = saved;
    return NULL;
}

void
tsr_pool_free(tsr_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->tid);
    free(p->args);
    free(p);
}

void
tsr_pool_run(tsr_pool *p, size_t n, tsr_pool_fn fn, void *ctx)
{
    if (in_team == p) { /* inside an item of this team's job: inline, already counted */
        for (size_t k = 0; k < n; k++)
            fn(ctx, in_id, k);
        return;
    }
    if (p->n == 1 || n < 2) { /* nothing to share */
        uint64_t t0 = tsr_now_ns();
        for (size_t k = 0; k < n; k++)
            fn(ctx, 0, k);
        atomic_fetch_add(&p->busy, tsr_now_ns() - t0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->items = n;
    atomic_store(&p->next, 0);
    p->active = p->started;
    p->job++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int
tsr_pool_threads(const tsr_pool *p)
{
    return p->n;
}

uint64_t
tsr_pool_busy_ns(const tsr_pool *p)
{
    return atomic_load(&((tsr_pool *)p)->busy);
}
