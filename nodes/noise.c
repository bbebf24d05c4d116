/* Seeded noise sources (docs/optics.md): value noise and Gaussian white noise, each a pure
 * function of (seed, pixel) through nodes/noise_math.h's counter-based hash, which
 * gpu/noise.cu evaluates too. This file holds the keys and the CPU's loop. */
#include "nodes/nodes.h"
#include "nodes/noise_math.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OPT(f) offsetof(tsr_source, optic.f)
#define SEED {"seed", TSR_P_INT, OPT(seed), 0, 0, 0, 0, NULL, "any integer, default 0"}
#define MEAN {"mean", TSR_P_F64, OPT(mean), 0, 0, 0, 0, NULL, "added to every value, default 0"}

const tsr_param tsr_value_noise_params[] = {
    SEED,
    {"cell", TSR_P_F64, OPT(cell), TSR_PF_REQUIRED | TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, 1e12, 0,
     NULL, "lattice cell, px, > 0"},
    {"octaves", TSR_P_INT, OPT(octaves), TSR_PF_RANGE, 1, 16, 0, NULL,
     "1..16, each half the cell and half the weight of the last; default 1"},
    {"amplitude", TSR_P_F64, OPT(amplitude), TSR_PF_REQUIRED, 0, 0, 0, NULL,
     "value = mean + amplitude * n, n in [0, 1)"},
    MEAN,
};
const tsr_param tsr_gaussian_noise_params[] = {
    SEED,
    {"sigma", TSR_P_F64, OPT(sigma), TSR_PF_REQUIRED | TSR_PF_RANGE, 0, HUGE_VAL, 0, NULL,
     "standard deviation, >= 0"},
    MEAN,
    {"cell", TSR_P_F64, OPT(cell), TSR_PF_RANGE, 1, 1 << 30, 0, NULL,
     "block edge, integer px 1..2^30, one draw per block; default 1"},
};

tsr_status
tsr_src_noise_check(const tsr_source *s, tsr_check *c)
{
    if (s->kind == TSR_SRC_GAUSSIAN_NOISE && s->optic.cell != floor(s->optic.cell))
        return tsr_check_failf(c, "cell", "must be an integer");
    if (s->kind == TSR_SRC_VALUE_NOISE && !isfinite(s->optic.amplitude))
        return tsr_check_failf(c, "amplitude", "must be finite");
    return TSR_OK;
}

size_t
tsr_src_noise_scratch(const tsr_source *s, int64_t w)
{
    (void)s, (void)w;
    return 0;
}

void
tsr_noise_make(const tsr_source *src, tsr_noise *n)
{
    const tsr_optic *o = &src->optic;
    memset(n, 0, sizeof *n);
    n->kind = src->kind == TSR_SRC_VALUE_NOISE ? TSR_NZ_VALUE : TSR_NZ_GAUSSIAN;
    n->seed = (uint64_t)o->seed;
    n->cell = o->cell;
    n->block = o->cell >= 1 ? (int64_t)o->cell : 1;
    n->octaves = o->octaves > 0 ? (int)o->octaves : 1;
    n->scale = n->kind == TSR_NZ_VALUE ? o->amplitude : o->sigma;
    n->mean = o->mean;
}

void
tsr_src_noise_render(const tsr_source *src, tsr_rect r, float *px)
{
    tsr_noise n;
    tsr_noise_make(src, &n);
    for (int64_t y = 0; y < r.h; y++) {
        float *row = px + y * r.w;
        if (tsr_stop_requested())
            return; /* unfinished: the caller drops it */
        for (int64_t x = 0; x < r.w; x++)
            row[x] = tsr_nz_pixel(&n, r.x + x, r.y + y);
    }
}
