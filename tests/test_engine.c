/* engine: tile/thread invariance, output orders, crops, conversion, memory plan, preview. */
#include "designs/designs.h"
#include "image/image.h"
#include "engine/engine.h"
#include "helpers/helpers.h"
#include "nodes/pointwise.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int64_t tiles[] = {1, 7, 64, 512};

static void
assert_rect_invariant(const tsr_design *d, tsr_rect r, const char *what)
{
    float *ref = th_rect(d, r, 512, 1);
    for (size_t t = 0; t < 4; t++) {
        /* 1 px tiles on two threads only: they cost most of this suite under the sanitizers,
         * and two threads race for the same tiny tiles, which one thread never does */
        for (int threads = tiles[t] == 1 ? 2 : 1; threads <= 2; threads++) {
            float *got = th_rect(d, r, tiles[t], threads);
            cr_assert(memcmp(ref, got, (size_t)r.w * (size_t)r.h * sizeof(float)) == 0,
                      "%s: rect %lld,%lld,%lld,%lld differs at tile %lld, %d threads", what,
                      (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                      (long long)tiles[t], threads);
            free(got);
        }
    }
    free(ref);
}

static tsr_design *
load_file(const char *path)
{
    tsr_error err = {0};
    tsr_design *d = tsr_engine_load(path, &err);
    cr_assert(d != NULL, "%s: %s", path, err.msg);
    return d;
}

Test(engine, examples_give_identical_pixels_at_every_tile_size_and_thread_count)
{
    char **files = th_glob("designs/examples/*.yaml");
    cr_assert(files[0] != NULL, "no example designs found");
    size_t n = 0, step = th_sample_step();
    for (; files[n]; n++) {
        if (n % step)
            continue; /* the sanitizer build renders a sample (th_sample_step) */
        tsr_design *d = load_file(files[n]);
        int64_t w = d->root->w, h = d->root->h;
        /* the corner, and a region in the middle that straddles tile seams of every size */
        tsr_rect a = tsr_rect_make(0, 0, w < 150 ? w : 150, h < 90 ? h : 90);
        tsr_rect b = tsr_rect_make(w / 2 - 3, h / 2 - 5, w < 150 ? 1 : 140, h < 90 ? 1 : 70);
        assert_rect_invariant(d, a, files[n]);
        assert_rect_invariant(d, b, files[n]);
        tsr_design_free(d);
    }
    th_glob_free(files);
    cr_assert(n >= 3, "expected at least three example designs, found %zu", n);
}

/* Whole streams at tile 64 and 512 with 1 and 2 threads; tiles 1 and 7 on a corner and a
 * middle region only (a distance or blur halo makes tiny tiles cost hundreds of times more). */
static void
assert_stream_invariant(const char *path)
{
    tsr_design *d = load_file(path);
    /* designs made for the loader can be huge: stream only the small ones whole */
    bool small = (double)d->root->w * (double)d->root->h <= 4e6;
    for (int threads = 1; threads <= 2 && small; threads++) {
        size_t nref, n;
        uint8_t *ref = th_stream(d, 512, 1, &nref);
        uint8_t *got = th_stream(d, 64, threads, &n);
        cr_assert(n == nref && memcmp(ref, got, n) == 0,
                  "%s: stream differs at tile 64, %d threads", path, threads);
        free(got);
        free(ref);
    }
    int64_t w = d->root->w, h = d->root->h;
    tsr_rect corner = tsr_rect_make(0, 0, w < 40 ? w : 40, h < 40 ? h : 40);
    tsr_rect middle = tsr_rect_make(w / 3, h / 3, w - w / 3 < 33 ? w - w / 3 : 33,
                                    h - h / 3 < 29 ? h - h / 3 : 29);
    tsr_rect rs[2] = {corner, middle};
    for (int k = 0; k < 2; k++) {
        float *a = th_rect(d, rs[k], 512, 1);
        for (int t = 0; t < 2; t++) {
            float *b = th_rect(d, rs[k], t ? 7 : 1, 2);
            cr_assert(memcmp(a, b, (size_t)rs[k].w * (size_t)rs[k].h * 4) == 0,
                      "%s: tile %d differs in region %d", path, t ? 7 : 1, k);
            free(b);
        }
        free(a);
    }
    tsr_design_free(d);
}

Test(engine, test_designs_stream_identically_at_every_tile_size_and_thread_count, .timeout = 900)
{
    /* tests/designs/good/ are loader fixtures (some name absent images on purpose): not here */
    const char *sets[] = {"tests/oracle/designs/*.yaml"};
    size_t count = 0, step = th_sample_step(); /* every one, or a sample under the sanitizers */
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        char **files = th_glob(sets[s]);
        for (size_t i = 0; files[i]; i++)
            if (i % step == 0) {
                assert_stream_invariant(files[i]);
                count++;
            }
        th_glob_free(files);
    }
    cr_assert(count > 0, "no test designs found");
}

/* ---- output conversion ---------------------------------------------------------------- */

Test(engine, conversion_rounds_half_up_and_clamps)
{
    tsr_output o = {.depth = 8, .range = {0.0, 1.0}};
    cr_assert_eq(tsr_convert_one(&o, 0.5), 128); /* floor(127.5 + 0.5) */
    cr_assert_eq(tsr_convert_one(&o, -3.0), 0);
    cr_assert_eq(tsr_convert_one(&o, 7.0), 255);
    cr_assert_eq(tsr_convert_one(&o, 1.0 / 255.0 * 0.49), 0);
    o.range[0] = 1.0;
    o.range[1] = 0.0; /* inverted */
    cr_assert_eq(tsr_convert_one(&o, 0.0), 255);
    cr_assert_eq(tsr_convert_one(&o, 1.0), 0);
    o.depth = 16;
    o.range[0] = 0.0;
    o.range[1] = 2.0;
    cr_assert_eq(tsr_convert_one(&o, 1.0), 32768); /* floor(32767.5 + 0.5) */
    float v[2] = {0.0f, 2.0f};
    uint8_t out[4];
    tsr_convert(&o, v, 2, out);
    cr_assert(out[0] == 0 && out[1] == 0 && out[2] == 0xff && out[3] == 0xff);
    float one = 1.0f;
    tsr_convert(&o, &one, 1, out);
    cr_assert(out[0] == 0x00 && out[1] == 0x80, "16-bit samples are little-endian");
}

/* The vectorised 8-bit path (division, or a multiply where span is a power of two) against
 * the scalar reference, at rounding boundaries, for several ranges incl. inverted ones. */
Test(engine, fast_8bit_conversion_equals_the_reference_at_every_step)
{
    const double ranges[][2] = {{-0.25, 1.5}, {0.0, 1.0}, {1.0, 0.0}, {-2.0, 2.0}, {0.0, 0.5}, {0.1, 0.3}};
    enum { N = 4099 };
    static float v[N];
    static uint8_t out[2 * N];
    for (size_t r = 0; r < 2 * sizeof ranges / sizeof ranges[0]; r++) {
        int depth = r & 1 ? 16 : 8;
        tsr_output o = {.depth = depth, .range = {ranges[r / 2][0], ranges[r / 2][1]}};
        unsigned seed = 12345;
        double lo = o.range[0], span = o.range[1] - o.range[0];
        for (int i = 0; i < N; i++) {
            if (i < 1024) { /* values right at the rounding boundaries, and their neighbours */
                float f = (float)(lo + ((i / 4) + 0.5) / (depth == 8 ? 255.0 : 65535.0) * span);
                v[i] = (i & 3) == 0 ? f : (i & 3) == 1 ? nextafterf(f, 9) : (i & 3) == 2 ? nextafterf(f, -9) : -f;
            } else {
                seed = seed * 1103515245u + 12345u;
                v[i] = (float)((double)(seed >> 8) / (double)(1u << 24) * 5.0 - 2.5);
            }
        }
        v[7] = NAN;
        v[8] = INFINITY;
        v[9] = -INFINITY;
        tsr_convert(&o, v, N, out);
        for (int i = 0; i < N; i++) {
            uint32_t got = depth == 8 ? out[i] : (uint32_t)out[2 * i] | (uint32_t)out[2 * i + 1] << 8;
            cr_assert_eq(got, tsr_convert_one(&o, v[i]), "depth %d range [%g, %g]: value %.9g at %d",
                         depth, o.range[0], o.range[1], v[i], i);
        }
        cr_assert(out[7 * (depth / 8)] == 0, "NaN converts to 0");
    }
}

Test(engine, calibration_maps_through_its_segments)
{
    double pts[3][2] = {{0, 0}, {0.5, 0.42}, {1, 1}};
    tsr_output o = {.depth = 8, .range = {0.0, 1.0}, .calibration = {pts, 3}};
    cr_assert_eq(tsr_convert_one(&o, 0.5), (uint32_t)floor(0.42 * 255 + 0.5));
    cr_assert_eq(tsr_convert_one(&o, 1.0), 255);
    double t = 0.75, c = 0.42 + (1 - 0.42) * ((t - 0.5) / (1 - 0.5));
    cr_assert_eq(tsr_convert_one(&o, 0.75), (uint32_t)floor(c * 255 + 0.5));
    cr_assert_eq(tsr_convert_one(&o, 0.0), 0);
}

/* The threshold table the GPU converts by (nodes/output.c): for every range and depth, and
 * calibrations rising, falling and mixed, each sample from the table, stepped to from a guess
 * that is right, off by a few or at either end, is tsr_convert_one's; over each threshold and
 * its neighbours, random bit patterns (every exponent) and the infinities. A conversion that
 * is not monotone has no table. */
Test(engine, the_sample_table_gives_the_reference_sample_of_every_value)
{
    static double up[4][2] = {{0, 0}, {0.3, 0.45}, {0.3000001, 0.46}, {1, 1}};
    static double down[3][2] = {{0, 1}, {0.5, 0.42}, {1, 0.05}};
    static double flat[3][2] = {{0, 0.2}, {0.7, 0.2}, {1, 0.9}};
    static double mixed[3][2] = {{0, 0}, {0.5, 0.8}, {1, 0.3}};
    const tsr_points cals[] = {{NULL, 0}, {up, 4}, {down, 3}, {flat, 3}, {mixed, 3}};
    const double ranges[][2] = {{0.0, 1.0}, {1.0, 0.0}, {-0.25, 1.5}, {0.1, 0.3}, {-2.0, -1.0}};
    unsigned seed = 99;
    for (size_t c = 0; c < sizeof cals / sizeof cals[0]; c++)
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
            for (int depth = 8; depth <= 16; depth += 8) {
                tsr_output o = {.depth = depth, .range = {ranges[r][0], ranges[r][1]},
                                .calibration = cals[c]};
                tsr_sample_table t;
                tsr_error err = {0};
                cr_assert_eq(tsr_sample_table_make(&o, &t, &err), TSR_OK, "%s", err.msg);
                if (c == 4) {
                    cr_assert_eq(t.dir, 0, "a calibration up then down has no table");
                    continue;
                }
                cr_assert(t.dir == 1 || t.dir == -1, "cal %zu range %zu: no table", c, r);
                size_t nthr = t.smax - t.smin, tries = 0;
                for (size_t i = 0; i < 3 * nthr + 20000; i++) {
                    float v;
                    if (i < 3 * nthr) {
                        float w = t.thr[i / 3];
                        w = i % 3 == 0 ? w : nextafterf(w, i % 3 == 1 ? INFINITY : -INFINITY);
                        v = t.dir < 0 ? -w : w;
                    } else {
                        seed = seed * 1103515245u + 12345u;
                        uint32_t b = seed ^ (seed << 13);
                        memcpy(&v, &b, sizeof v);
                        if (i % 7 == 0)
                            v = (float)(o.range[0] + (double)(seed >> 8) / (1u << 24) *
                                                         (o.range[1] - o.range[0]));
                        if (isnan(v))
                            v = i & 1 ? INFINITY : -INFINITY;
                    }
                    float w = t.dir < 0 ? -v : v;
                    uint32_t want = tsr_convert_one(&o, v);
                    const uint32_t guesses[] = {want, want + 2, want > 3 ? want - 3 : 0, 0,
                                                t.smax + 5};
                    /* the far guesses step through every sample: not at every value */
                    size_t ng = depth == 8 || i % 256 == 0 ? 5 : 3;
                    for (size_t g = 0; g < ng; g++, tries++)
                        cr_assert_eq(tsr_pw_table_sample(t.thr, t.smin, t.smax, w, guesses[g]),
                                     want, "depth %d range [%g, %g] cal %zu: value %.9g "
                                     "(guess %u)", depth, o.range[0], o.range[1], c, v,
                                     guesses[g]);
                }
                cr_assert(tries > 60000);
                tsr_sample_table_free(&t);
            }
}

/* ---- orders and crops --------------------------------------------------------------------- */

/* 37 x 23 root whose every pixel differs: a diagonal gradient at 16 bit */
static const char *order_yaml =
    "tessera: 1\n"
    "output: {depth: 16, order: %s, swath: {width: %d, serpentine: %s, start: %s}}\n"
    "root:\n"
    "  size: [37, 23]\n"
    "  source: {gradient: linear, from: [0, 0], to: [37, 23], values: [0.0, 1.0]}\n";

static const char *raster_yaml =
    "tessera: 1\n"
    "output: {depth: 16}\n"
    "root:\n"
    "  size: [37, 23]\n"
    "  source: {gradient: linear, from: [0, 0], to: [37, 23], values: [0.0, 1.0]}\n";

Test(engine, swath_orders_follow_start_corner_and_serpentine)
{
    tsr_design *rd = th_design(raster_yaml);
    size_t nr;
    uint16_t *raster = (uint16_t *)th_stream(rd, 8, 2, &nr);
    tsr_design_free(rd);
    const int W = 37, H = 23;
    const char *corners[] = {"top-left", "top-right", "bottom-left", "bottom-right"};
    int widths[] = {10, 37, 50, 1};
    for (int c = 0; c < 4; c++) {
        for (int s = 0; s < 2; s++) {
            for (int wi = 0; wi < 4; wi++) {
                char y[1024];
                int sw = widths[wi];
                snprintf(y, sizeof y, order_yaml, "swath", sw, s ? "true" : "false", corners[c]);
                tsr_design *d = th_design(y);
                size_t n;
                uint16_t *got = (uint16_t *)th_stream(d, 7, 2, &n);
                cr_assert_eq(n, nr);
                /* the expected order, written out from docs/format.md §7 */
                size_t at = 0;
                int eff = sw < W ? sw : W, ns = (W + eff - 1) / eff;
                bool right = c == 1 || c == 3, bottom = c == 2 || c == 3;
                for (int k = 0; k < ns; k++) {
                    int a = k * eff, b = a + eff < W ? a + eff : W;
                    int x0 = right ? W - b : a, x1 = right ? W - a : b;
                    bool up = bottom ^ (s && (k & 1));
                    for (int i = 0; i < H; i++) {
                        int row = up ? H - 1 - i : i;
                        for (int x = x0; x < x1; x++, at++)
                            cr_assert_eq(got[at], raster[row * W + x],
                                         "corner %s serpentine %d width %d: sample %zu", corners[c],
                                         s, sw, at);
                    }
                }
                free(got);
                tsr_design_free(d);
            }
        }
    }
    free(raster);
}

/* A periodic root streams by copying rows of its converted period (engine.c, fill_periodic):
 * checked against its pixels computed tile by tile (render_rect, the cached period tile's own
 * path) and converted one by one, in every order, crop and depth, at periods that divide
 * neither the root nor the swath nor the band. */
static const char *periodic_yaml =
    "tessera: 1\n"
    "output: %s\n"
    "nodes:\n"
    "  dot:\n"
    "    size: [13, 9]\n"
    "    source: {gradient: linear, from: [0, 0], to: [13, 9], values: [0.05, 0.95]}\n"
    "    children: [{trait: pattern, node: {size: [5, 5], source: {shape: circle, center: [2.5, "
    "2.5], radius: 2, aa: 3}}, offset: [4, 2]}]\n"
    "root:\n"
    "  size: [101, 47]\n"
    "  children: [{trait: repeat, ref: dot, offset: [-5, 4]}]\n";

Test(engine, periodic_root_streams_the_samples_of_its_pixels)
{
    const int W = 101, H = 47;
    const char *corners[] = {"top-left", "bottom-right", "top-right", "bottom-left"};
    int widths[] = {30, 101, 7};
    int crops[][2] = {{0, 47}, {3, 44}, {20, 21}};
    for (int depth = 8; depth <= 16; depth += 8) {
        for (int c = 0; c < 4; c++) {
            for (int wi = 0; wi < 3; wi++) {
                int sw = widths[wi], s = (c + wi) & 1, *crop = crops[(c + wi) % 3];
                char out[160], y[1024];
                if (wi == 1) /* raster: the start corner is swath order's */
                    snprintf(out, sizeof out, "{depth: %d}", depth);
                else
                    snprintf(out, sizeof out, "{depth: %d, order: swath, swath: {width: %d, "
                             "serpentine: %s, start: %s}}", depth, sw, s ? "true" : "false",
                             corners[c]);
                snprintf(y, sizeof y, periodic_yaml, out);
                tsr_design *d = th_design(y);
                float *px = th_rect(d, tsr_rect_make(0, 0, W, H), 7, 2);
                tsr_error err = {0};
                tsr_engine_opts o = {.backend = "cpu", .threads = 2, .tile = 16,
                                     .rows = {crop[0], crop[1]}};
                tsr_engine *e = tsr_engine_new(d, &o, &err);
                cr_assert_not_null(e, "%s", err.msg);
                int64_t per[2];
                cr_assert(tsr_engine_period(e, d->root, per, NULL), "the root is periodic");
                cr_assert(per[0] == 13 && per[1] == 9, "period %lld x %lld", (long long)per[0],
                          (long long)per[1]);
                char path[] = "/tmp/tsr-periodic-XXXXXX";
                close(mkstemp(path));
                tsr_sink *sk = tsr_sink_open(path, &err);
                cr_assert(tsr_engine_stream(e, sk, 0, NULL, NULL, &err) == TSR_OK, "%s", err.msg);
                cr_assert(tsr_sink_close(sk, &err) == TSR_OK);
                size_t n;
                uint8_t *got = th_read_file(path, &n);
                unlink(path);
                int h = crop[1] - crop[0], bps = depth / 8;
                cr_assert_eq(n, (size_t)(W * h * bps));
                /* the expected order, as in swath_orders_follow_start_corner_and_serpentine */
                size_t at = 0;
                int eff = wi == 1 || sw > W ? W : sw, ns = (W + eff - 1) / eff;
                bool right = wi != 1 && (c == 1 || c == 2);
                bool bottom = wi != 1 && (c == 1 || c == 3);
                for (int k = 0; k < ns; k++) {
                    int a = k * eff, b = a + eff < W ? a + eff : W;
                    int x0 = right ? W - b : a, x1 = right ? W - a : b;
                    bool up = bottom ^ (wi != 1 && s && (k & 1));
                    for (int i = 0; i < h; i++) {
                        int row = crop[0] + (up ? h - 1 - i : i);
                        for (int x = x0; x < x1; x++, at++) {
                            uint32_t want = tsr_convert_one(&d->out, px[row * W + x]);
                            uint32_t have = bps == 1 ? got[at]
                                                     : (uint32_t)got[2 * at] |
                                                           (uint32_t)got[2 * at + 1] << 8;
                            cr_assert_eq(have, want, "depth %d corner %s width %d crop %d:%d: "
                                         "sample %zu (x %d, row %d)", depth, corners[c], sw,
                                         crop[0], crop[1], at, x, row);
                        }
                    }
                }
                free(got);
                free(px);
                tsr_engine_free(e);
                tsr_design_free(d);
            }
        }
    }
}

Test(engine, rows_crop_streams_the_matching_rows)
{
    tsr_design *d = th_design(raster_yaml);
    size_t nr;
    uint8_t *all = th_stream(d, 5, 2, &nr);
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "cpu", .threads = 2, .tile = 5, .rows = {6, 17}};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_eq(tsr_engine_stream_bytes(e), (uint64_t)37 * 11 * 2);
    char path[] = "/tmp/tsr-rows-XXXXXX";
    close(mkstemp(path));
    tsr_sink *s = tsr_sink_open(path, &err);
    cr_assert(tsr_engine_stream(e, s, 0, NULL, NULL, &err) == TSR_OK, "%s", err.msg);
    cr_assert(tsr_sink_close(s, &err) == TSR_OK);
    size_t n;
    uint8_t *got = th_read_file(path, &n);
    unlink(path);
    cr_assert_eq(n, (size_t)37 * 11 * 2);
    cr_assert(memcmp(got, all + 37 * 6 * 2, n) == 0);
    free(got);
    free(all);
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(engine, rows_outside_the_root_are_refused)
{
    tsr_design *d = th_design(raster_yaml);
    tsr_error err = {0};
    tsr_engine_opts o = {.rows = {10, 24}};
    cr_assert_null(tsr_engine_new(d, &o, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "--rows 10:24") != NULL, "%s", err.msg);
    tsr_design_free(d);
}

/* ---- memory plan ------------------------------------------------------------------------ */

static const char *repeat_yaml =
    "tessera: 1\n"
    "nodes:\n"
    "  dot: {size: [50, 50], source: {shape: circle, center: [25, 25], radius: 20, aa: 2}}\n"
    "root:\n"
    "  size: [3000, 700]\n"
    "  children: [{trait: repeat, ref: dot, offset: [-7, 3]}]\n";

Test(engine, a_budget_below_the_plan_is_refused_naming_the_minimum)
{
    tsr_design *d = th_design(repeat_yaml);
    tsr_error err = {0};
    tsr_engine_opts o = {.threads = 2, .memory = 1000};
    cr_assert_null(tsr_engine_new(d, &o, &err));
    cr_assert_eq(err.status, TSR_EPLAN);
    cr_assert(strstr(err.msg, "needs at least") != NULL, "%s", err.msg);
    /* the named minimum really runs, and gives the same bytes as a roomy budget */
    const char *p = strstr(err.msg, "--memory ");
    cr_assert(p != NULL, "%s", err.msg);
    long long min = atoll(p + 9);
    o.memory = min;
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "minimum %lld refused: %s", min, err.msg);
    tsr_rect r = {0, 0, 3000, 700};
    float *a = malloc(3000 * 700 * 4);
    cr_assert(tsr_engine_render_rect(e, r, a, &err) == TSR_OK, "%s", err.msg);
    float *b = th_rect(d, r, 0, 2);
    cr_assert(memcmp(a, b, 3000 * 700 * 4) == 0);
    free(a);
    free(b);
    tsr_engine_free(e);
    tsr_design_free(d);
}

/* ---- preview ------------------------------------------------------------------------------ */

/* Preview region r at scale k (tile 0: the design's) and compare every block with the sum of
 * a reference render's values (each row's left to right, then the rows' sums top to bottom,
 * in double), divided by its pixel count.
 * Blocks are clipped to the region, so a k past its size is one block per axis. */
static void
check_preview(const tsr_design *d, int64_t tile, tsr_rect r, int64_t k)
{
    tsr_error err = {0};
    tsr_engine_opts o = {.threads = 2, .tile = tile};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    char path[] = "/tmp/tsr-prev-XXXXXX";
    close(mkstemp(path));
    cr_assert(tsr_engine_preview(e, r, k, 16, path, &err) == TSR_OK, "%s", err.msg);
    int64_t w, h;
    float *img;
    cr_assert(tsr_png_read_gray(path, &w, &h, &img, &err) == TSR_OK, "%s", err.msg);
    unlink(path);
    int64_t kx = k < r.w ? k : r.w, ky = k < r.h ? k : r.h;
    int64_t ow = (r.w + kx - 1) / kx, oh = (r.h + ky - 1) / ky;
    cr_assert(w == ow && h == oh, "preview is ceil(W/K) x ceil(H/K) = %lldx%lld: got %lldx%lld",
              (long long)ow, (long long)oh, (long long)w, (long long)h);
    float *px = th_rect(d, r, 0, 1);
    tsr_output out = d->out;
    out.depth = 16;
    for (int64_t by = 0; by < oh; by++) {
        for (int64_t bx = 0; bx < ow; bx++) {
            double s = 0;
            int64_t cnt = 0;
            for (int64_t y = by * ky; y < (by + 1) * ky && y < r.h; y++) {
                double rs = 0; /* each row left to right, the rows' sums top to bottom */
                for (int64_t x = bx * kx; x < (bx + 1) * kx && x < r.w; x++, cnt++)
                    rs += px[y * r.w + x];
                s += rs;
            }
            uint32_t want = tsr_convert_one(&out, s / (double)cnt);
            cr_assert_eq((uint32_t)lround(img[by * ow + bx] * 65535.0), want,
                         "k %lld, block %lld,%lld", (long long)k, (long long)bx, (long long)by);
        }
    }
    free(px);
    free(img);
    tsr_engine_free(e);
}

Test(engine, preview_averages_blocks_in_double_and_converts)
{
    tsr_design *d = th_design(repeat_yaml);
    check_preview(d, 0, tsr_rect_make(11, 5, 23, 17), 4);
    tsr_design_free(d);
}

/* --scale 2147483648 wrapped the strip buffer's size (a heap overflow), INT64_MAX overflowed
 * w + k - 1, 100000 asked for K x K floats: a scale past the region is the region. */
Test(engine, preview_scale_past_the_region_is_one_block)
{
    tsr_design *d = th_design(repeat_yaml);
    tsr_rect r = tsr_rect_make(11, 5, 23, 17);
    check_preview(d, 0, r, 23);
    check_preview(d, 0, r, 100000);
    check_preview(d, 0, r, (int64_t)1 << 31);
    check_preview(d, 0, r, INT64_MAX);
    tsr_design_free(d);
}

/* Blocks wider than a render call (4096 columns) are fed a row at a time across several calls
 * (tile 8: calls of 8 * 4096 columns, so block [30000, 35000) straddles one); the sums keep
 * row-major order all the same. */
Test(engine, preview_blocks_wider_than_a_render_call)
{
    tsr_design *d = th_design("tessera: 1\n"
                              "root:\n"
                              "  size: [50000, 6]\n"
                              "  source: {gradient: linear, from: [0, 0], to: [49999, 5], "
                              "values: [0.0, 1.0]}\n");
    tsr_rect r = tsr_rect_make(100, 1, 45000, 5);
    check_preview(d, 8, r, 5000);
    check_preview(d, 8, r, 7);
    check_preview(d, 8, r, INT64_MAX);
    tsr_design_free(d);
}
