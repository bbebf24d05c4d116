/* `mpirun -n K tessera render`: rank 0 streams, ranks 1..K-1 compute (docs/scale-out.md).
 *
 * The conversation, all on MPI_COMM_WORLD between rank 0 and each worker:
 *   0 -> w  HELLO  rank 0's fingerprint, stream total and largest band
 *   w -> 0  READY  (or FAIL: the worker's load, plan or fingerprint check failed)
 *   0 -> w  JOB    a band: x, w, y, h, up          w -> 0  DATA  its samples (body, tail)
 *   0 -> w  STOP   no more bands                   w -> 0  BYE   nothing more will come
 *   w -> 0  FAIL   at any time: status and message; the worker then waits for STOP
 *   w -> 0  BEAT   every BEAT_S seconds from the worker's first message to its last, while
 *                  it waits and while it computes (its band runs on a thread of its own)
 * Rank 0 ends the job when a worker has sent nothing for the heartbeat timeout (a worker that
 * was stopped with SIGSTOP, or hung): it says which rank, and the stream ends as on any
 * worker's failure, every band before that worker's first missing one delivered and the resume
 * line printed. It then exits without waiting for that worker (no MPI_Finalize, which would
 * wait for it): mpirun ends the job's other processes and returns.
 * A worker serves its jobs in the order they were sent, and MPI keeps messages of one sender
 * and tag in order, so rank 0 posts each band's receive (straight into the writer's buffer)
 * when it sends the job and the samples land in the right place whatever the other workers do.
 *
 * Every wait here is a poll (MPI_Test or MPI_Iprobe, then a nap of up to a millisecond), never
 * a blocking MPI call: Open MPI's blocking calls spin a core that a worker may need (ranks
 * share cores when the job is oversubscribed), and a poll also reads the stop flag. */
#include "dist/dist.h"
#include "cpu/cpu.h"
#include "engine/engine.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { T_HELLO = 1, T_READY, T_JOB, T_DATA, T_FAIL, T_STOP, T_BYE, T_BEAT };

/* A worker's heartbeat period, and rank 0's default timeout (TSR_DIST_TIMEOUT=S sets it: tests,
 * and clusters whose nodes pause longer). Forty beats missed, so a loaded host's scheduling
 * never ends a job that is alive. */
#define BEAT_S 0.25
#define TIMEOUT_S 10.0

#define MIB ((uint64_t)1 << 20)

typedef struct hello {
    uint8_t fingerprint[32];
    uint64_t total;    /* stream bytes */
    uint64_t max_band; /* the largest band rank 0 sends, in bytes */
} hello;

typedef struct band_msg {
    int64_t x, w, y, h, up;
} band_msg;

typedef struct fail_msg {
    int32_t status;
    uint64_t band; /* the worker's band (1 = its first) that failed; 0: before any */
    char msg[sizeof(((tsr_error *)0)->msg)];
} fail_msg;

static struct {
    bool started;
    int rank, size;
    MPI_Datatype mib;             /* 1 MiB of bytes: a band's body is counted in these, so
                                   * counts fit an int up to 2 PiB */
    volatile sig_atomic_t *stop; /* the command's stop flag (SIGINT, SIGTERM) */
    bool told;                   /* rank 0: the workers were sent STOP */
    bool lost;                   /* a peer never answered: no MPI_Finalize, which would wait */
    double timeout;              /* rank 0: seconds without a worker's message that end the job */
    double *seen;                /* rank 0: per rank, when its last message was taken */
    double beat;                 /* a worker: when it last sent BEAT */
} g;

static bool
stopped(void)
{
    return g.stop && *g.stop;
}

/* The poll's pause: doubling from 20 us to 1 ms while nothing happens. */
static void
nap(long *us)
{
    struct timespec ts = {0, *us * 1000};
    nanosleep(&ts, NULL);
    if (*us < 1000)
        *us *= 2;
}

static double
now_s(void)
{
    return (double)tsr_now_ns() * 1e-9;
}

/* An MPI call's failure as a tsr error (the communicator returns errors: MPI_ERRORS_RETURN). */
static tsr_status
mpi_ok(int rc, const char *what, tsr_error *err)
{
    if (rc == MPI_SUCCESS)
        return TSR_OK;
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", rc);
    return tsr_fail(err, TSR_EIO, "MPI %s: %s", what, text);
}

int
tsr_dist_start(volatile sig_atomic_t *stop, tsr_error *err)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (!n)
        n = getenv("PMI_SIZE");
    g.stop = stop;
    if (!n || atoi(n) < 2)
        return 0;
    int provided;
    /* only the main thread calls MPI: the engine's workers and the writer never do */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        tsr_fail(err, TSR_EIO, "MPI_Init failed");
        return -1;
    }
    g.started = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    MPI_Type_contiguous((int)MIB, MPI_BYTE, &g.mib);
    MPI_Type_commit(&g.mib);
    const char *t = getenv("TSR_DIST_TIMEOUT");
    g.timeout = t && atof(t) > 0 ? atof(t) : TIMEOUT_S;
    return g.rank;
}

int
tsr_dist_launched_rank(void)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE"), *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!n) {
        n = getenv("PMI_SIZE");
        r = getenv("PMI_RANK");
    }
    return n && r && atoi(n) >= 2 ? atoi(r) : -1;
}

int
tsr_dist_ranks(void)
{
    return g.started ? g.size : 1;
}

/* ---- band payloads ------------------------------------------------------------------------ */

/* A band of len bytes travels as two messages of tag DATA, body (whole MiB) then tail (the
 * rest), either left out when empty; req[] gets MPI_REQUEST_NULL for one left out. */
static tsr_status
post_band(uint8_t *buf, uint64_t len, int peer, bool send, MPI_Request req[2], tsr_error *err)
{
    int body = (int)(len / MIB), tail = (int)(len % MIB), rc = MPI_SUCCESS;
    req[0] = req[1] = MPI_REQUEST_NULL;
    if (body > 0)
        rc = send ? MPI_Isend(buf, body, g.mib, peer, T_DATA, MPI_COMM_WORLD, &req[0])
                  : MPI_Irecv(buf, body, g.mib, peer, T_DATA, MPI_COMM_WORLD, &req[0]);
    if (rc == MPI_SUCCESS && tail > 0)
        rc = send ? MPI_Isend(buf + len - (uint64_t)tail, tail, MPI_BYTE, peer, T_DATA,
                              MPI_COMM_WORLD, &req[1])
                  : MPI_Irecv(buf + len - (uint64_t)tail, tail, MPI_BYTE, peer, T_DATA,
                              MPI_COMM_WORLD, &req[1]);
    return mpi_ok(rc, send ? "send" : "receive", err);
}

/* Whether both of a band's requests are done (a failed test counts as done: *st says). */
static bool
band_done(MPI_Request req[2], tsr_status *st, tsr_error *err)
{
    int flag = 0;
    *st = mpi_ok(MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE), "test", err);
    return flag || *st != TSR_OK;
}

/* ---- rank 0: the backend ------------------------------------------------------------------ */

/* Consecutive bands a worker is given before the next worker's turn: within a run, the
 * worker's tile cache still holds the halo tiles its previous band computed. */
#define RUN 4

typedef struct inflight {
    uint8_t *dst;
    bool local;   /* filled here (a periodic root): nothing to receive */
    int peer;     /* the worker computing it */
    uint64_t nth; /* its number among that worker's bands, from 1 */
    MPI_Request req[2];
} inflight;

typedef struct peer_state {
    uint64_t sent;   /* bands sent to it */
    uint64_t failed; /* with `fail`: its band that failed (its earlier ones still come) */
    tsr_error fail;  /* its FAIL (status TSR_OK: none) */
} peer_state;

typedef struct mpi_bk {
    inflight q[TSR_PIPE_MAX];
    size_t head, n;
    int64_t run;          /* bands per worker turn */
    uint64_t max_band;    /* bytes */
    peer_state *peers;    /* per rank */
    tsr_error failure;    /* what ended the stream (a worker's failure, a stop), once `failed` */
    bool failed;
    const tsr_backend_ctx *ctx;
    tsr_cpu *host;        /* a periodic root's bands, previews: this process computes */
} mpi_bk;

/* Rank 0: take the workers' heartbeats; the first rank (`only`, or any when 0) silent for
 * longer than the timeout into err, or 0. A worker beats from its first poll on, once its design is loaded and its engine
 * made (which may take long: images are decoded), so it is watched from its first beat. */
static int
silent_rank(int only, tsr_error *err)
{
    double now = now_s();
    if (!g.seen) {
        if (!(g.seen = malloc((size_t)g.size * sizeof *g.seen)))
            return 0; /* no watch: as before */
        for (int w = 0; w < g.size; w++)
            g.seen[w] = -1; /* not heard from yet: loading the design may take long */
    }
    MPI_Status s;
    int flag = 1;
    while (MPI_Iprobe(MPI_ANY_SOURCE, T_BEAT, MPI_COMM_WORLD, &flag, &s) == MPI_SUCCESS && flag) {
        MPI_Recv(NULL, 0, MPI_BYTE, s.MPI_SOURCE, T_BEAT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        g.seen[s.MPI_SOURCE] = now;
    }
    for (int w = only > 0 ? only : 1; w < (only > 0 ? only + 1 : g.size); w++)
        if (g.seen[w] >= 0 && now - g.seen[w] > g.timeout) {
            tsr_fail(err, TSR_EIO, "rank %d: no heartbeat for %.1f s (stopped or hung); the "
                     "job ends without it (TSR_DIST_TIMEOUT sets the timeout)", w, now - g.seen[w]);
            g.lost = true; /* nothing more is asked of MPI: it would wait for that rank */
            return w;
        }
    return 0;
}

/* A worker's FAIL message into err ("rank N: what it said") and *band (its band that failed).
 * Returns N, or 0 when there was none. */
static int
take_failure(tsr_error *err, uint64_t *band)
{
    MPI_Status s;
    int flag = 0;
    if (MPI_Iprobe(MPI_ANY_SOURCE, T_FAIL, MPI_COMM_WORLD, &flag, &s) != MPI_SUCCESS || !flag)
        return 0;
    fail_msg m;
    memset(&m, 0, sizeof m);
    if (MPI_Recv(&m, (int)sizeof m, MPI_BYTE, s.MPI_SOURCE, T_FAIL, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS)
        snprintf(m.msg, sizeof m.msg, "failed (its message was lost)");
    m.msg[sizeof m.msg - 1] = '\0';
    tsr_status st = m.status > TSR_OK && m.status <= TSR_EINTERNAL ? (tsr_status)m.status : TSR_EIO;
    tsr_fail(err, st, "rank %d: %s", s.MPI_SOURCE, m.msg);
    *band = m.band;
    return s.MPI_SOURCE;
}

/* Tell every worker STOP and take what they still send until each says BYE (DATA of bands
 * nobody waits for any more, into a scratch band, and FAIL or READY that came late): a worker
 * computing a band finishes it first. After a stop (a signal: under mpirun, the SIGCONT of its
 * teardown when a rank died) a worker silent for half a second is given up, and the job lost. */
static void
goodbye(uint64_t max_band)
{
    if (g.told || g.lost)
        return;
    g.told = true;
    for (int w = 1; w < g.size; w++)
        if (MPI_Send(NULL, 0, MPI_BYTE, w, T_STOP, MPI_COMM_WORLD) != MPI_SUCCESS)
            g.lost = true;
    uint8_t *scratch = NULL;
    int byes = 0;
    double quiet = now_s();
    long us = 20;
    while (byes < g.size - 1 && !g.lost) {
        MPI_Status s;
        int flag = 0;
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s) != MPI_SUCCESS) {
            g.lost = true;
            break;
        }
        if (!flag) {
            if (!stopped() && now_s() - quiet > g.timeout) {
                /* the stream is over; a worker that was stopped or hung is left behind (no
                 * MPI_Finalize, which would wait for it: mpirun ends it) */
                fprintf(stderr, "tessera: %d of %d workers did not answer STOP for %.1f s "
                        "(stopped or hung): leaving without them\n", g.size - 1 - byes,
                        g.size - 1, g.timeout);
                g.lost = true;
            }
            if (stopped() && now_s() - quiet > 0.5)
                g.lost = true;
            nap(&us);
            continue;
        }
        quiet = now_s();
        us = 20;
        int blocks = 0, bytes = 0;
        MPI_Get_count(&s, g.mib, &blocks);
        MPI_Get_count(&s, MPI_BYTE, &bytes);
        if (s.MPI_TAG == T_DATA && !scratch && !(scratch = malloc(max_band > 0 ? max_band : 1))) {
            g.lost = true;
            break;
        }
        int rc;
        if (s.MPI_TAG == T_DATA && blocks != MPI_UNDEFINED && blocks > 0)
            rc = MPI_Recv(scratch, blocks, g.mib, s.MPI_SOURCE, T_DATA, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
        else if (s.MPI_TAG == T_DATA)
            rc = MPI_Recv(scratch, bytes, MPI_BYTE, s.MPI_SOURCE, T_DATA, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
        else {
            fail_msg m; /* FAIL, READY, BYE: at most a fail_msg */
            rc = MPI_Recv(&m, (int)sizeof m, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
            byes += s.MPI_TAG == T_BYE;
        }
        if (rc != MPI_SUCCESS)
            g.lost = true;
    }
    free(scratch);
}

/* The band bytes rank 0 asks for at most: a whole band of the stream's width (a swath's). */
static uint64_t
max_band_bytes(const tsr_backend_ctx *c)
{
    return (uint64_t)tsr_band_width(c->d) * (uint64_t)c->plan->band_rows *
           (uint64_t)(c->d->out.depth / 8);
}

/* The reorder window: RUN bands per worker in flight, fewer when --memory cannot hold them
 * (rank 0 computes nothing, so its budget is the design's fixed part and band buffers: the
 * in-flight ones and two for the writer). */
static void
size_window(const tsr_backend_ctx *c, mpi_bk *b, tsr_backend_shape *shape)
{
    int64_t workers = g.size - 1, room = c->plan->budget - c->plan->fixed;
    int64_t bufs = b->max_band > 0 ? room / (int64_t)b->max_band : 0;
    int64_t depth = workers * RUN;
    if (depth > bufs - 2)
        depth = bufs - 2;
    if (depth > TSR_PIPE_MAX)
        depth = TSR_PIPE_MAX;
    if (depth < 1)
        depth = 1; /* the plan holds three bands whatever happens */
    b->run = depth >= workers * RUN ? RUN : (depth / workers > 0 ? depth / workers : 1);
    shape->depth = (int)depth;
    shape->writer_bufs = depth + 2;
}

/* HELLO to every worker, then READY from each: a FAIL ends the job before its first byte.
 * Fills err (never NULL). */
static tsr_status
handshake(const tsr_backend_ctx *c, mpi_bk *b, tsr_error *err)
{
    tsr_header hdr;
    tsr_status st = tsr_design_header(c->d, c->rows0, c->rows1, &hdr, err);
    if (st != TSR_OK)
        return st;
    hello h = {.total = hdr.total, .max_band = b->max_band};
    memcpy(h.fingerprint, hdr.fingerprint, sizeof h.fingerprint);
    for (int w = 1; w < g.size && st == TSR_OK; w++)
        st = mpi_ok(MPI_Send(&h, (int)sizeof h, MPI_BYTE, w, T_HELLO, MPI_COMM_WORLD), "send",
                    err);
    long us = 20;
    for (int ready = 0; ready < g.size - 1 && st == TSR_OK;) {
        int flag = 0;
        MPI_Status s;
        uint64_t band;
        if (take_failure(err, &band) > 0 || silent_rank(0, err) > 0)
            return err->status;
        if (stopped())
            return tsr_fail(err, TSR_EINTR, "interrupted");
        st = mpi_ok(MPI_Iprobe(MPI_ANY_SOURCE, T_READY, MPI_COMM_WORLD, &flag, &s), "probe", err);
        if (st == TSR_OK && flag) {
            st = mpi_ok(MPI_Recv(NULL, 0, MPI_BYTE, s.MPI_SOURCE, T_READY, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE), "receive", err);
            ready++;
        } else {
            nap(&us);
        }
    }
    return st;
}

static void
mpi_free(mpi_bk *b)
{
    goodbye(b->max_band);
    tsr_cpu_free(b->host);
    free(b->peers);
    free(b);
}

static tsr_status
mpi_open(const tsr_backend_ctx *c, void **bk, tsr_backend_shape *shape, tsr_error *err)
{
    if (!g.started || g.rank != 0 || g.size < 2)
        return tsr_fail(err, TSR_EINVAL, "the MPI backend runs on rank 0 of an mpirun job");
    mpi_bk *b = calloc(1, sizeof *b);
    if (!b || !(b->peers = calloc((size_t)g.size, sizeof *b->peers)) ||
        !(b->host = tsr_cpu_new(c, c->plan->cache, err))) {
        if (b)
            free(b->peers);
        free(b);
        goodbye(0);
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    }
    b->ctx = c;
    shape->band_rows = c->plan->band_rows;
    b->max_band = max_band_bytes(c);
    tsr_status st = TSR_OK;
    if (b->max_band / MIB > (uint64_t)INT32_MAX)
        st = tsr_fail(err, TSR_EPLAN, "a band of %llu bytes is too large for MPI",
                      (unsigned long long)b->max_band);
    tsr_error le = {0};
    if (st == TSR_OK) {
        size_window(c, b, shape);
        if ((st = handshake(c, b, &le)) != TSR_OK && err)
            *err = le;
    }
    if (st != TSR_OK) {
        mpi_free(b);
        return st;
    }
    *bk = b;
    return TSR_OK;
}

static void
mpi_close(void *bk)
{
    if (bk)
        mpi_free(bk);
}

/* Band seq k goes to worker 1 + (k / run) mod workers: runs of consecutive bands. */
static tsr_status
mpi_submit(void *bk, const tsr_band_job *j, tsr_error *err)
{
    mpi_bk *b = bk;
    inflight *f = &b->q[(b->head + b->n) % TSR_PIPE_MAX];
    *f = (inflight){.dst = j->dst, .req = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
    /* a root periodic everywhere is row copies of its period: cheaper here than any transfer */
    tsr_status st = tsr_cpu_fill_periodic(b->host, j, &f->local, err);
    if (st != TSR_OK)
        return st;
    if (!f->local) {
        int peer = f->peer = 1 + (int)((j->seq / (uint64_t)b->run) % (uint64_t)(g.size - 1));
        f->nth = ++b->peers[peer].sent;
        band_msg m = {j->x, j->w, j->y, j->h, j->up};
        st = mpi_ok(MPI_Send(&m, (int)sizeof m, MPI_BYTE, peer, T_JOB, MPI_COMM_WORLD), "send",
                    err);
        if (st == TSR_OK)
            st = post_band(j->dst, (uint64_t)(j->w * j->h * j->bps), peer, false, f->req, err);
        if (st != TSR_OK)
            return st;
    }
    b->n++;
    return TSR_OK;
}

/* Drop a band nobody will use: cancel its receives (one the sender has begun to fill ends
 * when the data is in). After a stop the sender may be dead with its band half sent (mpirun
 * signals every rank when one dies): then, after half a second, the receive is left pending and
 * the job lost, so no MPI call follows (goodbye, MPI_Finalize) and, since MPI moves data only
 * inside calls on this thread, nothing lands in the writer's buffers after they are freed. */
static void
cancel_band(MPI_Request req[2])
{
    double t0 = now_s();
    long us = 20;
    for (int i = 0; i < 2 && !g.lost; i++) {
        if (req[i] == MPI_REQUEST_NULL)
            continue;
        MPI_Cancel(&req[i]);
        int flag = 0;
        while (MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) {
            if (stopped() && now_s() - t0 > 0.5) {
                g.lost = true;
                break;
            }
            nap(&us);
        }
    }
}

/* The oldest band's samples are in its dst; or its worker failed at or before it, or the stop
 * came: then this and every later band are dropped with that error. A worker serves its bands
 * in order and says which one failed (its FAIL may overtake the samples of the band before), so
 * the stream ends exactly at the first band that failed, and every band before it goes out. */
static tsr_status
mpi_complete(void *bk, tsr_error *err)
{
    mpi_bk *b = bk;
    inflight *f = &b->q[b->head];
    b->head = (b->head + 1) % TSR_PIPE_MAX;
    b->n--;
    if (f->local)
        return TSR_OK;
    long us = 20;
    while (!b->failed) {
        tsr_status st;
        tsr_error fail;
        uint64_t band;
        int r;
        const peer_state *p = &b->peers[f->peer];
        if (band_done(f->req, &st, &b->failure)) {
            if (st == TSR_OK)
                return TSR_OK;
            b->failed = true;
        } else if (p->fail.status != TSR_OK && f->nth >= p->failed) {
            b->failure = p->fail;
            b->failed = true;
        } else if ((r = take_failure(&fail, &band)) > 0) {
            if (b->peers[r].fail.status == TSR_OK)
                b->peers[r] = (peer_state){b->peers[r].sent, band, fail};
        } else if (stopped()) {
            tsr_fail(&b->failure, TSR_EINTR, "interrupted");
            b->failed = true;
        } else if (silent_rank(f->peer, &b->failure) > 0) {
            /* only the worker this band waits for: an idle one that was stopped costs the
             * stream nothing (goodbye leaves it behind) */
            b->failed = true;
        } else {
            nap(&us);
        }
    }
    cancel_band(f->req);
    if (err)
        *err = b->failure;
    return b->failure.status;
}

static tsr_status
mpi_values(void *bk, tsr_rect r, float *out, tsr_error *err)
{
    mpi_bk *b = bk; /* previews and tests: this process computes */
    tsr_cpu *cp = b->host;
    return tsr_cpu_compute(cp, b->ctx->d->root, r, out, err);
}

static void
mpi_stats(void *bk, tsr_engine_stats *st)
{
    tsr_cpu_stats(((mpi_bk *)bk)->host, st);
}

static const tsr_backend_ops mpi_ops = {
    .name = "mpi",
    .open = mpi_open,
    .close = mpi_close,
    .attach = NULL,
    .detach = NULL,
    .submit = mpi_submit,
    .complete = mpi_complete,
    .values = mpi_values,
    .stats = mpi_stats,
};

const tsr_backend_ops *const tsr_dist_backend = &mpi_ops;

/* ---- ranks 1..K-1: the workers ------------------------------------------------------------ */

/* How long a worker that was told to stop (SIGCONT or SIGTERM from mpirun) still waits for
 * rank 0's STOP: a worker that exited at once would make mpirun send SIGTERM and SIGKILL to rank
 * 0 at once too, before its abort frame (mpirun waits a second after its SIGCONT, or until a
 * rank exits). */
#define STOP_PATIENCE 2.0

/* A worker: BEAT to rank 0 when the last one is BEAT_S old (a small message: it completes
 * whatever rank 0 is doing). */
static void
beat(void)
{
    double now = now_s();
    if (now - g.beat < BEAT_S)
        return;
    g.beat = now;
    (void)MPI_Send(NULL, 0, MPI_BYTE, 0, T_BEAT, MPI_COMM_WORLD);
}

/* Poll until done(ctx): false on an MPI failure (err), or on a stop (err: "interrupted") unless
 * `after_stop`, when it waits STOP_PATIENCE seconds more. */
static bool
poll_until(bool (*done)(void *ctx, tsr_error *err, bool *failed), void *ctx, bool after_stop,
           tsr_error *err)
{
    long us = 20;
    double t0 = now_s();
    for (;;) {
        bool failed = false;
        if (done(ctx, err, &failed))
            return !failed;
        beat();
        if (!after_stop && stopped()) {
            tsr_fail(err, TSR_EINTR, "interrupted");
            return false;
        }
        if (after_stop && now_s() - t0 > STOP_PATIENCE) {
            tsr_fail(err, TSR_EINTR, "rank 0 did not answer");
            return false;
        }
        nap(&us);
    }
}

typedef struct probe_ctx {
    int tag;
    MPI_Status s;
} probe_ctx;

static bool
root_sent(void *ctx, tsr_error *err, bool *failed)
{
    probe_ctx *p = ctx;
    int flag = 0;
    if (mpi_ok(MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &p->s), "probe", err) != TSR_OK)
        return *failed = true;
    p->tag = p->s.MPI_TAG;
    return flag;
}

static bool
sends_done(void *ctx, tsr_error *err, bool *failed)
{
    tsr_status st;
    bool done = band_done(ctx, &st, err);
    *failed = st != TSR_OK;
    return done;
}

/* The next message from rank 0 (its tag in *tag); false on a stop or an MPI failure (err). */
static bool
next_from_root(int *tag, bool after_stop, tsr_error *err)
{
    probe_ctx p = {0};
    bool ok = poll_until(root_sent, &p, after_stop, err);
    *tag = p.tag;
    return ok;
}

/* Wait for a band's sends. */
static tsr_status
wait_sent(MPI_Request req[2], bool after_stop, tsr_error *err)
{
    return poll_until(sends_done, req, after_stop, err) ? TSR_OK : err->status;
}

/* Whether band m lies inside the root and fits the buffers HELLO announced. */
static bool
band_fits(const tsr_engine *e, const band_msg *m, uint64_t max_band)
{
    const tsr_node *root = tsr_engine_design(e)->root;
    int64_t bps = tsr_engine_design(e)->out.depth / 8;
    return m->w > 0 && m->h > 0 && m->x >= 0 && m->y >= 0 && m->w <= root->w - m->x &&
           m->h <= root->h - m->y && (uint64_t)m->w * (uint64_t)m->h * (uint64_t)bps <= max_band;
}

typedef struct worker {
    tsr_engine *e;
    uint8_t *buf[2]; /* one band computing, the one before it being sent */
    MPI_Request req[2][2];
    uint64_t max_band;
    bool attached;
    uint64_t jobs;    /* bands received; after a failure, the one that failed */
    uint64_t fail_at; /* TSR_DIST_FAULT=N: the Nth band fails (a test hook), 0: none */
} worker;

/* A band computed on a thread of its own, so the main thread (the only one that calls MPI)
 * keeps beating meanwhile. */
typedef struct band_call {
    tsr_engine *e;
    band_msg m;
    uint8_t *dst;
    tsr_status st;
    tsr_error err;
    atomic_bool done;
} band_call;

static void *
band_main(void *arg)
{
    band_call *c = arg;
    c->st = tsr_engine_band(c->e, c->m.x, c->m.w, c->m.y, c->m.h, c->m.up != 0, c->dst, &c->err);
    atomic_store(&c->done, true);
    return NULL;
}

static tsr_status
band_beating(tsr_engine *e, const band_msg *m, uint8_t *dst, tsr_error *err)
{
    band_call c = {.e = e, .m = *m, .dst = dst, .st = TSR_OK};
    pthread_attr_t at;
    pthread_t t;
    bool made = pthread_attr_init(&at) == 0;
    /* the engine's caller computes too: it gets the stack the design needs */
    made = made && pthread_attr_setstacksize(&at, tsr_engine_thread_stack(e)) == 0 &&
           pthread_create(&t, &at, band_main, &c) == 0;
    pthread_attr_destroy(&at);
    if (!made) /* no thread: compute here, silent meanwhile */
        return tsr_engine_band(e, m->x, m->w, m->y, m->h, m->up != 0, dst, err);
    long us = 20;
    while (!atomic_load(&c.done)) {
        beat();
        nap(&us);
    }
    pthread_join(t, NULL);
    if (c.st != TSR_OK && err)
        *err = c.err;
    return c.st;
}

/* HELLO: the same stream (fingerprint and total) or a failure naming the difference; then the
 * two band buffers. */
static tsr_status
greet(worker *w, const hello *h, tsr_error *err)
{
    tsr_header mine;
    tsr_status st = tsr_engine_header(w->e, &mine, err);
    if (st != TSR_OK)
        return st;
    if (memcmp(mine.fingerprint, h->fingerprint, sizeof h->fingerprint) != 0 ||
        mine.total != h->total)
        return tsr_fail(err, TSR_EINVAL, "the design differs from rank 0's (fingerprint): "
                        "every rank must load the same design, images and --rows");
    w->max_band = h->max_band > 0 ? h->max_band : 1;
    int64_t len = w->max_band > INT64_MAX ? -1 : tsr_engine_band_pool(w->e, (int64_t)w->max_band);
    if (len < 0 || !(w->buf[0] = malloc((size_t)len)))
        return tsr_fail(err, TSR_ENOMEM, "out of memory (two bands of %llu bytes)",
                        (unsigned long long)w->max_band);
    w->buf[1] = w->buf[0] + w->max_band;
    if ((st = tsr_engine_attach(w->e, w->buf[0], (size_t)len, err)) != TSR_OK)
        return st;
    w->attached = true;
    return TSR_OK;
}

/* Serve rank 0 until STOP (TSR_OK) or a failure (err). */
static tsr_status
serve(worker *w, tsr_error *err)
{
    for (uint64_t k = 0;; k++) {
        int tag;
        MPI_Status s;
        if (!next_from_root(&tag, false, err))
            return err->status;
        if (tag == T_STOP)
            return TSR_OK;
        tsr_status st = TSR_OK;
        if (tag == T_HELLO) {
            hello h;
            st = mpi_ok(MPI_Recv(&h, (int)sizeof h, MPI_BYTE, 0, T_HELLO, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE), "receive", err);
            if (st == TSR_OK)
                st = greet(w, &h, err);
            if (st == TSR_OK)
                st = mpi_ok(MPI_Send(NULL, 0, MPI_BYTE, 0, T_READY, MPI_COMM_WORLD), "send", err);
        } else if (tag == T_JOB && w->buf[0]) {
            band_msg m;
            uint8_t *dst = w->buf[k % 2];
            MPI_Request *req = w->req[k % 2];
            st = mpi_ok(MPI_Recv(&m, (int)sizeof m, MPI_BYTE, 0, T_JOB, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE), "receive", err);
            w->jobs++;
            int stop = 0; /* STOP overtakes the jobs queued before it: they are dropped */
            if (st == TSR_OK && MPI_Iprobe(0, T_STOP, MPI_COMM_WORLD, &stop, &s) == MPI_SUCCESS &&
                stop)
                return TSR_OK;
            if (st == TSR_OK && !band_fits(w->e, &m, w->max_band))
                st = tsr_fail(err, TSR_EINVAL, "band %lld,%lld,%lld,%lld from rank 0 does not "
                              "fit this design", (long long)m.x, (long long)m.y,
                              (long long)m.w, (long long)m.h);
            if (st == TSR_OK && w->jobs == w->fail_at)
                st = tsr_fail(err, TSR_EIO, "band %llu: injected fault (TSR_DIST_FAULT)",
                              (unsigned long long)w->jobs);
            /* the band before last used this buffer: if its send failed, the failure is its */
            if (st == TSR_OK && (st = wait_sent(req, false, err)) != TSR_OK)
                w->jobs = w->jobs > 2 ? w->jobs - 2 : 0;
            if (st == TSR_OK)
                st = band_beating(w->e, &m, dst, err);
            if (st == TSR_OK)
                st = post_band(dst, (uint64_t)(m.w * m.h * (tsr_engine_design(w->e)->out.depth / 8)), 0, true,
                               req, err);
        } else {
            st = tsr_fail(err, TSR_EIO, "unexpected message (tag %d) from rank 0", tag);
        }
        if (st != TSR_OK)
            return st;
    }
}

/* After a failure: tell rank 0 (not after a stop: rank 0 has one too), then wait for its STOP,
 * dropping what comes before it. False when it did not come. */
static bool
await_stop(const tsr_error *err, uint64_t band, bool stop)
{
    if (!stop) {
        char host[256] = "?";
        gethostname(host, sizeof host);
        host[sizeof host - 1] = '\0';
        fail_msg m = {.status = (int32_t)err->status, .band = band};
        snprintf(m.msg, sizeof m.msg, "%.700s (host %.200s, pid %ld)", err->msg, host,
                 (long)getpid());
        size_t len = offsetof(fail_msg, msg) + strlen(m.msg) + 1;
        if (MPI_Send(&m, (int)len, MPI_BYTE, 0, T_FAIL, MPI_COMM_WORLD) != MPI_SUCCESS)
            return false;
    }
    int tag;
    tsr_error ignore;
    while (next_from_root(&tag, stop, &ignore) && tag != T_STOP) {
        char drop[sizeof(hello) > sizeof(band_msg) ? sizeof(hello) : sizeof(band_msg)];
        if (MPI_Recv(drop, (int)sizeof drop, MPI_BYTE, 0, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return false;
    }
    return tag == T_STOP;
}

int
tsr_dist_worker(const char *path, const tsr_engine_opts *opts)
{
    tsr_error err = {0};
    worker w = {.req = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL}, {MPI_REQUEST_NULL, MPI_REQUEST_NULL}}};
    /* the test hook for a worker's failure in the middle of a job (tests/cli/mpi.sh) */
    const char *fault = getenv("TSR_DIST_FAULT");
    w.fail_at = fault ? strtoull(fault, NULL, 10) : 0;
    tsr_design *d = tsr_engine_load(path, &err);
    w.e = d ? tsr_engine_new(d, opts, &err) : NULL;
    tsr_status st = w.e ? serve(&w, &err) : err.status;
    bool stop = st != TSR_OK && stopped();
    g.lost = st != TSR_OK && !await_stop(&err, w.jobs, stop);
    tsr_error ignore;
    if (!g.lost && (wait_sent(w.req[0], stop, &ignore) != TSR_OK ||
                    wait_sent(w.req[1], stop, &ignore) != TSR_OK))
        g.lost = true;
    if (!g.lost) {
        /* STOP is here: anything rank 0 sent before it was a job it no longer wants */
        MPI_Status s;
        band_msg m;
        int flag = 1;
        while (MPI_Iprobe(0, T_JOB, MPI_COMM_WORLD, &flag, &s) == MPI_SUCCESS && flag)
            MPI_Recv(&m, (int)sizeof m, MPI_BYTE, 0, T_JOB, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, T_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, T_BYE, MPI_COMM_WORLD);
    }
    int rc = g.lost ? 1 : 0;
    if (w.attached)
        tsr_engine_detach(w.e, w.buf[0]);
    free(w.buf[0]);
    tsr_engine_free(w.e);
    tsr_design_free(d);
    return rc;
}

int
tsr_dist_end(int rc)
{
    if (!g.started)
        return rc;
    if (g.rank == 0)
        goodbye(0); /* a failure before the backend opened: workers wait for HELLO */
    MPI_Type_free(&g.mib);
    if (!g.lost)
        MPI_Finalize();
    return rc;
}
