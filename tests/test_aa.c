/* Shapes with and without aa: tsr_source_render (exact row intervals, coverage summed per
 * pixel only where an edge crosses it, polygons by scanline) against docs/format.md §4 written
 * literally: every pixel of the region, every one of its n x n sub-samples through the spec's
 * inside formulas, coverage mixed with tsr_pw_aa_mix (the mix every backend shares). The float buffers must
 * be equal byte for byte, under fills that vary per pixel (negative, -0, infinities, NaN). */
#include "nodes/nodes.h"
#include "nodes/pointwise.h" /* tsr_pw_sub, tsr_pw_aa_mix */

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The inside column of docs/format.md §4's table, written out (the tests build with
 * -ffp-contract=off like the library, so these are the same IEEE operations) */
static int
ref_inside(const tsr_source *s, double px, double py)
{
    double dx = px - s->center[0], dy = py - s->center[1];
    const double *q = s->rect;
    switch (s->kind) {
    case TSR_SRC_CIRCLE: return dx * dx + dy * dy <= s->radius * s->radius;
    case TSR_SRC_ELLIPSE:
        return (dx / s->radii[0]) * (dx / s->radii[0]) + (dy / s->radii[1]) * (dy / s->radii[1]) <= 1;
    case TSR_SRC_RING:
        return s->radii[0] * s->radii[0] <= dx * dx + dy * dy &&
               dx * dx + dy * dy <= s->radii[1] * s->radii[1];
    case TSR_SRC_RECT: return q[0] <= px && px <= q[0] + q[2] && q[1] <= py && py <= q[1] + q[3];
    case TSR_SRC_POLYGON: {
        int odd = 0;
        for (size_t i = 0; i < s->points.n; i++) {
            const double *a = s->points.p[i], *b = s->points.p[(i + 1) % s->points.n];
            double x1 = a[0], y1 = a[1], x2 = b[0], y2 = b[1];
            if ((y1 > py) != (y2 > py) && px < (x2 - x1) * (py - y1) / (y2 - y1) + x1)
                odd = !odd;
        }
        return odd;
    }
    default: cr_assert_fail("not a shape"); return 0;
    }
}

/* §2.2 literally, over every pixel of r (no bounding box) */
static void
ref_render(const tsr_source *s, tsr_rect r, float *px)
{
    int64_t n = s->aa;
    for (int64_t y = r.y; y < r.y + r.h; y++) {
        for (int64_t x = r.x; x < r.x + r.w; x++) {
            float *p = &px[(y - r.y) * r.w + (x - r.x)];
            if (n == 0) {
                if (ref_inside(s, (double)x + 0.5, (double)y + 0.5))
                    *p = s->value;
                continue;
            }
            int64_t count = 0;
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < n; i++)
                    count += ref_inside(s, tsr_pw_sub(x, i, n), tsr_pw_sub(y, j, n));
            if (count > 0)
                *p = tsr_pw_aa_mix(*p, s->value, count, n);
        }
    }
}

static unsigned
next(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 8) & 0xffffff;
}

static double
rnd(unsigned *seed, double lo, double hi)
{
    return lo + (hi - lo) * next(seed) / 16777216.0;
}

/* a coordinate on the 1/(2 q) grid, q in 1..16: it lands on sub-sample centres and pixel
 * edges of many aa values, where ties between a point and an edge decide */
static double
snapped(unsigned *seed, double lo, double hi)
{
    double q = 2.0 * (1 + next(seed) % 16);
    return floor(rnd(seed, lo, hi) * q) / q;
}

static float
fill_value(unsigned *seed)
{
    switch (next(seed) % 16) {
    case 0: return -0.0f;
    case 1: return INFINITY;
    case 2: return NAN;
    case 3: return 0.0f;
    default: return (float)rnd(seed, -2, 2);
    }
}

/* Render s over r both ways at every aa in [aa0, aa1] and compare the bytes. */
static void
assert_same(tsr_source *s, tsr_rect r, unsigned seed, int aa0, int aa1, const char *what)
{
    size_t np = (size_t)(r.w * r.h);
    float *got = malloc(np * sizeof *got), *want = malloc(np * sizeof *want);
    cr_assert(got && want);
    for (int aa = aa0; aa <= aa1; aa++) {
        s->aa = aa;
        for (size_t i = 0; i < np; i++)
            got[i] = want[i] = fill_value(&seed);
        tsr_source_render(s, r, got);
        ref_render(s, r, want);
        for (size_t i = 0; i < np; i++) {
            if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
                cr_assert_fail("%s (kind %d, aa %d), region %lld,%lld %lldx%lld: pixel %lld,%lld "
                               "is %a, the literal formula gives %a",
                               what, (int)s->kind, aa, (long long)r.x, (long long)r.y,
                               (long long)r.w, (long long)r.h, (long long)(r.x + (int64_t)i % r.w),
                               (long long)(r.y + (int64_t)i / r.w), got[i], want[i]);
        }
    }
    free(got);
    free(want);
}

static tsr_source
shape(tsr_source_kind kind, float value)
{
    tsr_source s;
    tsr_source_defaults(&s, kind);
    s.value = value;
    return s;
}

Test(aa, random_circles_ellipses_rings_and_rects_equal_the_literal_formula)
{
    unsigned seed = 1234;
    const tsr_source_kind kinds[] = {TSR_SRC_CIRCLE, TSR_SRC_ELLIPSE, TSR_SRC_RING, TSR_SRC_RECT};
    for (int it = 0; it < 160; it++) {
        tsr_source s = shape(kinds[it % 4], next(&seed) % 5 == 0 ? -0.0f : (float)rnd(&seed, -1, 3));
        bool snap = it % 8 >= 4;
        double (*co)(unsigned *, double, double) = snap ? snapped : rnd;
        s.center[0] = co(&seed, 5, 35);
        s.center[1] = co(&seed, 5, 35);
        s.radius = co(&seed, 0.2, 14) + 0.01;
        s.radii[0] = co(&seed, 0.1, 9);
        s.radii[1] = s.radii[0] + co(&seed, 0.1, 6) + 0.01;
        if (s.kind == TSR_SRC_ELLIPSE)
            s.radii[0] += 0.01; /* > 0 */
        s.rect[0] = co(&seed, 2, 30);
        s.rect[1] = co(&seed, 2, 30);
        s.rect[2] = co(&seed, 0.05, 12) + 0.01;
        s.rect[3] = co(&seed, 0.05, 12) + 0.01;
        /* the whole shape, and a region cutting it */
        assert_same(&s, tsr_rect_make(0, 0, 40, 40), seed, 0, 16, "random shape");
        assert_same(&s, tsr_rect_make(17, 13, 9, 21), seed + 1, 0, 16, "random shape, cut");
    }
}

/* Circles whose top, bottom, left or right point is a sub-sample exactly (and pixel corners
 * and centres), so one sub-sample row or column touches the circle in one point. */
Test(aa, tangent_circles_and_rings_equal_the_literal_formula)
{
    for (int n = 1; n <= 16; n++) {
        for (int m = 0; m < 4; m++) {
            tsr_source s = shape(m % 2 ? TSR_SRC_CIRCLE : TSR_SRC_RING, 0.75f);
            s.center[0] = 12 + (m + 0.5) / n;
            s.center[1] = 11 + (n - 1 - m % n + 0.5) / n;
            s.radius = 3 + (double)(m + 2 * n) / n;
            s.radii[0] = 1 + (double)m / n;
            s.radii[1] = s.radius;
            assert_same(&s, tsr_rect_make(0, 0, 26, 26), (unsigned)(n * 7 + m), n, n, "tangent");
            assert_same(&s, tsr_rect_make(0, 0, 26, 26), (unsigned)(n * 7 + m), 0, 0, "tangent");
        }
    }
}

/* Radius 1e6 with the centre far off the tile: only an arc crosses it. */
Test(aa, huge_radii_centred_far_outside_equal_the_literal_formula)
{
    const double c[][2] = {{-1e6 + 20.3, 15.0}, {20.0, 1e6 + 10.5}, {1e6 + 30.25, -1e6 + 8.0},
                           {-707106.0, -707106.0}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        tsr_source_kind kinds[] = {TSR_SRC_CIRCLE, TSR_SRC_ELLIPSE, TSR_SRC_RING};
        for (size_t k = 0; k < 3; k++) {
            tsr_source s = shape(kinds[k], 2.0f);
            s.center[0] = c[i][0];
            s.center[1] = c[i][1];
            s.radius = 1e6;
            s.radii[0] = kinds[k] == TSR_SRC_RING ? 1e6 - 6.5 : 1e6 + 0.5;
            s.radii[1] = 1e6;
            assert_same(&s, tsr_rect_make(0, 0, 36, 24), (unsigned)(i * 3 + k), 0, 16, "huge");
        }
    }
}

Test(aa, rects_with_integer_and_fractional_edges_equal_the_literal_formula)
{
    const double rects[][4] = {{3, 4, 10, 7}, {3.5, 4.5, 10, 7}, {2.25, 1.75, 0.5, 12.125},
                               {0, 0, 30, 30}, {-5, 6.03125, 50, 0.0625}, {7.96875, -3, 0.03, 40},
                               {1.5 + 1.0 / 3, 2 + 2.0 / 3, 11.0 / 3, 13.0 / 7}};
    for (size_t i = 0; i < sizeof rects / sizeof rects[0]; i++) {
        tsr_source s = shape(TSR_SRC_RECT, -1.5f);
        memcpy(s.rect, rects[i], sizeof s.rect);
        assert_same(&s, tsr_rect_make(0, 0, 20, 20), (unsigned)i, 0, 16, "rect");
    }
}

static void
polygon_case(const double (*pts)[2], size_t n, tsr_rect r, int aa0, int aa1, const char *what)
{
    tsr_source s = shape(TSR_SRC_POLYGON, 0.5f);
    s.points.p = malloc(n * sizeof *s.points.p);
    cr_assert(s.points.p);
    memcpy(s.points.p, pts, n * sizeof *pts);
    s.points.n = n;
    assert_same(&s, r, (unsigned)n, aa0, aa1, what);
    free(s.points.p);
}

Test(aa, degenerate_polygons_equal_the_literal_formula)
{
    const double collinear[][2] = {{2, 2}, {8, 5}, {14, 8}, {14, 14}, {2, 14}, {2, 8}};
    const double flat[][2] = {{1, 3}, {9, 7}, {17, 11}};            /* zero area */
    const double line[][2] = {{2, 5.5}, {10, 5.5}, {16, 5.5}};       /* horizontal, zero area */
    const double repeated[][2] = {{3, 3}, {3, 3}, {15, 3.5}, {15, 3.5}, {15, 15}, {3, 15},
                                  {3, 15}};
    const double horizontal[][2] = {{1.5, 2.5}, {16.5, 2.5}, {16.5, 9.5}, {9, 9.5}, {9, 15.5},
                                    {1.5, 15.5}};
    const double star[][2] = {{10, 1}, {15.3, 17}, {1.5, 7}, {18.5, 7}, {4.7, 17}}; /* pentagram */
    const double bowtie[][2] = {{2, 2}, {16, 16}, {16, 2}, {2, 16}};
    const double spike[][2] = {{9.5, 0.5}, {9.53125, 18}, {9.5625, 0.5}}; /* thinner than a px */
    const double onsub[][2] = {{2.5, 2.5}, {12.25, 2.75}, {14.0625, 9.5}, {3.5, 14.5}};
    struct {
        const double (*p)[2];
        size_t n;
        const char *what;
    } cases[] = {
        {collinear, 6, "collinear points"}, {flat, 3, "zero area"}, {line, 3, "a line"},
        {repeated, 7, "repeated vertices"}, {horizontal, 6, "horizontal edges"},
        {star, 5, "self-intersecting star"}, {bowtie, 4, "bow tie"}, {spike, 3, "spike"},
        {onsub, 4, "vertices on sub-samples"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        polygon_case(cases[i].p, cases[i].n, tsr_rect_make(0, 0, 19, 19), 0, 16, cases[i].what);
        polygon_case(cases[i].p, cases[i].n, tsr_rect_make(5, 4, 7, 9), 0, 16, cases[i].what);
    }
}

/* An edge that starts exactly on the region's last sub-sample row counts on that row (y1 <= sy
 * < y2), one that ends on its first does not: the scan's y filter must keep the first. */
Test(aa, polygon_edges_starting_on_the_last_sub_sample_row_count)
{
    for (int n = 0; n <= 16; n++) {
        int64_t m = n ? n : 1;
        double last = 9 + (m - 0.5) / (double)m, first = 0.5 / (double)m;
        const double pts[][2] = {{0, first}, {8, last}, {8, 20}, {0, 20}};
        polygon_case(pts, 4, tsr_rect_make(0, 0, 12, 10), n, n, "edge from the last sub-row");
    }
}

Test(aa, random_polygons_equal_the_literal_formula)
{
    unsigned seed = 99;
    double pts[24][2];
    for (int it = 0; it < 200; it++) {
        size_t n = 3 + next(&seed) % 10;
        bool snap = it % 2;
        for (size_t i = 0; i < n; i++) {
            pts[i][0] = snap ? snapped(&seed, -3, 27) : rnd(&seed, -3, 27);
            pts[i][1] = snap ? snapped(&seed, -3, 27) : rnd(&seed, -3, 27);
            if (i > 0 && next(&seed) % 6 == 0) /* horizontal or vertical edge */
                pts[i][next(&seed) % 2] = pts[i - 1][0 + (int)(next(&seed) % 2)];
        }
        int aa = (int)(next(&seed) % 17);
        polygon_case((const double (*)[2])pts, n, tsr_rect_make(0, 0, 24, 24), aa, aa, "random");
        polygon_case((const double (*)[2])pts, n, tsr_rect_make(0, 0, 24, 24), 0, 0, "random");
    }
}

/* A Siemens star: 36 spokes as one polygon of 108 vertices (centre, rim, rim), around the
 * centre where every row crosses many edges and spokes are thinner than a pixel. */
Test(aa, siemens_star_polygon_equals_the_literal_formula)
{
    enum { SPOKES = 36 };
    double pts[3 * SPOKES][2];
    for (int i = 0; i < SPOKES; i++) {
        double a0 = 2 * M_PI * i / SPOKES, a1 = 2 * M_PI * (i + 0.5) / SPOKES;
        pts[3 * i][0] = 40, pts[3 * i][1] = 40;
        pts[3 * i + 1][0] = 40 + 60 * cos(a0), pts[3 * i + 1][1] = 40 + 60 * sin(a0);
        pts[3 * i + 2][0] = 40 + 60 * cos(a1), pts[3 * i + 2][1] = 40 + 60 * sin(a1);
    }
    polygon_case((const double (*)[2])pts, 3 * SPOKES, tsr_rect_make(32, 33, 16, 14), 0, 16,
                 "siemens star");
    polygon_case((const double (*)[2])pts, 3 * SPOKES, tsr_rect_make(0, 60, 30, 8), 4, 4,
                 "siemens star, rim");
}
