/* stream: the writer thread. See stream.h.
 *
 * A fixed pool of buffers circulates between the producer (acquire, fill, submit) and one
 * writer thread (write, give back). The pool size bounds the memory the renderer may run
 * ahead by, which is what the memory plan counts. Buffers go to the sink strictly in
 * submission order because there is exactly one writer and the queue is FIFO. */
#include "stream/stream.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* Buffers start on a page: quantization loops that fill them vectorize cleanly, and a stdout
 * pipe can take their pages by reference (tsr_sink_write_donate needs whole pages). */
#define BUF_ALIGN 4096
#define HUGE_ALIGN ((size_t)2 << 20)

enum bufstate { BUF_FREE, BUF_HELD, BUF_QUEUED };

struct job {
    size_t idx; /* buffer index */
    size_t len; /* bytes to write */
};

struct tsr_writer {
    tsr_sink *sink;       /* borrowed; only the writer thread touches it until finish */
    size_t nbuf;          /* buffers in the pool */
    size_t cap;           /* usable bytes per buffer */
    size_t stride;        /* cap rounded up to the alignment: distance between buffers */
    uint8_t *mem;         /* all buffers, one anonymous mapping (never heap memory: pages a
                           * pipe still references must not come back through malloc) */
    size_t memlen;        /* bytes of buffers */
    void *map;            /* the mapping mem lies in (aligned inside it), maplen bytes; NULL
                           * when the memory is borrowed (tsr_writer_new_in) */
    size_t maplen;
    unsigned char *state; /* enum bufstate per buffer: catches foreign or twice-submitted ones */
    size_t *freelist;     /* indices of free buffers (a stack) */
    size_t nfree;         /* entries in freelist */
    struct job *queue;    /* ring of submitted buffers, nbuf slots (never more in flight) */
    size_t qhead, qlen;   /* ring start and length */
    bool stop;            /* finish was called: drain the queue and exit */
    bool failed;          /* a write failed: acquire returns NULL, queued buffers are dropped */
    bool wrote;           /* at least one buffer went out: a later wait is an underrun */
    bool keep_pages;      /* write by copy, never donate (borrowed pages: tsr_writer_new_in) */
    tsr_error first;      /* the first failure */
    pthread_mutex_t mu;   /* guards everything above except sink/mem/geometry */
    pthread_cond_t freed; /* a buffer became free, or the writer failed */
    pthread_cond_t work;  /* a buffer was queued, or stop was set */
    pthread_t thread;     /* the writer */
};

static void
give_back_locked(tsr_writer *w, size_t idx)
{
    w->state[idx] = BUF_FREE;
    w->freelist[w->nfree++] = idx;
    pthread_cond_broadcast(&w->freed);
}

static void
fail_locked(tsr_writer *w, const tsr_error *e)
{
    if (!w->failed) {
        w->failed = true;
        w->first = *e;
    }
    /* Wake a producer blocked in acquire so it sees the failure instead of waiting for a
     * buffer that may never come back. */
    pthread_cond_broadcast(&w->freed);
}

static double
mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *
writer_main(void *arg)
{
    tsr_writer *w = arg;
    bool paced = tsr_sink_paced(w->sink);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        /* An underrun is a paced sink that had to wait for the producer between two
         * buffers; the wait before the first buffer and the one that ends with finish are
         * not (nothing was due yet, or nothing is due any more). */
        double t0 = 0;
        if (w->qlen == 0 && !w->stop && paced && w->wrote)
            t0 = mono_s();
        while (w->qlen == 0 && !w->stop)
            pthread_cond_wait(&w->work, &w->mu);
        if (w->qlen == 0)
            break; /* stopped and drained */
        if (t0 > 0 && !w->failed)
            tsr_sink_note_underrun(w->sink, mono_s() - t0);
        struct job j = w->queue[w->qhead];
        w->qhead = (w->qhead + 1) % w->nbuf;
        w->qlen--;
        bool skip = w->failed;
        pthread_mutex_unlock(&w->mu);

        tsr_error e;
        tsr_status st = TSR_OK;
        if (j.len == 0) /* a buffer handed back unused (bit planes go out in others) */
            skip = true;
        if (!skip && w->keep_pages)
            st = tsr_sink_write(w->sink, w->mem + j.idx * w->stride, j.len, &e);
        else if (!skip)
            st = tsr_sink_write_donate(w->sink, w->mem + j.idx * w->stride, j.len, &e);

        pthread_mutex_lock(&w->mu);
        w->wrote = true;
        if (st != TSR_OK)
            fail_locked(w, &e);
        give_back_locked(w, j.idx);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void
writer_free(tsr_writer *w)
{
    if (w->map)
        munmap(w->map, w->maplen);
    free(w->state);
    free(w->freelist);
    free(w->queue);
    free(w);
}

bool
tsr_writer_mem_new(tsr_writer_mem *m, size_t nbuf, size_t cap)
{
    *m = (tsr_writer_mem){0};
    if (nbuf == 0 || cap == 0 || cap > SIZE_MAX - HUGE_ALIGN)
        return false;
    /* Buffers of 2 MiB or more start on a 2 MiB boundary, so each is made of whole huge
     * pages and dropping one (vmsplice) never splits a huge page shared with its neighbour. */
    size_t align = cap >= HUGE_ALIGN ? HUGE_ALIGN : BUF_ALIGN;
    size_t stride = (cap + align - 1) / align * align;
    if (stride > SIZE_MAX / nbuf || stride * nbuf > SIZE_MAX - align)
        return false;
    size_t memlen = stride * nbuf, maplen = memlen + (align > BUF_ALIGN ? align : 0);
    void *map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return false;
    *m = (tsr_writer_mem){map, maplen,
                          (uint8_t *)(((uintptr_t)map + align - 1) & ~(uintptr_t)(align - 1)),
                          memlen, nbuf, cap, stride};
    /* Huge pages where the system allows them: a stdout pipe's vmsplice drops the pages it
     * took, and refaulting 2 MiB at a time costs a fraction of refaulting 4 KiB pages. */
    if (align > BUF_ALIGN)
        madvise(m->mem, m->memlen, MADV_HUGEPAGE);
    return true;
}

void
tsr_writer_mem_free(tsr_writer_mem *m)
{
    if (m->map)
        munmap(m->map, m->maplen);
    *m = (tsr_writer_mem){0};
}

/* A writer over m's buffers of cap bytes; it unmaps them at the end when `own`. */
static tsr_writer *
writer_over(tsr_sink *sink, const tsr_writer_mem *m, size_t cap, bool own)
{
    size_t nbuf = m->nbuf;
    tsr_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->sink = sink;
    w->nbuf = nbuf;
    w->cap = cap;
    w->stride = m->stride;
    w->memlen = m->memlen;
    w->mem = m->mem;
    w->map = own ? m->map : NULL;
    w->maplen = m->maplen;
    w->keep_pages = !own; /* borrowed pages come back to the next writer: never donated */
    w->state = calloc(nbuf, 1);
    w->freelist = calloc(nbuf, sizeof *w->freelist);
    w->queue = calloc(nbuf, sizeof *w->queue);
    if (!w->state || !w->freelist || !w->queue)
        goto fail;
    /* Hand out low indices first (stack top = 0), so a producer that needs one buffer at a
     * time keeps reusing warm memory. */
    for (size_t i = 0; i < nbuf; i++)
        w->freelist[i] = nbuf - 1 - i;
    w->nfree = nbuf;
    w->first.status = TSR_OK;
    w->first.msg[0] = '\0';

    if (pthread_mutex_init(&w->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&w->freed, NULL) != 0)
        goto fail_mu;
    if (pthread_cond_init(&w->work, NULL) != 0)
        goto fail_freed;

    /* The thread starts with every signal blocked: SIGINT/SIGTERM handlers then run on the
     * producer, which is the thread that can stop the render, and a closed pipe makes write
     * return EPIPE (a reportable error) instead of killing the process from this thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        goto fail_work;
    return w;

fail_work:
    pthread_cond_destroy(&w->work);
fail_freed:
    pthread_cond_destroy(&w->freed);
fail_mu:
    pthread_mutex_destroy(&w->mu);
fail:
    w->map = NULL; /* the memory stays the caller's on failure */
    writer_free(w);
    return NULL;
}

tsr_writer *
tsr_writer_new(tsr_sink *sink, size_t nbuf, size_t cap)
{
    tsr_writer_mem m;
    if (!sink || !tsr_writer_mem_new(&m, nbuf, cap))
        return NULL;
    tsr_writer *w = writer_over(sink, &m, cap, true);
    if (!w)
        tsr_writer_mem_free(&m);
    return w;
}

tsr_writer *
tsr_writer_new_in(tsr_sink *sink, const tsr_writer_mem *m, size_t cap)
{
    if (!sink || !m || !m->mem || cap == 0 || cap > m->cap)
        return NULL;
    return writer_over(sink, m, cap, false);
}

uint8_t *
tsr_writer_acquire(tsr_writer *w)
{
    if (!w)
        return NULL;
    pthread_mutex_lock(&w->mu);
    while (w->nfree == 0 && !w->failed)
        pthread_cond_wait(&w->freed, &w->mu);
    uint8_t *buf = NULL;
    if (!w->failed) {
        size_t idx = w->freelist[--w->nfree];
        w->state[idx] = BUF_HELD;
        buf = w->mem + idx * w->stride;
    }
    pthread_mutex_unlock(&w->mu);
    return buf;
}

void
tsr_writer_submit(tsr_writer *w, uint8_t *buf, size_t len)
{
    if (!w || !buf)
        return;
    pthread_mutex_lock(&w->mu);
    /* A buffer that is not ours, not held, or longer than a buffer is a caller bug: record it
     * as the writer's error (reported by finish) rather than corrupting the queue. */
    size_t off = buf >= w->mem ? (size_t)(buf - w->mem) : SIZE_MAX;
    size_t idx = off / w->stride;
    if (off == SIZE_MAX || off % w->stride != 0 || idx >= w->nbuf || w->state[idx] != BUF_HELD) {
        tsr_error e;
        tsr_fail(&e, TSR_EINTERNAL, "tsr_writer_submit: not a buffer from tsr_writer_acquire");
        fail_locked(w, &e);
    } else if (len > w->cap) {
        tsr_error e;
        tsr_fail(&e, TSR_EINTERNAL, "tsr_writer_submit: %zu bytes in a buffer of %zu", len,
                 w->cap);
        fail_locked(w, &e);
        give_back_locked(w, idx);
    } else {
        w->state[idx] = BUF_QUEUED;
        w->queue[(w->qhead + w->qlen) % w->nbuf] = (struct job){idx, len};
        w->qlen++;
        pthread_cond_signal(&w->work);
    }
    pthread_mutex_unlock(&w->mu);
}

tsr_status
tsr_writer_finish(tsr_writer *w, tsr_error *err)
{
    if (!w)
        return TSR_OK;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    /* Buffers still held by the producer (it stopped early) are simply never written; the
     * thread only waits for queued ones, so this cannot deadlock. */
    pthread_join(w->thread, NULL);

    tsr_status st = TSR_OK;
    if (w->failed) {
        st = w->first.status;
        if (err)
            *err = w->first;
    }
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->freed);
    pthread_mutex_destroy(&w->mu);
    writer_free(w);
    return st;
}
