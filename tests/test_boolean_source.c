/* boolean_source: `boolean: union|intersection|difference|xor` over lists of shapes and text,
 * then an offset (nodes/boolean_src.c, docs/booleans.md): exact pixels of a difference, the
 * areas of offsets, inclusion-exclusion between the four operations, tiling invariance, the
 * fingerprint, the loader's errors and the GPU's bytes. The shapely oracle is
 * tests/cli/boolean_oracle.sh. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sum of the root's float values over its whole rect. */
static double
area_of(const char *yaml)
{
    tsr_design *d = th_design(yaml);
    tsr_rect r = tsr_rect_make(0, 0, d->root->w, d->root->h);
    float *v = th_rect(d, r, 0, 1);
    double a = 0;
    for (int64_t i = 0; i < r.w * r.h; i++)
        a += v[i];
    free(v);
    tsr_design_free(d);
    return a;
}

static const char *
design(const char *op, const char *a, const char *b, const char *extra)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "tessera: 1\nroot:\n  size: [120, 100]\n  fill: 0\n  source: {boolean: %s, a: [%s]%s%s"
             "%s%s}\n",
             op, a, b ? ", b: [" : "", b ? b : "", b ? "]" : "", extra ? extra : "");
    return buf;
}

Test(boolean_source, a_difference_cuts_exact_pixels)
{
    tsr_design *d = th_design(design("difference", "{shape: rect, rect: [10, 10, 40, 30]}",
                                     "{shape: rect, rect: [20, 15, 10, 5]}", NULL));
    float *v = th_rect(d, tsr_rect_make(0, 0, 120, 100), 0, 1);
    for (int y = 0; y < 100; y++)
        for (int x = 0; x < 120; x++) {
            bool in = x >= 10 && x < 50 && y >= 10 && y < 40;
            bool hole = x >= 20 && x < 30 && y >= 15 && y < 20;
            cr_assert_eq(v[y * 120 + x], in && !hole ? 1.0f : 0.0f, "pixel %d,%d", x, y);
        }
    free(v);
    tsr_design_free(d);
}

Test(boolean_source, offsets_grow_and_shrink_by_their_areas)
{
    const char *sq = "{shape: rect, rect: [30, 30, 20, 20]}";
    /* miter and square corners of a square grown by 2: a 24 x 24 square */
    cr_assert_float_eq(area_of(design("union", sq, NULL, ", offset: 2, join: miter")), 576.0, 1e-6);
    /* round corners: 400 + 4 x 20 x 2 + pi 2^2 (the arcs within the tolerance, inside) */
    double round = area_of(design("union", sq, NULL, ", offset: 2"));
    cr_assert(round < 400 + 160 + M_PI * 4 && round > 400 + 160 + M_PI * 4 - 0.05, "%.6f", round);
    /* shrunk by 3: 14 x 14 */
    cr_assert_float_eq(area_of(design("union", sq, NULL, ", offset: -3, join: miter")), 196.0,
                       1e-6);
    /* shrunk away entirely: nothing */
    cr_assert_float_eq(area_of(design("union", sq, NULL, ", offset: -11")), 0.0, 1e-9);
}

Test(boolean_source, the_four_operations_agree_by_inclusion_and_exclusion)
{
    const char *a = "{shape: circle, center: [50, 50], radius: 30.3}, {shape: rect, rect: [5.5, "
                    "70.25, 30, 12]}";
    const char *b = "{shape: polygon, points: [[40, 20], [110, 35.5], [70, 90]]}, {text: AB, "
                    "height: 21, position: [60, 40]}";
    double u = area_of(design("union", a, b, NULL)), i = area_of(design("intersection", a, b, NULL));
    double x = area_of(design("xor", a, b, NULL)), d = area_of(design("difference", a, b, NULL));
    double da = area_of(design("union", a, NULL, NULL)), db = area_of(design("union", b, NULL, NULL));
    cr_assert(i > 100 && d > 100 && u > da && u > db, "u %g i %g d %g", u, i, d);
    cr_assert(fabs(u + i - (da + db)) < 1e-3, "union + intersection %g, a + b %g", u + i, da + db);
    cr_assert(fabs(x - (u - i)) < 1e-3, "xor %g, union - intersection %g", x, u - i);
    cr_assert(fabs(d - (da - i)) < 1e-3, "difference %g, a - intersection %g", d, da - i);
}

Test(boolean_source, tiles_and_threads_change_no_byte)
{
    tsr_design *d = th_design(design("xor", "{shape: ring, center: [60, 50], radii: [10, 40]}",
                                     "{shape: ellipse, center: [70, 40], radii: [35, 12.5]}",
                                     ", offset: 1.3, value: 0.7"));
    size_t n1 = 0, n2 = 0;
    uint8_t *a = th_stream(d, 0, 1, &n1);
    uint8_t *b = th_stream(d, 23, 2, &n2);
    cr_assert_eq(n1, n2);
    cr_assert(memcmp(a, b, n1) == 0, "tile 23 and 2 threads change bytes");
    free(a);
    free(b);
    tsr_design_free(d);
}

Test(boolean_source, operands_are_in_the_fingerprint)
{
    /* design() returns its own buffer: each kept before the next */
    char *v[2];
    v[0] = strdup(design("difference", "{shape: rect, rect: [0, 0, 50, 50]}", "{shape: circle, "
                         "center: [25, 25], radius: 10}", NULL));
    v[1] = strdup(design("difference", "{shape: rect, rect: [0, 0, 50, 50]}", "{shape: circle, "
                         "center: [25, 25], radius: 11}", NULL));
    uint8_t fp[2][32];
    for (int i = 0; i < 2; i++) {
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
        free(v[i]);
    }
    cr_assert(memcmp(fp[0], fp[1], 32) != 0, "an operand is not in the fingerprint");
}

Test(boolean_source, errors_name_the_operand)
{
    tsr_error e = th_load_error(design("union", "{shape: rect, rect: [0, 0, 5, 5]}, {gradient: linear,"
                                    " from: [0, 0], to: [1, 0], values: [0, 1]}", NULL, NULL));
    cr_assert(strstr(e.msg, "t.yaml:5:") && strstr(e.msg, "root.source.a[1]") &&
                  strstr(e.msg, "linear has no outline"),
              "%s", e.msg);
    e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {boolean: union}\n");
    cr_assert(strstr(e.msg, "root.source") && strstr(e.msg, "needs its operands"), "%s", e.msg);
    e = th_load_error("tessera: 1\nroot:\n  size: [9, 9]\n  source: {boolean: union, a: 3}\n");
    cr_assert(strstr(e.msg, "root.source.a") && strstr(e.msg, "sequence"), "%s", e.msg);
    e = th_load_error(design("union", "{shape: circle, center: [0, 0], radius: -1}", NULL, NULL));
    cr_assert(strstr(e.msg, "root.source.a[0].radius"), "%s", e.msg);
    e = th_load_error(design("nand", "{shape: rect, rect: [0, 0, 5, 5]}", NULL, NULL));
    cr_assert(strstr(e.msg, "root.source.boolean"), "%s", e.msg);
    e = th_load_error(design("union", "{shape: rect, rect: [0, 0, 5, 5]}", NULL, ", c: []"));
    cr_assert(strstr(e.msg, "root.source.c"), "%s", e.msg);
    e = th_load_error(design("union", "{shape: rect, rect: [0, 0, 5, 5]}", NULL, ", join: bevel"));
    cr_assert(strstr(e.msg, "root.source.join"), "%s", e.msg);
}

/* The device accumulates the host's unions of the same rings: the CPU's bytes. */
Test(boolean_source, gpu_gives_the_cpu_bytes)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_design *d = th_design(design("difference", "{shape: circle, center: [60, 50], radius: 45}",
                                     "{shape: ring, center: [60, 50], radii: [12, 20]}, {text: "
                                     "\"NO GO\", height: 14, position: [60, 50], align: center, "
                                     "anchor: middle, rotate: 30}", ", offset: -0.7, value: 0.6"));
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
