/* image: PNG writing (previews) and reading (image sources, docs/format.md §4), the only libpng
 * user. */
#ifndef TSR_IMAGE_H
#define TSR_IMAGE_H

#include "tiles/tiles.h"

#include <stdint.h>

/* Write a gray PNG of w x h samples: depth 8 (uint8_t rows) or 16 (uint16_t rows, host
 * order), rows contiguous. Where `path` is a regular file or nothing, the PNG is written to a
 * temporary beside it and renamed when complete, so a failure never leaves a half-written file
 * under that name. Anything else (a symlink, a device, a FIFO) is written in place, through
 * it, never replaced; "-" is stdout (refused when a terminal). TSR_EIO for a failed open,
 * write or close (ENOSPC included), with the path and the reason. */
tsr_status
tsr_png_write(const char *path, int64_t w, int64_t h, int depth, const void *samples,
              tsr_error *err);

/* Read a PNG as float32 values per docs/format.md §4 (value = sample / (2^bitdepth - 1); gray
 * 1/2/4/8/16-bit; palette expanded to RGB; RGB -> 0.299 R + 0.587 G + 0.114 B in double;
 * alpha, gamma, ICC, sBIT, tRNS ignored). *px is malloc'd (w*h floats), owned by the caller.
 * TSR_EINVAL for a missing/corrupt/truncated file ("lens.png: not a PNG file"). */
tsr_status
tsr_png_read_gray(const char *path, int64_t *w, int64_t *h, float **px, tsr_error *err);

/* Only the size of a PNG, from its header (no pixels decoded), so a design can be validated
 * and its memory planned before any image is decoded. Fails like tsr_png_read_gray on a
 * missing, non-PNG or corrupt header; damage after the header is only found by the full read.
 * Thread-safe (no shared state). */
tsr_status
tsr_png_read_size(const char *path, int64_t *w, int64_t *h, tsr_error *err);

/* tsr_png_read_size, and in *scratch the bytes tsr_png_read_gray allocates beside the w*h
 * floats it returns (native rows, all of them for an interlaced file; libpng's and zlib's
 * buffers): what a memory plan counts before decoding. */
tsr_status
tsr_png_read_info(const char *path, int64_t *w, int64_t *h, int64_t *scratch, tsr_error *err);

/* Read the whole PNG as tsr_png_read_gray does, failing the same way on damage anywhere, but
 * through one row buffer and keeping nothing: *px is set to NULL. For `tessera check`, which
 * validates images without the memory their floats take. Same signature as
 * tsr_png_read_gray, so it can stand in for it as a design's image reader. */
tsr_status
tsr_png_check(const char *path, int64_t *w, int64_t *h, float **px, tsr_error *err);

#endif
