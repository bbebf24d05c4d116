/* The public pull API (include/tessera.h) over the engine. A job renders its stream one band
 * at a time into buffers of its own, the bands tsr_engine_stream_ex writes and in its order
 * (swath after swath, serpentine, bottom-up bands, 16-bit samples as the backend converts
 * them), and hands out slices of them. So the caller's thread does the work a writer thread
 * does for the CLI, and nothing is queued behind its back: a read that returns has computed
 * only the bands it handed out (plus, on a backend that keeps bands in flight, the GPU, the
 * next shape.depth - 1 submitted while the caller consumes this one). */
#include "engine/engine_int.h"
#include "engine/version.h"
#include "tessera.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct tsr_job {
    tsr_design *d;
    tsr_engine *e;
    volatile sig_atomic_t stop; /* tsr_job_stop; the engine polls it too (opts.stop) */
    _Atomic uint64_t off;       /* the next byte a read hands out */
    uint64_t total;             /* bytes of the stream */
    int64_t H, bps;             /* stream rows, bytes per sample */
    int64_t sw, bh;             /* swath width (the root's for raster), rows per band */
    uint64_t per_swath;         /* bytes of a full swath: sw * H * bps */
    uint64_t nb, nbands;        /* bands per swath, bands in all */
    uint8_t *pool;              /* band buffers: band b lives in slot b % depth */
    size_t cap, pool_len;       /* bytes of a slot, of the pool */
    uint64_t depth;             /* bands in flight at most (the backend's shape.depth) */
    bool attached;              /* the pool is attached to the backend (the GPU pins it) */
    uint64_t head, next;        /* bands [head, next) are submitted, head first */
    bool ready;                 /* head is complete: its bytes are in its slot */
    uint64_t ready_at, ready_len; /* head's stream offset and length when ready */
    tsr_status failed;          /* sticky: the status every read returns once one failed */
    tsr_error err;              /* the last failure */
    uint64_t computed, bands;   /* stats */
    uint64_t ns;
};

const char *
tsr_version(void)
{
    return TSR_VERSION;
}

/* Band b: its place in the root (a band job without dst) and its stream offset. */
static void
band_at(const tsr_job *j, uint64_t b, tsr_band_job *bj, uint64_t *at)
{
    const tsr_output *o = &j->d->out;
    int64_t k = (int64_t)(b / j->nb), i = (int64_t)(b % j->nb), x, w;
    tsr_swath_cols(j->e->d, j->sw, k, &x, &w);
    bool up = o->start == TSR_BOTTOM_LEFT || o->start == TSR_BOTTOM_RIGHT;
    if (o->order == TSR_ORDER_SWATH && o->serpentine && (k & 1))
        up = !up;
    int64_t h = j->H - i * j->bh < j->bh ? j->H - i * j->bh : j->bh;
    int64_t y = up ? j->H - i * j->bh - h : i * j->bh;
    *bj = (tsr_band_job){x, w, j->e->rows0 + y, h, up, j->bps, NULL, b, NULL, NULL, NULL};
    *at = (uint64_t)k * j->per_swath + (uint64_t)(i * j->bh * w * j->bps);
}

/* The band holding stream byte `off` (< total). */
static uint64_t
band_of(const tsr_job *j, uint64_t off)
{
    uint64_t k = off / j->per_swath;
    int64_t x, w;
    tsr_swath_cols(j->e->d, j->sw, (int64_t)k, &x, &w);
    return k * j->nb + (off - k * j->per_swath) / (uint64_t)(j->bh * w * j->bps);
}

/* Record a failure of the job's work: sticky, and said in the API's words for a stop. */
static tsr_status
job_fail(tsr_job *j, tsr_status st)
{
    if (st == TSR_EINTR && j->stop)
        tsr_fail(&j->err, TSR_EINTR, "stopped at byte %llu (tsr_job_stop)",
                 (unsigned long long)atomic_load(&j->off));
    j->failed = st;
    return st;
}

/* Wait for every submitted band that is not complete and drop it: a seek elsewhere, a
 * failure, the close. The first failure is what the job already reports, so these are
 * ignored. */
static void
drain(tsr_job *j)
{
    for (uint64_t n = j->next - j->head - j->ready; n > 0; n--) {
        tsr_error ignore;
        (void)j->e->ops->complete(j->e->bk, &ignore);
    }
    j->head = j->next;
    j->ready = false;
}

static tsr_status
submit_next(tsr_job *j)
{
    if (j->stop)
        return job_fail(j, TSR_EINTR);
    tsr_band_job bj;
    uint64_t at;
    band_at(j, j->next, &bj, &at);
    bj.dst = j->pool + (size_t)(j->next % j->depth) * j->cap;
    uint64_t t0 = tsr_now_ns();
    tsr_status st = j->e->ops->submit(j->e->bk, &bj, &j->err);
    j->ns += tsr_now_ns() - t0;
    if (st != TSR_OK)
        return job_fail(j, st);
    j->next++;
    return TSR_OK;
}

/* Make band b the ready one: keep it if it is, complete it if it is in flight (dropping the
 * bands before it), else start over at b; keep up to `depth` bands submitted. */
static tsr_status
fill(tsr_job *j, uint64_t b)
{
    if (j->ready && j->head == b)
        return TSR_OK;
    if (j->ready) { /* handed out: its slot is free */
        j->head++;
        j->ready = false;
    }
    if (b < j->head || b >= j->next) {
        drain(j);
        j->head = j->next = b;
    }
    for (; j->head < b; j->head++) { /* a seek forward past bands in flight */
        tsr_error ignore;
        (void)j->e->ops->complete(j->e->bk, &ignore);
    }
    while (j->next < j->nbands && j->next - j->head < j->depth)
        if (submit_next(j) != TSR_OK)
            return j->failed;
    uint64_t t0 = tsr_now_ns();
    tsr_status st = j->e->ops->complete(j->e->bk, &j->err);
    j->ns += tsr_now_ns() - t0;
    if (st != TSR_OK) { /* the backend let go of it */
        j->head++;
        return job_fail(j, st);
    }
    tsr_band_job bj;
    band_at(j, b, &bj, &j->ready_at);
    j->ready_len = (uint64_t)(bj.w * bj.h * j->bps);
    j->ready = true;
    j->computed += j->ready_len;
    j->bands++;
    return TSR_OK;
}

/* Band geometry and the band buffers, once the engine is made. */
static tsr_status
job_setup(tsr_job *j, tsr_error *err)
{
    tsr_engine *e = j->e;
    const tsr_output *o = &j->d->out;
    int64_t W = j->d->root->w;
    if (o->bits) /* its bands are packed by the stream's pipeline, which a job does not run */
        return tsr_fail(err, TSR_EINVAL, "job: depth %d (dithered) is not read through a job "
                        "yet: stream it (tsr_engine_stream, tessera render)", o->bits);
    if (o->bidir || o->mirror_x || o->y_up || o->overlap || o->overscan || o->planes)
        /* likewise the stage's order, overlaps, overscan and bit planes */
        return tsr_fail(err, TSR_EINVAL, "job: a design with stage options is not read through "
                        "a job yet: stream it (tsr_engine_stream, tessera render)");
    j->H = e->rows1 - e->rows0;
    j->bps = o->depth / 8;
    j->sw = tsr_swath_step(j->d);
    j->bh = e->shape.band_rows;
    j->per_swath = (uint64_t)j->sw * (uint64_t)j->H * (uint64_t)j->bps;
    j->nb = (uint64_t)((j->H + j->bh - 1) / j->bh);
    j->nbands = (uint64_t)((W + j->sw - 1) / j->sw) * j->nb;
    j->total = tsr_engine_stream_bytes(e);
    j->depth = e->shape.depth >= 1 ? (uint64_t)e->shape.depth : 1;
    /* a backend that attaches the pool (the GPU pins it) carves its device buffers from its
     * size: it gets the writer's buffers, which its plan counted; the CPU needs one */
    int64_t slots = e->ops->attach ? e->shape.writer_bufs : (int64_t)j->depth, cap, len;
    if (slots < (int64_t)j->depth || !tsr_mul_checked(j->sw, j->bh, &cap) ||
        !tsr_mul_checked(cap, j->bps, &cap) ||
        !tsr_mul_checked(cap, slots, &len) || !tsr_add_checked(len, 4095, &len) ||
        (uint64_t)len > SIZE_MAX)
        return tsr_fail(err, TSR_EINTERNAL, "job: band buffers of %lld x %lld rows do not fit",
                        (long long)j->sw, (long long)j->bh);
    j->cap = (size_t)cap;
    j->pool_len = (size_t)len / 4096 * 4096;
    j->pool = aligned_alloc(4096, j->pool_len);
    if (!j->pool)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (%lld band buffers of %zu bytes)",
                        (long long)slots, j->cap);
    if (e->ops->attach) {
        tsr_status st = e->ops->attach(e->bk, j->pool, j->pool_len, err);
        if (st != TSR_OK)
            return st;
        j->attached = true;
    }
    return TSR_OK;
}

/* Open a job over a loaded design (taken: freed on failure too). */
static tsr_job *
job_open(tsr_design *d, const tsr_job_opts *opts, tsr_error *err)
{
    static const tsr_job_opts none = {0};
    tsr_job *j = NULL;
    if (!d)
        return NULL;
    opts = opts ? opts : &none;
    if (opts->threads < 0 || opts->threads > 1024) {
        tsr_fail(err, TSR_EINVAL, "threads %d: must be 0 (one per core) .. 1024", opts->threads);
        goto fail;
    }
    if (opts->memory < 0 || (opts->rows[1] == 0 && opts->rows[0] != 0)) {
        tsr_fail(err, TSR_EINVAL, opts->memory < 0 ? "memory %lld: must be >= 0 (0: the default)"
                                                   : "rows [%lld, 0): give the last row too",
                 (long long)(opts->memory < 0 ? opts->memory : opts->rows[0]));
        goto fail;
    }
    j = calloc(1, sizeof *j);
    if (!j) {
        tsr_fail(err, TSR_ENOMEM, "out of memory");
        goto fail;
    }
    j->d = d;
    tsr_engine_opts eo = {.backend = opts->backend, .threads = opts->threads,
                          .memory = opts->memory, .rows = {opts->rows[0], opts->rows[1]},
                          .stop = &j->stop};
    j->e = tsr_engine_new(d, &eo, err);
    if (!j->e || job_setup(j, err) != TSR_OK)
        goto fail;
    return j;
fail:
    if (j)
        tsr_job_close(j);
    else
        tsr_design_free(d);
    return NULL;
}

tsr_job *
tsr_job_open(const char *path, const tsr_job_opts *opts, tsr_error *err)
{
    if (!path) {
        tsr_fail(err, TSR_EINVAL, "tsr_job_open: path is NULL");
        return NULL;
    }
    return job_open(tsr_engine_load(path, err), opts, err);
}

tsr_job *
tsr_job_open_yaml(const char *yaml, size_t len, const char *name, const tsr_job_opts *opts,
                  tsr_error *err)
{
    if (!yaml) {
        tsr_fail(err, TSR_EINVAL, "tsr_job_open_yaml: yaml is NULL");
        return NULL;
    }
    return job_open(tsr_engine_load_string(yaml, len, name, opts ? opts->base_dir : NULL, err),
                    opts, err);
}

tsr_status
tsr_job_header(tsr_job *j, tsr_header *h, tsr_error *err)
{
    if (!j || !h)
        return tsr_fail(err, TSR_EINVAL, "tsr_job_header: %s is NULL", j ? "h" : "job");
    return tsr_engine_header(j->e, h, err);
}

int64_t
tsr_job_read(tsr_job *j, void *buf, size_t n)
{
    if (!j)
        return -(int64_t)TSR_EINVAL;
    if (j->failed)
        return -(int64_t)j->failed;
    /* 0 is the end of the stream: a read that asks for nothing is refused rather than
     * answered with it (not sticky: the next read goes on) */
    if (n == 0)
        return -(int64_t)tsr_fail(&j->err, TSR_EINVAL, "tsr_job_read: n is 0 (a read returns "
                                  "0 only at the end of the stream)");
    if (!buf)
        return -(int64_t)tsr_fail(&j->err, TSR_EINVAL, "tsr_job_read: buf is NULL");
    n = n > INT64_MAX ? INT64_MAX : n;
    uint8_t *out = buf;
    size_t got = 0;
    while (got < n) {
        uint64_t off = atomic_load(&j->off);
        if (off >= j->total)
            break;
        if (j->stop) {
            job_fail(j, TSR_EINTR);
            break;
        }
        if (fill(j, band_of(j, off)) != TSR_OK)
            break;
        uint64_t left = j->ready_at + j->ready_len - off;
        size_t k = left < n - got ? (size_t)left : n - got;
        memcpy(out + got, j->pool + (size_t)(j->head % j->depth) * j->cap + (off - j->ready_at),
               k);
        got += k;
        atomic_store(&j->off, off + k);
    }
    if (got > 0)
        return (int64_t)got;
    return j->failed ? -(int64_t)j->failed : 0;
}

tsr_status
tsr_job_seek(tsr_job *j, uint64_t offset, tsr_error *err)
{
    if (!j)
        return tsr_fail(err, TSR_EINVAL, "tsr_job_seek: job is NULL");
    if (j->failed) {
        if (err)
            *err = j->err;
        return j->failed;
    }
    tsr_status st = tsr_engine_resume_check(j->e, offset, err); /* as the CLI's --resume-at */
    if (st != TSR_OK)
        return st;
    atomic_store(&j->off, offset);
    return TSR_OK;
}

uint64_t
tsr_job_offset(const tsr_job *j)
{
    if (!j)
        return 0;
    return atomic_load(&((tsr_job *)j)->off);
}

void
tsr_job_stop(tsr_job *j)
{
    if (j)
        j->stop = 1;
}

void
tsr_job_get_stats(tsr_job *j, tsr_job_stats *st)
{
    if (!st)
        return;
    if (!j) {
        *st = (tsr_job_stats){0};
        return;
    }
    tsr_engine_stats es = tsr_engine_get_stats(j->e);
    const tsr_plan *p = tsr_engine_plan(j->e);
    *st = (tsr_job_stats){
        .offset = atomic_load(&j->off), .total = j->total, .computed = j->computed,
        .bands = j->bands, .seconds = (double)j->ns * 1e-9, .cache_hits = es.hits,
        .cache_misses = es.misses, .cache_evictions = es.evictions,
        .cache_bytes = es.cache_bytes, .cache_peak = es.cache_peak, .memory = p->budget,
        .memory_min = p->minimum, .band_rows = j->bh, .threads = tsr_engine_threads(j->e),
        .backend = tsr_engine_backend(j->e)};
}

const tsr_error *
tsr_job_error(const tsr_job *j)
{
    static const tsr_error none = {TSR_EINVAL, "tsr_job_error: job is NULL"};
    return j ? &j->err : &none;
}

void
tsr_job_close(tsr_job *j)
{
    if (!j)
        return;
    if (j->e) {
        drain(j);
        if (j->attached && j->e->ops->detach)
            j->e->ops->detach(j->e->bk, j->pool);
        tsr_engine_free(j->e);
    }
    free(j->pool);
    tsr_design_free(j->d);
    free(j);
}
