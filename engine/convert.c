/* Output conversion, DESIGN.md §2.4: value -> range -> clamp -> calibration -> sample, in
 * double, exactly as written (a subtraction and a division, not a multiply by a reciprocal),
 * so every backend produces the same samples. */
#include "engine/engine.h"

#include <math.h>

static inline double
to_unit(const tsr_output *o, double v)
{
    double t = (v - o->range[0]) / (o->range[1] - o->range[0]);
    t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0; /* NaN (inf - inf upstream) becomes 0 */
    const tsr_points *c = &o->calibration;
    if (c->n >= 2) {
        if (t == 1.0)
            return c->p[c->n - 1][1];
        /* segments are few (a handful of points): a linear scan is cheaper than a search */
        size_t i = 0;
        while (i + 2 < c->n && !(t < c->p[i + 1][0]))
            i++;
        double t0 = c->p[i][0], t1 = c->p[i + 1][0], c0 = c->p[i][1], c1 = c->p[i + 1][1];
        t = c0 + (c1 - c0) * ((t - t0) / (t1 - t0));
    }
    return t;
}

uint32_t
tsr_convert_one(const tsr_output *o, double v)
{
    double max = o->depth == 16 ? 65535.0 : 255.0;
    return (uint32_t)floor(to_unit(o, v) * max + 0.5);
}

void
tsr_convert(const tsr_output *o, const float *v, size_t n, uint8_t *out)
{
    double lo = o->range[0], span = o->range[1] - o->range[0];
    if (o->calibration.n == 0 && o->depth == 8) {
        /* the common case, kept branch-light so it vectorises */
        for (size_t i = 0; i < n; i++) {
            double t = ((double)v[i] - lo) / span;
            t = t > 0.0 ? (t < 1.0 ? t : 1.0) : 0.0;
            out[i] = (uint8_t)floor(t * 255.0 + 0.5);
        }
        return;
    }
    if (o->depth == 8) {
        for (size_t i = 0; i < n; i++)
            out[i] = (uint8_t)tsr_convert_one(o, v[i]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t s = tsr_convert_one(o, v[i]);
        out[2 * i] = (uint8_t)(s & 0xff);
        out[2 * i + 1] = (uint8_t)(s >> 8);
    }
}
