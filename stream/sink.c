/* stream: sinks (file, stdout, null, tcp), raw or framed, paced, resumable. See stream.h and
 * docs/streaming.md.
 *
 * Output bands are large (megabytes), so sinks call write(2) directly: stdio buffering would
 * only add a copy. Errors are sticky: once a write fails every later write and the close
 * report that first error, so a caller that only checks the close still learns of it.
 *
 * Accounting is exact, because the resume offset a user is told must neither lose nor repeat
 * a byte: raw sinks count every byte the kernel took (partial writes included); framed sinks
 * count a frame's samples only once the whole frame is on the wire, since a receiver drops a
 * partial frame. A stop request is honoured only between frames (framed) or between writes
 * (raw), so what was delivered is always a whole number of units.
 *
 * This file is the part every medium shares (options, pacing, framing, accounting, ending a
 * stream); the media are sink_file.c, sink_stdout.c, sink_null.c and sink_tcp.c, over the one
 * struct of sink_int.h. */
#include "stream/sink_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Frame payloads (raw bytes) when unpaced: large enough that the 24-byte head and the
 * per-frame crc/deflate setup cost nothing, small enough for a receiver's buffer. */
#define FRAME_RAW ((size_t)1 << 20)

/* A receiver that takes nothing this long (tsr_sink_opts.stall_s, --stall-timeout) is given
 * up on: the controller's own silence limit (controller/controller.c) is the same. */
#define STALL_DEFAULT_S 600.0

static tsr_sink *
sink_alloc(enum kind kind, int fd, const char *name)
{
    tsr_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->name = strdup(name);
    if (!s->name) {
        free(s);
        return NULL;
    }
    s->kind = kind;
    s->fd = fd;
    s->first.status = TSR_OK;
    return s;
}

static void
sink_free(tsr_sink *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    tsr_sink_image_free(s);
    tsr_team_free(s->team);
    tsr_deflater_free(s->deflater);
    free(s->zbuf);
    free(s->name);
    free(s);
}

/* Remember the first failure and hand it back. */
tsr_status
tsr_sink_fail(tsr_sink *s, tsr_error *err, int e)
{
    if (s->first.status == TSR_OK)
        tsr_fail(&s->first, TSR_EIO, "%s: %s", s->name,
                 e == ECONNRESET ? "connection reset by the receiver" : strerror(e));
    s->broken = true;
    if (err)
        *err = s->first;
    return s->first.status;
}

tsr_status
tsr_sink_interrupted(tsr_sink *s, tsr_error *err)
{
    if (s->first.status == TSR_OK)
        tsr_fail(&s->first, TSR_EINTR, "%s: interrupted", s->name);
    if (err)
        *err = s->first;
    return s->first.status;
}

/* Wait up to `ms` for `events` on fd; false with errno set if even waiting fails. */
bool
tsr_wait_fd(int fd, short events, int ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int r = poll(&p, 1, ms);
    if (r < 0 && errno != EINTR)
        return false;
    return true;
}

/* ---- putting bytes on the medium -------------------------------------------------------- */

/* The medium took k bytes. */
void
tsr_sink_took(tsr_sink *s, size_t k)
{
    s->wpos += k;
    tsr_fault_took(&s->fault, k);
}

static tsr_status
put_unit(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    return s->kind == SINK_TCP ? tsr_sink_net_put(s, p, n, err)
                               : tsr_sink_fd_put(s, p, n, false, err);
}

/* ---- pacing ------------------------------------------------------------------------------ */

/* Take n bytes from the token bucket; a stop is seen within 50 ms. The bucket holds at most
 * one chunk, so no 2 s window carries more than the rate plus one chunk (1/20 s of it). */
tsr_status
tsr_sink_pace(tsr_sink *s, size_t n, tsr_error *err)
{
    if (!tsr_bucket_take(&s->bucket, n, s->stop))
        return tsr_sink_interrupted(s, err);
    return TSR_OK;
}

/* ---- frames ---------------------------------------------------------------------------------- */

static tsr_status
send_frame(tsr_sink *s, const tsr_frame *f, const uint8_t *payload, tsr_error *err)
{
    uint8_t head[TSR_FRAME_HEAD];
    tsr_frame_encode(f, head);
    if (put_unit(s, head, sizeof head, err) != TSR_OK)
        return s->first.status;
    if (f->wire) {
        /* From here on a failure leaves half a frame on the wire: no abort can follow. */
        if (put_unit(s, payload, f->wire, err) != TSR_OK) {
            s->broken = true;
            return s->first.status;
        }
    }
    s->unit_end = s->wpos;
    return TSR_OK;
}

/* Frames of at most s->chunk bytes, sent in order; a stop is honoured between two of them.
 * A team makes them ahead of the sending (team.c); without one this thread makes each just
 * before sending it. Either way the same bytes go out and the same whole frames are counted,
 * and a failure or a stop ends the write at the same frame. */
static tsr_status
framed_write(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    tsr_status st = TSR_OK;
    if (s->team)
        tsr_team_start(s->team, p, n);
    for (size_t i = 0, off = 0; off < n; i++) {
        size_t piece = n - off < s->chunk ? n - off : s->chunk;
        if (stopped(s)) {
            st = tsr_sink_interrupted(s, err);
            break;
        }
        if ((st = tsr_sink_pace(s, piece, err)) != TSR_OK)
            break;
        tsr_frame f = {tsr_sink_offset(s), 0, 0, 0, 0};
        const uint8_t *payload;
        tsr_error e;
        st = s->team ? tsr_team_take(s->team, i, &f, &payload, &e)
                     : tsr_frame_make(s->deflater, p + off, piece, s->zbuf, s->zcap, &f,
                                      &payload, &e);
        if (st != TSR_OK) {
            s->first = e;
            if (err)
                *err = e;
            break;
        }
        if ((st = send_frame(s, &f, payload, err)) != TSR_OK)
            break;
        s->crc = tsr_crc32_combine(s->crc, f.crc, piece);
        atomic_fetch_add(&s->bytes, (uint64_t)piece);
        off += piece;
    }
    if (s->team)
        tsr_team_end(s->team); /* before p goes back to the caller */
    return st;
}

static tsr_status
raw_write(tsr_sink *s, uint8_t *p, size_t n, bool donate, tsr_error *err)
{
    while (n > 0) {
        size_t piece = n < s->chunk ? n : s->chunk;
        if (stopped(s))
            return tsr_sink_interrupted(s, err);
        if (tsr_sink_pace(s, piece, err) != TSR_OK)
            return s->first.status;
        tsr_status st = donate && s->splice ? tsr_sink_splice_put(s, p, piece, err)
                                            : tsr_sink_fd_put(s, p, piece, true, err);
        if (st != TSR_OK)
            return st;
        tsr_sink_image_took(s, p, piece); /* a raw file's sidecar crc (files are never
                                           * fed by vmsplice: p still holds the bytes) */
        p += piece;
        n -= piece;
    }
    return TSR_OK;
}

/* An image file: the rows go to image/'s writer, a chunk at a time so a stop is seen. */
static tsr_status
image_write(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    while (n > 0) {
        size_t piece = n < s->chunk ? n : s->chunk;
        if (stopped(s))
            return tsr_sink_interrupted(s, err);
        if (tsr_sink_pace(s, piece, err) != TSR_OK)
            return s->first.status;
        if (tsr_sink_image_put(s, p, piece, err) != TSR_OK)
            return s->first.status;
        p += piece;
        n -= piece;
    }
    return TSR_OK;
}

static tsr_status
sink_put(tsr_sink *s, const void *buf, size_t n, bool donate, tsr_error *err)
{
    if (!s)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_sink_write: no sink");
    if (s->first.status != TSR_OK) {
        if (err)
            *err = s->first;
        return s->first.status;
    }
    if (s->kind == SINK_NULL)
        return tsr_sink_null_put(s, n, err);
    if (s->kind == SINK_IMAGE)
        return image_write(s, buf, n, err);
    if (s->framed)
        return framed_write(s, buf, n, err);
    return raw_write(s, (uint8_t *)(uintptr_t)buf, n, donate, err);
}

tsr_status
tsr_sink_write(tsr_sink *s, const void *buf, size_t n, tsr_error *err)
{
    return sink_put(s, buf, n, false, err);
}

tsr_status
tsr_sink_write_donate(tsr_sink *s, void *buf, size_t n, tsr_error *err)
{
    return sink_put(s, buf, n, true, err);
}

/* ---- opening ----------------------------------------------------------------------------- */

/* Write the header; on tcp read back the receiver's resume offset into s->start. */
static tsr_status
handshake(tsr_sink *s, const tsr_header *h, tsr_error *err)
{
    uint8_t buf[TSR_HEADER_SIZE + TSR_HEADER_EXT];
    tsr_header_encode(h, buf);
    tsr_header_encode_ext(h, buf + TSR_HEADER_SIZE); /* sent with version 2 only */
    if (put_unit(s, buf, h->version == 2 ? sizeof buf : TSR_HEADER_SIZE, err) != TSR_OK)
        return s->first.status;
    s->unit_end = s->wpos;
    if (s->kind != SINK_TCP)
        return TSR_OK;
    return tsr_sink_tcp_resume(s, h, err);
}

tsr_sink *
tsr_sink_open(const char *spec, tsr_error *err)
{
    return tsr_sink_open_ex(spec, NULL, err);
}

/* Options that no medium could honour, refused before anything is opened or connected (in
 * this order: the first wrong one is named), and the fault hook parsed into *fault. */
static tsr_status
check_opts(const char *spec, const tsr_sink_opts *o, bool tcp, bool framed, tsr_fault *fault,
           unsigned *threads, tsr_error *err)
{
    if (!spec || !*spec)
        return tsr_fail(err, TSR_EINVAL, "-o: empty output name");
    if (tsr_sink_image_check(spec, o, framed, err) != TSR_OK)
        return err ? err->status : TSR_EINVAL;
    if (tcp && !o->header) {
        /* Taken as a path, "tcp://host:port" would fail with a confusing ENOENT; tcp is the
         * framed stream's business (docs/streaming.md). */
        return tsr_fail(err, TSR_EINVAL, "%s: tcp is not a raw sink (it needs the framed stream)",
                        spec);
    }
    if (framed && !o->header)
        return tsr_fail(err, TSR_EINTERNAL, "%s: a framed sink needs a header", spec);
    if (o->rate < 0 || o->rate != o->rate)
        return tsr_fail(err, TSR_EINVAL, "%s: rate must be positive", spec);
    if (o->stall_s < 0 || o->stall_s != o->stall_s)
        return tsr_fail(err, TSR_EINVAL, "%s: stall timeout must be positive", spec);
    if (tsr_fault_parse(o->fault, fault, err) != TSR_OK)
        return err ? err->status : TSR_EINVAL;
    *threads = 1;
    if (framed && o->rate <= 0 && tsr_team_size(o->threads, o->deflate, threads, err) != TSR_OK)
        return err ? err->status : TSR_EINVAL;
    if (framed && o->start > o->header->total)
        return tsr_fail(err, TSR_EINVAL, "%s: resume offset %llu is past the end (%llu bytes)",
                        spec, (unsigned long long)o->start,
                        (unsigned long long)o->header->total);
    return TSR_OK;
}

/* The medium the -o spelling names, opened: its kind and descriptor (-1 for null). A null
 * sink is never framed (it only counts), so *framed may be cleared. -1 in *fd and a failure
 * when it cannot be opened. */
static tsr_status
open_medium(const char *spec, const tsr_sink_opts *o, bool tcp, bool *framed, enum kind *kind,
            int *fd, tsr_error *err)
{
    *fd = -1;
    if (strcmp(spec, "null") == 0) {
        *kind = SINK_NULL;
        *framed = false;
        return TSR_OK;
    }
    int img = tsr_sink_image_kind(spec);
    if (img == SINK_IMG_TIFF || img == SINK_IMG_BMP) {
        *kind = SINK_IMAGE; /* opened by image/'s writer (tsr_sink_image_open) */
        return TSR_OK;
    }
    if (tcp) {
        *kind = SINK_TCP;
        *fd = tsr_sink_tcp_connect(spec, o->stop, err);
    } else if (strcmp(spec, "-") == 0) {
        *kind = SINK_STDOUT;
        *fd = tsr_sink_stdout_open(err);
    } else {
        *kind = SINK_FILE;
        *fd = tsr_sink_file_open(spec, o->start, *framed, err);
    }
    return *fd < 0 ? (err ? err->status : TSR_EIO) : TSR_OK;
}

/* Units: a paced sink moves 1/20 s of its rate at a time (at least 512 bytes, whole pages from
 * 4 KiB on so vmsplice keeps page alignment), so pacing stays smooth at any rate; frames are
 * at most 1 MiB. An unpaced framed sink gets a team of `threads` to make its frames (when
 * more than 1 and one starts); otherwise a deflating sink gets its compressor and output
 * buffer for one unit. A paced sink frames alone: at 1/20 s of a controller's rate a frame is
 * made in a fraction of the time the bucket leaves between two. */
static tsr_status
set_units(tsr_sink *s, const char *spec, unsigned threads, tsr_error *err)
{
    if (s->rate > 0) {
        double c = s->rate / 20;
        c = c < 512 ? 512 : c;
        s->chunk = c > (double)FRAME_RAW ? FRAME_RAW : (size_t)c;
        if (s->chunk >= PAGE)
            s->chunk &= ~(PAGE - 1);
        tsr_bucket_init(&s->bucket, s->rate, (double)s->chunk);
    } else {
        s->chunk = s->framed ? FRAME_RAW : WRITE_CHUNK;
    }
    if (s->framed && s->rate <= 0 && s->kind != SINK_NULL && threads > 1) {
        tsr_error e;
        if (tsr_team_new(threads, s->deflate, s->chunk, &s->team, &e) != TSR_OK)
            return tsr_fail(err, e.status, "%s: %s", spec, e.msg);
        if (s->team)
            return TSR_OK;
    }
    if (s->deflate) {
        s->zcap = tsr_deflate_bound(s->chunk);
        s->zbuf = malloc(s->zcap);
        s->deflater = tsr_deflater_new(1);
        if (!s->zbuf || !s->deflater)
            return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (deflate buffer)", spec);
    }
    return TSR_OK;
}

tsr_sink *
tsr_sink_open_ex(const char *spec, const tsr_sink_opts *o, tsr_error *err)
{
    static const tsr_sink_opts none = {0};
    int fd = -1;
    tsr_sink *s = NULL;
    enum kind kind;
    if (!o)
        o = &none;
    bool tcp = spec && strncmp(spec, "tcp://", 6) == 0;
    bool framed = o->framed || tcp;
    tsr_fault fault;
    unsigned threads;
    if (check_opts(spec, o, tcp, framed, &fault, &threads, err) != TSR_OK ||
        open_medium(spec, o, tcp, &framed, &kind, &fd, err) != TSR_OK)
        return NULL;

    s = sink_alloc(kind, fd, kind == SINK_STDOUT ? "stdout" : spec);
    if (!s) {
        if (fd >= 0)
            close(fd);
        tsr_fail(err, TSR_ENOMEM, "%s: out of memory", spec);
        return NULL;
    }
    s->start = o->start;
    s->framed = framed;
    s->deflate = framed && o->deflate;
    s->stop = o->stop;
    s->rate = o->rate;
    tsr_bucket_init(&s->bucket, 0, 0);
    s->total = o->header ? o->header->total : 0;
    s->stall_s = o->stall_s > 0 ? o->stall_s : STALL_DEFAULT_S;
    s->fault = fault;
    if (framed && (kind == SINK_FILE || kind == SINK_STDOUT))
        tsr_sink_file_locate(s);
    if (kind == SINK_STDOUT)
        tsr_sink_stdout_pipe(s);
    if (set_units(s, spec, threads, err) != TSR_OK ||
        tsr_sink_image_open(s, spec, o, err) != TSR_OK ||
        (framed && handshake(s, o->header, err) != TSR_OK)) {
        sink_free(s);
        return NULL;
    }
    return s;
}

/* ---- ending -------------------------------------------------------------------------------- */

tsr_status
tsr_sink_finish(tsr_sink *s, tsr_error *err)
{
    if (!s)
        return TSR_OK;
    if (s->first.status != TSR_OK) {
        if (err)
            *err = s->first;
        return s->first.status;
    }
    if (!s->framed)
        return tsr_sink_image_finish(s, err); /* an image file made valid, a sidecar */
    tsr_frame f = {tsr_sink_offset(s), 0, 0, s->crc, TSR_FRAME_TRAILER};
    if (send_frame(s, &f, NULL, err) != TSR_OK)
        return s->first.status;
    if (s->kind != SINK_TCP)
        return TSR_OK;
    return tsr_sink_tcp_confirm(s, err);
}

tsr_status
tsr_sink_abort(tsr_sink *s, const char *reason, tsr_error *err)
{
    if (!s || !s->framed)
        return TSR_OK;
    if (s->broken && tsr_sink_file_cut_back(s))
        s->broken = false;
    if (s->broken) {
        if (err)
            *err = s->first;
        return s->first.status != TSR_OK ? s->first.status : TSR_EIO;
    }
    size_t n = strlen(reason ? reason : "");
    if (n > TSR_ABORT_MAX) {
        n = TSR_ABORT_MAX;
        while (n > 0 && ((unsigned char)reason[n] & 0xC0) == 0x80)
            n--; /* never cut a UTF-8 sequence */
    }
    const uint8_t *p = (const uint8_t *)(reason ? reason : "");
    /* The reason is an uncompressed payload like any other: raw = wire, crc over it. */
    tsr_frame f = {tsr_sink_offset(s), (uint32_t)n, (uint32_t)n, tsr_crc32(0, p, n),
                   TSR_FRAME_ABORT};
    tsr_status st = send_frame(s, &f, p, err);
    if (st != TSR_OK)
        tsr_sink_file_cut_back(s); /* no half abort frame either */
    if (st == TSR_OK && s->kind == SINK_TCP)
        shutdown(s->fd, SHUT_WR);
    s->broken = true; /* nothing may follow an abort */
    return st;
}

tsr_status
tsr_sink_close(tsr_sink *s, tsr_error *err)
{
    if (!s)
        return TSR_OK;
    tsr_status st = s->first.status;
    if (st != TSR_OK && err)
        *err = s->first;
    if (s->fd >= 0) {
        /* Not retried on EINTR: on Linux the descriptor is gone either way, and a retry could
         * close a descriptor another thread just opened. */
        if (close(s->fd) != 0 && errno != EINTR && st == TSR_OK)
            st = tsr_fail(err, TSR_EIO, "%s: %s", s->name, strerror(errno));
        s->fd = -1;
    }
    sink_free(s);
    return st;
}

/* ---- counters ------------------------------------------------------------------------------ */

uint64_t
tsr_sink_bytes(const tsr_sink *s)
{
    return s ? atomic_load(&((tsr_sink *)s)->bytes) : 0;
}

uint64_t
tsr_sink_start(const tsr_sink *s)
{
    return s ? s->start : 0;
}

uint64_t
tsr_sink_offset(const tsr_sink *s)
{
    return s ? s->start + tsr_sink_bytes(s) : 0;
}

bool
tsr_sink_paced(const tsr_sink *s)
{
    return s && s->rate > 0;
}

void
tsr_sink_note_underrun(tsr_sink *s, double seconds)
{
    if (!s)
        return;
    atomic_fetch_add(&s->underruns, 1);
    atomic_fetch_add(&s->underrun_ns, (uint64_t)(seconds > 0 ? seconds * 1e9 : 0));
}

uint64_t
tsr_sink_underruns(const tsr_sink *s, double *seconds)
{
    if (!s) {
        if (seconds)
            *seconds = 0;
        return 0;
    }
    tsr_sink *m = (tsr_sink *)s;
    if (seconds)
        *seconds = (double)atomic_load(&m->underrun_ns) * 1e-9;
    return atomic_load(&m->underruns);
}
