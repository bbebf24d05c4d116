/* layouts_xform: the layout source's pitch and window in physical units, the design's `pixel:`
 * as its pitch, and the transform of the whole layout (rotate, mirror, scale, translate;
 * docs/layouts.md §8). Each transform is checked against the untransformed render of a window
 * moved to match (the same geometry, so the same coverage to rounding); turns by other angles
 * than multiples of 90 degrees against shapely in tests/cli/layout_oracle.sh. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "layouts/layouts.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(layouts_xform);

/* A design's whole root as floats; *w, *h its size. */
static float *
pixels(const char *text, int64_t *w, int64_t *h)
{
    tsr_design *d = th_design(text);
    *w = d->root->w;
    *h = d->root->h;
    float *px = th_rect(d, tsr_rect_make(0, 0, *w, *h), 0, 1);
    tsr_design_free(d);
    return px;
}

/* elements.gds holds every element kind; three of its layers, over a fill */
#define FILE_KEYS                                                                                \
    "tessera: 1\nroot:\n  fill: 0.1\n  source: {layout: tests/layouts/elements.gds, "            \
    "layers: [[1, 0, 1], [2, 0, 0.5], [3, 0, 0.8]], "

/* elements.gds's box widened to whole um: the window every comparison starts from */
static void
whole_box(double win[4])
{
    tsr_error err = {0};
    char *path = th_src("tests/layouts/elements.gds");
    tsr_layout *l = tsr_layout_open(path, NULL, &err);
    cr_assert_not_null(l, "%s", err.msg);
    uint32_t cell;
    cr_assert_eq(tsr_layout_cell(l, NULL, &cell, &err), TSR_OK, "%s", err.msg);
    const double *b = l->cells[cell].box;
    double um = l->dbu_m * 1e6;
    win[0] = floor(b[0] * um) - 1;
    win[1] = floor(b[1] * um) - 1;
    win[2] = ceil(b[2] * um) + 1;
    win[3] = ceil(b[3] * um) + 1;
    tsr_layout_free(l);
    free(path);
}

/* b[r][c] must be a[f(r, c)] within tol, for every pixel of b (bw x bh). */
typedef size_t (*index_fn)(int64_t r, int64_t c, int64_t aw, int64_t ah);

static void
same_under(const float *a, int64_t aw, int64_t ah, const float *b, int64_t bw, int64_t bh,
           index_fn f, double tol, const char *what)
{
    size_t covered = 0;
    for (int64_t r = 0; r < bh; r++)
        for (int64_t c = 0; c < bw; c++) {
            float va = a[f(r, c, aw, ah)], vb = b[r * bw + c];
            cr_assert(fabs((double)va - (double)vb) <= tol, "%s: pixel %lld,%lld: %.9g, expected %.9g",
                      what, (long long)c, (long long)r, vb, va);
            covered += vb > 0.1f;
        }
    cr_assert(covered > 100, "%s: only %zu pixels covered", what, covered);
}

static size_t
rot90(int64_t r, int64_t c, int64_t aw, int64_t ah)
{
    (void)ah;
    return (size_t)(c * aw + (aw - 1 - r));
}

static size_t
rot180(int64_t r, int64_t c, int64_t aw, int64_t ah)
{
    return (size_t)((ah - 1 - r) * aw + (aw - 1 - c));
}

static size_t
flip_lr(int64_t r, int64_t c, int64_t aw, int64_t ah)
{
    (void)ah;
    return (size_t)(r * aw + (aw - 1 - c));
}

static size_t
same(int64_t r, int64_t c, int64_t aw, int64_t ah)
{
    (void)ah;
    return (size_t)(r * aw + c);
}

/* ---- pitch and window in units; the design's pixel: --------------------------------------- */

Test(layouts_xform, pitch_and_window_in_units_are_the_plain_um)
{
    int64_t w0, h0, w, h;
    float *ref = pixels(FILE_KEYS "pitch: 0.3, window: [-0.1, -1, 7, 5.1]}\n", &w0, &h0);
    static const char *const spelt[] = {
        "pitch: 300nm, window: [-0.1, -1, 7, 5.1]}\n",
        "pitch: 0.0003mm, window: [-100nm, -1um, 0.007mm, 5.1um]}\n",
        "pitch_nm: 300, window: [-0.1um, -1, 7000nm, 5.1]}\n",
        "pitch: 0.3um, window: [-0.1, -1, 7, 5.1]}\n",
    };
    for (size_t i = 0; i < sizeof spelt / sizeof *spelt; i++) {
        float *got = pixels(th_fmt(FILE_KEYS "%s", spelt[i]), &w, &h);
        cr_assert(w == w0 && h == h0, "%s: %lldx%lld", spelt[i], (long long)w, (long long)h);
        cr_assert(memcmp(got, ref, (size_t)(w * h) * sizeof *got) == 0, "%s", spelt[i]);
        free(got);
    }
    free(ref);
}

/* With `pixel:`, a layout without a pitch of its own is drawn at it; the window stays in um
 * (or units), never pixels: the same bytes as the pitch given on the source. */
Test(layouts_xform, the_design_pixel_is_the_default_pitch)
{
    int64_t w0, h0, w, h;
    float *ref = pixels(FILE_KEYS "pitch: 0.3, window: [-0.1, -1, 7, 5.1]}\n", &w0, &h0);
    static const char *const designs[] = {
        "tessera: 1\npixel: 300nm\nroot:\n  fill: 0.1\n  source: {layout: tests/layouts/"
        "elements.gds, layers: [[1, 0, 1], [2, 0, 0.5], [3, 0, 0.8]], window: [-0.1, -1, 7, "
        "5.1]}\n",
        /* both, agreeing as decimals */
        "tessera: 1\npixel: 0.3um\nroot:\n  fill: 0.1\n  source: {layout: tests/layouts/"
        "elements.gds, layers: [[1, 0, 1], [2, 0, 0.5], [3, 0, 0.8]], pitch: 300nm, window: "
        "[-100nm, -1um, 7um, 5.1um]}\n",
        "tessera: 1\npixel: 0.3um\nroot:\n  fill: 0.1\n  source: {layout: tests/layouts/"
        "elements.gds, layers: [[1, 0, 1], [2, 0, 0.5], [3, 0, 0.8]], pitch_nm: 300, window: "
        "[-0.1, -1, 7, 5.1]}\n",
    };
    for (size_t i = 0; i < sizeof designs / sizeof *designs; i++) {
        float *got = pixels(designs[i], &w, &h);
        cr_assert(w == w0 && h == h0, "%s: %lldx%lld", designs[i], (long long)w, (long long)h);
        cr_assert(memcmp(got, ref, (size_t)(w * h) * sizeof *got) == 0, "%s", designs[i]);
        free(got);
    }
    free(ref);
    /* the pitch taken from the design is written on the source: in the canonical form and in
     * the pixel dump, which loads back to the same design */
    tsr_design *d = th_design(designs[0]);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tsr_design_dump(d, f);
    fclose(f);
    cr_assert(strstr(buf, "# pitch 300 nm"), "%s", buf);
    free(buf);
    tsr_design_free(d);
}

static void
put(void *ctx, const void *bytes, size_t n)
{
    fwrite(bytes, 1, n, ctx);
}

/* The canonical form of a design text (malloc'd). */
static char *
form(const char *text)
{
    tsr_design *d = th_design(text);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tsr_design_canonical(d, put, f);
    fclose(f);
    tsr_design_free(d);
    return buf;
}

/* The pitch a layout takes from `pixel:` is in the canonical form (the pitch itself is not):
 * another pixel: is another job, and it is the job of the same pitch given on the source. */
Test(layouts_xform, the_pitch_from_pixel_is_in_the_canonical_form)
{
    const char *t = "tessera: 1\n%sroot:\n  source: {layout: tests/layouts/elements.gds, "
                    "layers: [[1, 0, 1]]%s, window: [0, 0, 9, 9]}\n";
    char *a = form(th_fmt(t, "pixel: 300nm\n", ""));
    char *b = form(th_fmt(t, "pixel: 250nm\n", ""));
    char *c = form(th_fmt(t, "", ", pitch_nm: 300"));
    cr_assert(strcmp(a, b) != 0);
    cr_assert_str_eq(a, c);
    free(a), free(b), free(c);
}

Test(layouts_xform, pitch_errors_name_the_keys)
{
    const char *src = "  source: {layout: tests/layouts/elements.gds, layers: [[1, 0, 1]]";
    struct {
        const char *top, *keys, *want;
    } cases[] = {
        {"", "}", "no pixel pitch: give 'pitch'"},
        {"pixel: 250nm\n", ", pitch: 0.3}", "'pitch' is 300 nm, but the design's 'pixel:' is 250 nm"},
        {"pixel: 250nm\n", ", pitch_nm: 251}", "'pitch_nm' is 251 nm, but the design's 'pixel:'"},
        {"", ", pitch: 1, pitch_nm: 1000}", "give at most one of 'pitch' or 'pitch_nm'"},
        {"", ", pitch: -3nm}", "root.source.pitch: must be > 0 um, got -3nm (-0.003 um)"},
        {"", ", pitch: 1.2.3um}", "root.source.pitch: expected a decimal number before the unit"},
        {"", ", pitch: 1, window: [0, 0, 1e300mm, 1]}", "root.source.window[2]"},
        {"", ", pitch: 1, window: [0, 0, 2um, -1nm]}", "root.source.window: must be [x0, y0"},
        {"", ", pitch: 1, rotate: 400}", "root.source.rotate: must be"},
        {"", ", pitch: 1, scale: 0}", "root.source.scale: must be > 0"},
        {"", ", pitch: 1, rotate: 9um}", "root.source.rotate: '9um': not a length"},
        {"", ", pitch: 1, translate: [1um, 0]}", "has a unit, but the design states no pixel pitch"},
        {"", ", pitch: 1, translate: [1e30, 0]}", "root.source.translate[0]"},
        {"", ", pitch: 1, translate: [1e11, 0]}", "px from the window's corner"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tsr_error err = th_load_error(th_fmt("tessera: 1\n%sroot:\n%s%s\n", cases[i].top, src,
                                        cases[i].keys));
        cr_assert_eq(err.status, TSR_EINVAL, "%s", cases[i].keys);
        cr_assert(strstr(err.msg, cases[i].want), "%s: got '%s', expected '%s'", cases[i].keys,
                  err.msg, cases[i].want);
    }
}

/* translate in units at the design's pitch is pixels: 0.15um at 300nm is half a pixel */
Test(layouts_xform, translate_takes_units_at_the_design_pitch)
{
    int64_t w0, h0, w, h;
    float *a = pixels("tessera: 1\nroot:\n  source: {layout: tests/layouts/elements.gds, "
                      "layers: [[1, 0, 1]], pitch: 0.3, translate: [0.5, -0.25]}\n", &w0, &h0);
    float *b = pixels("tessera: 1\npixel: 300nm\nroot:\n  source: {layout: tests/layouts/"
                      "elements.gds, layers: [[1, 0, 1]], translate: [0.15um, -75nm]}\n", &w, &h);
    cr_assert(w == w0 && h == h0);
    cr_assert(memcmp(a, b, (size_t)(w * h) * sizeof *a) == 0);
    free(a), free(b);
}

/* ---- transforms ------------------------------------------------------------------------------ */

/* A quarter turn about the origin, windowed to the turned window, is the image turned
 * counterclockwise; a half turn, the image upside down; a mirror, left-right. */
Test(layouts_xform, turns_and_mirrors_move_the_pixels)
{
    double b[4];
    whole_box(b);
    int64_t aw, ah, w, h;
    float *a = pixels(th_fmt(FILE_KEYS "pitch: 1, window: [%g, %g, %g, %g]}\n", b[0], b[1], b[2],
                           b[3]),
                      &aw, &ah);
    struct {
        const char *keys;
        double win[4];
        bool swap;
        index_fn f;
    } cases[] = {
        {"rotate: 90", {-b[3], b[0], -b[1], b[2]}, true, rot90},
        {"rotate: -270", {-b[3], b[0], -b[1], b[2]}, true, rot90},
        {"rotate: 180", {-b[2], -b[3], -b[0], -b[1]}, false, rot180},
        {"mirror: true", {-b[2], b[1], -b[0], b[3]}, false, flip_lr},
        /* mirror first, then a half turn: upside down */
        {"mirror: true, rotate: 180", {b[0], -b[3], b[2], -b[1]}, false, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const double *v = cases[i].win;
        float *t = pixels(th_fmt(FILE_KEYS "pitch: 1, %s, window: [%g, %g, %g, %g]}\n",
                               cases[i].keys, v[0], v[1], v[2], v[3]),
                          &w, &h);
        cr_assert_eq(w, cases[i].swap ? ah : aw, "%s", cases[i].keys);
        cr_assert_eq(h, cases[i].swap ? aw : ah, "%s", cases[i].keys);
        if (cases[i].f) {
            same_under(a, aw, ah, t, w, h, cases[i].f, 1e-6, cases[i].keys);
        } else {
            for (int64_t r = 0; r < h; r++)
                for (int64_t c = 0; c < w; c++)
                    cr_assert(fabs(t[r * w + c] - a[(ah - 1 - r) * aw + c]) <= 1e-6, "%s: %lld,%lld",
                              cases[i].keys, (long long)c, (long long)r);
        }
        free(t);
    }
    free(a);
}

/* Scale k at pitch k p is the layout at pitch p; translate (dx, dy) px is the window moved by
 * (-dx, +dy) pitches (layout y up). Sub-pixel: the coverage is that of the moved edges. */
Test(layouts_xform, scale_and_translate_move_the_edges)
{
    double b[4];
    whole_box(b);
    int64_t aw, ah, w, h;
    float *a = pixels(th_fmt(FILE_KEYS "pitch: 0.5, window: [%g, %g, %g, %g]}\n", b[0], b[1], b[2],
                           b[3]),
                      &aw, &ah);
    float *s = pixels(th_fmt(FILE_KEYS "pitch: 1.25, scale: 2.5, window: [%g, %g, %g, %g]}\n",
                           2.5 * b[0], 2.5 * b[1], 2.5 * b[2], 2.5 * b[3]),
                      &w, &h);
    cr_assert(w == aw && h == ah, "%lldx%lld", (long long)w, (long long)h);
    same_under(a, aw, ah, s, w, h, same, 1e-6, "scale 2.5");
    free(s);
    float *moved = pixels(th_fmt(FILE_KEYS "pitch: 0.5, window: [%.17g, %.17g, %.17g, %.17g]}\n",
                               b[0] - 0.3 * 0.5, b[1] + 0.45 * 0.5, b[2] - 0.3 * 0.5,
                               b[3] + 0.45 * 0.5),
                          &aw, &ah);
    float *t = pixels(th_fmt(FILE_KEYS "pitch: 0.5, translate: [0.3, 0.45], window: [%g, %g, %g, "
                                     "%g]}\n",
                           b[0], b[1], b[2], b[3]),
                      &w, &h);
    cr_assert(w == aw && h == ah);
    same_under(moved, aw, ah, t, w, h, same, 1e-6, "translate");
    /* and really sub-pixel: some pixel differs from the unmoved render */
    size_t differ = 0;
    for (int64_t i = 0; i < w * h; i++)
        differ += fabs(t[i] - a[i]) > 1e-3;
    cr_assert(differ > 10);
    free(moved), free(t), free(a);
}

/* The default window is the transformed cell's box: a turned layout is all in the node. */
Test(layouts_xform, the_default_window_holds_the_turned_layout)
{
    int64_t w0, h0, w, h;
    float *a = pixels(FILE_KEYS "pitch: 0.5}\n", &w0, &h0);
    float *t = pixels(FILE_KEYS "pitch: 0.5, rotate: 30, scale: 0.75}\n", &w, &h);
    double sum0 = 0, sum = 0;
    for (int64_t i = 0; i < w0 * h0; i++)
        sum0 += a[i] - 0.1;
    for (int64_t i = 0; i < w * h; i++)
        sum += t[i] - 0.1;
    /* the drawn "ink" (value x area above the fill, layers overlapping aside) scales by 0.75^2:
     * nothing fell outside the node */
    cr_assert(fabs(sum - 0.5625 * sum0) < 1e-3 * sum0, "%g vs %g", sum, 0.5625 * sum0);
    free(a), free(t);
}

Test(layouts_xform, turned_layouts_keep_tiling_invariance)
{
    tsr_design *d = th_design("tessera: 1\nroot:\n  fill: 0.1\n  source: {layout: tests/layouts/"
                              "oasis_src.gds, layers: [[1, 0, 1], [2, 0, 0.5], [3, 0, 0.8]], "
                              "pitch: 0.9, rotate: 33.7, mirror: true, scale: 1.3, translate: "
                              "[0.37, -0.11]}\n");
    size_t n0 = 0;
    uint8_t *ref = th_stream(d, 512, 1, &n0);
    size_t nonzero = 0;
    for (size_t i = 0; i < n0; i++)
        nonzero += ref[i] > 40;
    cr_assert(nonzero > 100);
    static const int64_t tiles[] = {7, 64};
    for (size_t t = 0; t < 2; t++) {
        size_t n = 0;
        uint8_t *got = th_stream(d, tiles[t], 2, &n);
        cr_assert_eq(n, n0);
        cr_assert(memcmp(got, ref, n) == 0, "tile %lld differs", (long long)tiles[t]);
        free(got);
    }
    free(ref);
    tsr_design_free(d);
}

Test(layouts_xform, check_tree_prints_the_transform)
{
    tsr_design *d = th_design(FILE_KEYS "pitch: 1, rotate: 30, mirror: true, translate: [0.5, "
                                        "0]}\n");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tsr_design_dump(d, f);
    fclose(f);
    cr_assert(strstr(buf, "# transformed: mirror x -> -x, scale 1, rotate 30 deg about the "
                          "origin, then translate [0.5, 0] px"),
              "%s", buf);
    free(buf);
    tsr_design_free(d);
}

/* The GPU draws what the host gathers, transformed: the CPU's bytes. Skips without a device. */
Test(layouts_xform, gpu_gives_the_cpu_bytes_turned)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_design *d = th_design("tessera: 1\nroot:\n  fill: 0.2\n  source: {layout: tests/layouts/"
                              "oasis_src.gds, cell: TOP, layers: [[1, 0, 1], [2, 0, 0.6], [4, 0, "
                              "0.9]], pitch: 0.37, rotate: -21.5, mirror: true, scale: 0.8, "
                              "translate: [0.3, 0.7]}\n");
    size_t nc = 0, ng = 0;
    uint8_t *cpu = th_stream(d, 0, 2, &nc);
    tsr_engine_opts o = {.backend = "gpu", .gpu_memory = (int64_t)2 << 30};
    uint8_t *gpu = th_stream_opts(d, &o, &ng);
    cr_assert_eq(ng, nc);
    size_t k = 0;
    while (k < ng && gpu[k] == cpu[k])
        k++;
    cr_assert_eq(k, ng, "byte %zu differs", k);
    free(gpu), free(cpu);
    tsr_design_free(d);
}

/* OASIS circles are a centre and a radius: through the transform the centre moves and the
 * radius is magnified (scale 2 at twice the pitch is the plain layout), and a quarter turn
 * turns the image. */
Test(layouts_xform, circles_follow_the_transform)
{
    const char *t = "tessera: 1\nroot:\n  source: {layout: tests/layouts/oasis_circles.oas, cell: "
                    "CIRCLES, layers: [[20, 0, 1], [21, 3, 0.5]], pitch: %g, window: [%g, %g, %g, "
                    "%g]%s}\n";
    int64_t aw, ah, w, h;
    float *a = pixels(th_fmt(t, 0.05, -3.0, -4.0, 21.0, 5.0, ""), &aw, &ah);
    float *s = pixels(th_fmt(t, 0.1, -6.0, -8.0, 42.0, 10.0, ", scale: 2"), &w, &h);
    cr_assert(w == aw && h == ah, "%lldx%lld", (long long)w, (long long)h);
    same_under(a, aw, ah, s, w, h, same, 1e-6, "circles, scale 2");
    free(s);
    float *r = pixels(th_fmt(t, 0.05, -5.0, -3.0, 4.0, 21.0, ", rotate: 90"), &w, &h);
    cr_assert(w == ah && h == aw, "%lldx%lld", (long long)w, (long long)h);
    /* a circle's chords start at the same pixel-space angle whichever way the layout is
     * turned: the turned polygon is another one, within the arc tolerance (1/1024 px) */
    same_under(a, aw, ah, r, w, h, rot90, 1e-4, "circles, rotate 90");
    free(r), free(a);
}
