/* nodes: outputs of fewer bits than a sample, tile-safe (docs/outputs.md): a pixel's bits
 * depend only on its 8/16-bit sample and its coordinates modulo a threshold array, so any
 * split of the image into tiles, bands, swaths or row pieces gives the same bits.
 *
 * - dithering to depth 1, 2 or 4 against a threshold array: plain threshold (1 x 1), ordered
 *   Bayer (2^k, k = 1..8), blue noise (void-and-cluster, 16 .. 128, made at first use from a
 *   fixed seed in integer arithmetic: the same array on every machine);
 * - bit planes: a row of 8/16-bit samples as 1-bit rows, one per bit, and where each plane's
 *   rows go in a stream laid out per band, per swath or per whole plane.
 *
 * Rows of bits are packed MSB-first (pixel x at bit 7 - x mod 8 of byte x / 8 for depth 1; at
 * depth 2/4 the first pixel holds the high bits), rows padded to whole bytes with zero bits.
 * The arithmetic is nodes/dither_math.h's, shared with gpu/dither.cu. */
#ifndef TSR_NODES_DITHER_H
#define TSR_NODES_DITHER_H

#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tsr_dither_kind {
    TSR_DITHER_THRESHOLD, /* one cell: s > floor(M / 2), i.e. 0.5 */
    TSR_DITHER_BAYER,     /* ordered, 2^k x 2^k, k = 1..8 */
    TSR_DITHER_BLUE,      /* void-and-cluster, 16, 32, 64 or 128 */
} tsr_dither_kind;

/* A threshold array and its thresholds scaled for 8- and 16-bit samples. Immutable once
 * made: any number of threads may use one at once. */
typedef struct tsr_dither tsr_dither;

/* Make the array of `kind` and edge `size` (1 for TSR_DITHER_THRESHOLD). The blue-noise
 * arrays are generated once per process (64: ~15 ms, 128: ~0.8 s) and shared. NULL with
 * TSR_EINVAL ("dither: bayer size 12: must be a power of two in 2..256") or TSR_ENOMEM.
 * Thread-safe. */
tsr_dither *
tsr_dither_new(tsr_dither_kind kind, int size, tsr_error *err);

/* Parse the option spelling: "threshold", "bayerN" (N = 2, 4, ... 256), "blueN" (N = 16, 32,
 * 64, 128) and make it. NULL with TSR_EINVAL naming the spelling. */
tsr_dither *
tsr_dither_parse(const char *spec, tsr_error *err);

/* NULL is fine. */
void
tsr_dither_free(tsr_dither *d);

/* The array's edge N, and its name ("bayer8"). */
int
tsr_dither_size(const tsr_dither *d);

const char *
tsr_dither_name(const tsr_dither *d);

/* The ranks, N * N, row-major (cell (x, y) at y * N + x): a permutation of 0 .. N^2 - 1. */
const uint32_t *
tsr_dither_ranks(const tsr_dither *d);

/* The scaled thresholds t(r) of dither_math.h, N * N, row-major, for samples of `depth` 8 or
 * 16; NULL for another depth. */
const uint16_t *
tsr_dither_thresholds(const tsr_dither *d, int depth);

/* Bytes of a packed row of `width` pixels at `bits` per pixel; 0 on overflow or a bad bits. */
size_t
tsr_dither_row_bytes(int64_t width, int bits);

/* Dither n samples (depth 8: bytes; 16: little-endian pairs, as the stream carries them) of
 * pixels x0 .. x0 + n - 1 of row y into `row`, the packed row that starts at pixel 0 (pixel x
 * lands in byte x * bits / 8). Only those pixels' bits are written: the rest of a shared edge
 * byte is kept, so pieces of a row may be dithered in any order and any split (x0 >= 0,
 * y >= 0). bits is 1, 2 or 4. TSR_EINVAL for a bad depth, bits or coordinate. Thread-safe
 * over disjoint bytes of `row`. */
tsr_status
tsr_dither_row(const tsr_dither *d, const void *samples, int depth, int64_t x0, size_t n,
               int64_t y, int bits, uint8_t *row, tsr_error *err);

/* Dither n samples of pixels x .. x + n - 1 of row y (root coordinates: the thresholds' phase)
 * into `out`, a packed row that starts at pixel x: pixel x + i at bits of byte i * bits / 8;
 * the padding bits of the last byte are 0, (n * bits + 7) / 8 bytes written. For a piece
 * that does not start at pixel 0 of its row in the stream (a swath). Errors as
 * tsr_dither_row. Thread-safe over disjoint `out`. */
tsr_status
tsr_dither_piece(const tsr_dither *d, const void *samples, int depth, int64_t x, size_t n,
                 int64_t y, int bits, uint8_t *out, tsr_error *err);

/* Check an array spelling (as tsr_dither_parse) without making it: *kind and *size. */
tsr_status
tsr_dither_spec(const char *spec, tsr_dither_kind *kind, int *size, tsr_error *err);

struct tsr_output;

/* One row of a band as the stream carries it (docs/outputs.md §5, §7): its 8/16-bit samples
 * (pixels of root columns x .. x + w - 1, row y) reversed in place when `rev`; or at depth 1,
 * 2, 4 dithered at each pixel's root column and packed into `out`, right to left when `rev`
 * (tsr_output_row_bytes(o, w) bytes; the samples are then left as they were, d unused at 8
 * and 16). TSR_EINVAL as tsr_dither_row. */
tsr_status
tsr_output_row(const struct tsr_output *o, const tsr_dither *d, uint8_t *samples, int64_t x,
               int64_t w, int64_t y, bool rev, uint8_t *out, tsr_error *err);

/* ---- bit planes ----------------------------------------------------------------------- */

/* Bit `plane` (0 = least significant .. depth - 1) of n samples as a packed 1-bit row of
 * (n + 7) / 8 bytes at out (padding bits 0). TSR_EINVAL for a bad depth or plane. */
tsr_status
tsr_planes_row(const void *samples, int depth, size_t n, int plane, uint8_t *out,
               tsr_error *err);

/* How the planes of an image follow each other (docs/outputs.md, "Bit planes"). A "unit" is
 * a band of rows (BAND), a swath (SWATH) or the whole image (WHOLE); units come in stream
 * order, and within a unit its planes one after the other, each the unit's rows packed at
 * (unit width + 7) / 8 bytes. */
typedef enum tsr_planes_order {
    TSR_PLANES_BAND,  /* units: `band_rows` full-width rows (the last one shorter) */
    TSR_PLANES_SWATH, /* units: swaths of `swath_width` columns, all rows (the last narrower) */
    TSR_PLANES_WHOLE, /* one unit: plane after plane of the whole image */
} tsr_planes_order;

typedef struct tsr_planes {
    int depth;               /* 8 or 16 */
    int64_t width, height;   /* pixels */
    tsr_planes_order order;
    int64_t band_rows;       /* BAND: rows per band, >= 1 */
    int64_t swath_width;     /* SWATH: columns per swath, >= 1 */
    bool lsb_first;          /* planes within a unit: bit 0 first; false: the top bit first */
} tsr_planes;

/* Validate p and give the total bytes of all planes. TSR_EINVAL naming the bad field or an
 * overflow. */
tsr_status
tsr_planes_total(const tsr_planes *p, uint64_t *total, tsr_error *err);

/* The byte offset of plane `plane`'s row y of the unit holding column x (any x of it; 0
 * unless SWATH), and in *row_bytes that row's length. p must have passed tsr_planes_total. */
uint64_t
tsr_planes_offset(const tsr_planes *p, int plane, int64_t y, int64_t x, size_t *row_bytes);

#endif
