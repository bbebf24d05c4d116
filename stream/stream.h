/* stream: where output samples go (file, stdout, null, tcp), the framed stream of
 * docs/streaming.md (header, frames, crc, deflate, trailer, abort), pacing, and the writer thread that
 * overlaps writing with computing (the only zlib/libdeflate/libcrypto user; PNG is image/'s,
 * the reference controller controller/'s, progress reports cli/'s).
 *
 * Sinks are written by one thread at a time (the writer thread); the counters a progress
 * display reads (tsr_sink_offset, tsr_sink_underruns) may be read from any thread. A sink that
 * fails keeps failing (sticky error). docs/streaming.md describes the wire format. */
#ifndef TSR_STREAM_H
#define TSR_STREAM_H

#include "tiles/tiles.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* Sample bytes written so far (for a framed sink: raw bytes delivered in whole frames). */
uint64_t
tsr_sink_bytes(const tsr_sink *s);

/* ---- the stream's geometry (docs/outputs.md §2, §8) ------------------------------------ */

/* What fixes the stream's byte layout: swaths (in stream order: full ones, the last
 * narrower), the overlap each swath carries into the next, overscan at row ends, bit planes. */
typedef struct tsr_stream_geom {
    uint64_t width, height; /* pixels of the image (the rows crop applied) */
    uint64_t swath_width;   /* = width (or more, or 0) for raster */
    int bits;               /* bits a pixel: 1, 2, 4, 8, 16; with planes the samples' 8 or 16 */
    uint64_t overlap;       /* columns swath k goes on into swath k + 1 */
    uint64_t overscan;      /* pixels padded at each end of every row */
    uint64_t planes;        /* 0, or rows sent as `bits` 1-bit planes together */
} tsr_stream_geom;

/* Swaths in the stream (1 for raster). */
uint64_t
tsr_geom_swaths(const tsr_stream_geom *g);

/* Swath k (stream order, < tsr_geom_swaths): its own columns (*base), and the overlaps it
 * shares with the swath before it (*lead: its first columns, which the one before also
 * sends) and after it (*trail: columns of the next swath it sends after its own). A row of
 * swath k carries overscan + base + trail + overscan pixels. */
void
tsr_geom_swath(const tsr_stream_geom *g, uint64_t k, uint64_t *base, uint64_t *lead,
               uint64_t *trail);

/* Bytes of one stream row of swath k: (pixels x bits + 7) / 8, or with planes `bits` rows of
 * (pixels + 7) / 8. False on overflow. */
bool
tsr_geom_row_bytes(const tsr_stream_geom *g, uint64_t k, uint64_t *rb);

/* Bytes of the whole stream: height x the sum of the swaths' row bytes. False on overflow. */
bool
tsr_geom_total(const tsr_stream_geom *g, uint64_t *total);

/* The geometry a (decoded) header describes. */
void
tsr_geom_from_header(const tsr_header *h, tsr_stream_geom *g);

/* ---- framing (docs/streaming.md) ------------------------------------------------------- */

#define TSR_FRAME_HEAD 24       /* u64 offset, u32 wire, u32 raw, u32 crc, u32 flags */
#define TSR_FRAME_DEFLATE 1u    /* flags bit 0: the payload is one zlib stream */
#define TSR_FRAME_ABORT 2u      /* flags bit 1: abort; offset = next undelivered byte */
#define TSR_FRAME_TRAILER 4u    /* flags bit 2: end; crc = crc32 of raw bytes since resume */
#define TSR_FRAME_MAX_RAW ((uint32_t)64 << 20) /* largest payload a receiver accepts */
#define TSR_ABORT_MAX 4096u     /* longest abort reason on the wire */
#define TSR_RESUME_REFUSED UINT64_MAX /* the receiver's answer that refuses a job */

/* The stream header (tsr_header, TSR_HEADER_SIZE) and tsr_header_encode are the public API's
 * (include/tessera.h). */

/* One frame's fixed part; the payload (wire bytes) follows it on the wire. */
typedef struct tsr_frame {
    uint64_t offset; /* stream offset of the payload's first sample byte */
    uint32_t wire;   /* payload bytes on the wire */
    uint32_t raw;    /* sample bytes the payload stands for */
    uint32_t crc;    /* crc32 of the raw bytes (trailer: of everything since the resume) */
    uint32_t flags;  /* TSR_FRAME_* */
} tsr_frame;

/* Decode and validate a header's first 75 bytes: magic, version 1 (depth 8|16) or 2 (depth
 * 1|2|4|8|16, tsr_header_decode_ext follows), order <= 1, serpentine <= 1,
 * start <= 3, total == height * each swath's (w * depth + 7) / 8 without overflow,
 * 1 <= swath width <= width.
 * TSR_EINVAL naming the first bad field ("header: depth 12: must be 8 or 16"). */
tsr_status
tsr_header_decode(const uint8_t in[TSR_HEADER_SIZE], tsr_header *h, tsr_error *err);

/* A version 2 header's TSR_HEADER_EXT bytes after the first 75, into *h (decoded from those
 * first): dither kind 0 exactly at depth 8 and 16, 1..3 below; its size in range; flags
 * TSR_HEADER_PROFILE only; the reserved bytes 0. TSR_EINVAL naming the bad field. A version 1
 * header has none (its dither and flags are 0). */
tsr_status
tsr_header_decode_ext(const uint8_t in[TSR_HEADER_EXT], tsr_header *h, tsr_error *err);

void
tsr_frame_encode(const tsr_frame *f, uint8_t out[TSR_FRAME_HEAD]);

void
tsr_frame_decode(const uint8_t in[TSR_FRAME_HEAD], tsr_frame *f);

/* crc32 (zlib's polynomial) continued from `crc` over n bytes; tsr_crc32(0, NULL, 0) == 0. */
uint32_t
tsr_crc32(uint32_t crc, const void *buf, size_t n);

/* The crc32 of A followed by B from crc(A), crc(B) and len(B) (zlib's crc32_combine). */
uint32_t
tsr_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* Largest output tsr_deflate may produce for n input bytes. */
size_t
tsr_deflate_bound(size_t n);

/* Compress n bytes into one independent zlib stream (level 1..9, libdeflate's) at out (cap
 * bytes, at least tsr_deflate_bound(n)); *outlen gets its size. TSR_ENOMEM when no compressor
 * can be had, TSR_EINTERNAL when the output does not fit cap. */
tsr_status
tsr_deflate(const void *in, size_t n, int level, void *out, size_t cap, size_t *outlen,
            tsr_error *err);

/* A compressor kept for many buffers (tsr_deflate allocates one per call, ~200 KiB at level
 * 1): each framing thread owns one. new: NULL when out of memory (level clamped to 1..12).
 * run: as tsr_deflate, the same bytes; one thread at a time per compressor. free: NULL is
 * fine. */
typedef struct tsr_deflater tsr_deflater;

tsr_deflater *
tsr_deflater_new(int level);

tsr_status
tsr_deflater_run(tsr_deflater *d, const void *in, size_t n, void *out, size_t cap,
                 size_t *outlen, tsr_error *err);

void
tsr_deflater_free(tsr_deflater *d);

/* Inflate exactly one zlib stream of n bytes that must expand to exactly `raw` bytes at out.
 * TSR_EINVAL for a corrupt, truncated, trailing-garbage or wrong-length stream. */
tsr_status
tsr_inflate(const void *in, size_t n, void *out, size_t raw, tsr_error *err);

/* SHA-256 (OpenSSL EVP), incremental. new: NULL on failure. final writes the digest and
 * frees the context; free alone discards it (NULL is fine). */
typedef struct tsr_sha256 tsr_sha256;

tsr_sha256 *
tsr_sha256_new(void);

void
tsr_sha256_update(tsr_sha256 *h, const void *buf, size_t n);

void
tsr_sha256_final(tsr_sha256 *h, uint8_t out[32]);

void
tsr_sha256_free(tsr_sha256 *h);

/* SHA-256 of a whole file's bytes. TSR_EIO naming the file when it cannot be read. */
tsr_status
tsr_sha256_file(const char *path, uint8_t out[32], tsr_error *err);

/* ---- streaming sinks: framed, paced, resumable, stoppable ---------------------------- */

/* What an image file output (-o *.tif, *.tiff, *.bmp) and a raw file's sidecar (-o *.raw:
 * *.raw.json, docs/outputs.md) need to know of the stream beyond its bytes. */
typedef struct tsr_sink_image {
    uint64_t width, height;   /* pixels of the stream (the rows crop applied) */
    int depth;                /* bits a pixel in the stream's bytes: 8, 16 (little-endian), or
                               * 1 (rows packed MSB-first, each padded to a whole byte) */
    double pitch_um[2];       /* pixel pitch x, y in micrometres; 0: unknown */
    double origin_um[2];      /* where pixel (0, 0)'s top-left corner lies, micrometres */
    uint8_t order;            /* as tsr_header: 0 raster, 1 swath (raw only) */
    uint8_t serpentine, start;
    uint64_t swath_width;     /* = width for raster */
    uint8_t fingerprint[32];  /* the design's (tsr_header.fingerprint) */
    int compression;          /* TIFF: TSR_TIFF_NONE, _PACKBITS, _DEFLATE (image/image.h) */
    bool bigtiff;             /* TIFF: BigTIFF even below 4 GB */
    char dither[16];          /* depth 1, 2, 4: the threshold array ("blue64"); "" otherwise */
    /* the stage (docs/outputs.md §7, §8) as tsr_header has it: its order bits, the overlap,
     * the overscan; and bit planes (§2). Each changes the stream's bytes (tsr_stream_geom) */
    uint8_t stage, feather;
    uint64_t overlap, overscan, planes;
    uint32_t overscan_value;
} tsr_sink_image;

/* The part of *im a stream header says (size, depth, order, swath, fingerprint); the rest is
 * zeroed (no pitch, origin 0, no compression). */
void
tsr_sink_image_from_header(const tsr_header *h, tsr_sink_image *im);

/* Whether `spec` is a path whose extension (any case) makes it an image file (.tif, .tiff,
 * .bmp) or a raw file with a sidecar (.raw): the outputs that want tsr_sink_opts.image (the
 * image files need it). */
bool
tsr_sink_wants_image(const char *spec);

/* The geometry of an image's stream (tsr_stream_geom). */
void
tsr_sink_image_geom(const tsr_sink_image *im, tsr_stream_geom *g);

/* Whether `spec` names an image file output (.tif, .tiff, .bmp, any case): written through
 * image/, neither framed nor resumable. A .bmp whose name holds "%d" is one BMP per swath,
 * the swath's number (0, 1, ... in stream order) in place of the first "%d". */
bool
tsr_sink_image_file(const char *spec);

/* Write the JSON sidecar of the raw file `raw_path`: raw_path + ".json" (docs/outputs.md:
 * size, depth, row bytes, pitch, origin, order, swath, fingerprint, the stream's bytes and
 * their crc32; have_crc false writes null for it). Where that name is a regular file or
 * nothing, the JSON goes to a temporary beside it, renamed when whole; anything else (a
 * symlink) is written through. TSR_EIO naming the file. */
tsr_status
tsr_sidecar_write(const char *raw_path, const tsr_sink_image *im, uint64_t bytes, bool have_crc,
                  uint32_t crc, tsr_error *err);

typedef struct tsr_sink_opts {
    uint64_t start;               /* files and pipes: the byte the stream starts at
                                   * (--resume-at); tcp: ignored, the receiver answers it */
    bool framed;                  /* header + frames (docs/streaming.md); always on for tcp */
    bool deflate;                 /* frames carry zlib streams where that is smaller */
    double rate;                  /* sample bytes per second, 0 = unpaced */
    const tsr_header *header;     /* borrowed; required when framed or tcp */
    volatile sig_atomic_t *stop;  /* borrowed, may be NULL: when non-zero, writes stop at the
                                   * next frame (framed) or chunk (raw) boundary, TSR_EINTR */
    double stall_s;               /* tcp: seconds a receiver may take nothing before the sink
                                   * gives up (TSR_EIO); 0 = 600 */
    const char *fault;            /* test hook, NULL = none: "enospc@N", "epipe@N", "eio@N",
                                   * "reset@N" fail the medium at its byte N; "short[:SEED]"
                                   * makes every call take a random part (stream/fault.c) */
    unsigned threads;             /* framed and unpaced: threads that crc (and deflate) the
                                   * frames of a write while it sends them in order (stream/
                                   * team.c); 1 = none, the writing thread does it; 0 = the
                                   * TSR_FRAME_THREADS environment variable (1..64), else
                                   * deflating min(usable cores, 8), crc alone min(cores / 4,
                                   * 4) */
    const tsr_sink_image *image;  /* borrowed, may be NULL: required by a *.tif, *.tiff or
                                   * *.bmp path (TSR_EINVAL without it); a raw *.raw file with
                                   * it gets *.raw.json beside it when its stream finishes */
} tsr_sink_opts;

/* Open a sink by its -o spelling with streaming options. Beyond tsr_sink_open:
 * - a path ending in .tif/.tiff or .bmp (any case) is written as that image file through
 *   image/ (docs/outputs.md): o->image gives its size and depth; neither is framed nor
 *   resumable (TSR_EINVAL for framed, start > 0, swath order, a bad depth), and the file is a
 *   valid image only once tsr_sink_finish succeeded;
 * - a raw path ending in .raw with o->image gets a JSON sidecar (path + ".json") written at
 *   tsr_sink_finish; an older sidecar is removed when the sink opens (a resume at `start`
 *   reads the kept bytes back for the crc32);
 * - a raw file with start > 0 is opened without truncation, keeps its bytes before `start`,
 *   is cut to `start` and written from there (TSR_EINVAL when it holds fewer bytes);
 * - "tcp://host:port" connects (10 s timeout), sends the header and waits for the receiver's
 *   u64 resume offset: TSR_EIO "...: the controller refused the job" for UINT64_MAX, "...:
 *   resume offset N is past the end" for one beyond header->total;
 * - framed files and pipes get the header, then frames from `start` (a framed file is a new
 *   transcript and is truncated);
 * - a raw stdout pipe may be fed with vmsplice(2) (see tsr_sink_write_donate).
 * NULL on failure with `err` filled. `o` may be NULL (= tsr_sink_open). */
tsr_sink *
tsr_sink_open_ex(const char *spec, const tsr_sink_opts *o, tsr_error *err);

/* Like tsr_sink_write, but `buf` (page-aligned private anonymous memory the caller owns, such
 * as the writer's pool) is donated: a raw stdout pipe may take its whole pages by reference
 * (vmsplice) and drop them from the caller's mapping (madvise MADV_DONTNEED), so the caller
 * must treat the contents as undefined afterwards (they read back as zeros or the old bytes).
 * Pages handed to a pipe are never written again by us, whatever the reader does with them
 * (even splicing them onward). Other sinks copy as tsr_sink_write does. */
tsr_status
tsr_sink_write_donate(tsr_sink *s, void *buf, size_t n, tsr_error *err);

/* The offset the stream started at: opts->start, or the receiver's answer on tcp. */
uint64_t
tsr_sink_start(const tsr_sink *s);

/* The next undelivered sample byte: start + bytes delivered (whole frames when framed). Safe
 * to call from any thread while another writes. */
uint64_t
tsr_sink_offset(const tsr_sink *s);

/* Whether writes are paced (opts->rate > 0). */
bool
tsr_sink_paced(const tsr_sink *s);

/* Underruns: times the paced sink waited for data (the writer found nothing queued), and the
 * seconds it waited in all. The writer thread reports them; any thread may read them. */
void
tsr_sink_note_underrun(tsr_sink *s, double seconds);

uint64_t
tsr_sink_underruns(const tsr_sink *s, double *seconds);

/* End a complete stream: framed sinks send the trailer (crc32 of the raw bytes since the
 * start); tcp then half-closes and waits (up to 2 minutes) for the receiver to close, which is
 * its word that it holds the job. Fails like a write (sticky errors included). The sink stays
 * open: close it after. */
tsr_status
tsr_sink_finish(tsr_sink *s, tsr_error *err);

/* End an incomplete stream: framed sinks send an abort frame (offset = tsr_sink_offset,
 * payload = `reason`, cut to TSR_ABORT_MAX bytes at a UTF-8 boundary) when the connection is
 * still whole; raw sinks do nothing. Never a trailer. A framed regular file whose write failed
 * is first cut back to its last whole frame, then gets the abort frame (if the medium takes
 * it; if not, the file ends at that whole frame). A pipe or socket that failed gets nothing
 * more: half a frame may be on its way already. */
tsr_status
tsr_sink_abort(tsr_sink *s, const char *reason, tsr_error *err);

/* ---- writer thread ----------------------------------------------------------------- */

/* A pool of `nbuf` buffers of `cap` bytes each and one thread that writes filled buffers to
 * a sink in submission order, so the next band computes while the last one is written. */
typedef struct tsr_writer tsr_writer;

/* NULL on out of memory or thread failure. The sink is borrowed (close it after finish). */
tsr_writer *
tsr_writer_new(tsr_sink *sink, size_t nbuf, size_t cap);

/* Buffer memory that outlives writers: a backend that pins the pool (the GPU's
 * cudaHostRegister, which costs time per byte) keeps one and hands it to each writer instead
 * of pinning a fresh pool for every stream or profile sample. */
typedef struct tsr_writer_mem {
    void *map;
    size_t maplen;
    uint8_t *mem;   /* nbuf buffers `stride` bytes apart, aligned as tsr_writer_new's */
    size_t memlen;
    size_t nbuf, cap, stride;
} tsr_writer_mem;

/* Map memory for `nbuf` buffers of `cap` bytes into *m; false on overflow or out of memory
 * (*m is then all zero). */
bool
tsr_writer_mem_new(tsr_writer_mem *m, size_t nbuf, size_t cap);

/* Unmap it (all zero afterwards). Zeroed memory is fine. */
void
tsr_writer_mem_free(tsr_writer_mem *m);

/* A writer over m's buffers (borrowed: m must outlive it and serve one writer at a time), with
 * buffers of `cap` <= m->cap bytes. It writes them by copy and never donates their pages
 * (tsr_sink_write, not tsr_sink_write_donate): the next writer reuses them, and a pinned page
 * (cudaHostRegister) donated to a pipe silently takes later DMA away from the process. NULL
 * as tsr_writer_new. */
tsr_writer *
tsr_writer_new_in(tsr_sink *sink, const tsr_writer_mem *m, size_t cap);

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

/* The pool is page-aligned anonymous memory and buffers go to the sink through
 * tsr_sink_write_donate, so a producer must fill every byte of a buffer it submits (it
 * does not keep its old contents). When the sink is paced, every time the writer thread
 * had to wait for the producer after its first buffer is an underrun reported to the sink. */

#endif
