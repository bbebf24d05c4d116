/* repeat and repeat-vector on the device (docs/format.md §5): for each parent pixel of the active
 * area (P.r clipped to `region`), the copies that cover it, in copy order (ascending j, then
 * ascending i), combined by the overlap mode with nodes/pointwise.h's operations, then blended.
 *
 * Disjoint axis-aligned repeats (every `repeat` whose period is at least the child) find their
 * one copy by a floor division. Other lattices solve for the candidate (i, j) range per pixel
 * in double, widened by one each way (the error of that solve is far below one lattice step
 * for any basis of skew <= SKEW_MAX, see below), and test each candidate exactly in int64.
 * Lattices that the CPU walks in a Lagrange-reduced basis (skew > SKEW_MAX) with an
 * order-dependent overlap are not done here (tsr_gpu_repeat_can).
 *
 * Per-copy variation (docs/variation.md): a copy's scale and bias come from the same programs
 * and evaluator as the CPU's (nodes/expr_eval.h, uploaded once per edge), jitter from the same
 * integer hash; jitter widens each pixel's candidate range by its bound. Per-copy source
 * parameters (a copy's radius or value) draw each copy's pixel from the child's source with the
 * copy's values set, exactly as nodes/repeat.c's copy_source and the base kernels do
 * (gpu/shape.cuh), for the shapes that are tested per sub-sample and the radial gradient; other
 * sources' per-copy parameters are drawn on the host (tsr_gpu_repeat_can). */
#include "gpu/gpu_int.cuh"
#include "gpu/shape.cuh"
#include "nodes/expr_eval.h"

extern "C" {
#include "nodes/vector.h"
}

#include <math.h>

/* nodes/repeat.c: above this skew the CPU walks a reduced basis (out of copy order). */
#define SKEW_MAX 64.0

static double
skew(const int64_t u[2], const int64_t v[2])
{
    double det = fabs((double)((__int128)u[0] * v[1] - (__int128)u[1] * v[0]));
    return ((fabs((double)v[0]) + fabs((double)v[1])) * (fabs((double)u[0]) + fabs((double)u[1]))) /
           det;
}

/* The base kernel a per-copy source draws with (gpu/shape.cuh), -1: none on the device */
static int
leaf_kind(const tsr_node *c)
{
    const tsr_source *s = c->source;
    if (!s)
        return -1;
    switch (s->kind) {
    case TSR_SRC_CIRCLE:
    case TSR_SRC_ELLIPSE:
    case TSR_SRC_RING:
    case TSR_SRC_RECT:
        if (tsr_shape_exact(s))
            return -1;
        return s->aa > 0 ? B_SHAPE_AA : B_SHAPE;
    case TSR_SRC_RADIAL:
        return B_RADIAL;
    default:
        return -1;
    }
}

extern "C" bool
tsr_gpu_repeat_can(const tsr_edge *e)
{
    const tsr_repeat_params *r = (const tsr_repeat_params *)e->params;
    return skew(r->u, r->v) <= SKEW_MAX && (!r->sources || leaf_kind(e->child) >= 0);
}

/* A per-copy source parameter: its program and how copy_source stores and bounds it. */
struct src_param {
    const tsr_expr *x; /* device copy; NULL: not varied */
    bool f64;          /* stored as double (else as float, which must stay finite) */
    bool range, min_open, max_open;
    double min, max;
};

/* What a copy brings, made once per copy of a launch (copy_table_k) rather than for each of
 * its pixels: the expressions are interpreted and the jitter hashed per copy, not per pixel per
 * candidate. The same values, so the same bits. */
struct copy_t {
    double sc, bi;     /* scale and bias (1, 0 when not given) */
    double radius;     /* per-copy source: the radius and value as set */
    float value;
    int drawn;         /* per-copy source: 0 when a parameter is out of its range */
    int64_t d[2];      /* jitter */
};

struct rep_args {
    float *P;
    tsr_rect Pr, area; /* P's rect; the active area inside it */
    const float *C;
    tsr_rect Cr;       /* child pixels held */
    int64_t ox, oy, cw, ch, ux, uy, vx, vy;
    double det;
    int ov, blend, mask;
    bool axis;         /* disjoint and axis-aligned: one floor division */
    bool axis32;       /* ... in 32 bits: (px0 + x - Pr.x) mod ux (ncu: the 64-bit remainders
                        * emulated in software held repeat_out at 70 % of the SMs) */
    uint32_t px0, py0; /* the copy phase at P.r's corner: floor_mod(Pr.x - ox, ux), ... */
    tsr_gpu_conv to;   /* to.dst: every pixel of Pr out as a sample */
    const tsr_expr *scale, *bias; /* device copies; NULL: not given */
    bool values;       /* scale or bias given */
    int64_t jb[2];     /* jitter bound, (0, 0): none */
    uint64_t seed;
    int leaf;          /* per-copy sources: the base kernel kind (B_SHAPE...), -1: none */
    base_args base;    /* ... the child's base (its whole rect the shapes' box) */
    src_param sp[2];   /* ... radius, value */
    copy_t *tab;       /* per-copy values of copies [ti0, ti0 + tni) x [tj0, tj0 + tnj), or
                        * NULL; a copy outside is computed where it is needed */
    int64_t ti0, tj0, tni, tnj;
};

/* Copy (i, j)'s entry in the launch's table, or NULL when it has none. */
__device__ static const copy_t *
table_at(const rep_args &a, int64_t i, int64_t j)
{
    int64_t ti = i - a.ti0, tj = j - a.tj0;
    if (!a.tab || ti < 0 || ti >= a.tni || tj < 0 || tj >= a.tnj)
        return NULL;
    return &a.tab[tj * a.tni + ti];
}

/* Per-copy value v of parameter p of copy (i, j) as copy_source stores it; false: the copy is
 * not drawn. */
__device__ static bool
param_value(const src_param &p, int64_t i, int64_t j, double *v)
{
    double x = tsr_expr_eval(p.x, i, j);
    if (!isfinite(x))
        return false;
    if (p.range) {
        bool lo = p.min_open ? x > p.min : x >= p.min;
        bool hi = p.max_open ? x < p.max : x <= p.max;
        if (!lo || !hi)
            return false;
    }
    if (!p.f64) {
        float f = (float)x;
        if (!isfinite(f))
            return false;
        x = (double)f;
    }
    *v = x;
    return true;
}

/* Copy (i, j)'s radius and value as copy_source sets them, over *radius and *value (left as
 * they are where a parameter does not vary); false: the copy is not drawn. */
__device__ static bool
copy_params(const rep_args &a, int64_t i, int64_t j, double *radius, float *value)
{
    double v;
    if (a.sp[0].x) {
        if (!param_value(a.sp[0], i, j, &v))
            return false;
        *radius = v;
    }
    if (a.sp[1].x) {
        if (!param_value(a.sp[1], i, j, &v))
            return false;
        *value = (float)v;
    }
    return true;
}

/* Child pixel (cx, cy) of copy (i, j): the fetched child's, or drawn from the copy's own
 * source. False: the copy is not drawn (a parameter out of its range). */
__device__ static bool
child_px(const rep_args &a, int64_t i, int64_t j, int64_t cx, int64_t cy, float *s)
{
    if (a.leaf < 0) {
        *s = a.C[(cy - a.Cr.y) * a.Cr.w + (cx - a.Cr.x)];
        return true;
    }
    base_args b = a.base;
    const copy_t *t = table_at(a, i, j);
    if (t) {
        if (!t->drawn)
            return false;
        b.radius = t->radius;
        b.value = t->value;
    } else if (!copy_params(a, i, j, &b.radius, &b.value)) {
        return false;
    }
    switch (a.leaf) {
    case B_SHAPE: *s = tsr_gpu_base_px<B_SHAPE>(b, cx, cy); break;
    case B_SHAPE_AA: *s = tsr_gpu_base_px<B_SHAPE_AA>(b, cx, cy); break;
    default: *s = tsr_gpu_base_px<B_RADIAL>(b, cx, cy); break;
    }
    return true;
}

/* Child value s of copy (i, j) through its scale and bias, exactly as nodes/repeat.c does. */
__device__ static float
copy_value(const rep_args &a, int64_t i, int64_t j, float s)
{
    if (!a.values)
        return s;
    const copy_t *t = table_at(a, i, j);
    double sc = t ? t->sc : a.scale ? tsr_expr_eval(a.scale, i, j) : 1.0;
    double bi = t ? t->bi : a.bias ? tsr_expr_eval(a.bias, i, j) : 0.0;
    return (float)(bi + sc * (double)s);
}

/* Copy (i, j)'s jitter. */
__device__ static void
copy_jitter(const rep_args &a, int64_t i, int64_t j, int64_t d[2])
{
    const copy_t *t = table_at(a, i, j);
    if (t) {
        d[0] = t->d[0], d[1] = t->d[1];
        return;
    }
    tsr_jitter(a.seed, a.jb, i, j, d);
}

/* The lattice coordinates' range over the corners of the box [x0, x1] x [y0, y1] of copy-origin
 * offsets from o: i = (px vy - py vx) / det, j = (py ux - px uy) / det (a pixel's candidates
 * on the device, a launch's table on the host). */
__host__ __device__ static void
lattice_span(const rep_args &a, double x0, double y0, double x1, double y1, double *imin,
             double *imax, double *jmin, double *jmax)
{
    for (int c = 0; c < 4; c++) {
        double px = c & 1 ? x1 : x0, py = c & 2 ? y1 : y0;
        double i = (px * (double)a.vy - py * (double)a.vx) / a.det;
        double j = (py * (double)a.ux - px * (double)a.uy) / a.det;
        *imin = c ? fmin(*imin, i) : i;
        *imax = c ? fmax(*imax, i) : i;
        *jmin = c ? fmin(*jmin, j) : j;
        *jmax = c ? fmax(*jmax, j) : j;
    }
}

/* The layer's value at parent pixel (x, y) of the active area blended into p. */
__device__ static float
repeat_px(const rep_args &a, int64_t x, int64_t y, float p)
{
    int64_t rx = x - a.ox, ry = y - a.oy;
    if (a.axis32) {
        int64_t cx = (a.px0 + (uint32_t)(x - a.Pr.x)) % (uint32_t)a.ux;
        int64_t cy = (a.py0 + (uint32_t)(y - a.Pr.y)) % (uint32_t)a.vy;
        if (cx < a.cw && cy < a.ch)
            p = tsr_pw_apply(a.blend, a.mask, p, a.C[(cy - a.Cr.y) * a.Cr.w + (cx - a.Cr.x)], 1);
        return p;
    }
    if (a.axis) {
        int64_t ci = tsr_dfloor_div(rx, a.ux), cj = tsr_dfloor_div(ry, a.vy);
        int64_t cx = rx - ci * a.ux;
        int64_t cy = ry - cj * a.vy;
        float s;
        if (cx < a.cw && cy < a.ch && child_px(a, ci, cj, cx, cy, &s))
            p = tsr_pw_apply(a.blend, a.mask, p, copy_value(a, ci, cj, s), 1);
        return p;
    }
    /* copy origins o + i u + j v lie in [x - cw + 1, x] x [y - ch + 1, y] */
    double imin, imax, jmin, jmax;
    lattice_span(a, (double)(rx - a.cw + 1 - a.jb[0]), (double)(ry - a.ch + 1 - a.jb[1]),
                 (double)(rx + a.jb[0]), (double)(ry + a.jb[1]), &imin, &imax, &jmin, &jmax);
    int64_t i0 = (int64_t)floor(imin) - 1, i1 = (int64_t)ceil(imax) + 1;
    int64_t j0 = (int64_t)floor(jmin) - 1, j1 = (int64_t)ceil(jmax) + 1;
    float l = 0.0f;
    int c = 0;
    uint32_t nz = 0;
    for (int64_t j = j0; j <= j1; j++)
        for (int64_t i = i0; i <= i1; i++) {
            int64_t cx = rx - (i * a.ux + j * a.vx), cy = ry - (i * a.uy + j * a.vy);
            if (a.jb[0] || a.jb[1]) {
                int64_t d[2];
                copy_jitter(a, i, j, d);
                cx -= d[0];
                cy -= d[1];
            }
            float s;
            if (cx < 0 || cx >= a.cw || cy < 0 || cy >= a.ch || !child_px(a, i, j, cx, cy, &s))
                continue;
            s = copy_value(a, i, j, s);
            l = tsr_pw_overlap(a.ov, c, l, s);
            nz += s != 0.0f;
            c = 1;
        }
    if (!c)
        return p;
    if (a.ov == TSR_OVERLAP_AVERAGE)
        l = nz ? l / (float)nz : 0.0f;
    return tsr_pw_apply(a.blend, a.mask, p, l, 1);
}

/* The table's entries, one thread each: what copy_value, copy_jitter and child_px compute. */
static __global__ void
copy_table_k(rep_args a)
{
    size_t n = (size_t)a.tni * (size_t)a.tnj;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x) {
        int64_t i = a.ti0 + (int64_t)(k % (size_t)a.tni), j = a.tj0 + (int64_t)(k / (size_t)a.tni);
        copy_t t;
        t.sc = a.scale ? tsr_expr_eval(a.scale, i, j) : 1.0;
        t.bi = a.bias ? tsr_expr_eval(a.bias, i, j) : 0.0;
        t.radius = a.base.radius;
        t.value = a.base.value;
        t.drawn = a.leaf < 0 || copy_params(a, i, j, &t.radius, &t.value);
        t.d[0] = t.d[1] = 0;
        if (a.jb[0] || a.jb[1])
            tsr_jitter(a.seed, a.jb, i, j, t.d);
        a.tab[k] = t;
    }
}

/* The copies whose pixels can fall in a.area (those each pixel's candidate solve can name,
 * widened by 2 each way against the solve's rounding over a larger box): *ni x *nj from
 * (*i0, *j0); false when there are too many for a table (a copy's values are then computed
 * at each pixel, as before). */
static bool
copy_range(const rep_args &a, int64_t *i0, int64_t *j0, int64_t *ni, int64_t *nj)
{
    enum { TABLE_MAX = 1 << 22 }; /* 4 M copies, 192 MiB of table: never near in practice */
    if (tsr_rect_empty(a.area))
        return false;
    double imin, imax, jmin, jmax;
    lattice_span(a, (double)(a.area.x - a.ox - a.cw + 1 - a.jb[0]),
                 (double)(a.area.y - a.oy - a.ch + 1 - a.jb[1]),
                 (double)(a.area.x + a.area.w - 1 - a.ox + a.jb[0]),
                 (double)(a.area.y + a.area.h - 1 - a.oy + a.jb[1]), &imin, &imax, &jmin, &jmax);
    double span = (imax - imin + 5) * (jmax - jmin + 5);
    if (!(span < (double)TABLE_MAX) || !(fabs(imin) < 4e18) || !(fabs(jmin) < 4e18))
        return false;
    *i0 = (int64_t)floor(imin) - 2;
    *j0 = (int64_t)floor(jmin) - 2;
    *ni = (int64_t)ceil(imax) + 2 - *i0 + 1;
    *nj = (int64_t)ceil(jmax) + 2 - *j0 + 1;
    return true;
}

static __global__ void
repeat_kernel(rep_args a)
{
    TSR_FOR_PIXELS(a.area.w, a.area.h, lx, ly) {
        int64_t x = a.area.x + lx, y = a.area.y + ly;
        float *p = a.P + (y - a.Pr.y) * a.Pr.w + (x - a.Pr.x);
        *p = repeat_px(a, x, y, *p);
    }
}

/* Over all of P.r, every pixel out as a sample (the root's last edge). */
static __global__ void
repeat_out_kernel(rep_args a)
{
    TSR_FOR_PIXELS(a.Pr.w, a.Pr.h, lx, ly) {
        int64_t x = a.Pr.x + lx, y = a.Pr.y + ly;
        float p = a.P[ly * a.Pr.w + lx];
        if (x >= a.area.x && x < a.area.x + a.area.w && y >= a.area.y && y < a.area.y + a.area.h)
            p = repeat_px(a, x, y, p);
        tsr_gpu_put(a.to, x, y, p);
    }
}

/* The child's base for per-copy sources (as sources.cu's launchers set it up), its varied
 * parameters' programs uploaded with copy_source's rules for them. */
static tsr_status
leaf_args(tsr_gpu *g, const tsr_edge *e, rep_args *a, tsr_error *err)
{
    const tsr_repeat_params *r = (const tsr_repeat_params *)e->params;
    const tsr_node *c = e->child;
    const tsr_source *s = c->source;
    a->leaf = leaf_kind(c);
    if (a->leaf < 0)
        return tsr_fail(err, TSR_EINTERNAL, "gpu: repeat: per-copy source not on the device");
    base_args &b = a->base;
    memset(&b, 0, sizeof b);
    b.fill = c->fill;
    b.kind = (int)s->kind;
    /* the shapes' box: the child's whole rect (the CPU's box, grown by 2 px, only leaves out
     * pixels that no sub-sample of the shape reaches: they keep the fill either way) */
    b.box = tsr_rect_make(0, 0, c->w, c->h);
    tsr_gpu_source_args(&b, s);
    const tsr_expr *xs[2] = {r->src_radius, r->src_value};
    static const char *const keys[2] = {"radius", "value"};
    for (int k = 0; k < 2; k++) {
        if (!xs[k])
            continue;
        const tsr_param *pm = tsr_source_key(c, keys[k]);
        if (!pm)
            return tsr_fail(err, TSR_EINTERNAL, "gpu: repeat: no source key %s", keys[k]);
        src_param &p = a->sp[k];
        if (!(p.x = (const tsr_expr *)tsr_gpu_resident(g, xs[k], sizeof *xs[k], err)))
            return err && err->status != TSR_OK ? err->status : TSR_ENOMEM;
        p.f64 = pm->type == TSR_P_F64;
        p.range = (pm->flags & TSR_PF_RANGE) != 0;
        p.min_open = (pm->flags & TSR_PF_MIN_OPEN) != 0;
        p.max_open = (pm->flags & TSR_PF_MAX_OPEN) != 0;
        p.min = pm->min;
        p.max = pm->max;
    }
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_repeat(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,
               const tsr_gpu_out *to, tsr_error *err)
{
    const tsr_repeat_params *r = (const tsr_repeat_params *)e->params;
    if (!tsr_gpu_repeat_can(e))
        return tsr_fail(err, TSR_EINTERNAL, "gpu: repeat: lattice needs a reduced basis");
    rep_args a;
    memset(&a, 0, sizeof a);
    a.P = P.px;
    a.Pr = P.r;
    a.area = P.r;
    if (r->region[2] > 0)
        a.area = tsr_rect_intersect(a.area, tsr_rect_make(r->region[0], r->region[1],
                                                          r->region[2], r->region[3]));
    if (tsr_rect_empty(a.area))
        a.area = tsr_rect_make(P.r.x, P.r.y, 0, 0);
    if (tsr_rect_empty(a.area) && !to)
        return TSR_OK;
    tsr_status cs = tsr_gpu_conv_make(g, to, &a.to, err);
    if (cs != TSR_OK)
        return cs;
    a.C = child.px;
    a.Cr = child.r;
    a.ox = e->offset[0];
    a.oy = e->offset[1];
    a.cw = e->child->w;
    a.ch = e->child->h;
    a.ux = r->u[0];
    a.uy = r->u[1];
    a.vx = r->v[0];
    a.vy = r->v[1];
    a.det = (double)((__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0]);
    /* a disjoint lattice puts one value per pixel: every overlap mode is a plain copy */
    a.ov = r->disjoint ? TSR_OVERLAP_FIRST : r->overlap;
    a.blend = (int)e->blend;
    a.mask = e->mask;
    a.jb[0] = r->jitter[0];
    a.jb[1] = r->jitter[1];
    a.seed = (uint64_t)r->seed;
    a.values = r->values;
    if (r->scale &&
        !(a.scale = (const tsr_expr *)tsr_gpu_resident(g, r->scale, sizeof *r->scale, err)))
        return err && err->status != TSR_OK ? err->status : TSR_ENOMEM;
    if (r->bias &&
        !(a.bias = (const tsr_expr *)tsr_gpu_resident(g, r->bias, sizeof *r->bias, err)))
        return err && err->status != TSR_OK ? err->status : TSR_ENOMEM;
    a.leaf = -1;
    if (r->sources) {
        tsr_status ls = leaf_args(g, e, &a, err);
        if (ls != TSR_OK)
            return ls;
    }
    a.axis = r->disjoint && a.uy == 0 && a.vx == 0 && a.ux > 0 && a.vy > 0 && !a.jb[0] && !a.jb[1];
    const int64_t lim = (int64_t)1 << 31;
    a.axis32 = a.axis && !a.values && a.leaf < 0 && a.ux < lim && a.vy < lim && P.r.w < lim &&
               P.r.h < lim;
    if (a.axis32) {
        a.px0 = (uint32_t)tsr_floor_mod(P.r.x - a.ox, a.ux);
        a.py0 = (uint32_t)tsr_floor_mod(P.r.y - a.oy, a.vy);
    }
    /* a table of the copies' values where a pixel would otherwise interpret an expression or
     * hash a jitter for each of its candidates */
    size_t mark = tsr_gpu_mark(g);
    if ((a.values || a.leaf >= 0 || a.jb[0] || a.jb[1]) &&
        copy_range(a, &a.ti0, &a.tj0, &a.tni, &a.tnj)) {
        size_t n = (size_t)a.tni * (size_t)a.tnj;
        a.tab = (copy_t *)tsr_gpu_alloc(g, n * sizeof *a.tab, err);
        if (!a.tab)
            return err && err->status != TSR_OK ? err->status : TSR_ENOMEM;
        copy_table_k<<<tsr_blocks(n, 256), 256, 0, g->compute>>>(a);
        TSR_LAUNCHED("repeat table", err);
    }
    if (to)
        repeat_out_kernel<<<tsr_grid2(P.r.w, P.r.h), 256, 0, g->compute>>>(a);
    else
        repeat_kernel<<<tsr_grid2(a.area.w, a.area.h), 256, 0, g->compute>>>(a);
    TSR_LAUNCHED("repeat", err);
    tsr_gpu_reset(g, mark); /* stream order: later launches reuse it after this one */
    return TSR_OK;
}
