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
    if (!v || tsr_rect_empty(r))
        return;
    tsr_error err = {TSR_OK, ""};
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    size_t npx = (size_t)r.w * (size_t)r.h;
    float *cov = NULL;
    tsr_status st = tsr_vec_select(v, r, &p, &err);
    if (st == TSR_OK && p.nring > 0) {
        if (!(cov = malloc(npx * sizeof *cov)))
            st = tsr_fail(&err, TSR_ENOMEM, "out of memory for a %lldx%lld rect", (long long)r.w,
                          (long long)r.h);
        else if ((st = tsr_geom_coverage(&p, r, cov, &err)) == TSR_OK)
            for (size_t i = 0; i < npx; i++)
                px[i] = tsr_src_layout_mix(px[i], cov[i], value);
    }
    /* a source's render cannot fail: as a layout's, a failure leaves the rect as it was and
     * says so on stderr (out of memory is the only one: the outlines were checked at load) */
    if (st != TSR_OK)
        fprintf(stderr, "tessera: %s: %s\n", where ? where : "outlines", err.msg);
    free(cov);
    tsr_geom_polys_free(&p);
}
