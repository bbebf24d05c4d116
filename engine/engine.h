/* engine: plans and runs a render. It owns the tile cache, schedules tile computation on a
 * backend (CPU threads or the GPU), assembles root bands in output order, converts them to
 * samples and hands them to a sink through the writer thread.
 *
 * One tsr_engine renders one design; it borrows the design, which must outlive it. An engine
 * is used by one caller thread at a time (it runs its own worker threads inside). */
#ifndef TSR_ENGINE_H
#define TSR_ENGINE_H

#include "gpu/gpu.h"
#include "nodes/nodes.h"
#include "stream/stream.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TSR_DEFAULT_MEMORY ((int64_t)2 << 30) /* the least --memory default: 2 GiB */

/* The --memory default (tsr_engine_opts.memory 0): a quarter of the host's available memory
 * (/proc/meminfo MemAvailable, read once), at least TSR_DEFAULT_MEMORY. A quarter leaves the
 * rest to the sink's consumer, the page cache and other jobs; 2 GiB was the fixed default,
 * which starved the several-GPU backend's bands on hosts of 100+ GiB. */
int64_t
tsr_plan_default_memory(void);

typedef struct tsr_engine tsr_engine;

typedef struct tsr_engine_opts {
    const char *backend; /* "cpu", "gpu" or "auto"; NULL = "auto" */
    int threads;         /* worker threads; 0 = one per core, or as many as `memory` fits
                          * (tsr_plan.threads says how many) */
    int64_t memory;      /* host memory budget in bytes; 0 = tsr_plan_default_memory() */
    int64_t tile;        /* 0, or a tile edge forced on every node (tuning and invariance tests) */
    int64_t rows[2];     /* --rows Y0:Y1 crop of the root; rows[1] == 0: all rows */
    int64_t gpu_memory;  /* device memory budget of the GPU backend; 0 = 90 % of what is free */
    int64_t gpu_chunk;   /* 0, or root pixels per GPU chunk (tuning and invariance tests) */
    int gpu_device;      /* the CUDA device of the GPU backend (0 .. count - 1) */
    int gpus;            /* --gpus: 0 or 1 one backend; N > 1 bands on N GPU backends (one per
                          * device, round robin over the devices there are: dist/gpus.c);
                          * -1 every device */
    bool direct;         /* compute every node directly, never copying a period (plan.c):
                          * the reference the periodic shortcut is tested against */
    bool plan_only;      /* plan, and refuse what does not fit, but decode no image and build
                          * no table: for tsr_engine_print_check (`tessera check`); every
                          * render then fails with TSR_EINVAL */
    volatile sig_atomic_t *stop; /* borrowed, may be NULL: a stop request every computation
                                  * polls (each tile, and rows or row blocks inside long
                                  * loops: tiles/stop.c); non-zero abandons what is being
                                  * computed, nothing unfinished is cached, and the call
                                  * (stream, render_rect, drain, preview) fails with TSR_EINTR
                                  * "interrupted" within about a tile's row. Once set it must
                                  * stay set until the call returns. */
    const struct tsr_backend_ops *ops; /* NULL, or the backend to use whatever `backend` says:
                                        * one a caller injects (dist/: bands on several GPUs,
                                        * rank 0's of `mpirun tessera render`) */
} tsr_engine_opts;

/* The memory plan (docs/format.md §1): what a run holds at most, in bytes. */
typedef struct tsr_plan {
    int64_t bands;      /* in-flight band buffers (computing + queued for the sink) */
    int64_t per_thread; /* worst-case working set of one worker: scratch, pinned tiles */
    int64_t threads;
    int64_t fixed;      /* tables, decoded images, bookkeeping */
    int64_t cache;      /* what is left for the tile cache */
    int64_t minimum;    /* the smallest --memory that fits (with an empty cache) */
    int64_t band_rows;  /* rows per band */
    int64_t budget;     /* the --memory it was planned for */
    int64_t cores;      /* the threads a thread per core would be: more than `threads` when
                         * no thread count was given and the budget fits fewer (plan.c) */
} tsr_plan;

typedef struct tsr_engine_stats {
    uint64_t hits, misses, evictions, waits, overflow;
    int64_t cache_bytes, cache_peak;
    double *node_seconds;  /* per design node id: seconds spent computing its tiles (self) */
    size_t nnodes;
    double trait_seconds[TSR_TRAIT_COUNT]; /* per trait id: seconds in layer() + blend, all
                                            * threads */
    double busy_seconds;   /* the CPU backend's threads' time inside band work, summed over
                            * them (what waits, on cache tiles or for the team, is left out) */
    /* The GPU backend (all zero on the CPU): its device tile cache's counters and bytes, and
     * its device memory plan (the arena, its most bytes in use at once). */
    uint64_t dev_hits, dev_misses, dev_evictions;
    int64_t dev_cache_bytes, dev_cache_budget, dev_arena, dev_arena_peak;
    int dev_bands;               /* bands in flight on the device at once (per engine) */
    double gpu_stage_seconds[TSR_GPU_STAGES]; /* device time per stage (gpu/gpu.h) */
    double gpu_host_seconds;     /* the CPU's time on nodes of class host */
    /* --gpus (dist/gpus.c): each engine's device, the bytes of the bands it computed and
     * its time computing them; nengines 0 otherwise */
    int nengines;
    struct {
        int device;
        uint64_t bytes;
        double busy_seconds;
    } engines[64];
} tsr_engine_stats;

/* Load and validate a design, reading only its images' headers: tsr_engine_new decodes them
 * (and builds the traits' tables) once its memory plan has counted them, so a design that
 * does not fit --memory is refused before any of it is made. Images of named nodes nobody
 * refs are never decoded. NULL on failure with err filled (TSR_EINVAL for design errors:
 * "file:line:col: key.path: what"). */
tsr_design *
tsr_engine_load(const char *path, tsr_error *err);

/* The same for `len` bytes of YAML in memory (tsr_design_load_string: `name` may be NULL,
 * relative image paths start at `base_dir`, NULL: the current directory). */
tsr_design *
tsr_engine_load_string(const char *text, size_t len, const char *name, const char *base_dir,
                       tsr_error *err);

/* Make an engine for design `d` (borrowed). Plans memory first: TSR_EPLAN when the plan does
 * not fit opts->memory, naming the smallest budget that would, or when its threads' stacks and
 * the plan's minimum do not fit an address-space limit (ulimit -v), naming the remedy. Then
 * completes a design tsr_engine_load left unbuilt (tsr_design_build: decodes its images,
 * builds its tables), so two engines must not be made at once on one such design. NULL on
 * failure. Changes nothing process-wide: the engine's worker threads get the stack the
 * design's deepest chain needs through their own attributes (tsr_engine_thread_stack), and
 * malloc's settings and the default thread stack are the program's to choose (the `tessera`
 * command sets both for itself: cli/main.c). */
tsr_engine *
tsr_engine_new(const tsr_design *d, const tsr_engine_opts *opts, tsr_error *err);

/* The stack size engine e gives the threads it starts (from its design's depth). */
size_t
tsr_engine_thread_stack(const tsr_engine *e);

/* Raise the default stack size of threads the process creates from now on to at least
 * `bytes` (glibc's pthread_setattr_default_np); never lowers it, and later engines keep at
 * least this much (the engine's own workers are created with their design's size whatever
 * the default). Threads that exist already keep their stacks: an application whose own
 * threads call tessera should call this before it starts them. Whatever the stacks, a render that runs out
 * fails with TSR_ENOMEM naming the remedy, never with SIGSEGV. Thread-safe. Fails
 * (TSR_ENOMEM, TSR_EINVAL) only when glibc refuses. */
tsr_status
tsr_engine_thread_stacks(size_t bytes, tsr_error *err);

void
tsr_engine_free(tsr_engine *e);

/* The design the engine renders (borrowed from its caller). */
const tsr_design *
tsr_engine_design(const tsr_engine *e);

/* The memory plan the engine runs under. */
const tsr_plan *
tsr_engine_plan(const tsr_engine *e);

/* Name of the backend in use ("cpu", "gpu"). */
const char *
tsr_engine_backend(const tsr_engine *e);

/* How the backend keeps node n, for people (the GPU's: "device", "periodic", "host", ...
 * gpu/backend.c), or NULL when it has nothing to say (the CPU). */
const char *
tsr_engine_node_class(const tsr_engine *e, const tsr_node *n);

/* Threads the CPU backend uses. */
int
tsr_engine_threads(const tsr_engine *e);

/* Whether node n repeats (engine/plan.c): true with its period in p[0] x p[1] and, in *in
 * (may be NULL), the rect of the node inside which it does (the whole node, or an interior:
 * a lattice's region, a distance or blur's border cut off). One period is computed and the
 * interior copied from it; a root periodic over its whole rect streams by copying sample
 * rows. */
bool
tsr_engine_period(const tsr_engine *e, const tsr_node *n, int64_t p[2], tsr_rect *in);

/* Whether node n is computed where its only reader, a pattern edge, fetches it, never cached
 * (engine/plan.c). */
bool
tsr_engine_uncached(const tsr_engine *e, const tsr_node *n);

/* Root values of rect r (root coordinates, inside the root) into out (r.w * r.h floats,
 * row-major). The crop of opts->rows does not apply. */
tsr_status
tsr_engine_render_rect(tsr_engine *e, tsr_rect r, float *out, tsr_error *err);

/* Sample bytes of the whole stream (the crop applied). */
uint64_t
tsr_engine_stream_bytes(const tsr_engine *e);

/* The stream geometry of design d streamed over `rows` rows (stream/stream.h: swaths,
 * overlap, overscan, planes), and its bytes (what tessera profile counts a row at). */
void
tsr_design_geom(const tsr_design *d, int64_t rows, tsr_stream_geom *g);

uint64_t
tsr_design_stream_bytes(const tsr_design *d, int64_t rows);

/* Stream the root (cropped by opts->rows) in output order to `sink` (borrowed) from byte
 * offset `start` (0 for a fresh job). Progress, if `progress` is non-NULL, is called from the
 * caller's thread after each band with the bytes produced so far. */
typedef void (*tsr_progress_fn)(void *ctx, uint64_t done, uint64_t total);
tsr_status
tsr_engine_stream(tsr_engine *e, tsr_sink *sink, uint64_t start, tsr_progress_fn progress,
                  void *ctx, tsr_error *err);

/* tsr_engine_stream with a stop request: */
typedef struct tsr_stream_opts {
    uint64_t start;               /* first byte to deliver; the bands before it are skipped
                                   * without computing, the band holding it is computed and
                                   * cut, so a resume costs at most one band of extra work */
    tsr_progress_fn progress;     /* may be NULL */
    void *ctx;                    /* for progress */
    volatile sig_atomic_t *stop;  /* may be NULL; read between bands: non-zero ends the
                                   * stream with TSR_EINTR "interrupted" after the band being
                                   * computed. Give the same flag to the engine
                                   * (tsr_engine_opts.stop) so the band itself is abandoned
                                   * within a tile's row, and to the sink (tsr_sink_opts.stop)
                                   * so a paced or blocked writer stops too. */
    _Atomic uint64_t *computed;   /* may be NULL: raised to the stream offset up to which
                                   * bytes are computed, during each band as its parts (the
                                   * CPU's root rects) finish; what the CLI's progress
                                   * (cli/progress.h: tsr_progress_opts.computed) reads */
} tsr_stream_opts;

tsr_status
tsr_engine_stream_ex(tsr_engine *e, tsr_sink *sink, const tsr_stream_opts *o, tsr_error *err);

/* ---- render to an output: the policy `tessera render` runs (engine/render.c) ---------- */

/* Whether a resume may start at stream byte `offset`: TSR_EINVAL "offset N is past the end of
 * the stream (T bytes)" when it lies beyond the stream's total, else TSR_OK (total itself is a
 * finished stream: nothing left to send). The one check every resume goes through: the CLI's
 * --resume-at (tsr_engine_render_to) and the library's tsr_job_seek. The fingerprint is the
 * receiver's check (controller/: it answers the offset only for the same fingerprint and
 * total), not the sender's. */
tsr_status
tsr_engine_resume_check(const tsr_engine *e, uint64_t offset, tsr_error *err);

/* What to render to: the output's -o spelling and the stream's options. */
typedef struct tsr_render_opts {
    const char *out;              /* -o spelling (tsr_sink_open_ex); NULL = "-" (stdout) */
    bool have_resume;             /* resume_at was given (--resume-at) */
    uint64_t resume_at;           /* first byte to send; tcp: ignored, the receiver answers */
    bool framed, deflate;         /* framed stream (always on for tcp), deflated frames */
    double rate;                  /* sample bytes per second, 0 = unpaced */
    double stall_s;               /* tcp stall limit, 0 = the sink's default */
    volatile sig_atomic_t *stop;  /* may be NULL: the stop request (as tsr_stream_opts.stop);
                                   * a signal number (SIGINT, SIGTERM) names the reason the
                                   * abort frame gives */
    _Atomic uint64_t *computed;   /* may be NULL: as tsr_stream_opts.computed; set to the
                                   * start before `opened` is called */
    /* Hooks, may be NULL, called on the caller's thread: `opened` once the sink is open and
     * its start known (before the first byte), `ending` after the trailer or the abort
     * frame and before the sink is closed (ok: the stream and its trailer went out).
     * What a caller shows (progress, the signal handler's view of the sink) starts and ends
     * there; the sink is borrowed for that span. */
    void (*opened)(void *ctx, tsr_sink *s);
    void (*ending)(void *ctx, tsr_sink *s, bool ok);
    void *ctx;
    bool profile;                 /* a profile's crop, not the job: its framed header says so
                                   * (version 2, TSR_HEADER_PROFILE), so that a controller
                                   * checks and drops it instead of recording it */
} tsr_render_opts;

/* Where a render ended. */
typedef enum tsr_render_step {
    TSR_RENDER_DONE = 0, /* every byte and the trailer went out, the sink closed cleanly */
    TSR_RENDER_RESUME,   /* resume_at is past the end (tsr_engine_resume_check): nothing opened */
    TSR_RENDER_HEADER,   /* the framed header could not be made (an image unreadable) */
    TSR_RENDER_OPEN,     /* the output could not be opened (or the receiver refused) */
    TSR_RENDER_STREAM,   /* rendering or writing failed or was stopped: the sink was aborted */
    TSR_RENDER_CLOSE,    /* everything was written but closing the output failed */
} tsr_render_step;

/* How the output can be completed after a render that did not finish. */
typedef enum tsr_resume_how {
    TSR_RESUME_NONE = 0, /* nothing to resume from (nothing went out, or it finished) */
    TSR_RESUME_AT,       /* run again from byte `offset` (--resume-at) */
    TSR_RESUME_RECEIVER, /* run again: the receiver answers the offset (tcp) */
} tsr_resume_how;

/* What a render did: the CLI turns it into messages and an exit status. */
typedef struct tsr_render_result {
    tsr_render_step step;  /* where it ended */
    bool stopped;          /* a stop request (opts.stop) ended it */
    bool tcp;              /* the output is a tcp receiver */
    tsr_resume_how resume; /* with step STREAM: how to go on */
    uint64_t total;        /* sample bytes of the whole stream */
    uint64_t start;        /* the byte the stream started at (resume_at or the receiver's) */
    uint64_t offset;       /* the byte after the last one the sink delivered */
    uint64_t underruns;    /* a paced sink's underruns, and the seconds it starved */
    double starved_s;
    double seconds;        /* from the open sink to the stream's end */
} tsr_render_result;

/* Render the stream to opts->out: check the resume offset, make the header when framed, open
 * the sink (on tcp the receiver answers the start), stream from the start, then the trailer
 * and close; on a failure or a stop, an abort frame saying why (framed outputs: the error, or
 * "interrupted by SIGINT"/"SIGTERM") instead of a trailer, and the sink closed. Fills *res
 * (every field, whatever the outcome) and returns TSR_OK only for step DONE; on failure err
 * holds the failure (TSR_EINTR "interrupted" for a stop). Prints nothing. The engine's
 * caller thread; opts and the hooks are borrowed for the call. */
tsr_status
tsr_engine_render_to(tsr_engine *e, const tsr_render_opts *opts, tsr_render_result *res,
                     tsr_error *err);

/* The framed stream's header for this engine's stream (docs/streaming.md): sizes, order and the
 * fingerprint, SHA-256 over the canonical design dump (tsr_design_dump with the design's and
 * nodes' `name` and `tile` left out, node names in edge comments dropped, image paths replaced
 * by their index), then the stream's crop ("stream: rows [Y0, Y1)") and, when the design holds
 * a blur (not bit-identical across backends), the backend; followed by the SHA-256 of every
 * image file's bytes in node order. Reads the image files again: TSR_EIO when one cannot be
 * read. */
tsr_status
tsr_engine_header(const tsr_engine *e, tsr_header *h, tsr_error *err);

/* The same for design d streamed over root rows [rows0, rows1) (what an engine's crop makes):
 * a rank that has no engine of its own checks against it. */
tsr_status
tsr_design_header(const tsr_design *d, int64_t rows0, int64_t rows1, tsr_header *h,
                  tsr_error *err);

/* Render root rect r (inside the root) to samples and discard them: what `tessera profile`
 * measures. Returns the sample bytes produced in *bytes. */
tsr_status
tsr_engine_drain(tsr_engine *e, tsr_rect r, uint64_t *bytes, tsr_error *err);

/* Counters so far; node_seconds points into the engine (valid until the next call). */
tsr_engine_stats
tsr_engine_get_stats(tsr_engine *e);

/* ---- previews and plans -------------------------------------------------------------- */

/* Render region r of the root, average scale x scale blocks in double, convert at `depth`
 * (8 or 16) with the design's range and calibration, write a gray PNG to `path`. */
tsr_status
tsr_engine_preview(tsr_engine *e, tsr_rect r, int64_t scale, int depth, const char *path,
                   tsr_error *err);

/* Samples a fast preview takes in each block. */
#define TSR_PREVIEW_FAST_SAMPLES 4

/* A preview's choices: */
typedef struct tsr_preview_opts {
    int64_t scale;          /* K >= 1 */
    int depth;              /* 8 or 16 */
    bool fast;              /* approximate: each output pixel is the mean of the values of
                             * TSR_PREVIEW_FAST_SAMPLES region pixels of its block, scattered
                             * by a hash (docs/semantics.md gives the formula), instead of the
                             * block's average; only those pixels (and the child tiles under
                             * them) are computed; the exact preview instead where that is
                             * estimated cheaper (tsr_preview_samples). K = 1 gives the exact
                             * preview. */
    _Atomic uint64_t *done; /* may be NULL: work done so far, for a progress display: region
                             * pixels rendered (W x H in all), or with `fast` samples taken
                             * (ceil(W/K) x ceil(H/K) x TSR_PREVIEW_FAST_SAMPLES); bumped per
                             * render call or sample */
} tsr_preview_opts;

/* The tile edge (tsr_engine_opts.tile) an engine for fast previews of design d is best made
 * with: a small one where no blur or distance reads a neighbourhood, else 0 (the design's
 * own tiles). Tiles never change a value (the engine is tile-invariant), only the cost. */
int64_t
tsr_preview_fast_tile(const tsr_design *d);

/* tsr_preview_fast_tile for a fast preview of region r at `scale` by an engine made with
 * opts o: 0 also where the exact preview is estimated cheaper (tsr_preview_samples), or o's
 * backend would be the GPU or an injected one (they preview exactly), which run best on the
 * design's tiles. */
int64_t
tsr_preview_fast_tile_for(const tsr_design *d, const tsr_engine_opts *o, tsr_rect r,
                          int64_t scale);

/* Whether a preview of region r at `scale` asked for with `fast` samples (true), or computes
 * the exact preview because that is estimated cheaper on engine e's tiles, scale is 1, or e's
 * backend takes no batches of samples (the GPU: its exact preview runs at its render's rate):
 * --fast is never the slower way (docs/semantics.md gives the estimate). */
bool
tsr_preview_samples(const tsr_engine *e, tsr_rect r, int64_t scale);

/* tsr_engine_preview with those choices. */
tsr_status
tsr_engine_preview_ex(tsr_engine *e, tsr_rect r, const tsr_preview_opts *o, const char *path,
                      tsr_error *err);

/* `tessera check`: the summary (sizes, stream bytes, memory plan), then warnings for legal
 * designs that are almost certainly not meant (a pattern wholly outside its parent, a shape
 * whose value is its node's fill, aa on shapes far larger than a tile, added or averaged
 * distance copies whose profile is not 0 at dmax); with `tree`, the node table and the
 * design dump after them. */
void
tsr_engine_print_check(tsr_engine *e, FILE *f, bool tree);

/* A node's name for people: a named node's name; an inline node's key path without its
 * ".node", with its source ("root.children[19] (circle r=75000)"). */
void
tsr_node_label(const tsr_node *n, char *buf, size_t size);

/* A byte count for people: "512 bytes", "9.8 KiB", "1.5 GiB" (binary units, one decimal), so
 * that a small amount never prints as "0.0 MiB". */
void
tsr_human_bytes(char *buf, size_t n, double bytes);

/* Parse a byte size: "64M", "4G", "512MiB", "1e9", plain bytes. SI K/M/G = 1e3/1e6/1e9;
 * KiB/MiB/GiB binary; a trailing "B" is ignored. The number is a plain decimal (see
 * tsr_parse_decimal). False on anything else ("0x40M", "+5", " 5", "inf", and a rate such as
 * "64MB/s"). */
bool
tsr_parse_size(const char *s, double *out);

/* Parse a rate in bytes per second: a size as tsr_parse_size takes it, with an optional
 * trailing "/s" ("10MB/s", "1G"). */
bool
tsr_parse_rate(const char *s, double *out);

/* Parse a plain decimal: digits with an optional fraction and exponent ("30", "0.5", ".5",
 * "1e3"), nothing else: no sign, blanks, hex, inf or nan. False on anything else. */
bool
tsr_parse_decimal(const char *s, double *out);

#endif
