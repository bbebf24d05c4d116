/* periodic: nodes that repeat only inside (engine/plan.c) give exactly the bytes of direct
 * computation.
 *
 * A lattice carried through pattern, distance and blur edges is periodic inside its border,
 * and a lattice with a `region` inside the region; the engine computes one period tile and
 * copies it over that interior. The reference is the same engine with tsr_engine_opts.direct
 * (every node computed directly). Random chains (lattices of every kind and overlap, regions,
 * offsets, distance and blur of every edge mode and method, several edges per node, blends and
 * masks, a pointwise root over a repeating child or a repeating root) are compared whole, at
 * several tile sizes and thread counts, in rects that cut borders and corners, and as streams
 * in every order. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A small deterministic generator (the designs must be the same on every run). */
static uint64_t rng_state;

static uint32_t
rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)(rng_state >> 33) % n;
}

typedef struct yaml {
    char s[8192];
    size_t n;
} yaml;

static void
put(yaml *y, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(y->s + y->n, sizeof y->s - y->n, fmt, ap);
    va_end(ap);
    cr_assert(k >= 0 && (size_t)k < sizeof y->s - y->n, "test design too long");
    y->n += (size_t)k;
}

static const char *const blends[] = {"over", "add", "max", "min", "multiply"};
static const char *const overlaps[] = {"first", "average", "max", "add"};
static const char *const edges[] = {"zero", "clamp", "wrap"};

/* One lattice node named `name`, W x H: a motif repeated, maybe inside a region. */
static void
lattice(yaml *y, const char *name, int W, int H)
{
    int mw = 4 + (int)rnd(9), mh = 4 + (int)rnd(9);
    put(y, "  %s:\n    size: [%d, %d]\n    fill: %.2f\n    children:\n", name, W, H,
        rnd(3) == 0 ? 0.25 : 0.0);
    bool vector = rnd(2);
    put(y, "      - trait: %s\n", vector ? "repeat-vector" : "repeat");
    if (vector) { /* a lattice that may be sheared */
        int ux = mw + (int)rnd(4), vx = (int)rnd(7) - 3, vy = mh + (int)rnd(4);
        put(y, "        u: [%d, 0]\n        v: [%d, %d]\n        overlap: %s\n", ux, vx, vy,
            overlaps[rnd(4)]);
    } else if (rnd(2)) {
        put(y, "        period: [%d, %d]\n", mw - 1 + (int)rnd(4), mh - 1 + (int)rnd(4));
    }
    if (rnd(3) == 0)
        put(y, "        region: [%d, %d, %d, %d]\n", (int)rnd(30), (int)rnd(30), W / 2 + (int)rnd(W),
            H / 2 + (int)rnd(H));
    put(y, "        offset: [%d, %d]\n", (int)rnd(9) - 4, (int)rnd(9) - 4);
    put(y, "        node:\n          size: [%d, %d]\n", mw, mh);
    put(y, "          source: {shape: circle, center: [%.1f, %.1f], radius: %.1f, aa: %d}\n",
        mw / 2.0, mh / 2.0, (mw < mh ? mw : mh) / 2.5, 1 + (int)rnd(3));
}

/* One edge over child `ref`: pattern, distance or blur with random parameters. */
static void
edge(yaml *y, const char *ref)
{
    put(y, "      - {ref: %s, blend: %s, offset: [%d, %d]%s, ", ref, blends[rnd(5)],
        (int)rnd(7) - 3, (int)rnd(7) - 3, rnd(4) == 0 ? ", mask: nonzero" : "");
    switch (rnd(5)) {
    case 0: put(y, "trait: pattern}\n"); break;
    case 1:
        put(y, "trait: distance, dmax: %d, profile: %s, threshold: 0.%d}\n", 1 + (int)rnd(9),
            rnd(2) ? "sphere" : "linear", 2 + (int)rnd(6));
        break;
    case 2: put(y, "trait: blur, kernel: [[1, 2, 1], [0, 3, 0.5], [0.25, 0, 1]], edge: %s}\n", edges[rnd(3)]); break;
    case 3: /* a large sigma takes the approximating method */
        put(y, "trait: blur, sigma: %s, edge: %s}\n", rnd(2) ? "9.5" : "2.3", edges[rnd(3)]);
        break;
    default: put(y, "trait: blur, sigma: %.1f, edge: %s}\n", 0.6 + rnd(20) / 10.0, edges[rnd(3)]);
    }
}

/* A random design: lattices, then a chain of shift-invariant nodes over them, then a root. */
static void
random_design(yaml *y, int *W, int *H)
{
    *W = 90 + (int)rnd(140);
    *H = 70 + (int)rnd(110);
    y->n = 0;
    static const char *const corners[] = {"top-left", "top-right", "bottom-left", "bottom-right"};
    if (rnd(2))
        put(y, "tessera: 1\noutput: {depth: %d, range: [0, 2]}\nnodes:\n", rnd(2) ? 8 : 16);
    else
        put(y, "tessera: 1\noutput: {depth: %d, range: [0, 2], order: swath, swath: {width: %d, "
            "serpentine: %s, start: %s}}\nnodes:\n", rnd(2) ? 8 : 16, 20 + (int)rnd(100),
            rnd(2) ? "true" : "false", corners[rnd(4)]);
    lattice(y, "a", *W, *H);
    lattice(y, "b", *W, *H);
    int chain = 1 + (int)rnd(3);
    const char *prev = "a";
    char names[4][4];
    for (int k = 0; k < chain; k++) {
        snprintf(names[k], sizeof names[k], "n%d", k);
        put(y, "  %s:\n    size: [%d, %d]\n    fill: %.2f\n    children:\n", names[k], *W, *H,
            rnd(2) ? 0.0 : 0.5);
        edge(y, prev);
        if (rnd(3) == 0) /* a second edge: a second lattice, periods combine */
            edge(y, "b");
        prev = names[k];
    }
    put(y, "root:\n  size: [%d, %d]\n", *W, *H);
    if (rnd(2)) { /* a pointwise root over the repeating chain: not periodic itself */
        put(y, "  source: {gradient: linear, from: [0, 0], to: [%d, 0], values: [0.2, 1.0]}\n",
            *W);
        put(y, "  children:\n    - {trait: pattern, ref: %s, blend: multiply}\n", prev);
    } else {
        put(y, "  children:\n");
        edge(y, prev);
    }
}

static tsr_engine *
engine(const tsr_design *d, int64_t tile, int threads, bool direct)
{
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "cpu", .threads = threads, .tile = tile, .direct = direct};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "engine: %s", err.msg);
    return e;
}

static float *
values(tsr_engine *e, tsr_rect r)
{
    tsr_error err = {0};
    float *px = malloc((size_t)r.w * (size_t)r.h * sizeof(float));
    cr_assert(px != NULL);
    cr_assert(tsr_engine_render_rect(e, r, px, &err) == TSR_OK, "render_rect: %s", err.msg);
    return px;
}

/* Nodes that repeat only inside (not over their whole rect). */
static int
inner_nodes(const tsr_engine *e, const tsr_design *d)
{
    int n = 0;
    for (size_t i = 0; i < d->nnodes; i++) {
        int64_t p[2];
        tsr_rect in;
        if (tsr_engine_period(e, d->nodes[i], p, &in) &&
            !(in.w == d->nodes[i]->w && in.h == d->nodes[i]->h)) {
            cr_assert(p[0] > 0 && p[1] > 0 && in.w >= p[0] && in.h >= p[1]);
            n++;
        }
    }
    return n;
}

/* The whole stream (rows [y0, y1) of the root) as bytes; *n their count. */
static uint8_t *
stream(const tsr_design *d, int64_t tile, int threads, bool direct, int64_t y0, int64_t y1,
       size_t *n)
{
    tsr_engine_opts o = {.backend = "cpu", .threads = threads, .tile = tile, .direct = direct,
                         .rows = {y0, y1}};
    return th_stream_opts(d, &o, n);
}

static void
same(const float *a, const float *b, tsr_rect r, const char *what, int design)
{
    for (int64_t i = 0; i < r.w * r.h; i++)
        cr_assert(memcmp(&a[i], &b[i], sizeof(float)) == 0,
                  "design %d, %s: pixel (%lld, %lld) is %.9g, direct %.9g", design, what,
                  (long long)(r.x + i % r.w), (long long)(r.y + i / r.w), (double)a[i],
                  (double)b[i]);
}

Test(periodic, random_chains_give_the_bits_of_direct_computation, .timeout = 120)
{
    rng_state = 20261124;
    static const int64_t tiles[] = {7, 16, 64, 512};
    int with_inner = 0, inner_roots = 0;
    yaml y;
    for (int k = 0; k < 60; k++) {
        int W, H;
        random_design(&y, &W, &H);
        tsr_design *d = th_design(y.s);
        tsr_rect whole = tsr_rect_make(0, 0, W, H);
        tsr_engine *ref = engine(d, 0, 1, true);
        cr_assert(inner_nodes(ref, d) == 0, "direct: nothing repeats");
        float *want = values(ref, whole);
        tsr_engine_free(ref);
        int64_t tile = tiles[rnd(4)];
        tsr_engine *e = engine(d, tile, 1 + (int)rnd(2), false);
        with_inner += inner_nodes(e, d) > 0;
        float *got = values(e, whole);
        char what[64];
        snprintf(what, sizeof what, "whole root at tile %lld", (long long)tile);
        same(got, want, whole, what, k);
        free(got);
        /* a rect across the border and a corner, read cold by a fresh engine */
        tsr_engine_free(e);
        e = engine(d, tiles[rnd(4)], 2, false);
        tsr_rect r = tsr_rect_make(rnd((uint32_t)W / 2), rnd((uint32_t)H / 2), 1 + rnd((uint32_t)W / 2),
                                   1 + rnd((uint32_t)H / 2));
        got = values(e, r);
        float *sub = malloc((size_t)r.w * (size_t)r.h * sizeof(float));
        for (int64_t j = 0; j < r.h; j++)
            memcpy(sub + j * r.w, want + (r.y + j) * W + r.x, (size_t)r.w * sizeof(float));
        same(got, sub, r, "a rect read cold", k);
        free(sub);
        free(got);
        free(want);
        tsr_engine_free(e);
        /* the stream, in the design's order and a crop: a root periodic inside streams its
         * interior by sample row copies (engine.c: fill_periodic), the border computed */
        int64_t y0 = rnd(2) ? 0 : rnd((uint32_t)H / 2), y1 = rnd(2) ? H : y0 + 1 + rnd((uint32_t)(H - y0));
        size_t n1, n2;
        uint8_t *s1 = stream(d, tiles[rnd(4)], 1 + (int)rnd(2), false, y0, y1, &n1);
        uint8_t *s2 = stream(d, 0, 1, true, y0, y1, &n2);
        cr_assert(n1 == n2 && memcmp(s1, s2, n1) == 0, "design %d: the streams of rows %lld:%lld "
                  "differ", k, (long long)y0, (long long)y1);
        free(s1);
        free(s2);
        int64_t p[2];
        tsr_rect in;
        e = engine(d, 0, 1, false);
        inner_roots += tsr_engine_period(e, d->root, p, &in) && (in.w < W || in.h < H);
        tsr_engine_free(e);
        tsr_design_free(d);
    }
    cr_assert(inner_roots >= 5, "only %d of 60 designs had a root periodic inside", inner_roots);
    /* the generator must exercise what this suite is about */
    cr_assert(with_inner >= 30, "only %d of 60 designs had a node periodic inside", with_inner);
}

/* A lens lattice through distance and blur, times a dose gradient: the realistic shape. */
static const char *lens_yaml =
    "tessera: 1\n"
    "output: %s\n"
    "nodes:\n"
    "  seeds:\n"
    "    size: [233, 171]\n"
    "    children:\n"
    "      - trait: repeat-vector\n"
    "        u: [12, 0]\n"
    "        v: [6, 10]\n"
    "        offset: [3, 2]\n"
    "        node: {size: [1, 1], fill: 1}\n"
    "  cones:\n"
    "    size: [233, 171]\n"
    "    children: [{trait: distance, ref: seeds, dmax: 7, profile: sphere}]\n"
    "  smooth:\n"
    "    size: [233, 171]\n"
    "    children: [{trait: blur, ref: cones, sigma: 1.2, edge: %s}]\n"
    "root:\n"
    "  size: [233, 171]\n"
    "  source: {gradient: linear, from: [0, 0], to: [233, 0], values: [0.4, 1.0]}\n"
    "  children: [{trait: pattern, ref: smooth, blend: multiply}]\n";

Test(periodic, a_lens_lattice_through_distance_and_blur_streams_as_computed_directly)
{
    const char *orders[] = {
        "{depth: 8}",
        "{depth: 16, order: swath, swath: {width: 50, serpentine: true, start: bottom-right}}",
        "{depth: 8, order: swath, swath: {width: 64, start: top-right}}",
    };
    for (int o = 0; o < 3; o++) {
        for (int m = 0; m < 3; m++) {
            char y[2048];
            snprintf(y, sizeof y, lens_yaml, orders[o], edges[m]);
            tsr_design *d = th_design(y);
            tsr_engine *e = engine(d, 16, 2, false);
            int64_t p[2];
            tsr_rect in;
            const tsr_node *smooth = d->root->edges[0].child;
            cr_assert(tsr_engine_period(e, smooth, p, &in), "blur of distance of a lattice repeats");
            /* the lattice's axis periods, and the border: dmax 7 + blur support ceil(4 * 1.2) */
            cr_assert(p[0] == 12 && p[1] == 20, "period %lld x %lld", (long long)p[0], (long long)p[1]);
            cr_assert(in.x == 12 && in.y == 12 && in.w == 233 - 24 && in.h == 171 - 24,
                      "inside [%lld, %lld, %lld, %lld]", (long long)in.x, (long long)in.y,
                      (long long)in.w, (long long)in.h);
            cr_assert(!tsr_engine_period(e, d->root, p, NULL), "the gradient root does not repeat");
            tsr_engine_free(e);
            size_t n1, n2;
            uint8_t *got = stream(d, 16, 2, false, 0, 0, &n1);
            uint8_t *want = stream(d, 0, 1, true, 0, 0, &n2);
            cr_assert(n1 == n2 && memcmp(got, want, n1) == 0, "order %s, edge %s: streams differ",
                      orders[o], edges[m]);
            free(got);
            free(want);
            tsr_design_free(d);
        }
    }
}

/* A lattice with a region as the root: periodic inside the region, streamed by copies there. */
Test(periodic, a_lattice_root_with_a_region_repeats_inside_it)
{
    const char *y = "tessera: 1\n"
                    "root:\n"
                    "  size: [200, 150]\n"
                    "  fill: 0.1\n"
                    "  children:\n"
                    "    - trait: repeat\n"
                    "      region: [17, 9, 150, 120]\n"
                    "      offset: [2, 3]\n"
                    "      node: {size: [9, 7], source: {shape: circle, center: [4.5, 3.5], "
                    "radius: 3, aa: 4}}\n";
    tsr_design *d = th_design(y);
    tsr_engine *e = engine(d, 32, 2, false);
    int64_t p[2];
    tsr_rect in;
    cr_assert(tsr_engine_period(e, d->root, p, &in));
    cr_assert(p[0] == 9 && p[1] == 7 && in.x == 17 && in.y == 9 && in.w == 150 && in.h == 120);
    tsr_rect whole = tsr_rect_make(0, 0, 200, 150);
    float *got = values(e, whole);
    tsr_engine *r = engine(d, 0, 1, true);
    float *want = values(r, whole);
    same(got, want, whole, "region root", 0);
    free(got);
    free(want);
    tsr_engine_free(r);
    tsr_engine_free(e);
    tsr_design_free(d);
}
