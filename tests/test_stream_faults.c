/* stream_faults: sinks under injected faults (stream/fault.c, tsr_sink_opts.fault). For raw and
 * framed files and pipes, a full disk, a dead device or a vanished reader at random bytes of
 * the output (and at the header's and frames' edges), with and without random short writes:
 * the failure comes back as TSR_EIO naming the sink and the errno; the delivered offset B is
 * exact (the medium holds exactly the samples before B, framed files end on a whole frame and
 * then an abort frame where the medium has room for it); never a trailer; and a resume at B
 * completes the job byte-identically. TSR_FAULT_SEED=N picks another set of points (the
 * default set is fixed, so a failure replays). */
#include <criterion/criterion.h>

#include "helpers/helpers.h"
#include "stream/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TOTAL ((size_t)1048576 + 4321)
#define PIECE_MAX 200000 /* the largest piece handed to the sink at once */
#define POINTS 24 /* random fault points per sink and kind */

TestSuite(stream_faults, .init = th_dir_make, .fini = th_dir_remove);

/* Samples that deflate well in places and not at all in others, so deflated sinks send both
 * kinds of frames. */
static uint8_t *
reference(void)
{
    uint8_t *b = malloc(TOTAL);
    uint64_t s = 7;
    for (size_t i = 0; i < TOTAL; i++)
        b[i] = (i / 150000) % 2 ? (uint8_t)th_rand(&s) : (uint8_t)(i / 97 % 251);
    return b;
}

typedef enum sinkkind { RAW_FILE, FRAMED_FILE, DEFLATE_FILE, RAW_PIPE, FRAMED_PIPE } sinkkind;

static const char *const KIND_NAME[] = {"raw file", "framed file", "deflated framed file",
                                        "raw pipe", "framed pipe"};

static bool
is_pipe(sinkkind k)
{
    return k == RAW_PIPE || k == FRAMED_PIPE;
}

static bool
is_framed(sinkkind k)
{
    return k != RAW_FILE && k != RAW_PIPE;
}

/* Where a sink writes: a file in the scratch folder, or stdout redirected to a pipe. */
typedef struct target {
    sinkkind kind;
    const char *path;
    th_stdout_pipe pipe;
} target;

static const char *
target_open(target *t, sinkkind kind, const char *name)
{
    memset(t, 0, sizeof *t);
    t->kind = kind;
    if (!is_pipe(kind)) {
        t->path = th_in_dir(name);
        return t->path;
    }
    th_stdout_pipe_start(&t->pipe, 2 * TOTAL + 4096);
    return "-";
}

/* After the sink is closed: the bytes the medium holds (malloc'd), *n their count. */
static uint8_t *
target_bytes(target *t, size_t *n)
{
    if (!is_pipe(t->kind)) {
        uint8_t *b = th_read_file(t->path, n);
        cr_assert_not_null(b);
        return b;
    }
    th_stdout_pipe_finish(&t->pipe);
    *n = t->pipe.n;
    return t->pipe.got;
}

/* Write ref[start, TOTAL) in random pieces: plain writes, or donated page-aligned copies for a
 * raw pipe (vmsplice). The first failure's status; *err its message. */
static tsr_status
feed(tsr_sink *s, sinkkind kind, const uint8_t *ref, uint64_t start, uint64_t *rng,
     tsr_error *err)
{
    size_t mapcap = PIECE_MAX + 8192;
    uint8_t *m = NULL;
    if (kind == RAW_PIPE)
        m = mmap(NULL, mapcap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    tsr_status st = TSR_OK;
    for (uint64_t at = start; at < TOTAL && st == TSR_OK;) {
        size_t n = 1 + (size_t)(th_rand(rng) % PIECE_MAX);
        if (n > TOTAL - at)
            n = TOTAL - at;
        if (m) {
            size_t skew = (size_t)(th_rand(rng) % 3) * 1000; /* unaligned heads too */
            memcpy(m + skew, ref + at, n);
            st = tsr_sink_write_donate(s, m + skew, n, err);
        } else {
            st = tsr_sink_write(s, ref + at, n, err);
        }
        at += n;
    }
    if (m)
        munmap(m, mapcap);
    return st;
}

/* The byte offsets where each unit (header, frames, trailer) of a transcript ends. */
static size_t
unit_ends(const uint8_t *f, size_t n, uint64_t *ends, size_t cap)
{
    size_t k = 0, at = TSR_HEADER_SIZE;
    ends[k++] = at;
    while (at + TSR_FRAME_HEAD <= n && k < cap) {
        tsr_frame fr;
        tsr_frame_decode(f + at, &fr);
        at += TSR_FRAME_HEAD + fr.wire;
        ends[k++] = at;
    }
    return k;
}

typedef struct outcome {
    uint64_t delivered; /* B: tsr_sink_offset after the failure (TOTAL when none) */
    bool failed;
    char msg[sizeof(((tsr_error *)0)->msg)];
} outcome;

/* One run with fault spec `fault` (may be NULL): open, feed, finish or abort, close, then check
 * what the medium holds against the rules in the file comment. */
static outcome
run_faulty(sinkkind kind, const char *fault, uint64_t seed, const uint8_t *ref)
{
    tsr_header h = th_header(TOTAL);
    target t;
    const char *spec = target_open(&t, kind, "a.out");
    tsr_sink_opts o = {.framed = is_framed(kind), .deflate = kind == DEFLATE_FILE,
                       .header = is_framed(kind) ? &h : NULL, .fault = fault};
    tsr_error err = {0};
    outcome r = {0};
    uint64_t rng = seed;
    tsr_sink *s = tsr_sink_open_ex(spec, &o, &err);
    tsr_status st = s ? feed(s, kind, ref, 0, &rng, &err) : err.status;
    if (s && st == TSR_OK)
        st = tsr_sink_finish(s, &err);
    r.failed = st != TSR_OK;
    r.delivered = s ? tsr_sink_offset(s) : 0;
    if (r.failed) {
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        cr_assert_eq(st, TSR_EIO, "%s %s: status %d (%s)", KIND_NAME[kind], fault, st, err.msg);
        cr_assert(strstr(err.msg, ": ") && (strstr(err.msg, strerror(ENOSPC)) ||
                  strstr(err.msg, strerror(EIO)) || strstr(err.msg, strerror(EPIPE))),
                  "%s %s: message '%s'", KIND_NAME[kind], fault, err.msg);
        if (s)
            tsr_sink_abort(s, err.msg, NULL);
    }
    tsr_error cerr = {0};
    tsr_status cst = tsr_sink_close(s, &cerr);
    if (!r.failed)
        cr_assert_eq(cst, TSR_OK, "%s %s: close: %s", KIND_NAME[kind], fault, cerr.msg);

    size_t n = 0;
    uint8_t *got = target_bytes(&t, &n);
    if (!is_framed(kind)) {
        /* Raw: the medium holds exactly the samples counted, and they are right. */
        cr_assert_eq(n, r.delivered, "%s %s: holds %zu bytes, delivered says %llu",
                     KIND_NAME[kind], fault, n, (unsigned long long)r.delivered);
        cr_assert(memcmp(got, ref, n) == 0, "%s %s: wrong bytes", KIND_NAME[kind], fault);
    } else if (n >= TSR_HEADER_SIZE) {
        /* Framed: whole frames up to B (a pipe may end inside the next one), then an abort
         * frame or nothing; a trailer only when nothing failed. */
        th_transcript p = th_parse_transcript(got, n, is_pipe(kind));
        cr_assert_eq(p.bytes, r.delivered, "%s %s", KIND_NAME[kind], fault);
        cr_assert(memcmp(p.data, ref, p.bytes) == 0, "%s %s: wrong samples", KIND_NAME[kind],
                  fault);
        cr_assert_eq(p.trailer, !r.failed, "%s %s: trailer", KIND_NAME[kind], fault);
        if (!r.failed)
            cr_assert_eq(p.trailer_crc, tsr_crc32(0, ref, TOTAL));
        if (p.abort) {
            cr_assert_eq(p.abort_offset, r.delivered);
            cr_assert_str_eq(p.reason, r.msg);
        }
        if (r.failed && kind != FRAMED_PIPE && fault && strncmp(fault, "enospc@", 7) == 0) {
            /* A full disk: cut back to the last whole frame, the abort frame goes in if the
             * medium has room for it. */
            uint64_t cap = strtoull(fault + 7, NULL, 10);
            size_t whole = n - (p.abort ? TSR_FRAME_HEAD + strlen(p.reason) : 0);
            cr_assert_eq(p.abort, whole + TSR_FRAME_HEAD + strlen(r.msg) <= cap,
                         "%s %s: abort frame %s though %zu + its %zu bytes %s %llu",
                         KIND_NAME[kind], fault, p.abort ? "written" : "missing", whole,
                         TSR_FRAME_HEAD + strlen(r.msg), p.abort ? ">" : "<=",
                         (unsigned long long)cap);
        }
        if (is_pipe(kind) && r.failed)
            cr_assert(!p.abort, "%s %s: an abort frame after a failed pipe write",
                      KIND_NAME[kind], fault);
        free(p.data);
    } else {
        cr_assert(r.failed && r.delivered == 0, "%s %s: %zu bytes", KIND_NAME[kind], fault, n);
    }
    free(got);
    return r;
}

/* Resume at B without faults; the two runs together must be the whole job, byte for byte. */
static void
resume_and_check(sinkkind kind, uint64_t b, uint64_t seed, const uint8_t *ref, const char *why)
{
    tsr_header h = th_header(TOTAL);
    target t;
    /* Raw files resume in place; framed files start a new transcript (docs/streaming.md). */
    const char *spec = target_open(&t, kind, kind == RAW_FILE ? "a.out" : "b.out");
    tsr_sink_opts o = {.start = b, .framed = is_framed(kind), .deflate = kind == DEFLATE_FILE,
                       .header = is_framed(kind) ? &h : NULL};
    tsr_error err = {0};
    uint64_t rng = seed ^ 0xabcdef;
    tsr_sink *s = tsr_sink_open_ex(spec, &o, &err);
    cr_assert_not_null(s, "%s resume at %llu: %s", KIND_NAME[kind], (unsigned long long)b,
                       err.msg);
    cr_assert_eq(feed(s, kind, ref, b, &rng, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_sink_finish(s, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_sink_close(s, &err), TSR_OK, "%s", err.msg);
    size_t n = 0;
    uint8_t *got = target_bytes(&t, &n);
    if (kind == RAW_FILE) {
        cr_assert_eq(n, TOTAL, "%s: resumed file holds %zu bytes", why, n);
        cr_assert(memcmp(got, ref, TOTAL) == 0, "%s: resumed file differs", why);
    } else if (kind == RAW_PIPE) {
        cr_assert_eq(n, TOTAL - b);
        cr_assert(memcmp(got, ref + b, n) == 0, "%s: resumed stream differs", why);
    } else {
        th_transcript p = th_parse_transcript(got, n, false);
        cr_assert_eq(p.first, b, "%s", why);
        cr_assert(p.trailer && !p.abort, "%s", why);
        cr_assert_eq(p.bytes, TOTAL - b);
        cr_assert(memcmp(p.data, ref + b, p.bytes) == 0, "%s: resumed samples differ", why);
        cr_assert_eq(p.trailer_crc, tsr_crc32(0, ref + b, TOTAL - b));
        free(p.data);
    }
    free(got);
}

static uint64_t
base_seed(void)
{
    const char *e = getenv("TSR_FAULT_SEED");
    return e && *e ? strtoull(e, NULL, 10) : 20261122;
}

/* Faults of one errno on one sink kind: at the edges of the units of a clean transcript (the
 * header's first and last byte, a frame head's, a payload's) and at random bytes. */
static void
sweep(sinkkind kind, const char *errname)
{
    uint8_t *ref = reference();
    uint64_t seed = base_seed() * 31 + (uint64_t)kind;
    /* The medium's length of a clean run with the same pieces (the same seed). */
    outcome clean = run_faulty(kind, NULL, seed, ref);
    cr_assert(!clean.failed);
    uint64_t len = TOTAL, ends[64];
    size_t nends = 0;
    if (is_framed(kind)) {
        if (!is_pipe(kind)) {
            size_t n = 0;
            uint8_t *f = th_read_file(th_in_dir("a.out"), &n);
            len = n;
            nends = unit_ends(f, n, ends, 64);
            free(f);
        } else {
            len = TOTAL + TOTAL / 4; /* about: frames of a pipe are not kept */
        }
    }
    uint64_t points[POINTS + 3 * 64 + 4];
    size_t np = 0;
    points[np++] = 0;
    points[np++] = 1;
    for (size_t i = 0; i < nends && i < 6; i++)
        for (int d = -1; d <= 1; d++)
            points[np++] = ends[i] + (uint64_t)(int64_t)d;
    uint64_t rng = seed;
    for (int i = 0; i < POINTS; i++)
        points[np++] = th_rand(&rng) % len;
    int faults = 0, completed = 0;
    for (size_t i = 0; i < np; i++) {
        for (int shorts = 0; shorts < 2; shorts++) {
            char spec[96], why[160];
            snprintf(spec, sizeof spec, "%s@%llu%s", errname, (unsigned long long)points[i],
                     shorts ? ",short:5" : "");
            snprintf(why, sizeof why, "%s, fault %s", KIND_NAME[kind], spec);
            /* The same pieces as the clean run, so the edges above are edges here too. */
            outcome r = run_faulty(kind, spec, seed, ref);
            if (r.failed) {
                faults++;
                resume_and_check(kind, r.delivered, seed + i, ref, why);
            } else {
                completed++;
            }
        }
    }
    cr_assert_gt(faults, (int)np, "%s %s: only %d of %zu runs hit the fault", KIND_NAME[kind],
                 errname, faults, 2 * np);
    cr_log_info("%s %s: %d faulted runs resumed, %d completed", KIND_NAME[kind], errname, faults,
                completed);
    free(ref);
}

Test(stream_faults, raw_file_full_disk) { sweep(RAW_FILE, "enospc"); }
Test(stream_faults, raw_file_dead_device) { sweep(RAW_FILE, "eio"); }
Test(stream_faults, framed_file_full_disk) { sweep(FRAMED_FILE, "enospc"); }
Test(stream_faults, framed_file_dead_device) { sweep(FRAMED_FILE, "eio"); }
Test(stream_faults, deflated_framed_file_full_disk) { sweep(DEFLATE_FILE, "enospc"); }
Test(stream_faults, raw_pipe_reader_gone) { sweep(RAW_PIPE, "epipe"); }
Test(stream_faults, framed_pipe_reader_gone) { sweep(FRAMED_PIPE, "epipe"); }

Test(stream_faults, short_writes_alone_change_nothing)
{
    uint8_t *ref = reference();
    for (int k = RAW_FILE; k <= FRAMED_PIPE; k++) {
        for (int seed = 1; seed <= 3; seed++) {
            char spec[32];
            snprintf(spec, sizeof spec, "short:%d", seed);
            outcome r = run_faulty((sinkkind)k, spec, (uint64_t)seed, ref);
            cr_assert(!r.failed, "%s %s: %s", KIND_NAME[k], spec, r.msg);
            cr_assert_eq(r.delivered, TOTAL);
        }
    }
    free(ref);
}

Test(stream_faults, fault_specs_are_checked)
{
    tsr_header h = th_header(TOTAL);
    const char *bad[] = {"enospc", "enospc@", "enospc@x", "nospace@5", "short:", "short:1x",
                         "enospc@5,eio@6", "enospc@5,", "@5", "enospc@99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsr_error err = {0};
        tsr_sink_opts o = {.header = &h, .fault = bad[i]};
        tsr_sink *s = tsr_sink_open_ex("null", &o, &err);
        cr_assert_null(s, "%s accepted", bad[i]);
        cr_assert_eq(err.status, TSR_EINVAL);
        cr_assert(strstr(err.msg, "TSR_FAULT=") && strstr(err.msg, bad[i]), "%s", err.msg);
    }
}
