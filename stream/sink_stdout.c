/* stream: the stdout medium (see sink_int.h): a private duplicate of fd 1, a larger pipe, and
 * a raw stream fed into that pipe by reference (vmsplice); what is not spliced is written
 * like a file's bytes (sink_file.c). */
#include "stream/sink_int.h"
#include "tiles/tune.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>


/* Pipes default to 64 KiB; a controller reading in large gulps keeps up better with a larger
 * one, and 1 MiB is the unprivileged maximum on Linux by default. */
#define PIPE_WANT (1 << 20)

int
tsr_sink_stdout_open(tsr_error *err)
{
    if (isatty(STDOUT_FILENO)) {
        tsr_fail(err, TSR_EINVAL, "stdout is a terminal: use -o FILE or a pipe");
        return -1;
    }
    /* A private descriptor: closing it at the end reports delayed errors (NFS reports
     * them on every close of the file), while fd 1 itself stays open for the process. */
    int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        tsr_fail(err, TSR_EIO, "stdout: %s", strerror(errno));
    return fd;
}

void
tsr_sink_stdout_pipe(tsr_sink *s)
{
    struct stat st;
    if (fstat(s->fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        /* Best effort: a smaller pipe only costs speed. */
        int cur = fcntl(s->fd, F_GETPIPE_SZ);
        if (cur >= 0 && cur < PIPE_WANT)
            (void)fcntl(s->fd, F_SETPIPE_SZ, PIPE_WANT);
        /* the no_vmsplice knob keeps plain write(2), for measurements and for readers that
         * misbehave with spliced pages */
        s->splice = !s->framed && !tsr_tune_get()->no_vmsplice;
    }
}

static tsr_status
splice_pages(tsr_sink *s, uint8_t *p, size_t n, uint8_t **spliced_end, tsr_error *err);

tsr_status
tsr_sink_splice_put(tsr_sink *s, uint8_t *p, size_t n, tsr_error *err)
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
    if (head && tsr_sink_fd_put(s, p, head, true, err) != TSR_OK)
        return s->first.status;
    p += head;
    n -= head;
    size_t body = n & ~(PAGE - 1);
    while (body > 0) {
        if (stopped(s))
            return tsr_sink_interrupted(s, err);
        struct iovec iov = {p, tsr_fault_allow(&s->fault, body)};
        ssize_t k = iov.iov_len ? vmsplice(s->fd, &iov, 1, SPLICE_F_NONBLOCK) : -1;
        if (k < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                if (!tsr_wait_fd(s->fd, POLLOUT, 100))
                    return tsr_sink_fail(s, err, errno);
                continue;
            }
            if (errno == EPIPE)
                return tsr_sink_fail(s, err, errno);
            s->splice = false; /* EINVAL, ENOSYS, ...: not a pipe vmsplice can feed */
            break;
        }
        size_t taken = (size_t)k, rest = (PAGE - (taken & (PAGE - 1))) & (PAGE - 1);
        tsr_sink_took(s, taken);
        atomic_fetch_add(&s->bytes, (uint64_t)taken);
        /* The pipe holds a reference to the page the splice stopped in: finish that page by
         * copy before it is dropped, so no byte of it is lost and none is written twice. */
        *spliced_end = p + taken + rest; /* the pipe references these pages now */
        if (rest && tsr_sink_fd_put(s, p + taken, rest, true, err) != TSR_OK)
            return s->first.status;
        p += taken + rest;
        body -= taken + rest;
        n -= taken + rest;
    }
    if (n && tsr_sink_fd_put(s, p, n, true, err) != TSR_OK)
        return s->first.status;
    return TSR_OK;
}
