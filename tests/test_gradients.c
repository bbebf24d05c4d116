/* gradients: tsr_source_render's linear and radial gradients equal docs/format.md §4's formula
 * (nodes/pointwise.h, what the GPU evaluates too) at every pixel, bit for bit, including the
 * shortcut for gradients along one axis (one row, or one pixel per row, computed) and its
 * signed-zero exception (values [-0, b]). */
#include "nodes/nodes.h"
#include "nodes/pointwise.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void
check(tsr_source_kind kind, double from[2], double to[2], float a, float b, tsr_rect r)
{
    tsr_source s;
    tsr_source_defaults(&s, kind);
    memcpy(s.from, from, sizeof s.from);
    memcpy(s.to, to, sizeof s.to);
    s.center[0] = from[0];
    s.center[1] = from[1];
    s.radius = 37.5;
    s.values[0] = a;
    s.values[1] = b;
    float *px = malloc((size_t)r.w * (size_t)r.h * sizeof *px);
    cr_assert(px != NULL);
    tsr_source_render(&s, r, px);
    double gx = to[0] - from[0], gy = to[1] - from[1], len2 = gx * gx + gy * gy;
    for (int64_t y = 0; y < r.h; y++) {
        for (int64_t x = 0; x < r.w; x++) {
            double pxc = (double)(r.x + x) + 0.5, pyc = (double)(r.y + y) + 0.5;
            float want = kind == TSR_SRC_LINEAR
                             ? tsr_pw_linear(a, b, from[0], from[1], gx, gy, len2, pxc, pyc)
                             : tsr_pw_radial(a, b, pxc - from[0], pyc - from[1], s.radius);
            float got = px[y * r.w + x];
            cr_assert(memcmp(&got, &want, sizeof got) == 0,
                      "kind %d from (%g, %g) to (%g, %g) values [%g, %g]: pixel (%lld, %lld) is "
                      "%a, the formula %a", (int)kind, from[0], from[1], to[0], to[1], (double)a,
                      (double)b, (long long)(r.x + x), (long long)(r.y + y), (double)got,
                      (double)want);
        }
    }
    free(px);
}

Test(gradients, every_pixel_is_the_formula_along_an_axis_and_across)
{
    tsr_rect rects[] = {tsr_rect_make(0, 0, 61, 47), tsr_rect_make(-30, 17, 90, 33),
                        tsr_rect_make(100, -5, 1, 40), tsr_rect_make(3, 9, 50, 1)};
    /* along x, along y, both ways, diagonal; ends inside and outside the rects; ends on pixel
     * centres, where both terms are zeros whose signs differ across a row (or a column) */
    double ends[][4] = {{0, 0, 60, 0},   {60, 5, 0, 5},   {10, 0, 10, 40}, {10, 40, 10, 0},
                        {-5, 3, 80, 3},  {20, 20, 21, 20}, {0, 0, 60, 47}, {30.5, 10, 30.5, 11},
                        {3.5, 8.5, 3.5, 30}, {3.5, 8.5, 3.5, -30}, {8.5, 3.5, -30, 3.5},
                        {8.5, 20.5, -30, 20.5}};
    float values[][2] = {{0, 1}, {0.6f, 1}, {1, 0.25f}, {-0.0f, 1}, {-0.0f, -0.5f}, {0.3f, 0.3f}};
    for (size_t i = 0; i < sizeof rects / sizeof rects[0]; i++)
        for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++)
            for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
                check(TSR_SRC_LINEAR, ends[k], ends[k] + 2, values[v][0], values[v][1], rects[i]);
                check(TSR_SRC_RADIAL, ends[k], ends[k] + 2, values[v][0], values[v][1], rects[i]);
            }
}
