/* Sources on the device (DESIGN.md §2.2): fill, then the shape, gradient or image, one thread
 * per pixel, with nodes/pointwise.h's expressions in double. Shapes test exactly the pixels of
 * tsr_source_box (the CPU's bounding box), so both backends write the same pixels. */
#include "gpu/gpu_int.cuh"

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

static __global__ void
base_kernel(base_args s)
{
    TSR_FOR_PIXELS(s.r.w, s.r.h, lx, ly) {
        int64_t x = s.r.x + lx, y = s.r.y + ly;
        float v = s.fill;
        double px = (double)x + 0.5, py = (double)y + 0.5;
        switch (s.kind) {
        case -1: break;
        case TSR_SRC_LINEAR: v = tsr_pw_linear(s.a, s.b, s.fx, s.fy, s.gx, s.gy, s.len2, px, py); break;
        case TSR_SRC_RADIAL: v = tsr_pw_radial(s.a, s.b, px - s.cx, py - s.cy, s.radius); break;
        case TSR_SRC_IMAGE:
            if (s.img)
                v = s.img[y * s.iw + x];
            break;
        default:
            if (x < s.box.x || x >= s.box.x + s.box.w || y < s.box.y || y >= s.box.y + s.box.h)
                break;
            if (s.aa == 0) {
                if (inside(s, px, py))
                    v = s.value;
                break;
            }
            int64_t count = 0;
            for (int64_t j = 0; j < s.aa; j++) {
                double sy = tsr_pw_sub(y, j, s.aa);
                for (int64_t i = 0; i < s.aa; i++)
                    count += inside(s, tsr_pw_sub(x, i, s.aa), sy);
            }
            if (count)
                v = tsr_pw_aa_mix(v, s.value, count, s.aa);
        }
        if (s.to.dst)
            tsr_gpu_put(s.to, x, y, v);
        else
            s.out[ly * s.r.w + lx] = v;
    }
}

extern "C" tsr_status
tsr_gpu_base(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
             tsr_error *err)
{
    base_args a;
    memset(&a, 0, sizeof a);
    tsr_status cs = tsr_gpu_conv_make(g, to, &a.to, err);
    if (cs != TSR_OK)
        return cs;
    a.r = out.r;
    a.out = out.px;
    a.fill = n->fill;
    a.kind = -1;
    const tsr_source *s = n->source;
    if (s) {
        a.kind = (int)s->kind;
        a.cx = s->center[0];
        a.cy = s->center[1];
        a.radius = s->radius;
        a.r0 = s->radii[0];
        a.r1 = s->radii[1];
        memcpy(a.rect, s->rect, sizeof a.rect);
        a.value = s->value;
        a.aa = s->aa;
        a.a = s->values[0];
        a.b = s->values[1];
        a.fx = s->from[0];
        a.fy = s->from[1];
        a.gx = s->to[0] - s->from[0];
        a.gy = s->to[1] - s->from[1];
        a.len2 = a.gx * a.gx + a.gy * a.gy;
        switch (s->kind) {
        case TSR_SRC_LINEAR:
        case TSR_SRC_RADIAL: break;
        case TSR_SRC_IMAGE:
            if (s->img) {
                a.img = (const float *)tsr_gpu_resident(
                    g, s->img, (size_t)s->iw * (size_t)s->ih * sizeof(float), err);
                if (!a.img)
                    return TSR_ENOMEM;
                a.iw = s->iw;
            }
            break;
        case TSR_SRC_POLYGON:
            a.pts = (const double (*)[2])tsr_gpu_resident(g, s->points.p,
                                                          s->points.n * sizeof(double[2]), err);
            if (!a.pts)
                return TSR_ENOMEM;
            a.npts = (int64_t)s->points.n;
            /* fall through */
        default: a.box = tsr_source_box(s, out.r); break;
        }
    }
    base_kernel<<<tsr_grid2(out.r.w, out.r.h), 256, 0, g->compute>>>(a);
    TSR_LAUNCHED("base", err);
    return TSR_OK;
}
