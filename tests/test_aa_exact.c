/* aa_exact: `aa: exact` on the shapes (nodes/exact.c): exact pixel areas computed here by hand
 * (rect overlaps, areas of discs and rings, the hole of a pentagram under the even-odd rule),
 * the blend of a sampled shape, tiling invariance, the GPU's bytes equal to the CPU's (skips
 * without a device), the canonical form and dump, and the range check. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *
render(const char *yaml, int64_t *w, int64_t *h)
{
    tsr_design *d = th_design(yaml);
    *w = d->root->w;
    *h = d->root->h;
    float *px = th_rect(d, tsr_rect_make(0, 0, *w, *h), 0, 1);
    tsr_design_free(d);
    return px;
}

Test(aa_exact, rect_pixels_take_their_overlap_area)
{
    int64_t w, h;
    float *px = render("tessera: 1\nroot:\n  size: [8, 6]\n  fill: 0.25\n  source: {shape: rect, "
                       "rect: [0.25, 0.5, 3.3, 2.125], value: 0.75, aa: exact}\n",
                       &w, &h);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            double ox = fmax(0, fmin(x + 1.0, 3.55) - fmax((double)x, 0.25));
            double oy = fmax(0, fmin(y + 1.0, 2.625) - fmax((double)y, 0.5));
            double c = ox * oy, want = 0.25 * (1 - c) + 0.75 * c;
            cr_assert(fabs(px[y * w + x] - want) < 1e-6, "pixel %lld,%lld: %.9g, want %.9g",
                      (long long)x, (long long)y, px[y * w + x], want);
        }
    free(px);
}

/* Sum of the coverage over the node: the shape's area, within what the polygon of a curve
 * (vertices on it, 1e-6 px) loses. */
static double
covered_area(const char *shape, int64_t size)
{
    char y[512];
    snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [%lld, %lld]\n  source: {%s, aa: exact}\n",
             (long long)size, (long long)size, shape);
    int64_t w, h;
    float *px = render(y, &w, &h);
    double sum = 0;
    for (int64_t i = 0; i < w * h; i++) {
        cr_assert(px[i] >= 0 && px[i] <= 1, "pixel %lld: %g", (long long)i, px[i]);
        sum += px[i];
    }
    free(px);
    return sum;
}

Test(aa_exact, curves_cover_their_area)
{
    double a = covered_area("shape: circle, center: [20.3, 19.7], radius: 13.4", 48);
    cr_assert(fabs(a - M_PI * 13.4 * 13.4) < 1e-3, "circle: %.9g", a);
    a = covered_area("shape: ellipse, center: [24.5, 20.25], radii: [17.1, 6.6]", 48);
    cr_assert(fabs(a - M_PI * 17.1 * 6.6) < 1e-3, "ellipse: %.9g", a);
    a = covered_area("shape: ring, center: [24, 24], radii: [7.3, 15.9]", 48);
    cr_assert(fabs(a - M_PI * (15.9 * 15.9 - 7.3 * 7.3)) < 1e-3, "ring: %.9g", a);
    a = covered_area("shape: ring, center: [24, 24], radii: [0, 5]", 48);
    cr_assert(fabs(a - M_PI * 25) < 1e-3, "ring without a hole: %.9g", a);
}

Test(aa_exact, pixels_inside_and_outside_a_circle_are_whole)
{
    int64_t w, h;
    float *px = render("tessera: 1\nroot:\n  size: [40, 40]\n  source: {shape: circle, center: "
                       "[19.5, 20.25], radius: 12.6, aa: exact}\n",
                       &w, &h);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            double far = 0, near = 1e9;
            for (int k = 0; k < 4; k++) {
                double dx = x + (k & 1) - 19.5, dy = y + (k >> 1) - 20.25;
                far = fmax(far, hypot(dx, dy));
            }
            double cx = fmin(fmax(19.5, (double)x), x + 1.0), cy = fmin(fmax(20.25, (double)y), y + 1.0);
            near = hypot(cx - 19.5, cy - 20.25);
            if (far < 12.6 - 1e-3)
                cr_assert_eq(px[y * w + x], 1.0f, "inside %lld,%lld", (long long)x, (long long)y);
            if (near > 12.6)
                cr_assert_eq(px[y * w + x], 0.0f, "outside %lld,%lld", (long long)x, (long long)y);
        }
    free(px);
}

/* A pentagram's inner pentagon is crossed twice: outside under the even-odd rule of the sampled
 * fill, which `aa: exact` keeps. */
Test(aa_exact, a_self_crossing_polygon_keeps_the_even_odd_rule)
{
    char y[1024];
    int at = snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [64, 64]\n  source: {shape: "
                                   "polygon, aa: exact, points: [");
    for (int k = 0; k < 5; k++) {
        double t = M_PI / 2 + 2 * M_PI * (2 * k % 5) / 5.0;
        at += snprintf(y + at, sizeof y - (size_t)at, "%s[%.17g, %.17g]", k ? ", " : "",
                       32 + 30 * cos(t), 32 - 30 * sin(t));
    }
    snprintf(y + at, sizeof y - (size_t)at, "]}\n");
    int64_t w, h;
    float *px = render(y, &w, &h);
    /* the centre's pixels lie in the inner pentagon (radius 30 cos(72) / cos(36) = 11.5) */
    for (int64_t j = 29; j < 35; j++)
        for (int64_t i = 29; i < 35; i++)
            cr_assert_eq(px[j * w + i], 0.0f, "pixel %lld,%lld", (long long)i, (long long)j);
    /* a point of the star, inside once */
    cr_assert_eq(px[6 * w + 32], 1.0f);
    free(px);
}

Test(aa_exact, tiles_and_threads_change_no_byte)
{
    tsr_design *d = th_design(
        "tessera: 1\nroot:\n  size: [300, 200]\n  fill: 0.1\n  children:\n"
        "    - {trait: pattern, node: {size: [300, 200], fill: 0, source: {shape: circle, center: "
        "[150.3, 99.1], radius: 87.7, aa: exact}}, blend: add}\n"
        "    - {trait: pattern, node: {size: [300, 200], fill: 0, source: {shape: polygon, aa: "
        "exact, value: 0.5, points: [[3.3, 4], [290.1, 17.2], [20, 190.7], [250, 150]]}}, "
        "blend: add}\n");
    size_t n0 = 0;
    uint8_t *ref = th_stream(d, 512, 1, &n0);
    static const int64_t tiles[] = {7, 64};
    for (size_t t = 0; t < 2; t++)
        for (int threads = th_threads_from(tiles[t]); threads <= 2; threads++) {
            size_t n = 0;
            uint8_t *got = th_stream(d, tiles[t], threads, &n);
            cr_assert_eq(n, n0);
            cr_assert(memcmp(got, ref, n) == 0, "tile %lld, %d threads", (long long)tiles[t],
                      threads);
            free(got);
        }
    free(ref);
    tsr_design_free(d);
}

/* A shape's rings are made once at load and kept with the source; a repeat's per-copy radius
 * draws each copy from a copy of the source, which must not take the original's rings: each
 * copy equals a node drawn on its own with that radius, byte for byte. */
Test(aa_exact, per_copy_radii_do_not_take_the_loaded_rings)
{
    int64_t w, h, w1, h1;
    float *grid = render("tessera: 1\nroot:\n  size: [60, 20]\n  children:\n"
                         "    - trait: repeat\n      period: [20, 20]\n"
                         "      source-radius: \"3.3 + 2.1*i\"\n"
                         "      node:\n        size: [20, 20]\n"
                         "        source: {shape: circle, center: [9.7, 10.2], radius: 5, aa: exact}\n",
                         &w, &h);
    for (int i = 0; i < 3; i++) {
        char y[256];
        snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [20, 20]\n  source: {shape: circle, "
                 "center: [9.7, 10.2], radius: %.17g, aa: exact}\n", 3.3 + 2.1 * i);
        float *one = render(y, &w1, &h1);
        for (int64_t r = 0; r < 20; r++)
            cr_assert(memcmp(grid + r * w + 20 * i, one + r * w1, 20 * sizeof *one) == 0,
                      "copy %d row %lld differs from its own node", i, (long long)r);
        free(one);
    }
    /* and the copies differ: the radius took (row 10 crosses every circle) */
    cr_assert(memcmp(grid + 10 * w, grid + 10 * w + 20, 20 * sizeof *grid) != 0);
    free(grid);
}

Test(aa_exact, gpu_gives_the_cpu_bytes)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    static const char *const shapes[] = {
        "shape: rect, rect: [10.25, 7.5, 200.3, 100.125]",
        "shape: circle, center: [150.3, 99.1], radius: 87.7",
        "shape: ellipse, center: [150, 100], radii: [120.5, 33.3]",
        "shape: ring, center: [150.5, 100.5], radii: [40.2, 90]",
        "shape: polygon, points: [[3.3, 4], [290.1, 17.2], [20, 190.7], [250, 150]]",
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        char y[512];
        snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [300, 200]\n  fill: 0.3\n  source: "
                              "{%s, value: 0.9, aa: exact}\n", shapes[i]);
        tsr_design *d = th_design(y);
        size_t nc = 0, ng = 0;
        uint8_t *cpu = th_stream(d, 0, 2, &nc);
        tsr_engine_opts o = {.backend = "gpu", .gpu_chunk = 37 * 53, .gpu_memory = (int64_t)1 << 30};
        uint8_t *gpu = th_stream_opts(d, &o, &ng);
        cr_assert_eq(ng, nc);
        cr_assert(memcmp(gpu, cpu, nc) == 0, "%s", shapes[i]);
        free(cpu), free(gpu);
        tsr_design_free(d);
    }
}

static void
put(void *ctx, const void *bytes, size_t n)
{
    fwrite(bytes, 1, n, ctx);
}

Test(aa_exact, dump_and_canonical_form_say_exact)
{
    tsr_design *a = th_design("tessera: 1\nroot:\n  size: [8, 8]\n  source: {shape: circle, "
                              "center: [4, 4], radius: 3, aa: exact}\n");
    tsr_design *b = th_design("tessera: 1\nroot:\n  size: [8, 8]\n  source: {shape: circle, "
                              "center: [4, 4], radius: 3, aa: 4}\n");
    cr_assert_eq(a->root->source->aa, TSR_AA_EXACT);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tsr_design_dump(a, f);
    fclose(f);
    cr_assert(strstr(buf, "aa: exact"), "%s", buf);
    free(buf);
    char *ca = NULL, *cb = NULL;
    size_t la = 0, lb = 0;
    FILE *fa = open_memstream(&ca, &la), *fb = open_memstream(&cb, &lb);
    tsr_design_canonical(a, put, fa);
    tsr_design_canonical(b, put, fb);
    fclose(fa);
    fclose(fb);
    cr_assert(strstr(ca, " aa exact"), "%s", ca);
    cr_assert(strcmp(ca, cb) != 0, "exact and aa 4 must not share a canonical form");
    free(ca), free(cb);
    tsr_design_free(a);
    tsr_design_free(b);
}

Test(aa_exact, shapes_beyond_its_range_and_bad_words_are_refused)
{
    const char *t = "tessera: 1\nroot:\n  size: [8, 8]\n  source: {shape: circle, center: "
                    "[%s, 4], radius: 3, aa: %s}\n";
    struct {
        const char *x, *aa, *want;
    } cases[] = {
        {"1e11", "exact", "root.source.aa: exact: the shape must lie within +-2^36 px"},
        {"4", "exactly", "root.source.aa: expected a decimal integer"},
        {"4", "17", "root.source.aa: must be in 1..16"},
    };
    for (size_t i = 0; i < 3; i++) {
        char y[512];
        snprintf(y, sizeof y, t, cases[i].x, cases[i].aa);
        tsr_error err = {0};
        tsr_design *d = tsr_design_load_string(y, strlen(y), "t.yaml", NULL, NULL, &err);
        cr_assert_null(d);
        cr_assert_eq(err.status, TSR_EINVAL);
        cr_assert(strstr(err.msg, cases[i].want), "got '%s', want '%s'", err.msg, cases[i].want);
    }
}
