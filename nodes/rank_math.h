/* rank's per-pixel arithmetic, shared by the CPU reference (nodes/rank.c) and the GPU kernel
 * (gpu/rank.cu) through TSR_HD, so both order values the same way.
 *
 * Values are compared as keys: the float's bits mapped to a uint32 whose unsigned order is the
 * float's total order (-0 below +0, NaNs at the ends by sign). The minimum, maximum and median
 * of keys are unique values, whatever algorithm picks them: the CPU's van Herk passes and
 * quickselect and the GPU's scans and radix select give the same bits. For values that are
 * not NaN and not a signed zero this is the ordinary order (what scipy.ndimage uses). */
#ifndef TSR_NODES_RANK_MATH_H
#define TSR_NODES_RANK_MATH_H

#include "nodes/pointwise.h"

#include <stdint.h>
#include <string.h>

#define TSR_RANK_RADIUS_MAX 64

TSR_HD static inline uint32_t
tsr_rank_key(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

TSR_HD static inline float
tsr_rank_unkey(uint32_t k)
{
    uint32_t b = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Half-width of the footprint's row dy (|dy| <= r): r for the square; for the disc the largest
 * w with w^2 + dy^2 <= r^2 (integers, so the disc is exactly the pixels whose centres lie
 * within r of the centre pixel's, as a `footprint` array in scipy.ndimage would hold). */
TSR_HD static inline int64_t
tsr_rank_half(int64_t r, int disc, int64_t dy)
{
    if (!disc)
        return r;
    int64_t q = r * r - dy * dy, w = 0;
    while ((w + 1) * (w + 1) <= q)
        w++;
    return w;
}

/* Pixels in the footprint: (2r + 1)^2, or the disc's count (odd: symmetric about its centre),
 * so the median is its middle value, rank n / 2 from 0. */
TSR_HD static inline int64_t
tsr_rank_count(int64_t r, int disc)
{
    int64_t n = 0;
    for (int64_t dy = -r; dy <= r; dy++)
        n += 2 * tsr_rank_half(r, disc, dy) + 1;
    return n;
}

#endif
