/* rank (nodes/rank.c, gpu/rank.cu): against a naive whole-image reference written from
 * docs/format.md §5.6 (every window gathered and sorted), at every tile size and thread count,
 * with offsets and every edge mode; its errors; and the GPU against the CPU bit for bit (skipped
 * without a device). scipy.ndimage is the independent oracle in tests/cli/rank_scipy.sh. */
#include <criterion/criterion.h>
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "nodes/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The child every test filters: negative and positive values, flat areas, specks, a gradient,
 * a signed zero (the fill of the small node is -0, which the keys order below +0). */
static const char *const child_lines[] = {
    "size: [53, 41]",
    "fill: -0.25",
    "source: {gradient: linear, from: [0, 0], to: [53, 20], values: [-1, 2]}",
    "children:",
    "  - {trait: pattern, offset: [10, 8], node: {size: [20, 12], fill: 0.75}}",
    "  - {trait: pattern, offset: [14, 12], node: {size: [1, 1], fill: -3}}",
    "  - {trait: pattern, offset: [30, 25], node: {size: [9, 7], fill: -0.0}}",
    "  - {trait: pattern, offset: [40, 5], node: {size: [6, 6], source: {shape: circle, "
    "center: [3, 3], radius: 2.5, aa: 3}}}",
};

/* The child node's lines, each indented by `ind`. */
static void
put_child(FILE *f, int ind)
{
    for (size_t i = 0; i < sizeof child_lines / sizeof child_lines[0]; i++)
        fprintf(f, "%*s%s\n", ind, "", child_lines[i]);
}

static char *
rank_design(const char *op, int r, const char *fp, const char *edge, int ox, int oy)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    fputs("tessera: 1\nnodes:\n  c:\n", f);
    put_child(f, 4);
    fprintf(f,
            "root:\n  size: [70, 50]\n  fill: 9\n"
            "  children:\n    - {trait: rank, ref: c, op: %s, radius: %d, footprint: %s, edge: "
            "%s, offset: [%d, %d]}\n",
            op, r, fp, edge, ox, oy);
    fclose(f);
    return s;
}

static int
cmp_key(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t
key(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

static float
unkey(uint32_t k)
{
    uint32_t b = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The definition: root = fill, and over the child's rect at the offset the op of the window's
 * values (the footprint's pixels, the child extended by the edge mode), in the order of keys. */
static float *
naive(const float *c, int64_t cw, int64_t ch, int64_t W, int64_t H, float fill, int op, int r,
      bool disc, int edge, int64_t ox, int64_t oy)
{
    float *out = malloc((size_t)(W * H) * sizeof *out);
    uint32_t *win = malloc((size_t)((2 * r + 1) * (2 * r + 1)) * sizeof *win);
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++) {
            int64_t cx = x - ox, cy = y - oy;
            if (cx < 0 || cy < 0 || cx >= cw || cy >= ch) {
                out[y * W + x] = fill;
                continue;
            }
            size_t n = 0;
            for (int dy = -r; dy <= r; dy++)
                for (int dx = -r; dx <= r; dx++) {
                    if (disc && dx * dx + dy * dy > r * r)
                        continue;
                    int64_t sx = cx + dx, sy = cy + dy;
                    float v;
                    if (edge == TSR_EDGE_ZERO) {
                        v = (sx < 0 || sy < 0 || sx >= cw || sy >= ch) ? 0.0f : c[sy * cw + sx];
                    } else if (edge == TSR_EDGE_CLAMP) {
                        sx = sx < 0 ? 0 : sx >= cw ? cw - 1 : sx;
                        sy = sy < 0 ? 0 : sy >= ch ? ch - 1 : sy;
                        v = c[sy * cw + sx];
                    } else {
                        sx = ((sx % cw) + cw) % cw;
                        sy = ((sy % ch) + ch) % ch;
                        v = c[sy * cw + sx];
                    }
                    win[n++] = key(v);
                }
            qsort(win, n, sizeof *win, cmp_key);
            uint32_t k = op == TSR_RANK_MIN ? win[0] : op == TSR_RANK_MAX ? win[n - 1] : win[n / 2];
            out[y * W + x] = unkey(k);
        }
    free(win);
    return out;
}

static float *
child_pixels(void)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    fputs("tessera: 1\nroot:\n", f);
    put_child(f, 2);
    fclose(f);
    tsr_design *d = th_design(s);
    free(s);
    float *c = th_rect(d, tsr_rect_make(0, 0, 53, 41), 512, 1);
    tsr_design_free(d);
    return c;
}

static size_t
first_diff(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0)
            return i;
    return n;
}

Test(rank, equals_the_definition_for_every_op_footprint_edge_and_tile)
{
    const char *ops[] = {"min", "max", "median"}, *fps[] = {"square", "disc"};
    const char *edges[] = {"zero", "clamp", "wrap"};
    const int radii[] = {1, 2, 5};
    const int64_t tiles[] = {1, 7, 64, 512};
    float *c = child_pixels();
    tsr_rect all = tsr_rect_make(0, 0, 70, 50);
    int n = 0;
    for (int o = 0; o < 3; o++)
        for (int f = 0; f < 2; f++)
            for (int e = 0; e < 3; e++)
                for (int k = 0; k < 3; k++) {
                    int ox = 3 + k * 4, oy = k == 2 ? -6 : 2; /* one child past the top */
                    char *y = rank_design(ops[o], radii[k], fps[f], edges[e], ox, oy);
                    tsr_design *d = th_design(y);
                    float *want = naive(c, 53, 41, 70, 50, 9.0f, o, radii[k], f == 1, e, ox, oy);
                    /* every tile size once, each op at one and two threads */
                    int64_t t = tiles[n++ % 4];
                    float *got = th_rect(d, all, t, 1 + (k & 1));
                    size_t i = first_diff(want, got, 70 * 50);
                    cr_assert(i == 70 * 50,
                              "%s %s %s r=%d tile %lld: pixel (%zu, %zu) is %.9g, the definition "
                              "%.9g",
                              ops[o], fps[f], edges[e], radii[k], (long long)t, i % 70, i / 70,
                              got[i], want[i]);
                    free(got);
                    free(want);
                    tsr_design_free(d);
                    free(y);
                }
    free(c);
}

Test(rank, identical_bytes_at_every_tile_size_and_thread_count)
{
    char *y = rank_design("median", 4, "disc", "clamp", 5, 3);
    tsr_design *d = th_design(y);
    size_t n0;
    uint8_t *ref = th_stream(d, 512, 1, &n0);
    const int64_t tiles[] = {1, 7, 64, 512};
    for (size_t t = 0; t < 4; t++)
        for (int th = 1; th <= 2; th++) {
            size_t n;
            uint8_t *b = th_stream(d, tiles[t], th, &n);
            cr_assert_eq(n, n0);
            cr_assert_eq(memcmp(b, ref, n), 0, "tile %lld, %d threads", (long long)tiles[t], th);
            free(b);
        }
    free(ref);
    tsr_design_free(d);
    free(y);
}

Test(rank, radius_takes_physical_units)
{
    tsr_design *d = th_design("tessera: 1\npixel: 0.5um\nroot:\n  size: [8, 8]\n  children:\n"
                              "    - {trait: rank, op: max, radius: 1.5um, node: {size: [8, 8]}}\n");
    const tsr_rank_params *p = d->root->edges[0].params;
    cr_assert_eq(p->radius, 3);
    cr_assert_eq(p->footprint, TSR_RANK_SQUARE);
    cr_assert_eq(p->edge, TSR_EDGE_CLAMP);
    tsr_design_free(d);
}

static void
assert_refused(const char *edge_keys, const char *want)
{
    char y[512];
    snprintf(y, sizeof y,
             "tessera: 1\npixel: 1um\nroot:\n  size: [8, 8]\n  children:\n"
             "    - {trait: rank, %s, node: {size: [8, 8]}}\n",
             edge_keys);
    tsr_error err = {0};
    tsr_design *d = tsr_design_load_string(y, strlen(y), "r.yaml", NULL, NULL, &err);
    cr_assert_null(d, "loaded: %s", edge_keys);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

Test(rank, bad_parameters_are_refused_with_the_key)
{
    assert_refused("op: min", "r.yaml:6:7: root.children[0]: missing required key 'radius'");
    assert_refused("radius: 2", "root.children[0]: missing required key 'op'");
    assert_refused("op: min, radius: 0", "root.children[0].radius: must be in 1..64, got 0");
    assert_refused("op: min, radius: 65", "must be in 1..64, got 65");
    assert_refused("op: min, radius: 65um", "must be in 1..64 px, got 65um (65 px)");
    assert_refused("op: min, radius: 1.5um", "1.5um is 1.5 px at the pixel pitch 1um");
    assert_refused("op: mean, radius: 2", "root.children[0].op: unknown op 'mean'");
    assert_refused("op: medain, radius: 2", "(did you mean 'median'?)");
    assert_refused("op: min, radius: 2, footprint: circle",
                   "root.children[0].footprint: unknown footprint 'circle'");
    assert_refused("op: min, radius: 2, edge: reflect", "root.children[0].edge: unknown edge");
    assert_refused("op: min, radius: 2, sigma: 3", "a parameter of trait 'blur', not 'rank'");
}

Test(rank, the_gpu_gives_the_cpus_bits)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    const char *ops[] = {"min", "max", "median"}, *fps[] = {"square", "disc"};
    const char *edges[] = {"zero", "clamp", "wrap"};
    tsr_rect all = tsr_rect_make(0, 0, 70, 50);
    for (int o = 0; o < 3; o++)
        for (int f = 0; f < 2; f++)
            for (int e = 0; e < 3; e++) {
                char *y = rank_design(ops[o], 1 + 3 * f + e, fps[f], edges[e], 4, -2);
                tsr_design *d = th_design(y);
                float *ref = th_rect(d, all, 512, 2);
                const int64_t chunks[] = {0, 37 * 53};
                for (int k = 0; k < 2; k++) {
                    tsr_error err = {0};
                    tsr_engine_opts eo = {.backend = "gpu", .gpu_chunk = chunks[k],
                                          .gpu_memory = (int64_t)1 << 30};
                    tsr_engine *en = tsr_engine_new(d, &eo, &err);
                    cr_assert_not_null(en, "%s", err.msg);
                    cr_assert_str_eq(tsr_engine_backend(en), "gpu");
                    float *got = malloc(70 * 50 * sizeof *got);
                    memset(got, 0xff, 70 * 50 * sizeof *got);
                    cr_assert_eq(tsr_engine_render_rect(en, all, got, &err), TSR_OK, "%s",
                                 err.msg);
                    size_t i = first_diff(ref, got, 70 * 50);
                    cr_assert(i == 70 * 50,
                              "%s %s %s chunk %lld: pixel (%zu, %zu) is %.9g on the GPU, %.9g "
                              "on the CPU",
                              ops[o], fps[f], edges[e], (long long)chunks[k], i % 70, i / 70,
                              got[i], ref[i]);
                    free(got);
                    tsr_engine_free(en);
                }
                free(ref);
                tsr_design_free(d);
                free(y);
            }
}

Test(rank, a_large_median_on_the_gpu_gives_the_cpus_bytes)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    char *y = rank_design("median", 12, "disc", "clamp", 0, 0);
    tsr_design *d = th_design(y);
    size_t na, nb;
    uint8_t *a = th_stream(d, 64, 2, &na);
    tsr_engine_opts eo = {.backend = "gpu"};
    uint8_t *b = th_stream_opts(d, &eo, &nb);
    cr_assert_eq(na, nb);
    cr_assert_eq(memcmp(a, b, na), 0);
    free(a), free(b);
    tsr_design_free(d);
    free(y);
}
