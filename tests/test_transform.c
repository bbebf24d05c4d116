/* transform (nodes/transform.c, gpu/transform.cu): quarter turns and mirrors against an index
 * permutation written from docs/transforms.md (the child's bits, no filtering); the direction
 * of a turn and of a mirror on a two-pixel child; need() against what the layer reads (a
 * layer given exactly need()'s rects equals one given the whole child); the same bytes at every
 * tile size and thread count; errors naming the key; the GPU against the CPU bit for bit
 * (skipped without a device). An independent numpy resampler is the oracle in
 * tests/cli/transform_oracle.sh. */
#include <criterion/criterion.h>
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "nodes/transform_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The child: a gradient with a few patches, so that every pixel differs from its neighbours
 * and a misplaced pixel shows; 13 x 8 (w and h of different parity). */
static const char child_yaml[] =
    "  c:\n"
    "    size: [13, 8]\n"
    "    source: {gradient: linear, from: [0, 0], to: [13, 5], values: [-0.5, 1.5]}\n"
    "    children:\n"
    "      - {trait: pattern, offset: [2, 1], node: {size: [3, 2], fill: 0.8}}\n"
    "      - {trait: pattern, offset: [9, 6], node: {size: [1, 1], fill: -2}}\n"
    "      - {trait: pattern, offset: [11, 0], blend: add, node: {size: [2, 8], source: "
    "{gradient: linear, from: [0, 0], to: [0, 8], values: [0, 0.25]}}}\n";

enum { CW = 13, CH = 8, PW = 40, PH = 30 };

static char *
design_with(const char *edge_keys)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    fprintf(f, "tessera: 1\nnodes:\n%sroot:\n  size: [%d, %d]\n  fill: 7\n  children:\n"
               "    - {trait: transform, ref: c, %s}\n",
            child_yaml, PW, PH, edge_keys);
    fclose(f);
    return s;
}

static float *
child_pixels(void)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    fprintf(f, "tessera: 1\nnodes:\n%sroot:\n  size: [%d, %d]\n  children:\n"
               "    - {trait: pattern, ref: c}\n",
            child_yaml, CW, CH);
    fclose(f);
    tsr_design *d = th_design(s);
    free(s);
    float *c = th_rect(d, tsr_rect_make(0, 0, CW, CH), 512, 1);
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

/* The definition for a quarter turn: child pixel (i, j), its centre relative to the pivot
 * (pivot (cw div 2, ch div 2)) in half pixels, mirrored (x negated), turned q times by 90
 * degrees counterclockwise on screen (y down: (x, y) -> (y, -x)), placed with the pivot at
 * offset + pivot: lands in the parent pixel whose centre it is. */
static float *
quarter_reference(const float *c, int q, bool mirror, int ox, int oy)
{
    float *out = malloc(PW * PH * sizeof *out);
    for (int i = 0; i < PW * PH; i++)
        out[i] = 7.0f;
    int px = CW / 2, py = CH / 2;
    for (int j = 0; j < CH; j++)
        for (int i = 0; i < CW; i++) {
            int dx = 2 * i + 1 - 2 * px, dy = 2 * j + 1 - 2 * py; /* doubled */
            if (mirror)
                dx = -dx;
            for (int k = 0; k < ((q % 4) + 4) % 4; k++) {
                int t = dx;
                dx = dy;
                dy = -t;
            }
            int X2 = 2 * (ox + px) + dx, Y2 = 2 * (oy + py) + dy; /* doubled centre: odd */
            int x = (X2 - 1) / 2, y = (Y2 - 1) / 2;
            if (x >= 0 && y >= 0 && x < PW && y < PH)
                out[y * PW + x] = c[j * CW + i];
        }
    return out;
}

Test(transform, quarter_turns_and_mirrors_copy_the_childs_bits)
{
    float *c = child_pixels();
    const int angles[] = {0, 90, 180, 270, -90, 450, 720};
    const char *filters[] = {"bilinear", "bicubic", "nearest"};
    tsr_rect all = tsr_rect_make(0, 0, PW, PH);
    int n = 0;
    for (size_t a = 0; a < sizeof angles / sizeof angles[0]; a++)
        for (int m = 0; m < 2; m++) {
            char keys[200];
            int ox = 9 + (int)a, oy = 11 - (int)a;
            snprintf(keys, sizeof keys, "rotate: %d, mirror: %s, offset: [%d, %d], filter: %s",
                     angles[a], m ? "true" : "false", ox, oy, filters[n % 3]);
            char *y = design_with(keys);
            tsr_design *d = th_design(y);
            const tsr_xf *f = d->root->edges[0].state;
            cr_assert(f->exact, "%s: not taken as exact", keys);
            float *want = quarter_reference(c, angles[a] / 90, m, ox, oy);
            float *got = th_rect(d, all, n % 2 ? 7 : 512, 1 + n % 2);
            size_t i = first_diff(want, got, PW * PH);
            cr_assert(i == PW * PH, "%s: pixel (%zu, %zu) is %.9g, the permutation gives %.9g",
                      keys, i % PW, i / PW, got[i], want[i]);
            free(got);
            free(want);
            tsr_design_free(d);
            free(y);
            n++;
        }
    free(c);
}

Test(transform, whole_shifts_and_pivots_stay_exact_and_half_pixels_do_not)
{
    char *y = design_with("rotate: 90, shift: [3, -2], pivot: [4, 1]");
    tsr_design *d = th_design(y);
    cr_assert(((const tsr_xf *)d->root->edges[0].state)->exact);
    tsr_design_free(d);
    free(y);
    y = design_with("rotate: 90, shift: [0.5, 0]");
    d = th_design(y);
    cr_assert_not(((const tsr_xf *)d->root->edges[0].state)->exact);
    tsr_design_free(d);
    free(y);
    y = design_with("rotate: 180, scale: 2");
    d = th_design(y);
    cr_assert_not(((const tsr_xf *)d->root->edges[0].state)->exact);
    tsr_design_free(d);
    free(y);
}

/* From the spec, not from the code: a child [a b] (a on the left) turned a quarter
 * counterclockwise as the image is seen puts b above a; mirrored first, a above b. */
Test(transform, a_quarter_turn_is_counterclockwise_on_screen_and_mirror_comes_first)
{
    const char *fmt = "tessera: 1\nroot:\n  size: [4, 4]\n  fill: 9\n  children:\n"
                      "    - {trait: transform, rotate: 90, mirror: %s, pivot: [1, 0], "
                      "offset: [1, 1], node: {size: [2, 1], fill: 0.25, children: "
                      "[{trait: pattern, offset: [1, 0], node: {size: [1, 1], fill: 0.75}}]}}\n";
    for (int m = 0; m < 2; m++) {
        char y[512];
        snprintf(y, sizeof y, fmt, m ? "true" : "false");
        tsr_design *d = th_design(y);
        float *got = th_rect(d, tsr_rect_make(0, 0, 4, 4), 512, 1);
        /* the pivot (1, 0) of the child lands at parent (2, 1): child pixel 1 (its centre 0.5
         * right of the pivot) goes 0.5 above it, pixel 0 below */
        float top = got[0 * 4 + 2], bottom = got[1 * 4 + 2];
        cr_assert_eq(top, m ? 0.25f : 0.75f, "mirror %d: top %g", m, top);
        cr_assert_eq(bottom, m ? 0.75f : 0.25f, "mirror %d: bottom %g", m, bottom);
        int set = 0;
        for (int i = 0; i < 16; i++)
            set += got[i] != 9.0f;
        cr_assert_eq(set, 2);
        free(got);
        tsr_design_free(d);
    }
}

/* The layer over pr from exactly need()'s rects (copied out of the whole child) must equal the
 * layer from one view of the whole child: need() asks for everything a covered pixel reads. */
static void
check_need(const tsr_edge *e, const float *c, tsr_rect pr)
{
    tsr_rect want[TSR_NEED_MAX];
    size_t nw = e->trait->need(e, pr, want);
    size_t npx = (size_t)(pr.w * pr.h);
    float *L0 = malloc(npx * sizeof *L0), *L1 = malloc(npx * sizeof *L1);
    uint8_t *c0 = malloc(npx), *c1 = malloc(npx);
    tsr_view whole = {tsr_rect_make(0, 0, CW, CH), c, CW};
    tsr_error err = {0};
    cr_assert_eq(e->trait->layer(e, pr, &whole, 1, L0, c0, &err), TSR_OK, "%s", err.msg);
    size_t covered = 0;
    for (size_t i = 0; i < npx; i++)
        covered += c0[i];
    if (nw == 0) {
        cr_assert_eq(covered, 0, "need() asked nothing over %lldx%lld+%lld+%lld, %zu covered",
                     (long long)pr.w, (long long)pr.h, (long long)pr.x, (long long)pr.y, covered);
    } else {
        tsr_view v[TSR_NEED_MAX];
        float *buf[TSR_NEED_MAX];
        for (size_t k = 0; k < nw; k++) {
            cr_assert(want[k].w > 0 && want[k].h > 0 &&
                      tsr_rect_contains(tsr_rect_make(0, 0, CW, CH), want[k]));
            buf[k] = malloc((size_t)(want[k].w * want[k].h) * sizeof(float));
            for (int64_t y = 0; y < want[k].h; y++)
                memcpy(buf[k] + y * want[k].w, c + (want[k].y + y) * CW + want[k].x,
                       (size_t)want[k].w * sizeof(float));
            v[k] = (tsr_view){want[k], buf[k], want[k].w};
        }
        tsr_status st = e->trait->layer(e, pr, v, nw, L1, c1, &err);
        cr_assert_eq(st, TSR_OK, "over %lldx%lld+%lld+%lld: %s", (long long)pr.w,
                     (long long)pr.h, (long long)pr.x, (long long)pr.y, err.msg);
        cr_assert_eq(memcmp(c0, c1, npx), 0);
        cr_assert_eq(first_diff(L0, L1, npx), npx);
        for (size_t k = 0; k < nw; k++)
            free(buf[k]);
    }
    free(L0), free(L1), free(c0), free(c1);
}

Test(transform, need_asks_for_everything_the_layer_reads)
{
    float *c = child_pixels();
    const char *cases[] = {
        "rotate: 30",
        "rotate: -47.5, filter: bicubic, outside: zero",
        "rotate: 123, scale: 2.5, filter: bicubic, outside: clamp",
        "rotate: 10, scale: 0.3, outside: wrap, shift: [0.25, -0.75]",
        "rotate: 200, mirror: true, filter: nearest, outside: zero",
        "rotate: 90, outside: wrap, filter: bicubic, shift: [0.5, 0.5]",
        "rotate: 271, scale: 7, outside: wrap",
        "rotate: 45, scale: 0.01, outside: clamp",
    };
    uint64_t rng = 24;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char keys[200];
        snprintf(keys, sizeof keys, "%s, offset: [14, 11]", cases[k]);
        char *y = design_with(keys);
        tsr_design *d = th_design(y);
        const tsr_edge *e = &d->root->edges[0];
        for (int t = 0; t < 60; t++) {
            int64_t w = 1 + (int64_t)(th_rand(&rng) % 24), h = 1 + (int64_t)(th_rand(&rng) % 24);
            int64_t x = (int64_t)(th_rand(&rng) % 60) - 10, yy = (int64_t)(th_rand(&rng) % 50) - 10;
            check_need(e, c, tsr_rect_make(x, yy, w, h));
        }
        tsr_design_free(d);
        free(y);
    }
    free(c);
}

Test(transform, identical_bytes_at_every_tile_size_and_thread_count)
{
    const char *cases[] = {"rotate: 33, filter: bicubic, scale: 1.7, offset: [12, 10]",
                           "rotate: -160, mirror: true, outside: wrap, shift: [0.3, 0.1]"};
    for (int k = 0; k < 2; k++) {
        char *y = design_with(cases[k]);
        tsr_design *d = th_design(y);
        size_t n0;
        uint8_t *ref = th_stream(d, 512, 1, &n0);
        const int64_t tiles[] = {1, 7, 64, 512};
        for (size_t t = 0; t < 4; t++)
            for (int th = 1; th <= 2; th++) {
                size_t n;
                uint8_t *b = th_stream(d, tiles[t], th, &n);
                cr_assert_eq(n, n0);
                cr_assert_eq(memcmp(b, ref, n), 0, "%s: tile %lld, %d threads", cases[k],
                             (long long)tiles[t], th);
                free(b);
            }
        free(ref);
        tsr_design_free(d);
        free(y);
    }
}

/* A lattice node turned as a whole: a grating of 1-px lines every 4 px, turned 90 degrees
 * about a whole pixel, is the grating of rows; turned 30 degrees, its pixels take values
 * between the lines' (a resampling), and the layer covers the parent. */
Test(transform, a_lattice_child_turns_as_a_whole)
{
    const char *y =
        "tessera: 1\nnodes:\n  grating:\n    size: [64, 64]\n    children:\n"
        "      - {trait: repeat, node: {size: [4, 1], children: [{trait: pattern, node: "
        "{size: [1, 1], fill: 1}}]}}\n"
        "root:\n  size: [32, 32]\n  fill: 5\n  children:\n"
        "    - {trait: transform, ref: grating, rotate: %d, offset: [-16, -16]}\n";
    char buf[600];
    snprintf(buf, sizeof buf, y, 90);
    tsr_design *d = th_design(buf);
    float *got = th_rect(d, tsr_rect_make(0, 0, 32, 32), 512, 1);
    /* rows, every 4th set: each row constant */
    for (int r = 0; r < 32; r++)
        for (int x = 1; x < 32; x++)
            cr_assert_eq(got[r * 32 + x], got[r * 32], "row %d", r);
    int lines = 0;
    for (int r = 0; r < 32; r++)
        lines += got[r * 32] == 1.0f;
    cr_assert_eq(lines, 8);
    free(got);
    tsr_design_free(d);
    snprintf(buf, sizeof buf, y, 30);
    d = th_design(buf);
    got = th_rect(d, tsr_rect_make(0, 0, 32, 32), 512, 1);
    int between = 0;
    for (int i = 0; i < 32 * 32; i++) {
        cr_assert(got[i] >= 0.0f && got[i] <= 1.0f, "pixel %d is %g (not covered?)", i, got[i]);
        between += got[i] > 0.0f && got[i] < 1.0f;
    }
    cr_assert_gt(between, 32 * 32 / 4);
    free(got);
    tsr_design_free(d);
}

Test(transform, shift_and_pivot_take_physical_units)
{
    tsr_design *d = th_design(
        "tessera: 1\npixel: 0.5um\nroot:\n  size: [8, 8]\n  children:\n"
        "    - {trait: transform, rotate: 15, shift: [0.25um, 1um], pivot: [1um, 0.5um], "
        "node: {size: [8, 8]}}\n");
    const tsr_transform_params *p = d->root->edges[0].params;
    cr_assert_eq(p->shift[0], 0.5);
    cr_assert_eq(p->shift[1], 2.0);
    cr_assert_eq(p->pivot[0], 2.0);
    cr_assert_eq(p->pivot[1], 1.0);
    cr_assert_eq(p->scale, 1.0);
    cr_assert_eq(p->filter, TSR_XF_BILINEAR);
    cr_assert_eq(p->outside, TSR_XF_NONE);
    tsr_design_free(d);
}

static void
assert_refused(const char *edge_keys, const char *want)
{
    char y[512];
    snprintf(y, sizeof y,
             "tessera: 1\npixel: 1um\nroot:\n  size: [8, 8]\n  children:\n"
             "    - {trait: transform, %s, node: {size: [8, 8]}}\n",
             edge_keys);
    tsr_error err = {0};
    tsr_design *d = tsr_design_load_string(y, strlen(y), "t.yaml", NULL, NULL, &err);
    cr_assert_null(d, "loaded: %s", edge_keys);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

Test(transform, bad_parameters_are_refused_with_the_key)
{
    assert_refused("scale: 0", "t.yaml:6:33: root.children[0].scale: must be in 0.001..1000, got 0");
    assert_refused("scale: -2", "root.children[0].scale: must be in 0.001..1000");
    assert_refused("rotate: .inf", "root.children[0].rotate: '.inf': infinity and NaN");
    assert_refused("rotate: 2e6", "root.children[0].rotate: must be in -1000000..1000000");
    assert_refused("rotate: 10deg", "root.children[0].rotate:");
    assert_refused("filter: lanczos", "root.children[0].filter: unknown filter 'lanczos'");
    assert_refused("outside: mirror", "root.children[0].outside: unknown outside 'mirror'");
    assert_refused("pivot: [1]", "root.children[0].pivot: expected 2 values, got 1");
    assert_refused("shift: [1, 2, 3]", "root.children[0].shift: expected 2 values, got 3");
    assert_refused("mirror: 3", "root.children[0].mirror: expected true or false");
    assert_refused("rotat: 3", "(did you mean 'rotate'?)");
    assert_refused("sigma: 2", "a parameter of trait 'blur', not 'transform'");
}

Test(transform, the_gpu_gives_the_cpus_bits)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    const char *cases[] = {
        "rotate: 90, mirror: true, offset: [9, 11]",
        "rotate: 30, offset: [12, 10]",
        "rotate: -47.5, filter: bicubic, outside: zero, offset: [12, 10], blend: add",
        "rotate: 123, scale: 2.5, filter: bicubic, outside: clamp, mask: nonzero",
        "rotate: 10, scale: 0.3, outside: wrap, shift: [0.25, -0.75]",
        "rotate: 200, mirror: true, filter: nearest, outside: zero, offset: [14, 12]",
    };
    tsr_rect all = tsr_rect_make(0, 0, PW, PH);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char *y = design_with(cases[k]);
        tsr_design *d = th_design(y);
        float *ref = th_rect(d, all, 512, 2);
        const int64_t chunks[] = {0, 17 * 23};
        for (int c = 0; c < 2; c++) {
            tsr_error err = {0};
            tsr_engine_opts eo = {.backend = "gpu", .gpu_chunk = chunks[c],
                                  .gpu_memory = (int64_t)1 << 30};
            tsr_engine *en = tsr_engine_new(d, &eo, &err);
            cr_assert_not_null(en, "%s", err.msg);
            cr_assert_str_eq(tsr_engine_backend(en), "gpu");
            float *got = malloc(PW * PH * sizeof *got);
            cr_assert_eq(tsr_engine_render_rect(en, all, got, &err), TSR_OK, "%s", err.msg);
            size_t i = first_diff(ref, got, PW * PH);
            cr_assert(i == PW * PH, "%s chunk %lld: pixel (%zu, %zu) is %.9g on the GPU, %.9g on "
                      "the CPU", cases[k], (long long)chunks[c], i % PW, i / PW, got[i], ref[i]);
            free(got);
            tsr_engine_free(en);
        }
        size_t na, nb;
        uint8_t *a = th_stream(d, 64, 2, &na);
        tsr_engine_opts eo = {.backend = "gpu"};
        uint8_t *b = th_stream_opts(d, &eo, &nb);
        cr_assert_eq(na, nb);
        cr_assert_eq(memcmp(a, b, na), 0, "%s: streamed bytes differ", cases[k]);
        free(a), free(b);
        free(ref);
        tsr_design_free(d);
        free(y);
    }
}

/* A tsr_check that records the key and message of the first failure. */
typedef struct rec_check {
    tsr_check c;
    char key[64], msg[256];
} rec_check;

static tsr_status
rec_fail(tsr_check *c, const char *key, const char *msg)
{
    rec_check *r = (rec_check *)c;
    snprintf(r->key, sizeof r->key, "%s", key);
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    return TSR_EINVAL;
}

/* Parameters made in code (not through the loader's table) meet the same rules in check(). */
Test(transform, hand_made_parameters_are_checked_by_key)
{
    const tsr_trait *t = tsr_trait_find("transform");
    cr_assert_not_null(t);
    tsr_node child = {.name = "c", .w = 4, .h = 4};
    static const struct {
        int what;
        const char *key, *msg;
    } cases[] = {
        {0, NULL, NULL},
        {1, "scale", "must be in 0.001..1000, got 0"},
        {2, "rotate", "must be in"},
        {3, "pivot", "give both coordinates"},
        {4, "shift", "within +-2^40 px"},
        {5, "filter", "must be bilinear, bicubic or nearest"},
        {6, "outside", "must be none, zero, clamp or wrap"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tsr_transform_params p;
        t->defaults(&p);
        switch (cases[k].what) {
        case 1: p.scale = 0; break;
        case 2: p.rotate = INFINITY; break;
        case 3: p.pivot[0] = 1; break;
        case 4: p.shift[1] = 1e13; break;
        case 5: p.filter = 3; break;
        case 6: p.outside = -1; break;
        default: break;
        }
        tsr_edge e = {.trait = t, .child = &child, .params = &p};
        rec_check c = {{rec_fail}, "", ""};
        tsr_status st = t->check(&e, &c.c);
        if (!cases[k].key) {
            cr_assert_eq(st, TSR_OK, "the defaults refused: %s: %s", c.key, c.msg);
            continue;
        }
        cr_assert_eq(st, TSR_EINVAL, "case %zu accepted", k);
        cr_assert_str_eq(c.key, cases[k].key);
        cr_assert(strstr(c.msg, cases[k].msg), "%s: '%s' lacks '%s'", c.key, c.msg,
                  cases[k].msg);
    }
}

/* Views that do not hold what need() asked for are the engine's fault, reported, never read
 * past. */
Test(transform, a_layer_without_its_child_pixels_fails_cleanly)
{
    char *y = design_with("rotate: 30, offset: [14, 11]");
    tsr_design *d = th_design(y);
    const tsr_edge *e = &d->root->edges[0];
    float px[4] = {0, 0, 0, 0}, L[64];
    uint8_t cov[64];
    tsr_view v = {tsr_rect_make(0, 0, 2, 2), px, 2}; /* the child's corner only */
    tsr_error err = {0};
    tsr_status st = e->trait->layer(e, tsr_rect_make(16, 12, 8, 8), &v, 1, L, cov, &err);
    cr_assert_eq(st, TSR_EINTERNAL);
    cr_assert(strstr(err.msg, "root.children[0]: transform: child views do not cover"), "%s",
              err.msg);
    for (int i = 0; i < 64; i++)
        cr_assert(cov[i] == 0 && L[i] == 0.0f, "pixel %d left half-made", i);
    tsr_design_free(d);
    free(y);
}
