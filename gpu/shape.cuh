/* The device's base of a node at one pixel (fill, then the shape, gradient or image): what
 * gpu/sources.cu's base kernels write and gpu/repeat.cu's per-copy sources draw for each copy,
 * so both give the CPU's bits (nodes/sources.c) the same way. Included by those two files. */
#ifndef TSR_GPU_SHAPE_CUH
#define TSR_GPU_SHAPE_CUH

#include "gpu/gpu_int.cuh"

#include <string.h>

/* What the kernel needs of a node's base, by value. */
struct base_args {
    tsr_rect r;        /* out's rect */
    float *out;
    tsr_gpu_conv to;   /* to.dst: samples instead of floats */
    float fill;
    int kind;          /* tsr_source_kind, or -1 for none */
    tsr_rect box;      /* shapes: the pixels tested */
    double cx, cy, radius, r0, r1;
    double rect[4];
    const double (*pts)[2];
    int64_t npts;
    float value;
    int64_t aa;
    double a, b, fx, fy, gx, gy, len2; /* gradients */
    const float *img;
    int64_t iw;
};

__device__ static int
inside(const base_args &s, double px, double py)
{
    double dx = px - s.cx, dy = py - s.cy;
    switch (s.kind) {
    case TSR_SRC_CIRCLE: return tsr_pw_in_circle(dx, dy, s.radius);
    case TSR_SRC_ELLIPSE: return tsr_pw_in_ellipse(dx, dy, s.r0, s.r1);
    case TSR_SRC_RING: return tsr_pw_in_ring(dx, dy, s.r0, s.r1);
    case TSR_SRC_RECT: return tsr_pw_in_rect(px, py, s.rect);
    default: return tsr_pw_in_polygon(s.pts, s.npts, px, py);
    }
}

/* Where no shape boundary comes within this distance of a pixel's sub-samples, every one of
 * them is on the same side, and the rounding of the inside tests (relative 1e-16 of
 * coordinates below 1e9) cannot move a sub-sample across it. */
#define CLEAR 1e-6

/* 1 when every sub-sample in [x0, x1] x [y0, y1] is inside the shape, 0 when none is, -1 when
 * the boundary may cross (then each is tested). The same answer as testing each, so edge-only
 * anti-aliasing gives the per-sub-sample bits (docs/format.md §4), as the CPU's scanlines do:
 * interior pixels cost one test instead of aa^2. */
__device__ static int
uniform_box(const base_args &s, double x0, double y0, double x1, double y1)
{
    switch (s.kind) {
    case TSR_SRC_RECT: { /* the tests' own comparisons, monotonic in the coordinates: exact */
        double rx1 = s.rect[0] + s.rect[2], ry1 = s.rect[1] + s.rect[3];
        if (s.rect[0] <= x0 && x1 <= rx1 && s.rect[1] <= y0 && y1 <= ry1)
            return 1;
        if (x1 < s.rect[0] || x0 > rx1 || y1 < s.rect[1] || y0 > ry1)
            return 0;
        return -1;
    }
    case TSR_SRC_CIRCLE:
    case TSR_SRC_ELLIPSE:
    case TSR_SRC_RING: {
        double sx = s.kind == TSR_SRC_ELLIPSE ? s.r0 : 1.0, sy = s.kind == TSR_SRC_ELLIPSE ? s.r1 : 1.0;
        double ax = (x0 - s.cx) / sx, bx = (x1 - s.cx) / sx, ay = (y0 - s.cy) / sy, by = (y1 - s.cy) / sy;
        double nx = ax > 0 ? ax : (bx < 0 ? bx : 0), ny = ay > 0 ? ay : (by < 0 ? by : 0);
        double fx = ax * ax > bx * bx ? ax * ax : bx * bx, fy = ay * ay > by * by ? ay * ay : by * by;
        double lo = nx * nx + ny * ny, hi = fx + fy; /* the nearest and farthest, squared */
        /* inside: in <= d^2 <= out (circle: in = 0; ellipse: in normalised units, out = 1) */
        double in = s.kind == TSR_SRC_RING ? s.r0 * s.r0 : 0.0;
        double out = s.kind == TSR_SRC_CIRCLE ? s.radius * s.radius
                     : s.kind == TSR_SRC_RING ? s.r1 * s.r1 : 1.0;
        double m = 1e-9 * (out + hi) + CLEAR;
        if (hi + m < out && (s.kind != TSR_SRC_RING || lo - m > in))
            return 1;
        if (lo - m > out || (s.kind == TSR_SRC_RING && hi + m < in))
            return 0;
        return -1;
    }
    default: { /* polygon: no edge meets the sub-samples' box grown by CLEAR */
        double gx0 = x0 - CLEAR, gx1 = x1 + CLEAR, gy0 = y0 - CLEAR, gy1 = y1 + CLEAR;
        for (int64_t i = 0; i < s.npts; i++) {
            int64_t k = i + 1 == s.npts ? 0 : i + 1;
            double ax = s.pts[i][0], ay = s.pts[i][1], bx = s.pts[k][0], by = s.pts[k][1];
            if ((ax < gx0 && bx < gx0) || (ax > gx1 && bx > gx1) || (ay < gy0 && by < gy0) ||
                (ay > gy1 && by > gy1))
                continue; /* the boxes are apart */
            /* the line through the edge passes beside the box: the four corners on one side
             * (a spoke's box covers much of a star, the spoke itself a sliver) */
            double dx = bx - ax, dy = by - ay;
            double c0 = dx * (gy0 - ay) - dy * (gx0 - ax), c1 = dx * (gy0 - ay) - dy * (gx1 - ax);
            double c2 = dx * (gy1 - ay) - dy * (gx0 - ax), c3 = dx * (gy1 - ay) - dy * (gx1 - ax);
            if ((c0 > 0 && c1 > 0 && c2 > 0 && c3 > 0) || (c0 < 0 && c1 < 0 && c2 < 0 && c3 < 0))
                continue;
            return -1;
        }
        return tsr_pw_in_polygon(s.pts, s.npts, x0, y0);
    }
    }
}

/* One instance per kind of base, so a launch runs only its own kind's code: a single kernel
 * for every kind executed ~250 instructions a pixel for a linear gradient (ncu, SASS: the
 * kinds' dispatch and the shapes' set-up around it). B_SHAPE_AA is apart from B_SHAPE so the
 * plain shapes keep the registers they need (58 against 92 with the aa path: the aa path
 * inlined once cost a linear gradient half its rate, measured). */
enum { B_FILL, B_LINEAR, B_RADIAL, B_IMAGE, B_SHAPE, B_SHAPE_AA };

/* Source s's numbers into a (shapes' and gradients' both: each kernel reads its own kind's),
 * as the base launchers and the repeat's per-copy sources set them up. */
static inline void
tsr_gpu_source_args(base_args *a, const tsr_source *s)
{
    a->cx = s->center[0];
    a->cy = s->center[1];
    a->radius = s->radius;
    a->r0 = s->radii[0];
    a->r1 = s->radii[1];
    memcpy(a->rect, s->rect, sizeof a->rect);
    a->value = s->value;
    a->aa = s->aa;
    a->a = s->values[0];
    a->b = s->values[1];
    a->fx = s->from[0];
    a->fy = s->from[1];
    a->gx = s->to[0] - s->from[0];
    a->gy = s->to[1] - s->from[1];
    a->len2 = a->gx * a->gx + a->gy * a->gy;
}

/* The base's value at pixel (x, y). */
template <int M>
__device__ static inline float
tsr_gpu_base_px(const base_args &s, int64_t x, int64_t y)
{
    float v = s.fill;
    if constexpr (M == B_LINEAR) {
        v = tsr_pw_linear(s.a, s.b, s.fx, s.fy, s.gx, s.gy, s.len2, (double)x + 0.5,
                          (double)y + 0.5);
    } else if constexpr (M == B_RADIAL) {
        v = tsr_pw_radial(s.a, s.b, (double)x + 0.5 - s.cx, (double)y + 0.5 - s.cy,
                          s.radius);
    } else if constexpr (M == B_IMAGE) {
        if (s.img)
            v = s.img[y * s.iw + x];
    } else if constexpr (M == B_SHAPE) {
        if (x >= s.box.x && x < s.box.x + s.box.w && y >= s.box.y && y < s.box.y + s.box.h &&
            inside(s, (double)x + 0.5, (double)y + 0.5))
            v = s.value;
    } else if constexpr (M == B_SHAPE_AA) {
        if (x >= s.box.x && x < s.box.x + s.box.w && y >= s.box.y && y < s.box.y + s.box.h) {
            int u = uniform_box(s, tsr_pw_sub(x, 0, s.aa), tsr_pw_sub(y, 0, s.aa),
                                tsr_pw_sub(x, s.aa - 1, s.aa), tsr_pw_sub(y, s.aa - 1, s.aa));
            if (u > 0) {
                v = tsr_pw_aa_mix(v, s.value, s.aa * s.aa, s.aa);
            } else if (u < 0) {
                int64_t count = 0;
                for (int64_t j = 0; j < s.aa; j++) {
                    double sy = tsr_pw_sub(y, j, s.aa);
                    for (int64_t i = 0; i < s.aa; i++)
                        count += inside(s, tsr_pw_sub(x, i, s.aa), sy);
                }
                if (count)
                    v = tsr_pw_aa_mix(v, s.value, count, s.aa);
            }
        }
    }
    return v;
}

#endif
