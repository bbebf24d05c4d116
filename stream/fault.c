/* stream: the sink fault hook. A sink opened with tsr_sink_opts.fault (the CLI takes it from
 * TSR_FAULT) passes every write(2), send(2) and vmsplice(2) through tsr_fault_allow, which can
 * shorten the call or fail it the way a full disk, a vanished reader or a dead device would, at
 * an exact byte of the sink's output. docs/reliability.md ("Sink faults") lists what the tests
 * inject and what a user sees.
 *
 * The position is the byte of the medium the next call starts at (header and frame heads
 * included), so "enospc@N" is a device that holds exactly N bytes: it keeps taking what fits,
 * then fails; cutting the file back (tsr_fault_seek) makes room again. The other errors are a
 * dead end: from byte N on every call fails, whatever happened in between. */
#include "stream/stream_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int err;
} KINDS[] = {
    {"enospc", ENOSPC}, {"epipe", EPIPE}, {"eio", EIO}, {"reset", ECONNRESET},
};

static bool
parse_u64(const char *s, size_t n, uint64_t *v)
{
    if (n == 0 || n > 19)
        return false;
    uint64_t r = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        r = r * 10 + (uint64_t)(s[i] - '0');
    }
    *v = r;
    return true;
}

/* One item: KIND@BYTE, "short" or "short:SEED". */
static bool
parse_item(const char *s, size_t n, tsr_fault *f)
{
    if (n >= 5 && strncmp(s, "short", 5) == 0) {
        f->shorts = true;
        f->rng = 0x9e3779b97f4a7c15u;
        if (n == 5)
            return true;
        uint64_t seed;
        if (s[5] != ':' || !parse_u64(s + 6, n - 6, &seed))
            return false;
        f->rng ^= seed * 0xbf58476d1ce4e5b9u;
        return true;
    }
    const char *at = memchr(s, '@', n);
    if (!at || f->err)
        return false; /* one failure per sink */
    size_t kn = (size_t)(at - s);
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        if (kn == strlen(KINDS[k].name) && strncmp(s, KINDS[k].name, kn) == 0) {
            f->err = KINDS[k].err;
            return parse_u64(at + 1, n - kn - 1, &f->at);
        }
    }
    return false;
}

tsr_status
tsr_fault_parse(const char *spec, tsr_fault *f, tsr_error *err)
{
    memset(f, 0, sizeof *f);
    if (!spec || !*spec)
        return TSR_OK;
    for (const char *p = spec;;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!parse_item(p, n, f)) {
            memset(f, 0, sizeof *f);
            return tsr_fail(err, TSR_EINVAL, "TSR_FAULT=%s: expected items KIND@BYTE (KIND: "
                            "enospc, epipe, eio, reset; one of them) and short[:SEED], "
                            "separated by commas", spec);
        }
        if (!end)
            break;
        p = end + 1;
    }
    f->on = true;
    return TSR_OK;
}

static uint64_t
next_rand(tsr_fault *f)
{
    /* splitmix64: a fixed, seedable sequence, so a failing run can be replayed. */
    uint64_t z = (f->rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

size_t
tsr_fault_allow(tsr_fault *f, size_t n)
{
    if (!f->on || n == 0)
        return n;
    if (f->err) {
        bool dead = f->err != ENOSPC && f->failed;
        if (dead || f->pos >= f->at) {
            f->failed = true;
            errno = f->err;
            return 0;
        }
        if ((uint64_t)n > f->at - f->pos)
            n = (size_t)(f->at - f->pos); /* what still fits, then the error on the next call */
    }
    if (f->shorts && n > 1)
        n = 1 + (size_t)(next_rand(f) % n);
    return n;
}

void
tsr_fault_took(tsr_fault *f, size_t k)
{
    f->pos += k;
}

void
tsr_fault_seek(tsr_fault *f, uint64_t pos)
{
    f->pos = pos;
}
