/* stream: the file medium (see sink_int.h): any descriptor we write(2) to (a path's file,
 * and stdout's descriptor too), a raw resume that keeps a file's first bytes, and cutting a
 * framed regular file back to its last whole frame. */
#include "stream/sink_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

tsr_status
tsr_sink_fd_put(tsr_sink *s, const uint8_t *p, size_t n, bool count, tsr_error *err)
{
    while (n > 0) {
        size_t ask = tsr_fault_allow(&s->fault, n < WRITE_CHUNK ? n : WRITE_CHUNK);
        ssize_t k = ask ? write(s->fd, p, ask) : -1; /* 0: the hook set errno */
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (tsr_wait_fd(s->fd, POLLOUT, -1))
                    continue;
            }
            return tsr_sink_fail(s, err, errno);
        }
        if (k == 0) {
            /* write(2) returning 0 for a non-zero count means the device took nothing and
             * will keep taking nothing; looping would spin forever. */
            return tsr_sink_fail(s, err, EIO);
        }
        tsr_sink_took(s, (size_t)k);
        if (count)
            atomic_fetch_add(&s->bytes, (uint64_t)k);
        p += k;
        n -= (size_t)k;
    }
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

int
tsr_sink_file_open(const char *spec, uint64_t start, bool framed, tsr_error *err)
{
    int fd;
    if (start > 0 && !framed)
        fd = open_resume(spec, start, err);
    else {
        fd = open(spec, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0)
            tsr_fail(err, errno == ENOMEM ? TSR_ENOMEM : TSR_EIO, "%s: %s", spec,
                     strerror(errno));
    }
    return fd;
}

void
tsr_sink_file_locate(tsr_sink *s)
{
    /* A framed regular file can lose half a frame to ftruncate after a failed write and
     * still end in an abort frame; where our output begins in it: */
    struct stat st;
    int fl = fcntl(s->fd, F_GETFL);
    if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode) && fl >= 0) {
        off_t at = (fl & O_APPEND) ? st.st_size : lseek(s->fd, 0, SEEK_CUR);
        s->cuttable = at >= 0;
        s->base = at >= 0 ? (uint64_t)at : 0;
    }
}

bool
tsr_sink_file_cut_back(tsr_sink *s)
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
