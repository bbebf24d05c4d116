/* geom's exact-area coverage: against an independent oracle (tests/oracle/coverage.py, shapely:
 * the nonzero region from noded faces and winding numbers, then each pixel's intersection
 * area), within 1e-6 px (a 16-bit step is 1.5e-5); the same bits whatever rect a pixel is
 * computed in and whatever order the polygons come in; the GPU's bits equal to the CPU's (skips
 * without a device); circles within their tolerance; booleans and offsets by hand-computed
 * areas; and every error path. */
#include "geom/geom.h"
#include "geom/geom_int.h"
#include "gpu/coverage.h"
#include "gpu/gpu.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOL 1e-6

typedef struct tcase {
    tsr_rect r;
    tsr_geom_polys p;
    const char *what;
} tcase;

static uint64_t rng = 0x9e3779b97f4a7c15u;

static double
urand(void) /* [0, 1), xorshift64* */
{
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717u) >> 11) * (1.0 / 9007199254740992.0);
}

static void
add(tsr_geom_polys *p, const double *xy, size_t n, double dx, double dy)
{
    tsr_geom_pt q[64];
    cr_assert(n <= 64);
    for (size_t i = 0; i < n; i++)
        q[i].x = xy[2 * i] + dx, q[i].y = xy[2 * i + 1] + dy;
    cr_assert_eq(tsr_geom_polys_add(p, q, n, NULL), TSR_OK);
}

static const char *
python(void)
{
    const char *p = getenv("PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

/* The oracle's coverage of every case, concatenated. */
static double *
oracle(const tcase *cs, size_t n)
{
    char in[] = "/tmp/tsr_cov_inXXXXXX", out[] = "/tmp/tsr_cov_outXXXXXX";
    int fi = mkstemp(in), fo = mkstemp(out);
    cr_assert(fi >= 0 && fo >= 0);
    close(fo);
    FILE *f = fdopen(fi, "w");
    size_t total = 0;
    for (size_t c = 0; c < n; c++) {
        const tcase *t = &cs[c];
        fprintf(f, "case %lld %lld %lld %lld\n", (long long)t->r.x, (long long)t->r.y,
                (long long)t->r.w, (long long)t->r.h);
        size_t at = 0;
        for (size_t k = 0; k < t->p.nring; k++) {
            fprintf(f, "ring %zu\n", t->p.end[k] - at);
            for (; at < t->p.end[k]; at++)
                fprintf(f, "%.17g %.17g\n", t->p.pt[at].x, t->p.pt[at].y);
        }
        total += (size_t)(t->r.w * t->r.h);
    }
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s %s/tests/oracle/coverage.py %s %s", python(), TSR_SRC_DIR, in,
             out);
    int rc = system(cmd);
    cr_assert_eq(rc, 0, "%s failed (%d): shapely missing? (Debian python3-shapely)", cmd, rc);
    double *v = malloc(total * sizeof *v);
    f = fopen(out, "r");
    cr_assert(f && v);
    for (size_t i = 0; i < total; i++)
        cr_assert_eq(fscanf(f, "%lf", &v[i]), 1, "oracle output short at %zu", i);
    fclose(f);
    unlink(in);
    unlink(out);
    return v;
}

static float *
cpu(const tsr_geom_polys *p, tsr_rect r)
{
    float *o = malloc((size_t)(r.w * r.h) * sizeof *o);
    tsr_error err = {0};
    cr_assert_eq(tsr_geom_coverage(p, r, o, &err), TSR_OK, "%s", err.msg);
    return o;
}

/* Every case's pixels within TOL of the oracle's; frees the cases. */
static void
against_oracle(tcase *cs, size_t n)
{
    double *want = oracle(cs, n), *w = want;
    for (size_t c = 0; c < n; c++) {
        tcase *t = &cs[c];
        float *got = cpu(&t->p, t->r);
        for (int64_t j = 0; j < t->r.h; j++)
            for (int64_t i = 0; i < t->r.w; i++) {
                double g = got[j * t->r.w + i], e = *w++;
                cr_assert(fabs(g - e) <= TOL, "%s: pixel %lld,%lld: coverage %.9f, oracle %.9f",
                          t->what, (long long)(t->r.x + i), (long long)(t->r.y + j), g, e);
            }
        free(got);
        tsr_geom_polys_free(&t->p);
    }
    free(want);
}

/* The hand-made shapes, moved by (dx, dy) with the rect. */
static size_t
hand_cases(tcase *cs, int64_t dx, int64_t dy)
{
    size_t n = 0;
#define CASE(name, x, y, w, h)                                                                \
    (cs[n].r = tsr_rect_make((x) + dx, (y) + dy, w, h), tsr_geom_polys_init(&cs[n].p),         \
     cs[n].what = name, &cs[n++].p)
    tsr_geom_polys *p;
    p = CASE("rect on the grid", 0, 0, 8, 8);
    add(p, (double[]){2, 2, 6, 2, 6, 5, 2, 5}, 4, dx, dy);
    p = CASE("rect off the grid", -3, -2, 10, 10);
    add(p, (double[]){1.3, 2.7, 5.9, 2.7, 5.9, 6.1, 1.3, 6.1}, 4, dx, dy);
    p = CASE("triangle", 0, 0, 9, 7);
    add(p, (double[]){0.25, 0.5, 8.6, 3.3, 2.1, 6.9}, 3, dx, dy);
    p = CASE("triangle wound the other way", 0, 0, 9, 7);
    add(p, (double[]){2.1, 6.9, 8.6, 3.3, 0.25, 0.5}, 3, dx, dy);
    p = CASE("convex, alone, with collinear and repeated points", 0, 0, 9, 7);
    add(p, (double[]){1.5, 1.25, 4.5, 1.25, 4.5, 1.25, 7.5, 1.25, 7.5, 5.5, 1.5, 5.5}, 6, dx, dy);
    p = CASE("bow tie (self-intersecting)", 0, 0, 8, 8);
    add(p, (double[]){0.5, 0.5, 7.25, 7.5, 7.5, 0.75, 0.3, 7.1}, 4, dx, dy);
    p = CASE("pentagram (nonzero fills the centre)", 0, 0, 12, 12);
    {
        double s[10];
        for (int k = 0; k < 5; k++) {
            s[2 * k] = 6 + 5.5 * cos(k * 4 * M_PI / 5);
            s[2 * k + 1] = 6 + 5.5 * sin(k * 4 * M_PI / 5);
        }
        add(p, s, 5, dx, dy);
    }
    p = CASE("overlapping shapes count once", 0, 0, 10, 10);
    add(p, (double[]){1.5, 1.5, 6.5, 1.5, 6.5, 6.5, 1.5, 6.5}, 4, dx, dy);
    add(p, (double[]){3.2, 3.7, 8.8, 3.7, 8.8, 9.1, 3.2, 9.1}, 4, dx, dy);
    add(p, (double[]){2.1, 2.2, 5.1, 2.4, 3.3, 5.8}, 3, dx, dy);
    p = CASE("hole (ring wound the other way)", 0, 0, 10, 10);
    add(p, (double[]){0.5, 0.5, 9.5, 0.5, 9.5, 9.5, 0.5, 9.5}, 4, dx, dy);
    add(p, (double[]){2.3, 2.6, 2.3, 7.1, 7.7, 7.1, 7.7, 2.6}, 4, dx, dy);
    p = CASE("same-way inner ring is no hole", 0, 0, 10, 10);
    add(p, (double[]){0.5, 0.5, 9.5, 0.5, 9.5, 9.5, 0.5, 9.5}, 4, dx, dy);
    add(p, (double[]){2.3, 2.6, 7.7, 2.6, 7.7, 7.1, 2.3, 7.1}, 4, dx, dy);
    p = CASE("sliver", 0, 0, 10, 6);
    add(p, (double[]){0.2, 1.0, 9.7, 4.0, 9.7, 4.001}, 3, dx, dy);
    p = CASE("0.378 px line off the grid", 0, 0, 6, 12);
    add(p, (double[]){2.311, 0.4, 2.689, 0.4, 2.689, 11.6, 2.311, 11.6}, 4, dx, dy);
    p = CASE("0.378 px line, rotated", 0, 0, 12, 12);
    {
        double a = 0.4363, c = cos(a), s = sin(a), hw = 0.189, hl = 5.2;
        add(p, (double[]){6 - hl * c + hw * s, 6 - hl * s - hw * c, 6 + hl * c + hw * s,
                          6 + hl * s - hw * c, 6 + hl * c - hw * s, 6 + hl * s + hw * c,
                          6 - hl * c - hw * s, 6 - hl * s + hw * c},
            4, dx, dy);
    }
    p = CASE("across four blocks", 58, 57, 14, 13);
    add(p, (double[]){59.1, 58.3, 70.4, 60.2, 66.6, 69.5, 61.2, 66.0}, 4, dx, dy);
    p = CASE("larger than the rect, many blocks away", 130, -70, 9, 7);
    add(p, (double[]){-300.5, -400.25, 700.75, -380, 650.5, 500.5, -250, 450}, 4, dx, dy);
    p = CASE("circle polygon", 0, 0, 24, 24);
    {
        tsr_geom_polys c;
        tsr_geom_polys_init(&c);
        cr_assert_eq(tsr_geom_polys_add_circle(&c, 11.7, 12.2, 10.3, 0.01, NULL), TSR_OK);
        for (size_t i = 0; i < c.npt; i++)
            c.pt[i].x += dx, c.pt[i].y += dy;
        cr_assert_eq(tsr_geom_polys_add(p, c.pt, c.npt, NULL), TSR_OK);
        tsr_geom_polys_free(&c);
    }
    p = CASE("edges on pixel sides and corners", 0, 0, 6, 6);
    add(p, (double[]){1, 1, 4, 1, 4, 4, 1, 4}, 4, dx, dy);
    add(p, (double[]){4, 4, 5, 3, 5, 5}, 3, dx, dy);
    p = CASE("nothing", 0, 0, 3, 3);
#undef CASE
    return n;
}

Test(coverage, hand_made_shapes_match_the_oracle)
{
    tcase cs[32];
    against_oracle(cs, hand_cases(cs, 0, 0));
}

Test(coverage, far_from_the_origin_matches_the_oracle)
{
    tcase cs[32];
    size_t n = hand_cases(cs, 1000000007, -2000000011);
    against_oracle(cs, n);
    n = hand_cases(cs, -68719476736 + 1000, 34359738368);
    against_oracle(cs, n);
}

/* Random polygons (some self-intersecting) over a rect at a random place. */
static void
random_polys(tsr_geom_polys *p, tsr_rect r, int count, double spill)
{
    for (int k = 0; k < count; k++) {
        int n = 3 + (int)(urand() * 5);
        tsr_geom_pt q[8];
        for (int i = 0; i < n; i++) {
            q[i].x = (double)r.x - spill + urand() * ((double)r.w + 2 * spill);
            q[i].y = (double)r.y - spill + urand() * ((double)r.h + 2 * spill);
        }
        cr_assert_eq(tsr_geom_polys_add(p, q, (size_t)n, NULL), TSR_OK);
    }
}

Test(coverage, random_polygons_match_the_oracle)
{
    tcase cs[12];
    for (int c = 0; c < 12; c++) {
        cs[c].r = tsr_rect_make((int64_t)(urand() * 400) - 200, (int64_t)(urand() * 400) - 200,
                                20 + (int64_t)(urand() * 30), 15 + (int64_t)(urand() * 30));
        cs[c].what = "random";
        tsr_geom_polys_init(&cs[c].p);
        random_polys(&cs[c].p, cs[c].r, 1 + c % 5, 4);
    }
    against_oracle(cs, 12);
}

/* A field of small rotated rectangles over region g. */
static void
field(tsr_geom_polys *p, tsr_rect g, int count, double size)
{
    for (int k = 0; k < count; k++) {
        double cx = (double)g.x + urand() * (double)g.w, cy = (double)g.y + urand() * (double)g.h;
        double a = urand() * M_PI, c = cos(a), s = sin(a);
        double hw = 0.2 + urand() * size, hh = 0.2 + urand() * size;
        tsr_geom_pt q[4] = {{cx - hw * c + hh * s, cy - hw * s - hh * c},
                            {cx + hw * c + hh * s, cy + hw * s - hh * c},
                            {cx + hw * c - hh * s, cy + hw * s + hh * c},
                            {cx - hw * c - hh * s, cy - hw * s + hh * c}};
        cr_assert_eq(tsr_geom_polys_add(p, q, 4, NULL), TSR_OK);
    }
}

/* The region's coverage computed tile by tile (tiles of tw x th from the region's corner
 * shifted by (ox, oy)). */
static float *
tiled(const tsr_geom_polys *p, tsr_rect g, int64_t tw, int64_t th, int64_t ox, int64_t oy)
{
    float *o = malloc((size_t)(g.w * g.h) * sizeof *o);
    for (int64_t y = g.y - oy; y < g.y + g.h; y += th)
        for (int64_t x = g.x - ox; x < g.x + g.w; x += tw) {
            tsr_rect t = tsr_rect_intersect(tsr_rect_make(x, y, tw, th), g);
            if (tsr_rect_empty(t))
                continue;
            float *c = cpu(p, t);
            for (int64_t j = 0; j < t.h; j++)
                memcpy(o + (t.y - g.y + j) * g.w + (t.x - g.x), c + j * t.w,
                       (size_t)t.w * sizeof *o);
            free(c);
        }
    return o;
}

Test(coverage, a_pixel_has_the_same_bits_in_every_rect)
{
    tsr_rect g = tsr_rect_make(-37, 21, 150, 130);
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    field(&p, tsr_rect_grow(g, 5), 400, 4);
    random_polys(&p, g, 6, 10);
    cr_assert_eq(tsr_geom_polys_add_circle(&p, 0.3, 80.1, 33.3, 0.05, NULL), TSR_OK);
    float *whole = cpu(&p, g);
    static const int64_t t[][4] = {{37, 29, 0, 0}, {64, 64, 0, 0}, {64, 64, 27, 43}, {1, 7, 0, 0},
                                   {150, 1, 0, 0}, {13, 130, 5, 0}};
    for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
        float *o = tiled(&p, g, t[k][0], t[k][1], t[k][2], t[k][3]);
        cr_assert(memcmp(o, whole, (size_t)(g.w * g.h) * sizeof *o) == 0,
                  "tiles of %lldx%lld give other bits", (long long)t[k][0], (long long)t[k][1]);
        free(o);
    }
    /* and some coverage is partial, some full: the test sees edges */
    int partial = 0, full = 0;
    for (int64_t i = 0; i < g.w * g.h; i++)
        partial += whole[i] > 0 && whole[i] < 1, full += whole[i] == 1.0f;
    cr_assert(partial > 1000 && full > 100, "%d partial, %d full", partial, full);
    free(whole);
    tsr_geom_polys_free(&p);
}

/* The rings of p whose bounding box meets the closed rect g. */
static void
pick(const tsr_geom_polys *p, tsr_rect g, tsr_geom_polys *out)
{
    size_t at = 0;
    for (size_t k = 0; k < p->nring; k++) {
        double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t i = at; i < p->end[k]; i++) {
            x0 = fmin(x0, p->pt[i].x), x1 = fmax(x1, p->pt[i].x);
            y0 = fmin(y0, p->pt[i].y), y1 = fmax(y1, p->pt[i].y);
        }
        if (x1 >= (double)g.x && x0 <= (double)(g.x + g.w) && y1 >= (double)g.y &&
            y0 <= (double)(g.y + g.h))
            cr_assert_eq(tsr_geom_polys_add(out, p->pt + at, p->end[k] - at, NULL), TSR_OK);
        at = p->end[k];
    }
}

Test(coverage, polygons_picked_by_reach_give_the_same_bits)
{
    tsr_rect g = tsr_rect_make(-100, -60, 200, 190);
    tsr_geom_polys p, q;
    tsr_geom_polys_init(&p);
    tsr_geom_polys_init(&q);
    field(&p, tsr_rect_grow(g, 70), 3000, 4);
    float *whole = cpu(&p, g);
    for (int64_t y = g.y; y < g.y + g.h; y += 41)
        for (int64_t x = g.x; x < g.x + g.w; x += 53) {
            tsr_rect t = tsr_rect_intersect(tsr_rect_make(x, y, 53, 41), g);
            tsr_rect reach = tsr_geom_reach(t);
            cr_assert(tsr_rect_contains(reach, tsr_rect_grow(t, 1)));
            cr_assert(reach.x % 64 == 63 || reach.x % 64 == -1);
            tsr_geom_polys_clear(&q);
            pick(&p, reach, &q);
            cr_assert(q.nring < p.nring / 2);
            float *c = cpu(&q, t);
            for (int64_t j = 0; j < t.h; j++)
                cr_assert(memcmp(c + j * t.w, whole + (t.y - g.y + j) * g.w + (t.x - g.x),
                                 (size_t)t.w * sizeof *c) == 0,
                          "tile %lld,%lld row %lld differs", (long long)t.x, (long long)t.y,
                          (long long)j);
            free(c);
        }
    free(whole);
    tsr_geom_polys_free(&p);
    tsr_geom_polys_free(&q);
}

/* tsr_geom_edges_pieces' make: set 0 the rings of p (ctx) that reach the piece, set 1 all of
 * them; a piece at or right of x = fail_x fails, naming its x (when fail_x is set) */
typedef struct pick_ctx {
    const tsr_geom_polys *p;
    int64_t fail_x;
    _Atomic int calls;
} pick_ctx;

static tsr_status
pick_make(void *mctx, tsr_rect r, tsr_geom_polys *sets, tsr_error *err)
{
    pick_ctx *c = mctx;
    atomic_fetch_add(&c->calls, 1);
    if (r.x >= c->fail_x)
        return tsr_fail(err, TSR_EINVAL, "piece at x %lld refused", (long long)r.x);
    pick(c->p, tsr_geom_reach(r), &sets[0]);
    for (size_t k = 0, at = 0; k < c->p->nring; at = c->p->end[k++])
        if (tsr_geom_polys_add(&sets[1], c->p->pt + at, c->p->end[k] - at, err) != TSR_OK)
            return TSR_ENOMEM;
    return TSR_OK;
}

/* A team of 3 that runs the items backwards, as threads may finish them in any order */
static tsr_status
backwards(void *team, size_t n, tsr_geom_item_fn fn, void *fctx, tsr_error *err)
{
    (void)team, (void)err;
    for (size_t k = n; k-- > 0;)
        fn(fctx, (int)(k % 3), k);
    return TSR_OK;
}

Test(coverage, edges_made_in_pieces_are_the_whole_rects_edges)
{
    /* a rect off the blocks' grid, 5 block rows and 3 pieces across */
    tsr_rect g = tsr_rect_make(-77, -45, 2 * TSR_GEOM_PIECE_BLOCKS * 64 + 300, 290);
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    field(&p, tsr_rect_grow(g, 70), 6000, 6);
    cr_assert_eq(tsr_geom_polys_add_circle(&p, 700.3, 80.1, 150.5, 0.05, NULL), TSR_OK);
    tsr_geom_edges whole;
    tsr_geom_edges_init(&whole);
    cr_assert_eq(tsr_geom_edges_build(&p, g, &whole, NULL), TSR_OK);
    cr_assert(whole.n > 10000, "%zu edges", whole.n);
    tsr_geom_team team = {backwards, NULL, 3};
    for (int t = 0; t < 2; t++) {
        pick_ctx c = {&p, INT64_MAX, 0};
        tsr_geom_edges out[2];
        tsr_geom_edges_init(&out[0]);
        tsr_geom_edges_init(&out[1]);
        cr_assert_eq(tsr_geom_edges_pieces(g, 2, pick_make, &c, t ? &team : NULL, out, NULL),
                     TSR_OK);
        cr_assert_eq(atomic_load(&c.calls), 5 * 3);
        for (int s = 0; s < 2; s++) {
            cr_assert_eq(out[s].n, whole.n, "set %d: %zu edges, whole %zu", s, out[s].n, whole.n);
            cr_assert(tsr_rect_equal(out[s].r, g));
            cr_assert(memcmp(out[s].e, whole.e, whole.n * sizeof *whole.e) == 0, "set %d", s);
            cr_assert(memcmp(out[s].first, whole.first, (whole.n + 1) * sizeof *whole.first) == 0);
            tsr_geom_edges_free(&out[s]);
        }
    }
    /* failing pieces (those of the third column, x = 1920): one's error, no edges kept */
    pick_ctx c = {&p, g.x + 1000, 0};
    tsr_geom_edges out[2];
    tsr_geom_edges_init(&out[0]);
    tsr_geom_edges_init(&out[1]);
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_geom_edges_pieces(g, 2, pick_make, &c, &team, out, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "piece at x 1920 refused");
    cr_assert(out[0].n == 0 && out[1].n == 0);
    tsr_geom_edges_free(&out[0]);
    tsr_geom_edges_free(&out[1]);
    tsr_geom_edges_free(&whole);
    tsr_geom_polys_free(&p);
}

/* The quantizer rounds as llround does (halves away from zero), without calling it: exact
 * halves of a grid step either way, neighbours of halves, far coordinates, random ones. */
Test(coverage, quantizing_rounds_as_llround)
{
    const double u = 1.0 / (double)TSR_COV_UNIT;
    double vs[64] = {0.5 * u, -0.5 * u, 1.5 * u, -1.5 * u, 2.5 * u, -2.5 * u,
                     nextafter(0.5 * u, 1), nextafter(0.5 * u, 0), nextafter(-0.5 * u, -1),
                     nextafter(-0.5 * u, 0), 0.0, -0.0, TSR_GEOM_LIMIT, -TSR_GEOM_LIMIT,
                     TSR_GEOM_LIMIT - 0.5 * u, -TSR_GEOM_LIMIT + 0.5 * u, 1e-30, -1e-30,
                     268435456.5 * u, -268435456.5 * u};
    size_t n = 20;
    while (n < 64) {
        double m = ldexp(1.0, (int)(urand() * 38)); /* magnitudes up to 2^37 */
        vs[n++] = (urand() - 0.5) * 2 * m;
    }
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    tsr_geom_pt pts[64];
    for (size_t i = 0; i < n; i++)
        pts[i] = (tsr_geom_pt){vs[i], vs[n - 1 - i]};
    cr_assert_eq(tsr_geom_polys_add(&p, pts, n, NULL), TSR_OK);
    int64_t *q = NULL;
    cr_assert_eq(tsr_geom_quantize(&p, "", &q, NULL), TSR_OK);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(q[2 * i], llround(vs[i] * (double)TSR_COV_UNIT), "x %a", vs[i]);
        cr_assert_eq(q[2 * i + 1], llround(vs[n - 1 - i] * (double)TSR_COV_UNIT), "y %a",
                     vs[n - 1 - i]);
    }
    free(q);
    tsr_geom_polys_free(&p);
}

Test(coverage, the_order_of_the_polygons_changes_no_bit)
{
    tsr_rect g = tsr_rect_make(3, -90, 140, 120);
    tsr_geom_polys p, q;
    tsr_geom_polys_init(&p);
    tsr_geom_polys_init(&q);
    field(&p, g, 600, 5);
    for (size_t k = p.nring; k-- > 0;) /* q: p's rings backwards */
        cr_assert_eq(tsr_geom_polys_add(&q, p.pt + (k ? p.end[k - 1] : 0),
                                        p.end[k] - (k ? p.end[k - 1] : 0), NULL),
                     TSR_OK);
    float *a = cpu(&p, g), *b = cpu(&q, g);
    cr_assert(memcmp(a, b, (size_t)(g.w * g.h) * sizeof *a) == 0);
    free(a), free(b);
    tsr_geom_polys_free(&p);
    tsr_geom_polys_free(&q);
}

Test(coverage, inside_is_exactly_one_outside_exactly_zero)
{
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    cr_assert_eq(tsr_geom_polys_add_rect(&p, 10.37, 20.61, 200.5, 150.25, NULL), TSR_OK);
    field(&p, tsr_rect_make(20, 30, 180, 130), 300, 3); /* inside the rect: changes nothing */
    tsr_rect r = tsr_rect_make(0, 0, 230, 190);
    float *o = cpu(&p, r);
    for (int64_t y = 0; y < r.h; y++)
        for (int64_t x = 0; x < r.w; x++) {
            float v = o[y * r.w + x];
            if (x >= 11 && x < 210 && y >= 21 && y < 170)
                cr_assert(v == 1.0f, "pixel %lld,%lld: %.9g", (long long)x, (long long)y, v);
            else if (x < 10 || x > 210 || y < 20 || y > 170)
                cr_assert(v == 0.0f, "pixel %lld,%lld: %.9g", (long long)x, (long long)y, v);
        }
    cr_assert(fabs(o[20 * r.w + 10] - 0.63 * 0.39) < TOL);
    free(o);
    tsr_geom_polys_free(&p);
}

Test(coverage, gpu_gives_the_cpu_bits)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_rect rs[] = {tsr_rect_make(-37, 21, 300, 200), tsr_rect_make(5, 7, 1, 300),
                     tsr_rect_make(1000, -3000, 517, 33)};
    for (size_t k = 0; k < sizeof rs / sizeof *rs; k++) {
        tsr_rect r = rs[k];
        tsr_geom_polys p;
        tsr_geom_polys_init(&p);
        field(&p, tsr_rect_grow(r, 3), (int)(r.w * r.h / 20), 3);
        random_polys(&p, r, 8, 20);
        tsr_geom_edges e;
        tsr_geom_edges_init(&e);
        tsr_error err = {0};
        cr_assert_eq(tsr_geom_edges_build(&p, r, &e, &err), TSR_OK, "%s", err.msg);
        float *c = cpu(&p, r), *g = malloc((size_t)(r.w * r.h) * sizeof *g);
        cr_assert_eq(tsr_gpu_coverage_host(&e, g, &err), TSR_OK, "%s", err.msg);
        for (int64_t i = 0; i < r.w * r.h; i++)
            cr_assert(memcmp(&c[i], &g[i], sizeof *c) == 0,
                      "rect %zu pixel %lld: cpu %.9g gpu %.9g", k, (long long)i, c[i], g[i]);
        free(c), free(g);
        tsr_geom_edges_free(&e);
        tsr_geom_polys_free(&p);
    }
}

Test(coverage, gpu_entry_point_reports_no_device)
{
    if (tsr_gpu_available())
        cr_skip_test("a GPU is present");
    tsr_geom_edges e;
    tsr_geom_edges_init(&e);
    e.r = tsr_rect_make(0, 0, 2, 2);
    float o[4];
    tsr_error err = {0};
    cr_assert_neq(tsr_gpu_coverage_host(&e, o, &err), TSR_OK);
    cr_assert(strstr(err.msg, "gpu: ") == err.msg, "%s", err.msg);
}

/* ---- circles ----------------------------------------------------------------------------- */

Test(coverage, circle_polygon_is_within_its_tolerance)
{
    double rs[] = {0.7, 10.3, 250.0}, tols[] = {0.001, 0.01, 0.2};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            size_t n;
            cr_assert_eq(tsr_geom_arc_segments(rs[i], 2 * M_PI, tols[k], &n, NULL), TSR_OK);
            cr_assert(rs[i] * (1 - cos(M_PI / (double)n)) <= tols[k] * (1 + 1e-12));
            if (n > 3) /* and not many more segments than needed */
                cr_assert(rs[i] * (1 - cos(M_PI / (double)(n - 1))) > tols[k]);
        }
    /* the coverage sums to the n-gon's area, (n / 2) r^2 sin(2 pi / n) */
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    cr_assert_eq(tsr_geom_polys_add_circle(&p, 40.25, 39.5, 30.1, 0.02, NULL), TSR_OK);
    size_t n = p.npt;
    tsr_rect r = tsr_rect_make(0, 0, 80, 80);
    float *o = cpu(&p, r);
    double sum = 0;
    for (int64_t i = 0; i < r.w * r.h; i++)
        sum += o[i];
    double want = 0.5 * (double)n * 30.1 * 30.1 * sin(2 * M_PI / (double)n);
    cr_assert(fabs(sum - want) < 1e-4, "sum %.9f, n-gon %.9f", sum, want);
    cr_assert(want < M_PI * 30.1 * 30.1 && M_PI * 30.1 * 30.1 - want < 2 * M_PI * 30.1 * 0.02);
    free(o);
    tsr_geom_polys_free(&p);
}

/* ---- booleans and offsets ------------------------------------------------------------------ */

static double
area(const tsr_geom_polys *p)
{
    double a = 0;
    size_t at = 0;
    for (size_t k = 0; k < p->nring; k++) {
        size_t s = at, n = p->end[k] - at;
        for (size_t i = 0; i < n; i++) {
            const tsr_geom_pt *u = &p->pt[s + i], *v = &p->pt[s + (i + 1) % n];
            a += u->x * v->y - v->x * u->y;
        }
        at = p->end[k];
    }
    return 0.5 * a;
}

Test(coverage, booleans_give_the_hand_computed_areas)
{
    tsr_geom_polys a, b, o;
    tsr_geom_polys_init(&a), tsr_geom_polys_init(&b), tsr_geom_polys_init(&o);
    cr_assert_eq(tsr_geom_polys_add_rect(&a, 0, 0, 2, 2, NULL), TSR_OK);
    cr_assert_eq(tsr_geom_polys_add_rect(&b, 1, 1, 2, 2, NULL), TSR_OK);
    struct {
        tsr_geom_op op;
        double area;
    } want[] = {{TSR_GEOM_UNION, 7}, {TSR_GEOM_INTERSECTION, 1}, {TSR_GEOM_DIFFERENCE, 3},
                {TSR_GEOM_XOR, 6}};
    for (int k = 0; k < 4; k++) {
        tsr_error err = {0};
        cr_assert_eq(tsr_geom_boolean(want[k].op, &a, &b, &o, &err), TSR_OK, "%s", err.msg);
        cr_assert(fabs(fabs(area(&o)) - want[k].area) < 1e-9, "op %d: area %.12f", k, area(&o));
        /* and the coverage of the result agrees */
        float *c = cpu(&o, tsr_rect_make(0, 0, 3, 3));
        double s = 0;
        for (int i = 0; i < 9; i++)
            s += c[i];
        cr_assert(fabs(s - want[k].area) < 1e-6, "op %d: coverage %.9f", k, s);
        free(c);
    }
    tsr_geom_polys_free(&a), tsr_geom_polys_free(&b), tsr_geom_polys_free(&o);
}

Test(coverage, offsets_give_the_hand_computed_areas)
{
    tsr_geom_polys a, o;
    tsr_geom_polys_init(&a), tsr_geom_polys_init(&o);
    cr_assert_eq(tsr_geom_polys_add_rect(&a, 5, 5, 2, 2, NULL), TSR_OK);
    cr_assert_eq(tsr_geom_polys_add_rect(&a, 6, 6, 1, 1, NULL), TSR_OK); /* inside: once */
    struct {
        double d;
        tsr_geom_join j;
        double area, tol;
    } want[] = {
        {1, TSR_GEOM_JOIN_MITER, 16, 1e-9},
        /* squared at distance 1 from each corner: each corner's unit square less a triangle of
         * (sqrt 2 - 1)^2 */
        {1, TSR_GEOM_JOIN_SQUARE, 12 + 4 * (1 - (M_SQRT2 - 1) * (M_SQRT2 - 1)), 1e-6},
        /* arcs inscribed within 0.005: short of the circle's area by less than 2 pi r 0.005 */
        {1, TSR_GEOM_JOIN_ROUND, 12 + M_PI - M_PI * 0.005, M_PI * 0.005},
        {-0.5, TSR_GEOM_JOIN_ROUND, 1, 1e-9},
    };
    for (int k = 0; k < 4; k++) {
        tsr_error err = {0};
        cr_assert_eq(tsr_geom_offset(&a, want[k].d, want[k].j, 0.005, &o, &err), TSR_OK, "%s",
                     err.msg);
        cr_assert(fabs(fabs(area(&o)) - want[k].area) < want[k].tol,
                  "case %d: area %.12f, want %.12f", k, area(&o), want[k].area);
    }
    tsr_geom_polys_free(&a), tsr_geom_polys_free(&o);
}

/* ---- errors -------------------------------------------------------------------------------- */

static void
expect_error(tsr_status st, const tsr_error *err, const char *msg)
{
    cr_assert_eq(st, TSR_EINVAL, "status %d (%s)", st, err->msg);
    cr_assert(strstr(err->msg, msg), "message '%s' lacks '%s'", err->msg, msg);
}

Test(coverage, bad_coordinates_are_refused_with_their_place)
{
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    cr_assert_eq(tsr_geom_polys_add_rect(&p, 1, 1, 2, 2, NULL), TSR_OK);
    tsr_geom_pt bad[3] = {{0, 0}, {1, 0}, {NAN, 1}};
    cr_assert_eq(tsr_geom_polys_add(&p, bad, 3, NULL), TSR_OK);
    tsr_geom_edges e;
    tsr_geom_edges_init(&e);
    tsr_error err = {0};
    expect_error(tsr_geom_edges_build(&p, tsr_rect_make(0, 0, 4, 4), &e, &err), &err,
                 "geom: ring 1 point 2: x = nan is not finite");
    cr_assert_eq(e.n, 0);
    p.pt[6].x = INFINITY;
    expect_error(tsr_geom_edges_build(&p, tsr_rect_make(0, 0, 4, 4), &e, &err), &err,
                 "ring 1 point 2: x = inf is not finite");
    p.pt[6].x = 0, p.pt[6].y = -3e11;
    float px[16];
    expect_error(tsr_geom_coverage(&p, tsr_rect_make(0, 0, 4, 4), px, &err), &err,
                 "ring 1 point 2: y = -3e+11 is beyond +-2^37 px");
    tsr_geom_polys q;
    tsr_geom_polys_init(&q);
    tsr_geom_polys o;
    tsr_geom_polys_init(&o);
    expect_error(tsr_geom_boolean(TSR_GEOM_UNION, &q, &p, &o, &err), &err,
                 "geom: b: ring 1 point 2");
    expect_error(tsr_geom_offset(&p, 1, TSR_GEOM_JOIN_ROUND, 0.1, &o, &err), &err,
                 "geom: ring 1 point 2");
    tsr_geom_polys_free(&o);
    tsr_geom_edges_free(&e);
    tsr_geom_polys_free(&p);
    tsr_geom_polys_free(&q);
}

Test(coverage, bad_rects_and_arguments_are_refused)
{
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    tsr_geom_edges e;
    tsr_geom_edges_init(&e);
    tsr_error err = {0};
    expect_error(tsr_geom_edges_build(&p, tsr_rect_make((int64_t)1 << 37, 0, 1, 1), &e, &err),
                 &err, "must lie within +-2^37 px");
    expect_error(tsr_geom_edges_build(&p, tsr_rect_make(INT64_MAX, 0, 2, 1), &e, &err), &err,
                 "must lie within");
    expect_error(tsr_geom_edges_build(&p, tsr_rect_make(0, 0, -1, 1), &e, &err), &err,
                 "must lie within");
    size_t n;
    expect_error(tsr_geom_arc_segments(0, 1, 0.1, &n, &err), &err, "radius and tolerance");
    expect_error(tsr_geom_arc_segments(1, 1, -0.1, &n, &err), &err, "radius and tolerance");
    expect_error(tsr_geom_arc_segments(1, NAN, 0.1, &n, &err), &err, "sweep finite");
    expect_error(tsr_geom_arc_segments(1e6, 2 * M_PI, 1e-9, &n, &err), &err,
                 "more than 65536");
    expect_error(tsr_geom_polys_add_circle(&p, 0, 0, -1, 0.1, &err), &err, "must be finite");
    expect_error(tsr_geom_polys_add_rect(&p, 0, 0, 0, 1, &err), &err, "sides must be > 0");
    tsr_geom_polys o;
    tsr_geom_polys_init(&o);
    expect_error(tsr_geom_offset(&p, NAN, TSR_GEOM_JOIN_ROUND, 0.1, &o, &err), &err,
                 "offset nan");
    expect_error(tsr_geom_offset(&p, 1, TSR_GEOM_JOIN_ROUND, 0, &o, &err), &err, "tolerance > 0");
    cr_assert_eq(p.nring, 0);
    tsr_geom_edges_free(&e);
    tsr_geom_polys_free(&p);
    tsr_geom_polys_free(&o);
}

Test(coverage, arcs_end_where_they_say)
{
    tsr_geom_pt q[9];
    tsr_geom_arc(1.5, -2.5, 3, 0.25, -1.75, 8, q);
    cr_assert(q[0].x == 1.5 + 3 * cos(0.25) && q[0].y == -2.5 + 3 * sin(0.25));
    cr_assert(q[8].x == 1.5 + 3 * cos(0.25 - 1.75) && q[8].y == -2.5 + 3 * sin(0.25 - 1.75));
    for (int i = 0; i < 9; i++)
        cr_assert(fabs(hypot(q[i].x - 1.5, q[i].y + 2.5) - 3) < 1e-12);
}
