/* blur trait: references, edge modes, need(), tile invariance, the large-sigma error bound and
 * parameter errors. Edges are built by hand; child pixels come from arrays owned here. */
#include "nodes/blur_int.h"
#include "nodes/nodes.h"
#include "nodes/params.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const tsr_trait tsr_trait_blur;

/* ---- helpers ------------------------------------------------------------------------------ */

typedef struct fixture {
    tsr_node child;
    tsr_edge e;
} fixture;

/* A blur edge over a w x h child: sigma, or a kernel when k != NULL. Not yet prepared. */
static void
edge_init(fixture *f, int64_t w, int64_t h, double sigma, const float *k, int64_t kw, int64_t kh,
          int edge)
{
    memset(f, 0, sizeof *f);
    f->child.w = w;
    f->child.h = h;
    f->e.trait = &tsr_trait_blur;
    f->e.child = &f->child;
    f->e.params = malloc(tsr_trait_blur.params_size);
    cr_assert(f->e.params);
    tsr_trait_blur.defaults(f->e.params);
    tsr_blur_params *p = f->e.params;
    p->sigma = sigma;
    if (k) {
        p->kernel.w = kw;
        p->kernel.h = kh;
        p->kernel.k = malloc((size_t)(kw * kh) * sizeof(float));
        memcpy(p->kernel.k, k, (size_t)(kw * kh) * sizeof(float));
    }
    p->edge = edge;
}

static void
edge_prepare(fixture *f)
{
    tsr_error err = {0};
    cr_assert_eq(tsr_trait_blur.prepare(&f->e, &err), TSR_OK, "%s", err.msg);
}

static void
edge_free(fixture *f)
{
    tsr_trait_blur.release(&f->e);
    tsr_blur_params *p = f->e.params;
    free(p->kernel.k);
    free(p);
}

static const tsr_blur_state *
state_of(const fixture *f)
{
    return f->e.state;
}

/* Deterministic pseudo-random floats in [0, 1). */
static uint64_t rng_state = 88172645463325252ull;

static float
frand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) / 16777216.0);
}

static float *
child_random(int64_t w, int64_t h)
{
    float *c = malloc((size_t)(w * h) * sizeof *c);
    for (int64_t i = 0; i < w * h; i++)
        c[i] = frand();
    return c;
}

/* Render the layer over parent rect pr, giving layer() copies of exactly the rects need()
 * returned (each in its own allocation with a padded stride, so a read outside is caught). */
static void
render(const fixture *f, const float *child, tsr_rect pr, float *L, uint8_t *cov)
{
    tsr_rect need[TSR_NEED_MAX + 1];
    size_t n = tsr_trait_blur.need(&f->e, pr, need);
    cr_assert(n <= TSR_NEED_MAX);
    tsr_view v[TSR_NEED_MAX];
    float *bufs[TSR_NEED_MAX];
    tsr_rect whole = tsr_rect_make(0, 0, f->child.w, f->child.h);
    for (size_t i = 0; i < n; i++) {
        tsr_rect r = need[i];
        cr_assert(!tsr_rect_empty(r) && tsr_rect_contains(whole, r), "need rect %zu outside", i);
        int64_t stride = r.w + 3;
        bufs[i] = malloc((size_t)(stride * r.h) * sizeof(float));
        for (int64_t y = 0; y < r.h; y++)
            memcpy(bufs[i] + y * stride, child + (r.y + y) * f->child.w + r.x,
                   (size_t)r.w * sizeof(float));
        v[i].r = r;
        v[i].px = bufs[i];
        v[i].stride = stride;
    }
    tsr_error err = {0};
    tsr_status s = tsr_trait_blur.layer(&f->e, pr, v, n, L, cov, &err);
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    cr_assert_eq(s, TSR_OK, "layer: %s", err.msg);
}

/* The whole child as layer (offset 0, parent = child). */
static float *
render_whole(const fixture *f, const float *child)
{
    int64_t w = f->child.w, h = f->child.h;
    float *L = malloc((size_t)(w * h) * sizeof *L);
    uint8_t *cov = malloc((size_t)(w * h));
    render(f, child, tsr_rect_make(0, 0, w, h), L, cov);
    for (int64_t i = 0; i < w * h; i++)
        cr_assert_eq(cov[i], 1);
    free(cov);
    return L;
}

/* C(x, y) with the edge mode, in double. */
static double
cext(const float *c, int64_t w, int64_t h, int edge, int64_t x, int64_t y)
{
    if (edge == TSR_EDGE_ZERO) {
        if (x < 0 || y < 0 || x >= w || y >= h)
            return 0;
    } else if (edge == TSR_EDGE_CLAMP) {
        x = x < 0 ? 0 : x >= w ? w - 1 : x;
        y = y < 0 ? 0 : y >= h ? h - 1 : y;
    } else {
        x = ((x % w) + w) % w;
        y = ((y % h) + h) % h;
    }
    return c[y * w + x];
}

/* The docs/format.md reference in double: normalised sampled Gaussian, x then y, over child rect o;
 * res is o.w x o.h. */
static void
ref_gauss(const float *c, int64_t w, int64_t h, int edge, double s, tsr_rect o, double *res)
{
    int64_t r = (int64_t)ceil(4 * s);
    double *g = malloc((size_t)(2 * r + 1) * sizeof *g), sum = 0;
    for (int64_t k = -r; k <= r; k++)
        sum += g[k + r] = exp(-(double)(k * k) / (2 * s * s));
    for (int64_t k = 0; k <= 2 * r; k++)
        g[k] /= sum;
    int64_t th = o.h + 2 * r;
    double *t = malloc((size_t)(th * o.w) * sizeof *t);
    for (int64_t yy = 0; yy < th; yy++) {
        int64_t y = o.y - r + yy;
        for (int64_t x = 0; x < o.w; x++) {
            double a = 0;
            for (int64_t k = -r; k <= r; k++)
                a += g[k + r] * cext(c, w, h, edge, o.x + x + k, y);
            t[yy * o.w + x] = a;
        }
    }
    for (int64_t y = 0; y < o.h; y++)
        for (int64_t x = 0; x < o.w; x++) {
            double a = 0;
            for (int64_t k = -r; k <= r; k++)
                a += g[k + r] * t[(y + r + k) * o.w + x];
            res[y * o.w + x] = a;
        }
    free(t);
    free(g);
}

/* max |L - reference| over child rect o (L is the whole-child layer). */
static double
max_err_vs_ref(const float *c, int64_t w, int64_t h, int edge, double s, const float *L, tsr_rect o)
{
    double *ref = malloc((size_t)(o.w * o.h) * sizeof *ref), m = 0;
    ref_gauss(c, w, h, edge, s, o, ref);
    for (int64_t y = 0; y < o.h; y++)
        for (int64_t x = 0; x < o.w; x++) {
            double d = fabs((double)L[(o.y + y) * w + o.x + x] - ref[y * o.w + x]);
            if (!(d <= m))
                m = d;
        }
    free(ref);
    return m;
}

/* Tiles of T over a parent of pw x ph (child at offset ox, oy) equal the whole render bitwise. */
static void
check_tiles(fixture *f, const float *child, int64_t pw, int64_t ph, int64_t T)
{
    size_t n = (size_t)(pw * ph);
    float *whole = malloc(n * sizeof *whole), *tiled = malloc(n * sizeof *tiled);
    uint8_t *cw = malloc(n), *ct = malloc(n);
    render(f, child, tsr_rect_make(0, 0, pw, ph), whole, cw);
    float *L = malloc((size_t)(T * T) * sizeof *L);
    uint8_t *cov = malloc((size_t)(T * T));
    for (int64_t ty = 0; ty < ph; ty += T)
        for (int64_t tx = 0; tx < pw; tx += T) {
            tsr_rect pr = tsr_rect_make(tx, ty, pw - tx < T ? pw - tx : T, ph - ty < T ? ph - ty : T);
            render(f, child, pr, L, cov);
            for (int64_t y = 0; y < pr.h; y++) {
                memcpy(tiled + (ty + y) * pw + tx, L + y * pr.w, (size_t)pr.w * sizeof *L);
                memcpy(ct + (ty + y) * pw + tx, cov + y * pr.w, (size_t)pr.w);
            }
        }
    cr_assert(memcmp(cw, ct, n) == 0, "coverage differs at tile %lld", (long long)T);
    for (size_t i = 0; i < n; i++)
        cr_assert(memcmp(&whole[i], &tiled[i], sizeof(float)) == 0,
                  "tile %lld: pixel (%zu, %zu) %.9g != %.9g", (long long)T, i % (size_t)pw,
                  i / (size_t)pw, whole[i], tiled[i]);
    free(whole);
    free(tiled);
    free(cw);
    free(ct);
    free(L);
    free(cov);
}

/* Single-pixel tiles at random spots equal the whole render (cheaper than tiling by 1). */
static void
check_single_pixels(fixture *f, const float *child, int count)
{
    float *whole = render_whole(f, child);
    for (int i = 0; i < count; i++) {
        int64_t x = (int64_t)(frand() * (float)f->child.w), y = (int64_t)(frand() * (float)f->child.h);
        float L;
        uint8_t cov;
        render(f, child, tsr_rect_make(x, y, 1, 1), &L, &cov);
        cr_assert_eq(cov, 1);
        cr_assert(memcmp(&L, &whole[y * f->child.w + x], sizeof L) == 0,
                  "1x1 tile at (%lld, %lld): %.9g != %.9g", (long long)x, (long long)y, L,
                  whole[y * f->child.w + x]);
    }
    free(whole);
}

/* ---- check() ------------------------------------------------------------------------------ */

typedef struct rec_check {
    tsr_check base; /* first: blur calls c->fail(c, ...) */
    char key[64];
    char msg[256];
} rec_check;

static tsr_status
rec_fail(tsr_check *c, const char *key, const char *msg)
{
    rec_check *r = (rec_check *)c;
    snprintf(r->key, sizeof r->key, "%s", key);
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    return TSR_EINVAL;
}

static tsr_status
run_check(fixture *f, rec_check *rc)
{
    memset(rc, 0, sizeof *rc);
    rc->base.fail = rec_fail;
    return tsr_trait_blur.check(&f->e, &rc->base);
}

Test(blur, check_requires_sigma_or_kernel)
{
    fixture f;
    rec_check rc;
    edge_init(&f, 8, 8, 0, NULL, 0, 0, TSR_EDGE_ZERO);
    cr_assert_eq(run_check(&f, &rc), TSR_EINVAL);
    cr_assert_str_eq(rc.key, "sigma");
    cr_assert_str_eq(rc.msg, "one of sigma or kernel is required");
    edge_free(&f);
}

Test(blur, check_sigma_and_kernel_are_exclusive)
{
    fixture f;
    rec_check rc;
    float k[3] = {0.25f, 0.5f, 0.25f};
    edge_init(&f, 8, 8, 2.0, k, 3, 1, TSR_EDGE_ZERO);
    cr_assert_eq(run_check(&f, &rc), TSR_EINVAL);
    cr_assert_str_eq(rc.key, "sigma");
    cr_assert_str_eq(rc.msg, "sigma and kernel are exclusive");
    edge_free(&f);
}

Test(blur, check_sigma_range)
{
    double bad[] = {0.29, -1, 256.01, 1e9, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fixture f;
        rec_check rc;
        edge_init(&f, 8, 8, bad[i], NULL, 0, 0, TSR_EDGE_ZERO);
        cr_assert_eq(run_check(&f, &rc), TSR_EINVAL, "sigma %g accepted", bad[i]);
        cr_assert_str_eq(rc.key, "sigma");
        char want[64];
        snprintf(want, sizeof want, "must be in 0.3..256, got %g", bad[i]);
        cr_assert_str_eq(rc.msg, want);
        edge_free(&f);
    }
    double good[] = {0.3, 1, 6, 6.0001, 256};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        fixture f;
        rec_check rc;
        edge_init(&f, 8, 8, good[i], NULL, 0, 0, TSR_EDGE_WRAP);
        cr_assert_eq(run_check(&f, &rc), TSR_OK, "sigma %g: %s", good[i], rc.msg);
        edge_free(&f);
    }
}

Test(blur, check_kernel_sizes)
{
    float k[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        k[i] = 1;
    int64_t bad[][2] = {{2, 1}, {1, 4}, {65, 1}, {1, 65}, {64, 63}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fixture f;
        rec_check rc;
        edge_init(&f, 8, 8, 0, k, bad[i][0], bad[i][1], TSR_EDGE_ZERO);
        cr_assert_eq(run_check(&f, &rc), TSR_EINVAL);
        cr_assert_str_eq(rc.key, "kernel");
        cr_assert(strstr(rc.msg, "odd and <= 63"), "%s", rc.msg);
        edge_free(&f);
    }
    int64_t good[][2] = {{1, 1}, {1, 63}, {63, 1}, {63, 63}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        fixture f;
        rec_check rc;
        edge_init(&f, 8, 8, 0, k, good[i][0], good[i][1], TSR_EDGE_CLAMP);
        cr_assert_eq(run_check(&f, &rc), TSR_OK, "%s", rc.msg);
        edge_free(&f);
    }
}

Test(blur, parameter_table_names_keys_and_defaults)
{
    cr_assert_str_eq(tsr_trait_blur.name, "blur");
    cr_assert_eq(tsr_trait_blur.nparams, 3);
    cr_assert_str_eq(tsr_trait_blur.params[0].key, "sigma");
    cr_assert_eq(tsr_trait_blur.params[0].type, TSR_P_F64);
    cr_assert_eq(tsr_trait_blur.params[0].flags & TSR_PF_RANGE, 0);
    cr_assert_str_eq(tsr_trait_blur.params[1].key, "kernel");
    cr_assert_eq(tsr_trait_blur.params[1].type, TSR_P_KERNEL);
    cr_assert_str_eq(tsr_trait_blur.params[2].key, "edge");
    cr_assert_eq(tsr_trait_blur.params[2].names, tsr_edge_mode_names);
    cr_assert_str_eq(tsr_edge_mode_names[TSR_EDGE_ZERO], "zero");
    cr_assert_str_eq(tsr_edge_mode_names[TSR_EDGE_CLAMP], "clamp");
    cr_assert_str_eq(tsr_edge_mode_names[TSR_EDGE_WRAP], "wrap");
    cr_assert_null(tsr_edge_mode_names[3]);
    tsr_blur_params p;
    memset(&p, 0xab, sizeof p);
    tsr_trait_blur.defaults(&p);
    cr_assert(p.sigma == 0 && p.kernel.w == 0 && p.kernel.h == 0 && !p.kernel.k);
    cr_assert_eq(p.edge, TSR_EDGE_ZERO);
}

/* ---- need() --------------------------------------------------------------------------------- */

Test(blur, need_is_the_clipped_halo_for_zero_and_clamp)
{
    int modes[] = {TSR_EDGE_ZERO, TSR_EDGE_CLAMP};
    for (int i = 0; i < 2; i++) {
        fixture f;
        edge_init(&f, 100, 80, 2.0, NULL, 0, 0, modes[i]); /* r = 8 */
        edge_prepare(&f);
        f.e.offset[0] = 10;
        f.e.offset[1] = -5;
        tsr_rect out[TSR_NEED_MAX];
        /* parent (20..52) x (0..32) is child (10..42) x (5..37), grown by 8 */
        cr_assert_eq(tsr_trait_blur.need(&f.e, tsr_rect_make(20, 0, 32, 32), out), 1);
        cr_assert(tsr_rect_equal(out[0], tsr_rect_make(2, 0, 48, 45)), "%lld %lld %lld %lld",
                  (long long)out[0].x, (long long)out[0].y, (long long)out[0].w,
                  (long long)out[0].h);
        /* outside the child: nothing */
        cr_assert_eq(tsr_trait_blur.need(&f.e, tsr_rect_make(0, 0, 10, 10), out), 0);
        cr_assert_eq(tsr_trait_blur.need(&f.e, tsr_rect_make(200, 0, 10, 10), out), 0);
        edge_free(&f);
    }
}

Test(blur, need_wraps_by_floor_mod_split_at_child_borders)
{
    fixture f;
    edge_init(&f, 100, 80, 2.0, NULL, 0, 0, TSR_EDGE_WRAP); /* r = 8 */
    edge_prepare(&f);
    tsr_rect out[TSR_NEED_MAX];
    /* child (0..10) x (0..10) grown: x -8..18 -> [92,100) + [0,18); y likewise */
    size_t n = tsr_trait_blur.need(&f.e, tsr_rect_make(0, 0, 10, 10), out);
    cr_assert_eq(n, 4);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(92, 72, 8, 8)));
    cr_assert(tsr_rect_equal(out[1], tsr_rect_make(0, 72, 18, 8)));
    cr_assert(tsr_rect_equal(out[2], tsr_rect_make(92, 0, 8, 18)));
    cr_assert(tsr_rect_equal(out[3], tsr_rect_make(0, 0, 18, 18)));
    /* interior: one rect */
    n = tsr_trait_blur.need(&f.e, tsr_rect_make(40, 30, 10, 10), out);
    cr_assert_eq(n, 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(32, 22, 26, 26)));
    edge_free(&f);

    /* halo wider than a small motif: the whole child */
    edge_init(&f, 5, 3, 4.0, NULL, 0, 0, TSR_EDGE_WRAP);
    edge_prepare(&f);
    n = tsr_trait_blur.need(&f.e, tsr_rect_make(0, 0, 5, 3), out);
    cr_assert_eq(n, 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(0, 0, 5, 3)));
    edge_free(&f);
}

Test(blur, need_uses_the_kernel_half_sizes_and_the_spline_support)
{
    float k[5 * 3] = {0};
    fixture f;
    edge_init(&f, 50, 50, 0, k, 5, 3, TSR_EDGE_ZERO);
    edge_prepare(&f);
    tsr_rect out[TSR_NEED_MAX];
    cr_assert_eq(tsr_trait_blur.need(&f.e, tsr_rect_make(10, 10, 5, 5), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(8, 9, 9, 7)));
    edge_free(&f);

    edge_init(&f, 1000, 1000, 32, NULL, 0, 0, TSR_EDGE_ZERO);
    edge_prepare(&f);
    int64_t R = state_of(&f)->rx;
    cr_assert(R <= 128 && R > 100, "R = %lld", (long long)R);
    cr_assert_eq(tsr_trait_blur.need(&f.e, tsr_rect_make(400, 400, 64, 64), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(400 - R, 400 - R, 64 + 2 * R, 64 + 2 * R)));
    edge_free(&f);
}

/* ---- the FIR path against the double reference ---------------------------------------------- */

Test(blur, fir_matches_the_double_reference_in_every_edge_mode)
{
    double sigmas[] = {0.3, 0.7, 1.3, 2.5, 4, 6};
    int modes[] = {TSR_EDGE_ZERO, TSR_EDGE_CLAMP, TSR_EDGE_WRAP};
    int64_t w = 53, h = 41;
    float *c = child_random(w, h);
    double worst = 0;
    for (size_t si = 0; si < sizeof sigmas / sizeof sigmas[0]; si++)
        for (int mi = 0; mi < 3; mi++) {
            fixture f;
            edge_init(&f, w, h, sigmas[si], NULL, 0, 0, modes[mi]);
            edge_prepare(&f);
            cr_assert_eq(state_of(&f)->method, TSR_BLUR_FIR);
            float *L = render_whole(&f, c);
            double e = max_err_vs_ref(c, w, h, modes[mi], sigmas[si], L, tsr_rect_make(0, 0, w, h));
            cr_assert(e <= 1e-5, "sigma %g edge %d: max error %g", sigmas[si], modes[mi], e);
            if (e > worst)
                worst = e;
            free(L);
            edge_free(&f);
        }
    printf("blur: FIR vs double reference, max |error| %.3g\n", worst);
    free(c);
}

Test(blur, wrap_blurs_a_motif_smaller_than_the_halo_seamlessly)
{
    /* a 5 x 3 motif, r = 16: the periodic extension wraps many times */
    int64_t w = 5, h = 3;
    float *c = child_random(w, h);
    fixture f;
    edge_init(&f, w, h, 4.0, NULL, 0, 0, TSR_EDGE_WRAP);
    edge_prepare(&f);
    float *L = render_whole(&f, c);
    double e = max_err_vs_ref(c, w, h, TSR_EDGE_WRAP, 4.0, L, tsr_rect_make(0, 0, w, h));
    cr_assert(e <= 1e-5, "max error %g", e);
    /* a blurred period of a periodic signal: mean preserved */
    double m0 = 0, m1 = 0;
    for (int i = 0; i < w * h; i++) {
        m0 += c[i];
        m1 += L[i];
    }
    cr_assert(fabs(m0 - m1) < 1e-4, "%g %g", m0, m1);
    check_tiles(&f, c, w, h, 1);
    check_tiles(&f, c, w, h, 2);
    free(L);
    edge_free(&f);

    /* the same on the spline path, against the reference within the design tolerance */
    edge_init(&f, 7, 4, 20.0, NULL, 0, 0, TSR_EDGE_WRAP);
    edge_prepare(&f);
    cr_assert_eq(state_of(&f)->method, TSR_BLUR_SPLINE);
    float *c2 = child_random(7, 4);
    L = render_whole(&f, c2);
    e = max_err_vs_ref(c2, 7, 4, TSR_EDGE_WRAP, 20.0, L, tsr_rect_make(0, 0, 7, 4));
    cr_assert(e <= 2e-3, "max error %g", e);
    check_tiles(&f, c2, 7, 4, 1);
    check_tiles(&f, c2, 7, 4, 3);
    free(L);
    free(c2);
    edge_free(&f);
    free(c);
}

Test(blur, clamp_extends_the_nearest_pixel)
{
    /* a constant child stays constant under clamp (and wrap), loses mass at borders under zero */
    int64_t w = 20, h = 9;
    float *c = malloc((size_t)(w * h) * sizeof *c);
    for (int i = 0; i < w * h; i++)
        c[i] = 0.75f;
    double sigmas[] = {3, 40};
    for (int si = 0; si < 2; si++) {
        int modes[] = {TSR_EDGE_CLAMP, TSR_EDGE_WRAP, TSR_EDGE_ZERO};
        for (int mi = 0; mi < 3; mi++) {
            fixture f;
            edge_init(&f, w, h, sigmas[si], NULL, 0, 0, modes[mi]);
            edge_prepare(&f);
            float *L = render_whole(&f, c);
            if (modes[mi] == TSR_EDGE_ZERO) {
                cr_assert(L[0] < 0.7f && L[0] > 0.0f, "%g", L[0]);
            } else {
                for (int i = 0; i < w * h; i++)
                    cr_assert(fabsf(L[i] - 0.75f) < 2e-4f, "sigma %g mode %d: %g",
                              sigmas[si], modes[mi], L[i]);
            }
            free(L);
            edge_free(&f);
        }
    }
    free(c);
}

/* ---- explicit kernels --------------------------------------------------------------------- */

/* The definition in float32, j then i, from 0: what the implementation must reproduce bitwise. */
static void
ref_kernel(const float *c, int64_t w, int64_t h, int edge, const float *K, int64_t kw,
           int64_t kh, float *out)
{
    int64_t rx = (kw - 1) / 2, ry = (kh - 1) / 2;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            float a = 0.0f;
            for (int64_t j = 0; j < kh; j++)
                for (int64_t i = 0; i < kw; i++)
                    a += K[j * kw + i] * (float)cext(c, w, h, edge, x + i - rx, y + j - ry);
            out[y * w + x] = a;
        }
}

Test(blur, explicit_kernels_match_the_definition_exactly)
{
    int64_t sizes[][2] = {{1, 1}, {3, 3}, {5, 3}, {1, 63}, {63, 1}, {7, 9}, {63, 63}};
    int modes[] = {TSR_EDGE_ZERO, TSR_EDGE_CLAMP, TSR_EDGE_WRAP};
    int64_t w = 29, h = 23;
    float *c = child_random(w, h);
    float *ref = malloc((size_t)(w * h) * sizeof *ref);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t kw = sizes[si][0], kh = sizes[si][1];
        /* asymmetric, signed: any transposition or flip shows */
        float *K = malloc((size_t)(kw * kh) * sizeof *K);
        for (int64_t i = 0; i < kw * kh; i++)
            K[i] = frand() - 0.3f;
        for (int mi = 0; mi < 3; mi++) {
            fixture f;
            edge_init(&f, w, h, 0, K, kw, kh, modes[mi]);
            edge_prepare(&f);
            float *L = render_whole(&f, c);
            ref_kernel(c, w, h, modes[mi], K, kw, kh, ref);
            for (int64_t i = 0; i < w * h; i++)
                cr_assert(memcmp(&L[i], &ref[i], sizeof(float)) == 0,
                          "%lldx%lld mode %d pixel %lld: %.9g != %.9g", (long long)kw,
                          (long long)kh, modes[mi], (long long)i, L[i], ref[i]);
            if (kw <= 7)
                check_tiles(&f, c, w, h, 7);
            free(L);
            edge_free(&f);
        }
        free(K);
    }
    free(ref);
    free(c);
}

Test(blur, kernel_rows_are_y)
{
    /* a 1x3 kernel [0 0 1] moves content left by one; 3x1 moves it up */
    float k[3] = {0, 0, 1};
    int64_t w = 4, h = 4;
    float c[16];
    for (int i = 0; i < 16; i++)
        c[i] = (float)i;
    fixture f;
    edge_init(&f, w, h, 0, k, 3, 1, TSR_EDGE_ZERO);
    edge_prepare(&f);
    float *L = render_whole(&f, c);
    cr_assert(L[0] == 1 && L[1] == 2 && L[3] == 0 && L[4] == 5, "%g %g %g", L[0], L[1], L[3]);
    free(L);
    edge_free(&f);
    edge_init(&f, w, h, 0, k, 1, 3, TSR_EDGE_ZERO);
    edge_prepare(&f);
    L = render_whole(&f, c);
    cr_assert(L[0] == 4 && L[4] == 8 && L[12] == 0, "%g %g %g", L[0], L[4], L[12]);
    free(L);
    edge_free(&f);
}

/* ---- the exact arithmetic, restated in scalar C ---------------------------------------------
 * These pin down, bit for bit, what the vectorised paths compute (window sums here are direct,
 * not running, so equality also shows the running sums are exact). */

static float
t_fir_px(const float *c, int64_t step, const float *w, int64_t r)
{
    float t = w[0] * c[0];
    for (int64_t k = 1; k <= r; k++)
        t += w[k] * (c[-k * step] + c[k * step]);
    return t;
}

static int32_t
t_quant(float f, float lim)
{
    f = f < lim ? f : lim;
    f = f > -lim ? f : -lim;
    return (int32_t)((f + 12582912.0f) - 12582912.0f);
}

/* One axis of the spline path over u[0..n): four truncated box means, then the taps. */
static int64_t
t_axis(const int32_t *u, int64_t n, const tsr_blur_state *st, const float *c, float *out)
{
    int64_t h = st->h, m = st->m, len = n;
    int32_t *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    memcpy(a, u, (size_t)n * sizeof *a);
    for (int s = 0; s < TSR_BLUR_STAGES; s++) {
        for (int64_t i = 0; i + h <= len; i++) {
            uint32_t sum = 0;
            for (int64_t k = 0; k < h; k++)
                sum += (uint32_t)a[i + k];
            b[i] = (int32_t)((float)(int32_t)sum * st->inv_h);
        }
        len -= h - 1;
        int32_t *t = a;
        a = b;
        b = t;
    }
    int64_t nout = len - (m - 1) * h;
    for (int64_t j = 0; j < nout; j++) {
        float t = c[0] * (float)(a[j] + a[j + (m - 1) * h]);
        for (int64_t p = 1; p < m / 2; p++)
            t += c[p] * (float)(a[j + p * h] + a[j + (m - 1 - p) * h]);
        if (m % 2)
            t += c[m / 2] * (float)a[j + (m / 2) * h];
        out[j] = t;
    }
    free(a);
    free(b);
    return nout;
}

/* The whole child through the spline path: y first, requantised, then x. */
static void
t_spline(const float *c, int64_t w, int64_t h, int edge, const tsr_blur_state *st, float *out)
{
    int64_t R = st->rx, px = w + 2 * R, py = h + 2 * R;
    int32_t *col = malloc((size_t)py * sizeof *col), *M = malloc((size_t)(px * h) * sizeof *M);
    int32_t *row = malloc((size_t)px * sizeof *row);
    float *f = malloc((size_t)(px + py) * sizeof *f);
    for (int64_t x = 0; x < px; x++) {
        for (int64_t y = 0; y < py; y++)
            col[y] = t_quant((float)cext(c, w, h, edge, x - R, y - R) * 65536.0f, st->lim);
        cr_assert_eq(t_axis(col, py, st, st->c, f), h);
        for (int64_t y = 0; y < h; y++)
            M[y * px + x] = t_quant(f[y], st->lim);
    }
    for (int64_t y = 0; y < h; y++) {
        memcpy(row, M + y * px, (size_t)px * sizeof *row);
        cr_assert_eq(t_axis(row, px, st, st->cq, out + y * w), w);
    }
    free(col);
    free(M);
    free(row);
    free(f);
}

Test(blur, fast_paths_equal_their_scalar_definitions_bitwise)
{
    int64_t w = 70, h = 45;
    float *c = child_random(w, h);
    c[3] = 7.5f; /* beyond [0, 1] too */
    c[200] = -3.25f;
    float *ref = malloc((size_t)(w * h) * sizeof *ref);
    double sigmas[] = {1.1, 5.5, 6.01, 9, 21.7};
    for (int si = 0; si < 5; si++)
        for (int edge = 0; edge < 3; edge++) {
            fixture f;
            edge_init(&f, w, h, sigmas[si], NULL, 0, 0, edge);
            edge_prepare(&f);
            const tsr_blur_state *st = state_of(&f);
            float *L = render_whole(&f, c);
            if (st->method == TSR_BLUR_FIR) {
                int64_t r = st->r, pw = w + 2 * r;
                float *pad = malloc((size_t)(pw * (h + 2 * r)) * sizeof *pad);
                float *H = malloc((size_t)(w * (h + 2 * r)) * sizeof *H);
                for (int64_t y = 0; y < h + 2 * r; y++)
                    for (int64_t x = 0; x < pw; x++)
                        pad[y * pw + x] = (float)cext(c, w, h, edge, x - r, y - r);
                for (int64_t y = 0; y < h + 2 * r; y++)
                    for (int64_t x = 0; x < w; x++)
                        H[y * w + x] = t_fir_px(pad + y * pw + x + r, 1, st->w, r);
                for (int64_t y = 0; y < h; y++)
                    for (int64_t x = 0; x < w; x++)
                        ref[y * w + x] = t_fir_px(H + (y + r) * w + x, w, st->w, r);
                free(pad);
                free(H);
            } else {
                t_spline(c, w, h, edge, st, ref);
            }
            for (int64_t i = 0; i < w * h; i++)
                cr_assert(memcmp(&L[i], &ref[i], sizeof(float)) == 0,
                          "sigma %g edge %d pixel %lld: %.9g != %.9g", sigmas[si], edge,
                          (long long)i, L[i], ref[i]);
            free(L);
            edge_free(&f);
        }
    free(ref);
    free(c);
}

/* ---- placement, coverage ---------------------------------------------------------------------- */

Test(blur, layer_is_exactly_the_child_rectangle_at_the_offset)
{
    int64_t w = 12, h = 10, pw = 30, ph = 25;
    float *c = child_random(w, h);
    double sigmas[] = {1.5, 9};
    for (int si = 0; si < 2; si++) {
        fixture f;
        edge_init(&f, w, h, sigmas[si], NULL, 0, 0, TSR_EDGE_CLAMP);
        edge_prepare(&f);
        float *whole = render_whole(&f, c);
        f.e.offset[0] = 7;
        f.e.offset[1] = -3;
        float *L = malloc((size_t)(pw * ph) * sizeof *L);
        uint8_t *cov = malloc((size_t)(pw * ph));
        render(&f, c, tsr_rect_make(0, 0, pw, ph), L, cov);
        for (int64_t y = 0; y < ph; y++)
            for (int64_t x = 0; x < pw; x++) {
                int64_t cx = x - 7, cy = y + 3;
                bool in = cx >= 0 && cy >= 0 && cx < w && cy < h;
                cr_assert_eq(cov[y * pw + x], in ? 1 : 0, "(%lld, %lld)", (long long)x, (long long)y);
                if (in)
                    cr_assert(L[y * pw + x] == whole[cy * w + cx]);
                else
                    cr_assert(L[y * pw + x] == 0);
            }
        check_tiles(&f, c, pw, ph, 7);
        check_tiles(&f, c, pw, ph, 4);
        free(L);
        free(cov);
        free(whole);
        edge_free(&f);
    }
    free(c);
}

/* ---- tile invariance ------------------------------------------------------------------------ */

Test(blur, fir_tiles_of_1_7_64_give_identical_floats)
{
    int modes[] = {TSR_EDGE_ZERO, TSR_EDGE_CLAMP, TSR_EDGE_WRAP};
    int64_t w = 83, h = 70;
    float *c = child_random(w, h);
    for (int mi = 0; mi < 3; mi++) {
        fixture f;
        edge_init(&f, w, h, 3.7, NULL, 0, 0, modes[mi]);
        edge_prepare(&f);
        check_tiles(&f, c, w, h, 1);
        check_tiles(&f, c, w, h, 7);
        check_tiles(&f, c, w, h, 64);
        edge_free(&f);
    }
    free(c);
}

Test(blur, spline_tiles_of_1_7_64_give_identical_floats)
{
    int modes[] = {TSR_EDGE_ZERO, TSR_EDGE_CLAMP, TSR_EDGE_WRAP};
    int64_t w = 150, h = 131;
    float *c = child_random(w, h);
    /* values outside [0, 1] too: the fixed point must stay exact there */
    for (int64_t i = 0; i < w * h; i += 17)
        c[i] = (frand() - 0.5f) * 60.0f;
    double sigmas[] = {6.01, 13.3, 32};
    for (int si = 0; si < 3; si++)
        for (int mi = 0; mi < 3; mi++) {
            fixture f;
            edge_init(&f, w, h, sigmas[si], NULL, 0, 0, modes[mi]);
            edge_prepare(&f);
            cr_assert_eq(state_of(&f)->method, TSR_BLUR_SPLINE);
            check_tiles(&f, c, w, h, 7);
            check_tiles(&f, c, w, h, 64);
            check_single_pixels(&f, c, 40);
            edge_free(&f);
        }
    /* every 1x1 tile of a small child on the spline path */
    fixture f;
    edge_init(&f, 40, 33, 7.5, NULL, 0, 0, TSR_EDGE_ZERO);
    edge_prepare(&f);
    check_tiles(&f, c, 40, 33, 1);
    edge_free(&f);
    free(c);
}

Test(blur, spline_at_sigma_256_is_tile_invariant)
{
    int64_t w = 300, h = 260;
    float *c = child_random(w, h);
    int modes[] = {TSR_EDGE_ZERO, TSR_EDGE_WRAP};
    for (int mi = 0; mi < 2; mi++) {
        fixture f;
        edge_init(&f, w, h, 256, NULL, 0, 0, modes[mi]);
        edge_prepare(&f);
        check_tiles(&f, c, w, h, 64);
        check_single_pixels(&f, c, 6);
        edge_free(&f);
    }
    free(c);
}

/* ---- the large-sigma error bound ------------------------------------------------------------ */

/* sum over the 2D grid of the positive part of (a x a - g x g), a and g on [-r, r]: the largest
 * error any child in [0, 1] can produce (both kernels sum to ~1). */
static double
bound_2d(const double *a, const double *g, int64_t r)
{
    int64_t N = 2 * r + 1;
    double pos = 0, neg = 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < N; j++) {
            double d = a[i] * a[j] - g[i] * g[j];
            if (d > 0)
                pos += d;
            else
                neg -= d;
        }
    return pos > neg ? pos : neg;
}

static void
gauss(double s, int64_t r, double *g)
{
    double sum = 0;
    for (int64_t k = -r; k <= r; k++)
        sum += g[k + r] = exp(-(double)(k * k) / (2 * s * s));
    for (int64_t k = 0; k <= 2 * r; k++)
        g[k] /= sum;
}

Test(blur, spline_worst_case_error_is_within_2e_3_for_all_sigma, .timeout = 120)
{
    double sig[200];
    int ns = 0;
    sig[ns++] = TSR_BLUR_FIR_SIGMA_MAX + 1e-9;
    sig[ns++] = TSR_BLUR_FIR_SIGMA_MAX + 0.01;
    for (double s = TSR_BLUR_FIR_SIGMA_MAX * 1.013; s < 256; s *= 1.045)
        sig[ns++] = s;
    sig[ns++] = 255.9;
    sig[ns++] = 256;
    for (int i = 0; i < 12; i++)
        sig[ns++] = 6 + frand() * 250;
    double worst = 0, worst_s = 0, worst_lin = 0;
    for (int i = 0; i < ns; i++) {
        double s = sig[i];
        fixture f;
        edge_init(&f, 10, 10, s, NULL, 0, 0, TSR_EDGE_ZERO);
        edge_prepare(&f);
        const tsr_blur_state *st = state_of(&f);
        cr_assert_eq(st->method, TSR_BLUR_SPLINE, "sigma %g", s);
        int64_t r = (int64_t)ceil(4 * s), N = 2 * r + 1;
        double *a = calloc((size_t)N, sizeof *a), *g = malloc((size_t)N * sizeof *g);
        int64_t R = tsr_blur_spline_kernel(st, a);
        cr_assert(R >= 0 && R <= r, "sigma %g: support %lld > r %lld", s, (long long)R, (long long)r);
        cr_assert_eq(R, st->rx);
        /* centre a on [-r, r] */
        memmove(a + (r - R), a, (size_t)(2 * R + 1) * sizeof *a);
        for (int64_t k = 0; k < r - R; k++)
            a[k] = 0;
        gauss(s, r, g);
        double lin = bound_2d(a, g, r), rb = tsr_blur_spline_round_bound(st);
        double e = lin + rb;
        if (e > worst) {
            worst = e;
            worst_s = s;
            worst_lin = lin;
        }
        cr_assert(e <= 2e-3, "sigma %g: bound %g (kernel %g + rounding %g)", s, e, lin, rb);
        free(a);
        free(g);
        edge_free(&f);
    }
    printf("blur: spline worst-case bound over %d sigmas in (%g, 256]: %.3e at sigma %.3f "
           "(kernel difference %.3e + fixed-point rounding)\n",
           ns, TSR_BLUR_FIR_SIGMA_MAX, worst, worst_s, worst_lin);
}

Test(blur, spline_impulse_response_is_the_reported_kernel)
{
    /* validates tsr_blur_spline_kernel against what layer() computes, support included */
    double sigmas[] = {6.5, 17.2, 40};
    for (int si = 0; si < 3; si++) {
        fixture f;
        double s = sigmas[si];
        int64_t R0 = (int64_t)ceil(4 * s) + 3, w = 2 * R0 + 1;
        edge_init(&f, w, w, s, NULL, 0, 0, TSR_EDGE_ZERO);
        edge_prepare(&f);
        const tsr_blur_state *st = state_of(&f);
        int64_t r = st->r;
        double *a = calloc((size_t)(2 * r + 1), sizeof *a);
        int64_t R = tsr_blur_spline_kernel(st, a);
        float *c = calloc((size_t)(w * w), sizeof *c);
        const float amp = 64;
        c[R0 * w + R0] = amp;
        float *L = render_whole(&f, c);
        double tol = 2 * tsr_blur_spline_round_bound(st) / amp, m = 0;
        for (int64_t y = 0; y < w; y++)
            for (int64_t x = 0; x < w; x++) {
                int64_t dx = x - R0, dy = y - R0;
                double k = (llabs(dx) <= R && llabs(dy) <= R) ? a[dx + R] * a[dy + R] : 0;
                double v = L[y * w + x] / amp;
                if (llabs(dx) > R || llabs(dy) > R)
                    cr_assert(L[y * w + x] == 0, "sigma %g: non-zero outside the support", s);
                if (fabs(v - k) > m)
                    m = fabs(v - k);
            }
        cr_assert(m <= tol, "sigma %g: impulse response off by %g (tol %g)", s, m, tol);
        free(a);
        free(c);
        free(L);
        edge_free(&f);
    }
}

/* The child that makes the spline's error at one pixel largest: 1 where the kernel difference
 * is positive. */
static double
adversarial_error(double s)
{
    fixture f;
    int64_t r = (int64_t)ceil(4 * s), w = 2 * r + 1;
    edge_init(&f, w, w, s, NULL, 0, 0, TSR_EDGE_ZERO);
    edge_prepare(&f);
    double *a = calloc((size_t)w, sizeof *a), *g = malloc((size_t)w * sizeof *g);
    int64_t R = tsr_blur_spline_kernel(state_of(&f), a);
    memmove(a + (r - R), a, (size_t)(2 * R + 1) * sizeof *a);
    for (int64_t k = 0; k < r - R; k++)
        a[k] = 0;
    gauss(s, r, g);
    float *c = malloc((size_t)(w * w) * sizeof *c);
    for (int64_t y = 0; y < w; y++)
        for (int64_t x = 0; x < w; x++)
            c[y * w + x] = a[x] * a[y] - g[x] * g[y] > 0 ? 1.0f : 0.0f;
    float L;
    uint8_t cov;
    render(&f, c, tsr_rect_make(r, r, 1, 1), &L, &cov);
    double ref;
    ref_gauss(c, w, w, TSR_EDGE_ZERO, s, tsr_rect_make(r, r, 1, 1), &ref);
    free(a);
    free(g);
    free(c);
    edge_free(&f);
    return fabs(L - ref);
}

Test(blur, spline_error_on_random_steps_and_adversarial_children, .timeout = 120)
{
    double worst = 0;
    /* random and step children, every edge mode */
    double sigmas[] = {6.0001, 8, 12.3, 32, 77.7};
    int modes[] = {TSR_EDGE_ZERO, TSR_EDGE_CLAMP, TSR_EDGE_WRAP};
    int64_t w = 96, h = 80;
    float *rnd = child_random(w, h), *step = malloc((size_t)(w * h) * sizeof *step);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            step[y * w + x] = (x > 40) ^ ((x + y) % 37 < 12) ? 1.0f : 0.0f;
    const float *kids[] = {rnd, step};
    for (int si = 0; si < 5; si++)
        for (int mi = 0; mi < 3; mi++)
            for (int ki = 0; ki < 2; ki++) {
                fixture f;
                edge_init(&f, w, h, sigmas[si], NULL, 0, 0, modes[mi]);
                edge_prepare(&f);
                float *L = render_whole(&f, kids[ki]);
                double e = max_err_vs_ref(kids[ki], w, h, modes[mi], sigmas[si], L,
                                          tsr_rect_make(0, 0, w, h));
                cr_assert(e <= 2e-3, "sigma %g mode %d child %d: %g", sigmas[si], modes[mi], ki, e);
                if (e > worst)
                    worst = e;
                free(L);
                edge_free(&f);
            }
    /* sigma 256 on a part of the output */
    fixture f;
    edge_init(&f, 200, 150, 256, NULL, 0, 0, TSR_EDGE_CLAMP);
    edge_prepare(&f);
    float *big = child_random(200, 150);
    for (int64_t i = 0; i < 200 * 150; i++)
        big[i] = (i % 200) < 100 ? big[i] * 0.2f : 1.0f - big[i] * 0.2f;
    float *L = render_whole(&f, big);
    double e = max_err_vs_ref(big, 200, 150, TSR_EDGE_CLAMP, 256, L, tsr_rect_make(90, 60, 20, 12));
    cr_assert(e <= 2e-3, "sigma 256: %g", e);
    if (e > worst)
        worst = e;
    free(L);
    free(big);
    edge_free(&f);
    /* adversarial children */
    double adv[] = {6.0001, 9.7, 25, 64};
    for (int i = 0; i < 4; i++) {
        double a = adversarial_error(adv[i]);
        cr_assert(a <= 2e-3, "sigma %g adversarial: %g", adv[i], a);
        if (a > worst)
            worst = a;
    }
    printf("blur: spline max |error| on random, step and adversarial children: %.3e\n", worst);
    free(rnd);
    free(step);
}

Test(blur, spline_survives_non_finite_and_huge_values)
{
    int64_t w = 40, h = 40;
    float *c = child_random(w, h);
    c[5] = INFINITY;
    c[100] = -INFINITY;
    c[300] = NAN;
    c[500] = 1e30f;
    c[700] = -1e30f;
    fixture f;
    edge_init(&f, w, h, 10, NULL, 0, 0, TSR_EDGE_WRAP);
    edge_prepare(&f);
    check_tiles(&f, c, w, h, 7);
    float *L = render_whole(&f, c);
    for (int64_t i = 0; i < w * h; i++)
        cr_assert(isfinite(L[i]));
    free(L);
    edge_free(&f);
    free(c);
}

Test(blur, scratch_covers_what_layer_allocates)
{
    fixture f;
    edge_init(&f, 1000, 1000, 32, NULL, 0, 0, TSR_EDGE_ZERO);
    edge_prepare(&f);
    size_t s = tsr_trait_blur.scratch(&f.e, 512, 512);
    int64_t R = state_of(&f)->rx;
    /* at least the vertical pass's int32 rows */
    cr_assert(s >= (size_t)(512 * (512 + 2 * R) * 4));
    cr_assert(s < (size_t)64 << 20);
    edge_free(&f);
    edge_init(&f, 1000, 1000, 2, NULL, 0, 0, TSR_EDGE_ZERO);
    edge_prepare(&f);
    s = tsr_trait_blur.scratch(&f.e, 512, 512);
    cr_assert(s >= (size_t)(512 * (512 + 16) * 4));
    edge_free(&f);
}

Test(blur, prepare_is_idempotent_and_layer_works_without_it)
{
    int64_t w = 30, h = 20;
    float *c = child_random(w, h);
    fixture f, g;
    edge_init(&f, w, h, 11, NULL, 0, 0, TSR_EDGE_CLAMP);
    edge_prepare(&f);
    const void *st = f.e.state;
    edge_prepare(&f);
    cr_assert_eq(f.e.state, st);
    float *a = render_whole(&f, c);
    edge_init(&g, w, h, 11, NULL, 0, 0, TSR_EDGE_CLAMP);
    float *b = render_whole(&g, c);
    cr_assert(memcmp(a, b, (size_t)(w * h) * sizeof *a) == 0);
    free(a);
    free(b);
    edge_free(&f);
    edge_free(&g);
    free(c);
}
