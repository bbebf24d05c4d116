/* Sources (DESIGN.md §2.2): shapes, gradients, images drawn over a node's fill.
 *
 * Everything is computed in double exactly as the spec writes it, and each pixel is rounded
 * once to float32, so every backend gets the same bits. Shapes only visit the rows and
 * columns of their (conservatively grown) bounding box: a circle on a 200000 px node costs
 * its own area, not the node's. */
#include "nodes/nodes.h"
#include "nodes/pointwise.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define OFF(f) offsetof(tsr_source, f)
#define COORD2(k, f) {k, TSR_P_F64_2, OFF(f), TSR_PF_REQUIRED, 0, 0, 0, NULL, "[x, y], px"}
#define VALUE {"value", TSR_P_F32, OFF(value), 0, 0, 0, 0, NULL, "value where covered, default 1"}
#define AA {"aa", TSR_P_INT, OFF(aa), TSR_PF_RANGE, 1, 16, 0, NULL, "n x n sub-samples, 1..16"}
#define POSITIVE(k, t, f, h) {k, t, OFF(f), TSR_PF_REQUIRED | TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, HUGE_VAL, 0, NULL, h}

static const tsr_param circle_params[] = {
    COORD2("center", center),
    POSITIVE("radius", TSR_P_F64, radius, "radius, px, > 0"),
    VALUE,
    AA,
};
static const tsr_param ellipse_params[] = {
    COORD2("center", center),
    POSITIVE("radii", TSR_P_F64_2, radii, "[rx, ry], px, > 0"),
    VALUE,
    AA,
};
static const tsr_param ring_params[] = {
    COORD2("center", center),
    {"radii", TSR_P_F64_2, OFF(radii), TSR_PF_REQUIRED | TSR_PF_RANGE, 0, HUGE_VAL, 0, NULL,
     "[r_in, r_out], 0 <= r_in < r_out"},
    VALUE,
    AA,
};
static const tsr_param rect_params[] = {
    {"rect", TSR_P_F64_4, OFF(rect), TSR_PF_REQUIRED, 0, 0, 0, NULL, "[x, y, w, h], w, h > 0"},
    VALUE,
    AA,
};
static const tsr_param polygon_params[] = {
    {"points", TSR_P_POINTS, OFF(points), TSR_PF_REQUIRED, 0, 0, 3, NULL,
     "[[x, y], ...], >= 3, even-odd fill"},
    VALUE,
    AA,
};
static const tsr_param linear_params[] = {
    COORD2("from", from),
    COORD2("to", to),
    {"values", TSR_P_F32_2, OFF(values), TSR_PF_REQUIRED, 0, 0, 0, NULL, "[a, b] at from, to"},
};
static const tsr_param radial_params[] = {
    COORD2("center", center),
    POSITIVE("radius", TSR_P_F64, radius, "radius where b is reached, > 0"),
    {"values", TSR_P_F32_2, OFF(values), TSR_PF_REQUIRED, 0, 0, 0, NULL, "[a, b] at centre, radius"},
};

#define DESC(k, v, kind, p) {k, v, kind, p, sizeof p / sizeof p[0]}
const tsr_source_desc tsr_source_descs[TSR_SRC_COUNT] = {
    DESC("shape", "circle", TSR_SRC_CIRCLE, circle_params),
    DESC("shape", "ellipse", TSR_SRC_ELLIPSE, ellipse_params),
    DESC("shape", "ring", TSR_SRC_RING, ring_params),
    DESC("shape", "rect", TSR_SRC_RECT, rect_params),
    DESC("shape", "polygon", TSR_SRC_POLYGON, polygon_params),
    DESC("gradient", "linear", TSR_SRC_LINEAR, linear_params),
    DESC("gradient", "radial", TSR_SRC_RADIAL, radial_params),
    {"image", NULL, TSR_SRC_IMAGE, NULL, 0},
};

void
tsr_source_defaults(tsr_source *s, tsr_source_kind kind)
{
    *s = (tsr_source){0};
    s->kind = kind;
    s->value = 1.0f;
}

tsr_status
tsr_source_check(const tsr_source *s, tsr_check *c)
{
    switch (s->kind) {
    case TSR_SRC_RING:
        if (!(s->radii[0] < s->radii[1]))
            return tsr_check_failf(c, "radii", "r_in must be < r_out");
        break;
    case TSR_SRC_RECT:
        if (!(s->rect[2] > 0 && s->rect[3] > 0))
            return tsr_check_failf(c, "rect", "w and h must be > 0");
        break;
    case TSR_SRC_LINEAR:
        if (s->from[0] == s->to[0] && s->from[1] == s->to[1])
            return tsr_check_failf(c, "to", "must differ from 'from'");
        break;
    default: break;
    }
    return TSR_OK;
}

void
tsr_source_free(tsr_source *s)
{
    free(s->points.p);
    free(s->path);
    free(s->img);
    free(s->where);
    s->points.p = NULL;
    s->path = NULL;
    s->img = NULL;
    s->where = NULL;
}

/* ---- inside tests, exactly the formulas of DESIGN.md §2.2 ----------------------------- */

static int
inside(const tsr_source *s, double px, double py)
{
    double dx = px - s->center[0], dy = py - s->center[1];
    switch (s->kind) {
    case TSR_SRC_CIRCLE: return tsr_pw_in_circle(dx, dy, s->radius);
    case TSR_SRC_ELLIPSE: return tsr_pw_in_ellipse(dx, dy, s->radii[0], s->radii[1]);
    case TSR_SRC_RING: return tsr_pw_in_ring(dx, dy, s->radii[0], s->radii[1]);
    case TSR_SRC_RECT: return tsr_pw_in_rect(px, py, s->rect);
    case TSR_SRC_POLYGON:
        return tsr_pw_in_polygon((const double (*)[2])s->points.p, (int64_t)s->points.n, px, py);
    default: return 0;
    }
}

/* A box (in pixel index space, inclusive-exclusive) outside which no sample point can be
 * inside; grown by 2 px so rounding never cuts a pixel the formula would include. */
static void
shape_bounds(const tsr_source *s, double *x0, double *y0, double *x1, double *y1)
{
    switch (s->kind) {
    case TSR_SRC_CIRCLE:
        *x0 = s->center[0] - s->radius;
        *x1 = s->center[0] + s->radius;
        *y0 = s->center[1] - s->radius;
        *y1 = s->center[1] + s->radius;
        break;
    case TSR_SRC_ELLIPSE:
    case TSR_SRC_RING: {
        double rx = s->kind == TSR_SRC_RING ? s->radii[1] : s->radii[0];
        double ry = s->kind == TSR_SRC_RING ? s->radii[1] : s->radii[1];
        *x0 = s->center[0] - rx;
        *x1 = s->center[0] + rx;
        *y0 = s->center[1] - ry;
        *y1 = s->center[1] + ry;
        break;
    }
    case TSR_SRC_RECT:
        *x0 = s->rect[0];
        *x1 = s->rect[0] + s->rect[2];
        *y0 = s->rect[1];
        *y1 = s->rect[1] + s->rect[3];
        break;
    case TSR_SRC_POLYGON:
        *x0 = *x1 = s->points.p[0][0];
        *y0 = *y1 = s->points.p[0][1];
        for (size_t i = 1; i < s->points.n; i++) {
            *x0 = fmin(*x0, s->points.p[i][0]);
            *x1 = fmax(*x1, s->points.p[i][0]);
            *y0 = fmin(*y0, s->points.p[i][1]);
            *y1 = fmax(*y1, s->points.p[i][1]);
        }
        break;
    default: break;
    }
    *x0 = floor(*x0) - 2;
    *y0 = floor(*y0) - 2;
    *x1 = ceil(*x1) + 2;
    *y1 = ceil(*y1) + 2;
}

/* Clamp a double bound into [lo, hi] as int64 (bounds may be far outside int64). */
static int64_t
clampd(double v, int64_t lo, int64_t hi)
{
    if (!(v > (double)lo))
        return lo;
    if (!(v < (double)hi))
        return hi;
    return (int64_t)v;
}

/* The pixel column whose centre is nearest the shape's centre along x: there |dx| is smallest,
 * and for a circle, ellipse or rect the inside test only gets "less inside" moving away from it
 * (dx = px - cx, its square and the sum are all rounded monotonically), so one row's inside
 * pixels are one interval around it. */
static double
centre_x(const tsr_source *s)
{
    return s->kind == TSR_SRC_RECT ? s->rect[0] + s->rect[2] / 2 : s->center[0];
}

static int
inside_at(const tsr_source *s, int64_t x, double py)
{
    return inside(s, (double)x + 0.5, py);
}

/* First x in [lo, hi] where pred flips from `from` (held at lo) to !from; hi + 1 if never. */
static int64_t
flip(const tsr_source *s, double py, int64_t lo, int64_t hi, int from)
{
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (inside_at(s, mid, py) == from)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Fill the inside pixels of row y within [x0, x1) with `value`, finding the interval's ends
 * by bisection on the exact inside test: O(log w) tests a row instead of w, same pixels. */
static void
fill_row_interval(const tsr_source *s, double py, int64_t x0, int64_t x1, float *row, float value)
{
    double c = floor(centre_x(s));
    int64_t xm = c < (double)x0 ? x0 : (c > (double)(x1 - 1) ? x1 - 1 : (int64_t)c);
    if (!inside_at(s, xm, py))
        return; /* the most-inside column of the window is out: so is the whole row */
    int64_t a = xm, b = xm;
    if (xm > x0 && inside_at(s, x0, py))
        a = x0;
    else if (xm > x0)
        a = flip(s, py, x0, xm, 0); /* false ... true */
    if (xm < x1 - 1 && inside_at(s, x1 - 1, py))
        b = x1 - 1;
    else if (xm < x1 - 1)
        b = flip(s, py, xm, x1 - 1, 1) - 1; /* true ... false */
    for (int64_t x = a; x <= b; x++)
        row[x] = value;
}

tsr_rect
tsr_source_box(const tsr_source *s, tsr_rect r)
{
    double bx0 = 0, by0 = 0, bx1 = 0, by1 = 0;
    shape_bounds(s, &bx0, &by0, &bx1, &by1);
    int64_t x0 = clampd(bx0, r.x, r.x + r.w), x1 = clampd(bx1, r.x, r.x + r.w);
    int64_t y0 = clampd(by0, r.y, r.y + r.h), y1 = clampd(by1, r.y, r.y + r.h);
    return tsr_rect_make(x0, y0, x1 > x0 ? x1 - x0 : 0, y1 > y0 ? y1 - y0 : 0);
}

static void
render_shape(const tsr_source *s, tsr_rect r, float *px)
{
    tsr_rect box = tsr_source_box(s, r);
    int64_t x0 = box.x, x1 = box.x + box.w, y0 = box.y, y1 = box.y + box.h;
    int64_t n = s->aa;
    float value = s->value;
    bool intervals = n == 0 && (s->kind == TSR_SRC_CIRCLE || s->kind == TSR_SRC_ELLIPSE ||
                                s->kind == TSR_SRC_RECT);
    /* a polygon's inside test walks every edge: with many points one pixel is costly */
    bool poll_pixels = s->kind == TSR_SRC_POLYGON;
    for (int64_t y = y0; y < y1; y++) {
        float *row = px + (y - r.y) * r.w - r.x;
        if (tsr_stop_requested())
            return; /* unfinished: the caller drops it */
        if (intervals) {
            if (x0 < x1)
                fill_row_interval(s, (double)y + 0.5, x0, x1, row, value);
            continue;
        }
        for (int64_t x = x0; x < x1; x++) {
            if (poll_pixels && tsr_stop_requested())
                return;
            if (n == 0) {
                if (inside(s, (double)x + 0.5, (double)y + 0.5))
                    row[x] = value;
                continue;
            }
            int64_t count = 0;
            for (int64_t j = 0; j < n; j++) {
                double sy = tsr_pw_sub(y, j, n);
                for (int64_t i = 0; i < n; i++)
                    count += inside(s, tsr_pw_sub(x, i, n), sy);
            }
            if (count == 0)
                continue;
            /* coverage and the mix in double, rounded once (DESIGN.md §2.2, docs/semantics.md) */
            row[x] = tsr_pw_aa_mix(row[x], value, count, n);
        }
    }
}

/* A linear gradient along one axis: the other axis's term, (py - fy) * gy with gy == 0 (or
 * (px - fx) * gx with gx == 0), is an exact zero, so every row is the same (every pixel of a
 * row is). Only its sign varies, and a signed zero survives to the value only when a is -0:
 * that case takes the general loop. Same bits, one row (one pixel per row) computed. */
static bool
render_axis_gradient(const tsr_source *s, tsr_rect r, float *px, double a, double b, double fx,
                     double fy, double gx, double gy, double len2)
{
    if (s->kind != TSR_SRC_LINEAR || (gx != 0 && gy != 0) || (a == 0 && signbit(a)))
        return false;
    for (int64_t y = 0; y < r.h; y++) {
        double py = (double)(r.y + y) + 0.5;
        float *row = px + y * r.w;
        if (tsr_stop_requested())
            return true; /* unfinished: the caller drops it */
        if (gy == 0 && y > 0) {
            memcpy(row, px, (size_t)r.w * sizeof *row);
            continue;
        }
        if (gx == 0) {
            float v = tsr_pw_linear(a, b, fx, fy, gx, gy, len2, (double)r.x + 0.5, py);
            for (int64_t x = 0; x < r.w; x++)
                row[x] = v;
            continue;
        }
        for (int64_t x = 0; x < r.w; x++)
            row[x] = tsr_pw_linear(a, b, fx, fy, gx, gy, len2, (double)(r.x + x) + 0.5, py);
    }
    return true;
}

static void
render_gradient(const tsr_source *s, tsr_rect r, float *px)
{
    double a = s->values[0], b = s->values[1];
    double fx = s->from[0], fy = s->from[1];
    double gx = s->to[0] - fx, gy = s->to[1] - fy;
    double len2 = gx * gx + gy * gy;
    if (render_axis_gradient(s, r, px, a, b, fx, fy, gx, gy, len2))
        return;
    for (int64_t y = 0; y < r.h; y++) {
        double py = (double)(r.y + y) + 0.5;
        float *row = px + y * r.w;
        if (tsr_stop_requested())
            return; /* unfinished: the caller drops it */
        if (s->kind == TSR_SRC_LINEAR) {
            for (int64_t x = 0; x < r.w; x++)
                row[x] = tsr_pw_linear(a, b, fx, fy, gx, gy, len2, (double)(r.x + x) + 0.5, py);
        } else {
            for (int64_t x = 0; x < r.w; x++)
                row[x] = tsr_pw_radial(a, b, (double)(r.x + x) + 0.5 - s->center[0],
                                       py - s->center[1], s->radius);
        }
    }
}

static void
render_image(const tsr_source *s, tsr_rect r, float *px)
{
    for (int64_t y = 0; y < r.h; y++) {
        const float *src = s->img + (r.y + y) * s->iw + r.x;
        float *row = px + y * r.w;
        for (int64_t x = 0; x < r.w; x++)
            row[x] = src[x];
    }
}

void
tsr_source_render(const tsr_source *s, tsr_rect r, float *px)
{
    switch (s->kind) {
    case TSR_SRC_LINEAR:
    case TSR_SRC_RADIAL: render_gradient(s, r, px); break;
    case TSR_SRC_IMAGE:
        if (s->img)
            render_image(s, r, px);
        break;
    default: render_shape(s, r, px); break;
    }
}
