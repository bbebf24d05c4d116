/* Optical surfaces (docs/optics.md): even aspheres, cylinders, toroids (biconic), axicons,
 * vortex phases, blazed gratings and Zernike sums, as heights, wrapped and quantised on
 * request. The per-pixel arithmetic is nodes/surface_math.h, which gpu/surface.cu runs too;
 * this file holds the keys, their checks, the constants made once per source
 * (tsr_surf_make) and the CPU's loop over pixels. */
#include "nodes/nodes.h"
#include "nodes/surface_math.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OFF(f) offsetof(tsr_source, f)
#define OPT(f) offsetof(tsr_source, optic.f)
#define CENTER {"center", TSR_P_F64_2, OFF(center), TSR_PF_REQUIRED, 0, 0, 0, NULL, "[x, y], px"}
#define POS(k, f, flags, h)                                                                      \
    {k, TSR_P_F64, OPT(f), (flags) | TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, HUGE_VAL, 0, NULL, h}
#define APERTURE(h) POS("aperture", aperture, TSR_PF_REQUIRED, h)
#define NUM(k, f, h) {k, TSR_P_F64, OPT(f), 0, 0, 0, 0, NULL, h}
#define ROC NUM("roc", roc, "radius of curvature R, px (c = 1/R); 0: flat")
#define CONIC NUM("conic", conic, "conic constant k, default 0")
#define ANGLE NUM("angle", angle, "degrees, default 0")
#define TERMS(h) {"terms", TSR_P_POINTS, OFF(points), 0, 0, 0, 1, NULL, h}
#define RELIEF {"relief", TSR_P_ENUM, OPT(relief), 0, 0, 0, 0, relief_names, "sag (default) or cap: z(rim) - z"}
#define WRAP {"wrap", TSR_P_F64, OPT(wrap), TSR_PF_RANGE, 0, HUGE_VAL, 0, NULL, "height H to wrap modulo, > 0; leave out for none"}
#define LEVELS {"levels", TSR_P_INT, OPT(levels), TSR_PF_RANGE | TSR_PF_UNITLESS, 2, 65536, 0, NULL, "quantise to N levels of H/N, 2..65536"}
#define AA {"aa", TSR_P_BOOL, OPT(aa), 0, 0, 0, 0, NULL, "exact-area zone edges, default false"}

static const char *const relief_names[] = {"sag", "cap", NULL};

const tsr_param tsr_asphere_params[] = {
    CENTER, APERTURE("aperture radius, px, > 0"), ROC, CONIC,
    TERMS("[[2i, a_2i], ...]: even powers 2..32, each once"), RELIEF, WRAP, LEVELS, AA,
};
const tsr_param tsr_cylinder_params[] = {
    CENTER, ANGLE, APERTURE("half-width across the axis, px, > 0"), ROC, CONIC,
    TERMS("[[2i, a_2i], ...]: even powers 2..32, each once"), RELIEF, WRAP, LEVELS,
};
const tsr_param tsr_toroid_params[] = {
    CENTER, ANGLE, APERTURE("aperture radius, px, > 0"),
    {"roc", TSR_P_F64_2, OPT(roc2), 0, 0, 0, 0, NULL, "[Rx, Ry], px; 0: flat along that axis"},
    {"conic", TSR_P_F64_2, OPT(conic2), TSR_PF_UNITLESS, 0, 0, 0, NULL, "[kx, ky], default [0, 0]"},
    RELIEF, WRAP, LEVELS,
};
const tsr_param tsr_axicon_params[] = {
    CENTER, APERTURE("aperture radius, px, > 0"),
    {"slope", TSR_P_F64, OPT(slope), TSR_PF_REQUIRED | TSR_PF_UNITLESS, 0, 0, 0, NULL, "height per px of radius"},
    WRAP, LEVELS, AA,
};
const tsr_param tsr_vortex_params[] = {
    CENTER,
    {"charge", TSR_P_INT, OPT(charge), TSR_PF_REQUIRED | TSR_PF_RANGE | TSR_PF_UNITLESS, -1000, 1000, 0, NULL,
     "topological charge m, nonzero, |m| <= 1000"},
    POS("height", height, TSR_PF_REQUIRED, "height of one ramp (2 pi of phase), > 0"), ANGLE,
    {"aperture", TSR_P_F64, OPT(aperture), TSR_PF_RANGE, 0, HUGE_VAL, 0, NULL, "radius, px; leave out for none"},
    LEVELS,
};
const tsr_param tsr_grating_params[] = {
    {"origin", TSR_P_F64_2, OFF(center), 0, 0, 0, 0, NULL, "[x, y] where a ramp starts, default [0, 0]"},
    POS("period", period, TSR_PF_REQUIRED, "px, > 0"), ANGLE,
    POS("height", height, TSR_PF_REQUIRED, "height of one ramp, > 0"), LEVELS,
};
const tsr_param tsr_zernike_params[] = {
    CENTER,
    {"radius", TSR_P_F64, OFF(radius), TSR_PF_REQUIRED | TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, HUGE_VAL, 0, NULL, "disc radius, px, > 0"},
    {"terms", TSR_P_POINTS, OFF(points), TSR_PF_REQUIRED, 0, 0, 1, NULL,
     "[[j, coefficient], ...]: ANSI index j 0..230, each once, at most 16"},
    WRAP, LEVELS,
};

/* The ANSI (OSA) index j's (n, m). */
static void
ansi_nm(int64_t j, int *n, int *m)
{
    int k = 0;
    while ((int64_t)(k + 1) * (k + 2) / 2 <= j)
        k++;
    *n = k;
    *m = (int)(2 * j - (int64_t)k * (k + 2));
}

static double
fact(int n)
{
    double f = 1;
    for (int i = 2; i <= n; i++)
        f *= i;
    return f;
}

/* Whether v is an integer in [lo, hi]. */
static int
int_in(double v, double lo, double hi)
{
    return v >= lo && v <= hi && v == floor(v);
}

tsr_status
tsr_src_surface_check(const tsr_source *s, tsr_check *c)
{
    const tsr_optic *o = &s->optic;
    tsr_source_kind k = s->kind;
    if (o->levels && !(o->wrap > 0) && k != TSR_SRC_VORTEX && k != TSR_SRC_GRATING)
        return tsr_check_failf(c, "levels", "needs 'wrap': the levels divide the wrap height");
    if (o->wrap == 0 && s->optic.aa && (k == TSR_SRC_ASPHERE || k == TSR_SRC_AXICON))
        return tsr_check_failf(c, "aa", "needs 'wrap': it smooths the wrapped zones' edges");
    if (k == TSR_SRC_VORTEX && o->charge == 0)
        return tsr_check_failf(c, "charge", "must not be 0");
    if (k == TSR_SRC_ASPHERE || k == TSR_SRC_CYLINDER) {
        uint32_t seen = 0;
        if (s->points.n > TSR_SURF_TERMS)
            return tsr_check_failf(c, "terms", "at most %d terms", TSR_SURF_TERMS);
        for (size_t i = 0; i < s->points.n; i++) {
            double p = s->points.p[i][0];
            if (!int_in(p, 2, 32) || fmod(p, 2) != 0)
                return tsr_check_failf(c, "terms", "term %zu: power %g is not an even integer 2..32",
                                       i, p);
            uint32_t bit = 1u << ((int)p / 2);
            if (seen & bit)
                return tsr_check_failf(c, "terms", "term %zu: power %g given twice", i, p);
            seen |= bit;
            if (!isfinite(s->points.p[i][1]))
                return tsr_check_failf(c, "terms", "term %zu: coefficient is not finite", i);
        }
        double cv = o->roc != 0 ? 1.0 / o->roc : 0.0;
        if ((1.0 + o->conic) * cv * cv * o->aperture * o->aperture > 1.0)
            return tsr_check_failf(c, "aperture", "reaches beyond the conic: (1 + k) c^2 r^2 > 1 "
                                   "at r = %g", o->aperture);
    }
    if (k == TSR_SRC_TOROID) {
        for (int a = 0; a < 2; a++) {
            double cv = o->roc2[a] != 0 ? 1.0 / o->roc2[a] : 0.0;
            if ((1.0 + o->conic2[a]) * cv * cv * o->aperture * o->aperture > 1.0)
                return tsr_check_failf(c, "aperture", "reaches beyond the conic along %s: "
                                       "(1 + k) c^2 r^2 > 1 at r = %g", a ? "y" : "x", o->aperture);
        }
    }
    if (k == TSR_SRC_ZERNIKE) {
        if (s->points.n > TSR_SURF_TERMS)
            return tsr_check_failf(c, "terms", "at most %d terms", TSR_SURF_TERMS);
        for (size_t i = 0; i < s->points.n; i++) {
            double j = s->points.p[i][0];
            if (!int_in(j, 0, 230))
                return tsr_check_failf(c, "terms", "term %zu: index %g is not an integer 0..230 "
                                       "(ANSI, n <= 20)", i, j);
            for (size_t q = 0; q < i; q++)
                if (s->points.p[q][0] == j)
                    return tsr_check_failf(c, "terms", "term %zu: index %g given twice", i, j);
            if (!isfinite(s->points.p[i][1]))
                return tsr_check_failf(c, "terms", "term %zu: coefficient is not finite", i);
        }
    }
    return TSR_OK;
}

size_t
tsr_src_surface_scratch(const tsr_source *s, int64_t w)
{
    (void)s, (void)w;
    return 0;
}

void
tsr_surf_make(const tsr_source *src, tsr_surf *s)
{
    const tsr_optic *o = &src->optic;
    memset(s, 0, sizeof *s);
    switch (src->kind) {
    case TSR_SRC_CYLINDER: s->kind = TSR_SURF_CYLINDER; break;
    case TSR_SRC_TOROID: s->kind = TSR_SURF_TOROID; break;
    case TSR_SRC_AXICON: s->kind = TSR_SURF_AXICON; break;
    case TSR_SRC_VORTEX: s->kind = TSR_SURF_VORTEX; break;
    case TSR_SRC_GRATING: s->kind = TSR_SURF_GRATING; break;
    case TSR_SRC_ZERNIKE: s->kind = TSR_SURF_ZERNIKE; break;
    default: s->kind = TSR_SURF_ASPHERE; break;
    }
    s->cx = src->center[0];
    s->cy = src->center[1];
    double ap = src->kind == TSR_SRC_ZERNIKE ? src->radius : o->aperture;
    s->ap = ap > 0 && src->kind != TSR_SRC_GRATING ? ap : -1.0;
    s->ap2 = s->ap > 0 ? ap * ap : -1.0;
    double rad = o->angle * (TSR_SF_PI / 180.0);
    /* exact for the right angles, so an axis-aligned grating or cylinder has no stray term */
    double a4 = o->angle / 90.0;
    if (a4 == floor(a4) && fabs(a4) < 1e15) {
        int q = (int)fmod(a4, 4.0);
        q = q < 0 ? q + 4 : q;
        s->ca = q == 0 ? 1.0 : q == 2 ? -1.0 : 0.0;
        s->sa = q == 1 ? 1.0 : q == 3 ? -1.0 : 0.0;
    } else {
        s->ca = cos(rad);
        s->sa = sin(rad);
    }
    s->c = o->roc != 0 ? 1.0 / o->roc : 0.0;
    s->k1 = 1.0 + o->conic;
    s->slope = o->slope;
    s->height = o->height;
    s->charge = (double)o->charge;
    s->inv_period = o->period > 0 ? 1.0 / o->period : 0.0;
    s->wrap = o->wrap;
    s->levels = o->levels;
    s->aa = o->aa;
    if (src->kind == TSR_SRC_VORTEX || src->kind == TSR_SRC_GRATING) {
        s->wrap = 0.0; /* their ramps wrap themselves (tsr_sf_ramp) */
        s->step = o->levels > 0 ? o->height / (double)o->levels : 0.0;
    }
    if (src->kind == TSR_SRC_TOROID) {
        s->c = o->roc2[0] != 0 ? 1.0 / o->roc2[0] : 0.0;
        s->c2 = o->roc2[1] != 0 ? 1.0 / o->roc2[1] : 0.0;
        s->k1 = 1.0 + o->conic2[0];
        s->k2 = 1.0 + o->conic2[1];
    }
    if (src->kind == TSR_SRC_ASPHERE || src->kind == TSR_SRC_CYLINDER) {
        for (size_t i = 0; i < src->points.n && i < TSR_SURF_TERMS; i++) {
            int idx = (int)src->points.p[i][0] / 2 - 1;
            if (idx >= 0 && idx < TSR_SURF_TERMS) {
                s->a[idx] = src->points.p[i][1];
                s->nterms = idx + 1 > s->nterms ? idx + 1 : s->nterms;
            }
        }
    }
    if (src->kind == TSR_SRC_ZERNIKE) {
        s->inv_r = 1.0 / src->radius;
        for (size_t t = 0; t < src->points.n && t < TSR_SURF_TERMS; t++) {
            int n, m;
            ansi_nm((int64_t)src->points.p[t][0], &n, &m);
            int am = m < 0 ? -m : m, K = (n - am) / 2;
            double coef = src->points.p[t][1];
            s->zm[t] = m;
            s->znp[t] = K + 1;
            for (int q = 0; q <= K; q++) /* s = q: power (rho^2)^(K - q), highest first */
                s->zp[t][q] = coef * ((q % 2 ? -1.0 : 1.0) * fact(n - q) /
                                      (fact(q) * fact((n + am) / 2 - q) * fact(K - q)));
            s->nterms = (int)t + 1;
        }
    }
    if (o->relief == 1 && s->ap > 0) {
        s->cap = 0;
        if (s->kind == TSR_SURF_TOROID) {
            /* the higher of the rim heights along the toroid's own axes */
            tsr_surf u = *s;
            u.ca = 1.0, u.sa = 0.0;
            double zx = tsr_sf_height(&u, s->ap, 0.0), zy = tsr_sf_height(&u, 0.0, s->ap);
            s->zrim = zx > zy ? zx : zy;
        } else {
            s->zrim = tsr_sf_radial(s, s->ap2);
        }
        s->cap = 1;
    }
}

void
tsr_src_surface_render(const tsr_source *src, tsr_rect r, float *px)
{
    tsr_surf s;
    tsr_surf_make(src, &s);
    for (int64_t y = 0; y < r.h; y++) {
        float *row = px + y * r.w;
        if (tsr_stop_requested())
            return; /* unfinished: the caller drops it */
        for (int64_t x = 0; x < r.w; x++)
            row[x] = tsr_sf_pixel(&s, r.x + x, r.y + y, row[x]);
    }
}
