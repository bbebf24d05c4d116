/* Seeded noise sources (docs/optics.md): value noise and Gaussian white noise, each a pure
 * function of (seed, pixel) through nodes/noise_math.h's counter-based hash, which
 * gpu/noise.cu evaluates too. This file holds the keys and the CPU's loop. */
#include "nodes/nodes.h"
#include "nodes/noise_math.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OPT(f) offsetof(tsr_source, optic.f)
#define SEED {"seed", TSR_P_INT, OPT(seed), TSR_PF_UNITLESS, 0, 0, 0, NULL, "any integer, default 0"}
#define MEAN {"mean", TSR_P_F64, OPT(mean), TSR_PF_UNITLESS, 0, 0, 0, NULL, "added to every value, default 0"}

const tsr_param tsr_value_noise_params[] = {
    SEED,
    {"cell", TSR_P_F64, OPT(cell), TSR_PF_REQUIRED | TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, 1e12, 0,
     NULL, "lattice cell, px, > 0"},
    {"octaves", TSR_P_INT, OPT(octaves), TSR_PF_RANGE | TSR_PF_UNITLESS, 1, 16, 0, NULL,
     "1..16, each half the cell and half the weight of the last; default 1"},
    {"amplitude", TSR_P_F64, OPT(amplitude), TSR_PF_REQUIRED | TSR_PF_UNITLESS, 0, 0, 0, NULL,
     "value = mean + amplitude * n, n in [0, 1)"},
    MEAN,
};
const tsr_param tsr_gaussian_noise_params[] = {
    SEED,
    {"sigma", TSR_P_F64, OPT(sigma), TSR_PF_REQUIRED | TSR_PF_RANGE | TSR_PF_UNITLESS, 0, HUGE_VAL, 0, NULL,
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


void
tsr_noise_make(const tsr_source *src, tsr_noise *n)
{
    const tsr_optic *o = &src->optic;
    memset(n, 0, sizeof *n);
    n->kind = src->kind == TSR_SRC_VALUE_NOISE ? TSR_NZ_VALUE : TSR_NZ_GAUSSIAN;
    n->seed = (uint64_t)o->seed;
    n->cell = o->cell;
    n->inv_cell = o->cell > 0 ? 1.0 / o->cell : 0.0;
    n->block = o->cell >= 1 ? (int64_t)o->cell : 1;
    n->octaves = o->octaves > 0 ? (int)o->octaves : 1;
    n->scale = n->kind == TSR_NZ_VALUE ? o->amplitude : o->sigma;
    n->mean = o->mean;
}

/* Value noise over one row, pixels [x0, x0 + w): the same operations per pixel as
 * tsr_nz_value (so the same bits), but octave by octave over the row, so the four corner
 * hashes are made once per lattice cell instead of once per pixel (a 40 px cell: 40 times
 * fewer), and the row's own terms once per row. The fallback of value_rect. */
static void
value_row(const tsr_noise *n, int64_t x0, int64_t w, int64_t y, float *out)
{
    enum { CHUNK = 256 };
    double sum[CHUNK];
    for (int64_t c = 0; c < w; c += CHUNK) {
        int64_t m = w - c < CHUNK ? w - c : CHUNK;
        for (int64_t k = 0; k < m; k++)
            sum[k] = 0.0;
        double inv = n->inv_cell, wt = 1.0, wsum = 0.0, py = (double)y + 0.5;
        for (int o = 0; o < n->octaves; o++) {
            uint64_t seed = n->seed + (uint64_t)o * TSR_NZ_GAMMA;
            double fy = py * inv, iy = floor(fy), uy = tsr_nz_fade(fy - iy);
            int64_t j = (int64_t)iy, ci = 0;
            double v00 = 0, v10 = 0, v01 = 0, v11 = 0;
            for (int64_t k = 0; k < m; k++) {
                double fx = ((double)(x0 + c + k) + 0.5) * inv, ix = floor(fx);
                int64_t i = (int64_t)ix;
                if (k == 0 || i != ci) {
                    if (k > 0 && i == ci + 1) {
                        v00 = v10, v01 = v11;
                    } else {
                        v00 = tsr_nz_unit(tsr_nz_hash(seed, i, j));
                        v01 = tsr_nz_unit(tsr_nz_hash(seed, i, j + 1));
                    }
                    v10 = tsr_nz_unit(tsr_nz_hash(seed, i + 1, j));
                    v11 = tsr_nz_unit(tsr_nz_hash(seed, i + 1, j + 1));
                    ci = i;
                }
                double ux = tsr_nz_fade(fx - ix);
                double a = v00 + ux * (v10 - v00), b = v01 + ux * (v11 - v01);
                sum[k] += wt * (a + uy * (b - a));
            }
            wsum += wt;
            wt *= 0.5;
            inv *= 2.0;
        }
        for (int64_t k = 0; k < m; k++)
            out[c + k] = (float)(n->mean + n->scale * (sum[k] / wsum));
    }
}

/* Value noise over a rect, VCHUNK columns at a time. A column's lattice cell and fade depend
 * on x and the octave only, so they are made once per rect, not once per row; a row's corner
 * values once per lattice row j (a 40 px cell: 40 rows share them), as two arrays along the
 * cells; the per-pixel loop is then the blend alone, without floor, fade or a branch. The
 * expressions are tsr_nz_value's, operand for operand: the same bits (tests/test_optics.c).
 * Returns false where the tables do not fit (a cell under a pixel at some octave, or no
 * memory): the caller draws by value_row. */
enum { VCHUNK = 256 };
typedef struct {
    double ux[VCHUNK]; /* the column's fade */
    int32_t cx[VCHUNK]; /* its cell, from the chunk's first */
    int64_t i0;         /* the chunk's first cell */
    int64_t j;          /* the lattice row v0, v1 hold (valid: have) */
    bool have;
    double v0[VCHUNK + 2], v1[VCHUNK + 2]; /* corners at (i0 + c, j) and (i0 + c, j + 1) */
} value_octave;

static bool
value_rect(const tsr_noise *n, tsr_rect r, float *px)
{
    value_octave *oct = malloc((size_t)n->octaves * sizeof *oct);
    double *sum = malloc(VCHUNK * sizeof *sum);
    bool fits = oct && sum;
    for (int64_t c = 0; fits && c < r.w; c += VCHUNK) {
        int64_t m = r.w - c < VCHUNK ? r.w - c : VCHUNK;
        double inv = n->inv_cell;
        for (int o = 0; o < n->octaves && fits; o++, inv *= 2.0) {
            value_octave *v = &oct[o];
            v->have = false;
            for (int64_t k = 0; k < m; k++) {
                double fx = ((double)(r.x + c + k) + 0.5) * inv, ix = floor(fx);
                int64_t i = (int64_t)ix;
                if (k == 0)
                    v->i0 = i;
                if (i - v->i0 > VCHUNK) { /* cells under a pixel: more cells than columns */
                    fits = false;
                    break;
                }
                v->cx[k] = (int32_t)(i - v->i0);
                v->ux[k] = tsr_nz_fade(fx - ix);
            }
        }
        for (int64_t y = 0; fits && y < r.h; y++) {
            if (tsr_stop_requested())
                break; /* unfinished: the caller drops it */
            for (int64_t k = 0; k < m; k++)
                sum[k] = 0.0;
            double inv2 = n->inv_cell, wt = 1.0, wsum = 0.0, py = (double)(r.y + y) + 0.5;
            for (int o = 0; o < n->octaves; o++) {
                value_octave *v = &oct[o];
                uint64_t seed = n->seed + (uint64_t)o * TSR_NZ_GAMMA;
                double fy = py * inv2, iy = floor(fy), uy = tsr_nz_fade(fy - iy);
                int64_t j = (int64_t)iy;
                if (!v->have || v->j != j) {
                    int32_t last = v->cx[m - 1] + 1;
                    for (int32_t q = 0; q <= last; q++) {
                        v->v0[q] = tsr_nz_unit(tsr_nz_hash(seed, v->i0 + q, j));
                        v->v1[q] = tsr_nz_unit(tsr_nz_hash(seed, v->i0 + q, j + 1));
                    }
                    v->j = j;
                    v->have = true;
                }
                const double *v0 = v->v0, *v1 = v->v1, *ux = v->ux;
                const int32_t *cx = v->cx;
                for (int64_t k = 0; k < m; k++) {
                    int32_t q = cx[k];
                    double a = v0[q] + ux[k] * (v0[q + 1] - v0[q]);
                    double b = v1[q] + ux[k] * (v1[q + 1] - v1[q]);
                    sum[k] += wt * (a + uy * (b - a));
                }
                wsum += wt;
                wt *= 0.5;
                inv2 *= 2.0;
            }
            float *out = px + y * r.w + c;
            for (int64_t k = 0; k < m; k++)
                out[k] = (float)(n->mean + n->scale * (sum[k] / wsum));
        }
    }
    free(oct);
    free(sum);
    return fits;
}

/* Gaussian blocks of one row: one draw per block, reused along the row (the same bits as
 * tsr_nz_pixel), the block boundaries stepped instead of divided per pixel. */
static void
gaussian_row(const tsr_noise *n, int64_t x0, int64_t w, int64_t y, float *row)
{
    int64_t i = tsr_nz_floor_div(x0, n->block);
    int64_t next = (i + 1) * n->block; /* the first x of block i + 1 */
    float v = tsr_nz_pixel(n, x0, y);
    for (int64_t x = 0; x < w; x++) {
        if (x0 + x == next) {
            v = tsr_nz_pixel(n, x0 + x, y);
            next += n->block;
        }
        row[x] = v;
    }
}

size_t
tsr_src_noise_scratch(const tsr_source *s, int64_t w)
{
    (void)w;
    if (s->kind != TSR_SRC_VALUE_NOISE) /* value_rect's tables; the Gaussian draws in place */
        return 0;
    int64_t o = s->optic.octaves > 0 ? s->optic.octaves : 1;
    return (size_t)o * sizeof(value_octave) + VCHUNK * sizeof(double);
}

void
tsr_src_noise_render(const tsr_source *src, tsr_rect r, float *px)
{
    tsr_noise n;
    tsr_noise_make(src, &n);
    if (n.kind == TSR_NZ_VALUE && value_rect(&n, r, px))
        return;
    for (int64_t y = 0; y < r.h; y++) {
        float *row = px + y * r.w;
        if (tsr_stop_requested())
            return; /* unfinished: the caller drops it */
        if (n.kind == TSR_NZ_VALUE) {
            value_row(&n, r.x, r.w, r.y + y, row);
            continue;
        }
        if (n.block > 1) {
            /* rows of one block row draw the same values: the last row's, copied */
            if (y > 0 && tsr_nz_floor_div(r.y + y, n.block) ==
                             tsr_nz_floor_div(r.y + y - 1, n.block)) {
                memcpy(row, row - r.w, (size_t)r.w * sizeof *row);
                continue;
            }
            gaussian_row(&n, r.x, r.w, r.y + y, row);
            continue;
        }
        for (int64_t x = 0; x < r.w; x++)
            row[x] = tsr_nz_pixel(&n, r.x + x, r.y + y);
    }
}
