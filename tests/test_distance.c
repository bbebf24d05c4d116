/* distance trait: the exact transform against a brute-force reference, the table against the
 * profile formulas of docs/format.md §5, tile-seam invariance, need(), check(). Edges are built by
 * hand and need()/layer() are called directly on views of test arrays. */
#include "nodes/nodes.h"
#include "nodes/params.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const tsr_trait tsr_trait_distance;

/* ---- fixtures ------------------------------------------------------------------------ */

typedef struct fixture {
    tsr_node child;
    tsr_edge e;
} fixture;

static tsr_distance_params *
P(fixture *fx)
{
    return fx->e.params;
}

/* An edge with default parameters and `dmax`; the caller adjusts, then calls fx_prepare. */
static void
fx_init(fixture *fx, int64_t w, int64_t h, int64_t dmax)
{
    /* the child's pixels are the test's arrays: as far as its structure says, they are an
     * image, so the mask may be anywhere (a shape or a fill would let need() read less) */
    static tsr_source unknown = {.kind = TSR_SRC_IMAGE};
    memset(fx, 0, sizeof *fx);
    fx->child.w = w;
    fx->child.h = h;
    fx->child.source = &unknown;
    fx->e.trait = &tsr_trait_distance;
    fx->e.child = &fx->child;
    fx->e.params = malloc(tsr_trait_distance.params_size);
    cr_assert_not_null(fx->e.params);
    tsr_trait_distance.defaults(fx->e.params);
    P(fx)->dmax = dmax;
}

/* Points profile from a flat list d0, z0, d1, z1, ...; owned by the params. */
static void
fx_points(fixture *fx, size_t n, const double *dz)
{
    tsr_profile *f = &P(fx)->profile;
    free(f->pts.p);
    f->kind = TSR_PROFILE_POINTS;
    f->pts.n = n;
    f->pts.p = n ? malloc(n * sizeof *f->pts.p) : NULL;
    for (size_t i = 0; i < n; i++) {
        f->pts.p[i][0] = dz[2 * i];
        f->pts.p[i][1] = dz[2 * i + 1];
    }
}

static void
fx_prepare(fixture *fx)
{
    tsr_error err = {0};
    cr_assert_eq(tsr_trait_distance.prepare(&fx->e, &err), TSR_OK, "prepare: %s", err.msg);
    cr_assert_eq(tsr_trait_distance.build(&fx->e, &err), TSR_OK, "build: %s", err.msg);
    cr_assert_not_null(fx->e.state);
}

static void
fx_free(fixture *fx)
{
    tsr_trait_distance.release(&fx->e);
    cr_assert_null(fx->e.state);
    tsr_params_free(tsr_trait_distance.params, tsr_trait_distance.nparams, fx->e.params);
    cr_assert_null(P(fx)->profile.pts.p);
    free(fx->e.params);
}

static const float *
table_of(const fixture *fx)
{
    return ((const tsr_distance_state *)fx->e.state)->table;
}

/* Deterministic generator, so a failure reproduces. */
static uint64_t rng_state;

static uint32_t
rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Values k/16 (so some equal the threshold exactly) and a few NaNs, mask density about
 * `dens` for threshold 0.5. */
static float *
random_child(int64_t w, int64_t h, double dens)
{
    float *img = malloc((size_t)(w * h) * sizeof *img);
    cr_assert_not_null(img);
    for (int64_t i = 0; i < w * h; i++) {
        uint32_t r = rng();
        if (r % 997 == 0)
            img[i] = NAN;
        else if ((double)(r % 100000) < dens * 100000)
            img[i] = (float)(9 + rng() % 8) / 16; /* 0.5625..1: > 0.5 */
        else
            img[i] = (float)(rng() % 9) / 16; /* 0..0.5: not > 0.5 */
    }
    return img;
}

/* Run need() and layer() for parent rect pr over the child image `img` (w x h, stride w).
 * Each needed rect is copied into a tight buffer of its own so a read outside it is a heap
 * overflow that the sanitizers see. L and cov are pr.w x pr.h and are not cleared here. */
static void
render(const fixture *fx, const float *img, tsr_rect pr, float *L, uint8_t *cov)
{
    const tsr_trait *t = &tsr_trait_distance;
    tsr_rect rects[TSR_NEED_MAX];
    tsr_view views[TSR_NEED_MAX];
    float *bufs[TSR_NEED_MAX] = {0};
    size_t n = t->need(&fx->e, pr, rects);
    cr_assert_leq(n, 1);
    for (size_t i = 0; i < n; i++) {
        tsr_rect r = rects[i];
        cr_assert(!tsr_rect_empty(r));
        cr_assert(tsr_rect_contains(tsr_rect_make(0, 0, fx->child.w, fx->child.h), r));
        bufs[i] = malloc((size_t)(r.w * r.h) * sizeof(float));
        cr_assert_not_null(bufs[i]);
        for (int64_t y = 0; y < r.h; y++)
            memcpy(bufs[i] + y * r.w, img + (r.y + y) * fx->child.w + r.x,
                   (size_t)r.w * sizeof(float));
        views[i] = (tsr_view){r, bufs[i], r.w};
    }
    tsr_error err = {0};
    cr_assert_eq(t->layer(&fx->e, pr, views, n, L, cov, &err), TSR_OK, "layer: %s", err.msg);
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
}

/* ---- references ---------------------------------------------------------------------- */

/* f(d) written straight from docs/format.md §5, independently of nodes/distance.c. */
static double
ref_f(const tsr_distance_params *p, double d)
{
    double dm = (double)p->dmax;
    const tsr_profile *f = &p->profile;
    switch (f->kind) {
    case TSR_PROFILE_LINEAR: return 1 - d / dm;
    case TSR_PROFILE_SPHERE: return sqrt(1 - (d / dm) * (d / dm));
    case TSR_PROFILE_COSINE: return 0.5 * (1 + cos(M_PI * d / dm));
    case TSR_PROFILE_GAUSSIAN: return exp(-(d * d) / (2 * f->s * f->s));
    case TSR_PROFILE_POINTS: {
        size_t n = f->pts.n;
        if (d < f->pts.p[0][0])
            return f->pts.p[0][1];
        if (d >= f->pts.p[n - 1][0])
            return f->pts.p[n - 1][1];
        for (size_t i = 0; i + 1 < n; i++) {
            double d0 = f->pts.p[i][0], z0 = f->pts.p[i][1];
            double d1 = f->pts.p[i + 1][0], z1 = f->pts.p[i + 1][1];
            if (d0 <= d && d < d1)
                return z0 + (z1 - z0) * ((d - d0) / (d1 - d0));
        }
        cr_assert_fail("points: no segment for d = %g", d);
    }
    }
    cr_assert_fail("unknown profile");
    return 0;
}

static float
ref_table(const tsr_distance_params *p, int64_t a)
{
    return (float)(p->bias + p->scale * ref_f(p, sqrt((double)a)));
}

/* The whole child by brute force: every pixel against every mask pixel of the child. */
static float *
ref_layer(const fixture *fx, const float *img)
{
    const tsr_distance_params *p = fx->e.params;
    int64_t w = fx->child.w, h = fx->child.h, d2 = p->dmax * p->dmax;
    int64_t *mx = malloc((size_t)(w * h) * sizeof *mx), *my = malloc((size_t)(w * h) * sizeof *my);
    float *out = malloc((size_t)(w * h) * sizeof *out);
    cr_assert(mx && my && out);
    int64_t nm = 0;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++)
            if (img[y * w + x] > p->threshold) {
                mx[nm] = x;
                my[nm] = y;
                nm++;
            }
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            int64_t best = d2;
            for (int64_t i = 0; i < nm; i++) {
                int64_t dx = mx[i] - x, dy = my[i] - y, a = dx * dx + dy * dy;
                if (a < best)
                    best = a;
            }
            out[y * w + x] = best < ((const tsr_distance_state *)fx->e.state)->ntable
                                 ? table_of(fx)[best]
                                 : ref_table(p, best);
        }
    free(mx);
    free(my);
    return out;
}

/* Bitwise float equality (NaN-safe, tells -0 from 0). */
static bool
same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* ---- profiles used across tests --------------------------------------------------------- */

enum { NPROFILES = 9 };

/* Profile number i (0..NPROFILES-1) on the fixture, with a few scale/bias pairs mixed in. */
static void
set_profile(fixture *fx, int i)
{
    static const double mono[] = {0, 1, 3, 0.25, 9, 0};
    static const double wiggle[] = {0.5, 0.2, 1, 1, 1.5, -0.5, 2.75, 0.8, 6, 0.3};
    static const double one[] = {2, 0.7};
    static const double late[] = {100, 0, 200, 1}; /* beyond every dmax used: all z0 */
    tsr_distance_params *p = P(fx);
    switch (i) {
    case 0: p->profile.kind = TSR_PROFILE_LINEAR; break;
    case 1: p->profile.kind = TSR_PROFILE_SPHERE; break;
    case 2: p->profile.kind = TSR_PROFILE_COSINE; break;
    case 3: p->profile.kind = TSR_PROFILE_GAUSSIAN, p->profile.s = 3.7; break;
    case 4: fx_points(fx, 3, mono); break;
    case 5: fx_points(fx, 5, wiggle); break;
    case 6: fx_points(fx, 1, one); break;
    case 7: fx_points(fx, 2, late); break;
    default: p->profile.kind = TSR_PROFILE_GAUSSIAN, p->profile.s = 0.01; break;
    }
    if (i % 3 == 1) {
        p->scale = -2.5;
        p->bias = 0.75;
    } else if (i % 3 == 2) {
        p->scale = 0.1;
        p->bias = 1e-3;
    }
}

/* ---- parameter table and defaults -------------------------------------------------------- */

Test(distance, parameter_table_lists_the_keys_of_the_design)
{
    const tsr_trait *t = &tsr_trait_distance;
    static const char *const keys[] = {"threshold", "dmax", "profile", "scale", "bias"};
    static const tsr_ptype types[] = {TSR_P_F32, TSR_P_INT, TSR_P_PROFILE, TSR_P_F64, TSR_P_F64};
    static const size_t offs[] = {
        offsetof(tsr_distance_params, threshold), offsetof(tsr_distance_params, dmax),
        offsetof(tsr_distance_params, profile), offsetof(tsr_distance_params, scale),
        offsetof(tsr_distance_params, bias)};
    cr_assert_eq(tsr_trait_find("distance"), t);
    cr_assert_str_eq(t->name, "distance");
    cr_assert_eq(t->nparams, 5);
    cr_assert_eq(t->params_size, sizeof(tsr_distance_params));
    for (size_t i = 0; i < 5; i++) {
        cr_assert_str_eq(t->params[i].key, keys[i]);
        cr_assert_eq(t->params[i].type, types[i], "%s", keys[i]);
        cr_assert_eq(t->params[i].offset, offs[i], "%s", keys[i]);
        cr_assert_not_null(t->params[i].help, "%s", keys[i]);
        cr_assert_eq(!!(t->params[i].flags & TSR_PF_REQUIRED), i == 1, "%s", keys[i]);
    }
    cr_assert(t->params[1].flags & TSR_PF_RANGE);
    cr_assert_eq(t->params[1].min, 1);
    cr_assert_eq(t->params[1].max, 4194304);
    cr_assert_not_null(t->check);
    cr_assert_not_null(t->prepare);
    cr_assert_not_null(t->build);
    cr_assert_not_null(t->build_bytes);
    cr_assert_not_null(t->release);
    cr_assert_not_null(t->scratch);
}

Test(distance, defaults_are_those_of_the_design)
{
    tsr_distance_params p;
    memset(&p, 0xa5, sizeof p);
    tsr_trait_distance.defaults(&p);
    cr_assert_eq(p.threshold, 0.5f);
    cr_assert_eq(p.profile.kind, TSR_PROFILE_LINEAR);
    cr_assert_eq(p.profile.pts.n, 0);
    cr_assert_null(p.profile.pts.p);
    cr_assert_eq(p.scale, 1.0);
    cr_assert_eq(p.bias, 0.0);
}

/* ---- check ------------------------------------------------------------------------------ */

typedef struct recorder {
    tsr_check c;
    int calls;
    char key[64];
    char msg[512];
} recorder;

static tsr_status
record(tsr_check *c, const char *key, const char *msg)
{
    recorder *r = (recorder *)c;
    r->calls++;
    snprintf(r->key, sizeof r->key, "%s", key);
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    return TSR_EINVAL;
}

static tsr_status
run_check(fixture *fx, recorder *r)
{
    memset(r, 0, sizeof *r);
    r->c.fail = record;
    return tsr_trait_distance.check(&fx->e, &r->c);
}

Test(distance, check_accepts_every_good_profile)
{
    for (int i = 0; i < NPROFILES; i++) {
        fixture fx;
        recorder r;
        fx_init(&fx, 10, 10, 7);
        set_profile(&fx, i);
        cr_assert_eq(run_check(&fx, &r), TSR_OK, "profile %d: %s", i, r.msg);
        cr_assert_eq(r.calls, 0);
        fx_free(&fx);
    }
}

Test(distance, check_rejects_bad_profiles_naming_the_key)
{
    static const struct {
        int kind; /* -1: points from dz */
        double s;
        size_t n;
        double dz[6];
        const char *word; /* expected in the message */
    } bad[] = {
        {TSR_PROFILE_GAUSSIAN, 0, 0, {0}, "gaussian"},
        {TSR_PROFILE_GAUSSIAN, -2, 0, {0}, "gaussian"},
        {TSR_PROFILE_GAUSSIAN, NAN, 0, {0}, "gaussian"},
        {-1, 0, 0, {0}, "at least one"},
        {-1, 0, 2, {-1, 0, 3, 1}, "d0"},
        {-1, 0, 3, {0, 0, 2, 1, 2, 0}, "strictly increasing"},
        {-1, 0, 3, {0, 0, 3, 1, 2, 0}, "strictly increasing"},
        {-1, 0, 2, {NAN, 0, 3, 1}, "d0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fixture fx;
        recorder r;
        fx_init(&fx, 10, 10, 7);
        if (bad[i].kind < 0) {
            fx_points(&fx, bad[i].n, bad[i].dz);
        } else {
            P(&fx)->profile.kind = bad[i].kind;
            P(&fx)->profile.s = bad[i].s;
        }
        cr_assert_eq(run_check(&fx, &r), TSR_EINVAL, "case %zu passed", i);
        cr_assert_eq(r.calls, 1, "case %zu", i);
        cr_assert_str_eq(r.key, "profile", "case %zu", i);
        cr_assert_not_null(strstr(r.msg, bad[i].word), "case %zu: \"%s\"", i, r.msg);
        fx_free(&fx);
    }
}

Test(distance, check_rejects_dmax_out_of_range_naming_the_key)
{
    static const int64_t dmaxes[] = {0, -3, 4194305};
    for (size_t i = 0; i < 3; i++) {
        fixture fx;
        recorder r;
        fx_init(&fx, 10, 10, dmaxes[i]);
        cr_assert_eq(run_check(&fx, &r), TSR_EINVAL);
        cr_assert_str_eq(r.key, "dmax");
        fx_free(&fx);
    }
}

Test(distance, prepare_and_build_refuse_an_unchecked_profile_and_keep_the_table)
{
    fixture fx;
    fx_init(&fx, 10, 10, 3);
    fx.e.where = "d.yaml:4:7: root.children[0]";
    fx_prepare(&fx);
    const void *before = fx.e.state;
    fx_points(&fx, 0, NULL);
    tsr_error err = {0};
    cr_assert_eq(tsr_trait_distance.prepare(&fx.e, &err), TSR_EINVAL);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert_not_null(strstr(err.msg, "d.yaml:4:7: root.children[0]: profile: points"), "%s",
                       err.msg);
    err = (tsr_error){0};
    cr_assert_eq(tsr_trait_distance.build(&fx.e, &err), TSR_EINVAL);
    cr_assert_not_null(strstr(err.msg, "d.yaml:4:7: root.children[0]: profile: points"), "%s",
                       err.msg);
    cr_assert_eq(fx.e.state, before);
    fx.e.where = NULL;
    fx_free(&fx);
}

/* ---- table -------------------------------------------------------------------------------- */

Test(distance, table_follows_the_profile_formulas)
{
    static const int64_t dmaxes[] = {1, 2, 7, 32, 100};
    for (size_t j = 0; j < sizeof dmaxes / sizeof dmaxes[0]; j++)
        for (int i = 0; i < NPROFILES; i++) {
            fixture fx;
            fx_init(&fx, 3, 3, dmaxes[j]);
            set_profile(&fx, i);
            fx_prepare(&fx);
            const tsr_distance_state *st = fx.e.state;
            int64_t d2 = dmaxes[j] * dmaxes[j];
            cr_assert_eq(st->ntable, d2 + 1);
            for (int64_t a = 0; a <= d2; a++) {
                float want = ref_table(fx.e.params, a);
                cr_assert(same_bits(st->table[a], want),
                          "dmax %lld profile %d: table[%lld] = %.9g, want %.9g",
                          (long long)dmaxes[j], i, (long long)a, st->table[a], want);
            }
            fx_free(&fx);
        }
}

Test(distance, table_values_at_known_distances)
{
    fixture fx;
    fx_init(&fx, 3, 3, 4);
    fx_prepare(&fx); /* linear: 1 - d/4 */
    cr_assert_eq(table_of(&fx)[0], 1.0f);
    cr_assert_eq(table_of(&fx)[4], 0.5f);
    cr_assert_eq(table_of(&fx)[9], 0.25f);
    cr_assert_eq(table_of(&fx)[16], 0.0f);

    /* non-monotonic points, scaled and biased: 0.5 + 2 * f */
    static const double tent[] = {0, 0, 2, 1, 4, 0};
    fx_points(&fx, 3, tent);
    P(&fx)->scale = 2;
    P(&fx)->bias = 0.5;
    fx_prepare(&fx); /* a second prepare replaces the table */
    cr_assert_eq(table_of(&fx)[0], 0.5f);
    cr_assert_eq(table_of(&fx)[1], 1.5f);  /* d = 1 */
    cr_assert_eq(table_of(&fx)[4], 2.5f);  /* d = 2, the peak */
    cr_assert_eq(table_of(&fx)[9], 1.5f);  /* d = 3 */
    cr_assert_eq(table_of(&fx)[16], 0.5f); /* d = 4 = dn: z_n */

    P(&fx)->profile.kind = TSR_PROFILE_SPHERE;
    P(&fx)->scale = 1;
    P(&fx)->bias = 0;
    fx_prepare(&fx);
    cr_assert_eq(table_of(&fx)[16], 0.0f); /* sqrt(1 - 1), not NaN */
    cr_assert_eq(table_of(&fx)[0], 1.0f);
    fx_free(&fx);
}

/* ---- need ---------------------------------------------------------------------------------- */

Test(distance, need_is_the_covered_rect_grown_by_dmax_and_clipped)
{
    fixture fx;
    tsr_rect out[TSR_NEED_MAX];
    fx_init(&fx, 100, 80, 7);
    fx.e.offset[0] = 20;
    fx.e.offset[1] = -10;
    /* pr in parent coords; the child occupies parent [20, 120) x [-10, 70) */
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(50, 20, 10, 5), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(23, 23, 24, 19)));
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(0, -50, 30, 45), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(0, 0, 17, 12)));
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(-1000, -1000, 5000, 5000), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(0, 0, 100, 80)));
    /* outside the child rectangle, even within dmax of it: nothing is covered */
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(120, 0, 5, 5), out), 0);
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(20, 70, 5, 5), out), 0);
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(0, 0, 20, 60), out), 0);
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(30, 30, 0, 5), out), 0);
    fx_free(&fx);
}

Test(distance, scratch_is_reported_for_a_tile)
{
    fixture fx;
    fx_init(&fx, 5000, 5000, 32);
    size_t s512 = tsr_trait_distance.scratch(&fx.e, 512, 512);
    size_t s64 = tsr_trait_distance.scratch(&fx.e, 64, 64);
    cr_assert_gt(s512, 0);
    cr_assert_gt(s64, 0);
    cr_assert_leq(s64, s512);
    fx_free(&fx);
}

/* ---- layer ----------------------------------------------------------------------------------- */

/* Render the child placed at (ox, oy) over a parent rect reaching 3 px beyond it on every
 * side; covered pixels must equal the brute force, the others keep their sentinels. */
static void
compare_with_brute_force(fixture *fx, const float *img, int64_t ox, int64_t oy, const char *what)
{
    int64_t w = fx->child.w, h = fx->child.h;
    fx->e.offset[0] = ox;
    fx->e.offset[1] = oy;
    tsr_rect pr = tsr_rect_make(ox - 3, oy - 3, w + 6, h + 6);
    size_t n = (size_t)(pr.w * pr.h);
    float *L = malloc(n * sizeof *L);
    uint8_t *cov = calloc(n, 1);
    cr_assert(L && cov);
    for (size_t i = 0; i < n; i++)
        L[i] = -123.0f;
    render(fx, img, pr, L, cov);
    float *ref = ref_layer(fx, img);
    for (int64_t y = 0; y < pr.h; y++)
        for (int64_t x = 0; x < pr.w; x++) {
            int64_t cx = x - 3, cy = y - 3, i = y * pr.w + x;
            bool in = cx >= 0 && cy >= 0 && cx < w && cy < h;
            if (!in) {
                cr_assert(cov[i] == 0 && L[i] == -123.0f, "%s: (%lld, %lld) outside touched",
                          what, (long long)cx, (long long)cy);
                continue;
            }
            cr_assert_eq(cov[i], 1, "%s: (%lld, %lld) not covered", what, (long long)cx,
                         (long long)cy);
            cr_assert(same_bits(L[i], ref[cy * w + cx]), "%s: at (%lld, %lld): %.9g, want %.9g",
                      what, (long long)cx, (long long)cy, L[i], ref[cy * w + cx]);
        }
    free(ref);
    free(L);
    free(cov);
}

Test(distance, layer_matches_brute_force_on_random_masks)
{
    static const int64_t sizes[][2] = {{1, 1},  {1, 17}, {17, 1},  {5, 3},   {13, 29},
                                       {40, 33}, {70, 61}, {37, 150}, {2100, 3}};
    static const double dens[] = {0.5, 0.05, 0.003, 0.97};
    static const int64_t dmaxes[] = {1, 2, 7, 32};
    int prof = 0;
    rng_state = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t d = 0; d < sizeof dens / sizeof dens[0]; d++)
            for (size_t m = 0; m < sizeof dmaxes / sizeof dmaxes[0]; m++) {
                int64_t w = sizes[s][0], h = sizes[s][1];
                float *img = random_child(w, h, dens[d]);
                fixture fx;
                fx_init(&fx, w, h, dmaxes[m]);
                set_profile(&fx, prof++ % NPROFILES);
                fx_prepare(&fx);
                char what[128];
                snprintf(what, sizeof what, "%lldx%lld density %g dmax %lld",
                         (long long)w, (long long)h, dens[d], (long long)dmaxes[m]);
                compare_with_brute_force(&fx, img, (int64_t)(rng() % 41) - 20,
                                         (int64_t)(rng() % 41) - 20, what);
                fx_free(&fx);
                free(img);
            }
}

/* Large dmax with sparse masks: many pixels lie far from every mask pixel, which is where a
 * bounded search would stop early and where the result must still be exact. */
Test(distance, layer_matches_brute_force_far_from_sparse_masks)
{
    static const int64_t sizes[][2] = {{260, 130}, {97, 301}, {1, 400}};
    static const double dens[] = {0.0004, 0.003, 0.03};
    static const int64_t dmaxes[] = {97, 150, 400};
    int prof = 0;
    rng_state = 5;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t d = 0; d < sizeof dens / sizeof dens[0]; d++)
            for (size_t m = 0; m < sizeof dmaxes / sizeof dmaxes[0]; m++) {
                int64_t w = sizes[s][0], h = sizes[s][1];
                float *img = random_child(w, h, dens[d]);
                img[(h / 2) * w + w / 2] = 1; /* at least one mask pixel */
                fixture fx;
                fx_init(&fx, w, h, dmaxes[m]);
                set_profile(&fx, prof++ % NPROFILES);
                fx_prepare(&fx);
                char what[128];
                snprintf(what, sizeof what, "%lldx%lld density %g dmax %lld",
                         (long long)w, (long long)h, dens[d], (long long)dmaxes[m]);
                compare_with_brute_force(&fx, img, -7, 9, what);
                fx_free(&fx);
                free(img);
            }
}

/* A few points and segments in a large child with dmax in the hundreds: most pixels lie
 * farther than any short search reaches, so the result comes from the full envelope with
 * many parabolas of different heights per row. */
static float *
sparse_child(int64_t w, int64_t h, int points, int segments)
{
    float *img = calloc((size_t)(w * h), sizeof *img);
    cr_assert_not_null(img);
    for (int i = 0; i < points; i++)
        img[(int64_t)(rng() % (uint32_t)h) * w + (int64_t)(rng() % (uint32_t)w)] = 1;
    for (int i = 0; i < segments; i++) {
        int64_t x = rng() % (uint32_t)w, y = rng() % (uint32_t)h, len = 5 + rng() % 60;
        int dx = (int)(rng() % 3) - 1, dy = (int)(rng() % 3) - 1;
        for (int64_t j = 0; j < len && x >= 0 && y >= 0 && x < w && y < h; j++) {
            img[y * w + x] = 0.75f;
            x += dx;
            y += dy;
        }
    }
    return img;
}

Test(distance, layer_matches_brute_force_far_beyond_short_searches)
{
    static const int64_t sizes[][2] = {{400, 300}, {301, 403}, {1100, 9}};
    static const int64_t dmaxes[] = {150, 500};
    static const int shapes[][2] = {{1, 0}, {4, 0}, {12, 3}, {0, 2}};
    int prof = 0;
    rng_state = 13;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t m = 0; m < sizeof dmaxes / sizeof dmaxes[0]; m++)
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
                int64_t w = sizes[s][0], h = sizes[s][1];
                float *img = sparse_child(w, h, shapes[k][0], shapes[k][1]);
                fixture fx;
                fx_init(&fx, w, h, dmaxes[m]);
                set_profile(&fx, prof++ % NPROFILES);
                fx_prepare(&fx);
                char what[128];
                snprintf(what, sizeof what, "%lldx%lld %d points %d segments dmax %lld",
                         (long long)w, (long long)h, shapes[k][0], shapes[k][1],
                         (long long)dmaxes[m]);
                compare_with_brute_force(&fx, img, 3, 2, what);
                fx_free(&fx);
                free(img);
            }
}

Test(distance, threshold_is_a_strict_float_compare)
{
    static const float thr[] = {0.5f, 0.0f, -1.0f, 0.9375f, 1.0f};
    rng_state = 7;
    for (size_t i = 0; i < sizeof thr / sizeof thr[0]; i++) {
        float *img = random_child(31, 23, 0.3);
        fixture fx;
        fx_init(&fx, 31, 23, 5);
        P(&fx)->threshold = thr[i];
        P(&fx)->bias = 0.125; /* so "no mask" and "far" are not 0 */
        fx_prepare(&fx);
        char what[64];
        snprintf(what, sizeof what, "threshold %g", thr[i]);
        compare_with_brute_force(&fx, img, 0, 0, what);
        fx_free(&fx);
        free(img);
    }
}

Test(distance, large_dmax_on_a_small_child_is_exact)
{
    rng_state = 11;
    static const int64_t dmaxes[] = {64, 4096};
    for (size_t i = 0; i < 2; i++) {
        float *img = random_child(45, 38, 0.01);
        fixture fx;
        fx_init(&fx, 45, 38, dmaxes[i]);
        set_profile(&fx, 2);
        fx_prepare(&fx);
        compare_with_brute_force(&fx, img, 1000, -1000, "large dmax");
        fx_free(&fx);
        free(img);
    }
}

Test(distance, no_mask_pixel_gives_the_table_at_dmax_squared)
{
    static const int64_t dmaxes[] = {1, 7, 32};
    for (size_t j = 0; j < 3; j++) {
        int64_t w = 53, h = 41;
        float *img = calloc((size_t)(w * h), sizeof *img);
        cr_assert_not_null(img);
        fixture fx;
        fx_init(&fx, w, h, dmaxes[j]);
        P(&fx)->bias = 0.25;
        P(&fx)->scale = 3;
        fx_prepare(&fx);
        float far = table_of(&fx)[dmaxes[j] * dmaxes[j]];
        cr_assert_eq(far, 0.25f);
        float *L = malloc((size_t)(w * h) * sizeof *L);
        uint8_t *cov = calloc((size_t)(w * h), 1);
        cr_assert(L && cov);
        render(&fx, img, tsr_rect_make(0, 0, w, h), L, cov);
        for (int64_t i = 0; i < w * h; i++)
            cr_assert(cov[i] == 1 && same_bits(L[i], far), "dmax %lld at %lld: %g",
                      (long long)dmaxes[j], (long long)i, L[i]);

        /* one mask pixel: exactly table[dx^2 + dy^2] inside dmax, table[dmax^2] beyond */
        img[20 * w + 30] = 1;
        render(&fx, img, tsr_rect_make(0, 0, w, h), L, cov);
        int64_t d2 = dmaxes[j] * dmaxes[j];
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++) {
                int64_t a = (x - 30) * (x - 30) + (y - 20) * (y - 20);
                float want = table_of(&fx)[a < d2 ? a : d2];
                cr_assert(same_bits(L[y * w + x], want), "(%lld, %lld)", (long long)x,
                          (long long)y);
            }
        free(L);
        free(cov);
        free(img);
        fx_free(&fx);
    }
}

/* The parent is tiled by T x T from its origin; every tile asks need() for its own halo and
 * must reproduce the full render bit for bit. */
static void
compare_tiled(fixture *fx, const float *img, int64_t T, const float *full, tsr_rect pr_full,
              tsr_rect only)
{
    tsr_grid g = tsr_grid_make(pr_full.w, pr_full.h, T);
    float *L = malloc((size_t)(T * T) * sizeof *L);
    uint8_t *cov = malloc((size_t)(T * T));
    cr_assert(L && cov);
    int64_t tx0, ty0, tx1, ty1; /* only the tiles meeting `only` (pr_full-relative) */
    tsr_grid_tiles_of(&g, only, &tx0, &ty0, &tx1, &ty1);
    for (int64_t ty = ty0; ty < ty1; ty++)
        for (int64_t tx = tx0; tx < tx1; tx++) {
            tsr_rect tr = tsr_grid_tile_rect(&g, tx, ty);
            tsr_rect pr = tsr_rect_shift(tr, pr_full.x, pr_full.y);
            memset(cov, 0, (size_t)(T * T));
            render(fx, img, pr, L, cov);
            for (int64_t y = 0; y < pr.h; y++)
                for (int64_t x = 0; x < pr.w; x++) {
                    int64_t fi = (tr.y + y) * pr_full.w + tr.x + x;
                    int64_t ti = y * pr.w + x;
                    int64_t cx = pr.x + x - fx->e.offset[0], cy = pr.y + y - fx->e.offset[1];
                    bool in = cx >= 0 && cy >= 0 && cx < fx->child.w && cy < fx->child.h;
                    cr_assert_eq(cov[ti], in, "T %lld: cov at parent (%lld, %lld)",
                                 (long long)T, (long long)(pr.x + x), (long long)(pr.y + y));
                    if (in)
                        cr_assert(same_bits(L[ti], full[fi]),
                                  "T %lld: parent (%lld, %lld): %.9g, full %.9g", (long long)T,
                                  (long long)(pr.x + x), (long long)(pr.y + y), L[ti], full[fi]);
                }
        }
    free(L);
    free(cov);
}

Test(distance, tiles_of_1_7_64_give_the_same_floats_as_the_whole)
{
    static const int64_t dmaxes[] = {2, 7, 32, 100};
    static const double dens[] = {0.001, 0.02, 0.4};
    rng_state = 3;
    for (size_t j = 0; j < sizeof dmaxes / sizeof dmaxes[0]; j++)
        for (size_t d = 0; d < sizeof dens / sizeof dens[0]; d++) {
            /* big enough for pixels farther than any window from the mask at dmax 100 */
            int64_t w = dmaxes[j] > 32 ? 131 : 150, h = dmaxes[j] > 32 ? 117 : 131;
            float *img = random_child(w, h, dens[d]);
            img[3 * w + 4] = 1;
            fixture fx;
            fx_init(&fx, w, h, dmaxes[j]);
            set_profile(&fx, 5);
            fx_prepare(&fx);
            fx.e.offset[0] = 5;
            fx.e.offset[1] = -3;
            /* a parent region reaching past the child on the right and bottom */
            tsr_rect pr_full = tsr_rect_make(0, 0, w + 13, h + 2);
            size_t n = (size_t)(pr_full.w * pr_full.h);
            float *full = malloc(n * sizeof *full);
            uint8_t *cov = calloc(n, 1);
            cr_assert(full && cov);
            render(&fx, img, pr_full, full, cov);
            static const int64_t Ts[] = {1, 7, 64};
            for (size_t t = 0; t < 3; t++)
                compare_tiled(&fx, img, Ts[t], full, pr_full,
                              tsr_rect_make(0, 0, pr_full.w, pr_full.h));
            free(full);
            free(cov);
            fx_free(&fx);
            free(img);
        }
}

/* The same where distances run to the hundreds: tiles of 7 and 64 everywhere, tiles of 1 over
 * a strip crossing the child's edges (each of those needs almost the whole child). */
Test(distance, tiles_give_the_same_floats_far_from_sparse_masks)
{
    static const int64_t dmaxes[] = {150, 400};
    rng_state = 17;
    for (size_t j = 0; j < 2; j++) {
        int64_t w = 230, h = 190;
        float *img = sparse_child(w, h, 5, 2);
        fixture fx;
        fx_init(&fx, w, h, dmaxes[j]);
        set_profile(&fx, (int)j);
        fx_prepare(&fx);
        fx.e.offset[0] = -20;
        fx.e.offset[1] = 11;
        tsr_rect pr_full = tsr_rect_make(-30, 0, w + 17, h + 23);
        size_t n = (size_t)(pr_full.w * pr_full.h);
        float *full = malloc(n * sizeof *full);
        uint8_t *cov = calloc(n, 1);
        cr_assert(full && cov);
        render(&fx, img, pr_full, full, cov);
        compare_tiled(&fx, img, 7, full, pr_full, tsr_rect_make(0, 0, pr_full.w, pr_full.h));
        compare_tiled(&fx, img, 64, full, pr_full, tsr_rect_make(0, 0, pr_full.w, pr_full.h));
        compare_tiled(&fx, img, 1, full, pr_full, tsr_rect_make(0, 100, pr_full.w, 3));
        compare_tiled(&fx, img, 1, full, pr_full, tsr_rect_make(120, 0, 2, pr_full.h));
        free(full);
        free(cov);
        fx_free(&fx);
        free(img);
    }
}

Test(distance, layer_refuses_a_view_without_the_halo)
{
    fixture fx;
    fx_init(&fx, 20, 20, 4);
    fx_prepare(&fx);
    float img[400] = {0}, L[25];
    uint8_t cov[25] = {0};
    tsr_view v = {tsr_rect_make(5, 5, 5, 5), img, 20}; /* the tile only, no halo */
    tsr_error err = {0};
    cr_assert_eq(tsr_trait_distance.layer(&fx.e, tsr_rect_make(5, 5, 5, 5), &v, 1, L, cov, &err),
                 TSR_EINTERNAL);
    cr_assert_neq(err.msg[0], 0);
    for (int i = 0; i < 25; i++)
        cr_assert_eq(cov[i], 0);
    fx_free(&fx);
}

/* ---- children that are mostly their fill: the sparse path -------------------------------------
 * The child's structure (fill, a shape source, pattern edges of seeds) tells need() where the
 * mask can be; a tile then reads only that box, at any dmax up to a plate's. */

extern const tsr_trait tsr_trait_pattern;

/* A child of fill 0 with `n` one-pixel seeds (value 1, pattern edges) at xy[2i], xy[2i+1]; its
 * pixels, as the engine would compute them, in *img. */
typedef struct seeded {
    tsr_node seed;
    tsr_edge edges[8];
} seeded;

static void
fx_seeds(fixture *fx, seeded *sd, size_t n, const int64_t *xy, float **img)
{
    memset(sd, 0, sizeof *sd);
    sd->seed.w = sd->seed.h = 1;
    sd->seed.fill = 1.0f;
    for (size_t i = 0; i < n; i++) {
        sd->edges[i].trait = &tsr_trait_pattern;
        sd->edges[i].child = &sd->seed;
        sd->edges[i].offset[0] = xy[2 * i];
        sd->edges[i].offset[1] = xy[2 * i + 1];
    }
    fx->child.source = NULL;
    fx->child.fill = 0.0f;
    fx->child.edges = sd->edges;
    fx->child.nedges = n;
    int64_t w = fx->child.w, h = fx->child.h;
    *img = calloc((size_t)(w * h), sizeof **img);
    cr_assert_not_null(*img);
    for (size_t i = 0; i < n; i++)
        (*img)[xy[2 * i + 1] * w + xy[2 * i]] = 1.0f;
}

Test(distance, dmax_reaches_what_a_two_metre_plate_needs)
{
    static const int64_t dmaxes[] = {4097, 2000000, 4194304};
    for (size_t i = 0; i < 3; i++) {
        fixture fx;
        recorder r;
        fx_init(&fx, 10, 10, dmaxes[i]);
        cr_assert_eq(run_check(&fx, &r), TSR_OK, "dmax %lld", (long long)dmaxes[i]);
        fx_free(&fx);
    }
}

Test(distance, a_tile_reads_only_where_a_seed_can_be)
{
    fixture fx;
    seeded sd;
    float *img;
    static const int64_t xy[] = {500, 400};
    fx_init(&fx, 1000, 1000, 300);
    fx_seeds(&fx, &sd, 1, xy, &img);
    tsr_rect out[TSR_NEED_MAX];
    /* the seed within the halo: the seed's pixel alone */
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(300, 300, 64, 64), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(500, 400, 1, 1)), "%lld %lld %lld %lld",
              (long long)out[0].x, (long long)out[0].y, (long long)out[0].w, (long long)out[0].h);
    /* no seed within dmax: one pixel, the same for every tile, never the halo */
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(0, 0, 64, 64), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(0, 0, 1, 1)));
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(900, 64, 64, 64), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(0, 0, 1, 1)));
    /* a child whose fill is a mask pixel: the whole halo again */
    fx.child.fill = 0.75f;
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(300, 300, 64, 64), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(0, 0, 664, 664)));
    fx.child.fill = 0.0f;
    /* a seed drawn with a fill that masks through `max`: its whole rect */
    sd.seed.w = 3;
    sd.edges[0].blend = TSR_BLEND_MAX;
    cr_assert_eq(tsr_trait_distance.need(&fx.e, tsr_rect_make(300, 300, 64, 64), out), 1);
    cr_assert(tsr_rect_equal(out[0], tsr_rect_make(500, 400, 3, 1)));
    fx_free(&fx);
    free(img);
}

/* Render parent tiles of t x t over the placed child and compare every covered pixel with the
 * brute force (tiles: the sparse path's rows above, inside and below the seeds' box). */
static void
compare_tiles(fixture *fx, const float *img, int64_t t, const char *what)
{
    int64_t w = fx->child.w, h = fx->child.h;
    float *ref = ref_layer(fx, img);
    for (int64_t ty = 0; ty < h; ty += t)
        for (int64_t tx = 0; tx < w; tx += t) {
            tsr_rect pr = tsr_rect_make(tx + fx->e.offset[0], ty + fx->e.offset[1], t, t);
            float *L = calloc((size_t)(t * t), sizeof *L);
            uint8_t *cov = calloc((size_t)(t * t), 1);
            cr_assert(L && cov);
            render(fx, img, pr, L, cov);
            for (int64_t y = 0; y < t && ty + y < h; y++)
                for (int64_t x = 0; x < t && tx + x < w; x++) {
                    int64_t i = y * t + x, c = (ty + y) * w + tx + x;
                    cr_assert(cov[i] == 1 && same_bits(L[i], ref[c]),
                              "%s: tile %lld,%lld at (%lld, %lld): %.9g, want %.9g", what,
                              (long long)tx, (long long)ty, (long long)(tx + x),
                              (long long)(ty + y), L[i], ref[c]);
                }
            free(L);
            free(cov);
        }
    free(ref);
}

Test(distance, sparse_reads_match_brute_force_at_any_dmax, .timeout = 120)
{
    static const int64_t xy[] = {5, 70, 6, 70, 61, 12, 100, 88, 119, 0};
    static const int64_t dmaxes[] = {1, 9, 40, 300, 5000};
    static const int64_t tiles[] = {7, 32, 200};
    for (size_t i = 0; i < 5; i++)
        for (int pf = 0; pf < NPROFILES; pf += (dmaxes[i] > 4096 ? 4 : 1)) {
            fixture fx;
            seeded sd;
            float *img;
            fx_init(&fx, 120, 90, dmaxes[i]);
            fx_seeds(&fx, &sd, 1 + (size_t)pf % 5, xy, &img);
            set_profile(&fx, pf);
            fx_prepare(&fx);
            char what[64];
            snprintf(what, sizeof what, "dmax %lld profile %d", (long long)dmaxes[i], pf);
            fx.e.offset[0] = 7 - pf;
            fx.e.offset[1] = pf * 3;
            compare_tiles(&fx, img, tiles[(i + (size_t)pf) % 3], what);
            fx_free(&fx);
            free(img);
        }
}

Test(distance, distances_past_the_table_follow_the_profile, .timeout = 120)
{
    /* a seed at one end of a 6000 px strip: a > 4096^2 beyond x = 4096, computed per pixel */
    static const int64_t xy[] = {0, 1};
    for (int pf = 0; pf < NPROFILES; pf++) {
        fixture fx;
        seeded sd;
        float *img;
        fx_init(&fx, 6000, 3, 5000);
        fx_seeds(&fx, &sd, 1, xy, &img);
        set_profile(&fx, pf);
        fx_prepare(&fx);
        cr_assert_lt(((const tsr_distance_state *)fx.e.state)->ntable, 5000 * 5000);
        compare_tiles(&fx, img, 512, "past the table");
        fx_free(&fx);
        free(img);
    }
}
