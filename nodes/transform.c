/* transform: the child placed with a rotation by any angle, a mirror, a scale and a sub-pixel
 * shift, resampled by a stated filter (docs/transforms.md).
 *
 * Each parent pixel's centre goes through the inverse map into child coordinates
 * (nodes/transform_math.h) and the child is sampled there: nearest, bilinear or bicubic (Keys,
 * a = -0.5). A quarter turn or a mirror at scale 1 whose map sends pixel centres to pixel
 * centres is a copy of the child's samples (prepare() finds it and takes the nearest pixel),
 * not a resampling. The filter's footprint is the halo: need() maps the parent rect's corner
 * centres back, grows their bounding box by the footprint and a pixel for rounding, and asks
 * for that (clipped to the child, or wrapped into it): a tile needs only its neighbourhood, and
 * a value depends only on its pixel's point, so results do not depend on the tile size.
 *
 * The map is shift-invariant only in its exact integer cases, so the trait declares no halo()
 * for the plan's periodicity: a transformed node is computed, never copied from a period. */
#include "nodes/nodes.h"
#include "nodes/transform_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tsr_xf_filter_names[] = {"bilinear", "bicubic", "nearest", NULL};
static const char *const tsr_xf_outside_names[] = {"none", "zero", "clamp", "wrap", NULL};

#define OFF(f) offsetof(tsr_transform_params, f)
#define COORD_RANGE TSR_PF_RANGE, -(double)TSR_COORD_MAX, (double)TSR_COORD_MAX
#define ROTATE_MAX 1e6 /* degrees: any angle, written as people write angles */
#define SCALE_MIN 1e-3
#define SCALE_MAX 1e3

static const tsr_param transform_params[] = {
    {"rotate", TSR_P_F64, OFF(rotate), TSR_PF_UNITLESS | TSR_PF_RANGE, -ROTATE_MAX, ROTATE_MAX,
     0, NULL, "degrees, counterclockwise as the image is seen, about the pivot"},
    {"mirror", TSR_P_BOOL, OFF(mirror), 0, 0, 0, 0, NULL,
     "mirror left-right about the pivot, before the rotation"},
    {"scale", TSR_P_F64, OFF(scale), TSR_PF_UNITLESS | TSR_PF_RANGE, SCALE_MIN, SCALE_MAX, 0, NULL,
     "size factor about the pivot, 0.001..1000, default 1"},
    {"pivot", TSR_P_F64_2, OFF(pivot), COORD_RANGE, 0, NULL,
     "[x, y] in child px: the point turned about, default the child's centre in whole px"},
    {"shift", TSR_P_F64_2, OFF(shift), COORD_RANGE, 0, NULL,
     "[dx, dy] px, added to the offset (sub-pixel placement), default [0, 0]"},
    {"filter", TSR_P_ENUM, OFF(filter), 0, 0, 0, 0, tsr_xf_filter_names,
     "bilinear (default) | bicubic (Keys, a = -0.5) | nearest"},
    {"outside", TSR_P_ENUM, OFF(outside), 0, 0, 0, 0, tsr_xf_outside_names,
     "none (default: covers the child only) | zero | clamp | wrap"},
};

static void
transform_defaults(void *params)
{
    tsr_transform_params *p = params;
    memset(p, 0, sizeof *p);
    p->scale = 1.0;
    p->pivot[0] = p->pivot[1] = NAN; /* the child's centre: known once the child is */
    p->filter = TSR_XF_BILINEAR;
    p->outside = TSR_XF_NONE;
}

/* The loader checked the table; this holds a hand-made edge to the same rules. */
static tsr_status
transform_check(const tsr_edge *e, tsr_check *c)
{
    const tsr_transform_params *p = e->params;
    if (!(p->rotate >= -ROTATE_MAX && p->rotate <= ROTATE_MAX))
        return tsr_check_failf(c, "rotate", "must be in -%g..%g degrees", ROTATE_MAX, ROTATE_MAX);
    if (!(p->scale >= SCALE_MIN && p->scale <= SCALE_MAX))
        return tsr_check_failf(c, "scale", "must be in %g..%g, got %g", SCALE_MIN, SCALE_MAX,
                               p->scale);
    if (isnan(p->pivot[0]) != isnan(p->pivot[1]))
        return c->fail(c, "pivot", "give both coordinates");
    for (int i = 0; i < 2; i++) {
        if (!isnan(p->pivot[i]) && !(fabs(p->pivot[i]) <= (double)TSR_COORD_MAX))
            return tsr_check_failf(c, "pivot", "must be within +-2^40 px");
        if (!(fabs(p->shift[i]) <= (double)TSR_COORD_MAX))
            return tsr_check_failf(c, "shift", "must be within +-2^40 px");
    }
    if (p->filter < TSR_XF_BILINEAR || p->filter > TSR_XF_NEAREST)
        return c->fail(c, "filter", "must be bilinear, bicubic or nearest");
    if (p->outside < TSR_XF_NONE || p->outside > TSR_XF_WRAP)
        return c->fail(c, "outside", "must be none, zero, clamp or wrap");
    return TSR_OK;
}

/* ---- the map ------------------------------------------------------------------------------ */

/* cos and sin of `deg` degrees; exact at the quarter turns (libm's sin(pi) is not 0), which
 * *quarter reports. */
static void
turn(double deg, double *c, double *s, bool *quarter)
{
    double r = fmod(deg, 360.0); /* exact */
    if (r < 0)
        r += 360.0;
    if (r >= 360.0) /* -tiny + 360 rounds to 360 */
        r = 0.0;
    *quarter = true;
    if (r == 0.0)
        *c = 1.0, *s = 0.0;
    else if (r == 90.0)
        *c = 0.0, *s = 1.0;
    else if (r == 180.0)
        *c = -1.0, *s = 0.0;
    else if (r == 270.0)
        *c = 0.0, *s = -1.0;
    else {
        *quarter = false;
        *c = cos(r * (M_PI / 180.0));
        *s = sin(r * (M_PI / 180.0));
    }
}

/* The inverse of p = A + s R M (c - pivot), A = offset + shift + pivot, R the rotation
 * (counterclockwise on screen, y down: R = [cos, sin; -sin, cos]), M the mirror diag(-1, 1):
 * c = pivot + (1 / s) M R^T (p - A), written as c = m p + t. */
void
tsr_transform_map(const tsr_edge *e, tsr_xf *f)
{
    const tsr_transform_params *p = e->params;
    double piv[2] = {p->pivot[0], p->pivot[1]};
    if (isnan(piv[0]) || isnan(piv[1])) {
        /* whole pixels, so quarter turns about it map pixel centres to pixel centres */
        piv[0] = (double)(e->child->w / 2);
        piv[1] = (double)(e->child->h / 2);
    }
    double a[2] = {(double)e->offset[0] + p->shift[0] + piv[0],
                   (double)e->offset[1] + p->shift[1] + piv[1]};
    double c, s;
    bool quarter;
    turn(p->rotate, &c, &s, &quarter);
    double mx = p->mirror ? -1.0 : 1.0, k = p->scale;
    f->m[0] = mx * c / k;
    f->m[1] = -mx * s / k;
    f->m[2] = s / k;
    f->m[3] = c / k;
    f->t[0] = piv[0] - (f->m[0] * a[0] + f->m[1] * a[1]);
    f->t[1] = piv[1] - (f->m[2] * a[0] + f->m[3] * a[1]);
    f->cw = e->child->w;
    f->ch = e->child->h;
    f->edge = p->outside;
    /* a quarter turn at scale 1 moves pixel centres (z + 0.5) to +-(z + 0.5) + t: centres again
     * exactly when t is whole (and below 2^50, where every step is exact) */
    f->exact = quarter && k == 1.0 && f->t[0] == floor(f->t[0]) && f->t[1] == floor(f->t[1]) &&
               fabs(f->t[0]) < 0x1p50 && fabs(f->t[1]) < 0x1p50;
    f->filter = f->exact ? TSR_XF_NEAREST : p->filter;
}

static tsr_status
transform_prepare(tsr_edge *e, tsr_error *err)
{
    tsr_xf *f = malloc(sizeof *f);
    if (!f)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", e->where ? e->where : "transform");
    /* the default pivot written down, as repeat writes its period: what `check` prints is
     * then the pivot used, and `check --pixels` prints a design that loads the same */
    tsr_transform_params *p = e->params;
    if (isnan(p->pivot[0]) || isnan(p->pivot[1])) {
        p->pivot[0] = (double)(e->child->w / 2);
        p->pivot[1] = (double)(e->child->h / 2);
    }
    tsr_transform_map(e, f);
    e->state = f;
    return TSR_OK;
}

static void
transform_release(tsr_edge *e)
{
    free(e->state);
    e->state = NULL;
}

/* The map of an edge prepare() has not seen (a hand-made one): made on the spot. */
static const tsr_xf *
map_of(const tsr_edge *e, tsr_xf *tmp)
{
    if (e->state)
        return e->state;
    tsr_transform_map(e, tmp);
    return tmp;
}

/* ---- need ------------------------------------------------------------------------------ */

/* Bound a double before it becomes an int64 (|u| stays below 2^52 for any design the table
 * admits; this keeps a conversion defined whatever the edge holds). */
static double
bounded(double u)
{
    const double lim = 0x1p61;
    return u < -lim ? -lim : u > lim ? lim : u;
}

/* The child columns (or rows) the footprints of points in [lo, hi] read, before the edge
 * mode: [*a, *b], grown by one pixel each way for the rounding between the corners' points,
 * computed here, and each pixel's, computed in the kernels. */
static void
span_of(int filter, double lo, double hi, int64_t *a, int64_t *b)
{
    double w[4];
    *a = tsr_xf_weights(filter, bounded(lo), w) - 1;
    *b = tsr_xf_weights(filter, bounded(hi), w) + tsr_xf_taps(filter);
}

/* Clip [a, b] to [0, n): the nearest pixels (clamp reads those, and so do the covered pixels
 * near an edge under none and zero). False when [a, b] misses the child and nothing the mode
 * covers can read it. */
static bool
clip_span(int edge, int64_t *a, int64_t *b, int64_t n)
{
    if ((*b < 0 || *a >= n) && edge != TSR_XF_CLAMP)
        return false;
    *a = *a < 0 ? 0 : *a >= n ? n - 1 : *a;
    *b = *b < 0 ? 0 : *b >= n ? n - 1 : *b;
    return true;
}

static size_t
transform_need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    if (tsr_rect_empty(pr))
        return 0;
    tsr_xf tmp;
    const tsr_xf *f = map_of(e, &tmp);
    /* the map is affine: the extremes are at the corner pixels' centres */
    double ulo = INFINITY, uhi = -INFINITY, vlo = INFINITY, vhi = -INFINITY;
    for (int k = 0; k < 4; k++) {
        int64_t x = pr.x + ((k & 1) ? pr.w - 1 : 0), y = pr.y + ((k & 2) ? pr.h - 1 : 0);
        double u = tsr_xf_u(f, x, tsr_xf_row_u(f, y)), v = tsr_xf_v(f, x, tsr_xf_row_v(f, y));
        ulo = u < ulo ? u : ulo;
        uhi = u > uhi ? u : uhi;
        vlo = v < vlo ? v : vlo;
        vhi = v > vhi ? v : vhi;
    }
    int64_t x0, x1, y0, y1;
    span_of(f->filter, ulo, uhi, &x0, &x1);
    span_of(f->filter, vlo, vhi, &y0, &y1);
    if (f->edge != TSR_XF_WRAP) {
        if (!clip_span(f->edge, &x0, &x1, f->cw) || !clip_span(f->edge, &y0, &y1, f->ch))
            return 0;
        out[0] = tsr_rect_make(x0, y0, x1 - x0 + 1, y1 - y0 + 1);
        return 1;
    }
    int64_t sx[2], sw[2], sy[2], sh[2];
    int nx = tsr_wrap_spans(x0, x1 - x0 + 1, f->cw, sx, sw);
    int ny = tsr_wrap_spans(y0, y1 - y0 + 1, f->ch, sy, sh);
    size_t n = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++)
            out[n++] = tsr_rect_make(sx[i], sy[j], sw[i], sh[j]);
    return n;
}

/* ---- the layer ------------------------------------------------------------------------- */

/* Where the layer reads the child: the views, and the one view's bounds hoisted when there is
 * one (the common case: need() returns one rect unless a wrap splits it). */
typedef struct reader {
    const tsr_view *v;
    size_t nv;
    const float *px; /* nv == 1: the view's first pixel, child (x0, y0) */
    int64_t x0, y0, x1, y1, stride;
} reader;

/* Child pixel (x, y), inside the child, from the view that holds it; false when none does
 * (the engine passed views need() did not ask for). */
static inline bool
tap(const reader *rd, int64_t x, int64_t y, float *out)
{
    if (rd->nv == 1) {
        if (x < rd->x0 || x >= rd->x1 || y < rd->y0 || y >= rd->y1)
            return false;
        *out = rd->px[(y - rd->y0) * rd->stride + (x - rd->x0)];
        return true;
    }
    for (size_t i = 0; i < rd->nv; i++) {
        tsr_rect r = rd->v[i].r;
        if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h) {
            *out = *tsr_view_row(&rd->v[i], x, y);
            return true;
        }
    }
    return false;
}

/* The taps' child columns (rows) through the edge mode, for a footprint starting at k.
 * Under wrap, the first tap's place floor_mod(k, n) is carried from the previous pixel of the
 * row (*pk, *pw: its k and place) by the difference of the two k, so that a division is needed
 * only when a pixel's footprint jumps by more than the child: the same integers as
 * tsr_xf_index's floor modulo, which the GPU computes for each pixel. */
static inline void
axis_taps(int edge, int64_t k, int n, int64_t size, int64_t *pk, int64_t *pw, int64_t *out)
{
    if (k >= 0 && k + n <= size) {
        for (int a = 0; a < n; a++)
            out[a] = k + a;
        return;
    }
    if (edge != TSR_XF_WRAP) {
        for (int a = 0; a < n; a++)
            out[a] = tsr_xf_index(edge, k + a, size);
        return;
    }
    int64_t w = *pw + (k - *pk);
    if (w >= size)
        w -= size;
    else if (w < 0)
        w += size;
    if (w < 0 || w >= size)
        w = tsr_floor_mod(k, size);
    *pk = k;
    *pw = w;
    for (int a = 0; a < n; a++) {
        int64_t t = w + a;
        while (t >= size)
            t -= size;
        out[a] = t;
    }
}

/* Row j of the layer (parent row y = pr.y + j) for one filter: `filter` is a constant in each
 * call (transform_layer's switch), so the tap loops unroll. False when a tap lies in no view. */
static inline bool
layer_row(const tsr_xf *f, int filter, const reader *rd, tsr_rect pr, int64_t y, float *lrow,
          uint8_t *crow)
{
    const int n = tsr_xf_taps(filter);
    const int edge = f->edge;
    const double ru = tsr_xf_row_u(f, y), rv = tsr_xf_row_v(f, y);
    int64_t pkx = 0, pwx = 0, pky = 0, pwy = 0; /* wrap: the last footprint's start and place */
    for (int64_t i = 0; i < pr.w; i++) {
        int64_t x = pr.x + i;
        double u = tsr_xf_u(f, x, ru), v = tsr_xf_v(f, x, rv);
        if (!tsr_xf_covers(f, u, v))
            continue;
        double wx[4], wy[4];
        int64_t kx = tsr_xf_weights(filter, u, wx), ky = tsr_xf_weights(filter, v, wy);
        int64_t ix[4], iy[4];
        axis_taps(edge, kx, n, f->cw, &pkx, &pwx, ix);
        axis_taps(edge, ky, n, f->ch, &pky, &pwy, iy);
        float c[16];
        int64_t xlo = ix[0], xhi = ix[0], ylo = iy[0], yhi = iy[0];
        for (int a = 1; a < n; a++) {
            xlo = ix[a] < xlo ? ix[a] : xlo;
            xhi = ix[a] > xhi ? ix[a] : xhi;
            ylo = iy[a] < ylo ? iy[a] : ylo;
            yhi = iy[a] > yhi ? iy[a] : yhi;
        }
        if (rd->nv == 1 && xlo >= rd->x0 && xhi < rd->x1 && ylo >= rd->y0 && yhi < rd->y1) {
            /* the whole footprint in the one view (no zero: those are -1, outside it) */
            for (int b = 0; b < n; b++) {
                const float *row = rd->px + (iy[b] - rd->y0) * rd->stride;
                for (int a = 0; a < n; a++)
                    c[b * 4 + a] = row[ix[a] - rd->x0];
            }
        } else {
            for (int b = 0; b < n; b++)
                for (int a = 0; a < n; a++) {
                    if (iy[b] < 0 || ix[a] < 0)
                        c[b * 4 + a] = 0.0f;
                    else if (!tap(rd, ix[a], iy[b], &c[b * 4 + a]))
                        return false;
                }
        }
        lrow[i] = tsr_xf_combine(filter, c, wx, wy);
        crow[i] = 1;
    }
    return true;
}

static tsr_status
transform_layer(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews, float *L,
                uint8_t *cov, tsr_error *err)
{
    const char *where = e->where ? e->where : "transform";
    size_t npx = (size_t)pr.w * (size_t)pr.h;
    memset(L, 0, npx * sizeof *L);
    memset(cov, 0, npx);
    tsr_xf tmp;
    const tsr_xf *f = map_of(e, &tmp);
    reader rd = {views, nviews, NULL, 0, 0, 0, 0, 0};
    if (nviews == 1) {
        tsr_rect r = views[0].r;
        rd.x0 = r.x, rd.y0 = r.y, rd.x1 = r.x + r.w, rd.y1 = r.y + r.h;
        rd.stride = views[0].stride;
        rd.px = views[0].px;
    }
    bool ok = true;
    for (int64_t j = 0; j < pr.h && ok; j++) {
        if ((j & 63) == 63 && tsr_stop_requested())
            return tsr_fail(err, TSR_EINTR, "interrupted");
        float *lrow = L + j * pr.w;
        uint8_t *crow = cov + j * pr.w;
        switch (f->filter) {
        case TSR_XF_NEAREST: ok = layer_row(f, TSR_XF_NEAREST, &rd, pr, pr.y + j, lrow, crow); break;
        case TSR_XF_BICUBIC: ok = layer_row(f, TSR_XF_BICUBIC, &rd, pr, pr.y + j, lrow, crow); break;
        default: ok = layer_row(f, TSR_XF_BILINEAR, &rd, pr, pr.y + j, lrow, crow); break;
        }
    }
    if (!ok) {
        memset(L, 0, npx * sizeof *L);
        memset(cov, 0, npx);
        return tsr_fail(err, TSR_EINTERNAL,
                        "%s: transform: child views do not cover what need() asked for", where);
    }
    return TSR_OK;
}

const tsr_trait tsr_trait_transform = {
    .name = "transform",
    .params = transform_params,
    .nparams = sizeof transform_params / sizeof transform_params[0],
    .params_size = sizeof(tsr_transform_params),
    .defaults = transform_defaults,
    .check = transform_check,
    .prepare = transform_prepare,
    .release = transform_release,
    .need = transform_need,
    .layer = transform_layer,
};
