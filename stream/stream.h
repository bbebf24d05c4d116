/* stream: where output samples go (file, stdout, null), the writer thread that overlaps
 * writing with computing, and PNG reading/writing (the only libpng/zlib user).
 *
 * Sinks are written by one thread at a time. A sink that fails keeps failing (sticky error). */
#ifndef TSR_STREAM_H
#define TSR_STREAM_H

#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tsr_sink tsr_sink;

/* Open a sink by its -o spelling: a path (created/truncated), "-" (stdout; refused with
 * TSR_EINVAL when stdout is a terminal), or "null" (discards, counts bytes). NULL on failure,
 * with `err` filled ("out.raw: Permission denied"). */
tsr_sink *
tsr_sink_open(const char *spec, tsr_error *err);

/* Write all n bytes (retrying short writes and EINTR). TSR_EIO on failure ("out.raw: No space
 * left on device"). */
tsr_status
tsr_sink_write(tsr_sink *s, const void *buf, size_t n, tsr_error *err);

/* Flush and close; reports a failed flush/close (e.g. delayed ENOSPC). Frees the sink, also on
 * failure. NULL is fine. */
tsr_status
tsr_sink_close(tsr_sink *s, tsr_error *err);

/* Bytes written so far. */
uint64_t
tsr_sink_bytes(const tsr_sink *s);

/* ---- writer thread ----------------------------------------------------------------- */

/* A pool of `nbuf` buffers of `cap` bytes each and one thread that writes filled buffers to
 * a sink in submission order, so the next band computes while the last one is written. */
typedef struct tsr_writer tsr_writer;

/* NULL on out of memory or thread failure. The sink is borrowed (close it after finish). */
tsr_writer *
tsr_writer_new(tsr_sink *sink, size_t nbuf, size_t cap);

/* A free buffer of `cap` bytes (blocks until one is free). NULL if the writer has failed:
 * then stop producing and call tsr_writer_finish for the error. */
uint8_t *
tsr_writer_acquire(tsr_writer *w);

/* Queue `len` bytes of a buffer from tsr_writer_acquire for writing. */
void
tsr_writer_submit(tsr_writer *w, uint8_t *buf, size_t len);

/* Wait until everything queued is written, stop the thread, free the writer; returns the
 * first write error. NULL is fine. */
tsr_status
tsr_writer_finish(tsr_writer *w, tsr_error *err);

/* ---- PNG ------------------------------------------------------------------------ */

/* Write a gray PNG of w x h samples: depth 8 (uint8_t rows) or 16 (uint16_t rows, host
 * order), rows contiguous. Written to a temporary beside `path`, renamed when complete, so a
 * failure never leaves a half-written file under that name. */
tsr_status
tsr_png_write(const char *path, int64_t w, int64_t h, int depth, const void *samples,
              tsr_error *err);

/* Read a PNG as float32 values per DESIGN.md §2.2 (value = sample / (2^bitdepth - 1); gray
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

#endif
