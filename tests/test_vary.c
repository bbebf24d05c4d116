/* vary: per-copy variation on lattices (docs/variation.md).
 *
 * A varied lattice against a hand-built equivalent design (every copy its own node, placed by a
 * pattern at its offset, its values worked out here from the definition) byte for byte;
 * jitter identical across tile sizes, thread counts and a resumed stream, and against its
 * documented hash; the periodic shortcut taken without variation and not with it; the
 * expression language against C's arithmetic; every error path; CPU == GPU where a device is
 * (skipped without one). */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "nodes/expr.h"
#include "nodes/expr_eval.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct yaml {
    char s[65536];
    size_t n;
} yaml;

static void __attribute__((format(printf, 2, 3)))
put(yaml *y, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(y->s + y->n, sizeof y->s - y->n, fmt, ap);
    va_end(ap);
    cr_assert(k >= 0 && (size_t)k < sizeof y->s - y->n, "test design too long");
    y->n += (size_t)k;
}

static void
assert_same_stream(const tsr_design *a, const tsr_design *b, const char *what)
{
    size_t na, nb;
    uint8_t *sa = th_stream(a, 64, 2, &na);
    uint8_t *sb = th_stream(b, 64, 2, &nb);
    cr_assert_eq(na, nb, "%s: sizes", what);
    size_t i = 0;
    while (i < na && sa[i] == sb[i])
        i++;
    cr_assert(i == na, "%s: byte %zu differs: %u varied, %u hand-built", what, i, sa[i], sb[i]);
    free(sa);
    free(sb);
}

/* ---- values: scale and bias ------------------------------------------------------------------- */

/* A 6 x 4 dose matrix in a 16 px grid: scale by column (expression), bias by row (a table of
 * one column holds for every i), a row outside the table taking the identity bias 0. */
Test(vary, scale_and_bias_equal_a_hand_built_design)
{
    static const char *varied =
        "tessera: 1\noutput: {depth: 16}\n"
        "root:\n  size: [112, 80]\n  fill: 0.05\n  children:\n"
        "    - trait: repeat\n      period: [16, 16]\n      offset: [4, 8]\n"
        "      region: [4, 8, 96, 64]\n"
        "      scale: \"0.3 + 0.125*i - (i > 3 ? 0.0625 : 0)\"\n"
        "      bias: {table: [[0.01], [0.02], [0.03]]}\n"
        "      node:\n        size: [14, 12]\n        fill: 0.25\n"
        "        source: {shape: circle, center: [7, 6], radius: 5.5, value: 0.9}\n";
    yaml h = {.n = 0};
    put(&h, "tessera: 1\noutput: {depth: 16}\nroot:\n  size: [112, 80]\n  fill: 0.05\n"
            "  children:\n");
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 6; i++) {
            double sc = 0.3 + 0.125 * i - (i > 3 ? 0.0625 : 0);
            static const double rows[4] = {0.01, 0.02, 0.03, 0.0};
            double bi = rows[j];
            float fill = (float)(bi + sc * (double)0.25f);
            float val = (float)(bi + sc * (double)0.9f);
            put(&h, "    - trait: pattern\n      offset: [%d, %d]\n      node:\n"
                    "        size: [14, 12]\n        fill: %.9g\n"
                    "        source: {shape: circle, center: [7, 6], radius: 5.5, value: %.9g}\n",
                4 + 16 * i, 8 + 16 * j, (double)fill, (double)val);
        }
    tsr_design *a = th_design(varied), *b = th_design(h.s);
    assert_same_stream(a, b, "scale and bias");
    tsr_design_free(a);
    tsr_design_free(b);
}

/* Overlapping copies (average) see each copy's own scaled value: a ramp over i. */
Test(vary, scaled_overlapping_copies_average_like_hand_built_ones)
{
    static const char *varied =
        "tessera: 1\nroot:\n  size: [60, 20]\n  children:\n"
        "    - trait: repeat-vector\n      u: [6, 0]\n      v: [0, 40]\n      overlap: average\n"
        "      region: [0, 0, 60, 20]\n      scale: {ramp: [0.2, 0.1, 0]}\n"
        "      node: {size: [10, 10], fill: 0.5}\n";
    yaml h = {.n = 0};
    put(&h, "tessera: 1\nroot:\n  size: [60, 20]\n  children:\n");
    /* copy i covers x in [6i, 6i + 10): pixel x is covered by i = floor(x/6) and maybe
     * i - 1; the average of the (non-zero) values in copy order */
    put(&h, "    - trait: pattern\n      node:\n        size: [60, 10]\n        children:\n");
    for (int x = 0; x < 60; x++) {
        float l = 0.0f;
        int n = 0;
        for (int i = -3; i <= 12; i++) {
            if (!(6 * i <= x && x < 6 * i + 10))
                continue;
            float s = (float)(0.0 + (0.2 + 0.1 * i) * (double)0.5f);
            l = n ? l + s : s;
            n++;
        }
        float v = l / (float)n;
        put(&h, "          - {trait: pattern, offset: [%d, 0], node: {size: [1, 10], fill: %.9g}}\n",
            x, (double)v);
    }
    tsr_design *a = th_design(varied), *b = th_design(h.s);
    assert_same_stream(a, b, "average of scaled copies");
    tsr_design_free(a);
    tsr_design_free(b);
}

/* A skewed lattice is walked in its reduced basis (nodes/repeat.c) but keeps its copies'
 * (i, j): u = [65, 1], v = [64, 1] is the unit grid, copy (i, j) at (65i + 64j, i + j), so on
 * the grid [1, 0], [0, 1] the same copy is (x, y) with i = x - 64y, j = 65y - x. Small integer
 * values (multiples of 1/64) add exactly, so copy order does not show. */
Test(vary, a_reduced_walk_keeps_each_copys_index)
{
    static const char *fmt =
        "tessera: 1\noutput: {depth: 16, range: [-400, 400]}\nroot:\n  size: [90, 40]\n"
        "  children:\n    - trait: repeat-vector\n      u: %s\n      v: %s\n"
        "      overlap: add\n      scale: \"%s\"\n      bias: \"%s\"\n"
        "      node: {size: [3, 2], fill: 1}\n";
    char skewed[1024], grid[1024];
    snprintf(skewed, sizeof skewed, fmt, "[65, 1]", "[64, 1]", "i / 64", "j % 7");
    snprintf(grid, sizeof grid, fmt, "[1, 0]", "[0, 1]", "(i - 64*j) / 64", "(65*j - i) % 7");
    tsr_design *a = th_design(skewed), *b = th_design(grid);
    assert_same_stream(a, b, "reduced walk");
    tsr_design_free(a);
    tsr_design_free(b);
}

/* ---- source parameters ---------------------------------------------------------------------- */

/* A graded-radius lens field: each copy's radial gradient (a cone lens) gets radius
 * 3 + 0.5 i + 0.25 j, and each disc's value a table entry; a radius <= 0 leaves its copy
 * undrawn. */
Test(vary, source_parameters_equal_a_hand_built_design)
{
    static const char *varied =
        "tessera: 1\n"
        "nodes:\n"
        "  lens:\n    size: [16, 16]\n"
        "    source: {gradient: radial, center: [8, 8], radius: 7, values: [1, 0]}\n"
        "  dot:\n    size: [9, 9]\n    fill: 0.1\n"
        "    source: {shape: circle, center: [4.5, 4.5], radius: 3.7, aa: 3}\n"
        "root:\n  size: [96, 80]\n  children:\n"
        "    - trait: repeat\n      ref: lens\n      region: [0, 0, 96, 48]\n"
        "      source-radius: \"3 + 0.5*i + 0.25*j\"\n"
        "    - trait: repeat-vector\n      ref: dot\n      u: [10, 0]\n      v: [5, 10]\n"
        "      offset: [0, 50]\n      region: [0, 50, 96, 30]\n      blend: add\n"
        "      source-value: {table: [[0.2, 0.4, 0.6], [0.8, 1.0, 1.2]], origin: [1, 0], "
        "outside: 0.05}\n"
        "      source-radius: \"i == 5 ? 0 - 1 : 3.7\"\n";
    yaml h = {.n = 0};
    put(&h, "tessera: 1\nroot:\n  size: [96, 80]\n  children:\n");
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 6; i++) {
            double r = 3 + 0.5 * i + 0.25 * j;
            put(&h, "    - trait: pattern\n      offset: [%d, %d]\n      node:\n"
                    "        size: [16, 16]\n"
                    "        source: {gradient: radial, center: [8, 8], radius: %.17g, "
                    "values: [1, 0]}\n",
                16 * i, 16 * j, r);
        }
    /* the dot lattice: copies (i, j) at (10 i + 5 j, 50 + 10 j) meeting [0, 96) x [50, 80),
     * in copy order, clipped to the region by a carrier node of the region's size */
    put(&h, "    - trait: pattern\n      offset: [0, 50]\n      blend: add\n      node:\n"
            "        size: [96, 30]\n        children:\n");
    for (int j = 0; j < 3; j++)
        for (int i = -2; i < 10; i++) {
            int x = 10 * i + 5 * j, y = 10 * j;
            if (x + 9 <= 0 || x >= 96)
                continue;
            if (i == 5)
                continue; /* radius -1: not drawn, not covered */
            double v = (i >= 1 && i <= 3 && j <= 1) ? (j == 0 ? 0.2 * i : 0.2 * (i + 3)) : 0.05;
            static const double t[2][3] = {{0.2, 0.4, 0.6}, {0.8, 1.0, 1.2}};
            if (i >= 1 && i <= 3 && j <= 1)
                v = t[j][i - 1];
            put(&h, "          - trait: pattern\n            offset: [%d, %d]\n"
                    "            node:\n              size: [9, 9]\n              fill: 0.1\n"
                    "              source: {shape: circle, center: [4.5, 4.5], radius: 3.7, "
                    "aa: 3, value: %.9g}\n",
                x, y, (double)(float)v);
        }
    tsr_design *a = th_design(varied), *b = th_design(h.s);
    assert_same_stream(a, b, "source parameters");
    tsr_design_free(a);
    tsr_design_free(b);
}

/* A child too big to draw whole per value (nodes/repeat.c's memo) is drawn per copy over the
 * part of the copy a tile needs: the same pixels. */
Test(vary, big_varied_children_are_drawn_per_clip_alike)
{
    static const char *varied =
        "tessera: 1\nroot:\n  size: [780, 520]\n  children:\n"
        "    - trait: repeat\n      region: [0, 0, 780, 520]\n"
        "      source-radius: \"60 + 20*i + 15*j\"\n      source-value: \"0.5 + 0.125*j\"\n"
        "      node:\n        size: [260, 260]\n        fill: 0.2\n"
        "        source: {shape: circle, center: [130, 130], radius: 100, aa: 2}\n";
    yaml h = {.n = 0};
    put(&h, "tessera: 1\nroot:\n  size: [780, 520]\n  children:\n");
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++)
            put(&h, "    - trait: pattern\n      offset: [%d, %d]\n      node:\n"
                    "        size: [260, 260]\n        fill: 0.2\n"
                    "        source: {shape: circle, center: [130, 130], radius: %.17g, aa: 2, "
                    "value: %.9g}\n",
                260 * i, 260 * j, 60 + 20.0 * i + 15.0 * j, (double)(float)(0.5 + 0.125 * j));
    tsr_design *a = th_design(varied), *b = th_design(h.s);
    assert_same_stream(a, b, "big children");
    size_t n1, n2;
    uint8_t *t1 = th_stream(a, 7, 1, &n1), *t2 = th_stream(a, 512, 2, &n2);
    cr_assert(n1 == n2 && memcmp(t1, t2, n1) == 0, "tile 7 against 512");
    free(t1);
    free(t2);
    tsr_design_free(a);
    tsr_design_free(b);
}

/* ---- jitter ----------------------------------------------------------------------------------- */

/* SplitMix64 as its authors publish it, written again here: the hash is the documented one. */
static uint64_t
ref_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

Test(vary, jitter_is_the_documented_hash_and_stays_in_its_bound)
{
    int64_t b[2] = {3, 1}, d[2];
    int seen[7][3] = {{0}};
    for (int64_t j = -40; j < 40; j++)
        for (int64_t i = -40; i < 40; i++) {
            tsr_jitter(12345, b, i, j, d);
            uint64_t h = ref_mix(ref_mix(ref_mix(12345) ^ (uint64_t)i) ^ (uint64_t)j);
            cr_assert_eq(d[0], (int64_t)(((h >> 32) * 7) >> 32) - 3);
            cr_assert_eq(d[1], (int64_t)(((h & 0xffffffffu) * 3) >> 32) - 1);
            cr_assert(d[0] >= -3 && d[0] <= 3 && d[1] >= -1 && d[1] <= 1);
            seen[d[0] + 3][d[1] + 1]++;
        }
    for (int x = 0; x < 7; x++)
        for (int y = 0; y < 3; y++)
            cr_assert(seen[x][y] > 0, "displacement (%d, %d) never drawn", x - 3, y - 1);
}

static const char *jittered =
    "tessera: 1\noutput: {depth: 8}\n"
    "root:\n  size: [203, 157]\n  children:\n"
    "    - trait: repeat-vector\n      u: [12, 0]\n      v: [6, 11]\n      overlap: max\n"
    "      jitter: [4, 3]\n      seed: 77\n      offset: [-5, -3]\n"
    "      scale: \"1 - 0.002*i*j\"\n"
    "      node:\n        size: [11, 11]\n"
    "        source: {gradient: radial, center: [5.5, 5.5], radius: 5.5, values: [1, 0]}\n";

Test(vary, jitter_is_identical_for_any_tile_thread_count_and_resume)
{
    tsr_design *d = th_design(jittered);
    size_t n0, n;
    uint8_t *ref = th_stream(d, 512, 1, &n0);
    static const int64_t tiles[] = {1, 7, 64, 512};
    for (size_t t = 0; t < 4; t++)
        for (int threads = 1; threads <= 2; threads++) {
            uint8_t *got = th_stream(d, tiles[t], threads, &n);
            cr_assert(n == n0 && memcmp(got, ref, n) == 0, "tile %lld, %d threads differ",
                      (long long)tiles[t], threads);
            free(got);
        }
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "cpu", .threads = 2, .tile = 7};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e, "%s", err.msg);
    uint64_t start = 203 * 57 + 31;
    uint8_t *tail = th_stream_engine(e, start, &n);
    cr_assert(n == n0 - start && memcmp(tail, ref + start, n) == 0, "resumed stream differs");
    free(tail);
    tsr_engine_free(e);
    free(ref);
    tsr_design_free(d);
}

/* The jittered lattice is the hand-built one: each copy a pattern at its displaced origin. */
Test(vary, jitter_equals_a_hand_built_design)
{
    static const char *varied =
        "tessera: 1\nroot:\n  size: [70, 50]\n  children:\n"
        "    - trait: repeat\n      period: [14, 14]\n      jitter: [3, 2]\n      seed: 5\n"
        "      region: [0, 0, 70, 50]\n      blend: add\n"
        "      node:\n        size: [8, 8]\n        fill: 0.25\n";
    yaml h = {.n = 0};
    put(&h, "tessera: 1\nroot:\n  size: [70, 50]\n  children:\n");
    int64_t b[2] = {3, 2}, d[2];
    for (int64_t j = -1; j <= 4; j++)
        for (int64_t i = -1; i <= 5; i++) {
            tsr_jitter(5, b, i, j, d);
            put(&h, "    - {trait: pattern, blend: add, offset: [%lld, %lld], "
                    "node: {size: [8, 8], fill: 0.25}}\n",
                (long long)(14 * i + d[0]), (long long)(14 * j + d[1]));
        }
    tsr_design *a = th_design(varied), *hb = th_design(h.s);
    assert_same_stream(a, hb, "jitter");
    tsr_design_free(a);
    tsr_design_free(hb);
}

/* ---- the periodic shortcut -------------------------------------------------------------------- */

static bool
root_periodic(const char *yaml_text)
{
    tsr_design *d = th_design(yaml_text);
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "cpu", .threads = 1};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e, "%s", err.msg);
    int64_t p[2];
    bool per = tsr_engine_period(e, d->root, p, NULL);
    tsr_engine_free(e);
    tsr_design_free(d);
    return per;
}

Test(vary, periodic_shortcut_only_without_variation)
{
    static const char *base = "tessera: 1\nroot:\n  size: [400, 300]\n  children:\n"
                              "    - trait: repeat\n      period: [20, 20]\n%s"
                              "      node: {size: [10, 10], fill: 1}\n";
    static const char *keys[] = {"", "      scale: 0.5\n", "      bias: \"0.25 + 0\"\n",
                                 "      scale: \"1 - 0.001*i\"\n",
                                 "      bias: {table: [[0.1]]}\n",
                                 "      jitter: [1, 0]\n"};
    static const bool periodic[] = {true, true, true, false, false, false};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char y[512];
        snprintf(y, sizeof y, base, keys[k]);
        cr_assert_eq(root_periodic(y), periodic[k], "%s", keys[k]);
    }
    /* and the bytes: a varying lattice computed directly equals the engine's default path */
    char y[512];
    snprintf(y, sizeof y, base, "      scale: \"1 - 0.001*i*j\"\n");
    tsr_design *d = th_design(y);
    size_t n1, n2;
    tsr_engine_opts direct = {.backend = "cpu", .threads = 2, .direct = true};
    uint8_t *a = th_stream_opts(d, &direct, &n1), *b = th_stream(d, 64, 2, &n2);
    cr_assert(n1 == n2 && memcmp(a, b, n1) == 0);
    cr_assert_neq(b[5 * 400 + 5], b[285 * 400 + 385], "the copies do differ");
    free(a);
    free(b);
    tsr_design_free(d);
}

/* ---- the expression language ------------------------------------------------------------------ */

static double
ev(const char *text, int64_t i, int64_t j)
{
    tsr_expr e;
    size_t at;
    char msg[128];
    cr_assert(tsr_expr_parse(text, &e, &at, msg, sizeof msg), "%s: at %zu: %s", text, at, msg);
    return tsr_expr_eval(&e, i, j);
}

static void
same(double a, double b, const char *what)
{
    cr_assert(memcmp(&a, &b, sizeof a) == 0, "%s: %.17g != %.17g", what, a, b);
}

Test(vary, expressions_follow_c_arithmetic)
{
    for (int64_t j = -3; j <= 3; j++)
        for (int64_t i = -4; i <= 4; i++) {
            double di = (double)i, dj = (double)j;
            same(ev("1 + 2*i - j/3", i, j), 1 + 2 * di - dj / 3, "precedence");
            same(ev("(1 + 2)*i", i, j), (1 + 2) * di, "parentheses");
            same(ev("-i - -j", i, j), -di - -dj, "unary minus");
            same(ev("i % 3", i, j), di - 3 * floor(di / 3), "floor modulo");
            same(ev("sqrt(i*i + j*j) / 7.5e-1", i, j), sqrt(di * di + dj * dj) / 7.5e-1, "sqrt");
            same(ev("abs(i) + floor(j/2) + ceil(i/3)", i, j),
                 fabs(di) + floor(dj / 2) + ceil(di / 3), "abs floor ceil");
            same(ev("min(i, j) * 10 + max(i, j)", i, j), (dj < di ? dj : di) * 10 + (dj > di ? dj : di),
                 "min max");
            same(ev("clamp(i, -2, 1.5)", i, j), di < -2 ? -2 : (di > 1.5 ? 1.5 : di), "clamp");
            same(ev("i < j ? 1 : j >= 2 ? 2 : 3", i, j), di < dj ? 1 : (dj >= 2 ? 2 : 3), "select");
            same(ev("(i == j) + (i != j)*2 + (i <= j)*4 + (i > j)*8", i, j),
                 (di == dj) + (di != dj) * 2 + (di <= dj) * 4 + (di > dj) * 8, "comparisons");
            same(ev("pi*i", i, j), M_PI * di, "pi");
        }
}

Test(vary, tables_index_by_row_and_column_with_an_origin)
{
    double t23[6] = {1, 2, 3, 4, 5, 6}, row[3] = {7, 8, 9}, col[2] = {10, 11};
    tsr_expr e, r, c;
    char msg[128];
    cr_assert(tsr_expr_table(&e, 2, 3, t23, -1, 2, -5, msg, sizeof msg));
    cr_assert(tsr_expr_table(&r, 1, 3, row, 0, 100, -5, msg, sizeof msg));
    cr_assert(tsr_expr_table(&c, 2, 1, col, 100, 1, -5, msg, sizeof msg));
    for (int64_t j = -2; j <= 6; j++)
        for (int64_t i = -4; i <= 5; i++) {
            bool in = i >= -1 && i <= 1 && j >= 2 && j <= 3;
            same(tsr_expr_eval(&e, i, j), in ? t23[(j - 2) * 3 + (i + 1)] : -5, "2 x 3");
            same(tsr_expr_eval(&r, i, j), i >= 0 && i <= 2 ? row[i] : -5, "one row: any j");
            same(tsr_expr_eval(&c, i, j), j >= 1 && j <= 2 ? col[j - 1] : -5, "one column: any i");
        }
    tsr_expr_ramp(&e, 0.5, 0.25, -0.125);
    same(tsr_expr_eval(&e, 3, 5), (0.5 + 0.25 * 3) + -0.125 * 5, "ramp");
    double k;
    tsr_expr_const(&e, 0.75);
    cr_assert(tsr_expr_is_const(&e, &k) && k == 0.75);
    cr_assert(!tsr_expr_is_const(&r, NULL));
}

Test(vary, formatted_expressions_parse_back_to_the_same_values)
{
    static const char *texts[] = {"1 + 2*i - j/3", "-0.1*i + 1e-3", "i < j ? sqrt(i) : -j",
                                  "clamp(i % 4, 0.5, 2) - min(abs(j), 3)", "0.3"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        tsr_expr e, f;
        size_t at;
        char msg[128], buf[2048];
        cr_assert(tsr_expr_parse(texts[k], &e, &at, msg, sizeof msg));
        size_t n = tsr_expr_format(&e, buf, sizeof buf);
        cr_assert(n < sizeof buf && buf[0] == '"');
        buf[n - 1] = 0;
        cr_assert(tsr_expr_parse(buf + 1, &f, &at, msg, sizeof msg), "%s: %s", buf + 1, msg);
        for (int64_t j = -2; j <= 2; j++)
            for (int64_t i = -2; i <= 2; i++)
                same(tsr_expr_eval(&e, i, j), tsr_expr_eval(&f, i, j), buf + 1);
    }
}

Test(vary, expression_errors_name_the_offset)
{
    static const struct {
        const char *text;
        size_t at;
        const char *msg;
    } bad[] = {
        {"1 +", 3, "got the end"},
        {"2 * (i + 1", 10, "expected ')'"},
        {"i j", 2, "after a complete expression"},
        {"sin(i)", 0, "unknown name 'sin'"},
        {"min(i)", 5, "expected ','"},
        {"abs(i, j)", 5, "abs takes 1 argument"},
        {"1.e3", 2, "digit after '.'"},
        {"2e", 2, "exponent"},
        {"  ", 2, "empty"},
        {"i ? 1", 5, "':'"},
        {"1e999", 0, "out of the range"},
        {"i $ 2", 2, "'$'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tsr_expr e;
        size_t at = 999;
        char msg[160];
        cr_assert(!tsr_expr_parse(bad[k].text, &e, &at, msg, sizeof msg), "%s", bad[k].text);
        cr_assert_eq(e.nops, 0);
        cr_assert_eq(at, bad[k].at, "%s: at %zu: %s", bad[k].text, at, msg);
        cr_assert(strstr(msg, bad[k].msg), "%s: %s", bad[k].text, msg);
    }
    /* limits: nesting, stack and length */
    char deep[400];
    memset(deep, '-', 390);
    strcpy(deep + 390, "1");
    tsr_expr e;
    size_t at;
    char msg[160];
    cr_assert(!tsr_expr_parse(deep, &e, &at, msg, sizeof msg) && strstr(msg, "nested"), "%s", msg);
    char wide[400] = "";
    for (int k = 0; k < 20; k++)
        strcat(wide, "1+(");
    strcat(wide, "1");
    for (int k = 0; k < 20; k++)
        strcat(wide, ")");
    cr_assert(!tsr_expr_parse(wide, &e, &at, msg, sizeof msg) && strstr(msg, "pending"), "%s", msg);
    char *longtext = malloc(9000);
    memset(longtext, ' ', 8999);
    longtext[8998] = '1';
    longtext[8999] = 0;
    cr_assert(!tsr_expr_parse(longtext, &e, &at, msg, sizeof msg) && strstr(msg, "longer"), "%s", msg);
    free(longtext);
    double big[300] = {0};
    cr_assert(!tsr_expr_table(&e, 20, 14, big, 0, 0, 0, msg, sizeof msg) && strstr(msg, "at most"));
    cr_assert(!tsr_expr_table(&e, 0, 3, big, 0, 0, 0, msg, sizeof msg) && strstr(msg, "at least"));
}

/* ---- design errors ---------------------------------------------------------------------------- */

static void
load_fails(const char *text, const char *want)
{
    tsr_error err = {0};
    tsr_design *d = tsr_design_load_string(text, strlen(text), "v.yaml", NULL, NULL, &err);
    cr_assert(d == NULL, "loaded: %s", text);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, want), "got \"%s\", want \"%s\"", err.msg, want);
}

#define EDGE "tessera: 1\nroot:\n  size: [40, 40]\n  children:\n    - trait: repeat\n"

Test(vary, bad_variations_are_refused_with_their_place)
{
    load_fails(EDGE "      scale: \"1 + * i\"\n      node: {size: [4, 4]}\n",
               "v.yaml:6:19: root.children[0].scale: expected a number");
    load_fails(EDGE "      bias: 1 + (i\n      node: {size: [4, 4]}\n",
               "v.yaml:6:19: root.children[0].bias: expected ')'");
    load_fails(EDGE "      scale: {table: [[1, 2], [3]]}\n      node: {size: [4, 4]}\n",
               "root.children[0].scale.table[1]");
    load_fails(EDGE "      scale: {table: [[1, x]]}\n      node: {size: [4, 4]}\n",
               "root.children[0].scale.table[0][1]");
    load_fails(EDGE "      scale: {ramp: [1, 2]}\n      node: {size: [4, 4]}\n",
               "root.children[0].scale.ramp");
    load_fails(EDGE "      scale: {ramp: [1, 2, 3], outside: 1}\n      node: {size: [4, 4]}\n",
               "'origin' and 'outside' go with 'table'");
    load_fails(EDGE "      scale: {}\n      node: {size: [4, 4]}\n", "give exactly one of");
    load_fails(EDGE "      scale: {tabel: [[1]]}\n      node: {size: [4, 4]}\n", "tabel");
    load_fails(EDGE "      scale: [1, 2]\n      node: {size: [4, 4]}\n", "root.children[0].scale");
    load_fails(EDGE "      source-radius: 2\n      node: {size: [4, 4]}\n",
               "root.children[0].source-radius: the child root.children[0].node has no source "
               "with a 'radius'");
    load_fails(EDGE "      source-radius: 2\n      node: {size: [4, 4], source: {shape: rect, "
                    "rect: [0, 0, 2, 2]}}\n",
               "no source with a 'radius'");
    load_fails(EDGE "      source-value: i\n      node:\n        size: [4, 4]\n"
                    "        source: {shape: circle, center: [2, 2], radius: 1}\n"
                    "        children: [{trait: pattern, node: {size: [1, 1]}}]\n",
               "source-value: needs a child without children");
    load_fails(EDGE "      jitter: [-1, 0]\n      node: {size: [4, 4]}\n", "root.children[0].jitter");
    load_fails(EDGE "      jitter: [2000000, 0]\n      node: {size: [4, 4]}\n", "jitter");
    load_fails(EDGE "      jitter: [200, 200]\n      node: {size: [4, 4]}\n",
               "root.children[0].jitter: [200, 200] over a lattice cell of 16 px puts 10050 "
               "candidate");
    char big[8192] = EDGE "      scale: {table: [";
    for (int r = 0; r < 17; r++)
        strcat(big, r ? ", [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]" : "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]");
    strcat(big, "]}\n      node: {size: [4, 4]}\n");
    load_fails(big, "a table holds");
}

/* ---- CPU == GPU ------------------------------------------------------------------------------- */

static void
need_gpu(void)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
}

static void
assert_gpu_equal(const char *text)
{
    tsr_design *d = th_design(text);
    size_t n1, n2;
    uint8_t *cpu = th_stream(d, 64, 2, &n1);
    static const int64_t chunks[] = {0, 37 * 53};
    for (size_t c = 0; c < 2; c++) {
        tsr_engine_opts o = {.backend = "gpu", .gpu_chunk = chunks[c],
                             .gpu_memory = (int64_t)2 << 30};
        uint8_t *gpu = th_stream_opts(d, &o, &n2);
        size_t i = 0;
        while (i < n1 && i < n2 && cpu[i] == gpu[i])
            i++;
        cr_assert(n1 == n2 && i == n1, "chunk %lld: byte %zu differs", (long long)chunks[c], i);
        free(gpu);
    }
    free(cpu);
    tsr_design_free(d);
}

Test(vary, gpu_values_and_jitter_equal_the_cpu)
{
    need_gpu();
    assert_gpu_equal(jittered);
    assert_gpu_equal("tessera: 1\noutput: {depth: 16}\nroot:\n  size: [300, 200]\n  children:\n"
                     "    - trait: repeat\n      period: [30, 20]\n"
                     "      scale: {table: [[0.5, 0.6, 0.7], [0.8, 0.9, 1.0]], origin: [2, 1]}\n"
                     "      bias: \"clamp(0.01*i - 0.02*j, -0.1, 0.1) + (i % 3 == 0 ? 0.05 : 0)\"\n"
                     "      node:\n        size: [25, 18]\n"
                     "        source: {shape: ellipse, center: [12, 9], radii: [10, 7], aa: 4}\n");
    assert_gpu_equal("tessera: 1\nroot:\n  size: [300, 200]\n  children:\n"
                     "    - trait: repeat-vector\n      u: [9, 1]\n      v: [-2, 8]\n"
                     "      overlap: average\n      jitter: [2, 2]\n      seed: 3\n"
                     "      scale: \"sqrt(1 + i*i + j*j) / 10\"\n"
                     "      node:\n        size: [12, 12]\n"
                     "        source: {gradient: radial, center: [6, 6], radius: 6, values: [1, 0]}\n");
    /* per-copy source parameters, drawn per copy on the device: a radial gradient's radius */
    assert_gpu_equal("tessera: 1\nroot:\n  size: [200, 200]\n  children:\n"
                     "    - trait: repeat\n      period: [20, 20]\n"
                     "      source-radius: \"4 + 0.25*i + 0.125*j\"\n"
                     "      node:\n        size: [20, 20]\n"
                     "        source: {gradient: radial, center: [10, 10], radius: 9, values: [1, 0]}\n");
    /* a circle's radius with aa, some copies out of the radius' range (not drawn: the layer
     * leaves their pixels alone), over a field blended by max */
    assert_gpu_equal("tessera: 1\noutput: {depth: 16}\nroot:\n  size: [230, 170]\n  fill: 0.1\n"
                     "  children:\n    - trait: repeat\n      period: [23, 17]\n      blend: max\n"
                     "      source-radius: \"clamp(2 + 0.7*i + 0.9*j, 0, 12) - (i == 3 ? 20 : 0)\"\n"
                     "      node:\n        size: [22, 16]\n        fill: 0.05\n"
                     "        source: {shape: circle, center: [11.3, 7.9], radius: 5, aa: 4}\n");
    /* values of ellipses, rings and rects on a skewed, jittered lattice whose copies overlap,
     * with a scale too; and a plain circle's radius without aa on a rotated lattice */
    static const char *const shapes[] = {
        "{shape: ellipse, center: [8, 6], radii: [7, 4], aa: 3}",
        "{shape: ring, center: [8, 7], radii: [3, 6.5], aa: 2}",
        "{shape: rect, rect: [2.5, 1.25, 10, 9.5], aa: 5}"};
    for (size_t k = 0; k < 3; k++) {
        char d[1024];
        snprintf(d, sizeof d,
                 "tessera: 1\nroot:\n  size: [260, 190]\n  children:\n"
                 "    - trait: repeat-vector\n      u: [13, 2]\n      v: [-3, 11]\n"
                 "      overlap: add\n      jitter: [1, 2]\n      seed: 7\n"
                 "      source-value: \"0.2 + 0.05*((i + 2*j) %% 9)\"\n"
                 "      scale: \"1 - 0.01*i\"\n"
                 "      node:\n        size: [16, 14]\n        source: %s\n", shapes[k]);
        assert_gpu_equal(d);
    }
    assert_gpu_equal("tessera: 1\nroot:\n  size: [200, 200]\n  children:\n"
                     "    - trait: repeat-vector\n      u: [14, 5]\n      v: [-5, 14]\n"
                     "      source-radius: \"3 + 0.5*abs(i - j)\"\n"
                     "      node:\n        size: [15, 15]\n"
                     "        source: {shape: circle, center: [7.5, 7.5], radius: 4}\n");
}
