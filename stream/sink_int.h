/* stream: the sink's one private struct, shared by the generic part (sink.c: options,
 * pacing, framing, accounting, the end of a stream) and its four media, each in a file of its
 * own: sink_file.c (descriptors: write(2), a raw resume, cutting back a framed file),
 * sink_stdout.c (stdout, vmsplice into a pipe), sink_null.c, sink_tcp.c (connect, send, the
 * resume answer, the receiver's confirmation); and team.c, the threads that make a framed
 * sink's frames. */
#ifndef TSR_SINK_INT_H
#define TSR_SINK_INT_H

#include "stream/stream_int.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One write(2) call never asks for more than this: Linux caps a call at 0x7ffff000 anyway,
 * and some systems reject counts above INT_MAX. Small enough that a stop request is seen
 * within milliseconds between two calls. */
#define WRITE_CHUNK ((size_t)8 << 20)

#define PAGE ((size_t)4096)

enum kind { SINK_FILE, SINK_STDOUT, SINK_NULL, SINK_TCP, SINK_IMAGE };

struct tsr_sink {
    enum kind kind;                /* where the bytes go */
    int fd;                        /* -1 for null; a private dup of 1 for stdout; the socket */
    char *name;                    /* the -o spelling ("stdout" for "-"), for messages */
    _Atomic uint64_t bytes;        /* sample bytes delivered (whole frames when framed) */
    uint64_t start;                /* stream offset of the first byte we deliver */
    tsr_error first;               /* the sticky error; first.status == TSR_OK while healthy */
    bool broken;                   /* a unit was cut short: no abort frame can follow */
    bool framed, deflate;          /* docs/streaming.md framing, zlib payloads */
    bool splice;                   /* stdout is a pipe that takes vmsplice(2) */
    volatile sig_atomic_t *stop;   /* borrowed stop request, may be NULL */
    double rate;                   /* bytes/s, 0 = unpaced */
    tsr_bucket bucket;             /* the pacing */
    size_t chunk;                  /* frame payload / paced write size */
    uint32_t crc;                  /* crc32 of the raw bytes sent since start (framed) */
    uint64_t total;                /* header total (framed), for the resume check */
    uint8_t *zbuf;                 /* deflate output, zcap bytes (framed by the writing
                                    * thread: no team) */
    size_t zcap;
    tsr_deflater *deflater;        /* ... and its compressor, made once */
    struct tsr_team *team;         /* the threads that make frames (team.c); NULL: none */
    _Atomic uint64_t underruns;    /* times the paced sink waited for data */
    _Atomic uint64_t underrun_ns;  /* ... and for how long in all */
    double stall_s;                /* tcp: give up on a receiver taking nothing this long */
    uint64_t wpos;                 /* bytes of our output the medium took (heads included) */
    uint64_t unit_end;             /* ... of them, those in whole units (header, frames) */
    bool cuttable;                 /* a framed regular file: half a frame can be cut off */
    uint64_t base;                 /* its file offset where our output begins */
    tsr_fault fault;               /* the fault hook (tsr_sink_opts.fault) */
    struct tsr_sink_img *img;      /* SINK_IMAGE's writer, or a raw file's sidecar; NULL */
};

static inline bool
stopped(const tsr_sink *s)
{
    return s->stop && *s->stop;
}

/* Remember the first failure and hand it back. */
tsr_status
tsr_sink_fail(tsr_sink *s, tsr_error *err, int e);

/* Remember an interruption (TSR_EINTR) the same way. */
tsr_status
tsr_sink_interrupted(tsr_sink *s, tsr_error *err);

/* Wait up to `ms` for `events` on fd; false with errno set if even waiting fails. */
bool
tsr_wait_fd(int fd, short events, int ms);

/* The medium took k bytes. */
void
tsr_sink_took(tsr_sink *s, size_t k);

/* ---- pacing ------------------------------------------------------------------------------ */

/* Take n bytes from the token bucket; a stop is seen within 50 ms. The bucket holds at most
 * one chunk, so no 2 s window carries more than the rate plus one chunk (1/20 s of it). */
tsr_status
tsr_sink_pace(tsr_sink *s, size_t n, tsr_error *err);

/* ---- making frames (team.c) ------------------------------------------------------------- */

/* One frame of `piece` raw bytes at p: f->crc, f->raw, and with a compressor d its deflated
 * payload in zbuf (zcap bytes, tsr_deflate_bound(piece) or more) when that is smaller (f->wire,
 * TSR_FRAME_DEFLATE), else the raw bytes (f->wire = piece). *payload gets what goes on the
 * wire. f->offset is left alone. Fails only as tsr_deflater_run does. */
tsr_status
tsr_frame_make(tsr_deflater *d, const uint8_t *p, size_t piece, uint8_t *zbuf, size_t zcap,
               tsr_frame *f, const uint8_t **payload, tsr_error *err);

/* The team size for tsr_sink_opts.threads = asked: asked itself (at most 64), else
 * TSR_FRAME_THREADS (1..64; anything else is TSR_EINVAL naming it), else by the usable cores:
 * deflating min(cores, 8), crc alone min(cores / 4, 4) (1: no team). */
tsr_status
tsr_team_size(unsigned asked, bool deflate, unsigned *n, tsr_error *err);

/* A frame team: `threads` threads, each with a level-1 compressor when `deflate` (and one for
 * the sending thread), that make the frames (`chunk` raw bytes, the last one of a write
 * shorter) of one write at a time, up to 2 (deflating) or 16 (crc alone) per thread ahead of
 * the sending thread. *out NULL and TSR_OK when no thread could be started (the caller frames
 * alone); TSR_ENOMEM for its buffers (~1 MiB a frame in flight when deflating) or
 * compressors. Used by one sending thread at a time. */
typedef struct tsr_team tsr_team;

tsr_status
tsr_team_new(unsigned threads, bool deflate, size_t chunk, tsr_team **out, tsr_error *err);

/* Stop and join the threads, free everything. NULL is fine. Not during a write. */
void
tsr_team_free(tsr_team *t);

/* Hand the team the frames of p[0, n) (borrowed until tsr_team_end). */
void
tsr_team_start(tsr_team *t, const uint8_t *p, size_t n);

/* Frame i of the write (i = 0, 1, ... in turn: frame i - 1 is on the wire, its payload may
 * be reused), once it is made: like tsr_frame_make. */
tsr_status
tsr_team_take(tsr_team *t, size_t i, tsr_frame *f, const uint8_t **payload, tsr_error *err);

/* End the write, whole or not: frames not yet begun are dropped and those being made are
 * waited for, so the team touches p no more once this returns. */
void
tsr_team_end(tsr_team *t);

/* ---- file (sink_file.c): any descriptor we write(2) to ---------------------------------- */

/* write(2) all n bytes to a file or pipe (blocking descriptors; a non-blocking one someone
 * handed us is waited on). With `count`, every byte taken is counted at once (raw sinks). */
tsr_status
tsr_sink_fd_put(tsr_sink *s, const uint8_t *p, size_t n, bool count, tsr_error *err);

/* Open `spec` as a file: created and truncated, or for a raw resume at `start` > 0 (not
 * framed) kept up to `start` and cut there. The descriptor, or -1 with `err` filled. */
int
tsr_sink_file_open(const char *spec, uint64_t start, bool framed, tsr_error *err);

/* A framed sink on a regular file (a path, or stdout redirected to one): note where our
 * output begins in it, so tsr_sink_file_cut_back can drop half a frame. */
void
tsr_sink_file_locate(tsr_sink *s);

/* Cut a framed regular file back to its last whole unit (a failed write left part of one);
 * true when it now ends there. Never before the header: a file without a whole header is
 * plainly incomplete and an abort frame alone would be garbage. */
bool
tsr_sink_file_cut_back(tsr_sink *s);

/* ---- stdout (sink_stdout.c) --------------------------------------------------------------- */

/* A private duplicate of fd 1, or -1 with `err` filled (a terminal is refused). */
int
tsr_sink_stdout_open(tsr_error *err);

/* When stdout is a pipe: enlarge it, and feed it by vmsplice when the stream is raw. */
void
tsr_sink_stdout_pipe(tsr_sink *s);

/* Feed a raw stdout pipe by reference: whole pages go in with vmsplice(2) and are dropped
 * from our mapping at once (MADV_DONTNEED), so the pages the pipe holds are never written
 * again by us, even if the reader splices them onward to a pipe we cannot see. The partial
 * pages at either end, and a page a short vmsplice split, are written by copy. Non-blocking
 * with a poll, so a stop is seen even while the reader takes nothing; every byte the pipe
 * took is counted. Falls back to write(2) when the kernel refuses vmsplice. */
tsr_status
tsr_sink_splice_put(tsr_sink *s, uint8_t *p, size_t n, tsr_error *err);

/* ---- image files and sidecars (sink_image.c) ------------------------------------------ */

/* SINK_IMG_TIFF or SINK_IMG_BMP by the path's extension (any case), SINK_IMG_RAW for *.raw, else
 * SINK_IMG_NONE. */
enum { SINK_IMG_NONE, SINK_IMG_TIFF, SINK_IMG_BMP, SINK_IMG_RAW };

int
tsr_sink_image_kind(const char *spec);

/* Options an image file or sidecar cannot honour, refused before anything is opened. */
tsr_status
tsr_sink_image_check(const char *spec, const tsr_sink_opts *o, bool framed, tsr_error *err);

/* Open the image writer (SINK_IMAGE) or prepare the sidecar of a raw file (removing an older
 * one; on a resume, the crc32 of the kept bytes); s->img. */
tsr_status
tsr_sink_image_open(tsr_sink *s, const char *spec, const tsr_sink_opts *o, tsr_error *err);

/* SINK_IMAGE: take n stream bytes (rows, possibly cut anywhere) and count them. */
tsr_status
tsr_sink_image_put(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err);

/* A raw file's sidecar: n more bytes went out. */
void
tsr_sink_image_took(tsr_sink *s, const uint8_t *p, size_t n);

/* The end of a complete stream: the image file made valid, or the sidecar written. */
tsr_status
tsr_sink_image_finish(tsr_sink *s, tsr_error *err);

/* Free s->img; an image file not finished is left invalid (abandoned). */
void
tsr_sink_image_free(tsr_sink *s);

/* ---- null (sink_null.c) ------------------------------------------------------------------- */

/* Take n bytes and count them (at the rate, when paced). */
tsr_status
tsr_sink_null_put(tsr_sink *s, size_t n, tsr_error *err);

/* ---- tcp (sink_tcp.c) ------------------------------------------------------------------- */

/* Connect to "tcp://host:port" (CONNECT_TIMEOUT_S, stop-aware): the socket, non-blocking, or
 * -1 with `err` filled. */
int
tsr_sink_tcp_connect(const char *spec, volatile sig_atomic_t *stop, tsr_error *err);

/* send(2) all n bytes of one unit (a header or frame part) on the non-blocking socket. A
 * receiver that takes nothing for stall_s seconds is given up on (the connection is broken:
 * whatever we queue would not get through either, an abort frame included). A stop request
 * does not cut a unit, but then STOP_GRACE_S of a receiver taking nothing is enough. */
tsr_status
tsr_sink_net_put(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err);

/* After the header: read the receiver's resume offset into s->start (refusals and offsets
 * past h->total fail). */
tsr_status
tsr_sink_tcp_resume(tsr_sink *s, const tsr_header *h, tsr_error *err);

/* After the trailer: half-close and wait for the receiver to close. */
tsr_status
tsr_sink_tcp_confirm(tsr_sink *s, tsr_error *err);

#endif
