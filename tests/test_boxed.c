/* A pattern of a leaf node drawn by a shape costs its shape's box (cpu/compute.c): the layer
 * is drawn over the box, and the fill over the rest of the covered rect only where that can
 * change a pixel. These designs, against the same ones with each shape's node given a layer
 * that changes nothing (so the whole rectangle is computed and blended, as before), must
 * give the same floats bit for bit, for every blend, mask, fill and shape. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 7;

static uint32_t
rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

static const char *const blends[] = {"over", "add", "max", "min", "multiply"};
static const char *const fills[] = {"0", "-0.0", "0.25", "1", "-1", "2"};
static const char *const roots[] = {
    "fill: 0",
    "fill: -0.0",
    "fill: 0.5",
    "source: {gradient: linear, from: [0, 0], to: [300, 0], values: [-1, 1]}",
};

/* A random design of `n` full-size shape nodes; `opaque`: each node also gets a pattern that
 * changes nothing (a 0 under mask: nonzero), which keeps it from being a leaf. */
static char *
layout(uint64_t seed, int n, bool opaque, bool first_max)
{
    rng_state = seed;
    size_t cap = 1 << 20, len = 0;
    char *b = malloc(cap);
    cr_assert_not_null(b);
    len += (size_t)snprintf(b + len, cap - len, "tessera: 1\nroot:\n  size: [300, 200]\n  %s\n"
                            "  children:\n", roots[rnd(4)]);
    for (int i = 0; i < n; i++) {
        char src[160];
        int x = (int)rnd(320) - 10, y = (int)rnd(220) - 10, s = 1 + (int)rnd(30);
        switch (rnd(4)) {
        case 0: snprintf(src, sizeof src, "{shape: rect, rect: [%d.5, %d, %d, %d.25], value: %s}",
                         x, y, s, s / 2 + 1, fills[rnd(6)]); break;
        case 1: snprintf(src, sizeof src, "{shape: circle, center: [%d, %d.5], radius: %d.3, "
                         "value: %s, aa: %u}", x, y, s, fills[rnd(6)], 1 + rnd(3)); break;
        case 2: snprintf(src, sizeof src, "{shape: ring, center: [%d, %d], radii: [%d, %d], "
                         "value: %s}", x, y, s / 3, s, fills[rnd(6)]); break;
        default: snprintf(src, sizeof src, "{shape: polygon, points: [[%d, %d], [%d, %d], "
                          "[%d, %d]], value: %s, aa: 2}", x, y, x + s, y + 3, x + 2, y + s,
                          fills[rnd(6)]); break;
        }
        const char *blend = i == 0 && first_max ? "max" : blends[rnd(5)];
        int w = 300 - (int)rnd(3) * 40, h = 200 - (int)rnd(3) * 30;
        len += (size_t)snprintf(b + len, cap - len,
                                "    - trait: pattern\n      blend: %s\n      mask: %s\n"
                                "      offset: [%d, %d]\n      node:\n        size: [%d, %d]\n"
                                "        fill: %s\n        source: %s\n",
                                blend, rnd(3) == 0 ? "nonzero" : "none", (int)rnd(3) * 20 - 20,
                                (int)rnd(3) * 15 - 15, w, h, fills[rnd(6)], src);
        if (opaque)
            len += (size_t)snprintf(b + len, cap - len,
                                    "        children: [{trait: pattern, mask: nonzero, "
                                    "node: {size: [1, 1]}}]\n");
        cr_assert_lt(len, cap - 512);
    }
    return b;
}

static void
assert_same_floats(const float *a, const float *b, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(memcmp(&a[i], &b[i], sizeof *a) == 0, "%s: pixel (%zu, %zu): %.9g, want %.9g",
                  what, i % 300, i / 300, a[i], b[i]);
}

Test(boxed, shape_layers_over_their_boxes_equal_whole_rectangles, .timeout = 120)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        char *ya = layout(seed, 1 + (int)(seed % 7) * 6, false, false);
        char *yb = layout(seed, 1 + (int)(seed % 7) * 6, true, false);
        tsr_design *a = th_design(ya), *b = th_design(yb);
        tsr_rect r = tsr_rect_make(0, 0, 300, 200);
        float *ref = th_rect(b, r, 512, 1);
        static const int64_t tiles[] = {7, 64, 512};
        for (int t = 0; t < 3; t++) {
            float *got = th_rect(a, r, tiles[t], 1 + t % 2);
            char what[64];
            snprintf(what, sizeof what, "seed %llu tile %lld", (unsigned long long)seed,
                     (long long)tiles[t]);
            assert_same_floats(got, ref, 300 * 200, what);
            free(got);
        }
        free(ref);
        tsr_design_free(a);
        tsr_design_free(b);
        free(ya);
        free(yb);
    }
}

/* The shapes' nodes are never computed over their rectangles (nor as tiles): the engine
 * counts no time of their own, only the root's. */
Test(boxed, shape_nodes_are_not_computed_over_their_rectangles)
{
    char *y = layout(99, 200, false, true);
    tsr_design *d = th_design(y);
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .tile = 64};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert_not_null(e, "%s", err.msg);
    size_t n;
    free(th_stream_engine(e, 0, &n));
    tsr_engine_stats st = tsr_engine_get_stats(e);
    cr_assert_eq(st.misses, 0, "%llu child tiles computed", (unsigned long long)st.misses);
    cr_assert_eq(st.nnodes, d->nnodes);
    for (size_t i = 0; i < d->nnodes; i++)
        cr_assert(d->nodes[i] == d->root || st.node_seconds[i] == 0.0,
                  "%s computed for %g s", d->nodes[i]->name, st.node_seconds[i]);
    cr_assert_gt(st.node_seconds[d->root->id], 0.0);
    tsr_engine_free(e);
    tsr_design_free(d);
    free(y);
}
