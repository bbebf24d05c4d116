/* stream: raw sinks (file, stdout, null). See stream.h.
 *
 * Output bands are large (megabytes), so sinks call write(2) directly: stdio buffering would
 * only add a copy. Errors are sticky: once a write fails every later write and the close
 * report that first error, so a caller that only checks the close still learns of it. */
#include "stream/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Pipes default to 64 KiB; a controller reading in large gulps keeps up better with a larger
 * one, and 1 MiB is the unprivileged maximum on Linux by default. */
#define PIPE_WANT (1 << 20)

/* One write(2) call never asks for more than this: Linux caps a call at 0x7ffff000 anyway,
 * and some systems reject counts above INT_MAX. */
#define WRITE_CHUNK ((size_t)1 << 30)

enum kind { SINK_FILE, SINK_STDOUT, SINK_NULL };

struct tsr_sink {
    enum kind kind;  /* where the bytes go */
    int fd;          /* -1 for the null sink; a private dup of 1 for stdout */
    char *name;      /* the -o spelling ("stdout" for "-"), for messages */
    uint64_t bytes;  /* bytes accepted so far (written, or discarded by null) */
    tsr_error first; /* the sticky error; first.status == TSR_OK while healthy */
};

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

tsr_sink *
tsr_sink_open(const char *spec, tsr_error *err)
{
    int fd = -1;
    tsr_sink *s = NULL;

    if (!spec || !*spec) {
        tsr_fail(err, TSR_EINVAL, "-o: empty output name");
        return NULL;
    }
    if (strcmp(spec, "null") == 0) {
        s = sink_alloc(SINK_NULL, -1, "null");
        if (!s)
            tsr_fail(err, TSR_ENOMEM, "null: out of memory");
        return s;
    }
    if (strncmp(spec, "tcp://", 6) == 0) {
        /* Taken as a path, "tcp://host:port" would fail with a confusing ENOENT; tcp is the
         * framed stream's business (DESIGN.md §3). */
        tsr_fail(err, TSR_EINVAL, "%s: tcp is not a raw sink (it needs the framed stream)", spec);
        return NULL;
    }
    if (strcmp(spec, "-") == 0) {
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
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
            /* Best effort: a smaller pipe only costs speed. */
            int cur = fcntl(fd, F_GETPIPE_SZ);
            if (cur >= 0 && cur < PIPE_WANT)
                (void)fcntl(fd, F_SETPIPE_SZ, PIPE_WANT);
        }
        s = sink_alloc(SINK_STDOUT, fd, "stdout");
        if (!s) {
            close(fd);
            tsr_fail(err, TSR_ENOMEM, "stdout: out of memory");
        }
        return s;
    }

    fd = open(spec, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) {
        tsr_fail(err, errno == ENOMEM ? TSR_ENOMEM : TSR_EIO, "%s: %s", spec, strerror(errno));
        return NULL;
    }
    s = sink_alloc(SINK_FILE, fd, spec);
    if (!s) {
        close(fd);
        tsr_fail(err, TSR_ENOMEM, "%s: out of memory", spec);
    }
    return s;
}

/* Remember the first failure and hand it back. */
static tsr_status
sink_fail(tsr_sink *s, tsr_error *err, int e)
{
    tsr_fail(&s->first, TSR_EIO, "%s: %s", s->name, strerror(e));
    if (err)
        *err = s->first;
    return TSR_EIO;
}

/* Wait until a non-blocking descriptor can take more (someone may have handed us a pipe in
 * O_NONBLOCK mode); false with errno set if even waiting fails. */
static bool
wait_writable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    for (;;) {
        int r = poll(&p, 1, -1);
        if (r > 0)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
    }
}

tsr_status
tsr_sink_write(tsr_sink *s, const void *buf, size_t n, tsr_error *err)
{
    if (!s)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_sink_write: no sink");
    if (s->first.status != TSR_OK) {
        if (err)
            *err = s->first;
        return s->first.status;
    }
    if (s->kind == SINK_NULL) {
        s->bytes += n;
        return TSR_OK;
    }

    const uint8_t *p = buf;
    while (n > 0) {
        size_t ask = n < WRITE_CHUNK ? n : WRITE_CHUNK;
        ssize_t k = write(s->fd, p, ask);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (wait_writable(s->fd))
                    continue;
            }
            return sink_fail(s, err, errno);
        }
        if (k == 0) {
            /* write(2) returning 0 for a non-zero count means the device took nothing and
             * will keep taking nothing; looping would spin forever. */
            return sink_fail(s, err, EIO);
        }
        /* Count partial progress too: the resume offset is what the sink really holds. */
        s->bytes += (uint64_t)k;
        p += k;
        n -= (size_t)k;
    }
    return TSR_OK;
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
    }
    free(s->name);
    free(s);
    return st;
}

uint64_t
tsr_sink_bytes(const tsr_sink *s)
{
    return s ? s->bytes : 0;
}
