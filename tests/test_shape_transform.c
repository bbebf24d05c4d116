/* shape_transform: shapes placed by `rotate`, `mirror`, `scale` and `translate`
 * (docs/shape-transforms.md, nodes/vector.c): the identity is the untransformed shape, a
 * quarter turn of a rect is the rect with its sides swapped, a mirror is the mirrored points, a
 * scaled circle the larger circle, a moved rect the rect written there, all byte for byte; a
 * turned ellipse keeps its area; boolean operands take transforms; tiling and threads change no
 * byte; the canonical form of an untransformed shape has no transform keys; the loader's
 * errors name the key; the GPU's bytes are the CPU's (skips without a device). The shapely
 * oracle is tests/cli/shape_transform_oracle.sh. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 64
#define H 48

/* The root's floats for a 64 x 48 node (fill 0.125) with this source mapping. */
static float *
render_src(const char *src)
{
    char y[1024];
    snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [%d, %d]\n  fill: 0.125\n  source: %s\n", W,
             H, src);
    tsr_design *d = th_design(y);
    float *px = th_rect(d, tsr_rect_make(0, 0, W, H), 0, 1);
    tsr_design_free(d);
    return px;
}

static void
assert_same(const char *a, const char *b)
{
    float *pa = render_src(a), *pb = render_src(b);
    size_t k = 0;
    while (k < (size_t)W * H && memcmp(&pa[k], &pb[k], sizeof *pa) == 0)
        k++;
    cr_assert_eq(k, (size_t)W * H, "pixel %zu,%zu: %.9g vs %.9g\n%s\n%s", k % W, k / W,
                 k < (size_t)W * H ? pa[k] : 0, k < (size_t)W * H ? pb[k] : 0, a, b);
    free(pa);
    free(pb);
}

static bool
differ(const char *a, const char *b)
{
    float *pa = render_src(a), *pb = render_src(b);
    bool d = memcmp(pa, pb, sizeof *pa * W * H) != 0;
    free(pa);
    free(pb);
    return d;
}

static const char *const shapes[] = {
    "shape: rect, rect: [8.25, 10.5, 30.5, 16.75]",
    "shape: polygon, points: [[5.5, 4.25], [50.75, 10], [44, 40.5], [30, 12], [9, 38]]",
    "shape: circle, center: [30.3, 22.7], radius: 13.4",
    "shape: ellipse, center: [31.5, 24.25], radii: [20.1, 9.6]",
    "shape: ring, center: [32, 24], radii: [7.3, 19.9]",
};

Test(shape_transform, the_identity_is_the_untransformed_shape)
{
    char a[512], b[512];
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        snprintf(a, sizeof a, "{%s, value: 0.75, aa: exact}", shapes[i]);
        snprintf(b, sizeof b, "{%s, value: 0.75, rotate: 0, mirror: false, scale: 1, "
                 "translate: [0, 0], aa: exact}", shapes[i]);
        assert_same(a, b);
        /* without aa, the identity is no transform: sampled at the centres, as before */
        snprintf(a, sizeof a, "{%s, value: 0.75}", shapes[i]);
        snprintf(b, sizeof b, "{%s, value: 0.75, rotate: 0}", shapes[i]);
        assert_same(a, b);
        /* and a real transform is drawn exact without being asked */
        snprintf(a, sizeof a, "{%s, value: 0.75, rotate: 17}", shapes[i]);
        snprintf(b, sizeof b, "{%s, value: 0.75, rotate: 17, aa: exact}", shapes[i]);
        assert_same(a, b);
    }
}

Test(shape_transform, a_quarter_turn_of_a_rect_swaps_its_sides)
{
    /* centre (23.5, 18.875): the turned rect is [cx - h/2, cy - w/2, h, w], every number
     * dyadic, so both are the same four points */
    const char *turned = "{shape: rect, rect: [8.25, 10.5, 30.5, 16.75], rotate: %s, "
                         "value: 0.75}";
    const char *want = "{shape: rect, rect: [15.125, 3.625, 16.75, 30.5], value: 0.75, "
                       "aa: exact}";
    const char *angles[] = {"90", "-90", "270", "-270"};
    char a[256];
    for (size_t i = 0; i < 4; i++) {
        snprintf(a, sizeof a, turned, angles[i]);
        assert_same(a, want);
    }
    snprintf(a, sizeof a, turned, "180");
    assert_same(a, "{shape: rect, rect: [8.25, 10.5, 30.5, 16.75], value: 0.75, aa: exact}");
    snprintf(a, sizeof a, turned, "90.5");
    cr_assert(differ(a, want), "half a degree more changes pixels");
}

Test(shape_transform, a_mirror_is_the_mirrored_points)
{
    /* box x 5.5 .. 50.75: centre 28.125, x -> 56.25 - x */
    assert_same("{shape: polygon, points: [[5.5, 4.25], [50.75, 10], [44, 40.5], [30, 12], "
                "[9, 38]], mirror: true}",
                "{shape: polygon, points: [[50.75, 4.25], [5.5, 10], [12.25, 40.5], [26.25, 12], "
                "[47.25, 38]], aa: exact}");
    /* mirrored and turned a half: upside down */
    assert_same("{shape: polygon, points: [[5.5, 4.25], [50.75, 10], [44, 40.5], [30, 12], "
                "[9, 38]], mirror: true, rotate: 180}",
                "{shape: polygon, points: [[5.5, 40.5], [50.75, 34.75], [44, 4.25], [30, 32.75], "
                "[9, 6.75]], aa: exact}");
}

Test(shape_transform, scale_and_translate_are_the_shape_written_there)
{
    assert_same("{shape: circle, center: [30.25, 22.5], radius: 9.25, scale: 2}",
                "{shape: circle, center: [30.25, 22.5], radius: 18.5, aa: exact}");
    assert_same("{shape: ring, center: [30.25, 22.5], radii: [3, 9.25], scale: 2, "
                "translate: [1.5, -0.25]}",
                "{shape: ring, center: [31.75, 22.25], radii: [6, 18.5], aa: exact}");
    assert_same("{shape: rect, rect: [8.25, 10.5, 30.5, 16.75], translate: [0.375, 3.5]}",
                "{shape: rect, rect: [8.625, 14, 30.5, 16.75], aa: exact}");
    /* about its centre (23.5, 18.875): half the size */
    assert_same("{shape: rect, rect: [8.25, 10.5, 30.5, 16.75], scale: 0.5}",
                "{shape: rect, rect: [15.875, 14.6875, 15.25, 8.375], aa: exact}");
}

/* The sum of coverage over a node with fill 0 and value 1: the shape's area. */
static double
area(const char *src)
{
    char y[512];
    snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [96, 96]\n  source: %s\n", src);
    tsr_design *d = th_design(y);
    float *px = th_rect(d, tsr_rect_make(0, 0, 96, 96), 0, 1);
    double a = 0;
    for (int i = 0; i < 96 * 96; i++) {
        cr_assert(px[i] >= 0 && px[i] <= 1);
        a += px[i];
    }
    free(px);
    tsr_design_free(d);
    return a;
}

Test(shape_transform, turned_shapes_keep_their_area)
{
    double a = area("{shape: ellipse, center: [48.5, 47.25], radii: [30.1, 11.6], rotate: 33}");
    cr_assert(fabs(a - M_PI * 30.1 * 11.6) < 1e-3, "ellipse: %.9g", a);
    a = area("{shape: ellipse, center: [40, 40], radii: [15, 6], rotate: -71.5, scale: 1.75, "
             "translate: [6.5, 7]}");
    cr_assert(fabs(a - M_PI * 15 * 6 * 1.75 * 1.75) < 1e-3, "scaled ellipse: %.9g", a);
    a = area("{shape: rect, rect: [30, 40, 40.5, 9.25], rotate: 12.5, scale: 1.5}");
    cr_assert(fabs(a - 40.5 * 9.25 * 2.25) < 1e-3, "rect: %.9g", a);
}

Test(shape_transform, boolean_operands_take_transforms)
{
    char y[1024];
    /* one turned rect as a union: the shape's own pixels (both are the same four points on
     * the rasterizer's grid) */
    snprintf(y, sizeof y, "{boolean: union, a: [{shape: rect, rect: [8.25, 10.5, 30.5, 16.75], "
             "rotate: 90}], value: 0.75}");
    assert_same(y, "{shape: rect, rect: [15.125, 3.625, 16.75, 30.5], value: 0.75, aa: exact}");
    /* a turned square less a turned hole: the difference of the areas */
    double a = area("{boolean: difference, a: [{shape: rect, rect: [28, 28, 40, 40], rotate: 30}]"
                    ", b: [{shape: rect, rect: [38, 38, 20, 20], rotate: -15}]}");
    cr_assert(fabs(a - (1600 - 400)) < 1e-3, "difference: %.9g", a);
    a = area("{boolean: union, a: [{shape: ellipse, center: [48, 48], radii: [20, 8], "
             "rotate: 45, scale: 1.5}]}");
    /* chords within the boolean's 1/256 px: a polygon inside the ellipse, short of it by at
     * most its perimeter (about 140 px) times that */
    double e = M_PI * 20 * 8 * 2.25;
    cr_assert(a < e + 1e-3 && a > e - 0.6, "operand ellipse: %.9g of %.9g", a, e);
}

Test(shape_transform, tiles_and_threads_change_no_byte)
{
    tsr_design *d = th_design(
        "tessera: 1\nroot:\n  size: [150, 110]\n  fill: 0.2\n  children:\n"
        "    - trait: repeat\n      region: [0, 0, 150, 110]\n      node:\n"
        "        size: [30, 22]\n        source: {shape: rect, rect: [5.5, 8, 19, 6], "
        "rotate: 28.5, value: 0.9}\n"
        "    - trait: pattern\n      blend: max\n      node:\n        size: [150, 110]\n"
        "        source: {shape: ring, center: [75.5, 54.25], radii: [20, 41], mirror: true, "
        "scale: 1.2, translate: [0.5, 0.5]}\n"
        "    - trait: pattern\n      blend: max\n      node:\n        size: [150, 110]\n"
        "        source: {shape: ellipse, center: [70, 50], radii: [44, 13], rotate: -62}\n");
    /* the whole node at tiles 64 and 512; tiles 1 and 7 (each tile makes the shapes' rings
     * again) on a rect across the ring's and the ellipse's edges and a seam of rects */
    static const int64_t tiles[] = {1, 7, 64, 512};
    tsr_rect whole = tsr_rect_make(0, 0, 150, 110), part = tsr_rect_make(17, 21, 23, 19);
    for (int k = 0; k < 2; k++) {
        tsr_rect r = k ? part : whole;
        float *ref = th_rect(d, r, 512, 1);
        for (size_t t = k ? 0 : 2; t < 4; t++)
            for (int threads = th_threads_from(tiles[t]); threads <= 2; threads++) {
                float *got = th_rect(d, r, tiles[t], threads);
                cr_assert(memcmp(ref, got, sizeof *ref * (size_t)(r.w * r.h)) == 0,
                          "tile %lld, %d threads", (long long)tiles[t], threads);
                free(got);
            }
        free(ref);
    }
    tsr_design_free(d);
}

static void
put(void *ctx, const void *bytes, size_t n)
{
    fwrite(bytes, 1, n, ctx);
}

static char *
form_of(const char *src)
{
    char y[512];
    snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [8, 8]\n  source: %s\n", src);
    tsr_design *d = th_design(y);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tsr_design_canonical(d, put, f);
    fclose(f);
    tsr_design_free(d);
    return buf;
}

Test(shape_transform, the_form_names_a_transform_only_when_given)
{
    char *plain = form_of("{shape: rect, rect: [1, 1, 4, 3]}");
    char *ident = form_of("{shape: rect, rect: [1, 1, 4, 3], rotate: 0, scale: 1}");
    char *turned = form_of("{shape: rect, rect: [1, 1, 4, 3], rotate: 30}");
    char *moved = form_of("{shape: rect, rect: [1, 1, 4, 3], translate: [0.5, 0]}");
    /* the form of a shape written before the keys existed, so its fingerprint stays */
    cr_assert_null(strstr(plain, "rotate"), "%s", plain);
    cr_assert_null(strstr(plain, "translate"), "%s", plain);
    cr_assert_str_eq(plain, ident);
    cr_assert_not_null(strstr(turned, " rotate d"), "%s", turned);
    cr_assert_not_null(strstr(moved, " translate d"), "%s", moved);
    cr_assert_str_neq(plain, turned);
    cr_assert_str_neq(plain, moved);
    free(plain);
    free(ident);
    free(turned);
    free(moved);
}

static tsr_error
load_error(const char *src)
{
    char y[512];
    snprintf(y, sizeof y, "tessera: 1\nroot:\n  size: [9, 9]\n  source: %s\n", src);
    tsr_error err = {0};
    tsr_design *d = tsr_design_load_string(y, strlen(y), "t.yaml", TSR_SRC_DIR, NULL, &err);
    cr_assert_null(d, "loaded: %s", y);
    cr_assert_eq(err.status, TSR_EINVAL, "%s", err.msg);
    return err;
}

#define ERR_NAMES(src, want)                                                                     \
    do {                                                                                         \
        tsr_error e_ = load_error(src);                                                          \
        cr_assert(strstr(e_.msg, want), "%s: %s", src, e_.msg);                                  \
        cr_assert(strstr(e_.msg, "t.yaml:4:"), "%s", e_.msg);                                    \
    } while (0)

Test(shape_transform, bad_keys_are_errors_naming_the_key)
{
    ERR_NAMES("{shape: rect, rect: [1, 1, 4, 3], scale: 0}", "root.source.scale");
    ERR_NAMES("{shape: rect, rect: [1, 1, 4, 3], scale: -2}", "root.source.scale");
    ERR_NAMES("{shape: circle, center: [4, 4], radius: 2, rotate: 400}", "root.source.rotate");
    ERR_NAMES("{shape: circle, center: [4, 4], radius: 2, rotate: x}", "root.source.rotate");
    ERR_NAMES("{shape: ring, center: [4, 4], radii: [1, 2], mirror: 3}", "root.source.mirror");
    ERR_NAMES("{shape: ellipse, center: [4, 4], radii: [1, 2], translate: [1]}",
              "root.source.translate");
    ERR_NAMES("{shape: polygon, points: [[0, 0], [4, 0], [0, 4]], rotation: 5}",
              "did you mean 'rotate'");
    ERR_NAMES("{shape: rect, rect: [1, 1, 4, 3], rotate: 10, aa: 4}",
              "root.source.aa: a transformed shape is drawn with its exact coverage");
    ERR_NAMES("{shape: rect, rect: [1, 1, 4, 3], translate: [1e11, 0]}",
              "root.source.translate: exact: the shape must lie within");
    ERR_NAMES("{shape: circle, center: [4, 4], radius: 2e5, scale: 1e6}",
              "root.source.scale: exact: the shape must lie within");
    ERR_NAMES("{boolean: union, a: [{shape: rect, rect: [1, 1, 4, 3], scale: 0}]}",
              "root.source.a[0].scale");
}

/* The device accumulates the host's rings: the CPU's bytes, at chunk sizes that cut blocks
 * oddly. Skips without a device. */
Test(shape_transform, gpu_gives_the_cpu_bytes)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_design *d = th_design(
        "tessera: 1\nroot:\n  size: [300, 220]\n  fill: 0.2\n  children:\n"
        "    - trait: repeat\n      node:\n"
        "        size: [30, 22]\n        source: {shape: rect, rect: [5.5, 8, 19, 6], "
        "rotate: 28.5, value: 0.9}\n"
        "    - trait: pattern\n      blend: max\n      node:\n        size: [300, 220]\n"
        "        source: {shape: ring, center: [150.5, 110.25], radii: [40, 82], mirror: true, "
        "scale: 1.2, translate: [0.5, 0.5]}\n"
        "    - trait: pattern\n      blend: max\n      node:\n        size: [300, 220]\n"
        "        source: {shape: polygon, points: [[10, 10], [200, 30], [60, 190]], "
        "rotate: -62, mirror: true, value: 0.6}\n");
    size_t nc = 0;
    uint8_t *cpu = th_stream(d, 0, 2, &nc);
    static const int64_t chunks[] = {0, 37 * 53};
    for (size_t c = 0; c < 2; c++) {
        tsr_engine_opts o = {.backend = "gpu", .gpu_chunk = chunks[c],
                             .gpu_memory = (int64_t)2 << 30};
        size_t ng = 0;
        uint8_t *gpu = th_stream_opts(d, &o, &ng);
        cr_assert_eq(ng, nc);
        size_t k = 0;
        while (k < ng && gpu[k] == cpu[k])
            k++;
        cr_assert_eq(k, ng, "chunk %lld: byte %zu differs", (long long)chunks[c], k);
        free(gpu);
    }
    free(cpu);
    tsr_design_free(d);
}

/* `tessera check --pixels`'s writer prints a boolean's operands, transforms included, and the
 * text loads back to the same canonical form. */
Test(shape_transform, the_pixel_dump_keeps_boolean_operands)
{
    tsr_design *d = th_design(
        "tessera: 1\nroot:\n  size: [40, 30]\n  source: {boolean: difference, offset: 0.5, "
        "a: [{shape: rect, rect: [4, 4, 30, 20], rotate: 12.5}, {boolean: union, a: [{shape: "
        "circle, center: [30, 20], radius: 6, scale: 1.5}]}], b: [{shape: ring, center: [18, "
        "14], radii: [2, 5], mirror: true, translate: [0.5, 0]}, {text: T, height: 9}]}\n");
    char *text = NULL, *fa = NULL, *fb = NULL;
    size_t n = 0, la = 0, lb = 0;
    FILE *f = open_memstream(&text, &n);
    tsr_design_write_pixels(d, f);
    fclose(f);
    cr_assert_not_null(strstr(text, "rotate: 12.5"), "%s", text);
    cr_assert_not_null(strstr(text, "b:\n"), "%s", text);
    tsr_error err = {0};
    tsr_design *back = tsr_design_load_string(text, n, "pixels.yaml", NULL, NULL, &err);
    cr_assert_not_null(back, "%s\n%s", err.msg, text);
    FILE *a = open_memstream(&fa, &la), *b = open_memstream(&fb, &lb);
    tsr_design_canonical(d, put, a);
    tsr_design_canonical(back, put, b);
    fclose(a);
    fclose(b);
    cr_assert_str_eq(fa, fb, "%s", text);
    free(fa), free(fb), free(text);
    tsr_design_free(back);
    tsr_design_free(d);
}
