/* tessera.h: the tessera library's public API, the one header it installs.
 *
 * tessera renders a gigantic grayscale raster from a YAML design (docs/format.md §2) and hands its
 * sample bytes out in output order: what a machine controller's DMA loop consumes. A program
 * opens a *job* (a design and options), reads its stream header (sizes, order, fingerprint),
 * then PULLS the stream with tsr_job_read into its own buffers, from byte 0 or from any byte
 * offset (a resume), and may ask the job to stop from another thread:
 *
 *     tsr_error err;
 *     tsr_job *job = tsr_job_open("plate.yaml", NULL, &err);
 *     if (!job) { fprintf(stderr, "%s\n", err.msg); return 2; }
 *     tsr_job_seek(job, resume_at, &err);                 // optional
 *     int64_t n;
 *     while ((n = tsr_job_read(job, buf, sizeof buf)) > 0)
 *         dma_write(buf, (size_t)n);
 *     if (n < 0) fprintf(stderr, "%s\n", tsr_job_error(job)->msg);
 *     tsr_job_close(job);
 *
 * Compile and link with `pkg-config --cflags --libs tessera` (docs/library.md).
 *
 * Conventions (every function below says which apply):
 * - Errors: fallible functions return a tsr_status (TSR_OK = 0) and fill the tsr_error they
 *   were handed (may be NULL): its msg reads "where: what", e.g.
 *   "plate.yaml:12:5: root.children[0].sigma: must be in 0.3..256". Constructors return NULL
 *   with the error filled. tsr_job_read returns the negated status instead.
 * - The library never writes to stdout or stderr, never calls exit() or abort() on bad input,
 *   and installs no signal handlers.
 * - Ownership: strings and buffers passed in are borrowed for the duration of the call only;
 *   what a function returns belongs to the library unless it says otherwise.
 * - Threads: a job is used by one thread at a time (any thread, but calls must not overlap),
 *   except tsr_job_stop and tsr_job_offset, which any thread may call at any time while the
 *   job is open. Separate jobs are independent. A job runs worker threads of its own
 *   (`threads` of them, the calling thread counting as one).
 * - Only symbols declared here are exported; they all start with tsr_ (or TSR_ for macros).
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TSR_API __attribute__((visibility("default")))
#else
#define TSR_API
#endif

/* ---- errors --------------------------------------------------------------------------- */

typedef enum tsr_status {
    TSR_OK = 0,
    TSR_EINVAL,   /* bad design, bad argument: the user's fault (the CLI exits 2) */
    TSR_EPLAN,    /* the memory plan does not fit the memory budget (the CLI exits 2) */
    TSR_ENOMEM,   /* an allocation failed */
    TSR_EIO,      /* a read or write failed (a design or image file) */
    TSR_EINTR,    /* stopped: a signal (CLI) or tsr_job_stop */
    TSR_EINTERNAL /* a broken invariant: a bug */
} tsr_status;

/* A filled-in error: `msg` reads "where: what". */
typedef struct tsr_error {
    tsr_status status; /* the status that was returned with it */
    char msg[1024];    /* NUL-terminated, human-readable */
} tsr_error;

/* A short name for a status ("invalid input", "out of memory", ...): a static string. Any
 * thread. Never fails ("unknown" for a value outside the enum). */
TSR_API const char *
tsr_status_name(tsr_status st);

/* The library's version, "MAJOR.MINOR.PATCH" (a static string; the shared library's SONAME
 * carries MAJOR). Any thread. Never fails. */
TSR_API const char *
tsr_version(void);

/* ---- the stream header (docs/streaming.md §2) ------------------------------------------ */

#define TSR_HEADER_SIZE 75 /* bytes of the packed little-endian header on the wire */
#define TSR_HEADER_EXT 32  /* version 2: bytes that follow those 75 (tsr_header_encode_ext) */
#define TSR_HEADER_PROFILE 1u /* tsr_header.flags: a profile's crop, not a job to record */

/* What a stream is: its sizes, order and the fingerprint that names its bytes. A controller
 * resumes a job only for the same fingerprint and total (docs/streaming.md §7). */
typedef struct tsr_header {
    uint16_t version;        /* 1; 2 when depth < 8, flags, a stage or bit planes:
                              * TSR_HEADER_EXT more bytes */
    uint16_t depth;          /* 8 or 16 bits per sample; 16-bit samples are little-endian;
                              * version 2 also 1, 2, 4: dithered, packed MSB-first, each row
                              * padded to whole bytes */
    uint64_t width, height;  /* of the stream (the rows crop applied) */
    uint8_t order;           /* 0 raster, 1 swath */
    uint8_t serpentine;      /* 0 or 1 */
    uint8_t start;           /* 0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right */
    uint64_t swath_width;    /* = width for raster */
    uint8_t fingerprint[32]; /* SHA-256 of the canonical design + its input files */
    uint64_t total;          /* bytes of the whole stream: height * the row bytes of each
                              * swath, (swath width * depth + 7) / 8 */
    uint8_t dither;          /* version 2: the threshold array, 0 none (depth 8, 16),
                              * 1 threshold, 2 Bayer, 3 blue noise */
    uint8_t dither_log2;     /* its edge is 2^dither_log2 */
    uint8_t flags;           /* version 2: TSR_HEADER_PROFILE */
    uint8_t stage;           /* version 2: the machine's scan (docs/streaming.md §2): bit 0
                              * every other row reversed, bit 1 every other swath's rows,
                              * bit 2 x mirrored, bit 3 y up */
    uint8_t feather;         /* version 2: the overlap's weights, 0 linear, 1 cosine */
    uint32_t overlap;        /* version 2: columns each swath goes on into the next (swath
                              * order), its dose feathered; 0 none */
    uint32_t overscan;       /* version 2: samples padded at both ends of every row */
    uint16_t overscan_value; /* version 2: their sample (a level at depth 1, 2, 4) */
    uint32_t planes;         /* version 2: 0, or rows of a swath sent as `depth` bit planes
                              * together (docs/outputs.md §2) */
} tsr_header;

/* The header as it goes on the wire: magic "TSRA" then the fields, little-endian, packed
 * (what `tessera render --framed` writes first). Any thread. Never fails. */
TSR_API void
tsr_header_encode(const tsr_header *h, uint8_t out[TSR_HEADER_SIZE]);

/* tsr_header_encode writes the first TSR_HEADER_SIZE bytes of any version; a version 2 header
 * goes on with these TSR_HEADER_EXT bytes (docs/streaming.md §2). */
TSR_API void
tsr_header_encode_ext(const tsr_header *h, uint8_t out[TSR_HEADER_EXT]);

/* ---- jobs ------------------------------------------------------------------------------ */

typedef struct tsr_job tsr_job;

/* Every function below takes NULL for its job, header or stats struct without crashing: the
 * ones that return a status return TSR_EINVAL ("...: job is NULL"), tsr_job_offset 0, the
 * void ones do nothing (tsr_job_get_stats zeroes *st when only the job is NULL).
 *
 * Options of a job; a zeroed struct (or NULL) means every default. */
typedef struct tsr_job_opts {
    int64_t rows[2];      /* stream root rows [rows[0], rows[1]) only; rows[1] == 0: all */
    const char *backend;  /* "cpu", "gpu" or "auto" (the GPU when one is usable); NULL: auto */
    int64_t memory;       /* host memory budget in bytes; 0: a quarter of the host's available
                           * memory, at least 2 GiB. The plan must fit it
                           * (TSR_EPLAN names the smallest budget that would) */
    int threads;          /* worker threads, 0..1024; 0: one per core */
    const char *base_dir; /* tsr_job_open_yaml only: where relative image paths start;
                           * NULL: the current directory */
} tsr_job_opts;

/* Open a job for the design file at `path`: load and validate the design, plan its memory,
 * build its tables. Nothing is rendered yet. `path` and `opts` (may be NULL) are borrowed for
 * the call. Returns a job the caller closes with tsr_job_close, or NULL with `err` filled:
 * TSR_EINVAL for an invalid design ("path:line:col: key.path: what"), a design or image file
 * that cannot be opened ("path: cannot open: ...") or bad options, TSR_EIO when reading a
 * file fails, TSR_EPLAN when the design does not fit opts->memory, TSR_ENOMEM. Any thread.
 * Changes nothing process-wide (no malloc option, no default thread stack, no environment
 * read): its worker threads get the stack the design needs through their own attributes;
 * see docs/library.md. */
TSR_API tsr_job *
tsr_job_open(const char *path, const tsr_job_opts *opts, tsr_error *err);

/* The same for a design held in memory: `len` bytes of YAML at `yaml` (need not be
 * NUL-terminated; borrowed for the call). `name` (may be NULL: "<string>") stands for the
 * file in messages ("name:line:col: ..."); relative image paths start at opts->base_dir. */
TSR_API tsr_job *
tsr_job_open_yaml(const char *yaml, size_t len, const char *name, const tsr_job_opts *opts,
                  tsr_error *err);

/* The job's stream header into *h, its fingerprint included (hashing reads every image file
 * of the design again). The owner thread. TSR_EIO naming the file when an image cannot be
 * read, TSR_ENOMEM; *h is unchanged on failure. */
TSR_API tsr_status
tsr_job_header(tsr_job *job, tsr_header *h, tsr_error *err);

/* Copy up to n next bytes of the stream, in output order, into buf (the caller's, n bytes),
 * computing what is needed one band at a time. Returns how many bytes were copied (a short
 * count only at the end of the stream or when a stop or failure cuts a read short), 0 at the
 * end of the stream (and on every read after it), or the negated tsr_status on failure, with
 * the message in tsr_job_error: -TSR_EINTR once tsr_job_stop was called, -TSR_EINVAL for
 * job or buf NULL or n == 0 (0 means the end; these three are not sticky), or what rendering
 * met (-TSR_ENOMEM, -TSR_EIO ...). Failures are sticky: every
 * later read returns the same status; to go on, close the job and open a new one at
 * tsr_job_offset (tsr_job_seek). The owner thread. */
TSR_API int64_t
tsr_job_read(tsr_job *job, void *buf, size_t n);

/* Make the next read start at stream byte `offset` (0 .. total): a resume. Only the band
 * holding it is computed, from its start, so a resume costs at most one band of extra work;
 * seeking within the band already computed costs nothing. The owner thread. TSR_EINVAL
 * ("offset N is past the end of the stream (T bytes)") leaves the position unchanged; a job
 * whose read failed keeps failing. */
TSR_API tsr_status
tsr_job_seek(tsr_job *job, uint64_t offset, tsr_error *err);

/* The offset of the next byte tsr_job_read returns (the bytes handed out so far, plus the
 * start of a seek). Any thread, at any time while the job is open (an atomic read). */
TSR_API uint64_t
tsr_job_offset(const tsr_job *job);

/* Ask the job to stop: the read in progress (or the next one) returns what it already
 * copied, then -TSR_EINTR, within about a tile's row of work; the job stays stopped. Any
 * thread, at any time while the job is open; async-signal-safe (a SIGINT handler may call
 * it). Never fails. */
TSR_API void
tsr_job_stop(tsr_job *job);

/* Counters of a job so far. */
typedef struct tsr_job_stats {
    uint64_t offset;       /* next byte tsr_job_read returns */
    uint64_t total;        /* bytes of the whole stream */
    uint64_t computed;     /* sample bytes of the bands computed (a resumed band in whole) */
    uint64_t bands;        /* bands computed */
    double seconds;        /* wall time spent computing them */
    uint64_t cache_hits, cache_misses, cache_evictions;
    int64_t cache_bytes;   /* tile cache: bytes held now */
    int64_t cache_peak;    /* and at most */
    int64_t memory;        /* the budget the job was planned for */
    int64_t memory_min;    /* the smallest budget its plan fits */
    int64_t band_rows;     /* rows per band: what one computation step produces */
    int threads;           /* worker threads */
    const char *backend;   /* "cpu" or "gpu" (a static string) */
} tsr_job_stats;

/* Fill *st. The owner thread. Never fails. */
TSR_API void
tsr_job_get_stats(tsr_job *job, tsr_job_stats *st);

/* The job's last failure (status TSR_OK and an empty message when none): owned by the job,
 * valid until its next call. The owner thread. */
TSR_API const tsr_error *
tsr_job_error(const tsr_job *job);

/* Stop the job's work and free it, with everything it holds. NULL is fine. The owner thread,
 * and no other thread may call tsr_job_stop or tsr_job_offset on it once this has begun. */
TSR_API void
tsr_job_close(tsr_job *job);

#ifdef __cplusplus
}
#endif

#endif
