/* The GPU kernels' arithmetic on the host: gpu/blur_math.h and gpu/distance_math.h run here,
 * work item by work item in the stage order of gpu/blur.cu and gpu/distance.cu, and must give
 * the CPU reference's layer (nodes/blur.c, nodes/distance.c) bit for bit (docs/format.md §9.3). The
 * device test then only has to prove the plumbing. No GPU needed.
 *
 * Each emulation reads the child from one buffer holding the bounding box of need()'s rects
 * (allocated to exactly that, so a read outside is a heap overflow under the sanitizers) or the
 * whole child, as the engine may pass either; its scratch starts as garbage, so a value read
 * before it is written shows. */
#include "gpu/blur_math.h"
#include "gpu/distance_math.h"
#include "nodes/blur_int.h"
#include "nodes/nodes.h"
#include "nodes/params.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const tsr_trait tsr_trait_blur;
extern const tsr_trait tsr_trait_distance;

/* ---- shared helpers ------------------------------------------------------------------------ */

typedef struct fixture {
    tsr_node child;
    tsr_edge e;
} fixture;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

static float
frand(void)
{
    return (float)((rng() >> 8) / 16777216.0);
}

static void *
xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    cr_assert_not_null(p);
    return p;
}

/* Scratch full of garbage: a value read before it is written shows in the comparison. */
static void *
garbage(size_t n)
{
    unsigned char *p = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(0xa5 ^ (i * 131));
    return p;
}

/* The child buffer the engine hands the GPU: `img` (w x h) over rect r (w.r.t. the child). */
static float *
child_buf(const float *img, int64_t w, tsr_rect r)
{
    float *b = xmalloc((size_t)(r.w * r.h) * sizeof *b);
    for (int64_t y = 0; y < r.h; y++)
        memcpy(b + y * r.w, img + (r.y + y) * w + r.x, (size_t)r.w * sizeof *b);
    return b;
}

/* need()'s rects' bounding box, or the whole child when `whole`. */
static tsr_rect
child_rect(const fixture *f, tsr_rect pr, bool whole)
{
    tsr_rect need[TSR_NEED_MAX], bb = tsr_rect_make(0, 0, 0, 0);
    size_t n = f->e.trait->need(&f->e, pr, need);
    cr_assert(n >= 1 && n <= TSR_NEED_MAX);
    for (size_t i = 0; i < n; i++)
        bb = tsr_rect_union(bb, need[i]);
    return whole ? tsr_rect_make(0, 0, f->child.w, f->child.h) : bb;
}

/* The CPU layer over parent rect pr: views are tight copies of need()'s rects. */
static void
cpu_layer(const fixture *f, const float *img, tsr_rect pr, float *L, uint8_t *cov)
{
    tsr_rect need[TSR_NEED_MAX];
    tsr_view v[TSR_NEED_MAX];
    float *bufs[TSR_NEED_MAX];
    size_t n = f->e.trait->need(&f->e, pr, need);
    for (size_t i = 0; i < n; i++) {
        bufs[i] = child_buf(img, f->child.w, need[i]);
        v[i] = (tsr_view){need[i], bufs[i], need[i].w};
    }
    memset(L, 0, (size_t)(pr.w * pr.h) * sizeof *L);
    memset(cov, 0, (size_t)(pr.w * pr.h));
    tsr_error err = {0};
    tsr_status s = f->e.trait->layer(&f->e, pr, v, n, L, cov, &err);
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    cr_assert_eq(s, TSR_OK, "layer: %s", err.msg);
}

static uint32_t
bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The GPU layer (cr.w x cr.h, emulated) against the CPU's over pr, bitwise; returns the number
 * of pixels compared. */
static int64_t
compare(const fixture *f, const float *img, tsr_rect pr, tsr_rect cr, const float *gl,
        const char *what)
{
    float *L = xmalloc((size_t)(pr.w * pr.h) * sizeof *L);
    uint8_t *cov = xmalloc((size_t)(pr.w * pr.h));
    cpu_layer(f, img, pr, L, cov);
    int64_t ox = cr.x + f->e.offset[0] - pr.x, oy = cr.y + f->e.offset[1] - pr.y;
    for (int64_t y = 0; y < cr.h; y++)
        for (int64_t x = 0; x < cr.w; x++) {
            int64_t i = (oy + y) * pr.w + ox + x;
            const float *a = &L[i], *b = &gl[y * cr.w + x];
            cr_assert(cov[i], "%s: pixel (%lld, %lld) of cr not covered by the CPU", what,
                      (long long)x, (long long)y);
            cr_assert(memcmp(a, b, sizeof *a) == 0,
                      "%s: child pixel (%lld, %lld): cpu %.9g (%08x) != gpu %.9g (%08x)", what,
                      (long long)(cr.x + x), (long long)(cr.y + y), *a, bits(*a), *b, bits(*b));
        }
    free(L);
    free(cov);
    return cr.w * cr.h;
}

/* Parent rects over a child placed at (ox, oy): the whole child, odd crops, and rects that
 * hang over the child's borders. */
typedef struct placement {
    int64_t ox, oy;
    tsr_rect pr;
} placement;

static size_t
placements(int64_t w, int64_t h, placement *out)
{
    size_t n = 0;
    out[n++] = (placement){0, 0, tsr_rect_make(0, 0, w, h)};
    out[n++] = (placement){3, -5, tsr_rect_make(7, 1, w / 2 + 1, h / 3 + 2)};
    out[n++] = (placement){-11, 7, tsr_rect_make(-1, 9, w / 3 + 3, h - 3)};
    out[n++] = (placement){5, 4, tsr_rect_make(0, 0, w + 13, h + 9)}; /* the child inside */
    out[n++] = (placement){0, 0, tsr_rect_make(w - 3, h - 2, 9, 7)};  /* a corner */
    out[n++] = (placement){0, 0, tsr_rect_make(w / 2, 1, 1, h - 1)};  /* one column */
    out[n++] = (placement){0, 0, tsr_rect_make(1, h / 2, w - 1, 1)};  /* one row */
    return n;
}

/* ---- blur ------------------------------------------------------------------------------------ */

static void
blur_init(fixture *f, int64_t w, int64_t h, double sigma, const float *k, int64_t kw, int64_t kh,
          int edge)
{
    memset(f, 0, sizeof *f);
    f->child.w = w;
    f->child.h = h;
    f->e.trait = &tsr_trait_blur;
    f->e.child = &f->child;
    f->e.params = xmalloc(tsr_trait_blur.params_size);
    tsr_trait_blur.defaults(f->e.params);
    tsr_blur_params *p = f->e.params;
    p->sigma = sigma;
    if (k) {
        p->kernel.w = kw;
        p->kernel.h = kh;
        p->kernel.k = xmalloc((size_t)(kw * kh) * sizeof(float));
        memcpy(p->kernel.k, k, (size_t)(kw * kh) * sizeof(float));
    }
    p->edge = edge;
    tsr_error err = {0};
    cr_assert_eq(tsr_trait_blur.prepare(&f->e, &err), TSR_OK, "%s", err.msg);
}

static void
blur_free(fixture *f)
{
    tsr_trait_blur.release(&f->e);
    tsr_blur_params *p = f->e.params;
    free(p->kernel.k);
    free(p);
}

/* gpu/blur.cu's launcher, with every launch a loop over its work items. */
static float *
emu_blur(const fixture *f, const float *img, tsr_rect pr, bool whole, tsr_rect *crp)
{
    const tsr_blur_params *p = f->e.params;
    const tsr_blur_state *st = f->e.state;
    tsr_rect cr = tsr_edge_covered(&f->e, pr), cb = child_rect(f, pr, whole);
    float *buf = child_buf(img, f->child.w, cb);
    tsr_bm_src s = {buf, cb.x, cb.y, cb.w, f->child.w, f->child.h, p->edge};
    const int64_t tw = cr.w, th = cr.h;
    float *L = garbage((size_t)(tw * th) * sizeof *L);
    if (st->method == TSR_BLUR_KERNEL) {
        for (int64_t y = 0; y < th; y++)
            for (int64_t x = 0; x < tw; x++)
                tsr_bm_kernel_item(&s, p->kernel.k, p->kernel.w, p->kernel.h, cr.x, cr.y, L, tw,
                                   x, y);
    } else if (st->method == TSR_BLUR_FIR) {
        int64_t r = st->r, nrows = th + 2 * r;
        float *H = garbage((size_t)(tw * nrows) * sizeof *H);
        for (int64_t y = 0; y < nrows; y++)
            for (int64_t x = 0; x < tw; x++)
                tsr_bm_firx_item(&s, st->w, r, cr.x, cr.y, H, tw, x, y);
        for (int64_t y = 0; y < th; y++)
            for (int64_t x = 0; x < tw; x++)
                tsr_bm_firy_item(H, st->w, r, L, tw, x, y);
        free(H);
    } else {
        const int64_t R = st->rx, h = st->h, m = st->m, pw = tw + 2 * R, ph = th + 2 * R;
        int64_t n = ph - (h - 1);
        int32_t *A = garbage((size_t)(pw * n) * sizeof *A);
        int32_t *B = garbage((size_t)(pw * n) * sizeof *B);
        for (int64_t sg = 0; sg < tsr_bm_nseg(n); sg++)
            for (int64_t x = 0; x < pw; x++)
                tsr_bm_ybox1_item(&s, st->lim, cr.x - R, cr.y - R, h, st->inv_h, A, pw, n, x, sg);
        int32_t *in = A, *out = B, *t;
        for (int stage = 1; stage < TSR_BLUR_STAGES; stage++) {
            n -= h - 1;
            for (int64_t sg = 0; sg < tsr_bm_nseg(n); sg++)
                for (int64_t x = 0; x < pw; x++)
                    tsr_bm_box_item(in, out, pw, 1, h, st->inv_h, n, x, sg);
            t = in, in = out, out = t;
        }
        for (int64_t y = 0; y < th; y++)
            for (int64_t x = 0; x < pw; x++)
                tsr_bm_ytaps_item(in, out, pw, h, st->c, m, st->lim, x, y);
        t = in, in = out, out = t;
        int64_t nc = pw;
        for (int stage = 0; stage < TSR_BLUR_STAGES; stage++) {
            nc -= h - 1;
            for (int64_t y = 0; y < th; y++)
                for (int64_t sg = 0; sg < tsr_bm_nseg(nc); sg++)
                    tsr_bm_box_item(in, out, 1, pw, h, st->inv_h, nc, y, sg);
            t = in, in = out, out = t;
        }
        for (int64_t y = 0; y < th; y++)
            for (int64_t x = 0; x < tw; x++)
                tsr_bm_xtaps_item(in, L, pw, tw, h, st->cq, m, x, y);
        free(A);
        free(B);
    }
    free(buf);
    *crp = cr;
    return L;
}

/* Random values in [0, 1) with some beyond it (negative, large). */
static float *
blur_child(int64_t w, int64_t h)
{
    float *c = xmalloc((size_t)(w * h) * sizeof *c);
    for (int64_t i = 0; i < w * h; i++) {
        uint32_t r = rng() % 50;
        c[i] = r == 0 ? -3.5f * frand() : r == 1 ? 40.0f * frand() : frand();
    }
    return c;
}

/* The kernels' emulation of a layer over parent rect pr: L over *crp (malloc'd). */
typedef float *(*emu_fn)(const fixture *f, const float *img, tsr_rect pr, bool whole,
                         tsr_rect *crp);

/* Every placement, both child buffers (need()'s bounding box, the whole child), compared with
 * the CPU layer: returns the pixels compared. `reaches`: every placement covers something. */
static int64_t
all_placements(fixture *f, const float *img, const char *what, emu_fn emu, bool reaches)
{
    placement pl[16];
    size_t np = placements(f->child.w, f->child.h, pl);
    int64_t total = 0;
    for (size_t i = 0; i < np; i++)
        for (int whole = 0; whole < 2; whole++) {
            f->e.offset[0] = pl[i].ox;
            f->e.offset[1] = pl[i].oy;
            tsr_rect cr;
            float *L = emu(f, img, pl[i].pr, whole, &cr);
            char msg[160];
            snprintf(msg, sizeof msg, "%s placement %zu whole %d", what, i, whole);
            cr_assert(!reaches || !tsr_rect_empty(cr), "%s: empty", msg);
            total += compare(f, img, pl[i].pr, cr, L, msg);
            free(L);
        }
    f->e.offset[0] = f->e.offset[1] = 0;
    return total;
}

static int64_t
blur_all_placements(fixture *f, const float *img, const char *what)
{
    return all_placements(f, img, what, emu_blur, true);
}

Test(gpu_math, blur_fir_equals_the_cpu_bitwise_in_every_edge_mode)
{
    static const double sigmas[] = {0.3, 0.75, 1.1, 2.5, 4.2, 6.0};
    int64_t total = 0, cases = 0;
    for (size_t si = 0; si < sizeof sigmas / sizeof *sigmas; si++)
        for (int edge = 0; edge < 3; edge++) {
            int64_t w = 37 + (int64_t)si * 5, h = 29 + (int64_t)si * 3;
            float *img = blur_child(w, h);
            fixture f;
            blur_init(&f, w, h, sigmas[si], NULL, 0, 0, edge);
            cr_assert_eq(((const tsr_blur_state *)f.e.state)->method, TSR_BLUR_FIR);
            char what[64];
            snprintf(what, sizeof what, "fir sigma %g edge %d", sigmas[si], edge);
            total += blur_all_placements(&f, img, what);
            cases++;
            blur_free(&f);
            free(img);
        }
    printf("gpu_math: fir: %lld configurations, %lld pixels bitwise equal\n", (long long)cases,
           (long long)total);
}

Test(gpu_math, blur_spline_equals_the_cpu_bitwise_in_every_edge_mode, .timeout = 300)
{
    static const double sigmas[] = {6.01, 8, 12.5, 32, 71.3};
    int64_t total = 0, cases = 0;
    for (size_t si = 0; si < sizeof sigmas / sizeof *sigmas; si++)
        for (int edge = 0; edge < 3; edge++) {
            int64_t w = 41 + (int64_t)si * 7, h = 33 + (int64_t)si * 4;
            float *img = blur_child(w, h);
            fixture f;
            blur_init(&f, w, h, sigmas[si], NULL, 0, 0, edge);
            cr_assert_eq(((const tsr_blur_state *)f.e.state)->method, TSR_BLUR_SPLINE);
            char what[64];
            snprintf(what, sizeof what, "spline sigma %g edge %d", sigmas[si], edge);
            total += blur_all_placements(&f, img, what);
            cases++;
            blur_free(&f);
            free(img);
        }
    printf("gpu_math: spline: %lld configurations, %lld pixels bitwise equal\n", (long long)cases,
           (long long)total);
}

Test(gpu_math, blur_spline_equals_the_cpu_on_non_finite_and_huge_values)
{
    int64_t w = 60, h = 47;
    float *img = blur_child(w, h);
    img[5] = INFINITY;
    img[100] = -INFINITY;
    img[300] = NAN;
    img[500] = 1e30f;
    img[700] = -1e30f;
    img[w * h - 1] = 3e9f;
    /* large values everywhere: int32 tap pairs beyond 2^24, where converting each term
     * apart would round differently, and the clamp to +-lim on many pixels */
    float *big = xmalloc((size_t)(w * h) * sizeof *big);
    for (int64_t i = 0; i < w * h; i++)
        big[i] = (frand() - 0.25f) * (rng() % 4 == 0 ? 40000.0f : 3000.0f);
    /* and large but below the clamp (|v| 2^16 < lim for these sigmas), so they reach L */
    float *smooth = xmalloc((size_t)(w * h) * sizeof *smooth);
    for (int64_t i = 0; i < w * h; i++)
        smooth[i] = 1500.0f + frand();
    for (int edge = 0; edge < 3; edge++)
        for (int i = 0; i < 2; i++) {
            fixture f;
            blur_init(&f, w, h, i ? 13.5 : 10, NULL, 0, 0, edge);
            blur_all_placements(&f, img, "spline non-finite");
            blur_all_placements(&f, big, "spline huge");
            blur_all_placements(&f, smooth, "spline large");
            blur_free(&f);
        }
    free(img);
    free(big);
    free(smooth);
}

Test(gpu_math, blur_spline_at_sigma_256_equals_the_cpu, .timeout = 300)
{
    int64_t w = 23, h = 19;
    float *img = blur_child(w, h);
    for (int edge = 0; edge < 3; edge++) {
        fixture f;
        blur_init(&f, w, h, 256, NULL, 0, 0, edge);
        const tsr_blur_state *st = f.e.state;
        cr_assert_eq(st->method, TSR_BLUR_SPLINE);
        tsr_rect cr, pr = tsr_rect_make(3, 2, 17, 11);
        float *L = emu_blur(&f, img, pr, false, &cr);
        compare(&f, img, pr, cr, L, "spline sigma 256");
        free(L);
        blur_free(&f);
    }
    free(img);
}

Test(gpu_math, blur_explicit_kernels_equal_the_cpu_bitwise_in_every_edge_mode)
{
    static const int64_t sizes[][2] = {{1, 63}, {63, 1}, {5, 3}, {3, 5}, {1, 1}, {9, 7}, {3, 3}};
    int64_t total = 0, cases = 0;
    for (size_t ki = 0; ki < sizeof sizes / sizeof *sizes; ki++)
        for (int edge = 0; edge < 3; edge++) {
            int64_t kw = sizes[ki][0], kh = sizes[ki][1];
            float *k = xmalloc((size_t)(kw * kh) * sizeof *k);
            for (int64_t i = 0; i < kw * kh; i++)
                k[i] = (frand() - 0.3f) * 0.37f;
            int64_t w = 40 + (int64_t)ki * 3, h = 31 + (int64_t)ki;
            float *img = blur_child(w, h);
            fixture f;
            blur_init(&f, w, h, 0, k, kw, kh, edge);
            cr_assert_eq(((const tsr_blur_state *)f.e.state)->method, TSR_BLUR_KERNEL);
            char what[64];
            snprintf(what, sizeof what, "kernel %lldx%lld edge %d", (long long)kw, (long long)kh,
                     edge);
            total += blur_all_placements(&f, img, what);
            cases++;
            blur_free(&f);
            free(img);
            free(k);
        }
    printf("gpu_math: kernel: %lld configurations, %lld pixels bitwise equal\n",
           (long long)cases, (long long)total);
}

Test(gpu_math, blur_wraps_a_child_smaller_than_the_halo)
{
    /* the window wraps around the child several times */
    int64_t w = 5, h = 3;
    float *img = blur_child(w, h);
    static const double sigmas[] = {2.5, 9, 30};
    for (size_t i = 0; i < 3; i++)
        for (int edge = 0; edge < 3; edge++) {
            fixture f;
            blur_init(&f, w, h, sigmas[i], NULL, 0, 0, edge);
            tsr_rect cr, pr = tsr_rect_make(0, 0, w, h);
            for (int whole = 0; whole < 2; whole++) {
                float *L = emu_blur(&f, img, pr, whole, &cr);
                compare(&f, img, pr, cr, L, "small child");
                free(L);
            }
            blur_free(&f);
        }
    float k[7 * 9];
    for (int i = 0; i < 63; i++)
        k[i] = frand();
    for (int edge = 0; edge < 3; edge++) {
        fixture f;
        blur_init(&f, w, h, 0, k, 7, 9, edge);
        tsr_rect cr, pr = tsr_rect_make(0, 0, w, h);
        float *L = emu_blur(&f, img, pr, false, &cr);
        compare(&f, img, pr, cr, L, "small child kernel");
        free(L);
        blur_free(&f);
    }
    free(img);
}

/* ---- distance -------------------------------------------------------------------------------- */

static void
dist_init(fixture *f, int64_t w, int64_t h, int64_t dmax, float thr, int profile)
{
    /* the child's pixels are the test's arrays: an image as far as need() can tell */
    static tsr_source unknown = {.kind = TSR_SRC_IMAGE};
    memset(f, 0, sizeof *f);
    f->child.w = w;
    f->child.h = h;
    f->child.source = &unknown;
    f->e.trait = &tsr_trait_distance;
    f->e.child = &f->child;
    f->e.params = xmalloc(tsr_trait_distance.params_size);
    tsr_trait_distance.defaults(f->e.params);
    tsr_distance_params *p = f->e.params;
    p->dmax = dmax;
    p->threshold = thr;
    p->profile.kind = profile == 0 ? TSR_PROFILE_LINEAR : TSR_PROFILE_COSINE;
    if (profile == 2) {
        p->scale = -2.5;
        p->bias = 0.75;
    }
    tsr_error err = {0};
    cr_assert_eq(tsr_trait_distance.prepare(&f->e, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_trait_distance.build(&f->e, &err), TSR_OK, "%s", err.msg); /* the table */
}

static void
dist_free(fixture *f)
{
    tsr_trait_distance.release(&f->e);
    tsr_params_free(tsr_trait_distance.params, tsr_trait_distance.nparams, f->e.params);
    free(f->e.params);
}

/* gpu/distance.cu's launcher, with every launch a loop over its work items; also checks the
 * pruned row scan against the plain one. */
static float *
emu_distance(const fixture *f, const float *img, tsr_rect pr, bool whole, tsr_rect *crp)
{
    const tsr_distance_params *p = f->e.params;
    const tsr_distance_state *st = f->e.state;
    const int32_t dmax = (int32_t)p->dmax;
    tsr_rect cr = tsr_edge_covered(&f->e, pr), hr, cb = child_rect(f, pr, whole);
    cr_assert_eq(f->e.trait->need(&f->e, pr, &hr), 1);
    const int64_t tw = cr.w, th = cr.h, hw = hr.w, nb = (hw + TSR_DM_BLOCK - 1) / TSR_DM_BLOCK;
    const int64_t nseg = (th + tsr_dm_seg_rows(dmax) - 1) / tsr_dm_seg_rows(dmax);
    float *buf = child_buf(img, f->child.w, cb);
    int16_t *G = garbage((size_t)(hw * th) * sizeof *G);
    int16_t *gmin = garbage((size_t)(nb * th) * sizeof *gmin);
    float *L = garbage((size_t)(tw * th) * sizeof *L);
    const float *col = buf + (hr.y - cb.y) * cb.w + (hr.x - cb.x);
    for (int64_t sg = 0; sg < nseg; sg++)
        for (int64_t x = 0; x < hw; x++)
            tsr_dm_column_item(col + x, cb.w, hr.h, cr.y - hr.y, th, p->threshold, dmax, G, hw, x,
                               sg);
    for (int64_t y = 0; y < th; y++)
        for (int64_t b = 0; b < nb; b++)
            tsr_dm_block_item(G, gmin, hw, nb, b, y);
    for (int64_t y = 0; y < th; y++)
        for (int64_t x = 0; x < tw; x++) {
            tsr_dm_pixel_item(G, gmin, hw, nb, cr.x - hr.x, dmax, st->table, L, tw, x, y);
            int32_t a = tsr_dm_row(G + y * hw, hw, cr.x - hr.x + x, dmax);
            cr_assert(memcmp(&L[y * tw + x], &st->table[a], sizeof(float)) == 0,
                      "pruned and plain row scans differ at (%lld, %lld)", (long long)x,
                      (long long)y);
        }
    free(buf);
    free(G);
    free(gmin);
    *crp = cr;
    return L;
}

/* Values k/16 (some equal to 0.5 exactly), a few NaNs; about `dens` of them > 0.5. */
static float *
dist_child(int64_t w, int64_t h, double dens)
{
    float *img = xmalloc((size_t)(w * h) * sizeof *img);
    for (int64_t i = 0; i < w * h; i++) {
        uint32_t r = rng();
        if (r % 997 == 0)
            img[i] = NAN;
        else if ((double)(r % 100000) < dens * 100000)
            img[i] = (float)(9 + rng() % 8) / 16;
        else
            img[i] = (float)(rng() % 9) / 16;
    }
    return img;
}

static int64_t
dist_all_placements(fixture *f, const float *img, const char *what)
{
    return all_placements(f, img, what, emu_distance, false);
}

Test(gpu_math, distance_equals_the_cpu_bitwise, .timeout = 300)
{
    static const int64_t dmaxes[] = {1, 3, 17, 64, 200};
    static const double dens[] = {0.3, 0.02, 0.0005};
    int64_t total = 0, cases = 0;
    for (size_t di = 0; di < sizeof dmaxes / sizeof *dmaxes; di++)
        for (size_t ni = 0; ni < sizeof dens / sizeof *dens; ni++) {
            int64_t w = 150 + (int64_t)di * 31, h = 97 + (int64_t)ni * 40;
            float *img = dist_child(w, h, dens[ni]);
            fixture f;
            dist_init(&f, w, h, dmaxes[di], 0.5f, (int)((di + ni) % 3));
            char what[64];
            snprintf(what, sizeof what, "dmax %lld density %g", (long long)dmaxes[di], dens[ni]);
            total += dist_all_placements(&f, img, what);
            cases++;
            dist_free(&f);
            free(img);
        }
    printf("gpu_math: distance: %lld configurations, %lld pixels bitwise equal\n",
           (long long)cases, (long long)total);
}

Test(gpu_math, distance_thresholds_and_empty_or_full_masks_equal_the_cpu)
{
    /* threshold: everything / nothing / exactly the k/16 values; NaN never a mask pixel */
    static const float thr[] = {0.5f, 0.0f, -1.0f, 2.0f, 0.5625f, 0.4375f};
    int64_t w = 70, h = 55;
    float *img = dist_child(w, h, 0.1);
    for (size_t ti = 0; ti < sizeof thr / sizeof *thr; ti++)
        for (int dm = 0; dm < 3; dm++) {
            static const int64_t dmaxes[] = {1, 9, 64};
            fixture f;
            dist_init(&f, w, h, dmaxes[dm], thr[ti], dm);
            char what[64];
            snprintf(what, sizeof what, "threshold %g dmax %lld", thr[ti], (long long)dmaxes[dm]);
            dist_all_placements(&f, img, what);
            dist_free(&f);
        }
    free(img);
}

Test(gpu_math, distance_masks_at_the_borders_equal_the_cpu)
{
    /* mask pixels only on the child's border rows and columns, and single corner pixels */
    int64_t w = 90, h = 66;
    float *img = xmalloc((size_t)(w * h) * sizeof *img);
    for (int pattern = 0; pattern < 4; pattern++) {
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                bool m;
                switch (pattern) {
                case 0: m = x == 0 || y == 0 || x == w - 1 || y == h - 1; break;
                case 1: m = (x == 0 && y == 0) || (x == w - 1 && y == h - 1); break;
                case 2: m = (x == w - 1 && y % 17 == 3) || (y == 0 && x % 23 == 5); break;
                default: m = x == w / 2 && y == h / 2; break;
                }
                img[y * w + x] = m ? 1.0f : 0.0f;
            }
        static const int64_t dmaxes[] = {1, 3, 17, 64, 4096};
        for (int dm = 0; dm < 5; dm++) {
            fixture f;
            dist_init(&f, w, h, dmaxes[dm], 0.5f, dm % 3);
            char what[64];
            snprintf(what, sizeof what, "border pattern %d dmax %lld", pattern,
                     (long long)dmaxes[dm]);
            dist_all_placements(&f, img, what);
            dist_free(&f);
        }
    }
    free(img);
}

Test(gpu_math, distance_segments_and_blocks_cross_tall_and_wide_rects)
{
    /* taller than several column segments (64 rows at dmax <= 64), wider than many blocks
     * and than the CPU's column chunks (2048) */
    int64_t w = 2300, h = 300;
    float *img = dist_child(w, h, 0.0002);
    static const int64_t dmaxes[] = {2, 40, 130};
    for (int dm = 0; dm < 3; dm++) {
        fixture f;
        dist_init(&f, w, h, dmaxes[dm], 0.5f, 0);
        tsr_rect cr, prs[] = {tsr_rect_make(0, 0, w, h), tsr_rect_make(33, 65, 2101, 129)};
        for (int i = 0; i < 2; i++) {
            float *L = emu_distance(&f, img, prs[i], false, &cr);
            compare(&f, img, prs[i], cr, L, "tall and wide");
            free(L);
        }
        dist_free(&f);
    }
    free(img);
}

Test(gpu_math, distance_over_a_box_of_seeds_away_from_the_output_equals_the_cpu, .timeout = 300)
{
    /* a child of fill 0 whose seeds are pattern edges: need() reads only their box, which the
     * output rows and columns may lie beside, above, below or across */
    extern const tsr_trait tsr_trait_pattern;
    static const int64_t xy[][2] = {{3, 70}, {4, 70}, {61, 12}, {140, 91}, {100, 40}};
    static const int64_t dmaxes[] = {1, 5, 40, 130, 4096};
    int64_t w = 150, h = 97, total = 0;
    for (int ns = 1; ns <= 5; ns += 2)
        for (int dm = 0; dm < 5; dm++) {
            fixture f;
            dist_init(&f, w, h, dmaxes[dm], 0.5f, dm % 3);
            tsr_node seed = {.w = 1, .h = 1, .fill = 1.0f};
            tsr_edge edges[5];
            memset(edges, 0, sizeof edges);
            float *img = calloc((size_t)(w * h), sizeof *img);
            cr_assert_not_null(img);
            for (int i = 0; i < ns; i++) {
                edges[i].trait = &tsr_trait_pattern;
                edges[i].child = &seed;
                edges[i].offset[0] = xy[i][0];
                edges[i].offset[1] = xy[i][1];
                img[xy[i][1] * w + xy[i][0]] = 1.0f;
            }
            f.child.source = NULL;
            f.child.edges = edges;
            f.child.nedges = (size_t)ns;
            char what[64];
            snprintf(what, sizeof what, "%d seeds dmax %lld", ns, (long long)dmaxes[dm]);
            total += dist_all_placements(&f, img, what);
            tsr_rect cr, pr = tsr_rect_make(0, 0, w, h), hr;
            cr_assert_eq(f.e.trait->need(&f.e, tsr_rect_make(0, 0, 20, 20), &hr), 1);
            cr_assert(ns > 1 || hr.w * hr.h == 1, "%s: read more than the seed", what);
            float *L = emu_distance(&f, img, pr, false, &cr);
            total += compare(&f, img, pr, cr, L, what);
            free(L);
            free(img);
            dist_free(&f);
        }
    printf("gpu_math: distance over seed boxes: %lld pixels bitwise equal\n", (long long)total);
}
