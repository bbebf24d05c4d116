/* controller: the reference controller's reader (controller/controller.c) over bytes in memory
 * (tsr_ctl_mem_*, the same code the socket loop runs): what it holds, answers and reports
 * for complete, resumed, aborted, cut, reordered and corrupted streams, and what it vouches
 * for: never a job whose trailer did not match. The socket side is
 * tested in test_stream_sink.c and tests/cli/stream_*.sh. */
#include <criterion/criterion.h>

#include "controller/controller.h"
#include "stream/stream_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOTAL 3000

/* A transcript being built: header, then frames. */
typedef struct tx {
    uint8_t b[16384];
    size_t n;
    uint32_t since; /* crc of the data frames so far */
} tx;

static uint8_t data[TOTAL];

static void
init_data(void)
{
    for (int i = 0; i < TOTAL; i++)
        data[i] = (uint8_t)(i * 7 + i / 13);
}

TestSuite(controller, .init = init_data);

static void
header(tx *t, uint8_t fp0)
{
    tsr_header h = {.version = 1, .depth = 8, .width = TOTAL, .height = 1,
                    .swath_width = TOTAL, .total = TOTAL};
    h.fingerprint[0] = fp0;
    tsr_header_encode(&h, t->b);
    t->n = TSR_HEADER_SIZE;
    t->since = 0;
}

static void
frame(tx *t, uint64_t off, uint32_t len, uint32_t flags, const void *payload)
{
    tsr_frame f = {off, len, len, tsr_crc32(0, payload, len), flags};
    if (flags & TSR_FRAME_TRAILER)
        f = (tsr_frame){off, 0, 0, t->since, flags};
    else if (!(flags & TSR_FRAME_ABORT))
        t->since = tsr_crc32_combine(t->since, f.crc, len);
    tsr_frame_encode(&f, t->b + t->n);
    t->n += TSR_FRAME_HEAD;
    if (f.wire)
        memcpy(t->b + t->n, payload, f.wire);
    t->n += f.wire;
}

/* data[from, to) in frames of `step` */
static void
frames(tx *t, uint64_t from, uint64_t to, uint32_t step)
{
    for (uint64_t o = from; o < to; o += step)
        frame(t, o, (uint32_t)(to - o < step ? to - o : step), 0, data + o);
}

typedef struct run {
    int rc;
    uint64_t answered, offset, total;
    uint32_t crc;
    bool valid;
    tsr_error err;
} run;

static run
serve(tsr_ctl_mem *m, const tx *t)
{
    run r = {0};
    r.rc = tsr_ctl_mem_serve(m, t->b, t->n, &r.answered, &r.err);
    r.valid = tsr_ctl_mem_state(m, &r.offset, &r.total, &r.crc);
    return r;
}

static void
assert_output(int fd, uint64_t n)
{
    uint8_t got[TOTAL];
    cr_assert_eq(pread(fd, got, n, 0), (ssize_t)n);
    cr_assert(memcmp(got, data, n) == 0, "the output's first %llu bytes", (unsigned long long)n);
}

Test(controller, a_whole_job_is_held_and_its_output_is_the_samples)
{
    int fd = memfd_create("ctl", 0);
    tsr_ctl_mem *m = tsr_ctl_mem_new(fd, NULL);
    tx t;
    header(&t, 1);
    frames(&t, 0, TOTAL, 700);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    cr_assert_eq(r.answered, 0);
    cr_assert(r.valid && r.offset == TOTAL && r.total == TOTAL);
    cr_assert_eq(r.crc, tsr_crc32(0, data, TOTAL));
    struct stat sb;
    fstat(fd, &sb);
    cr_assert_eq(sb.st_size, TOTAL);
    assert_output(fd, TOTAL);
    tsr_ctl_mem_free(m);
    close(fd);
}

Test(controller, a_cut_stream_is_held_to_its_last_whole_frame_and_resumed_there)
{
    int fd = memfd_create("ctl", 0);
    tsr_ctl_mem *m = tsr_ctl_mem_new(fd, NULL);
    tx t;
    header(&t, 2);
    frames(&t, 0, 1400, 700);
    frame(&t, 1400, 700, 0, data + 1400);
    t.n -= 300; /* half the third frame */
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 1, "a sender gone is not a failure: %s", r.err.msg);
    cr_assert_eq(r.offset, 1400);
    /* the next connection is answered 1400 and completes from there */
    header(&t, 2);
    frames(&t, 1400, TOTAL, 500);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    r = serve(m, &t);
    cr_assert_eq(r.answered, 1400);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    cr_assert_eq(r.crc, tsr_crc32(0, data, TOTAL));
    assert_output(fd, TOTAL);
    /* a different design while nothing is half done starts over */
    header(&t, 3);
    frames(&t, 0, 10, 10);
    r = serve(m, &t);
    cr_assert_eq(r.answered, 0);
    cr_assert_eq(r.offset, 10);
    tsr_ctl_mem_free(m);
    close(fd);
}

Test(controller, a_different_design_is_refused_while_one_is_half_held)
{
    tsr_ctl_mem *m = tsr_ctl_mem_new(-1, NULL);
    tx t;
    header(&t, 4);
    frames(&t, 0, 1000, 1000);
    cr_assert_eq(serve(m, &t).rc, 1);
    header(&t, 5);
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 2);
    cr_assert_eq(r.answered, TSR_RESUME_REFUSED);
    cr_assert(strstr(r.err.msg, "refused a job") && strstr(r.err.msg, "holds 1000 of 3000"),
              "%s", r.err.msg);
    cr_assert_eq(r.offset, 1000, "what it held is kept");
    tsr_ctl_mem_free(m);
}

Test(controller, an_abort_holds_the_job_and_the_senders_return_resumes_it)
{
    char *logbuf = NULL;
    size_t loglen = 0;
    FILE *log = open_memstream(&logbuf, &loglen);
    tsr_controller_opts o = {.log = log};
    int fd = memfd_create("ctl", 0);
    tsr_ctl_mem *m = tsr_ctl_mem_new(fd, &o);
    tx t;
    header(&t, 6);
    frames(&t, 0, 1000, 500);
    const char *why = "interrupted by SIGINT";
    frame(&t, 1000, (uint32_t)strlen(why), TSR_FRAME_ABORT, why);
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 1, "an abort is not a failure: %s", r.err.msg);
    cr_assert_eq(r.offset, 1000, "what arrived is held");
    fflush(log);
    cr_assert(strstr(logbuf, "the sender aborted the job at byte 1000: interrupted by SIGINT\n"),
              "%s", logbuf);
    cr_assert(strstr(logbuf, "holding 1000 of 3000 bytes; waiting for the sender"), "%s", logbuf);
    /* the sender comes back: answered 1000, completes */
    header(&t, 6);
    frames(&t, 1000, TOTAL, 700);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    r = serve(m, &t);
    cr_assert_eq(r.answered, 1000);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    assert_output(fd, TOTAL);
    tsr_ctl_mem_free(m);
    fclose(log);
    free(logbuf);
    close(fd);
}

Test(controller, exit_on_abort_fails_the_job_and_names_its_offset_and_what_is_held)
{
    tsr_controller_opts o = {.exit_on_abort = true};
    tsr_ctl_mem *m = tsr_ctl_mem_new(-1, &o);
    tx t;
    header(&t, 6);
    frames(&t, 0, 1000, 500);
    const char *why = "out.raw: No space left on device";
    frame(&t, 1000, (uint32_t)strlen(why), TSR_FRAME_ABORT, why);
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 2);
    cr_assert_str_eq(r.err.msg, "the sender aborted the job at byte 1000: out.raw: No space "
                     "left on device");
    cr_assert_eq(r.offset, 1000);
    /* an abort whose offset is not the next byte: both are named */
    header(&t, 6);
    frames(&t, 1000, 1500, 500);
    frame(&t, 200, (uint32_t)strlen(why), TSR_FRAME_ABORT, why);
    r = serve(m, &t);
    cr_assert_eq(r.rc, 2);
    cr_assert(strstr(r.err.msg, "aborted the job at byte 200 (1500 bytes held)"), "%s",
              r.err.msg);
    tsr_ctl_mem_free(m);
}

Test(controller, an_abort_reason_is_printed_escaped)
{
    /* ESC sequences, CR/LF (a forged log line), a backslash, DEL, a C1 CSI (U+009B), a bidi
     * override (U+202E), a stray continuation byte; UTF-8 text stays as it is */
    const char why[] = "\x1b[2J\x1b[31mred\r\ntessera controller: job 1 complete\\ \x7f"
                       "\xc2\x9b\xe2\x80\xae \x80 Pl\xc3\xa4tte";
    const char *want = "the sender aborted the job at byte 0: \\x1b[2J\\x1b[31mred\\x0d\\x0a"
                       "tessera controller: job 1 complete\\x5c \\x7f\\xc2\\x9b\\xe2\\x80\\xae "
                       "\\x80 Pl\xc3\xa4tte";
    char *logbuf = NULL;
    size_t loglen = 0;
    FILE *log = open_memstream(&logbuf, &loglen);
    tsr_controller_opts o[2] = {{.log = log}, {.exit_on_abort = true}};
    for (int i = 0; i < 2; i++) {
        tsr_ctl_mem *m = tsr_ctl_mem_new(-1, &o[i]);
        tx t;
        header(&t, 9);
        frame(&t, 0, (uint32_t)strlen(why), TSR_FRAME_ABORT, why);
        run r = serve(m, &t);
        cr_assert_eq(r.rc, i ? 2 : 1);
        if (i)
            cr_assert_str_eq(r.err.msg, want);
        tsr_ctl_mem_free(m);
    }
    fclose(log);
    cr_assert(strstr(logbuf, want), "%s", logbuf);
    cr_assert(!strchr(logbuf, '\r') && !strchr(logbuf, '\x1b'), "%s", logbuf);
    free(logbuf);
}

Test(controller, a_trailer_crc_that_does_not_match_never_completes_the_job)
{
    int fd = memfd_create("ctl", 0);
    tsr_ctl_mem *m = tsr_ctl_mem_new(fd, NULL);
    tx t;
    header(&t, 10);
    frames(&t, 0, 1000, 500);
    cr_assert_eq(serve(m, &t).rc, 1);
    /* the rest arrives, every frame right, but the trailer disowns them */
    header(&t, 10);
    frames(&t, 1000, TOTAL, 500);
    t.since ^= 0x40;
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 2);
    cr_assert(strstr(r.err.msg, "does not match") && strstr(r.err.msg, "not complete"), "%s",
              r.err.msg);
    cr_assert_eq(r.offset, 1000, "held back to where that connection began, not %llu",
                 (unsigned long long)r.offset);
    /* a restart is not answered total, so a bare trailer cannot complete it */
    header(&t, 10);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    r = serve(m, &t);
    cr_assert_eq(r.answered, 1000);
    cr_assert_eq(r.rc, 2);
    cr_assert_eq(r.offset, 1000);
    /* the bytes re-sent with a true trailer complete it */
    header(&t, 10);
    frames(&t, 1000, TOTAL, 500);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    r = serve(m, &t);
    cr_assert_eq(r.answered, 1000);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    assert_output(fd, TOTAL);
    /* a complete job stays complete when a bare trailer with a wrong crc comes */
    header(&t, 10);
    t.since = 1;
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    r = serve(m, &t);
    cr_assert_eq(r.answered, TOTAL);
    cr_assert_eq(r.rc, 2);
    cr_assert_eq(r.offset, TOTAL);
    tsr_ctl_mem_free(m);
    close(fd);
}

Test(controller, all_frames_without_a_trailer_are_not_a_complete_job)
{
    tsr_ctl_mem *m = tsr_ctl_mem_new(-1, NULL);
    tx t;
    header(&t, 11);
    frames(&t, 0, TOTAL, 1000);
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 1);
    cr_assert_eq(r.offset, 2000, "the last frame counts as missing until a trailer checks it");
    header(&t, 11);
    frames(&t, 2000, TOTAL, 1000);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    r = serve(m, &t);
    cr_assert_eq(r.answered, 2000);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    cr_assert_eq(r.crc, tsr_crc32(0, data, TOTAL));
    tsr_ctl_mem_free(m);
}

Test(controller, bad_frames_fail_naming_the_frame_and_keep_what_was_checked)
{
    struct {
        const char *name, *msg;
    } cases[] = {
        {"gap", "frame at byte 900 (wire 100, raw 100): not the next byte (expected byte 700)"},
        {"crc", "frame at byte 700: crc mismatch"},
        {"past the end", "runs past the end of the job"},
        {"flags", "frame at byte 700: unknown flags 0x10"},
        {"trailer early", "trailer at byte 700 (lengths 0/0): the job ends at 3000 and 700 "
                          "bytes are held"},
        {"trailer crc", "does not match"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsr_ctl_mem *m = tsr_ctl_mem_new(-1, NULL);
        tx t;
        header(&t, 7);
        frames(&t, 0, 700, 700);
        switch (i) {
        case 0: frame(&t, 900, 100, 0, data + 900); break;
        case 1:
            frame(&t, 700, 100, 0, data + 700);
            t.b[t.n - 1] ^= 1;
            break;
        case 2: frame(&t, 700, TOTAL, 0, data); break;
        case 3: frame(&t, 700, 100, 16, data + 700); break;
        case 4: frame(&t, 700, 0, TSR_FRAME_TRAILER, ""); break;
        case 5:
            frames(&t, 700, TOTAL, 1000);
            t.since ^= 1;
            frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
            break;
        }
        run r = serve(m, &t);
        cr_assert_eq(r.rc, 2, "%s", cases[i].name);
        cr_assert(strstr(r.err.msg, cases[i].msg), "%s: %s", cases[i].name, r.err.msg);
        cr_assert_eq(r.offset, i == 5 ? 0 : 700, "%s: holds %llu", cases[i].name,
                     (unsigned long long)r.offset);
        tsr_ctl_mem_free(m);
    }
}

Test(controller, a_header_that_is_not_ours_is_refused_and_serving_goes_on)
{
    tsr_ctl_mem *m = tsr_ctl_mem_new(-1, NULL);
    tx t;
    header(&t, 8);
    t.b[0] = 'X';
    run r = serve(m, &t);
    cr_assert_eq(r.rc, 1);
    cr_assert_eq(r.answered, TSR_RESUME_REFUSED);
    cr_assert(!r.valid);
    tsr_ctl_mem_free(m);
}

/* A log the controller writes into, read back as a string. */
typedef struct logcap {
    char *buf;
    size_t len;
    FILE *f;
} logcap;

static void
log_open(logcap *l)
{
    l->buf = NULL;
    l->len = 0;
    l->f = open_memstream(&l->buf, &l->len);
    cr_assert(l->f);
}

static const char *
log_text(logcap *l)
{
    fflush(l->f);
    return l->buf ? l->buf : "";
}

static void
log_close(logcap *l)
{
    fclose(l->f);
    free(l->buf);
}

Test(controller, an_output_cut_below_the_held_offset_starts_the_job_over_and_takes_it)
{
    logcap l;
    log_open(&l);
    tsr_controller_opts o = {.log = l.f};
    int fd = memfd_create("ctl", 0);
    tsr_ctl_mem *m = tsr_ctl_mem_new(fd, &o);
    tx t;
    header(&t, 12);
    frames(&t, 0, 2100, 700);
    cr_assert_eq(serve(m, &t).rc, 1);
    cr_assert_eq(ftruncate(fd, 500), 0);
    /* the same job again, from byte 0: it is answered 0 and completes (it was refused as
     * "a different design" on every try) */
    header(&t, 12);
    frames(&t, 0, TOTAL, 700);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    run r = serve(m, &t);
    cr_assert_eq(r.answered, 0, "answered %llu", (unsigned long long)r.answered);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    cr_assert_eq(r.crc, tsr_crc32(0, data, TOTAL));
    assert_output(fd, TOTAL);
    cr_assert(strstr(log_text(&l), "holds 500 bytes, less than the state's 2100") &&
              strstr(log_text(&l), "starting over from byte 0"), "%s", log_text(&l));
    tsr_ctl_mem_free(m);
    log_close(&l);
    close(fd);
}

Test(controller, an_altered_held_byte_is_found_on_resume_and_the_job_starts_over)
{
    logcap l;
    log_open(&l);
    tsr_controller_opts o = {.log = l.f};
    int fd = memfd_create("ctl", 0);
    tsr_ctl_mem *m = tsr_ctl_mem_new(fd, &o);
    tx t;
    header(&t, 13);
    frames(&t, 0, 2100, 700);
    cr_assert_eq(serve(m, &t).rc, 1);
    uint8_t b = (uint8_t)(data[100] ^ 0x10);
    cr_assert_eq(pwrite(fd, &b, 1, 100), 1);
    header(&t, 13);
    frames(&t, 0, TOTAL, 700);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    run r = serve(m, &t);
    cr_assert_eq(r.answered, 0, "held bytes that no longer match their crc are not resumed "
                 "over (answered %llu)", (unsigned long long)r.answered);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    assert_output(fd, TOTAL);
    cr_assert(strstr(log_text(&l), "cannot be trusted; starting over from byte 0"), "%s",
              log_text(&l));
    tsr_ctl_mem_free(m);
    log_close(&l);
    close(fd);
}

Test(controller, a_complete_job_whose_bytes_changed_is_never_answered_complete)
{
    logcap l;
    log_open(&l);
    tsr_controller_opts o = {.log = l.f};
    int fd = memfd_create("ctl", 0);
    tsr_ctl_mem *m = tsr_ctl_mem_new(fd, &o);
    tx t;
    header(&t, 14);
    frames(&t, 0, TOTAL, 700);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    cr_assert_eq(serve(m, &t).rc, 0);
    uint8_t b = (uint8_t)(data[TOTAL - 1] ^ 1);
    cr_assert_eq(pwrite(fd, &b, 1, TOTAL - 1), 1);
    /* a sender of the same job: a bare trailer would "complete" it with the old crc */
    header(&t, 14);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    run r = serve(m, &t);
    cr_assert_eq(r.answered, 0, "answered %llu, as if the job were whole",
                 (unsigned long long)r.answered);
    cr_assert_neq(r.rc, 0, "a bare trailer completed a job whose bytes changed");
    cr_assert(r.valid && r.offset == 0, "holds %llu", (unsigned long long)r.offset);
    cr_assert(strstr(log_text(&l), "cannot be trusted"), "%s", log_text(&l));
    /* the whole job sent again completes it */
    header(&t, 14);
    frames(&t, 0, TOTAL, 1000);
    frame(&t, TOTAL, 0, TSR_FRAME_TRAILER, "");
    r = serve(m, &t);
    cr_assert_eq(r.answered, 0);
    cr_assert_eq(r.rc, 0, "%s", r.err.msg);
    assert_output(fd, TOTAL);
    tsr_ctl_mem_free(m);
    log_close(&l);
    close(fd);
}
