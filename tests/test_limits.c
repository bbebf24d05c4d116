/* Limits: sizes beyond 2^31 per side, offsets and sizes at the 2^40 bounds, lattices of long
 * nearly parallel vectors, 1000-deep node chains, 10000 children, PNGs that are cut short or
 * lie about their size, YAML bombs. Each is a correct render (checked pixel by pixel against
 * values computed here from docs/format.md) or a clear error naming where and what. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "helpers/helpers.h"
#include "nodes/params.h"
#include "image/image.h"
#include "stream/stream.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define P40 ((int64_t)1 << 40)
#define BIG_MEMORY ((int64_t)1 << 50) /* the plan is arithmetic: render_rect allocates per rect */

static tsr_design *
load_limits(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "tests/designs/limits/%s", name);
    char *path = th_src(rel);
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = tsr_engine_load(path, &err);
    cr_assert(d != NULL, "%s: %s", path, err.msg);
    free(path);
    return d;
}

/* The design error a file gives: status and message. */
static void
assert_load_error(const char *name, tsr_status want, const char *text)
{
    char rel[256];
    snprintf(rel, sizeof rel, "tests/designs/limits/%s", name);
    char *path = th_src(rel);
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = tsr_engine_load(path, &err);
    cr_assert(d == NULL, "%s loaded", name);
    cr_assert_eq(err.status, want, "%s: status %s (%s)", name, tsr_status_name(err.status),
                 err.msg);
    cr_assert(strstr(err.msg, text) != NULL, "%s: '%s' not in '%s'", name, text, err.msg);
    cr_assert(strstr(err.msg, name) != NULL, "%s: the message does not name the file: %s", name,
              err.msg);
    free(path);
}

static float *
render(const tsr_design *d, tsr_rect r, int64_t tile, int threads)
{
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = threads, .tile = tile, .memory = BIG_MEMORY};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "engine: %s", err.msg);
    float *px = malloc((size_t)r.w * (size_t)r.h * sizeof *px);
    cr_assert(tsr_engine_render_rect(e, r, px, &err) == TSR_OK, "render %lld,%lld,%lld,%lld: %s",
              (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h, err.msg);
    tsr_engine_free(e);
    return px;
}

/* Every pixel of r at tiles 512, 64 and 7 against want(x, y). */
static void
assert_rect(const tsr_design *d, tsr_rect r, float (*want)(int64_t x, int64_t y), const char *what)
{
    const int64_t tiles[] = {0, 64, 7};
    for (size_t t = 0; t < 3; t++) {
        float *px = render(d, r, tiles[t], t == 2 ? 2 : 1);
        for (int64_t y = 0; y < r.h; y++)
            for (int64_t x = 0; x < r.w; x++) {
                float got = px[y * r.w + x], w = want(r.x + x, r.y + y);
                cr_assert(memcmp(&got, &w, sizeof got) == 0,
                          "%s: pixel (%lld, %lld) at tile %lld is %.9g, want %.9g", what,
                          (long long)(r.x + x), (long long)(r.y + y), (long long)tiles[t],
                          (double)got, (double)w);
            }
        free(px);
    }
}

/* ---- beyond 2^31 per side ------------------------------------------------------------------- */

/* docs/format.md §4, linear gradient from (0, 0) to (n, 0) with values [0, 1], at pixel column m */
static float
gradient_x(int64_t m, double n)
{
    double px = (double)m + 0.5, py = 0.5;
    double t = ((px - 0) * (n - 0) + (py - 0) * (0 - 0)) / ((n - 0) * (n - 0) + (0 - 0) * (0 - 0));
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    return (float)(0 + t * (1 - 0));
}

static float
wide_want(int64_t x, int64_t y)
{
    const int64_t W = 3000000000;
    if (x >= W - 10 && y >= 2 && y < 5)
        return 1.0f;
    if (x >= W - 1000) { /* the 1000 x 10 child: a circle of radius 3 at (500.5, 5) */
        double dx = (double)(x - (W - 1000)) + 0.5 - 500.5, dy = (double)y + 0.5 - 5;
        return dx * dx + dy * dy <= 3.0 * 3.0 ? 1.0f : 0.0f;
    }
    return gradient_x(tsr_floor_mod(x - 3, 7), 7);
}

Test(limits, a_root_3e9_wide_renders_rects_near_2_31_and_at_the_far_end)
{
    tsr_design *d = load_limits("wide_3e9.yaml");
    cr_assert_eq(d->root->w, 3000000000);
    const tsr_rect rects[] = {
        {2147483640, 0, 20, 10},         /* across 2^31 */
        {2999990000, 0, 13, 10},         /* far inside the repeat's region */
        {2999998990, 0, 30, 10},         /* the end of the repeat's region */
        {2999999480, 0, 40, 10},         /* the circle */
        {2999999975, 0, 25, 10},         /* the last columns */
    };
    for (size_t i = 0; i < sizeof rects / sizeof rects[0]; i++)
        assert_rect(d, rects[i], wide_want, "wide_3e9");
    tsr_design_free(d);
}

Test(limits, a_root_3e9_wide_needs_a_plan_for_its_full_width_bands)
{
    /* raster order: three bands of the full width, 9e9 bytes; the plan names the minimum */
    tsr_design *d = load_limits("wide_3e9.yaml");
    tsr_error err = {TSR_OK, ""};
    /* 2 GiB: the default grows with the host's memory (a quarter of what is available) */
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .memory = (int64_t)2 << 30};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e == NULL);
    cr_assert_eq(err.status, TSR_EPLAN, "%s", err.msg);
    cr_assert(strstr(err.msg, "needs at least") != NULL, "%s", err.msg);
    o.memory = (int64_t)10e9;
    e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_eq(tsr_engine_stream_bytes(e), 30000000000ull);
    tsr_engine_free(e);
    tsr_design_free(d);
}

static float
tall_want(int64_t x, int64_t y)
{
    const int64_t H = 3000000000;
    if (x >= 8 && y >= H - 2)
        return 1.0f;
    /* motif 3 x 11 repeated from y = -5: its row m = (y + 5) mod 11, value (m + 0.5) / 11 */
    int64_t m = tsr_floor_mod(y + 5, 11);
    double px = (double)tsr_floor_mod(x, 3) + 0.5, py = (double)m + 0.5;
    double t = ((px - 0) * (0 - 0) + (py - 0) * (11 - 0)) / ((0 - 0) * (0 - 0) + (11 - 0) * (11 - 0));
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    return (float)(0 + t * (1 - 0));
}

Test(limits, a_root_3e9_tall_streams_its_last_rows_in_swath_order)
{
    tsr_design *d = load_limits("tall_3e9.yaml");
    const int64_t H = 3000000000, y0 = H - 7;
    assert_rect(d, tsr_rect_make(0, 2147483645, 10, 7), tall_want, "tall_3e9");
    assert_rect(d, tsr_rect_make(0, y0, 10, 7), tall_want, "tall_3e9");
    /* the crop [H - 7, H): swaths 4 px wide from the bottom-left, serpentine, 16-bit LE */
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 2, .rows = {y0, H}};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    char path[] = "/tmp/tsr-limits-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    tsr_sink *s = tsr_sink_open(path, &err);
    cr_assert(s != NULL, "%s", err.msg);
    cr_assert(tsr_engine_stream(e, s, 0, NULL, NULL, &err) == TSR_OK, "%s", err.msg);
    cr_assert(tsr_sink_close(s, &err) == TSR_OK, "%s", err.msg);
    size_t n;
    uint8_t *b = th_read_file(path, &n);
    unlink(path);
    cr_assert_eq(n, 10 * 7 * 2);
    size_t at = 0;
    for (int64_t k = 0; k < 3; k++) { /* swaths [0,4) [4,8) [8,10) */
        int64_t x0 = 4 * k, x1 = x0 + 4 < 10 ? x0 + 4 : 10;
        bool up = (k & 1) == 0; /* bottom start: swath 0 runs upwards, swath 1 down, ... */
        for (int64_t i = 0; i < 7; i++) {
            int64_t y = up ? H - 1 - i : y0 + i;
            for (int64_t x = x0; x < x1; x++, at += 2) {
                uint32_t want = tsr_convert_one(&d->out, tall_want(x, y));
                uint32_t got = (uint32_t)b[at] | (uint32_t)b[at + 1] << 8;
                cr_assert_eq(got, want, "sample of (%lld, %lld): %u, want %u", (long long)x,
                             (long long)y, got, want);
            }
        }
    }
    free(b);
    tsr_engine_free(e);
    tsr_design_free(d);
}

/* ---- the 2^40 bounds ------------------------------------------------------------------------ */

static float
offsets_want(int64_t x, int64_t y)
{
    float v = 0.5f;
    if (x < 2)
        v = v + 0.125f; /* repeat copy k = -1 at x = 0, blend add */
    if (x >= P40 - 3 && y >= 1 && y < 3)
        v = gradient_x(x - (P40 - 3), 4); /* pattern at 2^40 - 3, over */
    /* repeat-vector over the whole grid: each pixel of the region is covered by the 4 copies
     * of a 2 x 2 child of 0.25, added: 1.0; blend max */
    if (x >= 1099511627700 && x < 1099511627708 && v < 1.0f)
        v = 1.0f;
    return v;
}

Test(limits, offsets_and_sizes_at_2_40_render_at_the_far_edge)
{
    tsr_design *d = load_limits("offsets_2_40.yaml");
    cr_assert_eq(d->root->w, P40);
    assert_rect(d, tsr_rect_make(0, 0, 6, 4), offsets_want, "offsets_2_40 left");
    assert_rect(d, tsr_rect_make(P40 - 9, 0, 9, 4), offsets_want, "offsets_2_40 right");
    assert_rect(d, tsr_rect_make(1099511627696, 0, 16, 4), offsets_want, "offsets_2_40 grid");
    tsr_design_free(d);
}

Test(limits, beyond_2_40_is_a_design_error_naming_the_key)
{
    assert_load_error("offset_over.yaml", TSR_EINVAL,
                      "5:33: root.children[0].offset[0]: |1099511627777| must be <= 2^40");
    assert_load_error("size_over.yaml", TSR_EINVAL, "3:10: root.size[0]: |1099511627777| must be <= 2^40");
    assert_load_error("area_over.yaml", TSR_EINVAL, "root.size: w*h*4 bytes must be <= 2^62");
}

/* ---- lattices of long, nearly parallel vectors ------------------------------------------------ */

/* The child of the lattice tests: 5 x 3, values i/8 with some zeros (average skips those). */
static float
child_px(int64_t cx, int64_t cy)
{
    int64_t k = cy * 5 + cx;
    return k % 4 == 1 ? 0.0f : (float)(k + 1) / 8.0f;
}

/* docs/format.md §5 by brute force: every origin whose copy covers (x, y) is tested for lattice
 * membership, the copies ordered by (j, i), combined as the overlap mode says. */
static float
lattice_ref(const int64_t u[2], const int64_t v[2], const int64_t off[2], int mode, int64_t x,
            int64_t y, bool *covered)
{
    __int128 det = (__int128)u[0] * v[1] - (__int128)u[1] * v[0];
    struct { __int128 j, i; float s; } hits[15];
    int n = 0;
    for (int64_t cy = 0; cy < 3; cy++)
        for (int64_t cx = 0; cx < 5; cx++) {
            __int128 px = (__int128)x - cx - off[0], py = (__int128)y - cy - off[1];
            __int128 ni = px * v[1] - py * v[0], nj = py * u[0] - px * u[1];
            if (ni % det != 0 || nj % det != 0)
                continue;
            hits[n].i = ni / det;
            hits[n].j = nj / det;
            hits[n].s = child_px(cx, cy);
            n++;
        }
    for (int a = 1; a < n; a++) /* insertion sort by (j, i) */
        for (int b = a; b > 0 && (hits[b].j < hits[b - 1].j ||
                                  (hits[b].j == hits[b - 1].j && hits[b].i < hits[b - 1].i));
             b--) {
            __typeof__(hits[0]) t = hits[b];
            hits[b] = hits[b - 1];
            hits[b - 1] = t;
        }
    *covered = n > 0;
    float l = 0.0f;
    int cnt = 0;
    for (int k = 0; k < n; k++) {
        float s = hits[k].s;
        switch (mode) {
        case 0: /* average */
            if (s != 0.0f) {
                l = cnt ? l + s : s;
                cnt++;
            }
            break;
        case 1: l = k && !(s > l) ? l : s; break;  /* max */
        case 2: l = k ? l + s : s; break;          /* add */
        default: l = k ? l : s; break;             /* first */
        }
    }
    if (mode == 0)
        l = cnt ? l / (float)cnt : 0.0f;
    return l;
}

Test(limits, skewed_lattices_render_every_copy_in_copy_order)
{
    static const struct {
        int64_t u[2], v[2], off[2];
    } lat[] = {
        {{1099511627776, 1}, {1099511627775, 1}, {0, 0}},           /* det 1: the whole grid */
        {{1099511627776, 3}, {-733007751851, -2}, {-5, 7}},         /* det 1, negative v */
        {{7, 1}, {13, 2}, {2, 0}},                                  /* det 1, skew 120 */
        {{1000, 999}, {999, 1000}, {0, -3}},                        /* det 1999 */
        {{3, 0}, {1, 2}, {1, 1}},                                   /* a plain lattice */
        {{-4, 1}, {1099511627776, -274877906943}, {0, 0}},          /* det -4, long v */
    };
    static const char *const modes[] = {"average", "max", "add", "first"};
    const int64_t xs[] = {0, 1099511627000};
    for (size_t l = 0; l < sizeof lat / sizeof lat[0]; l++) {
        for (int m = 0; m < 4; m++) {
            char yaml[8192];
            snprintf(yaml, sizeof yaml,
                     "tessera: 1\n"
                     "root:\n"
                     "  size: [1099511627776, 64]\n"
                     "  fill: -1\n"
                     "  children:\n"
                     "    - trait: repeat-vector\n"
                     "      u: [%lld, %lld]\n"
                     "      v: [%lld, %lld]\n"
                     "      offset: [%lld, %lld]\n"
                     "      overlap: %s\n"
                     "      node:\n"
                     "        size: [5, 3]\n"
                     "        children:\n%s",
                     (long long)lat[l].u[0], (long long)lat[l].u[1], (long long)lat[l].v[0],
                     (long long)lat[l].v[1], (long long)lat[l].off[0], (long long)lat[l].off[1],
                     modes[m], "");
            /* the child's pixels: one 1 x 1 pattern per pixel */
            size_t len = strlen(yaml);
            for (int64_t cy = 0; cy < 3; cy++)
                for (int64_t cx = 0; cx < 5; cx++)
                    len += (size_t)snprintf(yaml + len, sizeof yaml - len,
                                            "          - {trait: pattern, offset: [%lld, %lld], "
                                            "node: {size: [1, 1], fill: %.9g}}\n",
                                            (long long)cx, (long long)cy,
                                            (double)child_px(cx, cy));
            cr_assert(len < sizeof yaml - 1);
            tsr_design *d = th_design(yaml);
            for (size_t k = 0; k < 2; k++) {
                tsr_rect r = tsr_rect_make(xs[k], 20, 23, 17);
                for (int64_t tile = 0; tile <= 7; tile += 7) {
                    float *px = render(d, r, tile, 1);
                    for (int64_t y = 0; y < r.h; y++)
                        for (int64_t x = 0; x < r.w; x++) {
                            bool cov;
                            float want = lattice_ref(lat[l].u, lat[l].v, lat[l].off, m, r.x + x,
                                                     r.y + y, &cov);
                            if (!cov)
                                want = -1.0f;
                            float got = px[y * r.w + x];
                            cr_assert(memcmp(&got, &want, sizeof got) == 0,
                                      "lattice %zu, %s, tile %lld: (%lld, %lld) is %.9g, want %.9g",
                                      l, modes[m], (long long)tile, (long long)(r.x + x),
                                      (long long)(r.y + y), (double)got, (double)want);
                        }
                    free(px);
                }
            }
            tsr_design_free(d);
        }
    }
}

/* Whether a lattice's copies of a w x h child are disjoint (repeat.c decides it at load without
 * walking copies: Minkowski's bound, then one interval per row of the reduced basis), against
 * every lattice vector with coefficients up to 400 (enough for |u|, |v| <= 12 and w, h <= 9:
 * a vector within the child's box has |i| <= (9 * 12 + 9 * 12) / |det|). */
static bool
disjoint_ref(const int64_t u[2], const int64_t v[2], int64_t w, int64_t h)
{
    for (int64_t j = -400; j <= 400; j++)
        for (int64_t i = -400; i <= 400; i++) {
            int64_t px = i * u[0] + j * v[0], py = i * u[1] + j * v[1];
            if ((i || j) && px > -w && px < w && py > -h && py < h)
                return false;
        }
    return true;
}

static bool
loaded_disjoint(const int64_t u[2], const int64_t v[2], int64_t w, int64_t h)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "tessera: 1\nroot:\n  size: [16, 16]\n  children:\n    - trait: repeat-vector\n"
             "      u: [%lld, %lld]\n      v: [%lld, %lld]\n      node: {size: [%lld, %lld]}\n",
             (long long)u[0], (long long)u[1], (long long)v[0], (long long)v[1], (long long)w,
             (long long)h);
    tsr_design *d = th_design(yaml);
    const tsr_repeat_params *r = d->root->edges[0].params;
    bool got = r->disjoint;
    tsr_design_free(d);
    return got;
}

Test(limits, lattice_disjointness_matches_every_lattice_vector)
{
    unsigned seed = 12345;
    int disjoint = 0;
    for (int k = 0; k < 600; k++) {
        int64_t u[2], v[2], w, h;
        do {
            u[0] = (int64_t)(rand_r(&seed) % 25) - 12, u[1] = (int64_t)(rand_r(&seed) % 25) - 12;
            v[0] = (int64_t)(rand_r(&seed) % 25) - 12, v[1] = (int64_t)(rand_r(&seed) % 25) - 12;
        } while (u[0] * v[1] - u[1] * v[0] == 0);
        w = 1 + rand_r(&seed) % 9;
        h = 1 + rand_r(&seed) % 9;
        bool want = disjoint_ref(u, v, w, h);
        disjoint += want;
        cr_assert_eq(loaded_disjoint(u, v, w, h), want,
                     "u [%lld, %lld], v [%lld, %lld], child %lld x %lld: disjoint should be %d",
                     (long long)u[0], (long long)u[1], (long long)v[0], (long long)v[1],
                     (long long)w, (long long)h, want);
    }
    cr_assert(disjoint > 20 && disjoint < 580, "%d of 600 disjoint: the sample tests too little",
              disjoint);
}

/* The lattices that once made loading or planning walk every copy are decided at once
 * (the first walked ~2^41 empty candidates at load, the second 2^31 copies in the plan;
 * tests/cli/bounds.sh runs them through `tessera check` with a hang guard). */
Test(limits, lattices_with_huge_copy_counts_load_and_plan_at_once)
{
    const int64_t u1[2] = {P40, -P40}, v1[2] = {-(P40 - 1), P40};
    cr_assert(!loaded_disjoint(u1, v1, P40, 5));
    const int64_t u2[2] = {1, 0}, v2[2] = {0, 1};
    cr_assert(!loaded_disjoint(u2, v2, 4194304, 1));
    const int64_t u3[2] = {P40, 0}, v3[2] = {0, 1};
    cr_assert(loaded_disjoint(u3, v3, P40, 1)); /* 2^40 x 1 strips end to end */
    const int64_t u4[2] = {P40, 1}, v4[2] = {P40 - 1, 1};
    cr_assert(loaded_disjoint(u4, v4, 1, 1));  /* the whole grid: 1 x 1 copies tile it */
    cr_assert(!loaded_disjoint(u4, v4, 2, 1)); /* ... [1, 0] is a lattice vector */
    tsr_design *d = th_design("tessera: 1\nroot:\n  size: [4096, 512]\n  children:\n"
                              "    - {trait: repeat-vector, u: [1, 0], v: [0, 1], node: "
                              "{size: [4194304, 1], fill: 1}}\n");
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .memory = BIG_MEMORY};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    tsr_engine_free(e);
    tsr_design_free(d);
}

/* ---- the memory plan comes first ------------------------------------------------------------- */

/* Loaded as tsr_engine_load does (headers only, tables deferred), a design whose plan does not
 * fit is refused with nothing decoded or built; given room, the engine decodes and builds, and
 * renders what a design loaded the old way (decoded at once) renders. */
Test(limits, images_and_tables_are_made_only_after_the_plan_fits)
{
    const char *yaml = "tessera: 1\n"
                       "nodes:\n"
                       "  unused: {source: {image: tests/oracle/designs/img/g8.png}}\n"
                       "  g: {source: {image: tests/oracle/designs/img/g8.png}}\n"
                       "root:\n"
                       "  size: [64, 48]\n"
                       "  children:\n"
                       "    - {trait: pattern, ref: g}\n"
                       "    - {trait: distance, ref: g, dmax: 2000, blend: add}\n";
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = th_design_deferred(yaml, "lazy.yaml");
    cr_assert_eq(d->nnodes, 2, "the unreferenced node is dropped");
    const tsr_source *src = d->nodes[0]->source;
    const tsr_edge *dist = &d->root->edges[1];
    cr_assert(src && src->iw > 0 && src->ih > 0 && src->img == NULL, "decoded at load");
    cr_assert_null(dist->state, "the distance table was built at load");
    /* 2000^2 table entries: 16 MB, more than this budget holds */
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .memory = 14 << 20};
    cr_assert_null(tsr_engine_new(d, &o, &err));
    cr_assert_eq(err.status, TSR_EPLAN, "%s", err.msg);
    cr_assert(src->img == NULL && dist->state == NULL, "made before the plan refused");
    o.memory = 64 << 20;
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert(src->img != NULL && dist->state != NULL, "not made once the plan fits");
    tsr_rect r = tsr_rect_make(0, 0, d->root->w, d->root->h);
    float *got = malloc((size_t)(r.w * r.h) * sizeof *got);
    cr_assert_eq(tsr_engine_render_rect(e, r, got, &err), TSR_OK, "%s", err.msg);
    tsr_design *eager = th_design(yaml); /* decoded and built by the loader */
    float *want = th_rect(eager, r, 0, 1);
    cr_assert(memcmp(got, want, (size_t)(r.w * r.h) * sizeof *got) == 0);
    free(want);
    free(got);
    tsr_design_free(eager);
    tsr_engine_free(e);
    tsr_design_free(d);
}

/* An image that changed between its header read and its decoding is an error naming it. */
Test(limits, an_image_that_changed_after_loading_is_an_error)
{
    th_dir_make();
    char *src = th_src("tests/oracle/designs/img/g8.png");
    size_t n;
    uint8_t *png = th_read_file(src, &n);
    FILE *f = fopen(th_in_dir("a.png"), "wb");
    cr_assert(f && fwrite(png, 1, n, f) == n && fclose(f) == 0);
    const char *yaml = "tessera: 1\nroot:\n  source: {image: a.png}\n";
    tsr_design_opts lazy = {.read_image = tsr_png_read_gray, .read_size = tsr_png_read_info,
                            .defer = true};
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), "c.yaml", th_dir(), &lazy, &err);
    cr_assert(d != NULL, "%s", err.msg);
    cr_assert(d->root->w == 41 && d->root->h == 27);
    /* another image under the same name: the oracle's 16-bit one, 33 x 21 */
    char *other = th_src("tests/oracle/designs/img/g16.png");
    uint8_t *png2 = th_read_file(other, &n);
    f = fopen(th_in_dir("a.png"), "wb");
    cr_assert(f && fwrite(png2, 1, n, f) == n && fclose(f) == 0);
    tsr_status st = tsr_design_build(d, tsr_png_read_gray, &err);
    cr_assert_eq(st, TSR_EINVAL, "%s", err.msg);
    cr_assert(strstr(err.msg, "c.yaml:3:19: root.source.image: ") &&
                  strstr(err.msg, "is 33x21 now, 41x27 when the design was loaded"),
              "%s", err.msg);
    cr_assert_null(d->root->source->img);
    tsr_design_free(d);
    free(png);
    free(png2);
    free(src);
    free(other);
    th_dir_remove();
}

/* ---- deep chains and wide nodes ----------------------------------------------------------------- */

/* A chain of `depth` nodes n0 <- n1 <- ... by ref: (or inline nesting), each adding 1/1024 to
 * the one below over its 3 x 2 px; root = the last. */
static char *
chain_yaml(int depth, bool inline_nodes)
{
    size_t cap = (size_t)depth * 200 + 4096, len = 0;
    char *y = malloc(cap);
    len += (size_t)snprintf(y + len, cap - len, "tessera: 1\n");
    if (!inline_nodes) {
        len += (size_t)snprintf(y + len, cap - len,
                                "nodes:\n  n0: {size: [3, 2], fill: 0.5}\n");
        for (int i = 1; i < depth; i++)
            len += (size_t)snprintf(y + len, cap - len,
                                    "  n%d: {size: [3, 2], fill: 0.0009765625, children: "
                                    "[{trait: pattern, ref: n%d, blend: add}]}\n",
                                    i, i - 1);
        len += (size_t)snprintf(y + len, cap - len,
                                "root: {size: [3, 2], children: [{trait: pattern, ref: n%d}]}\n",
                                depth - 1);
        return y;
    }
    /* flow style, nested: root: {size, children: [{trait, node: {size, children: [...]}}]} */
    len += (size_t)snprintf(y + len, cap - len, "root: ");
    for (int i = depth - 1; i > 0; i--)
        len += (size_t)snprintf(y + len, cap - len,
                                "{size: [3, 2], fill: 0.0009765625, children: [{trait: pattern, "
                                "blend: add, node: ");
    len += (size_t)snprintf(y + len, cap - len, "{size: [3, 2], fill: 0.5}");
    for (int i = depth - 1; i > 0; i--)
        len += (size_t)snprintf(y + len, cap - len, "}]}");
    len += (size_t)snprintf(y + len, cap - len, "\n");
    return y;
}

static void
assert_chain(int depth, bool inline_nodes)
{
    char *yaml = chain_yaml(depth, inline_nodes);
    tsr_design *d = th_design(yaml);
    cr_assert_eq(d->nnodes, (size_t)depth + !inline_nodes);
    /* 0.5 then depth - 1 additions of 2^-10, in float: exact while the sum stays < 1 */
    float want = 0.5f + (float)(depth - 1) * 0.0009765625f;
    for (int threads = 1; threads <= 2; threads++) {
        float *px = render(d, tsr_rect_make(0, 0, 3, 2), threads == 1 ? 0 : 1, threads);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(px[i], want, "depth %d (%s), %d threads: pixel %d is %.9g, want %.9g",
                         depth, inline_nodes ? "inline" : "ref", threads, i, (double)px[i],
                         (double)want);
        free(px);
    }
    tsr_design_free(d);
    free(yaml);
}

Test(limits, a_chain_of_1000_nodes_loads_and_renders_on_worker_threads)
{
    assert_chain(1000, false);
    assert_chain(1000, true);
}

/* Written leaves first, the chain never makes the loader recurse; it is refused all the same
 * (the engine recurses once per level: ~1.2 KiB of stack each, ~2.8 KiB under ASan). */
Test(limits, a_chain_deeper_than_the_limit_is_a_design_error_in_any_order)
{
    char *yaml = chain_yaml(TSR_DESIGN_MAX_DEPTH + 2, false);
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), "deep.yaml", NULL, NULL, &err);
    cr_assert(d == NULL);
    cr_assert_eq(err.status, TSR_EINVAL, "%s", err.msg);
    cr_assert(strstr(err.msg, "deep.yaml:") == err.msg &&
                  strstr(err.msg, ": nodes.n2000: nodes nested deeper than 2000"),
              "%s", err.msg);
    free(yaml);
    /* exactly at the limit: loads */
    yaml = chain_yaml(TSR_DESIGN_MAX_DEPTH - 1, false); /* + root = the limit */
    d = tsr_design_load_string(yaml, strlen(yaml), "deep.yaml", NULL, NULL, &err);
    cr_assert(d != NULL, "%s", err.msg);
    tsr_design_free(d);
    free(yaml);
}

/* ---- thread stacks (docs/reliability.md, "Deep chains and thread stacks") ------------------- */

typedef struct stack_run {
    tsr_engine *e;
    tsr_rect r;
    float *px;
    tsr_status st;
    tsr_error err;
} stack_run;

static void *
stack_run_main(void *arg)
{
    stack_run *s = arg;
    s->st = tsr_engine_render_rect(s->e, s->r, s->px, &s->err);
    return NULL;
}

/* Render r on a thread of our own whose stack is `stack` bytes, as the OpenMP master: the
 * recursion runs there (alone when the engine has one thread). */
static tsr_status
render_on_stack(tsr_engine *e, tsr_rect r, float *px, size_t stack, tsr_error *err)
{
    stack_run s = {e, r, px, TSR_OK, {TSR_OK, ""}};
    pthread_attr_t a;
    pthread_t t;
    cr_assert_eq(pthread_attr_init(&a), 0);
    cr_assert_eq(pthread_attr_setstacksize(&a, stack), 0);
    cr_assert_eq(pthread_create(&t, &a, stack_run_main, &s), 0, "a %zu-byte thread", stack);
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    *err = s.err;
    return s.st;
}

static size_t
default_stack(void)
{
    pthread_attr_t a;
    size_t size = 0;
    cr_assert_eq(pthread_getattr_default_np(&a), 0);
    pthread_attr_getstacksize(&a, &size);
    pthread_attr_destroy(&a);
    return size;
}

/* What glibc gives new threads under `ulimit -s unlimited`. */
static void
set_default_stack(size_t size)
{
    pthread_attr_t a;
    cr_assert_eq(pthread_getattr_default_np(&a), 0);
    cr_assert_eq(pthread_attr_setstacksize(&a, size), 0);
    cr_assert_eq(pthread_setattr_default_np(&a), 0);
    pthread_attr_destroy(&a);
}

/* A stack too small for the chain (160 KiB: less than the guard's margin once glibc's TLS is
 * in; 512 KiB: a few hundred levels) is an out-of-memory error naming the depth and the
 * remedy, not SIGSEGV; the computations it abandoned leave the cache consistent, so the same
 * engine then renders the chain on a thread with room. */
Test(limits, a_chain_too_deep_for_its_thread_stack_fails_cleanly_and_the_engine_goes_on)
{
    char *yaml = chain_yaml(1000, false);
    tsr_design *d = th_design(yaml);
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .memory = BIG_MEMORY};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    tsr_rect r = tsr_rect_make(0, 0, 3, 2);
    float px[6];
    const size_t small[] = {160 << 10, 512 << 10};
    for (size_t i = 0; i < 2; i++) {
        tsr_status st = render_on_stack(e, r, px, small[i], &err);
        cr_assert_eq(st, TSR_ENOMEM, "%zu KiB: %s (%s)", small[i] >> 10, tsr_status_name(st),
                     err.msg);
        cr_assert(strstr(err.msg, "out of thread stack") &&
                      strstr(err.msg, "in a chain of nested nodes 1001 deep") &&
                      strstr(err.msg, "ulimit -s "),
                  "%s", err.msg);
    }
    cr_assert_eq(render_on_stack(e, r, px, (size_t)64 << 20, &err), TSR_OK, "%s", err.msg);
    float want = 0.5f + 999.0f * 0.0009765625f;
    for (int i = 0; i < 6; i++)
        cr_assert_eq(px[i], want, "pixel %d is %.9g, want %.9g", i, (double)px[i], (double)want);
    tsr_engine_free(e);
    tsr_design_free(d);
    free(yaml);
}

/* An engine sizes its workers' stacks from its design's depth (the floor for a shallow design,
 * a few MiB at the loader's limit) and gives them through its own thread attributes: the
 * process's default thread stack, which the host owns, is left as it was, with a render in
 * between too. Only tsr_engine_thread_stacks, called by the host, raises it (never lowers). */
Test(limits, an_engine_sizes_its_workers_stacks_and_leaves_the_default_alone)
{
    set_default_stack((size_t)3 << 20);
    char *shallow = chain_yaml(3, false), *deep = chain_yaml(TSR_DESIGN_MAX_DEPTH - 1, false);
    tsr_design *d3 = th_design(shallow), *d2000 = th_design(deep);
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 2, .memory = BIG_MEMORY};
    tsr_engine *e = tsr_engine_new(d3, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    size_t small = tsr_engine_thread_stack(e);
    cr_assert(small >= (size_t)1 << 20 && small < (size_t)8 << 20, "%zu", small);
    cr_assert_eq(default_stack(), (size_t)3 << 20, "the engine changed the default");
    tsr_engine_free(e);
    e = tsr_engine_new(d2000, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    size_t big = tsr_engine_thread_stack(e);
    /* 2000 levels at the measured 1.14 KiB (Release) or 2.78 KiB (ASan) and the guard's margin */
    cr_assert(big > small && big >= 2000 * 1170 + (128 << 10) && big <= (size_t)16 << 20,
              "%zu", big);
    size_t n;
    free(th_stream_engine(e, 0, &n)); /* its workers start and render the chain */
    cr_assert(n > 0);
    cr_assert_eq(default_stack(), (size_t)3 << 20, "a render changed the default");
    tsr_engine_free(e);
    cr_assert_eq(tsr_engine_thread_stacks((size_t)64 << 20, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(default_stack(), (size_t)64 << 20);
    cr_assert_eq(tsr_engine_thread_stacks((size_t)1 << 20, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(default_stack(), (size_t)64 << 20, "lowered to %zu", default_stack());
    tsr_design_free(d3);
    tsr_design_free(d2000);
    free(shallow);
    free(deep);
}

/* A chain at the loader's limit, 3000 px wide in 256 px root rects so both threads compute
 * parts of it, with glibc's default at the 2 MiB it is under `ulimit -s unlimited`: libgomp's
 * workers, started after tsr_engine_new, get its larger stacks. The master runs on a thread
 * of our own with room, so only the workers' stacks are in question. Which thread computes
 * the chain is a race: three engines. */
Test(limits, a_chain_at_the_depth_limit_renders_on_workers_started_under_a_2_mib_default)
{
    set_default_stack((size_t)2 << 20);
    const int nodes = TSR_DESIGN_MAX_DEPTH - 1; /* + the root */
    size_t cap = (size_t)nodes * 128 + 256, len = 0;
    char *yaml = malloc(cap);
    len += (size_t)snprintf(yaml + len, cap - len,
                            "tessera: 1\nnodes:\n  n0: {size: [3000, 2], fill: 0}\n");
    for (int i = 1; i < nodes; i++)
        len += (size_t)snprintf(yaml + len, cap - len,
                                "  n%d: {size: [3000, 2], fill: 0.00048828125, children: "
                                "[{trait: pattern, ref: n%d, blend: add}]}\n",
                                i, i - 1);
    snprintf(yaml + len, cap - len,
             "root: {size: [3000, 2], tile: 256, children: [{trait: repeat, ref: n%d}]}\n",
             nodes - 1);
    tsr_design *d = th_design(yaml);
    tsr_rect r = tsr_rect_make(0, 0, 3000, 2);
    float *px = malloc(6000 * sizeof *px);
    float want = (float)(nodes - 1) * 0.00048828125f; /* exact: 2^-11 steps below 1 */
    for (int run = 0; run < 3; run++) {
        tsr_error err = {TSR_OK, ""};
        tsr_engine_opts o = {.backend = "cpu", .threads = 2, .memory = BIG_MEMORY};
        tsr_engine *e = tsr_engine_new(d, &o, &err);
        cr_assert(e != NULL, "%s", err.msg);
        cr_assert_eq(render_on_stack(e, r, px, (size_t)64 << 20, &err), TSR_OK, "run %d: %s",
                     run, err.msg);
        for (int i = 0; i < 6000; i++)
            cr_assert_eq(px[i], want, "run %d: pixel %d is %.9g, want %.9g", run, i,
                         (double)px[i], (double)want);
        tsr_engine_free(e);
    }
    free(px);
    tsr_design_free(d);
    free(yaml);
}

Test(limits, a_node_with_10000_children_loads_and_renders)
{
    /* child k: a 1 x 1 node of value k / 16384 at (k mod 100, k / 100) of a 100 x 100 root */
    size_t cap = 10000 * 120 + 256, len = 0;
    char *y = malloc(cap);
    len += (size_t)snprintf(y + len, cap - len, "tessera: 1\nroot:\n  size: [100, 100]\n  children:\n");
    for (int k = 0; k < 10000; k++)
        len += (size_t)snprintf(y + len, cap - len,
                                "    - {trait: pattern, offset: [%d, %d], node: {size: [1, 1], "
                                "fill: %.17g}}\n",
                                k % 100, k / 100, (double)k / 16384.0);
    tsr_design *d = th_design(y);
    cr_assert_eq(d->root->nedges, 10000);
    const tsr_rect rs[] = {{0, 0, 100, 100}, {37, 41, 9, 5}};
    for (size_t i = 0; i < 2; i++) {
        float *px = render(d, rs[i], i ? 7 : 0, 2);
        for (int64_t yy = 0; yy < rs[i].h; yy++)
            for (int64_t x = 0; x < rs[i].w; x++) {
                int64_t k = (rs[i].y + yy) * 100 + rs[i].x + x;
                cr_assert_eq(px[yy * rs[i].w + x], (float)((double)k / 16384.0), "pixel %lld",
                             (long long)k);
            }
        free(px);
    }
    tsr_design_free(d);
    free(y);
}

/* ---- YAML bombs ------------------------------------------------------------------------------ */

Test(limits, yaml_bombs_are_refused_before_anything_expands)
{
    assert_load_error("yaml_bomb.yaml", TSR_EINVAL, "4:6: lol: anchor '&a' not allowed");

    /* 100000 nested flow sequences: refused at the nesting limit, no recursion */
    size_t n = 100000;
    char *y = malloc(2 * n + 64);
    size_t len = (size_t)sprintf(y, "tessera: 1\nroot: ");
    memset(y + len, '[', n);
    memset(y + len + n, ']', n);
    len += 2 * n;
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = tsr_design_load_string(y, len, "nest.yaml", NULL, NULL, &err);
    cr_assert(d == NULL);
    cr_assert_eq(err.status, TSR_EINVAL, "%s", err.msg);
    cr_assert(strstr(err.msg, "nest.yaml:2:") == err.msg, "%s", err.msg);
    free(y);
}

Test(limits, a_ref_bomb_is_one_shared_node_per_name)
{
    /* 4^20 paths from root to n0, 22 nodes; each tile computed once */
    tsr_design *d = load_limits("ref_bomb.yaml");
    cr_assert_eq(d->nnodes, 22);
    float *px = render(d, tsr_rect_make(0, 0, 8, 8), 0, 2);
    /* n0 is 1 inside the circle, 0 elsewhere; each level adds 4 copies: n20 = 4^20 * n0 */
    for (int64_t y = 0; y < 8; y++)
        for (int64_t x = 0; x < 8; x++) {
            double dx = (double)x + 0.5 - 4, dy = (double)y + 0.5 - 4;
            float want = dx * dx + dy * dy <= 9 ? 1099511627776.0f : 0.0f;
            cr_assert_eq(px[y * 8 + x], want, "(%lld, %lld): %.9g", (long long)x, (long long)y,
                         (double)px[y * 8 + x]);
        }
    free(px);
    tsr_design_free(d);
}

/* ---- PNGs that are cut short or lie ------------------------------------------------------------- */

static uint32_t
crc32_png(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

static void
put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A PNG from the given chunk list: each chunk "TYPE" + data, CRC computed. */
static size_t
png_chunk(uint8_t *out, const char *type, const uint8_t *data, uint32_t n)
{
    put32(out, n);
    memcpy(out + 4, type, 4);
    if (n)
        memcpy(out + 8, data, n);
    put32(out + 8 + n, crc32_png(out + 4, n + 4));
    return 12 + n;
}

/* Write bytes to a temporary PNG and a design naming it; load; return the design or NULL with
 * err filled. */
static tsr_design *
load_with_png(const uint8_t *png, size_t n, const char *size_line, tsr_error *err, char *pngpath)
{
    strcpy(pngpath, "/tmp/tsr-limits-png-XXXXXX");
    int fd = mkstemp(pngpath);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, png, n), (ssize_t)n);
    close(fd);
    char yaml[512];
    snprintf(yaml, sizeof yaml, "tessera: 1\nroot:\n%s  source: {image: %s}\n", size_line, pngpath);
    tsr_design_opts o = {.read_image = tsr_png_read_gray};
    tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), "img.yaml", NULL, &o, err);
    unlink(pngpath);
    return d;
}

Test(limits, a_png_cut_short_anywhere_is_a_clear_error)
{
    /* a valid 16 x 16 gray PNG, written by stream/, then cut at every length */
    uint8_t samples[256];
    for (int i = 0; i < 256; i++)
        samples[i] = (uint8_t)i;
    char path[] = "/tmp/tsr-limits-full-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    tsr_error err = {TSR_OK, ""};
    cr_assert(tsr_png_write(path, 16, 16, 8, samples, &err) == TSR_OK, "%s", err.msg);
    size_t n;
    uint8_t *png = th_read_file(path, &n);
    unlink(path);
    char pp[64];
    tsr_design *d = load_with_png(png, n, "", &err, pp);
    cr_assert(d != NULL, "the whole PNG: %s", err.msg);
    cr_assert_eq(d->root->w, 16);
    tsr_design_free(d);
    for (size_t cut = 0; cut < n; cut++) {
        err = (tsr_error){TSR_OK, ""};
        d = load_with_png(png, cut, "", &err, pp);
        cr_assert(d == NULL, "cut at %zu of %zu: loaded", cut, n);
        cr_assert_eq(err.status, TSR_EINVAL, "cut at %zu: %s (%s)", cut,
                     tsr_status_name(err.status), err.msg);
        cr_assert(strstr(err.msg, "img.yaml:3:") == err.msg && strstr(err.msg, pp),
                  "cut at %zu: %s", cut, err.msg);
        cr_assert(strstr(err.msg, "truncated") || strstr(err.msg, "not a PNG") ||
                      strstr(err.msg, "corrupt"),
                  "cut at %zu: %s", cut, err.msg);
    }
    free(png);
}

/* IHDR says w x h, 8-bit gray; one IDAT holding `rows` zero rows; IEND. */
static size_t
lying_png(uint8_t *out, uint32_t w, uint32_t h, uint32_t rows)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t n = 0;
    memcpy(out, sig, 8);
    n += 8;
    uint8_t ihdr[13] = {0};
    put32(ihdr, w);
    put32(ihdr + 4, h);
    ihdr[8] = 8; /* bit depth */
    ihdr[9] = 0; /* gray */
    n += png_chunk(out + n, "IHDR", ihdr, 13);
    /* a stored (uncompressed) zlib stream of rows * (1 + w) zero bytes, w small enough */
    uint32_t raw = rows * (1 + w);
    uint8_t z[4096];
    size_t zn = 0;
    z[zn++] = 0x78, z[zn++] = 0x01;
    z[zn++] = 1; /* final stored block */
    z[zn++] = (uint8_t)raw, z[zn++] = (uint8_t)(raw >> 8);
    z[zn++] = (uint8_t)~raw, z[zn++] = (uint8_t)(~raw >> 8);
    memset(z + zn, 0, raw);
    zn += raw;
    uint32_t a = 1, b = 0; /* adler32 of zeros */
    for (uint32_t i = 0; i < raw; i++)
        b = (b + a) % 65521;
    put32(z + zn, b << 16 | a);
    zn += 4;
    n += png_chunk(out + n, "IDAT", z, (uint32_t)zn);
    n += png_chunk(out + n, "IEND", NULL, 0);
    return n;
}

Test(limits, a_png_that_lies_about_its_size_is_a_clear_error)
{
    static uint8_t png[8192];
    char pp[64];
    tsr_error err;
    /* honest: 8 x 4 */
    size_t n = lying_png(png, 8, 4, 4);
    err = (tsr_error){TSR_OK, ""};
    tsr_design *d = load_with_png(png, n, "", &err, pp);
    cr_assert(d != NULL, "%s", err.msg);
    cr_assert(d->root->w == 8 && d->root->h == 4);
    tsr_design_free(d);
    /* claims more rows than it holds: 8 x 60000 (and 60000 x 60000, 14 GB as floats) */
    const uint32_t dims[][2] = {{8, 60000}, {60000, 60000}, {8, 5}};
    for (size_t i = 0; i < 3; i++) {
        n = lying_png(png, dims[i][0], dims[i][1], dims[i][0] > 1000 ? 0 : 4);
        err = (tsr_error){TSR_OK, ""};
        d = load_with_png(png, n, "", &err, pp);
        cr_assert(d == NULL, "%ux%u loaded", dims[i][0], dims[i][1]);
        cr_assert(err.status == TSR_EINVAL, "%ux%u: %s (%s)", dims[i][0], dims[i][1],
                  tsr_status_name(err.status), err.msg);
        cr_assert(strstr(err.msg, "img.yaml:3:") == err.msg && strstr(err.msg, pp), "%s",
                  err.msg);
    }
    /* claims 2^31 - 1 square: refused from the header, nothing allocated */
    n = lying_png(png, 0x7fffffffu, 0x7fffffffu, 0);
    err = (tsr_error){TSR_OK, ""};
    d = load_with_png(png, n, "", &err, pp);
    cr_assert(d == NULL);
    cr_assert(err.status == TSR_EINVAL, "%s (%s)", tsr_status_name(err.status), err.msg);
    cr_assert(strstr(err.msg, "too large"), "%s", err.msg);
    /* an honest image whose size the design contradicts */
    n = lying_png(png, 8, 4, 4);
    err = (tsr_error){TSR_OK, ""};
    d = load_with_png(png, n, "  size: [4, 8]\n", &err, pp);
    cr_assert(d == NULL);
    cr_assert(strstr(err.msg, "img.yaml:3:9: root.size: [4, 8] differs from the image size [8, 4]"),
              "%s", err.msg);
}

/* More copies over one pixel than a 16-bit count holds: a 300 x 300 child on the unit grid
 * covers every pixel 90000 times; the average of 90000 ones is 1 (a wrapped count said 3.68). */
Test(limits, an_average_of_more_than_65535_copies_counts_them_all)
{
    tsr_design *d = th_design("tessera: 1\n"
                              "root:\n"
                              "  size: [8, 8]\n"
                              "  children:\n"
                              "    - trait: repeat-vector\n"
                              "      u: [1, 0]\n"
                              "      v: [0, 1]\n"
                              "      node: {size: [300, 300], fill: 1}\n");
    float *px = render(d, tsr_rect_make(0, 0, 8, 8), 0, 1);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(px[i], 1.0f, "pixel %d is %.9g", i, (double)px[i]);
    free(px);
    tsr_design_free(d);
}

/* The memory plan counts a node's real tile, not a whole tile edge squared: a 1000-deep chain
 * of 3 x 2 px nodes needs kilobytes per level and thread, its stack included (it asked for
 * 6.5 GB, refusing the default). */
Test(limits, a_chain_of_1000_small_nodes_plans_small)
{
    char *yaml = chain_yaml(1000, false);
    tsr_design *d = th_design(yaml);
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 2};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    const tsr_plan *p = tsr_engine_plan(e);
    cr_assert_lt(p->per_thread, 8 << 20, "per thread %lld", (long long)p->per_thread);
    cr_assert_lt(p->minimum, 64 << 20, "minimum %lld", (long long)p->minimum);
    tsr_engine_free(e);
    tsr_design_free(d);
    free(yaml);
}
