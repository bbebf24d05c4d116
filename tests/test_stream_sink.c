/* stream_sink: streaming sinks (framed transcripts, deflate, abort, trailer, resume of raw
 * files, stop requests, pacing, underruns, vmsplice'd pipes, the tcp handshake), the reference
 * controller in-process, progress output, and the engine's header and fingerprint. */
#include <criterion/criterion.h>

#include "cli/progress.h"
#include "controller/controller.h"
#include "engine/engine.h"
#include "helpers/helpers.h"
#include "stream/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static double
mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t *
pattern(size_t n, unsigned seed)
{
    uint8_t *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)((i / 61 + seed) * 37 % 251);
    return b;
}

TestSuite(stream_sink, .init = th_dir_make, .fini = th_dir_remove);

Test(stream_sink, framed_file_is_header_frames_and_a_trailer)
{
    size_t n = 3 * 1000000 + 17;
    uint8_t *b = pattern(n, 1);
    tsr_header h = th_header(n);
    tsr_error err = {0};
    tsr_sink_opts o = {.framed = true, .header = &h};
    tsr_sink *s = tsr_sink_open_ex(th_in_dir("t.tsr"), &o, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(tsr_sink_write(s, b, 1000, &err), TSR_OK);
    cr_assert_eq(tsr_sink_write(s, b + 1000, n - 1000, &err), TSR_OK);
    cr_assert_eq(tsr_sink_offset(s), n);
    cr_assert_eq(tsr_sink_finish(s, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_sink_close(s, &err), TSR_OK);
    th_transcript p = th_parse_transcript_file(th_in_dir("t.tsr"));
    cr_assert(memcmp(p.h.fingerprint, h.fingerprint, 32) == 0);
    cr_assert(p.trailer && !p.abort);
    cr_assert_eq(p.first, 0);
    cr_assert_eq(p.bytes, n);
    cr_assert_geq(p.frames, 4, "frames of at most 1 MiB");
    cr_assert(memcmp(p.data, b, n) == 0);
    cr_assert_eq(p.trailer_crc, tsr_crc32(0, b, n));
    free(p.data);
    free(b);
}

Test(stream_sink, framed_resume_starts_at_b_and_the_trailer_covers_only_what_was_sent)
{
    size_t n = 500000, B = 123457;
    uint8_t *b = pattern(n, 2);
    tsr_header h = th_header(n);
    tsr_error err = {0};
    tsr_sink_opts o = {.framed = true, .header = &h, .start = B, .deflate = true};
    tsr_sink *s = tsr_sink_open_ex(th_in_dir("r.tsr"), &o, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(tsr_sink_start(s), B);
    cr_assert_eq(tsr_sink_write(s, b + B, n - B, &err), TSR_OK);
    cr_assert_eq(tsr_sink_finish(s, &err), TSR_OK);
    tsr_sink_close(s, NULL);
    th_transcript p = th_parse_transcript_file(th_in_dir("r.tsr"));
    cr_assert_eq(p.first, B);
    cr_assert_eq(p.bytes, n - B);
    cr_assert(memcmp(p.data, b + B, n - B) == 0);
    cr_assert_eq(p.trailer_crc, tsr_crc32(0, b + B, n - B));
    cr_assert_gt(p.deflated, 0, "compressible payloads are deflated");
    free(p.data);

    o.start = n + 1;
    cr_assert_null(tsr_sink_open_ex(th_in_dir("r2.tsr"), &o, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    free(b);
}

Test(stream_sink, incompressible_payloads_go_raw_under_deflate)
{
    size_t n = 300000;
    uint8_t *b = malloc(n);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (uint8_t)(x >> 23);
    }
    tsr_header h = th_header(n);
    tsr_error err = {0};
    tsr_sink_opts o = {.framed = true, .deflate = true, .header = &h};
    tsr_sink *s = tsr_sink_open_ex(th_in_dir("z.tsr"), &o, &err);
    cr_assert_eq(tsr_sink_write(s, b, n, &err), TSR_OK);
    cr_assert_eq(tsr_sink_finish(s, &err), TSR_OK);
    tsr_sink_close(s, NULL);
    th_transcript p = th_parse_transcript_file(th_in_dir("z.tsr"));
    cr_assert_eq(p.deflated, 0);
    cr_assert(memcmp(p.data, b, n) == 0);
    free(p.data);
    free(b);
}

Test(stream_sink, abort_frame_carries_the_next_byte_and_the_reason_never_a_trailer)
{
    size_t n = 100000;
    uint8_t *b = pattern(n, 3);
    tsr_header h = th_header(n);
    tsr_error err = {0};
    tsr_sink_opts o = {.framed = true, .header = &h};
    tsr_sink *s = tsr_sink_open_ex(th_in_dir("a.tsr"), &o, &err);
    cr_assert_eq(tsr_sink_write(s, b, 40000, &err), TSR_OK);
    /* a long reason is cut at 4096 bytes, never inside a UTF-8 sequence */
    char reason[TSR_ABORT_MAX + 8];
    memset(reason, 'x', TSR_ABORT_MAX - 1);
    strcpy(reason + TSR_ABORT_MAX - 1, "\xc3\xa9tail");
    cr_assert_eq(tsr_sink_abort(s, reason, &err), TSR_OK);
    tsr_sink_close(s, NULL);
    th_transcript p = th_parse_transcript_file(th_in_dir("a.tsr"));
    cr_assert(p.abort && !p.trailer);
    cr_assert_eq(p.abort_offset, 40000);
    cr_assert_eq(strlen(p.reason), TSR_ABORT_MAX - 1);
    free(p.data);

    s = tsr_sink_open_ex(th_in_dir("a2.tsr"), &o, &err);
    cr_assert_eq(tsr_sink_write(s, b, 10, &err), TSR_OK);
    cr_assert_eq(tsr_sink_abort(s, "render failed: out of memory", &err), TSR_OK);
    tsr_sink_close(s, NULL);
    p = th_parse_transcript_file(th_in_dir("a2.tsr"));
    cr_assert_str_eq(p.reason, "render failed: out of memory");
    cr_assert_eq(p.abort_offset, 10);
    free(p.data);
    free(b);
}

Test(stream_sink, a_failed_framed_write_sends_neither_abort_nor_trailer)
{
    tsr_header h = th_header(1 << 20);
    tsr_error err = {0};
    tsr_sink_opts o = {.framed = true, .header = &h};
    /* /dev/full takes nothing: the header write fails already */
    cr_assert_null(tsr_sink_open_ex("/dev/full", &o, &err));
    cr_assert_str_eq(err.msg, "/dev/full: No space left on device");
    cr_assert_eq(err.status, TSR_EIO);
}

Test(stream_sink, raw_file_resume_keeps_the_bytes_before_b_and_cuts_the_rest)
{
    const char *path = th_in_dir("res.raw");
    uint8_t old[5000];
    memset(old, 'M', sizeof old);
    FILE *f = fopen(path, "wb");
    fwrite(old, 1, sizeof old, f);
    fclose(f);
    tsr_error err = {0};
    tsr_sink_opts o = {.start = 3000};
    tsr_sink *s = tsr_sink_open_ex(path, &o, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(tsr_sink_offset(s), 3000);
    cr_assert_eq(tsr_sink_write(s, "NEW", 3, &err), TSR_OK);
    cr_assert_eq(tsr_sink_offset(s), 3003);
    cr_assert_eq(tsr_sink_bytes(s), 3);
    cr_assert_eq(tsr_sink_close(s, &err), TSR_OK);
    size_t n;
    uint8_t *got = th_read_file(path, &n);
    cr_assert_eq(n, 3003);
    for (size_t i = 0; i < 3000; i++)
        cr_assert_eq(got[i], 'M');
    cr_assert(memcmp(got + 3000, "NEW", 3) == 0);
    free(got);

    o.start = 4000;
    cr_assert_null(tsr_sink_open_ex(path, &o, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    char want[300];
    snprintf(want, sizeof want, "%s: holds 3003 bytes, cannot resume at byte 4000", path);
    cr_assert_str_eq(err.msg, want);
    struct stat st;
    stat(path, &st);
    cr_assert_eq(st.st_size, 3003, "a refused resume leaves the file alone");
}

Test(stream_sink, stop_request_ends_writes_with_eintr_and_exact_accounting)
{
    volatile sig_atomic_t stop = 0;
    tsr_error err = {0};
    tsr_sink_opts o = {.stop = &stop};
    tsr_sink *s = tsr_sink_open_ex(th_in_dir("stop.raw"), &o, &err);
    uint8_t b[1000] = {0};
    cr_assert_eq(tsr_sink_write(s, b, sizeof b, &err), TSR_OK);
    stop = 1;
    cr_assert_eq(tsr_sink_write(s, b, sizeof b, &err), TSR_EINTR);
    cr_assert(strstr(err.msg, ": interrupted") != NULL, "%s", err.msg);
    cr_assert_eq(tsr_sink_offset(s), 1000);
    cr_assert_eq(tsr_sink_close(s, &err), TSR_EINTR);

    /* framed: the stop leaves the stream whole, so the abort frame can still go */
    stop = 0;
    tsr_header h = th_header(5000);
    tsr_sink_opts of = {.framed = true, .header = &h, .stop = &stop};
    s = tsr_sink_open_ex(th_in_dir("stop.tsr"), &of, &err);
    cr_assert_eq(tsr_sink_write(s, b, sizeof b, &err), TSR_OK);
    stop = 1;
    cr_assert_eq(tsr_sink_write(s, b, sizeof b, &err), TSR_EINTR);
    cr_assert_eq(tsr_sink_finish(s, &err), TSR_EINTR, "no trailer after a stop");
    cr_assert_eq(tsr_sink_abort(s, "interrupted by SIGINT", &err), TSR_OK);
    tsr_sink_close(s, NULL);
    th_transcript p = th_parse_transcript_file(th_in_dir("stop.tsr"));
    cr_assert(p.abort && !p.trailer);
    cr_assert_eq(p.abort_offset, 1000);
    free(p.data);
}

Test(stream_sink, paced_sink_never_outruns_its_rate)
{
    /* Upper bound only: n bytes at rate r take at least (n - bucket) / r, the bucket being
     * 1/20 s of the rate. */
    double rate = 1e6;
    size_t n = 400000;
    uint8_t *b = pattern(n, 4);
    tsr_error err = {0};
    tsr_sink_opts o = {.rate = rate};
    tsr_sink *s = tsr_sink_open_ex("null", &o, &err);
    cr_assert(tsr_sink_paced(s));
    double t0 = mono();
    for (size_t at = 0; at < n; at += 40000)
        cr_assert_eq(tsr_sink_write(s, b + at, 40000, &err), TSR_OK);
    double secs = mono() - t0;
    cr_assert_geq(secs, (double)(n - rate / 20) / rate * 0.999, "%.3f s", secs);
    cr_assert_eq(tsr_sink_bytes(s), n);
    tsr_sink_close(s, NULL);
    free(b);
}

Test(stream_sink, a_paced_writer_that_waits_for_the_producer_counts_underruns)
{
    tsr_error err = {0};
    tsr_sink_opts o = {.rate = 1e9};
    tsr_sink *s = tsr_sink_open_ex("null", &o, &err);
    tsr_writer *w = tsr_writer_new(s, 2, 4096);
    for (int k = 0; k < 3; k++) {
        uint8_t *b = tsr_writer_acquire(w);
        memset(b, k, 4096);
        tsr_writer_submit(w, b, 4096);
        struct timespec ts = {0, 100 * 1000 * 1000}; /* the producer is late */
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_OK);
    double secs;
    uint64_t u = tsr_sink_underruns(s, &secs);
    cr_assert_eq(u, 2, "one per late buffer after the first (got %llu)", (unsigned long long)u);
    cr_assert_gt(secs, 0);
    tsr_sink_close(s, NULL);

    /* unpaced: waiting is not an underrun (nobody is consuming at a rate) */
    s = tsr_sink_open("null", &err);
    w = tsr_writer_new(s, 2, 4096);
    for (int k = 0; k < 2; k++) {
        uint8_t *b = tsr_writer_acquire(w);
        memset(b, k, 4096);
        tsr_writer_submit(w, b, 4096);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_OK);
    cr_assert_eq(tsr_sink_underruns(s, NULL), 0);
    tsr_sink_close(s, NULL);
}

/* ---- stdout pipes: vmsplice --------------------------------------------------------------- */

/* Donate `len` bytes at page offset `skew` of a mapped buffer to a stdout pipe. */
static void
donate_through_pipe(size_t len, size_t skew)
{
    th_stdout_pipe d;
    th_stdout_pipe_start(&d, len + 1);

    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("-", &err);
    size_t map = (len + skew + 4095) / 4096 * 4096;
    uint8_t *m = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *ref = pattern(len, 5);
    memcpy(m + skew, ref, len);
    tsr_status w = s ? tsr_sink_write_donate(s, m + skew, len, &err) : TSR_EINTERNAL;
    /* The caller may now reuse the buffer: what is in the pipe must not change. */
    memset(m, 0xAB, map);
    uint64_t bytes = tsr_sink_bytes(s);
    tsr_status c = tsr_sink_close(s, &err);
    th_stdout_pipe_finish(&d);
    cr_assert_eq(w, TSR_OK, "%s", err.msg);
    cr_assert_eq(c, TSR_OK, "%s", err.msg);
    cr_assert_eq(bytes, len);
    cr_assert_eq(d.n, len);
    cr_assert(memcmp(d.got, ref, len) == 0, "len %zu skew %zu", len, skew);
    munmap(m, map);
    free(ref);
    free(d.got);
}

Test(stream_sink, donated_pages_reach_the_pipe_unchanged_by_later_writes)
{
    donate_through_pipe(3 * 1048576 + 123, 0);
    donate_through_pipe(5 * 4096, 100);   /* unaligned head and tail */
    donate_through_pipe(100, 4000);       /* less than a page, across a page boundary */
}

/* ---- tcp ---------------------------------------------------------------------------------- */

typedef struct fake {
    int lfd;
    uint64_t answer;
    uint8_t header[TSR_HEADER_SIZE];
} fake;

static void *
fake_main(void *arg)
{
    fake *f = arg;
    int c = accept(f->lfd, NULL, NULL);
    size_t n = 0;
    ssize_t k;
    while (n < TSR_HEADER_SIZE && (k = read(c, f->header + n, TSR_HEADER_SIZE - n)) > 0)
        n += (size_t)k;
    uint8_t a[8];
    for (int i = 0; i < 8; i++)
        a[i] = (uint8_t)(f->answer >> (8 * i));
    if (write(c, a, 8) != 8)
        return NULL;
    uint8_t junk[4096];
    while (read(c, junk, sizeof junk) > 0)
        ;
    close(c);
    return NULL;
}

static int
listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(fd, 1), 0);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

static tsr_sink *
open_against(uint64_t answer, tsr_header *h, uint8_t seen[TSR_HEADER_SIZE], tsr_error *err)
{
    int port;
    fake f = {.answer = answer};
    f.lfd = listen_any(&port);
    pthread_t t;
    pthread_create(&t, NULL, fake_main, &f);
    char spec[64];
    snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", port);
    tsr_sink_opts o = {.header = h};
    tsr_sink *s = tsr_sink_open_ex(spec, &o, err);
    if (s) {
        tsr_sink_abort(s, "test over", NULL);
        tsr_sink_close(s, NULL);
    }
    pthread_join(t, NULL);
    close(f.lfd);
    memcpy(seen, f.header, TSR_HEADER_SIZE);
    return s;
}

Test(stream_sink, tcp_handshake_sends_the_header_and_takes_the_answer)
{
    tsr_header h = th_header(1000);
    uint8_t want[TSR_HEADER_SIZE], seen[TSR_HEADER_SIZE];
    tsr_header_encode(&h, want);
    tsr_error err = {0};
    int port;
    fake f = {.answer = 777};
    f.lfd = listen_any(&port);
    pthread_t t;
    pthread_create(&t, NULL, fake_main, &f);
    char spec[64];
    snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", port);
    tsr_sink_opts o = {.header = &h, .start = 5 /* ignored on tcp */};
    tsr_sink *s = tsr_sink_open_ex(spec, &o, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(tsr_sink_start(s), 777);
    cr_assert_eq(tsr_sink_offset(s), 777);
    tsr_sink_abort(s, "done", NULL);
    tsr_sink_close(s, NULL);
    pthread_join(t, NULL);
    close(f.lfd);
    cr_assert(memcmp(f.header, want, TSR_HEADER_SIZE) == 0);

    cr_assert_null(open_against(TSR_RESUME_REFUSED, &h, seen, &err));
    cr_assert_eq(err.status, TSR_EIO);
    cr_assert(strstr(err.msg, ": the controller refused the job") != NULL, "%s", err.msg);
    cr_assert_null(open_against(1001, &h, seen, &err));
    cr_assert(strstr(err.msg, ": resume offset 1001 is past the end (1000 bytes)") != NULL, "%s",
              err.msg);
    cr_assert_not_null(open_against(1000, &h, seen, &err), "%s", err.msg);
}

Test(stream_sink, tcp_connect_failures_are_clear)
{
    int port;
    int fd = listen_any(&port);
    close(fd); /* nothing listens there now */
    tsr_header h = th_header(10);
    tsr_sink_opts o = {.header = &h};
    char spec[64], want[128];
    snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", port);
    tsr_error err = {0};
    cr_assert_null(tsr_sink_open_ex(spec, &o, &err));
    snprintf(want, sizeof want, "%s: Connection refused", spec);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(err.status, TSR_EIO);
    const char *bad[] = {"tcp://127.0.0.1", "tcp://127.0.0.1:0", "tcp://:80", "tcp://h:99999",
                         "tcp://::1:80", "tcp://[::1]80", NULL};
    for (int i = 0; bad[i]; i++) {
        cr_assert_null(tsr_sink_open_ex(bad[i], &o, &err), "%s", bad[i]);
        cr_assert_eq(err.status, TSR_EINVAL, "%s: %s", bad[i], err.msg);
    }
}

/* ---- the controller in-process ---------------------------------------------------------------- */

typedef struct ctl_run {
    tsr_controller_opts o;
    tsr_status st;
    tsr_error err;
} ctl_run;

static void *
ctl_main(void *arg)
{
    ctl_run *r = arg;
    r->st = tsr_controller_run(&r->o, &r->err);
    fclose(r->o.log);
    return NULL;
}

/* Start a controller thread; its log goes through a pipe we read the port from. */
static int
ctl_start(ctl_run *r, pthread_t *t, FILE **log)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    r->o.log = fdopen(p[1], "w");
    *log = fdopen(p[0], "r");
    pthread_create(t, NULL, ctl_main, r);
    char line[512];
    int port = 0;
    while (fgets(line, sizeof line, *log))
        if (sscanf(line, "tessera controller: listening on 127.0.0.1:%d", &port) == 1)
            break;
    cr_assert_gt(port, 0);
    return port;
}

Test(stream_sink, controller_receives_a_job_and_records_it_durably)
{
    size_t n = 2500000;
    uint8_t *b = pattern(n, 6);
    tsr_header h = th_header(n);
    ctl_run r = {.o = {.listen = "127.0.0.1:0", .out = th_in_dir("c.raw"), .jobs = 1}};
    pthread_t t;
    FILE *log;
    int port = ctl_start(&r, &t, &log);
    char spec[64];
    snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", port);
    tsr_error err = {0};
    tsr_sink_opts o = {.header = &h, .deflate = true};
    tsr_sink *s = tsr_sink_open_ex(spec, &o, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(tsr_sink_start(s), 0);
    cr_assert_eq(tsr_sink_write(s, b, n, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_sink_finish(s, &err), TSR_OK, "%s", err.msg);
    tsr_sink_close(s, NULL);
    char line[512];
    while (fgets(line, sizeof line, log))
        ;
    fclose(log);
    pthread_join(t, NULL);
    cr_assert_eq(r.st, TSR_OK, "%s", r.err.msg);
    size_t got;
    uint8_t *out = th_read_file(th_in_dir("c.raw"), &got);
    cr_assert_eq(got, n);
    cr_assert(memcmp(out, b, n) == 0);
    free(out);
    char *state = (char *)th_read_file(th_in_dir("c.raw.tsrstate"), &got);
    char want[400];
    snprintf(want, sizeof want,
             "tessera-controller-state 1\nfingerprint "
             "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
             "total %zu\noffset %zu\ncrc32 %08x\n",
             n, n, (unsigned)tsr_crc32(0, b, n));
    cr_assert_eq(got, strlen(want));
    cr_assert(memcmp(state, want, got) == 0, "%.*s", (int)got, state);
    free(state);
    cr_assert_eq(access(th_in_dir("c.raw.tsrstate.tmp"), F_OK), -1, "no temporary left");
    free(b);
}

Test(stream_sink, controller_stops_on_request_and_refuses_bad_options)
{
    volatile sig_atomic_t stop = 0;
    ctl_run r = {.o = {.listen = "127.0.0.1:0", .jobs = 1, .stop = &stop}};
    pthread_t t;
    FILE *log;
    ctl_start(&r, &t, &log);
    stop = 1;
    char line[512];
    while (fgets(line, sizeof line, log))
        ;
    fclose(log);
    pthread_join(t, NULL);
    cr_assert_eq(r.st, TSR_EINTR);

    tsr_error err = {0};
    tsr_controller_opts o = {.listen = "10.1.2.3:5000", .jobs = 1};
    cr_assert_eq(tsr_controller_run(&o, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "--listen 10.1.2.3:5000: not a loopback address (the reference "
                              "controller listens on 127.0.0.1 or ::1 only)");
    o.listen = "127.0.0.1";
    cr_assert_eq(tsr_controller_run(&o, &err), TSR_EINVAL);
    o.listen = "127.0.0.1:0";
    o.jobs = 0;
    cr_assert_eq(tsr_controller_run(&o, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "--jobs 0: must be at least 1");
    o.jobs = 1;
    o.out = th_in_dir("nodir/x.raw");
    cr_assert_eq(tsr_controller_run(&o, &err), TSR_EIO);
}

/* ---- progress ---------------------------------------------------------------------------------- */

Test(stream_sink, progress_is_silent_for_short_runs_and_none)
{
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("null", &err);
    cr_assert_null(tsr_progress_start(s, TSR_PROGRESS_NONE, 100, stderr));
    FILE *f = tmpfile();
    tsr_progress *p = tsr_progress_start(s, TSR_PROGRESS_JSON, 100, f);
    cr_assert_not_null(p);
    tsr_sink_write(s, "0123456789", 10, &err);
    tsr_progress_stop(p, true);
    cr_assert_eq(ftell(f), 0, "a run under 1 s prints nothing");
    fclose(f);
    tsr_progress_stop(NULL, true);
    tsr_sink_close(s, NULL);
}

Test(stream_sink, progress_json_lines_report_delivered_bytes, .timeout = 20)
{
    tsr_error err = {0};
    tsr_sink_opts o = {.rate = 4e5};
    tsr_sink *s = tsr_sink_open_ex("null", &o, &err);
    FILE *f = tmpfile();
    tsr_progress *p = tsr_progress_start(s, TSR_PROGRESS_JSON, 600000, f);
    uint8_t *b = pattern(600000, 7);
    cr_assert_eq(tsr_sink_write(s, b, 600000, &err), TSR_OK);
    tsr_progress_stop(p, true);
    rewind(f);
    char line[512], last[512] = "";
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        cr_assert_eq(line[0], '{', "%s", line);
        strcpy(last, line);
        lines++;
    }
    cr_assert_geq(lines, 2);
    cr_assert(strstr(last, "\"bytes\":600000,\"total\":600000,\"start\":0,") != NULL, "%s", last);
    cr_assert(strstr(last, "\"done\":true}") != NULL, "%s", last);
    fclose(f);
    tsr_sink_close(s, NULL);
    free(b);
}

/* ---- the engine's header ---------------------------------------------------------------------- */

static const char *lens_yaml =
    "tessera: 1\nname: %s\ntile: %d\noutput:\n  depth: %d\n"
    "root:\n  size: [300, 200]\n  children:\n    - trait: repeat\n      node:\n"
    "        size: [30, 20]\n        source: {shape: circle, center: [15, 10], radius: %s}\n";

static tsr_header
header_of(const char *name, int tile, int depth, const char *radius, int64_t y0, int64_t y1)
{
    char y[1024];
    snprintf(y, sizeof y, lens_yaml, name, tile, depth, radius);
    tsr_design *d = th_design(y);
    tsr_engine_opts eo = {.rows = {y0, y1}};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &eo, &err);
    cr_assert_not_null(e, "%s", err.msg);
    tsr_header h;
    cr_assert_eq(tsr_engine_header(e, &h, &err), TSR_OK, "%s", err.msg);
    tsr_engine_free(e);
    tsr_design_free(d);
    return h;
}

Test(stream_sink, engine_header_fields_and_fingerprint_invariances)
{
    tsr_header a = header_of("one", 64, 8, "7", 0, 0);
    cr_assert_eq(a.width, 300);
    cr_assert_eq(a.height, 200);
    cr_assert_eq(a.depth, 8);
    cr_assert_eq(a.order, 0);
    cr_assert_eq(a.swath_width, 300);
    cr_assert_eq(a.total, 60000);
    tsr_header b = header_of("two", 128, 8, "7.0", 0, 0);
    cr_assert(memcmp(a.fingerprint, b.fingerprint, 32) == 0, "name, tile, spelling of a real");
    tsr_header c = header_of("one", 64, 8, "7.5", 0, 0);
    cr_assert(memcmp(a.fingerprint, c.fingerprint, 32) != 0, "a parameter");
    tsr_header d = header_of("one", 64, 16, "7", 0, 0);
    cr_assert(memcmp(a.fingerprint, d.fingerprint, 32) != 0, "the output section");
    cr_assert_eq(d.total, 120000);
    tsr_header e = header_of("one", 64, 8, "7", 50, 150);
    cr_assert(memcmp(a.fingerprint, e.fingerprint, 32) != 0, "the crop");
    cr_assert_eq(e.height, 100);
    cr_assert_eq(e.total, 30000);
    tsr_header f = header_of("one", 64, 8, "7", 0, 200);
    cr_assert(memcmp(a.fingerprint, f.fingerprint, 32) == 0, "--rows 0:H is the whole root");
}
