/* The public pull API (include/tessera.h, engine/job.c): a job's reads give the bytes the
 * engine's stream gives (swath order, serpentine, bottom-up bands, 16-bit, a crop), from any
 * offset; and every way it fails: bad YAML in memory, bad options, reads past the end, seeks
 * past the end, a stop from another thread, a NULL buffer. The library prints nothing. */
#include "engine/engine.h"
#include "helpers/helpers.h"
#include "tessera.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 16-bit, swaths 300 px wide from the bottom right, serpentine: the last swath is 100 px; the
 * root's 32 px tiles make 32-row bands, so a read crosses many bands and swaths. A distance
 * and a pattern child keep the root from being periodic (the periodic fast path is also met:
 * see periodic_yaml). */
static const char swath_yaml[] =
    "tessera: 1\n"
    "tile: 32\n"
    "output:\n"
    "  depth: 16\n"
    "  order: swath\n"
    "  swath: {width: 300, serpentine: true, start: bottom-right}\n"
    "nodes:\n"
    "  lens: {size: [60, 60], source: {shape: circle, center: [30, 30], radius: 21, aa: 4}}\n"
    "root:\n"
    "  size: [700, 333]\n"
    "  fill: 0.1\n"
    "  children:\n"
    "    - {trait: repeat-vector, ref: lens, u: [60, 0], v: [30, 52]}\n"
    "    - {trait: distance, ref: lens, dmax: 20, blend: max}\n"
    "    - {trait: pattern, offset: [410, 170], node: {size: [90, 40], fill: 0.9}}\n";

static const char periodic_yaml[] =
    "tessera: 1\n"
    "tile: 64\n"
    "nodes:\n"
    "  lens: {size: [60, 52], source: {shape: circle, center: [30, 26], radius: 21}}\n"
    "root:\n"
    "  size: [1000, 517]\n"
    "  children: [{trait: repeat, ref: lens}]\n";

static tsr_job *
open_yaml(const char *yaml, tsr_job_opts *o)
{
    tsr_error err = {0};
    o->base_dir = TSR_SRC_DIR;
    tsr_job *j = tsr_job_open_yaml(yaml, strlen(yaml), "mem.yaml", o, &err);
    cr_assert_not_null(j, "%s", err.msg);
    return j;
}

/* What the engine's stream (the CLI's path: bands through the writer thread into a sink)
 * gives for the same design and options. */
static uint8_t *
engine_bytes(const char *yaml, const tsr_job_opts *jo, size_t *n)
{
    tsr_error err = {0};
    tsr_design *d = th_design(yaml);
    tsr_engine_opts o = {.backend = "cpu", .threads = jo->threads,
                         .rows = {jo->rows[0], jo->rows[1]}};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert_not_null(e, "%s", err.msg);
    uint8_t *b = th_stream_engine(e, 0, n);
    cr_assert_eq(*n, tsr_engine_stream_bytes(e));
    tsr_engine_free(e);
    tsr_design_free(d);
    return b;
}

/* Read j from where it is to its end in chunks of `chunk` bytes; compare with want[at..n). */
static void
read_rest(tsr_job *j, size_t chunk, const uint8_t *want, size_t n, uint64_t at)
{
    uint8_t *buf = malloc(chunk);
    cr_assert_eq(tsr_job_offset(j), at);
    for (;;) {
        int64_t k = tsr_job_read(j, buf, chunk);
        cr_assert(k >= 0, "read at %llu: %s", (unsigned long long)at, tsr_job_error(j)->msg);
        if (k == 0)
            break;
        cr_assert((uint64_t)k <= chunk && at + (uint64_t)k <= n);
        cr_assert(memcmp(buf, want + at, (size_t)k) == 0, "bytes differ in [%llu, %llu)",
                  (unsigned long long)at, (unsigned long long)(at + (uint64_t)k));
        at += (uint64_t)k;
        cr_assert_eq(tsr_job_offset(j), at);
    }
    cr_assert_eq(at, n, "the stream ended at %llu of %zu", (unsigned long long)at, n);
    free(buf);
}

Test(job, reads_give_the_engines_stream_in_output_order)
{
    struct {
        const char *yaml;
        tsr_job_opts o;
    } cases[] = {
        {swath_yaml, {.threads = 2}},
        {swath_yaml, {.threads = 1, .rows = {37, 301}}}, /* a crop: bands from row 37 */
        {periodic_yaml, {.threads = 2}},                  /* the periodic root's row copies */
        {periodic_yaml, {.threads = 2, .rows = {1, 2}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t n;
        uint8_t *want = engine_bytes(cases[c].yaml, &cases[c].o, &n);
        /* 4093: reads that straddle bands; 1 << 20: one read takes several bands */
        size_t chunks[] = {4093, 1 << 20};
        for (size_t k = 0; k < 2; k++) {
            tsr_job *j = open_yaml(cases[c].yaml, &cases[c].o);
            tsr_job_stats st;
            tsr_job_get_stats(j, &st);
            cr_assert_eq(st.total, n);
            /* auto: the GPU on a machine with one (scripts/gpu-check.sh), whose bytes must be
             * the CPU's stream's too */
            cr_assert(!strcmp(st.backend, "cpu") || !strcmp(st.backend, "gpu"), "%s",
                      st.backend);
            read_rest(j, chunks[k], want, n, 0);
            tsr_job_get_stats(j, &st);
            cr_assert_eq(st.offset, n);
            cr_assert_eq(st.computed, n, "each band once: %llu bytes computed",
                         (unsigned long long)st.computed);
            tsr_job_close(j);
        }
        free(want);
    }
}

Test(job, a_seek_resumes_at_any_offset_and_costs_at_most_one_band)
{
    tsr_job_opts o = {.threads = 2};
    size_t n;
    uint8_t *want = engine_bytes(swath_yaml, &o, &n);
    tsr_job *j = open_yaml(swath_yaml, &o);
    tsr_job_stats st;
    tsr_job_get_stats(j, &st);
    uint64_t band = (uint64_t)st.band_rows * 300 * 2; /* a full band of a full swath */
    uint64_t swath = 300ull * 333 * 2;
    uint64_t at[] = {0, 1, band - 1, band, band + 1, swath - 1, swath, swath + 7, 2 * swath + 1,
                     n - 1, n, 0};
    srand(15);
    for (size_t i = 0; i < sizeof at / sizeof *at + 6; i++) {
        uint64_t off = i < sizeof at / sizeof *at ? at[i] : (uint64_t)rand() % (n + 1);
        tsr_error err = {0};
        cr_assert_eq(tsr_job_seek(j, off, &err), TSR_OK, "%s", err.msg);
        tsr_job_get_stats(j, &st);
        uint64_t before = st.computed;
        read_rest(j, 65521, want, n, off);
        tsr_job_get_stats(j, &st);
        /* what the reads computed: the bands from the one holding off, in whole */
        cr_assert(st.computed - before < n - off + 2 * band, "%llu bytes computed for %llu",
                  (unsigned long long)(st.computed - before), (unsigned long long)(n - off));
    }
    /* a seek inside the band just read computes nothing */
    tsr_error err = {0};
    cr_assert_eq(tsr_job_seek(j, n - 10, &err), TSR_OK);
    tsr_job_get_stats(j, &st);
    uint64_t before = st.computed;
    read_rest(j, 3, want, n, n - 10);
    tsr_job_get_stats(j, &st);
    cr_assert_eq(st.computed, before);
    tsr_job_close(j);
    free(want);
}

Test(job, bad_yaml_in_memory_gives_a_status_and_names_line_and_column)
{
    const char *yaml = "tessera: 1\n"
                       "root:\n"
                       "  size: [64, 48]\n"
                       "  fil: 0.5\n";
    tsr_error err = {0};
    tsr_job *j = tsr_job_open_yaml(yaml, strlen(yaml), "mem.yaml", NULL, &err);
    cr_assert_null(j);
    cr_assert_eq(err.status, TSR_EINVAL, "%s", tsr_status_name(err.status));
    cr_assert(strstr(err.msg, "mem.yaml:4:3: ") && strstr(err.msg, "fil"), "%s", err.msg);
    /* and a YAML syntax error, unnamed text */
    const char *broken = "tessera: 1\nroot: {size: [64, 48]\n";
    j = tsr_job_open_yaml(broken, strlen(broken), NULL, NULL, &err);
    cr_assert_null(j);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strncmp(err.msg, "<string>:", 9) == 0 && strchr(err.msg + 9, ':'), "%s", err.msg);
}

Test(job, bad_files_and_options_are_refused_with_a_status)
{
    tsr_error err = {0};
    cr_assert_null(tsr_job_open(TSR_SRC_DIR "/tests/no-such-design.yaml", NULL, &err));
    cr_assert_eq(err.status, TSR_EINVAL, "%s", err.msg);
    cr_assert(strstr(err.msg, "no-such-design.yaml: cannot open"), "%s", err.msg);
    const char *img = "tessera: 1\nroot: {source: {image: no-such.png}}\n";
    cr_assert_null(tsr_job_open_yaml(img, strlen(img), "i.yaml", NULL, &err));
    cr_assert_eq(err.status, TSR_EINVAL, "%s", err.msg);
    cr_assert(strstr(err.msg, "i.yaml:2:24: root.source.image: no-such.png: "), "%s", err.msg);
    cr_assert_null(tsr_job_open(NULL, NULL, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    struct {
        tsr_job_opts o;
        tsr_status st;
        const char *says;
    } bad[] = {
        {{.threads = -1}, TSR_EINVAL, "threads -1"},
        {{.threads = 1025}, TSR_EINVAL, "threads 1025"},
        {{.memory = -5}, TSR_EINVAL, "memory -5"},
        {{.memory = 4096}, TSR_EPLAN, "memory"},
        {{.backend = "tpu"}, TSR_EINVAL, "tpu"},
        {{.rows = {5, 0}}, TSR_EINVAL, "rows [5, 0)"},
        {{.rows = {10, 5}}, TSR_EINVAL, "10:5"},
        {{.rows = {0, 334}}, TSR_EINVAL, "0:334"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        bad[i].o.base_dir = TSR_SRC_DIR;
        tsr_job *j = tsr_job_open_yaml(swath_yaml, strlen(swath_yaml), "m.yaml", &bad[i].o,
                                       &err);
        cr_assert_null(j, "case %zu opened", i);
        cr_assert_eq(err.status, bad[i].st, "case %zu: %s", i, err.msg);
        cr_assert(strstr(err.msg, bad[i].says), "case %zu: %s", i, err.msg);
    }
}

Test(job, a_read_after_the_end_returns_0)
{
    tsr_job_opts o = {.threads = 1};
    tsr_job *j = open_yaml(periodic_yaml, &o);
    uint8_t buf[4096];
    uint64_t total = 1000 * 517;
    tsr_error err = {0};
    cr_assert_eq(tsr_job_seek(j, total - 5, &err), TSR_OK);
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), 5);
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), 0);
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), 0);
    cr_assert_eq(tsr_job_offset(j), total);
    cr_assert_eq(tsr_job_error(j)->status, TSR_OK);
    /* and a seek back reads again */
    cr_assert_eq(tsr_job_seek(j, 0, &err), TSR_OK);
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), (int64_t)sizeof buf);
    tsr_job_close(j);
}

Test(job, a_seek_past_the_end_fails_clearly_and_keeps_the_position)
{
    tsr_job_opts o = {.threads = 1};
    tsr_job *j = open_yaml(periodic_yaml, &o);
    uint8_t buf[100];
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), 100);
    tsr_error err = {0};
    cr_assert_eq(tsr_job_seek(j, 1000 * 517 + 1, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "offset 517001 is past the end of the stream (517000 bytes)");
    cr_assert_eq(tsr_job_offset(j), 100);
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), 100, "the job still reads");
    tsr_job_close(j);
}

Test(job, a_null_buffer_is_refused_and_the_job_goes_on)
{
    tsr_job_opts o = {.threads = 1};
    tsr_job *j = open_yaml(periodic_yaml, &o);
    cr_assert_eq(tsr_job_read(j, NULL, 10), -TSR_EINVAL);
    cr_assert(strstr(tsr_job_error(j)->msg, "buf is NULL"), "%s", tsr_job_error(j)->msg);
    uint8_t buf[10];
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), 10);
    tsr_job_close(j);
}

/* A 1e6 x 1e6 root (1 TB of samples): no read loop finishes it, so the read ends only because
 * of the stop. The stopper waits for the first bytes, so the stop lands mid-stream. */
static void *
stop_after_first_bytes(void *arg)
{
    tsr_job *j = arg;
    while (tsr_job_offset(j) == 0)
        usleep(1000);
    tsr_job_stop(j);
    return NULL;
}

Test(job, a_stop_from_another_thread_ends_the_read_with_a_stop_status, .timeout = 120)
{
    const char *yaml = "tessera: 1\n"
                       "tile: 64\n"
                       "root:\n"
                       "  size: [1000000, 1000000]\n"
                       "  source: {shape: circle, center: [500000, 500000], radius: 400000}\n";
    tsr_job_opts o = {.threads = 2};
    tsr_job *j = open_yaml(yaml, &o);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, stop_after_first_bytes, j), 0);
    static uint8_t buf[1 << 20];
    int64_t k;
    while ((k = tsr_job_read(j, buf, sizeof buf)) > 0)
        continue;
    pthread_join(t, NULL);
    cr_assert_eq(k, -TSR_EINTR, "%lld: %s", (long long)k, tsr_job_error(j)->msg);
    uint64_t at = tsr_job_offset(j);
    cr_assert(at > 0 && at < 1000000ull * 1000000ull);
    char want[96];
    snprintf(want, sizeof want, "stopped at byte %llu (tsr_job_stop)", (unsigned long long)at);
    cr_assert_str_eq(tsr_job_error(j)->msg, want);
    /* sticky: the job stays stopped, where it was */
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), -TSR_EINTR);
    tsr_error err = {0};
    cr_assert_eq(tsr_job_seek(j, 0, &err), TSR_EINTR);
    cr_assert_eq(tsr_job_offset(j), at);
    tsr_job_close(j);
}

Test(job, a_stop_before_the_first_read_computes_nothing)
{
    tsr_job_opts o = {.threads = 1};
    tsr_job *j = open_yaml(swath_yaml, &o);
    tsr_job_stop(j);
    uint8_t buf[64];
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), -TSR_EINTR);
    tsr_job_stats st;
    tsr_job_get_stats(j, &st);
    cr_assert_eq(st.bands, 0);
    cr_assert_eq(st.cache_misses, 0);
    tsr_job_close(j);
}

Test(job, the_header_is_the_framed_streams)
{
    tsr_job_opts o = {.threads = 1, .rows = {3, 200}};
    tsr_job *j = open_yaml(swath_yaml, &o);
    tsr_header h;
    tsr_error err = {0};
    cr_assert_eq(tsr_job_header(j, &h, &err), TSR_OK, "%s", err.msg);
    /* the crop's sizes, the swath order; the fingerprint the engine's (what `render --framed`
     * sends) */
    tsr_design *d = th_design(swath_yaml);
    tsr_engine_opts eo = {.backend = "cpu", .threads = 1, .rows = {3, 200}};
    tsr_engine *e = tsr_engine_new(d, &eo, &err);
    cr_assert_not_null(e, "%s", err.msg);
    tsr_header eh, want = {.version = 1, .depth = 16, .width = 700, .height = 197, .order = 1,
                           .serpentine = 1, .start = 3, .swath_width = 300,
                           .total = 700ull * 197 * 2};
    cr_assert_eq(tsr_engine_header(e, &eh, &err), TSR_OK, "%s", err.msg);
    memcpy(want.fingerprint, eh.fingerprint, sizeof want.fingerprint);
    uint8_t a[TSR_HEADER_SIZE], b[TSR_HEADER_SIZE];
    tsr_header_encode(&h, a);
    tsr_header_encode(&want, b);
    cr_assert(memcmp(a, b, sizeof a) == 0, "the job's header is not the engine's");
    tsr_engine_free(e);
    tsr_design_free(d);
    tsr_job_close(j);
    cr_assert(strchr(tsr_version(), '.'), "%s", tsr_version());
}

/* The library never writes to stdout or stderr: not on success, not on any failure. */
Test(job, the_library_prints_nothing, .init = cr_redirect_stdout)
{
    cr_redirect_stderr();
    tsr_error err = {0};
    const char *bad = "tessera: 1\nroot: {size: [0, 48]}\n";
    cr_assert_null(tsr_job_open_yaml(bad, strlen(bad), NULL, NULL, &err));
    cr_assert_null(tsr_job_open("/nonexistent/x.yaml", NULL, &err));
    tsr_job_opts o = {.threads = 1};
    tsr_job *j = open_yaml(periodic_yaml, &o);
    uint8_t buf[4096];
    while (tsr_job_read(j, buf, sizeof buf) > 0)
        continue;
    cr_assert_eq(tsr_job_seek(j, 1u << 30, &err), TSR_EINVAL);
    (void)tsr_job_read(j, NULL, 1);
    tsr_job_stop(j);
    cr_assert_eq(tsr_job_seek(j, 0, &err), TSR_OK);
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), -TSR_EINTR);
    tsr_job_close(j);
    fflush(stdout);
    fflush(stderr);
    cr_assert_stdout_eq_str("");
    cr_assert_stderr_eq_str("");
}

/* A read of 0 bytes is not the end of the stream (which is what 0 means): it is refused, the
 * position kept, and the next read goes on (not sticky). */
Test(job, a_read_of_0_bytes_is_refused_not_taken_for_the_end)
{
    tsr_job_opts o = {.threads = 1};
    tsr_job *j = open_yaml(periodic_yaml, &o);
    uint8_t buf[64];
    cr_assert_eq(tsr_job_read(j, buf, 0), -(int64_t)TSR_EINVAL);
    cr_assert(strstr(tsr_job_error(j)->msg, "n is 0"), "%s", tsr_job_error(j)->msg);
    cr_assert_eq(tsr_job_offset(j), 0);
    cr_assert_eq(tsr_job_read(j, buf, sizeof buf), (int64_t)sizeof buf);
    tsr_job_close(j);
}

/* Every public function takes NULL where a job, a header or a stats struct belongs without
 * crashing: TSR_EINVAL where it returns a status. */
Test(job, null_arguments_are_refused_not_crashed_on)
{
    tsr_error err = {0};
    tsr_header h;
    tsr_job_stats st;
    uint8_t buf[8];
    cr_assert_null(tsr_job_open(NULL, NULL, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert_null(tsr_job_open_yaml(NULL, 0, NULL, NULL, &err));
    cr_assert_eq(tsr_job_header(NULL, &h, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "job is NULL"), "%s", err.msg);
    cr_assert_eq(tsr_job_read(NULL, buf, sizeof buf), -(int64_t)TSR_EINVAL);
    cr_assert_eq(tsr_job_seek(NULL, 0, &err), TSR_EINVAL);
    cr_assert_eq(tsr_job_offset(NULL), 0);
    tsr_job_stop(NULL);
    tsr_job_get_stats(NULL, &st);
    cr_assert_eq(st.total, 0);
    cr_assert_eq(tsr_job_error(NULL)->status, TSR_EINVAL);
    tsr_job_close(NULL);
    tsr_job_opts o = {.threads = 1};
    tsr_job *j = open_yaml(periodic_yaml, &o);
    cr_assert_eq(tsr_job_header(j, NULL, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "h is NULL"), "%s", err.msg);
    tsr_job_get_stats(j, NULL);
    tsr_job_close(j);
}
