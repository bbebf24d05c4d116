/* text_source: the `text` source of designs (nodes/text_src.c, docs/text.md): the built-in
 * font's cells where the anchor puts them, transforms, tiling invariance, the fingerprint, the
 * loader's errors, and the GPU's bytes. The shapely oracle over FreeType's own outlines is
 * tests/cli/text_oracle.sh. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEJAVU "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

Test(text_source, builtin_cells_land_where_the_anchor_puts_them)
{
    /* "HI" at 7 px (1 px cells), top-left anchor at (3, 2): H's columns 0 and 4 and its bar,
     * then I (columns 1..3 of its cell, 6 px on) */
    tsr_design *d = th_design("tessera: 1\nroot:\n  size: [20, 12]\n  fill: 0\n"
                              "  source: {text: HI, height: 7, position: [3, 2]}\n");
    size_t n = 0;
    uint8_t *b = th_stream(d, 0, 1, &n);
    cr_assert_eq(n, 240);
    for (int y = 0; y < 12; y++)
        for (int x = 0; x < 20; x++) {
            int gx = x - 3, gy = y - 2;
            bool h = gy >= 0 && gy < 7 && (gx == 0 || gx == 4 || (gy == 3 && gx >= 0 && gx < 5));
            bool i = gy >= 0 && gy < 7 &&
                     ((gx >= 7 && gx <= 9 && (gy == 0 || gy == 6)) || (gx == 8));
            cr_assert_eq(b[y * 20 + x], h || i ? 255 : 0, "pixel %d,%d", x, y);
        }
    free(b);
    tsr_design_free(d);
}

Test(text_source, a_quarter_turn_keeps_cells_on_the_grid_and_mirror_flips)
{
    /* rotate 90 (counterclockwise as seen) about the anchor: "L" at 7 px anchored top-left at
     * (2, 9); its stem (column 0 going down from the anchor) turns to go right along row 8,
     * its foot (row 6) becomes column 8 going up: 11 whole cells */
    tsr_design *d = th_design("tessera: 1\nroot:\n  size: [12, 12]\n  fill: 0\n"
                              "  source: {text: L, height: 7, position: [2, 9], rotate: 90}\n");
    size_t n = 0;
    uint8_t *b = th_stream(d, 0, 1, &n);
    int ink = 0;
    for (size_t k = 0; k < n; k++) {
        cr_assert(b[k] == 0 || b[k] == 255, "a quarter turn leaves a cell partly covered");
        ink += b[k] == 255;
    }
    cr_assert_eq(ink, 11, "L has 7 + 4 cells");
    /* the stem: 7 cells from the anchor rightwards along row 8 (the cell just above y = 9) */
    for (int x = 2; x < 9; x++)
        cr_assert_eq(b[8 * 12 + x], 255, "stem at %d,8", x);
    free(b);
    tsr_design_free(d);
    /* mirrored: "L" becomes its mirror image left of the anchor */
    d = th_design("tessera: 1\nroot:\n  size: [12, 9]\n  fill: 0\n"
                  "  source: {text: L, height: 7, position: [8, 1], mirror: true}\n");
    b = th_stream(d, 0, 1, &n);
    for (int y = 1; y < 8; y++)
        cr_assert_eq(b[y * 12 + 7], 255, "mirrored stem at 7,%d", y);
    for (int x = 3; x < 8; x++)
        cr_assert_eq(b[7 * 12 + x], 255, "mirrored foot at %d,7", x);
    cr_assert_eq(b[7 * 12 + 8], 0);
    free(b);
    tsr_design_free(d);
}

Test(text_source, tiles_and_threads_change_no_byte)
{
    if (access(DEJAVU, R_OK) != 0)
        cr_skip_test("no %s", DEJAVU);
    tsr_design *d = th_design("tessera: 1\noutput: {depth: 16}\nroot:\n  size: [700, 300]\n"
                              "  fill: 0.1\n  source: {text: \"Lot 42\\nWafer 7 \\u00e9\", font: "
                              DEJAVU ", height: 61.3, position: [350, 150], align: center, "
                              "anchor: middle, rotate: 17.5, value: 0.9}\n");
    size_t n1 = 0, n2 = 0;
    uint8_t *a = th_stream(d, 0, 1, &n1);
    uint8_t *b = th_stream(d, 37, 2, &n2);
    cr_assert_eq(n1, n2);
    cr_assert(memcmp(a, b, n1) == 0, "tile 37 and 2 threads change bytes");
    /* ink at the value (the most samples after the fill), and anti-aliased edges between */
    unsigned lo = 65535, hi = 0;
    for (size_t k = 0; k < n1; k += 2) {
        unsigned v = a[k] | a[k + 1] << 8;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    size_t partial = 0, full = 0;
    for (size_t k = 0; k < n1; k += 2) {
        unsigned v = a[k] | a[k + 1] << 8;
        partial += v != lo && v != hi;
        full += v == hi;
    }
    cr_assert(lo > 6000 && lo < 7000 && hi > 58000 && hi < 59500, "values %u .. %u", lo, hi);
    cr_assert(full > 1000 && partial > 500, "full %zu, edge %zu", full, partial);
    free(a);
    free(b);
    tsr_design_free(d);
}

Test(text_source, the_string_and_the_font_are_in_the_fingerprint)
{
    if (access(DEJAVU, R_OK) != 0)
        cr_skip_test("no %s", DEJAVU);
    const char *v[] = {
        "tessera: 1\nroot:\n  size: [40, 20]\n  source: {text: AB, height: 7}\n",
        "tessera: 1\nroot:\n  size: [40, 20]\n  source: {text: AC, height: 7}\n",
        "tessera: 1\nroot:\n  size: [40, 20]\n  source: {text: AB, height: 7, font: " DEJAVU "}\n",
    };
    uint8_t fp[3][32];
    for (int i = 0; i < 3; i++) {
        tsr_design *d = th_design(v[i]);
        tsr_engine_opts o = {.backend = "cpu"};
        tsr_error err = {0};
        tsr_engine *e = tsr_engine_new(d, &o, &err);
        cr_assert_not_null(e, "%s", err.msg);
        tsr_header h;
        cr_assert_eq(tsr_engine_header(e, &h, &err), TSR_OK, "%s", err.msg);
        memcpy(fp[i], h.fingerprint, 32);
        tsr_engine_free(e);
        tsr_design_free(d);
    }
    cr_assert(memcmp(fp[0], fp[1], 32) != 0, "the text is not in the fingerprint");
    cr_assert(memcmp(fp[0], fp[2], 32) != 0, "the font is not in the fingerprint");
}

Test(text_source, errors_name_the_place_and_the_key)
{
    tsr_error e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {text: \"caf\\u00e9\", "
                             "height: 7}\n");
    cr_assert_eq(e.status, TSR_EINVAL);
    cr_assert(strstr(e.msg, "t.yaml:4:") && strstr(e.msg, "root.source.text:") &&
                  strstr(e.msg, "U+00E9") && strstr(e.msg, "byte 3"),
              "%s", e.msg);
    e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {text: A, height: 7, "
                   "font: tests/no-such-font.ttf}\n");
    cr_assert(strstr(e.msg, "t.yaml:4:") && strstr(e.msg, "root.source.font:") &&
                  strstr(e.msg, "no-such-font.ttf"),
              "%s", e.msg);
    e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {text: A, height: 7, "
                   "font: tests/CMakeLists.txt}\n");
    cr_assert(strstr(e.msg, "root.source.font:") && strstr(e.msg, "not a font"), "%s", e.msg);
    e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {text: \"\", height: 7}\n");
    cr_assert(strstr(e.msg, "root.source.text") && strstr(e.msg, "empty"), "%s", e.msg);
    /* with a pitch, height and position take units; an angle does not */
    tsr_design *d = th_design("tessera: 1\npixel: 0.5um\nroot:\n  size: [40, 20]\n  source: "
                              "{text: A, height: 3.5um, position: [1um, 0.5um]}\n");
    cr_assert(d->root->source->height == 7 && d->root->source->position[0] == 2 &&
                  d->root->source->position[1] == 1,
              "height %g", d->root->source->height);
    tsr_design_free(d);
    e = th_load_error("tessera: 1\npixel: 0.5um\nroot:\n  size: [9, 9]\n  source: {text: A, "
                   "height: 7, rotate: 30um}\n");
    cr_assert(strstr(e.msg, "root.source.rotate"), "%s", e.msg);
    e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {text: A}\n");
    cr_assert(strstr(e.msg, "height"), "%s", e.msg);
    e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {text: A, height: 7, "
                   "align: middle}\n");
    cr_assert(strstr(e.msg, "root.source.align"), "%s", e.msg);
}

/* The device accumulates the host's unions of the same rings: the CPU's bytes, at chunk sizes
 * that cut blocks oddly. Skips without a device. */
Test(text_source, gpu_gives_the_cpu_bytes)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    const char *font = access(DEJAVU, R_OK) == 0 ? "font: " DEJAVU ", " : "";
    char y[512];
    snprintf(y, sizeof y,
             "tessera: 1\nroot:\n  size: [900, 400]\n  fill: 0.2\n  source: {text: \"Dose 12%%"
             "\\nfield B7\", %sheight: 80.5, position: [450, 200], align: center, anchor: middle,"
             " rotate: -31, value: 0.8}\n", font);
    tsr_design *d = th_design(y);
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
