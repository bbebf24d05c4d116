/* image: PNG writing (previews) and reading (image sources, docs/format.md §4), the only libpng
 * user; streaming TIFF (the only libtiff user) and BMP writers for outputs. */
#ifndef TSR_IMAGE_H
#define TSR_IMAGE_H

#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>
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

/* Where tsr_png_write_rows gets row y (0 .. h-1, asked for in order, each once): *row points
 * at its w samples (as tsr_png_write's rows), valid until the next call. A failure ends the
 * write with that status and the error the function filled; no PNG is left under the name. */
typedef tsr_status (*tsr_png_row_fn)(void *ctx, int64_t y, const void **row, tsr_error *err);

/* tsr_png_write with the rows asked for one at a time, so the image is never held whole
 * (previews under --memory); fails as tsr_png_write does, or as `row` did. */
tsr_status
tsr_png_write_rows(const char *path, int64_t w, int64_t h, int depth, tsr_png_row_fn row,
                   void *ctx, tsr_error *err);

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

/* ---- streaming writers: TIFF and BMP (docs/outputs.md, "Files") -------------------------
 *
 * Rows go in top to bottom, a few at a time; neither writer ever holds the image (a TIFF
 * keeps one strip and its strip table, a BMP ~1 MiB of rows). Both need a file they can seek
 * in: a path that names a regular file or nothing (created, or truncated: written in place,
 * through a symlink, never replaced by a rename), a block device too; a FIFO, a character
 * device or stdout is refused. Until *_finish succeeds the file is not a valid image: a TIFF's
 * header points at no directory (libtiff writes the directory last; an abandoned writer
 * never writes it), a BMP's header (its "BM" magic) is written last. One thread at a time per
 * writer; different writers are independent (libtiff's messages go to the writer's handler,
 * not the process-wide one). */

typedef enum tsr_tiff_compression {
    TSR_TIFF_NONE,
    TSR_TIFF_PACKBITS,
    TSR_TIFF_DEFLATE, /* zlib level 1: a fast stream matters more than the last percent */
} tsr_tiff_compression;

typedef struct tsr_image_opts {
    int64_t width, height;  /* 1 .. 2^32 - 1 (TIFF), 1 .. 2^31 - 1 (BMP) */
    int bits;               /* 1, 2, 4 (rows packed MSB-first, the first pixel in the high
                             * bits; all ones = white; 2: TIFF only), 8, 16 (TIFF only) */
    double pitch_um[2];     /* pixel pitch x, y in micrometres, 0: unknown (no resolution) */
    tsr_tiff_compression compression; /* TIFF */
    bool bigtiff;           /* TIFF: BigTIFF even when the file would stay below 4 GB */
    int64_t strip_rows;     /* TIFF: rows per strip; 0: as many as fit 1 MiB (at least 1) */
} tsr_image_opts;

/* Bytes of one row as the writers take it: (width + 7) / 8 at 1 bit, width at 8, 2 width at
 * 16 (little-endian samples, as the stream carries them). 0 for a bad bits or overflow. */
size_t
tsr_image_row_bytes(int64_t width, int bits);

typedef struct tsr_tiff tsr_tiff;

/* Create `path` as a gray (MinIsBlack) TIFF of o's size and depth: BigTIFF when o->bigtiff or
 * when the file could pass 4 GB (the samples plus 1/64 for the compression's worst case plus
 * the strip table), the pitch as XResolution / YResolution in pixels per centimetre. NULL with
 * err filled: TSR_EINVAL for bad options or a path that cannot be sought in ("x.tif: a TIFF
 * needs a regular file (it is written with seeks)"), TSR_EIO for a failed open, TSR_ENOMEM. */
tsr_tiff *
tsr_tiff_open(const char *path, const tsr_image_opts *o, tsr_error *err);

/* Append n whole rows (n * tsr_image_row_bytes bytes, borrowed for the call). TSR_EINVAL for
 * rows past the height, TSR_EIO for a failed write ("x.tif: No space left on device");
 * failures are sticky. */
tsr_status
tsr_tiff_write_rows(tsr_tiff *t, const void *rows, int64_t n, tsr_error *err);

/* The last strip, the directory, the header's pointer to it, close: only now is the file a
 * TIFF. TSR_EINVAL when rows are missing ("x.tif: 10 of 20 rows written"), TSR_EIO when the
 * medium fails. Frees t whatever happens (an unfinished file stays invalid). */
tsr_status
tsr_tiff_finish(tsr_tiff *t, tsr_error *err);

/* Close without making the file valid (after a failure or a stop); frees t. NULL is fine. */
void
tsr_tiff_abandon(tsr_tiff *t);

typedef struct tsr_bmp tsr_bmp;

/* Create `path` as an uncompressed BMP (BITMAPINFOHEADER, gray palette of 2 or 256 entries),
 * bits 1 or 8, rows stored bottom-up as every reader expects: each row is written at its place
 * from the end of the file (pwrite), the header last. The pitch goes into the pixels per
 * metre. NULL with err filled: TSR_EINVAL for bad options, 16 bits, a file over 4 GiB (BMP's
 * size fields are 32-bit: use a TIFF) or a path that cannot be sought in; TSR_EIO; TSR_ENOMEM. */
tsr_bmp *
tsr_bmp_open(const char *path, const tsr_image_opts *o, tsr_error *err);

/* As tsr_tiff_write_rows. */
tsr_status
tsr_bmp_write_rows(tsr_bmp *b, const void *rows, int64_t n, tsr_error *err);

/* As tsr_tiff_finish: the header with its "BM" is written last. */
tsr_status
tsr_bmp_finish(tsr_bmp *b, tsr_error *err);

/* As tsr_tiff_abandon. */
void
tsr_bmp_abandon(tsr_bmp *b);

#endif
