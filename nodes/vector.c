/* Vector sources' outlines (nodes/vector.h): the rings and their boxes, the per-rect
 * selection, and the CPU's drawing. */
#include "nodes/vector.h"

#include "nodes/layout_src.h" /* tsr_src_layout_mix: the blend of a coverage */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct tsr_vec {
    tsr_geom_polys p;
    double (*box)[4]; /* per ring: x0, y0, x1, y1 */
};

tsr_status
tsr_vec_new(tsr_geom_polys *p, tsr_vec **out, tsr_error *err)
{
    tsr_vec *v = calloc(1, sizeof *v);
    if (v)
        v->box = malloc((p->nring ? p->nring : 1) * sizeof *v->box);
    if (!v || !v->box) {
        free(v);
        tsr_geom_polys_free(p);
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    }
    v->p = *p;
    tsr_geom_polys_init(p);
    for (size_t k = 0; k < v->p.nring; k++) {
        size_t a = k ? v->p.end[k - 1] : 0, b = v->p.end[k];
        double *bx = v->box[k];
        bx[0] = bx[1] = INFINITY;
        bx[2] = bx[3] = -INFINITY;
        for (size_t i = a; i < b; i++) {
            bx[0] = fmin(bx[0], v->p.pt[i].x), bx[1] = fmin(bx[1], v->p.pt[i].y);
            bx[2] = fmax(bx[2], v->p.pt[i].x), bx[3] = fmax(bx[3], v->p.pt[i].y);
        }
    }
    *out = v;
    return TSR_OK;
}

void
tsr_vec_free(tsr_vec *v)
{
    if (!v)
        return;
    tsr_geom_polys_free(&v->p);
    free(v->box);
    free(v);
}

const tsr_geom_polys *
tsr_vec_polys(const tsr_vec *v)
{
    return &v->p;
}

tsr_status
tsr_vec_select(const tsr_vec *v, tsr_rect r, tsr_geom_polys *out, tsr_error *err)
{
    tsr_geom_polys_clear(out);
    if (!v)
        return TSR_OK;
    tsr_rect g = tsr_geom_reach(r);
    for (size_t k = 0; k < v->p.nring; k++) {
        const double *bx = v->box[k];
        if (bx[2] < (double)g.x || bx[0] > (double)(g.x + g.w) || bx[3] < (double)g.y ||
            bx[1] > (double)(g.y + g.h))
            continue;
        size_t a = k ? v->p.end[k - 1] : 0;
        tsr_status st = tsr_geom_polys_add(out, v->p.pt + a, v->p.end[k] - a, err);
        if (st != TSR_OK)
            return st;
    }
    return TSR_OK;
}

void
tsr_vec_bounds(const tsr_vec *v, double b[4])
{
    b[0] = b[1] = INFINITY;
    b[2] = b[3] = -INFINITY;
    for (size_t k = 0; v && k < v->p.nring; k++) {
        b[0] = fmin(b[0], v->box[k][0]), b[1] = fmin(b[1], v->box[k][1]);
        b[2] = fmax(b[2], v->box[k][2]), b[3] = fmax(b[3], v->box[k][3]);
    }
}

void
tsr_vec_render(const tsr_vec *v, float value, const char *where, tsr_rect r, float *px)
{
    tsr_error err = {TSR_OK, ""};
    /* a source's render cannot fail: as a layout's, a failure leaves the rect as it was and
     * says so on stderr (out of memory is the only one: the outlines were checked at load) */
    if (tsr_vec_draw(v, value, r, px, &err) != TSR_OK)
        fprintf(stderr, "tessera: %s: %s\n", where ? where : "outlines", err.msg);
}

tsr_status
tsr_vec_draw(const tsr_vec *v, float value, tsr_rect r, float *px, tsr_error *err)
{
    if (!v || tsr_rect_empty(r))
        return TSR_OK;
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    size_t npx = (size_t)r.w * (size_t)r.h;
    float *cov = NULL;
    tsr_status st = tsr_vec_select(v, r, &p, err);
    if (st == TSR_OK && p.nring > 0) {
        if (!(cov = malloc(npx * sizeof *cov)))
            st = tsr_fail(err, TSR_ENOMEM, "out of memory for a %lldx%lld rect", (long long)r.w,
                          (long long)r.h);
        else if ((st = tsr_geom_coverage(&p, r, cov, err)) == TSR_OK)
            for (size_t i = 0; i < npx; i++)
                px[i] = tsr_src_layout_mix(px[i], cov[i], value);
    }
    free(cov);
    tsr_geom_polys_free(&p);
    return st;
}

/* ---- shapes placed by a transform ------------------------------------------------------------ */

bool
tsr_shape_transformed(const tsr_source *s)
{
    return s->rotate != 0 || s->mirror || s->scale != 1 || s->translate[0] != 0 ||
           s->translate[1] != 0;
}

bool
tsr_shape_exact(const tsr_source *s)
{
    return s->aa == TSR_AA_EXACT || tsr_shape_transformed(s);
}

/* cos and sin of `deg` degrees, exact at multiples of 90 (a rect turned a quarter keeps its
 * edges on the values they had), as the text source takes them. */
static void
cos_sin(double deg, double *c, double *s)
{
    double q = deg / 90.0;
    if (q == floor(q)) {
        static const double cs[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
        int k = (int)fmod(fmod(q, 4.0) + 4.0, 4.0);
        *c = cs[k][0];
        *s = cs[k][1];
        return;
    }
    double r = deg * (M_PI / 180.0);
    *c = cos(r);
    *s = sin(r);
}

void
tsr_shape_xform(const tsr_source *s, tsr_xform *t)
{
    double px = 0, py = 0;
    switch (s->kind) {
    case TSR_SRC_RECT:
        px = s->rect[0] + s->rect[2] * 0.5;
        py = s->rect[1] + s->rect[3] * 0.5;
        break;
    case TSR_SRC_POLYGON: {
        double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t i = 0; i < s->points.n; i++) {
            x0 = fmin(x0, s->points.p[i][0]), x1 = fmax(x1, s->points.p[i][0]);
            y0 = fmin(y0, s->points.p[i][1]), y1 = fmax(y1, s->points.p[i][1]);
        }
        px = s->points.n ? (x0 + x1) * 0.5 : 0;
        py = s->points.n ? (y0 + y1) * 0.5 : 0;
        break;
    }
    default:
        px = s->center[0];
        py = s->center[1];
        break;
    }
    double c = 1, sn = 0, k = s->scale, mx = s->mirror ? -1 : 1;
    cos_sin(s->rotate, &c, &sn);
    /* mirror (x -> -x), scale, then rotate counterclockwise as seen (y is down): the text
     * source's x' = c x + s y, y' = c y - s x */
    *t = (tsr_xform){px, py, px + s->translate[0], py + s->translate[1],
                     {c * k * mx, sn * k, -sn * k * mx, c * k}};
}

void
tsr_xform_point(const tsr_xform *t, double *x, double *y)
{
    double dx = *x - t->px, dy = *y - t->py;
    *x = t->ox + (t->m[0] * dx + t->m[1] * dy);
    *y = t->oy + (t->m[2] * dx + t->m[3] * dy);
}

void
tsr_xform_polys(const tsr_xform *t, tsr_geom_polys *p, size_t from)
{
    for (size_t i = from; i < p->npt; i++)
        tsr_xform_point(t, &p->pt[i].x, &p->pt[i].y);
}
