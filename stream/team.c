/* stream: the frame team (see sink_int.h). A framed sink's writes are band buffers of many
 * 1 MiB frames, and each frame's crc32 (and level-1 deflate) cost more than sending it: on the
 * one writing thread they capped a framed file behind a GPU renderer at ~0.2 GB/s deflated and
 * a framed pipe at ~1.6 GB/s. The team makes the frames of one write on a few
 * threads of its own, a few frames ahead of the sending thread, which still sends them
 * strictly in order, checks the stop request between frames and counts whole frames, exactly
 * as when it made them itself (sink.c framed_write): the bytes on the wire, the accounting and
 * what a stop or a failure leaves are the same whatever the team's size.
 *
 * Threads: `threads` workers, each with its own compressor (allocated once, here), sleeping
 * between writes; the sending thread has one too and makes a frame itself when no worker has
 * begun it. A slot per frame in flight (nslot of them) holds its result and, deflating, its
 * payload; the slot of frame i is reused for frame i + nslot once frame i is on the wire. */
#include "stream/sink_int.h"
#include "tiles/tune.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Frames in flight per worker. Deflating: one being made, one made and waiting for the
 * sending thread, so a worker rarely waits for a slot; each holds a payload (~1 MiB). crc
 * alone: a slot is a few bytes and a frame ~70 us of work, so workers run further ahead and
 * are woken for half the window at a time, not for every frame sent (two context switches a
 * frame made a framed pipe slower on two cores than no team at all). */
#define SLOTS_DEFLATE 2
#define SLOTS_CRC 16

/* The default team. Deflating (level 1: ~0.4-1 GB/s a core): a thread a core, at most 8.
 * crc alone (libdeflate's: ~15 GB/s a core): a thread for 4 cores, at most 4 (~60 GB/s, more
 * than PCIe brings in), so none below 8 cores: on 2 cores a team of 2 made a framed pipe slower
 * (its threads took the cores of the pipe's reader and the writer: 1 GiB into `cat` in
 * 0.38-0.74 s against 0.33-0.36 s), while the writing thread crcs at several times what a pipe
 * or disk takes (docs/streaming.md §11). */
#define DEFLATE_MAX 8
#define CRC_CORES 4
#define CRC_MAX 4
#define THREADS_MAX 64

typedef struct slot {
    size_t frame;       /* the frame it holds or is being made for; SIZE_MAX: none */
    bool done;          /* made: the fields below are valid */
    tsr_status st;      /* how making it went */
    tsr_error err;      /* ... and why not, when it failed */
    tsr_frame f;        /* its crc, wire, raw and flags */
    const uint8_t *payload; /* what goes on the wire: the caller's bytes or zbuf */
    uint8_t *zbuf;      /* deflate output, zcap bytes (NULL without deflate) */
} slot;

struct worker {
    tsr_team *team;     /* the team it works for */
    tsr_deflater *d;    /* its compressor, NULL without deflate */
    pthread_t thread;   /* the thread itself */
};

struct tsr_team {
    size_t chunk;          /* frame payload (raw bytes) */
    size_t zcap;           /* deflate output per slot, 0 without deflate */
    size_t nslot;          /* slots: frames in flight */
    slot *slots;
    tsr_deflater *own;     /* the sending thread's compressor, for frames it makes itself */
    struct worker *w;      /* the workers: `threads` allocated, nw of them started */
    unsigned threads, nw;
    /* the current write, under mu: */
    const uint8_t *p;      /* its bytes (borrowed until tsr_team_end) */
    size_t n;              /* ... how many */
    size_t nframe;         /* its frames; 0 when there is no write */
    size_t next;           /* the next frame a worker takes */
    size_t sent;           /* frames before this one are on the wire: their slots are free */
    unsigned busy;         /* workers making a frame now */
    bool quit;             /* tsr_team_free: workers exit */
    pthread_mutex_t mu;
    pthread_cond_t work;   /* a write started, a slot became free, or quit */
    pthread_cond_t made;   /* a frame was made */
};

tsr_status
tsr_frame_make(tsr_deflater *d, const uint8_t *p, size_t piece, uint8_t *zbuf, size_t zcap,
               tsr_frame *f, const uint8_t **payload, tsr_error *err)
{
    f->wire = f->raw = (uint32_t)piece;
    f->crc = tsr_crc32(0, p, piece);
    f->flags = 0;
    *payload = p;
    if (!d)
        return TSR_OK;
    /* Level 1 (the sink's): the sink must keep up with the renderer; lens arrays and flat
     * areas still shrink many times over. A payload that does not shrink goes raw, which the
     * per-frame flag allows. */
    size_t zlen;
    if (tsr_deflater_run(d, p, piece, zbuf, zcap, &zlen, err) != TSR_OK)
        return err ? err->status : TSR_EINTERNAL;
    if (zlen < piece) {
        f->wire = (uint32_t)zlen;
        f->flags |= TSR_FRAME_DEFLATE;
        *payload = zbuf;
    }
    return TSR_OK;
}

/* ---- team size -------------------------------------------------------------------------- */

/* Cores this process may run on (its affinity mask: taskset, cgroup cpusets), else online. */
static unsigned
usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

tsr_status
tsr_team_size(unsigned asked, bool deflate, unsigned *n, tsr_error *err)
{
    (void)err; /* the knob is checked where it is read (cli/tune.c) */
    if (asked > 0) {
        *n = asked > THREADS_MAX ? THREADS_MAX : asked;
        return TSR_OK;
    }
    int knob = tsr_tune_get()->frame_threads;
    if (knob > 0) {
        *n = knob > THREADS_MAX ? THREADS_MAX : (unsigned)knob;
        return TSR_OK;
    }
    unsigned c = usable_cores();
    if (!deflate)
        c = c / CRC_CORES < CRC_MAX ? c / CRC_CORES : CRC_MAX;
    *n = c < 1 ? 1 : c < DEFLATE_MAX ? c : DEFLATE_MAX;
    return TSR_OK;
}

/* ---- the workers ------------------------------------------------------------------------ */

static bool
can_take(const tsr_team *t)
{
    return t->next < t->nframe && t->next < t->sent + t->nslot;
}

/* Make frame t->next into its slot, with compressor d (mu held, released meanwhile). The slot
 * is this thread's alone until done: the sending thread waits for it, and no other thread
 * takes it before the frame is sent. */
static void
make_next(tsr_team *t, tsr_deflater *d)
{
    size_t i = t->next++;
    slot *sl = &t->slots[i % t->nslot];
    sl->frame = i;
    sl->done = false;
    t->busy++;
    const uint8_t *p = t->p + i * t->chunk;
    size_t piece = t->n - i * t->chunk < t->chunk ? t->n - i * t->chunk : t->chunk;
    pthread_mutex_unlock(&t->mu);
    sl->st = tsr_frame_make(d, p, piece, sl->zbuf, t->zcap, &sl->f, &sl->payload, &sl->err);
    pthread_mutex_lock(&t->mu);
    sl->done = true;
    t->busy--;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    tsr_team *t = w->team;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->quit && !can_take(t))
            pthread_cond_wait(&t->work, &t->mu);
        if (t->quit)
            break;
        make_next(t, w->d);
        pthread_cond_signal(&t->made); /* one waiter at most: the sending thread */
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- the team --------------------------------------------------------------------------- */

void
tsr_team_free(tsr_team *t)
{
    if (!t)
        return;
    if (t->nw > 0) {
        pthread_mutex_lock(&t->mu);
        t->quit = true;
        pthread_cond_broadcast(&t->work);
        pthread_mutex_unlock(&t->mu);
        for (unsigned k = 0; k < t->nw; k++)
            pthread_join(t->w[k].thread, NULL);
        pthread_cond_destroy(&t->made);
        pthread_cond_destroy(&t->work);
        pthread_mutex_destroy(&t->mu);
    }
    for (unsigned k = 0; t->w && k < t->threads; k++)
        tsr_deflater_free(t->w[k].d);
    tsr_deflater_free(t->own);
    if (t->slots)
        for (size_t k = 0; k < t->nslot; k++)
            free(t->slots[k].zbuf);
    free(t->slots);
    free(t->w);
    free(t);
}

/* Start the workers (all signals blocked in them, as in the writer thread: a SIGINT handler
 * runs on the thread that can stop the render, and a closed pipe is an error, not a kill).
 * How many started; 0 when none could (the caller frames alone). */
static unsigned
start_workers(tsr_team *t, unsigned threads)
{
    if (pthread_mutex_init(&t->mu, NULL) != 0)
        return 0;
    if (pthread_cond_init(&t->work, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        return 0;
    }
    if (pthread_cond_init(&t->made, NULL) != 0) {
        pthread_cond_destroy(&t->work);
        pthread_mutex_destroy(&t->mu);
        return 0;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    unsigned k = 0;
    for (; k < threads; k++) {
        t->w[k].team = t;
        if (pthread_create(&t->w[k].thread, NULL, worker_main, &t->w[k]) != 0)
            break; /* fewer threads: slower, not wrong */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (k == 0) {
        pthread_cond_destroy(&t->made);
        pthread_cond_destroy(&t->work);
        pthread_mutex_destroy(&t->mu);
    }
    return k;
}

tsr_status
tsr_team_new(unsigned threads, bool deflate, size_t chunk, tsr_team **out, tsr_error *err)
{
    *out = NULL;
    tsr_team *t = calloc(1, sizeof *t);
    if (!t)
        goto fail;
    t->chunk = chunk;
    t->zcap = deflate ? tsr_deflate_bound(chunk) : 0;
    t->nslot = (size_t)threads * (deflate ? SLOTS_DEFLATE : SLOTS_CRC);
    t->slots = calloc(t->nslot, sizeof *t->slots);
    t->w = calloc(threads, sizeof *t->w);
    if (!t->slots || !t->w)
        goto fail;
    t->threads = threads;
    for (size_t k = 0; k < t->nslot; k++) {
        t->slots[k].frame = SIZE_MAX;
        if (deflate && !(t->slots[k].zbuf = malloc(t->zcap)))
            goto fail;
    }
    for (unsigned k = 0; deflate && k < threads; k++)
        if (!(t->w[k].d = tsr_deflater_new(1)))
            goto fail;
    if (deflate && !(t->own = tsr_deflater_new(1)))
        goto fail;
    t->nw = start_workers(t, threads);
    if (t->nw == 0) {
        tsr_team_free(t); /* no thread: the sending thread frames alone */
        return TSR_OK;
    }
    *out = t;
    return TSR_OK;

fail:
    tsr_team_free(t);
    return tsr_fail(err, TSR_ENOMEM, "out of memory (%u framing threads' buffers)", threads);
}

void
tsr_team_start(tsr_team *t, const uint8_t *p, size_t n)
{
    pthread_mutex_lock(&t->mu);
    t->p = p;
    t->n = n;
    t->nframe = (n + t->chunk - 1) / t->chunk;
    t->next = t->sent = 0;
    for (size_t k = 0; k < t->nslot; k++)
        t->slots[k].frame = SIZE_MAX;
    pthread_cond_broadcast(&t->work);
    pthread_mutex_unlock(&t->mu);
}

tsr_status
tsr_team_take(tsr_team *t, size_t i, tsr_frame *f, const uint8_t **payload, tsr_error *err)
{
    slot *sl = &t->slots[i % t->nslot];
    pthread_mutex_lock(&t->mu);
    if (i > t->sent) {
        t->sent = i; /* frame i - 1 is on the wire: its slot may take frame i - 1 + nslot */
        size_t lim = t->sent + t->nslot < t->nframe ? t->sent + t->nslot : t->nframe;
        size_t free = lim > t->next ? lim - t->next : 0;
        if (free >= t->nslot / 2 || (free > 0 && lim == t->nframe))
            pthread_cond_broadcast(&t->work);
    }
    /* No worker has begun frame i (they are all busy ahead of it, or get no core): this
     * thread makes it rather than wait, so a team starved of cores is no slower than none. */
    if (t->next == i)
        make_next(t, t->own);
    while (sl->frame != i || !sl->done)
        pthread_cond_wait(&t->made, &t->mu);
    pthread_mutex_unlock(&t->mu);
    if (sl->st != TSR_OK) {
        if (err)
            *err = sl->err;
        return sl->st;
    }
    f->crc = sl->f.crc;
    f->wire = sl->f.wire;
    f->raw = sl->f.raw;
    f->flags = sl->f.flags;
    *payload = sl->payload;
    return TSR_OK;
}

void
tsr_team_end(tsr_team *t)
{
    pthread_mutex_lock(&t->mu);
    t->nframe = 0; /* nothing more is taken */
    while (t->busy > 0)
        pthread_cond_wait(&t->made, &t->mu);
    t->p = NULL;
    pthread_mutex_unlock(&t->mu);
}
