/* optics: surface and noise sources (docs/optics.md). The hand-written math (arc tangent,
 * circular segments, exact disc areas, logarithm, normal quantile) against libm and closed
 * forms; Zernike terms against their textbook polynomials; every load-time rule's message;
 * noise and surfaces identical over tile sizes, thread counts and a resumed stream; and, on a
 * device, the GPU's floats equal to the CPU's bit for bit (skipped without one). The numpy
 * oracle of the surfaces, wraps and levels is tests/oracle/optics.py (cli_optics_oracle). */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "nodes/noise_math.h"
#include "nodes/surface_math.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- hand-written math ------------------------------------------------------------------- */

Test(optics, atan2_is_libms_to_a_few_ulps_in_every_quadrant)
{
    uint64_t st = 7;
    for (int i = 0; i < 200000; i++) {
        double x = ((double)(th_rand(&st) >> 11) / 9007199254740992.0 - 0.5) * 2e3;
        double y = ((double)(th_rand(&st) >> 11) / 9007199254740992.0 - 0.5) * 2e3;
        if (i % 7 == 0)
            y = 0.0;
        if (i % 11 == 0)
            x = 0.0;
        double got = tsr_sf_atan2(y, x), want = atan2(y, x);
        if (x == 0.0 && y == 0.0)
            want = 0.0;
        cr_assert(fabs(got - want) <= 1e-15 * fabs(want) + 1e-300, "atan2(%a, %a): %a, libm %a",
                  y, x, got, want);
    }
}

Test(optics, log_is_libms_to_a_few_ulps)
{
    uint64_t st = 11;
    for (int i = 0; i < 200000; i++) {
        double x = ldexp((double)(th_rand(&st) >> 11) / 9007199254740992.0 + 0.5,
                         (int)(th_rand(&st) % 120) - 60);
        double got = tsr_nz_log(x), want = log(x);
        cr_assert(fabs(got - want) <= 4e-16 * fabs(want) + 2e-16, "log(%a): %a, libm %a", x, got,
                  want);
    }
}

Test(optics, normal_quantile_meets_known_values_and_is_odd)
{
    /* Phi^-1 at 0.975, 0.8413447460685429, 1e-10 (tables) */
    cr_assert(fabs(tsr_nz_normal_quantile(0.975) - 1.959963984540054) < 3e-9);
    cr_assert(fabs(tsr_nz_normal_quantile(0.8413447460685429) - 1.0) < 2e-9);
    cr_assert(fabs(tsr_nz_normal_quantile(1e-10) + 6.361340902404056) < 1e-8);
    cr_assert_eq(tsr_nz_normal_quantile(0.5), 0.0);
    for (double p = 0.001; p < 0.5; p += 0.0173)
        cr_assert(fabs(tsr_nz_normal_quantile(p) + tsr_nz_normal_quantile(1 - p)) < 1e-9);
}

/* The area of pixel [x0, x0+1] x [y0, y0+1] in the disc of radius r at the origin by the
 * midpoint rule over x (10^6 strips): another road to the same number. */
static double
strips(double x0, double y0, double r)
{
    double n = 1e6, a = 0, dx = 1.0 / n;
    for (int i = 0; i < (int)n; i++) {
        double X = x0 + (i + 0.5) * dx, s = sqrt(fmax(r * r - X * X, 0));
        double top = fmin(s, y0 + 1), bot = fmax(-s, y0);
        a += top > bot ? (top - bot) * dx : 0;
    }
    return a;
}

Test(optics, disc_areas_sum_to_pi_r2_and_match_integration)
{
    double radii[] = {0.3, 0.7071, 1.0, 2.5, 17.3, 250.25};
    double centres[][2] = {{0, 0}, {0.5, 0.5}, {0.25, 0.8}, {-3.3, 7.1}, {1.5, -0.5}};
    for (size_t i = 0; i < sizeof radii / sizeof radii[0]; i++) {
        for (size_t c = 0; c < 5; c++) {
            double r = radii[i], sum = 0;
            int64_t lo = (int64_t)floor(-r - 5), hi = (int64_t)ceil(r + 9);
            for (int64_t y = lo; y <= hi; y++)
                for (int64_t x = lo; x <= hi; x++)
                    sum += tsr_sf_disc_area((double)x - centres[c][0], (double)y - centres[c][1], r);
            cr_assert(fabs(sum - M_PI * r * r) < 1e-9 * (1 + r * r), "r %g: sum %.15g, pi r^2 %.15g",
                      r, sum, M_PI * r * r);
        }
    }
    /* single pixels on the edge of a few discs, against a fine numeric integral */
    double cases[][3] = {{0.2, -0.4, 1.0}, {9.6, 3.1, 10.0}, {-0.5, -0.5, 0.6}, {99.5, -0.5, 100.0}};
    for (size_t k = 0; k < 4; k++) {
        double x0 = cases[k][0], y0 = cases[k][1], r = cases[k][2];
        double want = strips(x0, y0, r);
        double got = tsr_sf_disc_area(x0, y0, r);
        cr_assert(fabs(got - want) < 1e-6, "pixel (%g, %g) r %g: %.9g, integral %.9g", x0, y0, r,
                  got, want);
    }
}

Test(optics, segment_series_and_closed_form_agree_where_they_meet)
{
    for (double h = 0.45; h <= 0.55; h += 0.001) {
        double closed = asin(h) - h * sqrt(1 - h * h);
        cr_assert(fabs(tsr_sf_segment(h) - closed) < 1e-15, "h %g", h);
    }
    /* 2 (h^3 / 3 + h^5 / 10 + 3 h^7 / 56 + ...) */
    double h = 1e-3, want = 2 * (h * h * h / 3 + h * h * h * h * h / 10 + 3 * pow(h, 7) / 56);
    cr_assert(fabs(tsr_sf_segment(h) - want) < 1e-24);
}

/* ---- surfaces: the formulas at a few points ------------------------------------------------ */

static tsr_design *
load_ok(const char *yaml)
{
    return th_design(yaml);
}

static float
value_at(const tsr_design *d, int64_t x, int64_t y)
{
    float *px = th_rect(d, tsr_rect_make(x, y, 1, 1), 64, 1);
    float v = px[0];
    free(px);
    return v;
}

Test(optics, zernike_terms_are_their_textbook_polynomials)
{
    /* ANSI j: 4 = 2 rho^2 - 1; 3 = rho^2 sin 2theta = 2XY; 8 = (3 rho^3 - 2 rho) cos theta;
     * 12 = 6 rho^4 - 6 rho^2 + 1; 0 = 1 */
    tsr_design *d = load_ok("tessera: 1\nroot:\n  size: [100, 100]\n  source: {surface: zernike, "
                            "center: [50, 50], radius: 40, terms: [[4, 0.5], [3, -0.25], [8, 2], "
                            "[12, 0.125], [0, 0.1]]}\n");
    int64_t pts[][2] = {{50, 50}, {61, 40}, {20, 70}, {85, 52}, {49, 12}};
    for (size_t i = 0; i < 5; i++) {
        double X = ((double)pts[i][0] + 0.5 - 50) / 40, Y = ((double)pts[i][1] + 0.5 - 50) / 40;
        double r2 = X * X + Y * Y;
        double want = 0.5 * (2 * r2 - 1) - 0.25 * (2 * X * Y) + 2 * ((3 * r2 - 2) * X) +
                      0.125 * (6 * r2 * r2 - 6 * r2 + 1) + 0.1;
        float got = value_at(d, pts[i][0], pts[i][1]);
        cr_assert(fabs(got - want) < 1e-6, "pixel (%lld, %lld): %.9g, polynomial %.9g",
                  (long long)pts[i][0], (long long)pts[i][1], (double)got, want);
    }
    tsr_design_free(d);
}

Test(optics, outside_the_aperture_the_fill_shows)
{
    tsr_design *d = load_ok("tessera: 1\nroot:\n  size: [100, 100]\n  fill: 0.75\n  source: "
                            "{surface: asphere, center: [50, 50], aperture: 10, roc: 30}\n");
    cr_assert_eq(value_at(d, 5, 5), 0.75f);
    cr_assert_eq(value_at(d, 50, 50), (float)(1.0 / 30 * 0.5 / (1 + sqrt(1 - 0.5 / 900))));
    tsr_design_free(d);
}

/* ---- load-time rules --------------------------------------------------------------------- */

static void
refused(const char *source, const char *want)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "tessera: 1\nroot:\n  size: [64, 64]\n  source: %s\n", source);
    tsr_error err = {0};
    tsr_design *d = tsr_engine_load_string(yaml, strlen(yaml), "t.yaml", NULL, &err);
    cr_assert_null(d, "accepted: %s", source);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, want) != NULL, "%s: message '%s' lacks '%s'", source, err.msg, want);
}

Test(optics, bad_keys_are_refused_naming_the_key)
{
    refused("{surface: asphere, center: [1, 1], aperture: 5, wrap: 1, levels: 1}",
            "root.source.levels");
    refused("{surface: asphere, center: [1, 1], aperture: 5, levels: 4}", "needs 'wrap'");
    refused("{surface: asphere, center: [1, 1], aperture: 5, aa: true}", "needs 'wrap'");
    refused("{surface: asphere, center: [1, 1], aperture: 5, terms: [[3, 1]]}",
            "power 3 is not an even integer");
    refused("{surface: asphere, center: [1, 1], aperture: 5, terms: [[4, 1], [4, 2]]}",
            "power 4 given twice");
    refused("{surface: asphere, center: [1, 1], aperture: 5, terms: [[4, .nan]]}", "terms");
    refused("{surface: asphere, center: [1, 1], aperture: 11, roc: 10}", "reaches beyond the conic");
    refused("{surface: asphere, center: [1, 1], roc: 10}", "aperture");
    refused("{surface: cylinder, center: [1, 1], aperture: 6, roc: -5}", "reaches beyond the conic");
    refused("{surface: toroid, center: [1, 1], aperture: 6, roc: [100, 5]}", "along y");
    refused("{surface: vortex, center: [1, 1], charge: 0, height: 1}", "must not be 0");
    refused("{surface: vortex, center: [1, 1], charge: 1, height: 0}", "height");
    refused("{surface: grating, period: 0, height: 1}", "period");
    refused("{surface: zernike, center: [1, 1], radius: 5, terms: [[231, 1]]}", "index 231");
    refused("{surface: zernike, center: [1, 1], radius: 5, terms: [[2.5, 1]]}", "index 2.5");
    refused("{surface: zernike, center: [1, 1], radius: 5, terms: [[2, 1], [2, 1]]}", "given twice");
    refused("{surface: zernike, center: [1, 1], radius: 5, terms: [[0, 1], [1, 1], [2, 1], [3, 1], "
            "[4, 1], [5, 1], [6, 1], [7, 1], [8, 1], [9, 1], [10, 1], [11, 1], [12, 1], [13, 1], "
            "[14, 1], [15, 1], [16, 1]]}", "at most 16");
    refused("{surface: lens, center: [1, 1]}", "root.source.surface");
    refused("{noise: gaussian, sigma: 1, cell: 2.5}", "must be an integer");
    refused("{noise: gaussian, sigma: -1}", "sigma");
    refused("{noise: value, cell: 4}", "amplitude");
    refused("{noise: value, cell: 4, amplitude: 1, octaves: 17}", "octaves");
    refused("{noise: value, cell: 0, amplitude: 1}", "cell");
}

/* ---- tiles, threads, resume --------------------------------------------------------------- */

static const char invariance_yaml[] =
    "tessera: 1\n"
    "output: {depth: 16, range: [-2.0, 3.0]}\n"
    "root:\n"
    "  size: [300, 211]\n"
    "  fill: 0.25\n"
    "  source: {noise: value, seed: 12345, cell: 13.7, octaves: 4, amplitude: 1.5}\n"
    "  children:\n"
    "    - {trait: pattern, blend: add, node: {size: [300, 211], source: {noise: gaussian, "
    "seed: -3, sigma: 0.3, cell: 3}}}\n"
    "    - {trait: pattern, blend: add, offset: [-40, 10], node: {size: [200, 200], source: "
    "{surface: asphere, center: [95.3, 101.1], aperture: 90, roc: 120, conic: -1.2, "
    "terms: [[4, 1e-7]], wrap: 0.5, levels: 8, aa: true}}}\n"
    "    - {trait: pattern, blend: max, offset: [150, 0], node: {size: [150, 150], source: "
    "{surface: vortex, center: [75, 75], charge: 3, height: 1, levels: 16, aperture: 70}}}\n"
    "    - {trait: pattern, blend: add, offset: [0, 150], node: {size: [300, 61], source: "
    "{surface: grating, period: 17.5, angle: 30, height: 0.2}}}\n"
    "    - {trait: pattern, blend: add, offset: [180, 120], node: {size: [90, 90], source: "
    "{surface: axicon, center: [45, 45], aperture: 44, slope: 0.1, wrap: 0.7, aa: true}}}\n";

Test(optics, every_tile_size_thread_count_and_resume_gives_the_same_bytes, .timeout = 300)
{
    tsr_design *d = th_design(invariance_yaml);
    size_t n0 = 0;
    uint8_t *ref = th_stream(d, 512, 1, &n0);
    cr_assert_eq(n0, (size_t)300 * 211 * 2);
    int64_t tiles[] = {1, 7, 64};
    for (size_t t = 0; t < 3; t++)
        for (int th = 1; th <= 2; th++) {
            if (tiles[t] == 1 && th == 2)
                continue; /* 1 px tiles once is enough for the slow case */
            size_t n = 0;
            uint8_t *got = th_stream(d, tiles[t], th, &n);
            cr_assert_eq(n, n0);
            cr_assert(memcmp(got, ref, n) == 0, "tile %lld, %d threads: bytes differ",
                      (long long)tiles[t], th);
            free(got);
        }
    /* a resumed stream: from an odd byte offset mid-row */
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "cpu", .threads = 2, .tile = 37};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    uint64_t start = 300 * 2 * 77 + 131;
    size_t n = 0;
    uint8_t *got = th_stream_engine(e, start, &n);
    cr_assert(n == n0 || n == n0 - start, "resumed stream holds %zu bytes", n);
    cr_assert(memcmp(got + (n == n0 ? start : 0), ref + start, n0 - start) == 0,
              "the resumed stream differs");
    free(got);
    tsr_engine_free(e);
    free(ref);
    tsr_design_free(d);
}

Test(optics, gaussian_noise_has_its_mean_and_sigma_and_value_noise_its_range)
{
    tsr_design *d = th_design("tessera: 1\nroot:\n  size: [400, 300]\n  source: {noise: gaussian, "
                              "seed: 99, sigma: 2, mean: 1}\n");
    float *px = th_rect(d, tsr_rect_make(0, 0, 400, 300), 64, 2);
    double s = 0, s2 = 0;
    size_t n = 400 * 300;
    for (size_t i = 0; i < n; i++) {
        s += px[i];
        s2 += (double)px[i] * px[i];
    }
    double mean = s / (double)n, sd = sqrt(s2 / (double)n - mean * mean);
    cr_assert(fabs(mean - 1) < 0.03 && fabs(sd - 2) < 0.03, "mean %g sd %g", mean, sd);
    free(px);
    tsr_design_free(d);
    d = th_design("tessera: 1\nroot:\n  size: [400, 300]\n  source: {noise: value, seed: 5, "
                  "cell: 9.5, octaves: 3, amplitude: 2, mean: -1}\n");
    px = th_rect(d, tsr_rect_make(0, 0, 400, 300), 64, 2);
    float lo = px[0], hi = px[0];
    for (size_t i = 0; i < n; i++) {
        lo = px[i] < lo ? px[i] : lo;
        hi = px[i] > hi ? px[i] : hi;
    }
    cr_assert(lo >= -1.0f && hi < 1.0f && hi - lo > 1.0f, "value noise spans [%g, %g]",
              (double)lo, (double)hi);
    free(px);
    tsr_design_free(d);
}

/* nodes/noise.c draws value noise a row at a time, reusing corner hashes: every pixel must
 * still be the per-pixel function (what the GPU computes), bit for bit. */
Test(optics, value_noise_rows_are_the_per_pixel_function)
{
    double cells[] = {0.7, 1.0, 3.3, 40.0, 1000.5};
    for (size_t c = 0; c < 5; c++) {
        tsr_source s;
        tsr_source_defaults(&s, TSR_SRC_VALUE_NOISE);
        s.optic.seed = -77 + (int64_t)c;
        s.optic.cell = cells[c];
        s.optic.octaves = (int64_t)c + 1;
        s.optic.amplitude = 1.7;
        s.optic.mean = -0.2;
        /* 700 columns: chunks of 256 and a part; 90 rows: lattice rows shared by rows */
        tsr_rect r = tsr_rect_make(-1000 + 13 * (int64_t)c, 77 - 40 * (int64_t)c, 700, 90);
        float *px = malloc(700 * 90 * sizeof *px);
        tsr_source_render(&s, r, px);
        tsr_noise n;
        tsr_noise_make(&s, &n);
        for (int64_t y = 0; y < r.h; y++)
            for (int64_t x = 0; x < r.w; x++) {
                float want = tsr_nz_pixel(&n, r.x + x, r.y + y), got = px[y * r.w + x];
                cr_assert(memcmp(&got, &want, sizeof got) == 0, "cell %g: pixel (%lld, %lld): %a, "
                          "the function %a", cells[c], (long long)(r.x + x), (long long)(r.y + y),
                          (double)got, (double)want);
            }
        free(px);
    }
}

/* Gaussian blocks are drawn once per block along a row: still the per-pixel function. */
Test(optics, gaussian_blocks_are_the_per_pixel_function)
{
    int64_t cells[] = {1, 2, 3, 64};
    for (size_t c = 0; c < 4; c++) {
        tsr_source s;
        tsr_source_defaults(&s, TSR_SRC_GAUSSIAN_NOISE);
        s.optic.seed = 5 + (int64_t)c;
        s.optic.cell = (double)cells[c];
        s.optic.sigma = 0.7;
        tsr_rect r = tsr_rect_make(-301 + 7 * (int64_t)c, -3 - (int64_t)c, 500, 70);
        float *px = malloc(500 * 70 * sizeof *px);
        tsr_source_render(&s, r, px);
        tsr_noise n;
        tsr_noise_make(&s, &n);
        for (int64_t y = 0; y < r.h; y++)
            for (int64_t x = 0; x < r.w; x++) {
                float want = tsr_nz_pixel(&n, r.x + x, r.y + y), got = px[y * r.w + x];
                cr_assert(memcmp(&got, &want, sizeof got) == 0, "cell %lld: pixel (%lld, %lld)",
                          (long long)cells[c], (long long)(r.x + x), (long long)(r.y + y));
            }
        free(px);
    }
}

Test(optics, a_different_seed_gives_different_noise)
{
    tsr_design *a = th_design("tessera: 1\nroot:\n  size: [64, 64]\n  source: {noise: value, "
                              "seed: 1, cell: 4, amplitude: 1}\n");
    tsr_design *b = th_design("tessera: 1\nroot:\n  size: [64, 64]\n  source: {noise: value, "
                              "seed: 2, cell: 4, amplitude: 1}\n");
    float *pa = th_rect(a, tsr_rect_make(0, 0, 64, 64), 64, 1);
    float *pb = th_rect(b, tsr_rect_make(0, 0, 64, 64), 64, 1);
    size_t same = 0;
    for (size_t i = 0; i < 64 * 64; i++)
        same += pa[i] == pb[i];
    cr_assert(same < 64, "%zu of 4096 pixels equal", same);
    free(pa);
    free(pb);
    tsr_design_free(a);
    tsr_design_free(b);
}

/* ---- the GPU: the CPU's floats, bit for bit ------------------------------------------------- */

static void
gpu_equals_cpu(const tsr_design *d, tsr_rect r)
{
    size_t n = (size_t)r.w * (size_t)r.h;
    float *ref = th_rect(d, r, 512, 2);
    int64_t chunks[] = {0, 37 * 53};
    for (size_t c = 0; c < 2; c++) {
        tsr_error err = {0};
        tsr_engine_opts o = {.backend = "gpu", .gpu_chunk = chunks[c],
                             .gpu_memory = (int64_t)2 << 30};
        tsr_engine *e = tsr_engine_new(d, &o, &err);
        cr_assert(e != NULL, "gpu engine: %s", err.msg);
        float *got = malloc(n * sizeof *got);
        memset(got, 0xff, n * sizeof *got);
        cr_assert_eq(tsr_engine_render_rect(e, r, got, &err), TSR_OK, "%s", err.msg);
        for (size_t i = 0; i < n; i++)
            cr_assert(memcmp(&got[i], &ref[i], sizeof *got) == 0,
                      "chunk %lld: pixel (%lld, %lld) is %a on the GPU, %a on the CPU",
                      (long long)chunks[c], (long long)(r.x + (int64_t)(i % (size_t)r.w)),
                      (long long)(r.y + (int64_t)(i / (size_t)r.w)), (double)got[i],
                      (double)ref[i]);
        free(got);
        tsr_engine_free(e);
    }
    free(ref);
}

Test(optics, the_gpu_gives_the_cpus_floats_for_every_surface_and_noise, .timeout = 600)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_design *d = th_design(invariance_yaml);
    gpu_equals_cpu(d, tsr_rect_make(0, 0, d->root->w, d->root->h));
    tsr_design_free(d);
    char **files = th_glob("tests/oracle/optics/*.yaml");
    for (size_t i = 0; files[i]; i++) {
        tsr_error err = {0};
        tsr_design *f = tsr_engine_load(files[i], &err);
        cr_assert(f != NULL, "%s: %s", files[i], err.msg);
        gpu_equals_cpu(f, tsr_rect_make(0, 0, f->root->w, f->root->h));
        tsr_design_free(f);
    }
    th_glob_free(files);
}

Test(optics, the_gpu_streams_the_cpus_bytes, .timeout = 600)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_design *d = th_design(invariance_yaml);
    size_t n0 = 0, n1 = 0;
    uint8_t *ref = th_stream(d, 64, 2, &n0);
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "gpu", .gpu_memory = (int64_t)2 << 30};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    uint8_t *got = th_stream_engine(e, 0, &n1);
    cr_assert_eq(n0, n1);
    cr_assert(memcmp(ref, got, n0) == 0, "the GPU's stream differs from the CPU's");
    free(got);
    free(ref);
    tsr_engine_free(e);
    tsr_design_free(d);
}
