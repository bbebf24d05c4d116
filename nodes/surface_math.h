/* Optical surfaces, pixel by pixel (docs/optics.md): the arithmetic shared by nodes/surface.c
 * and gpu/surface.cu. Like nodes/pointwise.h it is plain C on doubles, compiled by gcc with
 * -ffp-contract=off and by nvcc with --fmad=false, so both give the same bits: no libm but sqrt,
 * floor and frexp (exact on both); the arc tangent and the circular segment are written here
 * from + - * / and sqrt, because libm's atan2 and asin are not the same function on the host
 * and on the device (neither is correctly rounded). */
#ifndef TSR_NODES_SURFACE_MATH_H
#define TSR_NODES_SURFACE_MATH_H

#include "nodes/pointwise.h"

#include <stdint.h>

#define TSR_SURF_TERMS 16   /* asphere terms a_2 .. a_32; zernike terms */
#define TSR_SURF_ZPOLY 11   /* zernike radial polynomial: n <= 20, (n - |m|)/2 + 1 coefficients */
#define TSR_SURF_ZONES 64   /* most zone edges one pixel's exact-area mix takes (docs/optics.md) */

enum { TSR_SURF_ASPHERE, TSR_SURF_CYLINDER, TSR_SURF_TOROID, TSR_SURF_AXICON, TSR_SURF_VORTEX,
       TSR_SURF_GRATING, TSR_SURF_ZERNIKE };

/* A surface ready to evaluate (tsr_surf_make, nodes/surface.c): constants computed once on the
 * host (the angle's cosine and sine by libm there, then the same doubles on both backends). */
typedef struct tsr_surf {
    int kind;             /* TSR_SURF_* */
    double cx, cy;        /* centre (grating: origin) */
    double ap2;           /* aperture^2 (cylinder: half-width^2); < 0: none */
    double ap;            /* aperture radius, or -1 */
    double c, k1;         /* curvature 1/R and 1 + k (toroid: along x) */
    double c2, k2;        /* toroid: along y */
    double ca, sa;        /* cos, sin of the angle */
    double slope;         /* axicon */
    double height;        /* vortex, grating */
    double inv_period;    /* grating: 1 / period */
    double step;          /* vortex, grating with levels: height / N */
    double charge;        /* vortex */
    int cap;              /* relief cap: zrim - z */
    double zrim;          /* z at the aperture (cap) */
    double wrap;          /* H, 0: none */
    int64_t levels;       /* N, 0: none */
    int aa;               /* exact-area zone edges */
    int nterms;           /* asphere: a[0..nterms) are a_2, a_4, ...; zernike: terms */
    double a[TSR_SURF_TERMS];
    int zm[TSR_SURF_TERMS];      /* zernike: m (negative: sine) */
    int znp[TSR_SURF_TERMS];     /* zernike: coefficients of P (Z = P(rho^2) Re/Im (X+iY)^|m|) */
    double zp[TSR_SURF_TERMS][TSR_SURF_ZPOLY]; /* highest power first, times the coefficient */
    double inv_r;                /* zernike: 1 / disc radius */
} tsr_surf;

#ifdef __cplusplus
extern "C" {
#endif
struct tsr_source;
/* Fill s from a checked surface source (nodes/surface.c). Thread-safe; cannot fail. */
void
tsr_surf_make(const struct tsr_source *src, tsr_surf *s);
#ifdef __cplusplus
}
#endif

#define TSR_SF_PI 3.141592653589793
#define TSR_SF_PI_2 1.5707963267948966
#define TSR_SF_2PI 6.283185307179586
#define TSR_SF_INV_2PI 0.15915494309189535 /* 1 / (2 pi), rounded */

/* atan(a) for 0 <= a <= 1, after fdlibm's s_atan.c (Sun Microsystems, 1993: "Permission to
 * use, copy, modify, and distribute this software is freely granted, provided that this notice
 * is preserved"): a reduced to |t| < 7/16 around atan(1/2) or atan(1), whose values come in
 * two parts, then an odd polynomial of degree 23 split into two Horner chains. One division, no
 * root: the vortex's cost is this function. */
TSR_HD static inline double
tsr_sf_atan01(double a)
{
    const double hi0 = 4.63647609000806093515e-01, lo0 = 2.26987774529616870924e-17;
    const double hi1 = 7.85398163397448278999e-01, lo1 = 3.06161699786838301793e-17;
    int id = -1;
    double x = a;
    if (a >= 0.4375) {
        if (a < 0.6875) {
            id = 0;
            x = (2.0 * a - 1.0) / (2.0 + a);
        } else {
            id = 1;
            x = (a - 1.0) / (a + 1.0);
        }
    }
    double z = x * x, w = z * z;
    double s1 = z * (3.33333333333329318027e-01 +
                     w * (1.42857142725034663711e-01 +
                          w * (9.09088713343650656196e-02 +
                               w * (6.66107313738753120669e-02 +
                                    w * (4.97687799461593236017e-02 +
                                         w * 1.62858201153657823623e-02)))));
    double s2 = w * (-1.99999999998764832476e-01 +
                     w * (-1.11111104054623557880e-01 +
                          w * (-7.69187620504482999495e-02 +
                               w * (-5.83357013379057348645e-02 +
                                    w * -3.65315727442169155270e-02))));
    if (id < 0)
        return x - x * (s1 + s2);
    return id == 0 ? hi0 - ((x * (s1 + s2) - lo0) - x) : hi1 - ((x * (s1 + s2) - lo1) - x);
}

/* atan2(y, x) in (-pi, pi]; 0 for (0, 0). */
TSR_HD static inline double
tsr_sf_atan2(double y, double x)
{
    double ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
    if (ax == 0.0 && ay == 0.0)
        return 0.0;
    double t = ay <= ax ? tsr_sf_atan01(ay / ax) : TSR_SF_PI_2 - tsr_sf_atan01(ax / ay);
    if (x < 0)
        t = TSR_SF_PI - t;
    return y < 0 ? -t : t;
}

/* g(h) = asin(h) - h sqrt(1 - h^2), 0 <= h <= 1: a circular segment of chord 2 h rho has area
 * rho^2 g(h). For small h the difference cancels, so there its series, 2 sum c_n h^(2n+3) /
 * (2n+3), c_n = binom(2n, n) / 4^n (the integral of 2 t^2 / sqrt(1 - t^2)), summed until a
 * term no longer counts. */
TSR_HD static inline double
tsr_sf_segment(double h)
{
    if (h > 0.5) {
        double q = sqrt((1.0 - h) * (1.0 + h));
        return tsr_sf_atan2(h, q) - h * q;
    }
    double h2 = h * h, p = h2 * h, c = 1.0, s = 0.0;
    for (int n = 0; n < 40; n++) {
        double t = c * p / (double)(2 * n + 3);
        s += t;
        if (t <= s * 1e-17)
            break;
        c = c * (double)(2 * n + 1) / (double)(2 * n + 2);
        p *= h2;
    }
    return 2.0 * s;
}

/* sqrt(rho^2 - u^2), without the cancellation near |u| = rho; 0 beyond. */
TSR_HD static inline double
tsr_sf_half_chord(double rho, double u)
{
    double au = u < 0 ? -u : u;
    return au < rho ? sqrt((rho - au) * (rho + au)) : 0.0;
}

/* The integral of sqrt(rho^2 - x^2) over [u, v], -rho <= u <= v <= rho: the trapezoid under
 * the chord plus the segment between chord and arc (exact geometry, no big terms cancelling). */
TSR_HD static inline double
tsr_sf_arc_integral(double rho, double u, double v)
{
    double su = tsr_sf_half_chord(rho, u), sv = tsr_sf_half_chord(rho, v);
    double dx = v - u, dy = sv - su;
    double h = sqrt(dx * dx + dy * dy) / (2.0 * rho);
    h = h > 1.0 ? 1.0 : h;
    return dx * (su + sv) / 2.0 + rho * rho * tsr_sf_segment(h);
}

/* The exact area of the unit pixel [x0, x0 + 1] x [y0, y0 + 1] (relative to the disc's centre)
 * inside the disc of radius rho: the integral over x of the overlap of [y0, y0 + 1] with
 * [-s(x), s(x)], cut where the overlap's formula changes. */
TSR_HD static inline double
tsr_sf_disc_area(double x0, double y0, double rho)
{
    if (!(rho > 0))
        return 0.0;
    double x1 = x0 + 1.0, y1 = y0 + 1.0;
    double xa = x0 > -rho ? x0 : -rho, xb = x1 < rho ? x1 : rho;
    if (!(xa < xb))
        return 0.0;
    double cut[6];
    int n = 0;
    cut[n++] = xa;
    double ys[2] = {y0, y1};
    for (int k = 0; k < 2; k++) {
        double xs = tsr_sf_half_chord(rho, ys[k]);
        if (xs > 0) {
            if (-xs > xa && -xs < xb)
                cut[n++] = -xs;
            if (xs > xa && xs < xb)
                cut[n++] = xs;
        }
    }
    cut[n++] = xb;
    for (int i = 1; i < n; i++) /* insertion sort: at most six */
        for (int j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
            double t = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = t;
        }
    double area = 0.0;
    for (int i = 0; i + 1 < n; i++) {
        double u = cut[i], v = cut[i + 1];
        if (!(u < v))
            continue;
        double sm = tsr_sf_half_chord(rho, (u + v) / 2.0);
        /* which bound holds is constant on a piece; past +-rho (tangency included) the arc
         * holds everywhere, which the midpoint alone would miss when it is the tangent point */
        int top_arc = y1 >= rho || sm < y1, bot_arc = y0 <= -rho || -sm > y0;
        double top = top_arc ? sm : y1, bot = bot_arc ? -sm : y0;
        if (!(top > bot))
            continue; /* the strip misses the disc on this piece */
        double I = (top_arc || bot_arc) ? tsr_sf_arc_integral(rho, u, v) : 0.0;
        area += (top_arc ? I : y1 * (v - u)) - (bot_arc ? -I : y0 * (v - u));
    }
    return area < 0 ? 0 : (area > 1 ? 1 : area);
}

/* ---- surfaces ------------------------------------------------------------------------------ */

/* The conic sag c r^2 / (1 + sqrt(1 - (1 + k) c^2 r^2)) for r2 = r^2; the root's argument
 * below 0 (beyond the conic's reach, which the loader keeps outside the aperture) reads 0. */
TSR_HD static inline double
tsr_sf_conic(double c, double k1, double r2)
{
    double t = 1.0 - k1 * c * c * r2;
    return c * r2 / (1.0 + (t > 0 ? sqrt(t) : 0.0));
}

/* Even polynomial a_2 r^2 + a_4 r^4 + ..., by Horner's rule in r2 from the highest power. */
TSR_HD static inline double
tsr_sf_even_poly(const double *a, int n, double r2)
{
    double s = 0.0;
    for (int i = n - 1; i >= 0; i--)
        s = a[i] + r2 * s;
    return r2 * s;
}

/* Radial sag at r2 = r^2 (asphere, cylinder with r2 = u^2; axicon): relief applied. */
TSR_HD static inline double
tsr_sf_radial(const tsr_surf *s, double r2)
{
    double z = s->kind == TSR_SURF_AXICON ? s->slope * sqrt(r2)
                                          : tsr_sf_conic(s->c, s->k1, r2) +
                                                tsr_sf_even_poly(s->a, s->nterms, r2);
    return s->cap ? s->zrim - z : z;
}

/* Zernike sum at (X, Y) = (dx, dy) / R: each term P(rho^2) Re((X + iY)^m) (m >= 0) or
 * P(rho^2) Im((X + iY)^|m|) (m < 0), P holding the radial polynomial's coefficients times the
 * term's coefficient, so R_n^|m|(rho) cos(m theta) needs neither a root nor an angle. */
TSR_HD static inline double
tsr_sf_zernike(const tsr_surf *s, double X, double Y)
{
    double r2 = X * X + Y * Y, z = 0.0;
    for (int t = 0; t < s->nterms; t++) {
        int m = s->zm[t] < 0 ? -s->zm[t] : s->zm[t];
        double re = 1.0, im = 0.0;
        for (int i = 0; i < m; i++) {
            double nr = re * X - im * Y;
            im = re * Y + im * X;
            re = nr;
        }
        double p = 0.0;
        for (int i = 0; i < s->znp[t]; i++)
            p = p * r2 + s->zp[t][i];
        z += p * (s->zm[t] < 0 ? im : re);
    }
    return z;
}

/* The unwrapped height at offset (dx, dy) from the centre (grating: from the origin), for a
 * pixel inside the aperture. Vortex and grating give their ramp t in turns (periods), which
 * tsr_sf_ramp wraps and scales by their height. */
TSR_HD static inline double
tsr_sf_height(const tsr_surf *s, double dx, double dy)
{
    switch (s->kind) {
    case TSR_SURF_CYLINDER: {
        double u = dy * s->ca - dx * s->sa; /* distance from the axis through the centre */
        return tsr_sf_radial(s, u * u);
    }
    case TSR_SURF_TOROID: {
        double x = dx * s->ca + dy * s->sa, y = dy * s->ca - dx * s->sa;
        double cx2 = s->c * x * x, cy2 = s->c2 * y * y;
        double t = 1.0 - s->k1 * s->c * cx2 - s->k2 * s->c2 * cy2;
        double z = (cx2 + cy2) / (1.0 + (t > 0 ? sqrt(t) : 0.0));
        return s->cap ? s->zrim - z : z;
    }
    case TSR_SURF_VORTEX: {
        double x = dx * s->ca + dy * s->sa, y = dy * s->ca - dx * s->sa;
        double u = tsr_sf_atan2(y, x) * TSR_SF_INV_2PI;
        if (u < 0)
            u += 1.0;
        return s->charge * u;
    }
    case TSR_SURF_GRATING: return (dx * s->ca + dy * s->sa) * s->inv_period;
    case TSR_SURF_ZERNIKE: return tsr_sf_zernike(s, dx * s->inv_r, dy * s->inv_r);
    default: return tsr_sf_radial(s, dx * dx + dy * dy);
    }
}

/* Wrapping modulo H and quantising to N levels of H / N: z - floor(z / H) H, then
 * H * min(floor(w / H * N), N - 1) / N. `key` gets the zone (which wrap and which level): two
 * points with the same key lie on one smooth piece of the profile. */
TSR_HD static inline double
tsr_sf_wrap(const tsr_surf *s, double z, int64_t *key)
{
    double H = s->wrap;
    if (!(H > 0)) {
        *key = 0;
        return z;
    }
    double j = floor(z / H);
    double w = z - j * H;
    int64_t kj = (int64_t)j;
    if (s->levels > 0) {
        double N = (double)s->levels;
        double q = floor(w / H * N);
        q = q < 0 ? 0 : (q > N - 1 ? N - 1 : q);
        *key = kj * s->levels + (int64_t)q;
        return H * q / N;
    }
    *key = kj;
    return w;
}

/* A vortex's or grating's value from its ramp t (in turns): w = t - floor(t), then height w, or
 * with levels (height / N) min(floor(w N), N - 1). No division per pixel: this is most of a
 * spiral phase plate's cost after the arc tangent. */
TSR_HD static inline double
tsr_sf_ramp(const tsr_surf *s, double t)
{
    double w = t - floor(t);
    if (s->levels > 0) {
        double N = (double)s->levels, q = floor(w * N);
        q = q < 0 ? 0 : (q > N - 1 ? N - 1 : q);
        return s->step * q;
    }
    return s->height * w;
}

/* The level of zone key k (k = j N + q, 0 <= q < N): q = k mod N, floored. */
TSR_HD static inline int64_t
tsr_sf_level(int64_t k, int64_t n)
{
    int64_t q = k % n;
    return q < 0 ? q + n : q;
}

/* The zone key at radius r of a radial surface (its wrapped height's piece). */
TSR_HD static inline int64_t
tsr_sf_key_at(const tsr_surf *s, double r)
{
    int64_t k;
    tsr_sf_wrap(s, tsr_sf_radial(s, r * r), &k);
    return k;
}

/* The exact-area mix of a pixel whose radial span [rlo, rhi] (nearest and farthest point from
 * the centre, clipped to the aperture) crosses zone edges: the span is cut at each edge (found
 * by bisection on the key to 2^-40 of the span), each annulus' share of the pixel is the
 * difference of two exact disc areas, and each takes its piece's value at the pixel centre:
 * z(p) - j H (wrap), or its level (levels). (x0, y0): the pixel's corner relative to the
 * centre; zc the height at its centre. */
TSR_HD static inline double
tsr_sf_zone_mix(const tsr_surf *s, double x0, double y0, double rlo, double rhi, double zc)
{
    int64_t klo = tsr_sf_key_at(s, rlo), khi = tsr_sf_key_at(s, rhi);
    if (klo == khi) {
        int64_t k;
        return tsr_sf_wrap(s, zc, &k);
    }
    double H = s->wrap, N = (double)s->levels, v = 0.0, a_prev = 0.0, r = rlo;
    int64_t k = klo;
    for (int e = 0; e < TSR_SURF_ZONES && k != khi; e++) {
        double a = r, b = rhi;
        for (int i = 0; i < 40; i++) {
            double m = (a + b) / 2.0;
            if (tsr_sf_key_at(s, m) == k)
                a = m;
            else
                b = m;
        }
        double rho = (a + b) / 2.0;
        double area = tsr_sf_disc_area(x0, y0, rho);
        double f = area - a_prev;
        a_prev = area;
        /* the piece's value at the centre: its level, or z(p) - j H with j = floor(key) */
        double g = s->levels > 0 ? H * (double)tsr_sf_level(k, s->levels) / N : zc - (double)k * H;
        v += f * g;
        r = b;
        k = tsr_sf_key_at(s, b);
    }
    double g = s->levels > 0 ? H * (double)tsr_sf_level(k, s->levels) / N : zc - (double)k * H;
    return v + (1.0 - a_prev) * g;
}

/* The value of pixel (x, y) over P (the fill under it): P outside the aperture, else the
 * wrapped, quantised height, mixed by exact area at zone edges with aa (radial surfaces). */
TSR_HD static inline float
tsr_sf_pixel(const tsr_surf *s, int64_t x, int64_t y, float P)
{
    double dx = (double)x + 0.5 - s->cx, dy = (double)y + 0.5 - s->cy;
    if (s->ap2 >= 0) {
        double d2;
        if (s->kind == TSR_SURF_CYLINDER) {
            double u = dy * s->ca - dx * s->sa;
            d2 = u * u;
        } else {
            d2 = dx * dx + dy * dy;
        }
        if (!(d2 <= s->ap2))
            return P;
    }
    double z = tsr_sf_height(s, dx, dy);
    if (s->aa) {
        /* nearest and farthest points of the pixel from the centre */
        double x0 = (double)x - s->cx, y0 = (double)y - s->cy, x1 = x0 + 1.0, y1 = y0 + 1.0;
        double nx = x0 > 0 ? x0 : (x1 < 0 ? x1 : 0.0), ny = y0 > 0 ? y0 : (y1 < 0 ? y1 : 0.0);
        double fx = -x0 > x1 ? -x0 : x1, fy = -y0 > y1 ? -y0 : y1;
        double rlo = sqrt(nx * nx + ny * ny), rhi = sqrt(fx * fx + fy * fy);
        rhi = rhi < s->ap ? rhi : s->ap;
        if (rlo < rhi)
            return (float)tsr_sf_zone_mix(s, x0, y0, rlo, rhi, z);
    }
    if (s->kind == TSR_SURF_VORTEX || s->kind == TSR_SURF_GRATING)
        return (float)tsr_sf_ramp(s, z);
    int64_t k;
    return (float)tsr_sf_wrap(s, z, &k);
}

#endif
