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
 * (raw), so what was delivered is always a whole number of units. */
#include "stream/stream_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* Pipes default to 64 KiB; a controller reading in large gulps keeps up better with a larger
 * one, and 1 MiB is the unprivileged maximum on Linux by default. */
#define PIPE_WANT (1 << 20)

/* One write(2) call never asks for more than this: Linux caps a call at 0x7ffff000 anyway,
 * and some systems reject counts above INT_MAX. Small enough that a stop request is seen
 * within milliseconds between two calls. */
#define WRITE_CHUNK ((size_t)8 << 20)

/* Frame payloads (raw bytes) when unpaced: large enough that the 24-byte head and the
 * per-frame crc/deflate setup cost nothing, small enough for a receiver's buffer. */
#define FRAME_RAW ((size_t)1 << 20)

#define PAGE ((size_t)4096)

/* How long a stop request waits for a frame already on its way before the connection is
 * given up (the receiver stopped reading): the stop must not hang. */
#define STOP_GRACE_S 5.0

/* A receiver that takes nothing this long (tsr_sink_opts.stall_s, --stall-timeout) is given
 * up on: the controller's own silence limit (controller/controller.c) is the same. */
#define STALL_DEFAULT_S 600.0

#define CONNECT_TIMEOUT_S 10.0
#define CONFIRM_TIMEOUT_S 120.0

enum kind { SINK_FILE, SINK_STDOUT, SINK_NULL, SINK_TCP };

struct tsr_sink {
    enum kind kind;                /* where the bytes go */
    int fd;                        /* -1 for null; a private dup of 1 for stdout; the socket */
    char *name;                    /* the -o spelling ("stdout" for "-"), for messages */
    _Atomic uint64_t bytes;        /* sample bytes delivered (whole frames when framed) */
    uint64_t start;                /* stream offset of the first byte we deliver */
    tsr_error first;               /* the sticky error; first.status == TSR_OK while healthy */
    bool broken;                   /* a unit was cut short: no abort frame can follow */
    bool framed, deflate;          /* DESIGN.md §3 framing, zlib payloads */
    bool splice;                   /* stdout is a pipe that takes vmsplice(2) */
    volatile sig_atomic_t *stop;   /* borrowed stop request, may be NULL */
    double rate;                   /* bytes/s, 0 = unpaced */
    tsr_bucket bucket;             /* the pacing */
    size_t chunk;                  /* frame payload / paced write size */
    uint32_t crc;                  /* crc32 of the raw bytes sent since start (framed) */
    uint64_t total;                /* header total (framed), for the resume check */
    uint8_t *zbuf;                 /* deflate output, zcap bytes */
    size_t zcap;
    _Atomic uint64_t underruns;    /* times the paced sink waited for data */
    _Atomic uint64_t underrun_ns;  /* ... and for how long in all */
    double stall_s;                /* tcp: give up on a receiver taking nothing this long */
    uint64_t wpos;                 /* bytes of our output the medium took (heads included) */
    uint64_t unit_end;             /* ... of them, those in whole units (header, frames) */
    bool cuttable;                 /* a framed regular file: half a frame can be cut off */
    uint64_t base;                 /* its file offset where our output begins */
    tsr_fault fault;               /* the fault hook (tsr_sink_opts.fault) */
};

static bool
stopped(const tsr_sink *s)
{
    return s->stop && *s->stop;
}

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
    free(s->zbuf);
    free(s->name);
    free(s);
}

/* Remember the first failure and hand it back. */
static tsr_status
sink_fail(tsr_sink *s, tsr_error *err, int e)
{
    if (s->first.status == TSR_OK)
        tsr_fail(&s->first, TSR_EIO, "%s: %s", s->name,
                 e == ECONNRESET ? "connection reset by the receiver" : strerror(e));
    s->broken = true;
    if (err)
        *err = s->first;
    return s->first.status;
}

static tsr_status
sink_interrupted(tsr_sink *s, tsr_error *err)
{
    if (s->first.status == TSR_OK)
        tsr_fail(&s->first, TSR_EINTR, "%s: interrupted", s->name);
    if (err)
        *err = s->first;
    return s->first.status;
}

/* Wait up to `ms` for `events` on fd; false with errno set if even waiting fails. */
static bool
wait_fd(int fd, short events, int ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int r = poll(&p, 1, ms);
    if (r < 0 && errno != EINTR)
        return false;
    return true;
}

/* ---- putting bytes on a descriptor ---------------------------------------------------- */

/* The medium took k bytes. */
static void
took(tsr_sink *s, size_t k)
{
    s->wpos += k;
    tsr_fault_took(&s->fault, k);
}

/* write(2) all n bytes to a file or pipe (blocking descriptors; a non-blocking one someone
 * handed us is waited on). With `count`, every byte taken is counted at once (raw sinks). */
static tsr_status
write_put(tsr_sink *s, const uint8_t *p, size_t n, bool count, tsr_error *err)
{
    while (n > 0) {
        size_t ask = tsr_fault_allow(&s->fault, n < WRITE_CHUNK ? n : WRITE_CHUNK);
        ssize_t k = ask ? write(s->fd, p, ask) : -1; /* 0: the hook set errno */
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (wait_fd(s->fd, POLLOUT, -1))
                    continue;
            }
            return sink_fail(s, err, errno);
        }
        if (k == 0) {
            /* write(2) returning 0 for a non-zero count means the device took nothing and
             * will keep taking nothing; looping would spin forever. */
            return sink_fail(s, err, EIO);
        }
        took(s, (size_t)k);
        if (count)
            atomic_fetch_add(&s->bytes, (uint64_t)k);
        p += k;
        n -= (size_t)k;
    }
    return TSR_OK;
}

/* send(2) all n bytes of one unit (a header or frame part) on the non-blocking socket. A
 * receiver that takes nothing for stall_s seconds is given up on (the connection is broken:
 * whatever we queue would not get through either, an abort frame included). A stop request
 * does not cut a unit, but then STOP_GRACE_S of a receiver taking nothing is enough. */
static tsr_status
net_put(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    double last = tsr_mono_s(); /* when the receiver last took something */
    while (n > 0) {
        size_t ask = tsr_fault_allow(&s->fault, n);
        ssize_t k = ask ? send(s->fd, p, ask, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
        if (k > 0) {
            took(s, (size_t)k);
            p += k;
            n -= (size_t)k;
            last = tsr_mono_s();
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return sink_fail(s, err, errno);
        bool stop = stopped(s);
        double limit = stop && s->stall_s > STOP_GRACE_S ? STOP_GRACE_S : s->stall_s;
        if (tsr_mono_s() - last > limit) {
            s->broken = true;
            if (s->first.status == TSR_OK) {
                if (stop)
                    tsr_fail(&s->first, TSR_EINTR, "%s: interrupted; the receiver took "
                             "nothing for %.0f s", s->name, limit);
                else
                    tsr_fail(&s->first, TSR_EIO, "%s: the receiver took nothing for %g s "
                             "(--stall-timeout): giving up", s->name, limit);
            }
            if (err)
                *err = s->first;
            return s->first.status;
        }
        if (!wait_fd(s->fd, POLLOUT, 100))
            return sink_fail(s, err, errno);
    }
    return TSR_OK;
}

/* Read exactly n bytes from the socket within `timeout` seconds (stop-aware); the only wait
 * is the handshake's, so the timeout is --stall-timeout's. */
static tsr_status
net_get(tsr_sink *s, uint8_t *p, size_t n, double timeout, const char *what, tsr_error *err)
{
    double end = tsr_mono_s() + timeout;
    while (n > 0) {
        ssize_t k = recv(s->fd, p, n, MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0) {
            s->broken = true;
            return tsr_fail(err, TSR_EIO, "%s: the receiver closed the connection before "
                            "answering %s", s->name, what);
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return sink_fail(s, err, errno);
        if (stopped(s))
            return sink_interrupted(s, err);
        if (tsr_mono_s() > end) {
            s->broken = true;
            return tsr_fail(err, TSR_EIO, "%s: the receiver did not answer %s within %g s "
                            "(--stall-timeout): giving up", s->name, what, timeout);
        }
        if (!wait_fd(s->fd, POLLIN, 100))
            return sink_fail(s, err, errno);
    }
    return TSR_OK;
}

static tsr_status
put_unit(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    return s->kind == SINK_TCP ? net_put(s, p, n, err) : write_put(s, p, n, false, err);
}

/* Feed a raw stdout pipe by reference: whole pages go in with vmsplice(2) and are dropped
 * from our mapping at once (MADV_DONTNEED), so the pages the pipe holds are never written
 * again by us, even if the reader splices them onward to a pipe we cannot see. The partial
 * pages at either end, and a page a short vmsplice split, are written by copy. Non-blocking
 * with a poll, so a stop is seen even while the reader takes nothing; every byte the pipe
 * took is counted. Falls back to write(2) when the kernel refuses vmsplice. */
static tsr_status
splice_pages(tsr_sink *s, uint8_t *p, size_t n, uint8_t **spliced_end, tsr_error *err);

static tsr_status
splice_put(tsr_sink *s, uint8_t *p, size_t n, tsr_error *err)
{
    /* The pages handed over are dropped in one call at the end (before the caller may touch
     * the buffer again), not after every vmsplice: one TLB shootdown per piece, and huge
     * pages are not split into small ones first. */
    uint8_t *first = (uint8_t *)(((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1)), *end = first;
    tsr_status st = splice_pages(s, p, n, &end, err);
    if (end > first)
        madvise(first, (size_t)(end - first), MADV_DONTNEED);
    return st;
}

static tsr_status
splice_pages(tsr_sink *s, uint8_t *p, size_t n, uint8_t **spliced_end, tsr_error *err)
{
    size_t head = (size_t)(-(uintptr_t)p & (PAGE - 1));
    if (head > n)
        head = n;
    if (head && write_put(s, p, head, true, err) != TSR_OK)
        return s->first.status;
    p += head;
    n -= head;
    size_t body = n & ~(PAGE - 1);
    while (body > 0) {
        if (stopped(s))
            return sink_interrupted(s, err);
        struct iovec iov = {p, tsr_fault_allow(&s->fault, body)};
        ssize_t k = iov.iov_len ? vmsplice(s->fd, &iov, 1, SPLICE_F_NONBLOCK) : -1;
        if (k < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                if (!wait_fd(s->fd, POLLOUT, 100))
                    return sink_fail(s, err, errno);
                continue;
            }
            if (errno == EPIPE)
                return sink_fail(s, err, errno);
            s->splice = false; /* EINVAL, ENOSYS, ...: not a pipe vmsplice can feed */
            break;
        }
        size_t taken = (size_t)k, rest = (PAGE - (taken & (PAGE - 1))) & (PAGE - 1);
        took(s, taken);
        atomic_fetch_add(&s->bytes, (uint64_t)taken);
        /* The pipe holds a reference to the page the splice stopped in: finish that page by
         * copy before it is dropped, so no byte of it is lost and none is written twice. */
        *spliced_end = p + taken + rest; /* the pipe references these pages now */
        if (rest && write_put(s, p + taken, rest, true, err) != TSR_OK)
            return s->first.status;
        p += taken + rest;
        body -= taken + rest;
        n -= taken + rest;
    }
    if (n && write_put(s, p, n, true, err) != TSR_OK)
        return s->first.status;
    return TSR_OK;
}

/* ---- pacing ------------------------------------------------------------------------------ */

/* Take n bytes from the token bucket; a stop is seen within 50 ms. The bucket holds at most
 * one chunk, so no 2 s window carries more than the rate plus one chunk (1/20 s of it). */
static tsr_status
pace(tsr_sink *s, size_t n, tsr_error *err)
{
    if (!tsr_bucket_take(&s->bucket, n, s->stop))
        return sink_interrupted(s, err);
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

static tsr_status
framed_write(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    while (n > 0) {
        size_t piece = n < s->chunk ? n : s->chunk;
        if (stopped(s))
            return sink_interrupted(s, err);
        if (pace(s, piece, err) != TSR_OK)
            return s->first.status;
        tsr_frame f = {tsr_sink_offset(s), (uint32_t)piece, (uint32_t)piece,
                       tsr_crc32(0, p, piece), 0};
        const uint8_t *payload = p;
        if (s->deflate) {
            size_t zlen;
            tsr_error e;
            /* Level 1: the writer thread must keep up with the renderer; lens arrays and
             * flat areas still shrink many times over. A payload that does not shrink goes
             * raw, which the per-frame flag allows. */
            if (tsr_deflate(p, piece, 1, s->zbuf, s->zcap, &zlen, &e) != TSR_OK) {
                s->first = e;
                if (err)
                    *err = e;
                return e.status;
            }
            if (zlen < piece) {
                f.wire = (uint32_t)zlen;
                f.flags |= TSR_FRAME_DEFLATE;
                payload = s->zbuf;
            }
        }
        if (send_frame(s, &f, payload, err) != TSR_OK)
            return s->first.status;
        s->crc = tsr_crc32_combine(s->crc, f.crc, piece);
        atomic_fetch_add(&s->bytes, (uint64_t)piece);
        p += piece;
        n -= piece;
    }
    return TSR_OK;
}

static tsr_status
raw_write(tsr_sink *s, uint8_t *p, size_t n, bool donate, tsr_error *err)
{
    while (n > 0) {
        size_t piece = n < s->chunk ? n : s->chunk;
        if (stopped(s))
            return sink_interrupted(s, err);
        if (pace(s, piece, err) != TSR_OK)
            return s->first.status;
        tsr_status st = donate && s->splice ? splice_put(s, p, piece, err)
                                            : write_put(s, p, piece, true, err);
        if (st != TSR_OK)
            return st;
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
    if (s->kind == SINK_NULL) {
        if (s->rate > 0) {
            /* A paced null sink still takes its time: it stands in for a machine. */
            for (size_t done = 0; done < n;) {
                size_t piece = n - done < s->chunk ? n - done : s->chunk;
                if (stopped(s))
                    return sink_interrupted(s, err);
                if (pace(s, piece, err) != TSR_OK)
                    return s->first.status;
                atomic_fetch_add(&s->bytes, (uint64_t)piece);
                done += piece;
            }
            return TSR_OK;
        }
        if (stopped(s))
            return sink_interrupted(s, err);
        atomic_fetch_add(&s->bytes, (uint64_t)n);
        return TSR_OK;
    }
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

static int
tcp_connect(const char *spec, volatile sig_atomic_t *stop, tsr_error *err)
{
    char host[256], port[8];
    if (!tsr_split_hostport(spec + 6, host, sizeof host, port, sizeof port, 1)) {
        tsr_fail(err, TSR_EINVAL, "%s: expected tcp://HOST:PORT with PORT 1..65535", spec);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        tsr_fail(err, TSR_EIO, "%s: %s", spec, gai_strerror(rc));
        return -1;
    }
    int fd = -1, last = ECONNREFUSED;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        if (errno != EINPROGRESS) {
            last = errno;
            close(fd);
            fd = -1;
            continue;
        }
        double end = tsr_mono_s() + CONNECT_TIMEOUT_S;
        int soerr = ETIMEDOUT;
        while (tsr_mono_s() < end && !(stop && *stop)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int r = poll(&p, 1, 100);
            if (r > 0) {
                socklen_t len = sizeof soerr;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
                    soerr = errno;
                break;
            }
            if (r < 0 && errno != EINTR) {
                soerr = errno;
                break;
            }
        }
        if (stop && *stop)
            soerr = EINTR;
        if (soerr != 0) {
            last = soerr;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        if (last == EINTR)
            tsr_fail(err, TSR_EINTR, "%s: interrupted while connecting", spec);
        else
            tsr_fail(err, TSR_EIO, "%s: %s", spec,
                     last == ETIMEDOUT ? "no answer within 10 s (host unreachable?)"
                                       : strerror(last));
    }
    return fd;
}

/* Write the header; on tcp read back the receiver's resume offset into s->start. */
static tsr_status
handshake(tsr_sink *s, const tsr_header *h, tsr_error *err)
{
    uint8_t buf[TSR_HEADER_SIZE];
    tsr_header_encode(h, buf);
    if (put_unit(s, buf, sizeof buf, err) != TSR_OK)
        return s->first.status;
    s->unit_end = s->wpos;
    if (s->kind != SINK_TCP)
        return TSR_OK;
    uint8_t ans[8];
    /* A controller serves one sender at a time, so a second one queues here: as long as
     * --stall-timeout allows (default 600 s), like any other wait on the receiver. */
    tsr_status st = net_get(s, ans, sizeof ans, s->stall_s, "the header", err);
    if (st != TSR_OK)
        return st;
    uint64_t r = tsr_get_le64(ans);
    if (r == TSR_RESUME_REFUSED)
        return tsr_fail(err, TSR_EIO,
                        "%s: the controller refused the job (it holds part of a different "
                        "design's output, or it is busy)", s->name);
    if (r > h->total)
        return tsr_fail(err, TSR_EIO, "%s: resume offset %llu is past the end (%llu bytes)",
                        s->name, (unsigned long long)r, (unsigned long long)h->total);
    s->start = r;
    return TSR_OK;
}

/* Open a regular file for a raw resume at `start`: keep what is before it, cut the rest. */
static int
open_resume(const char *spec, uint64_t start, tsr_error *err)
{
    int fd = open(spec, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) {
        tsr_fail(err, errno == ENOMEM ? TSR_ENOMEM : TSR_EIO, "%s: %s", spec, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        tsr_fail(err, TSR_EIO, "%s: %s", spec, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode))
        return fd; /* a device or FIFO: the stream simply starts at `start` */
    if ((uint64_t)st.st_size < start) {
        tsr_fail(err, TSR_EINVAL, "%s: holds %lld bytes, cannot resume at byte %llu", spec,
                 (long long)st.st_size, (unsigned long long)start);
        close(fd);
        return -1;
    }
    /* Cut to `start`, so the file's length always says how much of the job it holds. */
    if (ftruncate(fd, (off_t)start) != 0 || lseek(fd, (off_t)start, SEEK_SET) < 0) {
        tsr_fail(err, TSR_EIO, "%s: %s", spec, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

tsr_sink *
tsr_sink_open(const char *spec, tsr_error *err)
{
    return tsr_sink_open_ex(spec, NULL, err);
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

    if (!spec || !*spec) {
        tsr_fail(err, TSR_EINVAL, "-o: empty output name");
        return NULL;
    }
    bool tcp = strncmp(spec, "tcp://", 6) == 0;
    bool framed = o->framed || tcp;
    if (tcp && !o->header) {
        /* Taken as a path, "tcp://host:port" would fail with a confusing ENOENT; tcp is the
         * framed stream's business (DESIGN.md §3). */
        tsr_fail(err, TSR_EINVAL, "%s: tcp is not a raw sink (it needs the framed stream)", spec);
        return NULL;
    }
    if (framed && !o->header) {
        tsr_fail(err, TSR_EINTERNAL, "%s: a framed sink needs a header", spec);
        return NULL;
    }
    if (o->rate < 0 || o->rate != o->rate) {
        tsr_fail(err, TSR_EINVAL, "%s: rate must be positive", spec);
        return NULL;
    }
    if (o->stall_s < 0 || o->stall_s != o->stall_s) {
        tsr_fail(err, TSR_EINVAL, "%s: stall timeout must be positive", spec);
        return NULL;
    }
    tsr_fault fault;
    if (tsr_fault_parse(o->fault, &fault, err) != TSR_OK)
        return NULL;
    if (framed && o->start > o->header->total) {
        tsr_fail(err, TSR_EINVAL, "%s: resume offset %llu is past the end (%llu bytes)", spec,
                 (unsigned long long)o->start, (unsigned long long)o->header->total);
        return NULL;
    }

    if (strcmp(spec, "null") == 0) {
        kind = SINK_NULL;
        framed = false; /* nothing to frame: null only counts */
    } else if (tcp) {
        kind = SINK_TCP;
        fd = tcp_connect(spec, o->stop, err);
        if (fd < 0)
            return NULL;
    } else if (strcmp(spec, "-") == 0) {
        kind = SINK_STDOUT;
        if (isatty(STDOUT_FILENO)) {
            tsr_fail(err, TSR_EINVAL, "stdout is a terminal: use -o FILE or a pipe");
            return NULL;
        }
        /* A private descriptor: closing it at the end reports delayed errors (NFS reports
         * them on every close of the file), while fd 1 itself stays open for the process. */
        fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
            tsr_fail(err, TSR_EIO, "stdout: %s", strerror(errno));
            return NULL;
        }
    } else {
        kind = SINK_FILE;
        if (o->start > 0 && !framed)
            fd = open_resume(spec, o->start, err);
        else {
            fd = open(spec, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
            if (fd < 0)
                tsr_fail(err, errno == ENOMEM ? TSR_ENOMEM : TSR_EIO, "%s: %s", spec,
                         strerror(errno));
        }
        if (fd < 0)
            return NULL;
    }

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
    if (framed && (kind == SINK_FILE || kind == SINK_STDOUT)) {
        /* A framed regular file can lose half a frame to ftruncate after a failed write and
         * still end in an abort frame; where our output begins in it: */
        struct stat st;
        int fl = fcntl(fd, F_GETFL);
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fl >= 0) {
            off_t at = (fl & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
            s->cuttable = at >= 0;
            s->base = at >= 0 ? (uint64_t)at : 0;
        }
    }

    if (kind == SINK_STDOUT) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
            /* Best effort: a smaller pipe only costs speed. */
            int cur = fcntl(fd, F_GETPIPE_SZ);
            if (cur >= 0 && cur < PIPE_WANT)
                (void)fcntl(fd, F_SETPIPE_SZ, PIPE_WANT);
            /* TSR_NO_VMSPLICE=1 keeps plain write(2), for measurements and for readers that
             * misbehave with spliced pages. */
            const char *nv = getenv("TSR_NO_VMSPLICE");
            s->splice = !framed && !(nv && *nv && strcmp(nv, "0") != 0);
        }
    }

    /* Units: a paced sink moves 1/20 s of its rate at a time (at least 512 bytes, whole pages
     * from 4 KiB on so vmsplice keeps page alignment); frames are at most 1 MiB. */
    if (s->rate > 0) {
        double c = s->rate / 20;
        c = c < 512 ? 512 : c;
        s->chunk = c > (double)FRAME_RAW ? FRAME_RAW : (size_t)c;
        if (s->chunk >= PAGE)
            s->chunk &= ~(PAGE - 1);
        tsr_bucket_init(&s->bucket, s->rate, (double)s->chunk);
    } else {
        s->chunk = framed ? FRAME_RAW : WRITE_CHUNK;
    }
    if (s->deflate) {
        s->zcap = tsr_deflate_bound(s->chunk);
        s->zbuf = malloc(s->zcap);
        if (!s->zbuf) {
            tsr_fail(err, TSR_ENOMEM, "%s: out of memory (deflate buffer)", spec);
            sink_free(s);
            return NULL;
        }
    }
    if (framed && handshake(s, o->header, err) != TSR_OK) {
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
        return TSR_OK;
    tsr_frame f = {tsr_sink_offset(s), 0, 0, s->crc, TSR_FRAME_TRAILER};
    if (send_frame(s, &f, NULL, err) != TSR_OK)
        return s->first.status;
    if (s->kind != SINK_TCP)
        return TSR_OK;
    /* Half-close and wait for the receiver to close: its word that it holds the whole job
     * durably. Anything it says meanwhile is read and ignored. */
    shutdown(s->fd, SHUT_WR);
    double end = tsr_mono_s() + CONFIRM_TIMEOUT_S;
    for (;;) {
        uint8_t junk[256];
        ssize_t k = recv(s->fd, junk, sizeof junk, MSG_DONTWAIT);
        if (k == 0)
            return TSR_OK;
        if (k > 0)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            tsr_fail(&s->first, TSR_EIO, "%s: the receiver did not confirm the end of the job (%s)",
                     s->name, e == ECONNRESET ? "connection reset" : strerror(e));
            s->broken = true;
            if (err)
                *err = s->first;
            return TSR_EIO;
        }
        if (tsr_mono_s() > end || stopped(s)) {
            tsr_fail(&s->first, TSR_EIO, "%s: the receiver did not confirm the end of the job%s",
                     s->name, stopped(s) ? " (interrupted)" : " within 120 s");
            s->broken = true;
            if (err)
                *err = s->first;
            return TSR_EIO;
        }
        if (!wait_fd(s->fd, POLLIN, 100))
            return sink_fail(s, err, errno);
    }
}

/* Cut a framed regular file back to its last whole unit (a failed write left part of one);
 * true when it now ends there. Never before the header: a file without a whole header is
 * plainly incomplete and an abort frame alone would be garbage. */
static bool
cut_back(tsr_sink *s)
{
    if (!s->cuttable || s->unit_end < TSR_HEADER_SIZE)
        return false;
    off_t at = (off_t)(s->base + s->unit_end);
    if (ftruncate(s->fd, at) != 0 || lseek(s->fd, at, SEEK_SET) != at)
        return false;
    s->wpos = s->unit_end;
    tsr_fault_seek(&s->fault, s->unit_end);
    return true;
}

tsr_status
tsr_sink_abort(tsr_sink *s, const char *reason, tsr_error *err)
{
    if (!s || !s->framed)
        return TSR_OK;
    if (s->broken && cut_back(s))
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
        cut_back(s); /* no half abort frame either */
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
