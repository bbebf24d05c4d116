/* Dithering arithmetic of docs/outputs.md, once, for every backend: gcc compiles it into
 * nodes/dither.c, nvcc into gpu/dither.cu (TSR_HD is __host__ __device__ there). Integers only,
 * so both give the same bits without any floating-point care.
 *
 * A threshold array of N x N cells (N = 2^k) holds the ranks 0 .. N^2 - 1 once each. Against
 * samples of maximum M (255 or 65535) rank r stands for the threshold
 *     t(r) = floor((2r + 1) M / (2 N^2)),
 * and a sample s becomes, at depth d (L = 2^d - 1 levels above 0),
 *     base = floor(s L / M), frac = s L - base M, level = base + (frac > t(r)).
 * At depth 1 that is just `s > t(r)`. Over any N x N window a flat s gives the mean level
 * base + round(frac N^2 / M) / N^2 (no ties: M is odd), within 1 / (2 N^2) of s L / M. */
#ifndef TSR_NODES_DITHER_MATH_H
#define TSR_NODES_DITHER_MATH_H

#include <stdint.h>

#ifndef TSR_HD /* as nodes/pointwise.h defines it */
#ifdef __CUDACC__
#define TSR_HD __host__ __device__
#else
#define TSR_HD
#endif
#endif

/* The rank of cell (x, y) of the 2^k Bayer matrix, M_1 = [[0, 2], [3, 1]] (rows top down),
 * M_2n = [[4 M_n, 4 M_n + 2], [4 M_n + 3, 4 M_n + 1]]: the top bit of x and y picks the
 * quadrant, which adds 0..3 at the lowest weight, so bit i (0 = lowest) of the coordinates
 * weighs 4^(k - 1 - i). x and y are taken modulo 2^k. */
TSR_HD static inline uint32_t
tsr_dm_bayer_rank(int k, uint32_t x, uint32_t y)
{
    uint32_t r = 0;
    for (int i = 0; i < k; i++) {
        uint32_t xb = (x >> i) & 1u, yb = (y >> i) & 1u;
        r = r * 4u + 2u * (xb ^ yb) + yb;
    }
    return r;
}

/* t(r) for an array of 2^k x 2^k cells and samples of maximum `max` (odd, < 2^16). */
TSR_HD static inline uint32_t
tsr_dm_threshold(uint32_t rank, int k, uint32_t max)
{
    return (uint32_t)(((2u * (uint64_t)rank + 1u) * max) >> (2 * k + 1));
}

/* The level (0 .. levels) of sample s against threshold t. */
TSR_HD static inline uint32_t
tsr_dm_level(uint32_t s, uint32_t max, uint32_t levels, uint32_t t)
{
    uint32_t sl = s * levels; /* < 2^16 * 2^4 */
    uint32_t base = sl / max;
    uint32_t frac = sl - base * max;
    return base + (frac > t ? 1u : 0u);
}

/* Bits of the pixel at x within its byte of a row packed MSB-first at `bits` per pixel
 * (1, 2 or 4): the shift that puts a level there. */
TSR_HD static inline int
tsr_dm_shift(int64_t x, int bits)
{
    int per = 8 / bits;
    return 8 - bits * (1 + (int)(x & (per - 1)));
}

#endif
