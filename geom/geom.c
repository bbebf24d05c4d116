/* geom: polygon sets, circles and arcs, and the boolean operations and offsets that Clipper
 * does for us (geom/clip.cpp). */
#include "geom/geom_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
tsr_geom_polys_init(tsr_geom_polys *p)
{
    memset(p, 0, sizeof *p);
}

void
tsr_geom_polys_free(tsr_geom_polys *p)
{
    free(p->pt);
    free(p->end);
    tsr_geom_polys_init(p);
}

void
tsr_geom_polys_clear(tsr_geom_polys *p)
{
    p->npt = p->nring = 0;
}

/* Room for `more` items beyond n in an array of cap: doubles, checked. */
static int
grow(void **a, size_t *cap, size_t n, size_t more, size_t size)
{
    if (more <= *cap - n)
        return 0;
    if (more > SIZE_MAX / size - n)
        return -1;
    size_t want = n + more, c = *cap ? *cap : 16;
    while (c < want)
        c = c > SIZE_MAX / 2 / size ? want : 2 * c;
    void *b = realloc(*a, c * size);
    if (!b)
        return -1;
    *a = b;
    *cap = c;
    return 0;
}

tsr_status
tsr_geom_polys_add(tsr_geom_polys *p, const tsr_geom_pt *pts, size_t n, tsr_error *err)
{
    if (grow((void **)&p->pt, &p->cappt, p->npt, n, sizeof *p->pt) ||
        grow((void **)&p->end, &p->capring, p->nring, 1, sizeof *p->end))
        return tsr_fail(err, TSR_ENOMEM, "geom: no memory for a ring of %zu points", n);
    if (n)
        memcpy(p->pt + p->npt, pts, n * sizeof *pts);
    p->npt += n;
    p->end[p->nring++] = p->npt;
    return TSR_OK;
}

tsr_status
tsr_geom_polys_add_rect(tsr_geom_polys *p, double x, double y, double w, double h,
                        tsr_error *err)
{
    if (!(w > 0) || !(h > 0))
        return tsr_fail(err, TSR_EINVAL, "geom: rect %g x %g: sides must be > 0", w, h);
    tsr_geom_pt q[4] = {{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}};
    return tsr_geom_polys_add(p, q, 4, err);
}

/* ---- circles and arcs ---------------------------------------------------------------------- */

tsr_status
tsr_geom_arc_segments(double r, double sweep, double tol, size_t *n, tsr_error *err)
{
    if (!(r > 0) || !isfinite(r) || !(tol > 0) || !isfinite(tol) || !isfinite(sweep))
        return tsr_fail(err, TSR_EINVAL,
                        "geom: arc of radius %g, sweep %g, tolerance %g: radius and tolerance "
                        "must be finite and > 0, sweep finite", r, sweep, tol);
    double full = 2.0 * M_PI, s = fabs(sweep);
    /* the sagitta of a segment of angle a is r (1 - cos(a / 2)) */
    double a = tol >= r ? M_PI : 2.0 * acos(1.0 - tol / r);
    double k = ceil(s / a);
    size_t min = s >= full ? 3 : 1;
    if (!(k <= TSR_GEOM_ARC_MAX))
        return tsr_fail(err, TSR_EINVAL,
                        "geom: arc of radius %g px within %g px needs %.0f segments, more than "
                        "%d", r, tol, k, TSR_GEOM_ARC_MAX);
    *n = k < (double)min ? min : (size_t)k;
    return TSR_OK;
}

void
tsr_geom_arc(double cx, double cy, double r, double a0, double sweep, size_t n,
             tsr_geom_pt *out)
{
    for (size_t i = 0; i <= n; i++) {
        double a = i == n ? a0 + sweep : a0 + sweep * ((double)i / (double)n);
        out[i].x = cx + r * cos(a);
        out[i].y = cy + r * sin(a);
    }
}

tsr_status
tsr_geom_polys_add_circle(tsr_geom_polys *p, double cx, double cy, double r, double tol,
                          tsr_error *err)
{
    size_t n;
    tsr_status st = tsr_geom_arc_segments(r, 2.0 * M_PI, tol, &n, err);
    if (st != TSR_OK)
        return st;
    tsr_geom_pt *q = malloc((n + 1) * sizeof *q);
    if (!q)
        return tsr_fail(err, TSR_ENOMEM, "geom: no memory for a circle of %zu points", n);
    tsr_geom_arc(cx, cy, r, 0.0, 2.0 * M_PI, n, q);
    st = tsr_geom_polys_add(p, q, n, err); /* the last point repeats the first */
    free(q);
    return st;
}

/* ---- rounding to the integer grid ------------------------------------------------------------ */

static tsr_status
quant1(double v, int64_t *q, const char *set, size_t ring, size_t pt, char axis, tsr_error *err)
{
    if (!isfinite(v))
        return tsr_fail(err, TSR_EINVAL, "geom: %sring %zu point %zu: %c = %g is not finite",
                        set, ring, pt, axis, v);
    if (fabs(v) > TSR_GEOM_LIMIT)
        return tsr_fail(err, TSR_EINVAL,
                        "geom: %sring %zu point %zu: %c = %g is beyond +-2^37 px", set, ring,
                        pt, axis, v);
    /* exact scaling (a power of two), then llround's rounding (halves away from zero) without
     * its libm call (3 % of a layout's profile): s - t is exact for any double, and an |s|
     * of 2^52 or more is an integer already */
    double s = v * (double)TSR_COV_UNIT;
    int64_t t = (int64_t)s;
    double f = s - (double)t;
    *q = f >= 0.5 ? t + 1 : f <= -0.5 ? t - 1 : t;
    return TSR_OK;
}

tsr_status
tsr_geom_quantize(const tsr_geom_polys *p, const char *set, int64_t **q, tsr_error *err)
{
    *q = NULL;
    if (p->npt == 0)
        return TSR_OK;
    if (p->npt > SIZE_MAX / (2 * sizeof **q))
        return tsr_fail(err, TSR_ENOMEM, "geom: %s%zu points: too many", set, p->npt);
    int64_t *o = malloc(p->npt * 2 * sizeof *o);
    if (!o)
        return tsr_fail(err, TSR_ENOMEM, "geom: no memory for %zu points", p->npt);
    tsr_status st = tsr_geom_quantize_into(p, set, o, err);
    if (st != TSR_OK) {
        free(o);
        return st;
    }
    *q = o;
    return TSR_OK;
}

tsr_status
tsr_geom_quantize_into(const tsr_geom_polys *p, const char *set, int64_t *o, tsr_error *err)
{
    size_t at = 0;
    for (size_t k = 0; k < p->nring; k++)
        for (size_t i = 0; at < p->end[k]; at++, i++) {
            tsr_status st = quant1(p->pt[at].x, &o[2 * at], set, k, i, 'x', err);
            if (st == TSR_OK)
                st = quant1(p->pt[at].y, &o[2 * at + 1], set, k, i, 'y', err);
            if (st != TSR_OK)
                return st;
        }
    return TSR_OK;
}

/* ---- boolean operations and offsets ---------------------------------------------------------- */

/* A Clipper result back into `out` (replaced): grid points as doubles (exact below 2^29 px). */
static tsr_status
from_clip(const tsr_clip_set *s, tsr_geom_polys *out, tsr_error *err)
{
    /* room first: out keeps its rings if there is none */
    if (grow((void **)&out->pt, &out->cappt, 0, s->npt, sizeof *out->pt) ||
        grow((void **)&out->end, &out->capring, 0, s->nring, sizeof *out->end))
        return tsr_fail(err, TSR_ENOMEM, "geom: no memory for a result of %zu points", s->npt);
    for (size_t i = 0; i < s->npt; i++) {
        out->pt[i].x = (double)s->xy[2 * i] * (1.0 / (double)TSR_COV_UNIT);
        out->pt[i].y = (double)s->xy[2 * i + 1] * (1.0 / (double)TSR_COV_UNIT);
    }
    if (s->nring) /* an empty result may have no arrays at all */
        memcpy(out->end, s->end, s->nring * sizeof *s->end);
    out->npt = s->npt;
    out->nring = s->nring;
    return TSR_OK;
}

static tsr_status
clip_failed(int rc, const char *msg, tsr_error *err)
{
    if (rc == TSR_CLIP_NOMEM)
        return tsr_fail(err, TSR_ENOMEM, "geom: no memory for a polygon operation");
    return tsr_fail(err, TSR_EINVAL, "geom: %s", msg);
}

tsr_status
tsr_geom_boolean(tsr_geom_op op, const tsr_geom_polys *a, const tsr_geom_polys *b,
                 tsr_geom_polys *out, tsr_error *err)
{
    int64_t *qa = NULL, *qb = NULL;
    tsr_status st = tsr_geom_quantize(a, "a: ", &qa, err);
    if (st == TSR_OK && b)
        st = tsr_geom_quantize(b, "b: ", &qb, err);
    if (st == TSR_OK) {
        tsr_clip_set sa = {qa, a->npt, a->end, a->nring}, res;
        tsr_clip_set sb = {qb, b ? b->npt : 0, b ? b->end : NULL, b ? b->nring : 0};
        char msg[200] = "";
        int rc = tsr_clip_execute((int)op, &sa, b ? &sb : NULL, &res, msg, sizeof msg);
        st = rc == TSR_CLIP_OK ? from_clip(&res, out, err) : clip_failed(rc, msg, err);
        tsr_clip_set_free(&res);
    }
    free(qa);
    free(qb);
    return st;
}

tsr_status
tsr_geom_offset(const tsr_geom_polys *a, double delta, tsr_geom_join join, double tol,
                tsr_geom_polys *out, tsr_error *err)
{
    if (!isfinite(delta) || fabs(delta) > TSR_GEOM_LIMIT / 4 || !(tol > 0) ||
        !(tol <= TSR_GEOM_LIMIT / 4))
        return tsr_fail(err, TSR_EINVAL,
                        "geom: offset %g within %g: the offset must be finite (|delta| <= "
                        "2^35 px), the tolerance > 0", delta, tol);
    int64_t *qa = NULL;
    tsr_status st = tsr_geom_quantize(a, "", &qa, err);
    if (st == TSR_OK) {
        tsr_clip_set sa = {qa, a->npt, a->end, a->nring}, res;
        char msg[200] = "";
        int rc = tsr_clip_offset(&sa, delta * (double)TSR_COV_UNIT, (int)join,
                                 tol * (double)TSR_COV_UNIT, &res, msg, sizeof msg);
        st = rc == TSR_CLIP_OK ? from_clip(&res, out, err) : clip_failed(rc, msg, err);
        tsr_clip_set_free(&res);
    }
    free(qa);
    return st;
}
