/* Allocation failures: every allocation our libraries make while loading a design, planning,
 * rendering, streaming and previewing is failed in turn (N = 1, 2, ... until the work
 * succeeds without reaching N). Each failure must come back as TSR_ENOMEM with a message, or
 * be absorbed with the same result as without it; an engine that failed a render must render
 * correctly afterwards (the tile cache is left consistent); and under ASan nothing leaks
 * (LeakSanitizer is asked after every design, failures included).
 *
 * The allocator is injected at link time (tests/alloc/failing_alloc.h): libc, libyaml,
 * libpng and libgomp allocate normally, so their own out-of-memory paths are not covered.
 *
 * No .timeout on these tests: Criterion 2.4.1's runner leaks 48 bytes when three or more tests
 * with a timeout run under --jobs 2, which fails the ASan build on Criterion's leak. */
#include "alloc/failing_alloc.h"
#include "designs/designs.h"
#include "engine/engine.h"
#include "helpers/helpers.h"
#include "tessera.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define NO_LEAKS(what) \
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "%s: leaked (report above)", what)
#else
#define NO_LEAKS(what) ((void)(what))
#endif

/* Per design: allocation failure points tried, for docs/reliability.md. */
static void
report(const char *what, const char *path, long points)
{
    const char *base = strrchr(path, '/');
    fprintf(stderr, "alloc: %-8s %-34s %5ld failure points\n", what, base ? base + 1 : path,
            points);
}

/* The failure point after n: every one up to EXHAUSTIVE, then a stride that grows with n. A
 * design's first allocations reach every code path it has; past them, a large layout's or
 * font's thousands are the same few paths repeated per shape or glyph, and each point costs a
 * whole load or render again (the suite went from seconds to tens of minutes when the layout,
 * text and optics examples came: O(points^2)). Sampled, a design of N points costs about
 * EXHAUSTIVE + 32 ln(N / EXHAUSTIVE) runs, and the last point is still reached: the loops stop
 * at the first run in which no allocation failed. 256 and 1/32: 1024 and 1/64 cost the sanitizer
 * half of `make check` over a minute, and past a design's first few hundred allocations (its
 * tables, first nodes and shapes) the sites repeat per node, shape or glyph. */
#define EXHAUSTIVE 256
static long
next_point(long n)
{
    return n < EXHAUSTIVE ? n + 1 : n + 1 + n / 32;
}

static char *
dump_text(const tsr_design *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f != NULL);
    tsr_design_dump(d, f);
    fclose(f);
    return buf;
}

static char **
designs_to_load(void)
{
    const char *sets[] = {"tests/oracle/designs/*.yaml", "designs/examples/*.yaml",
                          "tests/designs/good/*.yaml"};
    size_t n = 0;
    char **all = NULL;
    for (size_t s = 0; s < 3; s++) {
        char **files = th_glob(sets[s]);
        for (size_t i = 0; files[i]; i++) {
            all = realloc(all, (n + 2) * sizeof *all);
            all[n++] = strdup(files[i]);
        }
        th_glob_free(files);
    }
    cr_assert(n > 0, "no designs found");
    all[n] = NULL;
    return all;
}

Test(alloc, every_allocation_of_every_design_load_can_fail_cleanly)
{
    char **files = designs_to_load();
    long total = 0;
    for (size_t i = 0; files[i]; i++) {
        tsr_error err = {TSR_OK, ""};
        tsr_design *ref = tsr_engine_load(files[i], &err);
        if (!ref) {
            /* tests/designs/good/ holds loader fixtures naming absent images on purpose */
            cr_assert(strstr(files[i], "/tests/designs/good/") != NULL, "%s: %s", files[i],
                      err.msg);
            continue;
        }
        char *want = dump_text(ref);
        tsr_design_free(ref);
        long n = 1, tried = 0;
        for (;; n = next_point(n), tried++) {
            err = (tsr_error){TSR_OK, ""};
            fa_arm(n);
            tsr_design *d = tsr_engine_load(files[i], &err);
            fa_disarm();
            bool fired = fa_fired();
            if (d) {
                /* a failure absorbed (or none injected) must not change the design */
                char *got = dump_text(d);
                cr_assert_str_eq(got, want, "%s: allocation %ld failed, the design differs",
                                 files[i], n);
                free(got);
                tsr_design_free(d);
                if (!fired)
                    break;
                continue;
            }
            cr_assert(fired, "%s: failed without an allocation failure: %s", files[i], err.msg);
            cr_assert_eq(err.status, TSR_ENOMEM, "%s: allocation %ld failed: status %s (%s)",
                         files[i], n, tsr_status_name(err.status), err.msg);
            cr_assert(err.msg[0], "%s: allocation %ld failed without a message", files[i], n);
        }
        free(want);
        NO_LEAKS(files[i]);
        report("load", files[i], tried);
        total += tried;
    }
    fprintf(stderr, "alloc: load total %ld failure points\n", total);
    th_glob_free(files);
}

/* A rect of at most 24 x 24 around the root's centre (seams of small tiles inside it). */
static tsr_rect
small_rect(const tsr_design *d)
{
    int64_t w = d->root->w < 24 ? d->root->w : 24, h = d->root->h < 24 ? d->root->h : 24;
    return tsr_rect_make((d->root->w - w) / 2, (d->root->h - h) / 2, w, h);
}

static float *
render_ref(const tsr_design *d, tsr_rect r, const tsr_engine_opts *o)
{
    tsr_error err = {TSR_OK, ""};
    tsr_engine *e = tsr_engine_new(d, o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    float *px = malloc((size_t)r.w * (size_t)r.h * sizeof *px);
    cr_assert(tsr_engine_render_rect(e, r, px, &err) == TSR_OK, "%s", err.msg);
    tsr_engine_free(e);
    return px;
}

/* tsr_engine_new + tsr_engine_render_rect with allocation n failed. Returns whether the
 * injected failure was reached. */
static bool
render_failing(const tsr_design *d, const char *path, tsr_rect r, const tsr_engine_opts *o,
               const float *want, long n)
{
    size_t bytes = (size_t)r.w * (size_t)r.h * sizeof(float);
    float *px = malloc(bytes);
    tsr_error err = {TSR_OK, ""};
    fa_arm(n);
    tsr_engine *e = tsr_engine_new(d, o, &err);
    tsr_status st = e ? tsr_engine_render_rect(e, r, px, &err) : err.status;
    fa_disarm();
    bool fired = fa_fired();
    if (st == TSR_OK) {
        cr_assert(memcmp(px, want, bytes) == 0, "%s: allocation %ld failed, pixels differ", path,
                  n);
    } else {
        cr_assert(fired, "%s: failed without an allocation failure: %s", path, err.msg);
        cr_assert_eq(st, TSR_ENOMEM, "%s: allocation %ld failed: status %s (%s)", path, n,
                     tsr_status_name(st), err.msg);
        cr_assert(err.msg[0], "%s: allocation %ld failed without a message", path, n);
        if (e) {
            /* the same engine, its cache after the failure, renders right */
            memset(px, 0, bytes);
            err = (tsr_error){TSR_OK, ""};
            cr_assert(tsr_engine_render_rect(e, r, px, &err) == TSR_OK,
                      "%s: render after allocation %ld failed: %s", path, n, err.msg);
            cr_assert(memcmp(px, want, bytes) == 0,
                      "%s: pixels differ after allocation %ld failed", path, n);
        }
    }
    tsr_engine_free(e);
    free(px);
    return fired;
}

/* tsr_sink_open("null") + tsr_engine_stream with allocation n failed. */
static bool
stream_failing(const tsr_design *d, const char *path, const tsr_engine_opts *o, long n)
{
    tsr_error err = {TSR_OK, ""};
    fa_arm(n);
    tsr_sink *s = tsr_sink_open("null", &err);
    tsr_engine *e = s ? tsr_engine_new(d, o, &err) : NULL;
    tsr_status st = e ? tsr_engine_stream(e, s, 0, NULL, NULL, &err) : err.status;
    fa_disarm();
    bool fired = fa_fired();
    if (s) {
        tsr_error cerr = {TSR_OK, ""};
        tsr_status cs = tsr_sink_close(s, &cerr);
        cr_assert(cs == TSR_OK || st != TSR_OK, "%s: close: %s", path, cerr.msg);
    }
    if (st == TSR_OK) {
        cr_assert(e != NULL);
    } else {
        cr_assert(fired, "%s: stream failed without an allocation failure: %s", path, err.msg);
        cr_assert_eq(st, TSR_ENOMEM, "%s: stream, allocation %ld failed: status %s (%s)", path,
                     n, tsr_status_name(st), err.msg);
        cr_assert(err.msg[0], "%s: allocation %ld failed without a message", path, n);
    }
    tsr_engine_free(e);
    return fired;
}

Test(alloc, every_allocation_of_a_small_render_can_fail_cleanly)
{
    char **files = designs_to_load();
    long total = 0;
    tsr_engine_opts o = {.backend = "cpu", .threads = 1};
    size_t step = th_sample_step();
    for (size_t i = 0; files[i]; i++) {
        if (strstr(files[i], "/tests/designs/good/") || i % step)
            continue; /* loader fixtures; the sanitizer build's sample (th_sample_step) */
        tsr_error err = {TSR_OK, ""};
        tsr_design *d = tsr_engine_load(files[i], &err);
        cr_assert(d != NULL, "%s: %s", files[i], err.msg);
        /* the design's tiles on 24 x 24, and tiles of 7 (many tiles, halos assembled from
         * several) on the middle 10 x 10 of that */
        for (int64_t tile = 0; tile <= 7; tile += 7) {
            tsr_engine_opts ot = o;
            ot.tile = tile;
            tsr_rect r = small_rect(d);
            if (tile) {
                int64_t w = r.w < 10 ? r.w : 10, h = r.h < 10 ? r.h : 10;
                r = tsr_rect_make(r.x + (r.w - w) / 2, r.y + (r.h - h) / 2, w, h);
            }
            uint64_t t0 = tsr_now_ns();
            float *want = render_ref(d, r, &ot);
            /* a design whose 7 px tiles take long to draw (a surface's exact zone edges,
             * per tile) would make this test its whole cost: the 24 x 24 pass covers its
             * paths (not a timing assertion: it only chooses what is run) */
            if (tile && tsr_now_ns() - t0 > 200000000) {
                report("render7", files[i], 0);
                free(want);
                continue;
            }
            long n = 1, tried = 0;
            while (render_failing(d, files[i], r, &ot, want, n))
                n = next_point(n), tried++;
            report(tile ? "render7" : "render", files[i], tried);
            total += tried;
            free(want);
        }
        /* whole streams of the tiny designs (the writer thread, band buffers, sinks) */
        if (d->root->w * d->root->h <= 64 * 64) {
            long m = 1, tried = 0;
            while (stream_failing(d, files[i], &o, m))
                m = next_point(m), tried++;
            report("stream", files[i], tried);
            total += tried;
        }
        tsr_design_free(d);
        NO_LEAKS(files[i]);
    }
    fprintf(stderr, "alloc: render+stream total %ld failure points\n", total);
    th_glob_free(files);
}

Test(alloc, every_allocation_of_a_preview_can_fail_cleanly)
{
    const char *rel[] = {"designs/examples/microlens-sphere.yaml",
                         "tests/oracle/designs/image_gray.yaml"};
    char out[] = "/tmp/tsr-alloc-XXXXXX";
    int fd = mkstemp(out);
    cr_assert(fd >= 0);
    close(fd);
    for (size_t i = 0; i < 2; i++) {
        char *path = th_src(rel[i]);
        tsr_error err = {TSR_OK, ""};
        tsr_design *d = tsr_engine_load(path, &err);
        cr_assert(d != NULL, "%s: %s", path, err.msg);
        tsr_engine_opts o = {.backend = "cpu", .threads = 1};
        tsr_rect r = small_rect(d);
        long n = 1;
        for (;; n++) {
            err = (tsr_error){TSR_OK, ""};
            fa_arm(n);
            tsr_engine *e = tsr_engine_new(d, &o, &err);
            tsr_status st = e ? tsr_engine_preview(e, r, 3, 16, out, &err) : err.status;
            fa_disarm();
            bool fired = fa_fired();
            tsr_engine_free(e);
            if (st != TSR_OK) {
                cr_assert(fired, "%s: preview failed: %s", path, err.msg);
                cr_assert_eq(st, TSR_ENOMEM, "%s: preview, allocation %ld failed: %s (%s)",
                             path, n, tsr_status_name(st), err.msg);
            }
            if (!fired)
                break;
        }
        report("preview", path, n - 1);
        tsr_design_free(d);
        free(path);
        NO_LEAKS(rel[i]);
    }
    unlink(out);
}

/* Two worker threads share the tile cache: a failure in one while the other waits for the
 * same tile must hand the computation over or fail cleanly, never hang or leak. Which call is
 * "the n-th" now depends on the schedule, so n runs over the count of a whole run. */
Test(alloc, failures_on_two_threads_leave_the_cache_consistent)
{
    const char *rel[] = {"tests/oracle/designs/refs_nested.yaml",
                         "designs/examples/microlens-sphere.yaml"};
    for (size_t i = 0; i < 2; i++) {
        char *path = th_src(rel[i]);
        tsr_error err = {TSR_OK, ""};
        tsr_design *d = tsr_engine_load(path, &err);
        cr_assert(d != NULL, "%s: %s", path, err.msg);
        tsr_engine_opts o = {.backend = "cpu", .threads = 2, .tile = 7};
        tsr_rect r = small_rect(d);
        float *want = render_ref(d, r, &o);
        /* a whole run's calls, counted with a failure that never comes */
        fa_arm(-1);
        free(render_ref(d, r, &o));
        long calls = fa_calls();
        fa_disarm();
        /* every 7th point: OpenMP's thread start-up per band makes each try slow */
        long tried = 0;
        for (long n = 1; n <= calls; n += 7, tried++)
            render_failing(d, path, r, &o, want, n);
        report("render2t", path, tried);
        free(want);
        tsr_design_free(d);
        free(path);
        NO_LEAKS(rel[i]);
    }
}

/* The pull API (engine/job.c): open from YAML in memory, read the whole stream in reads that
 * straddle bands, with allocation n failed. A failed open is TSR_ENOMEM with a message; a
 * failed read -TSR_ENOMEM; a job that read to the end has the bytes of a run without a
 * failure; nothing leaks either way. */
static bool
job_failing(const char *yaml, const uint8_t *want, size_t len, long n)
{
    tsr_error err = {TSR_OK, ""};
    tsr_job_opts o = {.backend = "cpu", .threads = 1};
    uint8_t *got = calloc(1, len + 1);
    cr_assert_not_null(got);
    fa_arm(n);
    tsr_job *j = tsr_job_open_yaml(yaml, strlen(yaml), "job.yaml", &o, &err);
    int64_t k = 0;
    size_t at = 0;
    while (j && (k = tsr_job_read(j, got + at, 1000)) > 0)
        at += (size_t)k;
    if (j && k < 0)
        err = *tsr_job_error(j);
    tsr_job_close(j);
    fa_disarm();
    bool fired = fa_fired();
    if (j && k == 0) {
        cr_assert(at == len && memcmp(got, want, len) == 0,
                  "job: allocation %ld failed, the bytes differ", n);
    } else {
        cr_assert(fired, "job failed without an allocation failure: %s", err.msg);
        cr_assert_eq(j ? -k : err.status, TSR_ENOMEM, "job: allocation %ld failed: %s", n,
                     err.msg);
        cr_assert(err.msg[0], "job: allocation %ld failed without a message", n);
    }
    free(got);
    return fired;
}

Test(alloc, every_allocation_of_a_pulled_job_can_fail_cleanly)
{
    const char *yaml = "tessera: 1\n"
                       "tile: 16\n"
                       "output: {depth: 16, order: swath, swath: {width: 24, serpentine: true}}\n"
                       "root:\n"
                       "  size: [40, 37]\n"
                       "  source: {shape: circle, center: [20, 18], radius: 15}\n";
    size_t len = 40 * 37 * 2;
    uint8_t *want = malloc(len);
    tsr_error err = {TSR_OK, ""};
    tsr_job *j = tsr_job_open_yaml(yaml, strlen(yaml), "job.yaml", NULL, &err);
    cr_assert_not_null(j, "%s", err.msg);
    cr_assert_eq(tsr_job_read(j, want, len), (int64_t)len);
    tsr_job_close(j);
    long n = 1;
    while (job_failing(yaml, want, len, n))
        n++;
    report("job", "job.yaml", n - 1);
    cr_assert(n > 10, "only %ld allocations", n - 1);
    free(want);
    NO_LEAKS("job");
}

/* A framed, deflating sink with a team of framing threads (stream/team.c): its slots, payload
 * buffers, compressors and threads' records, each allocation failed in turn. The open fails
 * with TSR_ENOMEM and a message, nothing half made is left running or allocated; once it
 * opens, the frames are today's (the same file as with every allocation granted). */
Test(alloc, every_allocation_of_a_framing_team_can_fail_cleanly)
{
    size_t n = (3 << 20) + 777;
    uint8_t *d = malloc(n);
    for (size_t i = 0; i < n; i++)
        d[i] = (uint8_t)(i / 300 % 5 * 40);
    tsr_header h = th_header(n);
    tsr_sink_opts o = {.framed = true, .deflate = true, .header = &h, .threads = 3};
    char path[64], want_path[64];
    snprintf(path, sizeof path, "/tmp/tsr_alloc_team_%d.tsr", (int)getpid());
    snprintf(want_path, sizeof want_path, "/tmp/tsr_alloc_team_%d.want", (int)getpid());
    uint8_t *want = NULL;
    size_t want_n = 0;
    long n_fail = 0;
    for (long k = 0;; k++) {
        tsr_error err = {TSR_OK, ""};
        if (k > 0)
            fa_arm(k);
        tsr_sink *s = tsr_sink_open_ex(k > 0 ? path : want_path, &o, &err);
        fa_disarm();
        bool fired = k > 0 && fa_fired();
        if (!s) {
            cr_assert(fired, "open failed without an allocation failure: %s", err.msg);
            cr_assert_eq(err.status, TSR_ENOMEM, "allocation %ld: %s", k, err.msg);
            cr_assert(strstr(err.msg, "out of memory"), "allocation %ld: %s", k, err.msg);
            NO_LEAKS("framing team");
            n_fail++;
            continue;
        }
        cr_assert_eq(tsr_sink_write(s, d, n, &err), TSR_OK, "%s", err.msg);
        cr_assert_eq(tsr_sink_finish(s, &err), TSR_OK, "%s", err.msg);
        cr_assert_eq(tsr_sink_close(s, &err), TSR_OK, "%s", err.msg);
        size_t got_n = 0;
        uint8_t *got = th_read_file(k > 0 ? path : want_path, &got_n);
        cr_assert_not_null(got);
        if (k == 0) {
            want = got;
            want_n = got_n;
            continue;
        }
        cr_assert(got_n == want_n && memcmp(got, want, want_n) == 0, "allocation %ld", k);
        free(got);
        NO_LEAKS("framing team");
        if (!fired)
            break;
    }
    report("sink", "framed, deflated, 3 threads", n_fail);
    cr_assert_gt(n_fail, 3, "the team's allocations were not reached");
    unlink(path);
    unlink(want_path);
    free(want);
    free(d);
}
