/* blur internals, shared by nodes/blur.c and tests/test_blur.c only.
 *
 * Three methods compute a blur layer (docs/format.md §5):
 *
 *   kernel   an explicit kernel, a direct 2D sum in float32, j then i.
 *   fir      sigma <= TSR_BLUR_FIR_SIGMA_MAX: the reference itself, a separable FIR of the
 *            sampled, truncated, normalised Gaussian with float32 weights, x then y.
 *   spline   larger sigma: per axis, the Gaussian is approximated by a sum of shifted discrete
 *            cubic B-splines, a[n] = sum_m c_m B(n + R - m*h), where B = (box of width h)^4.
 *            The B-spline is four box filters, each a running sum over int32 fixed point
 *            (exact: the result cannot depend on where a tile starts), truncated back to
 *            fixed point after each box; the taps c_m are a short float32 FIR at spacing h.
 *            Along y first (the result requantised), then x. Cost per pixel and axis does not
 *            grow with sigma; support R <= r = ceil(4 sigma). Values are clamped to
 *            +-2^14 / h (+-143 at sigma 256, more below) so that every sum fits int32.
 *
 * The spline coefficients are fitted when the edge is prepared (least squares against the
 * reference, sum fixed to 1); h is picked among ~0.35..0.65 sigma for the smallest L1 error. */
#ifndef TSR_NODES_BLUR_INT_H
#define TSR_NODES_BLUR_INT_H

#include "nodes/params.h"

#define TSR_BLUR_FIR_SIGMA_MAX 6.0 /* above this, the spline path is faster */
#define TSR_BLUR_FIR_R_MAX 24      /* ceil(4 * TSR_BLUR_FIR_SIGMA_MAX) */
#define TSR_BLUR_STAGES 4          /* boxes per B-spline: cubic */
#define TSR_BLUR_TAPS_MAX 15       /* spline taps per axis */
#define TSR_BLUR_QBITS 16          /* fixed point: value v is round(v * 2^16) */
#define TSR_BLUR_KERNEL_MAX 63     /* explicit kernel sizes */

typedef enum tsr_blur_method { TSR_BLUR_KERNEL, TSR_BLUR_FIR, TSR_BLUR_SPLINE } tsr_blur_method;

/* What prepare() derives from tsr_blur_params; read-only afterwards. */
typedef struct tsr_blur_state {
    tsr_blur_method method;
    int64_t rx, ry;                 /* halo the method reads on each side of an output pixel */
    int64_t r;                      /* fir, spline: ceil(4 sigma) */
    float w[TSR_BLUR_FIR_R_MAX + 1]; /* fir: normalised weights g(k), k = 0..r (symmetric) */
    int64_t h;                      /* spline: box width, >= 2 */
    int64_t m;                      /* spline: taps, odd or even, <= TSR_BLUR_TAPS_MAX */
    float inv_h;                    /* spline: 1/h, the box normalisation */
    float lim;                      /* spline: fixed-point values are clamped to +-lim so that a
                                     * box sum (h values) stays below 2^30 */
    float c[TSR_BLUR_TAPS_MAX];     /* spline: taps c_m (symmetric, sum ~1) */
    float cq[TSR_BLUR_TAPS_MAX];    /* spline: c_m * 2^-QBITS, the taps of the last pass */
} tsr_blur_state;

/* Fill `st` from the parameters (which check() accepted). Fails with TSR_ENOMEM when the fit's
 * work memory cannot be had. Thread-safe. */
tsr_status
tsr_blur_state_init(tsr_blur_state *st, const tsr_blur_params *p, tsr_error *err);

/* The linear 1D kernel of the spline path in double, a[n + R] for n in -R..R, from the float32
 * taps it really uses (the fixed-point rounding comes on top of it). `a` holds 2*r + 1
 * doubles. Returns R, or -1 when `st` is not a spline state or memory ran out. */
int64_t
tsr_blur_spline_kernel(const tsr_blur_state *st, double *a);

/* An upper bound of the fixed-point rounding error of the spline path, in value units, for
 * child values in [-1, 1]. */
double
tsr_blur_spline_round_bound(const tsr_blur_state *st);

#endif
