/* stream: the tcp medium (see sink_int.h): connecting (10 s), sending on a non-blocking
 * socket with a stall limit, the receiver's resume answer after the header and its close
 * after the trailer (the word that it holds the job). */
#include "stream/sink_int.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* How long a stop request waits for a frame already on its way before the connection is
 * given up (the receiver stopped reading): the stop must not hang. */
#define STOP_GRACE_S 5.0

#define CONNECT_TIMEOUT_S 10.0
#define CONFIRM_TIMEOUT_S 120.0

tsr_status
tsr_sink_net_put(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    double last = tsr_mono_s(); /* when the receiver last took something */
    while (n > 0) {
        size_t ask = tsr_fault_allow(&s->fault, n);
        ssize_t k = ask ? send(s->fd, p, ask, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
        if (k > 0) {
            tsr_sink_took(s, (size_t)k);
            p += k;
            n -= (size_t)k;
            last = tsr_mono_s();
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return tsr_sink_fail(s, err, errno);
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
        if (!tsr_wait_fd(s->fd, POLLOUT, 100))
            return tsr_sink_fail(s, err, errno);
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
            return tsr_sink_fail(s, err, errno);
        if (stopped(s))
            return tsr_sink_interrupted(s, err);
        if (tsr_mono_s() > end) {
            s->broken = true;
            return tsr_fail(err, TSR_EIO, "%s: the receiver did not answer %s within %g s "
                            "(--stall-timeout): giving up", s->name, what, timeout);
        }
        if (!tsr_wait_fd(s->fd, POLLIN, 100))
            return tsr_sink_fail(s, err, errno);
    }
    return TSR_OK;
}

int
tsr_sink_tcp_connect(const char *spec, volatile sig_atomic_t *stop, tsr_error *err)
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

tsr_status
tsr_sink_tcp_resume(tsr_sink *s, const tsr_header *h, tsr_error *err)
{
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

tsr_status
tsr_sink_tcp_confirm(tsr_sink *s, tsr_error *err)
{
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
        if (!tsr_wait_fd(s->fd, POLLIN, 100))
            return tsr_sink_fail(s, err, errno);
    }
}
