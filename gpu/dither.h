/* gpu: dithering rows of samples on the device into packed 1/2/4-bit rows, the same bits as
 * nodes/dither.h's tsr_dither_row (both compute nodes/dither_math.h). dither.cu with CUDA,
 * dither_none.c (every call TSR_EINVAL "gpu: built without CUDA") without. */
#ifndef TSR_GPU_DITHER_H
#define TSR_GPU_DITHER_H

#include "nodes/dither.h"

#include <stddef.h>
#include <stdint.h>

/* A threshold array's thresholds for one sample depth (8 or 16), on the current device. */
typedef struct tsr_gpu_dither tsr_gpu_dither;

/* Upload d's thresholds for `depth`-bit samples (N * N uint16). d is borrowed for the call
 * only. NULL with err filled (TSR_EINVAL for a bad depth or without CUDA, TSR_EIO for a CUDA
 * failure, TSR_ENOMEM). */
tsr_gpu_dither *
tsr_gpu_dither_new(const tsr_dither *d, int depth, tsr_error *err);

/* NULL is fine. */
void
tsr_gpu_dither_free(tsr_gpu_dither *g);

/* Dither h rows of w samples on the device: row j's samples at in + j * in_pitch (bytes;
 * 16-bit samples little-endian) are pixels x0 .. x0 + w - 1 of row y0 + j, and go to the
 * packed row at out + j * out_pitch, which starts at pixel 0 (pixel x in byte x * bits / 8),
 * as tsr_dither_row does: only those pixels' bits change. Queued on `stream` (a
 * cudaStream_t; NULL: the default stream), not waited for. TSR_EINVAL for bad arguments,
 * TSR_EIO when the launch fails. */
tsr_status
tsr_gpu_dither_rows(const tsr_gpu_dither *g, const void *in, size_t in_pitch, int64_t x0,
                    int64_t y0, int64_t w, int64_t h, int bits, uint8_t *out, size_t out_pitch,
                    void *stream, tsr_error *err);

/* A band's rows dithered as the stream carries them (tsr_dither_piece: each row packed from
 * its first pixel x0, thresholds at root pixels (x0 + i, y0 + j), or y0 + h - 1 - j when up,
 * the bottom row first, the last byte's padding 0)
 * from in (row j at in + j * in_pitch) to out (row j at out + j * out_pitch, every byte of
 * the row written), on g's compute stream, not waited for. TSR_EINVAL for bad arguments. */
typedef struct tsr_gpu tsr_gpu;
tsr_status
tsr_gpu_dither_band(tsr_gpu *g, const tsr_gpu_dither *d, const void *in, size_t in_pitch,
                    int64_t x0, int64_t y0, int64_t w, int64_t h, bool up, int bits, uint8_t *out,
                    size_t out_pitch, tsr_error *err);

/* tsr_dither_row through the device, from host memory to host memory (tests, and the check
 * that both backends agree): uploads, runs, waits, copies back. */
tsr_status
tsr_gpu_dither_row_host(const tsr_dither *d, const void *samples, int depth, int64_t x0,
                        size_t n, int64_t y, int bits, uint8_t *row, tsr_error *err);

#endif
