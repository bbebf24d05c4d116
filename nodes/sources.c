/* Sources (docs/format.md §4): shapes, gradients, images drawn over a node's fill.
 *
 * Everything is computed in double exactly as the spec writes it, and each pixel is rounded
 * once to float32, so every backend gets the same bits. Shapes only visit the rows and
 * columns of their (conservatively grown) bounding box: a circle on a 200000 px node costs
 * its own area, not the node's. */
#include "nodes/layout_src.h"
#include "nodes/nodes.h"
#include "nodes/pointwise.h"
#include "nodes/vector.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFF(f) offsetof(tsr_source, f)
#define COORD2(k, f) {k, TSR_P_F64_2, OFF(f), TSR_PF_REQUIRED, 0, 0, 0, NULL, "[x, y], px"}
#define VALUE {"value", TSR_P_F32, OFF(value), 0, 0, 0, 0, NULL, "value where covered, default 1"}
static const char *const aa_words[] = {"exact", NULL}; /* -1: TSR_AA_EXACT */
#define AA {"aa", TSR_P_INT, OFF(aa), TSR_PF_RANGE | TSR_PF_UNITLESS, 1, 16, 0, aa_words, \
            "n x n sub-samples, 1..16, or exact"}
#define POSITIVE(k, t, f, h) {k, t, OFF(f), TSR_PF_REQUIRED | TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, HUGE_VAL, 0, NULL, h}
/* A shape's placement (docs/shape-transforms.md), spelt as the text source's rotate and mirror;
 * a transformed shape is drawn exact. In the canonical form only when given, so the designs
 * written before these keys keep their fingerprints. */
#define XFORM_F (TSR_PF_FORM_IF_SET | TSR_PF_RANGE)
#define XFORM                                                                                    \
    {"rotate", TSR_P_F64, OFF(rotate), XFORM_F | TSR_PF_UNITLESS, -360, 360, 0, NULL,          \
     "degrees, counterclockwise as seen, about the shape's centre"},                           \
    {"mirror", TSR_P_BOOL, OFF(mirror), TSR_PF_FORM_IF_SET, 0, 0, 0, NULL,                      \
     "mirrored left-right about the shape's centre, first"},                                   \
    {"scale", TSR_P_F64, OFF(scale), XFORM_F | TSR_PF_MIN_OPEN | TSR_PF_UNITLESS, 0, 1e6, 0,  \
     NULL, "factor about the shape's centre, > 0, default 1"},                                 \
    {"translate", TSR_P_F64_2, OFF(translate), XFORM_F, -TSR_COORD_MAX, TSR_COORD_MAX, 0, NULL, \
     "[dx, dy], px, moved by last"}

static const tsr_param circle_params[] = {
    COORD2("center", center),
    POSITIVE("radius", TSR_P_F64, radius, "radius, px, > 0"),
    VALUE,
    AA,
    XFORM,
};
static const tsr_param ellipse_params[] = {
    COORD2("center", center),
    POSITIVE("radii", TSR_P_F64_2, radii, "[rx, ry], px, > 0"),
    VALUE,
    AA,
    XFORM,
};
static const tsr_param ring_params[] = {
    COORD2("center", center),
    {"radii", TSR_P_F64_2, OFF(radii), TSR_PF_REQUIRED | TSR_PF_RANGE, 0, HUGE_VAL, 0, NULL,
     "[r_in, r_out], 0 <= r_in < r_out"},
    VALUE,
    AA,
    XFORM,
};
static const tsr_param rect_params[] = {
    {"rect", TSR_P_F64_4, OFF(rect), TSR_PF_REQUIRED, 0, 0, 0, NULL, "[x, y, w, h], w, h > 0"},
    VALUE,
    AA,
    XFORM,
};
static const tsr_param polygon_params[] = {
    {"points", TSR_P_POINTS, OFF(points), TSR_PF_REQUIRED, 0, 0, 3, NULL,
     "[[x, y], ...], >= 3, even-odd fill"},
    VALUE,
    AA,
    XFORM,
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

/* layout (nodes/layout_src.c): `layout: FILE` is the discriminator (the path, as `image:`);
 * these are the other keys. */
static const tsr_param layout_params[] = {
    {"cell", TSR_P_NAME, OFF(cell), 0, 0, 0, 0, NULL, "cell drawn, default: the single top cell"},
    {"layers", TSR_P_LAYERS, OFF(layers), TSR_PF_REQUIRED, 0, 0, 0, NULL,
     "[[layer, datatype, value], ...] or [[name, value], ...] (DXF), drawn in order"},
    {"pitch", TSR_P_F64, OFF(pitch), TSR_PF_RANGE | TSR_PF_MIN_OPEN | TSR_PF_MICRONS, 0, HUGE_VAL, 0, NULL,
     "pixel pitch, um or with a unit (250nm); default: the design's pixel:"},
    {"pitch_nm", TSR_P_F64, OFF(pitch_nm), TSR_PF_RANGE | TSR_PF_MIN_OPEN | TSR_PF_UNITLESS, 0, HUGE_VAL, 0, NULL,
     "pixel pitch, nm (or pitch)"},
    {"window", TSR_P_F64_4, OFF(window), TSR_PF_MICRONS, 0, 0, 0, NULL,
     "[x0, y0, x1, y1], um or with units, x0 < x1, y0 < y1; default: the cell's box"},
    /* the whole layout transformed about its origin (docs/layouts.md §8), spelt as text's */
    /* in the fingerprint only where given (XFORM_F): a layout without them keeps its own */
    {"rotate", TSR_P_F64, OFF(rotate), XFORM_F | TSR_PF_UNITLESS, -360, 360, 0, NULL,
     "degrees, counterclockwise as the image is seen, about the layout's origin"},
    {"mirror", TSR_P_BOOL, OFF(mirror), TSR_PF_FORM_IF_SET, 0, 0, 0, NULL, "mirrored left-right (x -> -x), before the rotation"},
    {"scale", TSR_P_F64, OFF(scale), XFORM_F | TSR_PF_MIN_OPEN | TSR_PF_UNITLESS, 0, 1e6, 0, NULL,
     "magnification about the layout's origin, > 0 (default 1)"},
    {"translate", TSR_P_F64_2, OFF(translate), XFORM_F, -1e12, 1e12, 0, NULL,
     "[dx, dy], px: the mapped layout shifted, sub-pixel allowed (default [0, 0])"},
};

/* text (nodes/text_src.c): `text: STRING` is the discriminator; these are the other keys. */
static const char *const text_halign_names[] = {"left", "center", "right", NULL};
static const char *const text_valign_names[] = {"top", "baseline", "middle", "bottom", NULL};
static const tsr_param text_params[] = {
    {"font", TSR_P_PATH, OFF(path), 0, 0, 0, 0, NULL,
     "a TrueType/OpenType file; default: the built-in manhattan font"},
    POSITIVE("height", TSR_P_F64, height, "capital height, px, > 0"),
    {"position", TSR_P_F64_2, OFF(position), TSR_PF_RANGE, -TSR_COORD_MAX, TSR_COORD_MAX, 0, NULL,
     "[x, y] where the anchor goes, px; default [0, 0]"},
    {"align", TSR_P_ENUM, OFF(halign), 0, 0, 0, 0, text_halign_names,
     "left, center or right: lines aligned on the anchor"},
    {"anchor", TSR_P_ENUM, OFF(valign), 0, 0, 0, 0, text_valign_names,
     "top, baseline, middle or bottom: the anchor's height"},
    {"rotate", TSR_P_F64, OFF(rotate), TSR_PF_RANGE | TSR_PF_UNITLESS, -360, 360, 0, NULL,
     "degrees, counterclockwise as seen, about the anchor"},
    {"mirror", TSR_P_BOOL, OFF(mirror), 0, 0, 0, 0, NULL, "mirrored left-right about the anchor"},
    {"line_spacing", TSR_P_F64, OFF(line_spacing), TSR_PF_RANGE | TSR_PF_UNITLESS, 0, 1e6, 0, NULL,
     "capital heights between baselines; 0: the font's"},
    {"tolerance", TSR_P_F64, OFF(tolerance), TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, 1, 0, NULL,
     "curves as chords within this, px; default 1/256"},
    VALUE,
};

/* booleans (nodes/boolean_src.c): `boolean: OP`; the operand lists `a` and `b` are read by the
 * loader (they are sources themselves); these are the other keys. */
static const char *const boolean_join_names[] = {"round", "square", "miter", NULL};
static const tsr_param boolean_params[] = {
    {"offset", TSR_P_F64, OFF(offset), TSR_PF_RANGE, -1e6, 1e6, 0, NULL,
     "px the result grows by (< 0: shrinks), default 0"},
    {"join", TSR_P_ENUM, OFF(join), 0, 0, 0, 0, boolean_join_names,
     "corners of the offset: round (default), square or miter"},
    {"tolerance", TSR_P_F64, OFF(tolerance), TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, 1, 0, NULL,
     "circles, arcs and round corners within this, px; default 1/256"},
    VALUE,
};

/* A kind without keys of its own: its `params` column says none. The table's count is
 * sizeof(table) / sizeof(tsr_param), which for this null pointer is 0 (a pointer is smaller
 * than a tsr_param). */
#define none_params ((const tsr_param *)NULL)
_Static_assert(sizeof(const tsr_param *) < sizeof(tsr_param), "none_params counts 0");

const tsr_source_desc tsr_source_descs[TSR_SRC_COUNT] = {
#define X(ID, params, key, value, family, gpu, caps)                                             \
    [TSR_SRC_##ID] = {key,                                                                       \
                      value,                                                                     \
                      TSR_SRC_##ID,                                                              \
                      params##_params,                                                           \
                      sizeof(params##_params) / sizeof(tsr_param),                               \
                      caps,                                                                      \
                      tsr_src_##family##_render,                                                 \
                      tsr_src_##family##_check,                                                  \
                      tsr_src_##family##_scratch},
#include "nodes/sources.def"
#undef X
};

void
tsr_source_defaults(tsr_source *s, tsr_source_kind kind)
{
    *s = (tsr_source){0};
    s->kind = kind;
    s->value = 1.0f;
    s->tolerance = 1.0 / 256.0;
    s->scale = 1.0;
}

tsr_status
tsr_source_check(const tsr_source *s, tsr_check *c)
{
    const tsr_source_desc *d = &tsr_source_descs[s->kind];
    return d->check ? d->check(s, c) : TSR_OK;
}

static void shape_bounds(const tsr_source *s, double *x0, double *y0, double *x1, double *y1);

tsr_status
tsr_src_shape_check(const tsr_source *s, tsr_check *c)
{
    bool xf = tsr_shape_transformed(s);
    if (xf && s->aa != 0 && s->aa != TSR_AA_EXACT)
        return tsr_check_failf(c, "aa", "a transformed shape is drawn with its exact coverage: "
                               "write 'aa: exact' or leave 'aa' out");
    if (tsr_shape_exact(s)) {
        double x0, y0, x1, y1;
        shape_bounds(s, &x0, &y0, &x1, &y1);
        if (!tsr_src_shape_exact_fits(s, x0, y0, x1, y1))
            return tsr_check_failf(c, !xf ? "aa" : s->scale != 1 ? "scale" : "translate",
                                   "exact: the shape must lie within +-2^36 px");
    }
    if (s->kind == TSR_SRC_RING && !(s->radii[0] < s->radii[1]))
        return tsr_check_failf(c, "radii", "r_in must be < r_out");
    if (s->kind == TSR_SRC_RECT && !(s->rect[2] > 0 && s->rect[3] > 0))
        return tsr_check_failf(c, "rect", "w and h must be > 0");
    return TSR_OK;
}

tsr_status
tsr_src_gradient_check(const tsr_source *s, tsr_check *c)
{
    if (s->kind == TSR_SRC_LINEAR && s->from[0] == s->to[0] && s->from[1] == s->to[1])
        return tsr_check_failf(c, "to", "must differ from 'from'");
    return TSR_OK;
}

tsr_status
tsr_src_image_check(const tsr_source *s, tsr_check *c)
{
    (void)s, (void)c; /* the loader reads its header: size and format are checked there */
    return TSR_OK;
}

void
tsr_source_free(tsr_source *s)
{
    free(s->points.p);
    free(s->path);
    free(s->img);
    free(s->where);
    tsr_src_layout_close(s);
    tsr_src_text_close(s);
    tsr_src_shape_release(s);
    for (size_t i = 0; s->operands && i < s->nop_a + s->nop_b; i++)
        tsr_source_free(&s->operands[i]);
    free(s->operands);
    s->operands = NULL;
    s->nop_a = s->nop_b = 0;
    free(s->text);
    s->text = NULL;
    free(s->cell);
    for (size_t i = 0; i < s->layers.n; i++)
        free(s->layers.e[i].name);
    free(s->layers.e);
    s->layers.e = NULL;
    s->layers.n = 0;
    s->cell = NULL;
    s->points.p = NULL;
    s->path = NULL;
    s->img = NULL;
    s->where = NULL;
}

/* ---- inside tests, exactly the formulas of docs/format.md §4 ----------------------------- */

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

/* The box of a transformed shape (docs/shape-transforms.md), from its own box in x0..y1:
 * an ellipse's (a circle's, a ring's) turned extents, else the box of its mapped corners
 * (every point of a polygon). Rounding moves these by ulps; the caller's 2 px cover them. */
static void
transformed_bounds(const tsr_source *s, double *x0, double *y0, double *x1, double *y1)
{
    tsr_xform t;
    tsr_shape_xform(s, &t);
    if (s->kind == TSR_SRC_CIRCLE || s->kind == TSR_SRC_ELLIPSE || s->kind == TSR_SRC_RING) {
        double rx = (*x1 - *x0) * 0.5, ry = (*y1 - *y0) * 0.5;
        double hx = sqrt(t.m[0] * rx * (t.m[0] * rx) + t.m[1] * ry * (t.m[1] * ry));
        double hy = sqrt(t.m[2] * rx * (t.m[2] * rx) + t.m[3] * ry * (t.m[3] * ry));
        *x0 = t.ox - hx, *x1 = t.ox + hx;
        *y0 = t.oy - hy, *y1 = t.oy + hy;
        return;
    }
    double bx0 = INFINITY, by0 = INFINITY, bx1 = -INFINITY, by1 = -INFINITY;
    size_t n = s->kind == TSR_SRC_POLYGON ? s->points.n : 4;
    for (size_t i = 0; i < n; i++) {
        double x, y;
        if (s->kind == TSR_SRC_POLYGON)
            x = s->points.p[i][0], y = s->points.p[i][1];
        else
            x = (i == 1 || i == 2) ? *x1 : *x0, y = i >= 2 ? *y1 : *y0;
        tsr_xform_point(&t, &x, &y);
        bx0 = fmin(bx0, x), bx1 = fmax(bx1, x);
        by0 = fmin(by0, y), by1 = fmax(by1, y);
    }
    *x0 = bx0, *y0 = by0, *x1 = bx1, *y1 = by1;
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
    if (tsr_shape_transformed(s))
        transformed_bounds(s, x0, y0, x1, y1);
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

tsr_rect
tsr_source_box(const tsr_source *s, tsr_rect r)
{
    double bx0 = 0, by0 = 0, bx1 = 0, by1 = 0;
    shape_bounds(s, &bx0, &by0, &bx1, &by1);
    int64_t x0 = clampd(bx0, r.x, r.x + r.w), x1 = clampd(bx1, r.x, r.x + r.w);
    int64_t y0 = clampd(by0, r.y, r.y + r.h), y1 = clampd(by1, r.y, r.y + r.h);
    return tsr_rect_make(x0, y0, x1 > x0 ? x1 - x0 : 0, y1 > y0 ? y1 - y0 : 0);
}

/* ---- coverage from exact intervals (docs/format.md §4, without testing every sub-sample) ------
 *
 * A row of sub-samples is indexed by k = x n + i (n = aa, or 1 without aa: the pixel centre),
 * at tsr_pw_sub(x, i, n); that coordinate never decreases as k grows. Along one sub-sample row
 * the inside tests of circles, ellipses, rects, a ring's outer disc and its hole hold on one
 * interval of x around a known point (dx = px - cx, its square and the sums are each rounded
 * monotonically in |dx|), so bisection with the very test finds the interval's ends, and a
 * polygon's even-odd count changes only at its crossings. A pixel's count is then the sum over
 * its n sub-sample rows of how many of its n columns lie inside: the same count as testing all
 * n x n points, so the same bits, and pixels wholly inside or outside cost no test at all. */

static int64_t
floor_div(int64_t a, int64_t n)
{
    return a >= 0 ? a / n : -((-a + n - 1) / n);
}

/* x coordinate of sub-sample column k */
static double
sub_x(int64_t k, int64_t n)
{
    int64_t x = floor_div(k, n);
    return tsr_pw_sub(x, k - x * n, n);
}

/* First k in [k0, k1 + 1] whose sub-sample is not left of c: !(sub_x(k) < c). A guess from c,
 * then steps to the exact answer (a step or two; any c, NaN and infinities included). */
static int64_t
first_not_below(double c, int64_t k0, int64_t k1, int64_t n)
{
    if (!(sub_x(k0, n) < c))
        return k0;
    if (sub_x(k1, n) < c)
        return k1 + 1;
    /* now sub_x(k0) < c <= sub_x(k1): the answer is in (k0, k1] */
    int64_t k = clampd(ceil(c * (double)n - 0.5), k0 + 1, k1);
    while (k > k0 + 1 && !(sub_x(k - 1, n) < c))
        k--;
    while (k < k1 && sub_x(k, n) < c)
        k++;
    return k;
}

/* Which test an interval is taken of: the shape's own, or a ring's outer disc or its hole
 * (inside the ring = in the disc and not in the hole: tsr_pw_in_ring's expression). */
enum { PART_SHAPE, PART_DISC, PART_HOLE };

static int
in_part(const tsr_source *s, int part, double px, double py)
{
    if (part == PART_SHAPE)
        return inside(s, px, py);
    double dx = px - s->center[0], dy = py - s->center[1];
    double d2 = dx * dx + dy * dy;
    return part == PART_DISC ? d2 <= s->radii[1] * s->radii[1] : !(s->radii[0] * s->radii[0] <= d2);
}

/* First k in [lo, hi] where the test flips from `from` (held at lo) to !from; hi + 1 if never.
 * Starts at `guess` (the answer a sub-row above, when there is one: edges move little) with
 * steps doubling away from it, then bisects: O(log distance) tests instead of O(log width). */
static int64_t
flip(const tsr_source *s, int part, double sy, int64_t n, int64_t lo, int64_t hi, int from,
     int64_t guess)
{
    if (lo > hi)
        return lo;
    int64_t g = guess >= lo && guess <= hi ? guess : lo + (hi - lo) / 2;
    if (in_part(s, part, sub_x(g, n), sy) == from) {
        lo = g + 1; /* the answer is right of g */
        for (int64_t step = 1; lo <= hi; step *= 2) {
            int64_t p = hi - lo < step ? hi : lo + step - 1;
            if (in_part(s, part, sub_x(p, n), sy) != from) {
                hi = p - 1;
                break;
            }
            lo = p + 1;
        }
    } else {
        hi = g - 1; /* the answer is g or left of it */
        for (int64_t step = 1; lo <= hi; step *= 2) {
            int64_t p = hi - lo < step ? lo : hi - step + 1;
            if (in_part(s, part, sub_x(p, n), sy) == from) {
                lo = p + 1;
                break;
            }
            hi = p - 1;
        }
    }
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (in_part(s, part, sub_x(mid, n), sy) == from)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The x around which the inside set of one sub-sample row is an interval (when not empty). */
static double
centre_x(const tsr_source *s)
{
    return s->kind == TSR_SRC_RECT ? s->rect[0] + s->rect[2] / 2 : s->center[0];
}

/* The columns [*a, *b] of [k0, k1] inside `part` on sub-sample row sy; 0 when there are none.
 * kp is the first column at or right of the centre (first_not_below(centre_x(s))): if any
 * column is inside, kp - 1 or kp is (the set is an interval holding the centre), and the test
 * only falls off away from it. *a and *b come in as guesses (the last sub-row's answer). */
static int
sub_interval(const tsr_source *s, int part, double sy, int64_t n, int64_t k0, int64_t k1,
             int64_t kp, int64_t *a, int64_t *b)
{
    int lo_in = kp > k0 && in_part(s, part, sub_x(kp - 1, n), sy);
    int hi_in = kp <= k1 && in_part(s, part, sub_x(kp, n), sy);
    if (!lo_in && !hi_in)
        return 0;
    int64_t ga = *a, gb = *b + 1;
    *a = lo_in ? flip(s, part, sy, n, k0, kp - 1, 0, ga) : kp;
    *b = hi_in ? flip(s, part, sy, n, kp, k1, 1, gb) - 1 : kp - 1;
    return 1;
}

/* A pixel's new value from its count of inside sub-samples (> 0). Without aa the count is 1
 * and the pixel takes `value`; with aa every count goes through the mix, a full one too:
 * P*0 + value is not `value` for P = inf or NaN, nor for value -0 over P >= 0. */
static float
covered(float P, float value, int64_t count, int64_t aa)
{
    return aa ? tsr_pw_aa_mix(P, value, count, aa) : value;
}

/* Pixels [a, b] wholly inside: a loop of its own for each case, so that it vectorises. */
static void
cover_run(float *row, int64_t a, int64_t b, float value, int64_t aa)
{
    if (!aa) {
        for (int64_t x = a; x <= b; x++)
            row[x] = value;
        return;
    }
    for (int64_t x = a; x <= b; x++)
        row[x] = tsr_pw_aa_mix(row[x], value, aa * aa, aa);
}

/* Per pixel row: the sub-sample intervals of each of the n sub-rows, [a, b] (a > b: none),
 * minus the hole's [ha, hb] for a ring. */
typedef struct row_ivals {
    int64_t a[16], b[16], ha[16], hb[16];
} row_ivals;

static int64_t
overlap(int64_t a, int64_t b, int64_t lo, int64_t hi)
{
    int64_t l = a > lo ? a : lo, h = b < hi ? b : hi;
    return h >= l ? h - l + 1 : 0;
}

/* Over n sub-rows' intervals [a[j], b[j]] (a > b: none), the pixels [touch[0], touch[1]] any
 * of them reaches and [full[0], full[1]] that all of them cover wholly (empty: lo > hi). */
static void
pixel_spans(const int64_t *a, const int64_t *b, int64_t n, int64_t touch[2], int64_t full[2])
{
    touch[0] = INT64_MAX, touch[1] = INT64_MIN;
    full[0] = INT64_MIN, full[1] = INT64_MAX;
    for (int64_t j = 0; j < n; j++) {
        if (a[j] > b[j]) {
            full[0] = INT64_MAX; /* a sub-row with nothing inside: no pixel is full */
            continue;
        }
        int64_t pa = floor_div(a[j], n), pb = floor_div(b[j], n);
        touch[0] = pa < touch[0] ? pa : touch[0];
        touch[1] = pb > touch[1] ? pb : touch[1];
        int64_t fa = floor_div(a[j] + n - 1, n), fb = floor_div(b[j] + 1, n) - 1;
        full[0] = fa > full[0] ? fa : full[0];
        full[1] = fb < full[1] ? fb : full[1];
    }
}

/* Write pixels [x0, x1) of a row from its intervals: pixels inside every sub-row's interval
 * and clear of every hole take the full count, pixels inside every hole are skipped, only the
 * rest (where an edge crosses) sum their overlaps. */
static void
write_ivals(const row_ivals *iv, int64_t n, int64_t aa, int64_t x0, int64_t x1, float *row,
            float value)
{
    int64_t t[2], f[2], h[2], hf[2];
    pixel_spans(iv->a, iv->b, n, t, f);   /* pixels the shape may touch, inside every interval */
    pixel_spans(iv->ha, iv->hb, n, h, hf); /* pixels a hole may touch, inside every hole */
    int64_t tlo = t[0], thi = t[1], flo = f[0], fhi = f[1];
    int64_t hlo = h[0], hhi = h[1], hflo = hf[0], hfhi = hf[1];
    if (tlo < x0)
        tlo = x0;
    if (thi > x1 - 1)
        thi = x1 - 1;
    for (int64_t x = tlo; x <= thi; x++) {
        if (x >= hflo && x <= hfhi) {
            x = hfhi; /* wholly in the hole */
            continue;
        }
        if (x >= flo && x <= fhi && (x < hlo || x > hhi)) {
            int64_t e = fhi < thi ? fhi : thi;
            if (x < hlo && hlo - 1 < e)
                e = hlo - 1;
            cover_run(row, x, e, value, aa);
            x = e;
            continue;
        }
        int64_t count = 0;
        for (int64_t j = 0; j < n; j++) {
            count += overlap(iv->a[j], iv->b[j], x * n, x * n + n - 1);
            count -= overlap(iv->ha[j], iv->hb[j], x * n, x * n + n - 1);
        }
        if (count > 0)
            row[x] = covered(row[x], value, count, aa);
    }
}

static void
render_ivals(const tsr_source *s, tsr_rect r, tsr_rect box, float *px)
{
    int64_t aa = s->aa, n = aa ? aa : 1;
    int64_t x0 = box.x, x1 = box.x + box.w, k0 = x0 * n, k1 = x1 * n - 1;
    int64_t kp = first_not_below(centre_x(s), k0, k1, n);
    bool ring = s->kind == TSR_SRC_RING;
    int64_t ga = INT64_MIN, gb = INT64_MIN, gha = INT64_MIN, ghb = INT64_MIN; /* no guess yet */
    for (int64_t y = box.y; y < box.y + box.h; y++) {
        if (tsr_stop_requested())
            return; /* unfinished: the caller drops it */
        row_ivals iv;
        for (int64_t j = 0; j < n; j++) {
            double sy = tsr_pw_sub(y, j, n);
            iv.a[j] = ga, iv.b[j] = gb, iv.ha[j] = gha, iv.hb[j] = ghb;
            if (!sub_interval(s, ring ? PART_DISC : PART_SHAPE, sy, n, k0, k1, kp, &iv.a[j],
                              &iv.b[j])) {
                iv.a[j] = 0, iv.b[j] = -1, iv.ha[j] = 0, iv.hb[j] = -1;
                continue;
            }
            ga = iv.a[j], gb = iv.b[j];
            /* the hole lies inside the disc (d2 < r_in^2 <= r_out^2) */
            if (ring && sub_interval(s, PART_HOLE, sy, n, k0, k1, kp, &iv.ha[j], &iv.hb[j]))
                gha = iv.ha[j], ghb = iv.hb[j];
            else
                iv.ha[j] = 0, iv.hb[j] = -1;
        }
        write_ivals(&iv, n, aa, x0, x1, px + (y - r.y) * r.w - r.x, s->value);
    }
}

/* ---- polygons by scanline --------------------------------------------------------------
 * An edge counts on sub-sample row sy when (y1 > sy) != (y2 > sy), i.e. min(y1, y2) <= sy <
 * max(y1, y2): edges sorted by their low y join an active list when a row reaches them and
 * leave it past their high y, so a row looks only at the edges spanning it. Each crossing
 * xc is the spec's expression, computed once a row; column k counts it when sub_x(k) < xc,
 * i.e. k < t, t = first_not_below(xc): the count at k is the number of t > k, odd = inside. */

typedef struct poly_edge {
    double ymin, ymax;
    size_t i; /* from point i to point i + 1 (the last to the first) */
} poly_edge;

typedef struct poly_scan {
    poly_edge *edges;    /* by ymin */
    size_t *active;      /* indices into edges */
    int64_t *t;          /* one row's crossings as columns */
    int32_t *part;       /* aa: per pixel of the box, sub-samples from spans that end in it */
    int32_t *whole;      /* aa: +n / -n where runs of whole pixel widths start and stop */
    size_t nedges, next, nactive;
    /* edges whose every crossing is right of the box count for every column: only how many
     * span a row matters, #(ymin <= sy) - #(ymax <= sy), from their ends sorted apart */
    double *rlo, *rhi;
    size_t nright, rlo_next, rhi_next;
} poly_scan;

static int
edge_cmp(const void *a, const void *b)
{
    double ya = ((const poly_edge *)a)->ymin, yb = ((const poly_edge *)b)->ymin;
    return (ya > yb) - (ya < yb);
}

static int
double_cmp(const void *a, const void *b)
{
    double ya = *(const double *)a, yb = *(const double *)b;
    return (ya > yb) - (ya < yb);
}

/* The scan lists' bytes in one block (edges, active, t, then with aa part and whole); 0 when
 * that does not fit a size_t. */
static size_t
scan_bytes(size_t np, int64_t aa, int64_t w)
{
    size_t per_point = sizeof(poly_edge) + sizeof(size_t) + sizeof(int64_t) + 2 * sizeof(double);
    size_t per_px = aa ? 2 * sizeof(int32_t) : 0;
    if (w < 0 || np > SIZE_MAX / 2 / per_point || (uint64_t)w > SIZE_MAX / 2 / 8)
        return 0;
    return np * per_point + (size_t)w * per_px;
}

size_t
tsr_source_scratch(const tsr_source *s, int64_t w)
{
    const tsr_source_desc *d = &tsr_source_descs[s->kind];
    return d->scratch ? d->scratch(s, w) : 0;
}

size_t
tsr_src_gradient_scratch(const tsr_source *s, int64_t w)
{
    (void)s, (void)w;
    return 0;
}

size_t
tsr_src_image_scratch(const tsr_source *s, int64_t w)
{
    (void)s, (void)w;
    return 0;
}

size_t
tsr_src_shape_scratch(const tsr_source *s, int64_t w)
{
    if (tsr_shape_exact(s)) /* coverage floats and accumulators a block row high, rings */
        return (size_t)(w > 0 ? w : 0) * TSR_GEOM_BLOCK * (sizeof(float) + sizeof(int64_t)) +
               (s->points.n + 64) * 4 * sizeof(double);
    if (s->kind != TSR_SRC_POLYGON)
        return 0;
    /* the box drawn is at most the polygon's own (grown) box wide */
    double bx0 = 0, by0 = 0, bx1 = 0, by1 = 0;
    shape_bounds(s, &bx0, &by0, &bx1, &by1);
    if (bx1 - bx0 < (double)w)
        w = (int64_t)(bx1 - bx0);
    return scan_bytes(s->points.n, s->aa, w);
}

static void
scan_free(poly_scan *ps)
{
    free(ps->edges);
}

/* Whether the edge's computed crossings are certainly <= wl (it never counts in the box) or
 * certainly > wr (it counts for every column): the crossing lies between x1 and x2 but for
 * rounding, a few ulps of |x1| + |x2| (bounded here by 1e-9 of it); edges with huge or
 * nearly level coordinates, where that bound fails (overflow, subnormal steps), stay exact. */
static int
edge_side(double x1, double y1, double x2, double y2, double wl, double wr)
{
    if (!(fabs(x1) < 1e15 && fabs(x2) < 1e15 && fabs(y2 - y1) > 1e-100))
        return 0;
    double slack = 1e-9 * (fabs(x1) + fabs(x2)) + 1e-200;
    if ((x1 > x2 ? x1 : x2) + slack <= wl)
        return -1;
    if ((x1 < x2 ? x1 : x2) - slack > wr)
        return 1;
    return 0;
}

static bool
scan_init(poly_scan *ps, const tsr_source *s, tsr_rect box, int64_t n)
{
    int64_t w = box.w, k0 = box.x * n, k1 = (box.x + box.w) * n - 1;
    /* the first and last sub-sample rows: an edge spanning none of them never counts */
    double sy0 = tsr_pw_sub(box.y, 0, n), sy1 = tsr_pw_sub(box.y + box.h - 1, n - 1, n);
    size_t np = s->points.n;
    *ps = (poly_scan){0};
    /* one block, so that a failed allocation costs one slow render (render_sampled), not one
     * per list */
    size_t bytes = scan_bytes(np, s->aa, w);
    char *block = bytes ? malloc(bytes) : NULL;
    if (!block)
        return false;
    ps->edges = (poly_edge *)block;
    ps->active = (size_t *)(block + np * sizeof(poly_edge));
    ps->t = (int64_t *)(block + np * (sizeof(poly_edge) + sizeof(size_t)));
    ps->rlo = (double *)(block + np * (sizeof(poly_edge) + sizeof(size_t) + sizeof(int64_t)));
    ps->rhi = ps->rlo + np;
    if (s->aa) {
        ps->part = (int32_t *)(ps->rhi + np);
        ps->whole = ps->part + w;
        memset(ps->part, 0, (size_t)w * 2 * sizeof(int32_t));
    }
    size_t ne = 0;
    double wl = sub_x(k0, n), wr = sub_x(k1, n);
    for (size_t i = 0; i < np; i++) {
        size_t k = i + 1 == np ? 0 : i + 1;
        double x1 = s->points.p[i][0], y1 = s->points.p[i][1];
        double x2 = s->points.p[k][0], y2 = s->points.p[k][1];
        int side = edge_side(x1, y1, x2, y2, wl, wr);
        double lo = y1 < y2 ? y1 : y2, hi = y1 < y2 ? y2 : y1;
        if (side < 0 || y1 == y2 || hi <= sy0 || lo > sy1)
            continue; /* left of the box, level, above or below it: never counts */
        if (side > 0) {
            ps->rlo[ps->nright] = lo;
            ps->rhi[ps->nright++] = hi;
        } else {
            ps->edges[ne++] = (poly_edge){lo, hi, i};
        }
    }
    ps->nedges = ne;
    qsort(ps->edges, ne, sizeof *ps->edges, edge_cmp);
    qsort(ps->rlo, ps->nright, sizeof *ps->rlo, double_cmp);
    qsort(ps->rhi, ps->nright, sizeof *ps->rhi, double_cmp);
    return true;
}

/* Sub-sample row sy's crossings inside the box as columns of [k0, k1], sorted; returns how
 * many, and in *right the parity of those right of the box (they count for every column). */
static size_t
scan_row(poly_scan *ps, const tsr_source *s, double sy, int64_t n, int64_t k0, int64_t k1,
         int *right)
{
    const double(*p)[2] = (const double(*)[2])s->points.p;
    size_t np = s->points.n;
    while (ps->next < ps->nedges && ps->edges[ps->next].ymin <= sy)
        ps->active[ps->nactive++] = ps->next++;
    size_t m = 0, nt = 0;
    double wl = sub_x(k0, n), wr = sub_x(k1, n);
    while (ps->rlo_next < ps->nright && ps->rlo[ps->rlo_next] <= sy)
        ps->rlo_next++;
    while (ps->rhi_next < ps->nright && ps->rhi[ps->rhi_next] <= sy)
        ps->rhi_next++;
    *right = (int)((ps->rlo_next - ps->rhi_next) & 1);
    for (size_t a = 0; a < ps->nactive; a++) {
        const poly_edge *e = &ps->edges[ps->active[a]];
        if (e->ymax <= sy)
            continue; /* above its high end: never again (rows only go down) */
        ps->active[m++] = ps->active[a];
        size_t i = e->i, k = i + 1 == np ? 0 : i + 1;
        double x1 = p[i][0], y1 = p[i][1], x2 = p[k][0], y2 = p[k][1];
        if ((y1 > sy) == (y2 > sy))
            continue;
        double xc = (x2 - x1) * (sy - y1) / (y2 - y1) + x1;
        if (!(wl < xc))
            continue; /* no column of the box is left of it */
        if (wr < xc)
            *right ^= 1; /* every column is */
        else
            ps->t[nt++] = first_not_below(xc, k0, k1, n);
    }
    ps->nactive = m;
    /* insertion sort: a row holds few crossings, and often in order */
    for (size_t i = 1; i < nt; i++) {
        int64_t v = ps->t[i];
        size_t j = i;
        for (; j > 0 && ps->t[j - 1] > v; j--)
            ps->t[j] = ps->t[j - 1];
        ps->t[j] = v;
    }
    return nt;
}

/* Sub-samples [ka, kb] (columns relative to the box's first) into the per-pixel counts. */
static void
add_span(poly_scan *ps, int64_t n, int64_t ka, int64_t kb, int64_t *lo, int64_t *hi)
{
    int64_t pa = ka / n, pb = kb / n;
    if (pa == pb) {
        ps->part[pa] += (int32_t)(kb - ka + 1);
    } else {
        ps->part[pa] += (int32_t)((pa + 1) * n - ka);
        ps->part[pb] += (int32_t)(kb - pb * n + 1);
        if (pb > pa + 1) {
            ps->whole[pa + 1] += (int32_t)n;
            ps->whole[pb] -= (int32_t)n;
        }
    }
    *lo = pa < *lo ? pa : *lo;
    *hi = pb > *hi ? pb : *hi;
}

static void
render_polygon(const tsr_source *s, tsr_rect r, tsr_rect box, poly_scan *ps, float *px)
{
    int64_t aa = s->aa, n = aa ? aa : 1;
    int64_t x0 = box.x, k0 = x0 * n, k1 = (box.x + box.w) * n - 1;
    float value = s->value;
    for (int64_t y = box.y; y < box.y + box.h; y++) {
        float *row = px + (y - r.y) * r.w - r.x;
        if (tsr_stop_requested())
            return; /* unfinished: the caller drops it */
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int64_t j = 0; j < n; j++) {
            int right = 0;
            size_t m = scan_row(ps, s, tsr_pw_sub(y, j, n), n, k0, k1, &right);
            /* columns [prev, t[i]) see m - i crossings right of them in the box, and those
             * right of the box: inside when odd */
            int64_t prev = k0;
            for (size_t i = 0; i <= m; i++) {
                int64_t t = i < m ? ps->t[i] : k1 + 1;
                if ((m - i + (size_t)right) % 2 == 1 && t > prev) {
                    if (!aa) {
                        for (int64_t x = prev; x < t; x++)
                            row[x] = value;
                    } else {
                        add_span(ps, n, prev - k0, t - 1 - k0, &lo, &hi);
                    }
                }
                prev = t > prev ? t : prev;
            }
        }
        /* aa: each pixel's count, from the spans' ends and runs; counters cleared behind */
        int64_t run = 0;
        for (int64_t i = lo; i <= hi; i++) {
            run += ps->whole[i];
            int64_t count = run + ps->part[i];
            ps->whole[i] = ps->part[i] = 0;
            if (count > 0)
                row[x0 + i] = tsr_pw_aa_mix(row[x0 + i], value, count, aa);
        }
    }
}

/* The literal §2.2 loop, every sub-sample tested: only when a polygon's scan lists cannot be
 * allocated (same bits, slower). */
static void
render_sampled(const tsr_source *s, tsr_rect r, tsr_rect box, float *px)
{
    int64_t n = s->aa;
    for (int64_t y = box.y; y < box.y + box.h; y++) {
        float *row = px + (y - r.y) * r.w - r.x;
        for (int64_t x = box.x; x < box.x + box.w; x++) {
            if (tsr_stop_requested())
                return;
            if (n == 0) {
                if (inside(s, (double)x + 0.5, (double)y + 0.5))
                    row[x] = s->value;
                continue;
            }
            int64_t count = 0;
            for (int64_t j = 0; j < n; j++) {
                double sy = tsr_pw_sub(y, j, n);
                for (int64_t i = 0; i < n; i++)
                    count += inside(s, tsr_pw_sub(x, i, n), sy);
            }
            if (count > 0)
                row[x] = tsr_pw_aa_mix(row[x], s->value, count, n);
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

void
tsr_src_shape_render(const tsr_source *s, tsr_rect r, float *px)
{
    tsr_rect box = tsr_source_box(s, r);
    if (box.w == 0 || box.h == 0)
        return;
    if (tsr_shape_exact(s)) {
        /* the table's render cannot fail: out of memory leaves the rect as it was, with a
         * warning (the bounds were checked at load) */
        tsr_error err = {TSR_OK, ""};
        tsr_status st = tsr_src_shape_exact(s, box, r, px, &err);
        if (st != TSR_OK && st != TSR_EINTR)
            fprintf(stderr, "tessera: %s: %s\n", s->where ? s->where : "shape", err.msg);
        return;
    }
    if (s->kind != TSR_SRC_POLYGON) {
        render_ivals(s, r, box, px);
        return;
    }
    int64_t n = s->aa ? s->aa : 1;
    poly_scan ps;
    if (!scan_init(&ps, s, box, n)) {
        render_sampled(s, r, box, px);
        return;
    }
    render_polygon(s, r, box, &ps, px);
    scan_free(&ps);
}

void
tsr_src_gradient_render(const tsr_source *s, tsr_rect r, float *px)
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

void
tsr_src_image_render(const tsr_source *s, tsr_rect r, float *px)
{
    if (!s->img) /* not decoded (a plan only): nothing drawn */
        return;
    for (int64_t y = 0; y < r.h; y++) {
        const float *src = s->img + (r.y + y) * s->iw + r.x;
        float *row = px + y * r.w;
        for (int64_t x = 0; x < r.w; x++)
            row[x] = src[x];
    }
}

tsr_status
tsr_source_draw(const tsr_source *s, tsr_rect r, float *px, tsr_error *err)
{
    /* the sources that allocate while they draw (Clipper's unions, coverage buffers) report
     * failure; every other one cannot fail */
    if (s->kind == TSR_SRC_LAYOUT)
        return tsr_src_layout_draw(s, r, px, err);
    if (s->kind == TSR_SRC_TEXT || (s->kind >= TSR_SRC_BOOL_UNION && s->kind <= TSR_SRC_BOOL_XOR))
        return tsr_vec_draw(s->vec, s->value, r, px, err);
    if (tsr_source_has(s, TSR_SRC_CAP_BOXED) && tsr_shape_exact(s))
        return tsr_src_shape_exact(s, tsr_source_box(s, r), r, px, err);
    tsr_source_render(s, r, px);
    return TSR_OK;
}

void
tsr_source_render(const tsr_source *s, tsr_rect r, float *px)
{
    tsr_source_descs[s->kind].render(s, r, px);
}
