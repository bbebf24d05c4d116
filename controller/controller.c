/* controller: the reference controller (`tessera controller`), the receiving end of the framed
 * stream that tests use as the machine. See controller.h and docs/streaming.md.
 *
 * One sender at a time, single-threaded. Everything it has acknowledged to itself is durable
 * before it is recorded: the output's data is fdatasync'd up to an offset, then the state
 * file naming that offset is written to a temporary, fsync'd and renamed over the old one
 * (and the folder fsync'd), so a controller killed at any instant restarts from a state whose
 * bytes are really on disk, and the sender it answers resends exactly the rest.
 *
 * What it vouches for: a state whose offset is the job's total means the job is complete, its
 * trailer's crc matched; until then the last frame counts as missing (`keep`), and a trailer
 * that does not match rolls the state back to where its connection began, so no restart ever
 * answers `total` for bytes no trailer checked. The state says what was written, not what the
 * output holds now: before it answers a resume offset or `total`, or counts a complete job
 * found at start, the controller reads the held bytes back and checks their crc32
 * (held_intact); bytes that were cut or changed since are not trusted, the job starts over.
 * The output is locked (flock) for as long as the controller uses it: a second controller on
 * it is refused before it touches anything.
 *
 * Which job a connection is: the current one (job k, from 1). While job k is incomplete, a
 * sender of the same fingerprint and total resumes it and another design is refused if job k
 * holds bytes (taken as job k if it holds none). Once job k is complete the controller has
 * gone on to job k + 1 (its own file with a numbered -o), and every connection is job
 * k + 1's, whatever its fingerprint: the same design twice is two jobs.
 *
 * A connection is read through a `conn` (a socket, or a buffer for the fuzz target and tests:
 * tsr_ctl_mem_*), so the reader that checks every byte a sender sends is the same code either
 * way. */
#include "controller/controller.h"
#include "stream/stream_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_MAGIC "tessera-controller-state 1"
#define HEADER_TIMEOUT_S 60.0   /* a whole header must arrive within this (or --stall-timeout) */
#define IDLE_TIMEOUT_S 600.0    /* --stall-timeout's default: a sender silent this long mid-job
                                 * is dropped (the sink's own default is the same) */
#define CHECKPOINT_BYTES ((uint64_t)8 << 20)
#define CHECKPOINT_S 0.25     /* at 10 MB/s a restart resends at most ~2.5 MB */
#define VERIFY_CHUNK ((size_t)1 << 20) /* held_intact's reads */

/* What the controller holds of its current (or last) job. offset = total only once the
 * job's trailer matched: complete(). */
typedef struct state {
    bool valid;       /* a job is known */
    uint8_t fp[32];   /* its fingerprint */
    uint64_t total;   /* its size */
    uint64_t offset;  /* bytes [0, offset) are held (durably, when there is an output) */
    uint32_t crc;     /* crc32 of bytes [0, offset) */
} state;

typedef struct ctl {
    const tsr_controller_opts *o;
    bool numbered;                /* -o holds a %d: each job has its own file */
    int64_t slot;                 /* the number of the job being received, from 1 */
    char *out_path;               /* its output (-o, %d filled in); NULL when discarding */
    char *state_path, *state_tmp; /* its state file and temporary; NULL when discarding */
    int out;                      /* output descriptor (locked), -1 when discarding */
    state st;                     /* durable state */
    double idle_s, header_s;      /* a sender's longest silence, and a frame's longest time
                                   * from its first byte to its last; the whole header's */
    tsr_bucket bucket;            /* consumption pace */
    uint8_t *wire, *raw;          /* frame buffers, grown to the largest frame seen */
    size_t wire_len, raw_len;     /* their sizes */
    size_t wire_cap;              /* the largest deflated payload accepted */
    int64_t jobs_done;
    tsr_fault fault;              /* the output's fault hook (tsr_controller_opts.fault) */
    bool scratch;                 /* this connection is a profile's (TSR_HEADER_PROFILE): its
                                   * frames are checked and paced, then dropped; nothing is
                                   * written or recorded, the held job is left as it is */
} ctl;

/* One unit of a sender's stream -- the header, or one frame (head, then payload or reason) --
 * read by one or more get()s. Its time is bounded as a whole, so that a sender trickling it
 * byte by byte is dropped as surely as a silent one: the unit must be whole within `limit`
 * seconds of its first byte (the header: of the connection's start), and the wait for that
 * first byte is bounded by `limit` seconds of silence. */
typedef struct unit {
    bool header;  /* the header (else a frame) */
    double limit; /* seconds */
    double first; /* tsr_mono_s() of its first byte; < 0: none has come yet */
    uint64_t got; /* its bytes received so far */
} unit;

/* One sender's bytes: read exactly n of unit u (*eof when the sender is gone or u ran out of
 * time; TSR_EINTR when stopped; TSR_EIO on errors); and answer the header with a resume
 * offset (false: it did not go). */
typedef struct conn conn;
struct conn {
    tsr_status (*get)(conn *k, uint8_t *p, size_t n, unit *u, bool *eof, tsr_error *err);
    bool (*answer)(conn *k, uint64_t offset);
    ctl *c;
    int fd;              /* the socket */
    const uint8_t *buf;  /* ... or bytes in memory */
    size_t len, at;
    uint64_t answered;   /* the last answer (memory) */
};

/* How a connection ended; CONN_NEXT only inside serve's loop: the frame was taken, read the
 * next one (CONN_GONE: the sender went away mid-job). */
typedef enum outcome { CONN_DONE, CONN_DROPPED, CONN_FAILED, CONN_NEXT, CONN_GONE } outcome;

static void
logf_(ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
logf_(ctl *c, const char *fmt, ...)
{
    if (!c->o->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("tessera controller: ", c->o->log);
    vfprintf(c->o->log, fmt, ap);
    fputc('\n', c->o->log);
    fflush(c->o->log);
    va_end(ap);
}

static bool
stopped(const ctl *c)
{
    return c->o->stop && *c->o->stop;
}

static void
hex(char *b, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(b + 2 * i, "%02x", p[i]);
}

static bool
complete(const state *s)
{
    return s->valid && s->offset == s->total;
}

static bool
same_job(const state *s, const tsr_header *h)
{
    return s->valid && memcmp(s->fp, h->fingerprint, 32) == 0 && s->total == h->total;
}

/* The length of the character at p (n bytes left) when it may be printed as it is: printable
 * ASCII but the backslash, or well-formed UTF-8 for a code point that is neither a control
 * (C0, DEL, C1) nor one that moves or hides text on a terminal (line and paragraph
 * separators, bidi marks and overrides); else 0. */
static size_t
plain_char(const uint8_t *p, size_t n)
{
    if (p[0] < 0x80)
        return p[0] >= 0x20 && p[0] < 0x7f && p[0] != '\\';
    size_t len = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : (p[0] & 0xf0) == 0xe0 ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    uint32_t cp = p[0] & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000}; /* shorter is overlong */
    if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0 ||
        cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069))
        return 0;
    return len;
}

/* Text a sender chose (an abort reason) made safe to log: what plain_char() lets through
 * stays, every other byte is written \xNN (CR, LF, ESC -- and so any escape sequence -- and
 * the backslash itself, so that \xNN is unambiguous). out: at least 4 * n + 1 bytes. */
static void
escape(char *out, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = plain_char(p + i, n - i);
        if (len) {
            memcpy(out, p + i, len);
            out += len;
            i += len;
        } else {
            out += sprintf(out, "\\x%02x", p[i++]);
        }
    }
    *out = '\0';
}

/* ---- the output and the state file ------------------------------------------------------- */

/* The controller writes only regular files: its output at offsets (a symbolic link to one is
 * written through), its state by renaming a new one over it. A FIFO, a device, a directory or
 * a socket is never written to or replaced: TSR_EINVAL naming it. */
static tsr_status
regular(const char *path, const struct stat *sb, tsr_error *err)
{
    if (S_ISREG(sb->st_mode))
        return TSR_OK;
    mode_t m = sb->st_mode;
    const char *what = S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO"
                     : S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISDIR(m) ? "a directory"
                     : S_ISSOCK(m) ? "a socket" : "a special file";
    return tsr_fail(err, TSR_EINVAL, "%s: is %s; the controller writes and replaces only "
                    "regular files (remove it or choose another -o)", path, what);
}

/* A path about to be written (follow: through a symbolic link) or renamed over (not even a
 * link: the rename would replace the link): absent, or a regular file. */
static tsr_status
check_path(const char *path, bool follow, tsr_error *err)
{
    struct stat sb;
    if ((follow ? stat(path, &sb) : lstat(path, &sb)) != 0)
        return errno == ENOENT ? TSR_OK : tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(errno));
    return regular(path, &sb, err);
}

static tsr_status
state_load(ctl *c, tsr_error *err)
{
    c->st.valid = false;
    if (!c->state_path)
        return TSR_OK;
    FILE *f = fopen(c->state_path, "r");
    if (!f) {
        if (errno == ENOENT)
            return TSR_OK;
        return tsr_fail(err, TSR_EIO, "%s: %s", c->state_path, strerror(errno));
    }
    char magic[64] = "", fp[80] = "";
    unsigned long long total, offset;
    unsigned crc;
    int n = fscanf(f, "%63[^\n]\nfingerprint %79s\ntotal %llu\noffset %llu\ncrc32 %x\n", magic,
                   fp, &total, &offset, &crc);
    fclose(f);
    bool ok = n == 5 && strcmp(magic, STATE_MAGIC) == 0 && strlen(fp) == 64 && offset <= total;
    for (int i = 0; ok && i < 32; i++) {
        unsigned v;
        ok = sscanf(fp + 2 * i, "%2x", &v) == 1;
        c->st.fp[i] = (uint8_t)v;
    }
    if (!ok)
        return tsr_fail(err, TSR_EIO, "%s: not a controller state file (remove it to start over)",
                        c->state_path);
    c->st.valid = true;
    c->st.total = total;
    c->st.offset = offset;
    c->st.crc = crc;
    return TSR_OK;
}

static tsr_status
fsync_dir(const char *path, tsr_error *err)
{
    char *d = strdup(path);
    if (!d)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    tsr_status st = TSR_OK;
    if (fd < 0 || fsync(fd) != 0)
        st = tsr_fail(err, TSR_EIO, "%s: %s", d, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(d);
    return st;
}

/* Make `s` the durable state: output data first, then the state that names it. The temporary
 * is opened without following a link or waiting on a FIFO, and written only if it is a
 * regular file; the state is renamed over only a regular file (checked again each time). */
static tsr_status
state_save(ctl *c, const state *s, tsr_error *err)
{
    c->st = *s;
    if (!c->state_path)
        return TSR_OK;
    if (fdatasync(c->out) != 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
    int fd = open(c->state_tmp, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", c->state_tmp, strerror(errno));
    char fp[65], buf[256];
    hex(fp, s->fp, 32);
    int n = snprintf(buf, sizeof buf, "%s\nfingerprint %s\ntotal %" PRIu64 "\noffset %" PRIu64
                     "\ncrc32 %08x\n", STATE_MAGIC, fp, s->total, s->offset, (unsigned)s->crc);
    struct stat sb;
    tsr_status st = fstat(fd, &sb) != 0 ? tsr_fail(err, TSR_EIO, "%s: %s", c->state_tmp,
                                                   strerror(errno))
                                        : regular(c->state_tmp, &sb, err);
    if (st == TSR_OK && (ftruncate(fd, 0) != 0 || write(fd, buf, (size_t)n) != n ||
                         fsync(fd) != 0))
        st = tsr_fail(err, TSR_EIO, "%s: %s", c->state_tmp, strerror(errno));
    if (close(fd) != 0 && st == TSR_OK)
        st = tsr_fail(err, TSR_EIO, "%s: %s", c->state_tmp, strerror(errno));
    if (st != TSR_OK || (st = check_path(c->state_path, false, err)) != TSR_OK)
        return st;
    if (rename(c->state_tmp, c->state_path) != 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", c->state_path, strerror(errno));
    return fsync_dir(c->state_path, err);
}

/* Whether the output still holds what state s says it holds: at least s->offset bytes whose
 * crc32 is s->crc. The state says what was written, not what is there now: an output cut, or
 * a byte changed since (by hand, another program, a failing disk), would be resumed over, or
 * called complete with a crc its bytes no longer have. So they are read back whenever the
 * controller is about to vouch for them, at the disk's speed (a sender waiting for its
 * answer must allow for it: docs/streaming.md §6). *ok false: logged, naming what differs.
 * Nothing to read without an output (the state is the controller's own memory). TSR_EINTR
 * when stopped, TSR_EIO when the output cannot be read. */
static tsr_status
held_intact(ctl *c, const state *s, bool *ok, tsr_error *err)
{
    *ok = true;
    if (c->out < 0 || s->offset == 0)
        return TSR_OK;
    struct stat sb;
    if (fstat(c->out, &sb) != 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
    uint64_t size = (uint64_t)sb.st_size, at = 0;
    uint32_t crc = 0;
    uint8_t *buf = size < s->offset ? NULL : malloc(VERIFY_CHUNK);
    if (size >= s->offset && !buf)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    while (buf && at < s->offset) {
        if (stopped(c)) {
            free(buf);
            return tsr_fail(err, TSR_EINTR, "interrupted");
        }
        size_t want = s->offset - at < VERIFY_CHUNK ? (size_t)(s->offset - at) : VERIFY_CHUNK;
        ssize_t got = pread(c->out, buf, want, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            free(buf);
            return tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
        }
        if (got == 0) { /* cut while being read */
            size = at;
            break;
        }
        crc = tsr_crc32(crc, buf, (size_t)got);
        at += (uint64_t)got;
    }
    free(buf);
    if (size < s->offset)
        logf_(c, "%s holds %" PRIu64 " bytes, less than the state's %" PRIu64 ": the held "
              "bytes are gone; starting over from byte 0", c->out_path, size, s->offset);
    else if (crc != s->crc)
        logf_(c, "%s: the crc32 of its first %" PRIu64 " bytes is %08x, the state says %08x: "
              "the held bytes cannot be trusted; starting over from byte 0", c->out_path,
              s->offset, (unsigned)crc, (unsigned)s->crc);
    *ok = size >= s->offset && crc == s->crc;
    return TSR_OK;
}

/* Start the job (fingerprint fp, total bytes) at byte 0, nothing held: the output emptied,
 * then the state saying so. */
static tsr_status
start_over(ctl *c, const uint8_t *fp, uint64_t total, tsr_error *err)
{
    if (c->out >= 0 && ftruncate(c->out, 0) != 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
    state ns = {true, {0}, total, 0, 0};
    memcpy(ns.fp, fp, 32);
    return state_save(c, &ns, err);
}

/* -o names one file per job when it holds one %d (and no other %): the job's number. */
static bool
is_numbered(const char *out)
{
    const char *d = strstr(out, "%d");
    return d && strchr(out, '%') == d && !strchr(d + 1, '%');
}

static void
slot_close(ctl *c)
{
    if (c->out >= 0)
        close(c->out);
    c->out = -1;
}

/* Open job c->slot's output and read its state. The paths are checked first (regular files
 * or nothing, the state's before the output is created), the output is locked -- one
 * controller per output: a second one is refused (TSR_EINVAL) before it reads or writes
 * anything -- and only then is the state read. */
static tsr_status
slot_open(ctl *c, tsr_error *err)
{
    const char *o = c->o->out;
    size_t n = strlen(o) + 32; /* room for %d's 20 digits and ".tsrstate.tmp" */
    free(c->out_path);
    free(c->state_path);
    free(c->state_tmp);
    c->out_path = malloc(n);
    c->state_path = malloc(n);
    c->state_tmp = malloc(n);
    if (!c->out_path || !c->state_path || !c->state_tmp)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    if (c->numbered) {
        const char *d = strstr(o, "%d");
        snprintf(c->out_path, n, "%.*s%" PRId64 "%s", (int)(d - o), o, c->slot, d + 2);
    } else {
        snprintf(c->out_path, n, "%s", o);
    }
    snprintf(c->state_path, n, "%s.tsrstate", c->out_path);
    snprintf(c->state_tmp, n, "%s.tsrstate.tmp", c->out_path);
    tsr_status st;
    if ((st = check_path(c->state_path, false, err)) != TSR_OK ||
        (st = check_path(c->state_tmp, false, err)) != TSR_OK ||
        (st = check_path(c->out_path, true, err)) != TSR_OK)
        return st;
    /* O_NONBLOCK: opening a FIFO put there since the check must not wait for a writer (on a
     * regular file it changes nothing). */
    c->out = open(c->out_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
    if (c->out < 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
    struct stat sb;
    if (fstat(c->out, &sb) != 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
    if ((st = regular(c->out_path, &sb, err)) != TSR_OK)
        return st;
    if (flock(c->out, LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK
                   ? tsr_fail(err, TSR_EINVAL, "%s: in use by another controller (it holds the "
                              "lock on it); one controller per output", c->out_path)
                   : tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
    if ((st = state_load(c, err)) != TSR_OK)
        return st;
    /* A job found complete is counted (numbered) or answered `total` only if its bytes are
     * still what the state says. */
    bool intact = true;
    if (complete(&c->st) && (st = held_intact(c, &c->st, &intact, err)) != TSR_OK)
        return st;
    if (!intact && (st = start_over(c, c->st.fp, c->st.total, err)) != TSR_OK)
        return st;
    if (c->st.valid)
        logf_(c, "state: %" PRIu64 " of %" PRIu64 " bytes held in %s%s", c->st.offset,
              c->st.total, c->out_path, complete(&c->st) ? " (complete)" : "");
    return TSR_OK;
}

/* A job complete: count it and go on to the next. Numbered outputs open the next job's file
 * (and count the ones found complete there, as at start); without an output the state in
 * memory is dropped. Either way the next connection is the next job, whatever its
 * fingerprint: a complete job takes no more connections, so the same design sent again is
 * a new job, not a retry answered `total` (which would swallow it). */
static tsr_status
job_done(ctl *c, tsr_error *err)
{
    for (;;) {
        c->jobs_done++;
        if (c->jobs_done >= c->o->jobs)
            return TSR_OK;
        if (!c->numbered) {
            c->st.valid = false;
            return TSR_OK;
        }
        slot_close(c);
        c->slot++;
        tsr_status st = slot_open(c, err);
        if (st != TSR_OK || !complete(&c->st))
            return st;
        logf_(c, "job %" PRId64 " is complete in %s", c->slot, c->out_path);
    }
}

/* ---- the socket -------------------------------------------------------------------------- */

/* Read exactly n bytes of unit u. TSR_OK; or *eof when the sender went away (at a clean
 * boundary when nothing was read) or u ran out of time (unit); TSR_EINTR when stopped;
 * TSR_EIO for errors. */
static tsr_status
sock_get(conn *k, uint8_t *p, size_t n, unit *u, bool *eof, tsr_error *err)
{
    ctl *c = k->c;
    int fd = k->fd;
    double silent_end = tsr_mono_s() + u->limit; /* while u has no byte yet */
    *eof = false;
    while (n > 0) {
        ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
        if (got > 0) {
            if (u->first < 0)
                u->first = tsr_mono_s();
            p += got;
            n -= (size_t)got;
            u->got += (uint64_t)got;
            continue;
        }
        if (got == 0 || (got < 0 && errno == ECONNRESET)) {
            *eof = true;
            return TSR_OK;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return tsr_fail(err, TSR_EIO, "connection: %s", strerror(errno));
        if (stopped(c))
            return tsr_fail(err, TSR_EINTR, "interrupted");
        if (tsr_mono_s() > (u->first < 0 ? silent_end : u->first + u->limit)) {
            *eof = true; /* as good as gone */
            if (u->header)
                logf_(c, "no whole header within %g s (%zu bytes missing): dropping the "
                      "connection", u->limit, n);
            else if (u->first < 0)
                logf_(c, "sender silent for %g s: dropping the connection", u->limit);
            else
                logf_(c, "no whole frame within %g s of its first byte (%" PRIu64 " bytes "
                      "of it came): dropping the connection", u->limit, u->got);
            return TSR_OK;
        }
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 100) < 0 && errno != EINTR)
            return tsr_fail(err, TSR_EIO, "connection: %s", strerror(errno));
    }
    return TSR_OK;
}

static bool
sock_answer(conn *k, uint64_t offset)
{
    uint8_t b[8], *p = b;
    size_t n = sizeof b;
    tsr_put_le64(b, offset);
    int fd = k->fd;
    double end = tsr_mono_s() + k->c->header_s;
    while (n > 0) {
        ssize_t sent = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent > 0) {
            p += sent;
            n -= (size_t)sent;
            continue;
        }
        if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return false;
        if (tsr_mono_s() > end)
            return false;
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        poll(&pf, 1, 100);
    }
    return true;
}

/* Bytes in memory: the sender sent buf[0, len) and closed. */
static tsr_status
mem_get(conn *k, uint8_t *p, size_t n, unit *u, bool *eof, tsr_error *err)
{
    (void)u;
    (void)err;
    *eof = n > k->len - k->at;
    if (*eof) {
        k->at = k->len;
        return TSR_OK;
    }
    memcpy(p, k->buf + k->at, n);
    k->at += n;
    return TSR_OK;
}

static bool
mem_answer(conn *k, uint64_t offset)
{
    k->answered = offset;
    return true;
}

/* Grow a frame buffer to n bytes (frames are at most TSR_FRAME_MAX_RAW, checked before). */
static bool
reserve(uint8_t **b, size_t *len, size_t n)
{
    if (n <= *len)
        return true;
    size_t want = n < 2 * *len ? 2 * *len : n;
    uint8_t *nb = realloc(*b, want);
    if (!nb)
        return false;
    *b = nb;
    *len = want;
    return true;
}

/* ---- one connection ----------------------------------------------------------------------- */

/* Decide where the job in header h starts: the held offset (total when complete) for the
 * job held, if its bytes are intact; 0 for a new job, or the held one started over; or refuse
 * (*r = TSR_RESUME_REFUSED: a different design while one is partly received). */
static tsr_status
resume_offset(ctl *c, const tsr_header *h, uint64_t *r, tsr_error *err)
{
    const state *s = &c->st;
    tsr_status st;
    if (same_job(s, h)) {
        bool intact;
        if ((st = held_intact(c, s, &intact, err)) != TSR_OK)
            return st;
        if (intact) {
            *r = s->offset;
            return TSR_OK;
        }
        /* not intact: the same job from byte 0, as a new one */
    } else if (s->valid && s->offset > 0 && s->offset < s->total) {
        char a[65], b[65];
        hex(a, h->fingerprint, 32);
        hex(b, s->fp, 32);
        *r = TSR_RESUME_REFUSED;
        return tsr_fail(err, TSR_EIO,
                        "refused a job with fingerprint %.16s... (%" PRIu64 " bytes): the output "
                        "holds %" PRIu64 " of %" PRIu64 " bytes of the job with fingerprint "
                        "%.16s...", a, h->total, s->offset, s->total, b);
    }
    /* A new job: nothing held, a finished or empty job of another design, or the held job
     * whose bytes are gone or changed. */
    *r = 0;
    return start_over(c, h->fingerprint, h->total, err);
}

/* Record what is held of an unfinished job: `cur`, except that the whole job counts as held
 * only once its trailer matched (complete()): until then its last frame counts as missing
 * (`last`: the state before it), so no later sender is answered `total` for bytes no trailer
 * checked; it re-sends that frame and a trailer over it. */
static tsr_status
keep(ctl *c, const state *cur, const state *last, tsr_error *err)
{
    if (c->scratch)
        return TSR_OK;
    const state *s = cur->offset < cur->total ? cur : last;
    if (s->offset == c->st.offset)
        return TSR_OK;
    return state_save(c, s, err);
}

static outcome
conn_failed(ctl *c, const state *cur, const state *last)
{
    /* What was checked before the failure is good: keep it (the failure is what is reported,
     * not a failure to record). */
    tsr_error e2;
    keep(c, cur, last, &e2);
    return CONN_FAILED;
}

/* One connection's job once answered: what it holds and how the stream has gone. */
typedef struct rx {
    tsr_header h;
    uint64_t r;            /* the offset answered: where this connection's bytes start */
    state at_r;            /* what was held before this connection: bytes [0, r) */
    state cur;             /* what we hold now; c->st is what is durable */
    state last;            /* cur before its last data frame (keep()) */
    uint32_t since;        /* crc32 of the bytes of this connection */
    uint64_t underruns;
    double underrun_s, last_save;
} rx;

/* An abort frame: the operator stopped the sender (or it failed): the job goes on when it
 * comes back, unless --exit-on-abort. The reason is the sender's text: escaped. */
static outcome
on_abort(ctl *c, conn *k, rx *x, const tsr_frame *f, unit *u, tsr_error *err)
{
    uint8_t reason[TSR_ABORT_MAX];
    char shown[4 * TSR_ABORT_MAX + 1] = "(no readable reason)";
    bool eof;
    if (f->wire <= TSR_ABORT_MAX &&
        k->get(k, reason, f->wire, u, &eof, err) == TSR_OK && !eof)
        escape(shown, reason, f->wire);
    tsr_error ab;
    if (f->offset == x->cur.offset)
        tsr_fail(&ab, TSR_EIO, "the sender aborted the job at byte %" PRIu64 ": %s",
                 f->offset, shown);
    else /* its word against what arrived: say both */
        tsr_fail(&ab, TSR_EIO, "the sender aborted the job at byte %" PRIu64 " (%" PRIu64
                 " bytes held): %s", f->offset, x->cur.offset, shown);
    if (c->o->exit_on_abort) {
        if (err)
            *err = ab;
        return conn_failed(c, &x->cur, &x->last);
    }
    if (keep(c, &x->cur, &x->last, err) != TSR_OK)
        return CONN_FAILED;
    logf_(c, "%s", ab.msg);
    logf_(c, "holding %" PRIu64 " of %" PRIu64 " bytes; waiting for the sender to come "
          "back and resume", c->st.offset, x->h.total);
    return CONN_DROPPED;
}

/* The trailer: the job is complete only when it ends at the total and its crc matches. */
static outcome
on_trailer(ctl *c, rx *x, const tsr_frame *f, tsr_error *err)
{
    const tsr_header *h = &x->h;
    if (f->wire || f->raw || f->offset != x->cur.offset || x->cur.offset != h->total) {
        tsr_fail(err, TSR_EIO, "trailer at byte %" PRIu64 " (lengths %u/%u): the job "
                 "ends at %" PRIu64 " and %" PRIu64 " bytes are held", f->offset,
                 (unsigned)f->wire, (unsigned)f->raw, h->total, x->cur.offset);
        return conn_failed(c, &x->cur, &x->last);
    }
    /* The trailer covers this connection's bytes [r, total): the crc of what was held
     * before r combined with it is the whole job's. Compared directly (not through
     * crc32_combine, which ignores the second crc of an empty range). */
    if (f->crc != x->since) {
        tsr_fail(err, TSR_EIO, "trailer crc %08x does not match the %08x of the %" PRIu64
                 " bytes received since byte %" PRIu64 " (whole job %08x): the job is "
                 "not complete%s", (unsigned)f->crc, (unsigned)x->since, h->total - x->r, x->r,
                 (unsigned)x->cur.crc, complete(&x->at_r) ? " (it was before: kept so)"
                 : "; holding the bytes before them only, so that a rerun re-sends "
                   "them");
        /* Which of this connection's bytes are wrong is not known: none is kept. */
        tsr_error e2;
        if (!c->scratch && !complete(&x->at_r) && state_save(c, &x->at_r, &e2) != TSR_OK)
            logf_(c, "%s", e2.msg);
        return CONN_FAILED;
    }
    if (c->scratch) {
        logf_(c, "a profile's stream ended: %" PRIu64 " bytes checked and dropped; nothing "
              "recorded", h->total);
        return CONN_DROPPED;
    }
    if (c->out >= 0 && ftruncate(c->out, (off_t)h->total) != 0) {
        tsr_fail(err, TSR_EIO, "%s: %s", c->out_path, strerror(errno));
        return CONN_FAILED;
    }
    if (state_save(c, &x->cur, err) != TSR_OK)
        return CONN_FAILED;
    logf_(c, "job %" PRId64 " complete: %" PRIu64 " bytes (%" PRIu64
          " this connection), crc32 %08x, %" PRIu64 " underruns (%.3f s starved)",
          c->jobs_done + 1, h->total, h->total - x->r, (unsigned)x->cur.crc, x->underruns,
          x->underrun_s);
    return CONN_DONE;
}

/* What is wrong with a data frame's header, or NULL: checked before its payload is read, so
 * a bad length never sizes a buffer. */
static const char *
bad_data_frame(const ctl *c, const rx *x, const tsr_frame *f)
{
    bool z = f->flags & TSR_FRAME_DEFLATE;
    if (f->offset != x->cur.offset)
        return "not the next byte";
    if (f->raw == 0 || f->raw > TSR_FRAME_MAX_RAW)
        return "raw length out of range";
    if ((uint64_t)f->raw > x->h.total - x->cur.offset)
        return "runs past the end of the job";
    if (!z && f->wire != f->raw)
        return "wire and raw lengths differ without deflate";
    if (z && (f->wire == 0 || f->wire > c->wire_cap))
        return "deflated length out of range";
    return NULL;
}

/* The checked payload of a data frame (c->raw) into the output at its offset, whole. */
static tsr_status
write_payload(ctl *c, const tsr_frame *f, tsr_error *err)
{
    size_t done = 0;
    while (done < f->raw) {
        /* the hook's position is the file offset: enospc@N = a file of N bytes */
        tsr_fault_seek(&c->fault, f->offset + done);
        size_t ask = tsr_fault_allow(&c->fault, f->raw - done);
        ssize_t put = ask ? pwrite(c->out, c->raw + done, ask, (off_t)(f->offset + done)) : -1;
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return tsr_fail(err, TSR_EIO, "%s: %s", c->out_path,
                            put < 0 ? strerror(errno) : "write took nothing");
        done += (size_t)put;
    }
    return TSR_OK;
}

/* A data frame: its payload read (the rest of unit u), inflated, checked against its crc,
 * written, consumed at the machine's pace, then counted (and checkpointed now and then). */
static outcome
on_data(ctl *c, conn *k, rx *x, const tsr_frame *f, unit *u, tsr_error *err)
{
    bool z = f->flags & TSR_FRAME_DEFLATE, eof;
    const char *bad = bad_data_frame(c, x, f);
    if (bad) {
        tsr_fail(err, TSR_EIO, "frame at byte %" PRIu64 " (wire %u, raw %u): %s (expected "
                 "byte %" PRIu64 ")", f->offset, (unsigned)f->wire, (unsigned)f->raw, bad,
                 x->cur.offset);
        return conn_failed(c, &x->cur, &x->last);
    }
    if (!reserve(&c->raw, &c->raw_len, f->raw) ||
        (z && !reserve(&c->wire, &c->wire_len, f->wire))) {
        tsr_fail(err, TSR_ENOMEM, "frame at byte %" PRIu64 ": out of memory for %u bytes",
                 f->offset, (unsigned)f->raw);
        return conn_failed(c, &x->cur, &x->last);
    }
    uint8_t *payload = z ? c->wire : c->raw;
    if (k->get(k, payload, f->wire, u, &eof, err) != TSR_OK)
        return conn_failed(c, &x->cur, &x->last);
    if (eof)
        return CONN_GONE; /* half a frame: dropped, resent by the next sender */
    tsr_error ze;
    if (z && tsr_inflate(c->wire, f->wire, c->raw, f->raw, &ze) != TSR_OK) {
        tsr_fail(err, TSR_EIO, "frame at byte %" PRIu64 ": %s", f->offset, ze.msg);
        return conn_failed(c, &x->cur, &x->last);
    }
    uint32_t crc = tsr_crc32(0, c->raw, f->raw);
    if (crc != f->crc) {
        tsr_fail(err, TSR_EIO, "frame at byte %" PRIu64 ": crc mismatch (payload %08x, "
                 "frame says %08x)", f->offset, (unsigned)crc, (unsigned)f->crc);
        return conn_failed(c, &x->cur, &x->last);
    }
    if (c->out >= 0 && !c->scratch && write_payload(c, f, err) != TSR_OK)
        return conn_failed(c, &x->cur, &x->last);
    for (uint64_t left = c->o->rate > 0 ? f->raw : 0; left > 0;) {
        size_t piece = left < (uint64_t)c->bucket.cap ? (size_t)left : (size_t)c->bucket.cap;
        if (!tsr_bucket_take(&c->bucket, piece, c->o->stop)) {
            tsr_fail(err, TSR_EINTR, "interrupted");
            return conn_failed(c, &x->cur, &x->last);
        }
        left -= piece;
    }
    x->last = x->cur;
    x->cur.crc = tsr_crc32_combine(x->cur.crc, crc, f->raw);
    x->since = tsr_crc32_combine(x->since, crc, f->raw);
    x->cur.offset += f->raw;
    double t = tsr_mono_s();
    if (x->cur.offset - c->st.offset >= CHECKPOINT_BYTES || t - x->last_save >= CHECKPOINT_S) {
        if (keep(c, &x->cur, &x->last, err) != TSR_OK)
            return CONN_FAILED;
        x->last_save = t;
    }
    return CONN_NEXT;
}

/* The next frame, dispatched by its kind. The paced machine wants its next frame: if it is
 * not there yet, that is an underrun (the first frame of a connection is not due yet). */
static outcome
next_frame(ctl *c, conn *k, rx *x, tsr_error *err)
{
    uint8_t fh[TSR_FRAME_HEAD];
    bool starving = false, eof;
    double t0 = 0;
    unit u = {false, c->idle_s, -1, 0}; /* the frame: head and payload */
    if (c->o->rate > 0 && x->cur.offset > x->r && k->fd >= 0) {
        struct pollfd pf = {.fd = k->fd, .events = POLLIN};
        starving = poll(&pf, 1, 0) == 0;
        t0 = tsr_mono_s();
    }
    if (k->get(k, fh, sizeof fh, &u, &eof, err) != TSR_OK)
        return conn_failed(c, &x->cur, &x->last);
    if (eof)
        return CONN_GONE;
    if (starving) {
        x->underruns++;
        x->underrun_s += tsr_mono_s() - t0;
    }
    tsr_frame f;
    tsr_frame_decode(fh, &f);
    if (f.flags & ~(TSR_FRAME_DEFLATE | TSR_FRAME_ABORT | TSR_FRAME_TRAILER)) {
        tsr_fail(err, TSR_EIO, "frame at byte %" PRIu64 ": unknown flags 0x%x", f.offset,
                 (unsigned)f.flags);
        return conn_failed(c, &x->cur, &x->last);
    }
    if (f.flags & TSR_FRAME_ABORT)
        return on_abort(c, k, x, &f, &u, err);
    if (f.flags & TSR_FRAME_TRAILER)
        return on_trailer(c, x, &f, err);
    return on_data(c, k, x, &f, &u, err);
}

/* The header, and the answer: where this connection's bytes start (or a refusal). CONN_NEXT
 * when the frames may follow, with *h and *r filled. */
static outcome
serve_header(ctl *c, conn *k, tsr_header *h, uint64_t *r, tsr_error *err)
{
    uint8_t hb[TSR_HEADER_SIZE + TSR_HEADER_EXT];
    bool eof;
    unit u = {true, c->header_s, tsr_mono_s(), 0}; /* bounded from the connection's start */
    if (k->get(k, hb, TSR_HEADER_SIZE, &u, &eof, err) != TSR_OK)
        return CONN_FAILED;
    if (eof) {
        logf_(c, "a connection closed before sending a header");
        return CONN_DROPPED;
    }
    tsr_error herr;
    tsr_status hs = tsr_header_decode(hb, h, &herr);
    if (hs == TSR_OK && h->version == 2) { /* its extension, within the header's time */
        if (k->get(k, hb + TSR_HEADER_SIZE, TSR_HEADER_EXT, &u, &eof, err) != TSR_OK)
            return CONN_FAILED;
        if (eof) {
            logf_(c, "a connection closed before sending a whole header");
            return CONN_DROPPED;
        }
        hs = tsr_header_decode_ext(hb + TSR_HEADER_SIZE, h, &herr);
    }
    if (hs != TSR_OK) {
        /* Not our protocol: refuse this connection, keep serving. */
        k->answer(k, TSR_RESUME_REFUSED);
        logf_(c, "refused a connection: %s", herr.msg);
        return CONN_DROPPED;
    }
    *r = 0;
    if (h->flags & TSR_HEADER_PROFILE) { /* a measurement, never the job */
        c->scratch = true;
        if (!k->answer(k, 0)) {
            logf_(c, "the sender went away before the resume offset was answered");
            return CONN_DROPPED;
        }
        logf_(c, "a profile's stream: %" PRIu64 " bytes at %u bit, checked and dropped (not "
              "a job: the output and its state are left as they are)", h->total,
              (unsigned)h->depth);
        return CONN_NEXT;
    }
    if (resume_offset(c, h, r, err) != TSR_OK) {
        if (*r == TSR_RESUME_REFUSED)
            k->answer(k, TSR_RESUME_REFUSED);
        return CONN_FAILED;
    }
    if (!k->answer(k, *r)) {
        logf_(c, "the sender went away before the resume offset was answered");
        return CONN_DROPPED;
    }
    char fp[65];
    hex(fp, h->fingerprint, 32);
    logf_(c, "job %" PRId64 ": %" PRIu64 " x %" PRIu64 " at %u bit, %" PRIu64
          " bytes, fingerprint %.16s..., %s at byte %" PRIu64 "%s%s", c->jobs_done + 1, h->width,
          h->height, (unsigned)h->depth, h->total, fp, *r ? "resuming" : "starting", *r,
          c->numbered ? ", into " : "", c->numbered ? c->out_path : "");
    return CONN_NEXT;
}

/* One sender: its header and answer, then its frames until the trailer, an abort, a failure
 * or its going away. */
static outcome
serve(ctl *c, conn *k, tsr_error *err)
{
    rx x = {0};
    c->scratch = false;
    outcome oc = serve_header(c, k, &x.h, &x.r, err);
    if (oc != CONN_NEXT) {
        c->scratch = false;
        return oc;
    }
    x.at_r = x.cur = x.last = c->st; /* after resume_offset, which may start a new job */
    if (c->scratch) { /* a profile's: from 0, against nothing held */
        x.at_r = x.cur = x.last = (state){true, {0}, x.h.total, 0, 0};
        memcpy(x.cur.fp, x.h.fingerprint, 32);
    }
    x.last_save = tsr_mono_s();
    while ((oc = next_frame(c, k, &x, err)) == CONN_NEXT)
        ;
    if (c->scratch) { /* whatever a profile's stream did, the job is untouched: go on */
        if (oc == CONN_FAILED && err && err->status != TSR_OK)
            logf_(c, "a profile's stream failed (nothing recorded): %s", err->msg);
        else if (oc == CONN_GONE)
            logf_(c, "a profile's sender went away at byte %" PRIu64 " (nothing recorded)",
                  x.cur.offset);
        c->scratch = false;
        if (err)
            err->status = TSR_OK;
        return CONN_DROPPED;
    }
    if (oc != CONN_GONE)
        return oc;
    /* The sender went away mid-job: keep what was checked, wait for the next one. */
    if (keep(c, &x.cur, &x.last, err) != TSR_OK)
        return CONN_FAILED;
    logf_(c, "sender gone at byte %" PRIu64 " of %" PRIu64 " (%" PRIu64 " underruns); "
          "holding %" PRIu64 " for a resume", x.cur.offset, x.h.total, x.underruns,
          c->st.offset);
    return CONN_DROPPED;
}

/* ---- listening ---------------------------------------------------------------------------- */

static bool
is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    }
    return false;
}

static int
listen_on(ctl *c, tsr_error *err)
{
    char host[256], port[8];
    const char *spec = c->o->listen ? c->o->listen : "";
    if (!tsr_split_hostport(spec, host, sizeof host, port, sizeof port, 0)) {
        tsr_fail(err, TSR_EINVAL, "--listen %s: expected HOST:PORT (127.0.0.1:PORT)", spec);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        tsr_fail(err, TSR_EINVAL, "--listen %s: %s", spec, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    tsr_status st = TSR_EINVAL;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        if (!is_loopback(a->ai_addr)) {
            tsr_fail(err, TSR_EINVAL, "--listen %s: not a loopback address (the reference "
                     "controller listens on 127.0.0.1 or ::1 only)", spec);
            st = TSR_EINVAL;
            fd = -1;
            break;
        }
        if (fd >= 0)
            continue; /* bound already; still check the other addresses are loopback */
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        int one = 1;
        /* A restarted controller rebinds at once though the old connections linger. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 8) != 0) {
            tsr_fail(err, TSR_EIO, "--listen %s: %s", spec, strerror(errno));
            st = TSR_EIO;
            close(fd);
            fd = -1;
            continue;
        }
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        char name[INET6_ADDRSTRLEN] = "?";
        int p = 0;
        if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
            if (ss.ss_family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *)&ss;
                inet_ntop(AF_INET, &in->sin_addr, name, sizeof name);
                p = ntohs(in->sin_port);
            } else {
                struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
                inet_ntop(AF_INET6, &in->sin6_addr, name, sizeof name);
                p = ntohs(in->sin6_port);
            }
        }
        logf_(c, ss.ss_family == AF_INET6 ? "listening on [%s]:%d" : "listening on %s:%d",
              name, p);
    }
    freeaddrinfo(ai);
    if (fd < 0 && err && err->status == TSR_OK)
        tsr_fail(err, st, "--listen %s: cannot listen", spec);
    return fd;
}

tsr_status
tsr_controller_run(const tsr_controller_opts *o, tsr_error *err)
{
    ctl c = {.o = o, .out = -1};
    tsr_status st = TSR_OK;
    int lfd = -1;
    if (err)
        err->status = TSR_OK;
    if (o->jobs < 1)
        return tsr_fail(err, TSR_EINVAL, "--jobs %lld: must be at least 1", (long long)o->jobs);
    if (o->rate < 0 || o->rate != o->rate)
        return tsr_fail(err, TSR_EINVAL, "--rate: must be positive");
    if (o->stall_s < 0 || o->stall_s != o->stall_s)
        return tsr_fail(err, TSR_EINVAL, "--stall-timeout: must be positive");
    if (o->out && o->jobs > 1 && !is_numbered(o->out))
        return tsr_fail(err, TSR_EINVAL, "--jobs %lld -o %s: one file per job: put %%d in the "
                        "name, the job's number (plate-%%d.raw: plate-1.raw, plate-2.raw, ...)",
                        (long long)o->jobs, o->out);
    if (tsr_fault_parse(o->fault, &c.fault, err) != TSR_OK)
        return TSR_EINVAL;
    c.idle_s = o->stall_s > 0 ? o->stall_s : IDLE_TIMEOUT_S;
    c.header_s = c.idle_s < HEADER_TIMEOUT_S ? c.idle_s : HEADER_TIMEOUT_S;
    c.wire_cap = tsr_deflate_bound(TSR_FRAME_MAX_RAW);
    /* The bucket holds 1/20 s of the rate (at least 512 bytes); a frame is consumed in
     * pieces of at most that, so no burst beyond it ever passes. */
    tsr_bucket_init(&c.bucket, o->rate, o->rate / 20 > 512 ? o->rate / 20 : 512);
    if (o->out) {
        c.numbered = is_numbered(o->out);
        c.slot = 1;
        if ((st = slot_open(&c, err)) != TSR_OK)
            goto done;
        /* Restarted, numbered outputs go on after the jobs already complete (checked by
         * slot_open), job_done counting each. */
        if (c.numbered && complete(&c.st)) {
            logf_(&c, "job %" PRId64 " is complete in %s", c.slot, c.out_path);
            if ((st = job_done(&c, err)) != TSR_OK)
                goto done;
        }
        if (c.jobs_done >= o->jobs) {
            logf_(&c, "all %lld jobs are complete: nothing to receive", (long long)o->jobs);
            goto done;
        }
    }
    lfd = listen_on(&c, err);
    if (lfd < 0) {
        st = err ? err->status : TSR_EIO;
        goto done;
    }
    while (c.jobs_done < o->jobs) {
        if (stopped(&c)) {
            st = tsr_fail(err, TSR_EINTR, "interrupted");
            break;
        }
        struct pollfd pf = {.fd = lfd, .events = POLLIN};
        int r = poll(&pf, 1, 100);
        if (r <= 0)
            continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        conn k = {.get = sock_get, .answer = sock_answer, .c = &c, .fd = fd};
        outcome oc = serve(&c, &k, err);
        close(fd);
        if (oc == CONN_FAILED) {
            st = err && err->status != TSR_OK ? err->status : TSR_EIO;
            break;
        }
        if (oc == CONN_DONE && (st = job_done(&c, err)) != TSR_OK)
            break;
    }
done:
    if (lfd >= 0)
        close(lfd);
    slot_close(&c);
    free(c.out_path);
    free(c.state_path);
    free(c.state_tmp);
    free(c.wire);
    free(c.raw);
    return st;
}

/* ---- the reader over bytes in memory (fuzzing, tests) ------------------------------------- */

struct tsr_ctl_mem {
    tsr_controller_opts o;
    ctl c;
};

tsr_ctl_mem *
tsr_ctl_mem_new(int out_fd, const tsr_controller_opts *o)
{
    tsr_ctl_mem *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (o)
        m->o = *o;
    m->o.out = NULL;
    m->o.jobs = 1;
    m->c.o = &m->o;
    m->c.out = out_fd;
    m->c.out_path = out_fd >= 0 ? strdup("(memory output)") : NULL; /* for messages only */
    if (out_fd >= 0 && !m->c.out_path) {
        free(m);
        return NULL;
    }
    m->c.idle_s = m->c.header_s = HEADER_TIMEOUT_S; /* unused: memory never waits */
    m->c.wire_cap = tsr_deflate_bound(TSR_FRAME_MAX_RAW);
    tsr_bucket_init(&m->c.bucket, 0, 0);
    return m;
}

int
tsr_ctl_mem_serve(tsr_ctl_mem *m, const uint8_t *buf, size_t n, uint64_t *answered,
                  tsr_error *err)
{
    conn k = {.get = mem_get, .answer = mem_answer, .c = &m->c, .fd = -1, .buf = buf, .len = n};
    if (err)
        err->status = TSR_OK;
    outcome oc = serve(&m->c, &k, err);
    *answered = k.answered;
    if (oc == CONN_DONE)
        m->c.jobs_done++;
    return oc == CONN_DONE ? 0 : oc == CONN_DROPPED ? 1 : 2;
}

bool
tsr_ctl_mem_state(const tsr_ctl_mem *m, uint64_t *offset, uint64_t *total, uint32_t *crc)
{
    *offset = m->c.st.offset;
    *total = m->c.st.total;
    *crc = m->c.st.crc;
    return m->c.st.valid;
}

void
tsr_ctl_mem_free(tsr_ctl_mem *m)
{
    if (!m)
        return;
    free(m->c.out_path);
    free(m->c.wire);
    free(m->c.raw);
    free(m);
}
