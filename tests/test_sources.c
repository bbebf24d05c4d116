/* sources: the renderer (bounding boxes, row intervals found by bisection) against a naive
 * per-pixel evaluation of docs/format.md §4's formulas. */
#include "nodes/nodes.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
naive_inside(const tsr_source *s, double px, double py)
{
    double dx = px - s->center[0], dy = py - s->center[1];
    switch (s->kind) {
    case TSR_SRC_CIRCLE: return dx * dx + dy * dy <= s->radius * s->radius;
    case TSR_SRC_ELLIPSE: return (dx / s->radii[0]) * (dx / s->radii[0]) + (dy / s->radii[1]) * (dy / s->radii[1]) <= 1;
    case TSR_SRC_RING: {
        double d = dx * dx + dy * dy;
        return s->radii[0] * s->radii[0] <= d && d <= s->radii[1] * s->radii[1];
    }
    case TSR_SRC_RECT:
        return s->rect[0] <= px && px <= s->rect[0] + s->rect[2] && s->rect[1] <= py &&
               py <= s->rect[1] + s->rect[3];
    default: return 0;
    }
}

static double
rnd(unsigned *seed, double lo, double hi)
{
    *seed = *seed * 1103515245u + 12345u;
    return lo + (hi - lo) * ((*seed >> 8) & 0xffffff) / 16777216.0;
}

Test(sources, shapes_cover_exactly_the_pixels_the_formula_says)
{
    unsigned seed = 7;
    const tsr_source_kind kinds[] = {TSR_SRC_CIRCLE, TSR_SRC_ELLIPSE, TSR_SRC_RING, TSR_SRC_RECT};
    for (int it = 0; it < 400; it++) {
        tsr_source s;
        tsr_source_defaults(&s, kinds[it % 4]);
        /* far from the origin half of the time: rounding of px - cx matters there */
        double base = (it & 4) ? 1099511627000.0 : 0.0;
        tsr_rect r = {(int64_t)base + (int64_t)rnd(&seed, -40, 40), (int64_t)rnd(&seed, -40, 40), 97, 61};
        s.center[0] = (double)r.x + rnd(&seed, -30, 130);
        s.center[1] = (double)r.y + rnd(&seed, -30, 90);
        s.radius = rnd(&seed, 0.3, 70);
        s.radii[0] = rnd(&seed, 0.2, 60);
        s.radii[1] = rnd(&seed, 0.2, 60);
        if (s.kind == TSR_SRC_RING) {
            s.radii[0] = rnd(&seed, 0, 20);
            s.radii[1] = s.radii[0] + rnd(&seed, 0.1, 40);
        }
        s.rect[0] = (double)r.x + rnd(&seed, -20, 100);
        s.rect[1] = (double)r.y + rnd(&seed, -20, 60);
        s.rect[2] = rnd(&seed, 0.1, 80);
        s.rect[3] = rnd(&seed, 0.1, 50);
        s.value = 0.75f;
        float got[97 * 61];
        for (int i = 0; i < 97 * 61; i++)
            got[i] = 0.25f;
        tsr_source_render(&s, r, got);
        for (int y = 0; y < r.h; y++)
            for (int x = 0; x < r.w; x++) {
                int in = naive_inside(&s, (double)(r.x + x) + 0.5, (double)(r.y + y) + 0.5);
                cr_assert_eq(got[y * r.w + x], in ? 0.75f : 0.25f, "shape %d case %d pixel %d,%d",
                             s.kind, it, x, y);
            }
    }
}

Test(sources, aa_coverage_mixes_in_double_and_rounds_once)
{
    tsr_source s;
    tsr_source_defaults(&s, TSR_SRC_RECT);
    s.rect[0] = 0.5; /* covers the right half of pixel 0: 2 of 4 sub-samples with aa 2 */
    s.rect[1] = 0;
    s.rect[2] = 10;
    s.rect[3] = 10;
    s.aa = 2;
    s.value = 0.9f;
    float px[1] = {0.3f};
    tsr_source_render(&s, tsr_rect_make(0, 0, 1, 1), px);
    cr_assert_eq(px[0], (float)((double)0.3f * 0.5 + (double)0.9f * 0.5));
}
