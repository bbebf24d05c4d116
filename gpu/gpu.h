/* gpu: the CUDA device side of the GPU backend. Built from the gpu .cu files by nvcc (sm_90)
 * when CUDA is found, else from gpu_none.c, where every entry point reports "no GPU". Callers
 * never #ifdef on CUDA, and this header has no CUDA types.
 *
 * gpu/ executes; gpu/backend.c decides. A context owns one device's streams, a device
 * arena (one allocation made when the context opens, carved by a bump pointer that the engine
 * resets between chunks: no cudaMalloc/cudaFree while rendering), uploads of static design data
 * (tables, images, polygon points, explicit kernels) kept for the context's life, and band
 * buffers copied to the host on a stream of their own.
 *
 * Every launcher enqueues work on the context's compute stream and returns at once: the
 * results are ready for later launches on that stream (stream order), and on the host after
 * tsr_gpu_copy_out's ticket completes. Launchers check the launch (cudaGetLastError); a
 * failure of earlier asynchronous work surfaces at the next call that synchronizes. The
 * arithmetic of every kernel is the CPU reference's, operation for operation, without fused
 * multiply-add (nvcc --fmad=false): results are bit-identical to nodes/ (docs/format.md §9.3).
 *
 * A context is used by one thread at a time. */
#ifndef TSR_GPU_H
#define TSR_GPU_H

#include "nodes/nodes.h"
#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when this build has CUDA and a usable device is present. Thread-safe, cheap after the
 * first call. TSR_NOGPU=1 in the environment makes it false. */
bool
tsr_gpu_available(void);

/* One line describing the device ("NVIDIA H100 80GB HBM3, sm_90, 79 GiB") or why there is
 * none ("built without CUDA", "no CUDA device: ..."). Always NUL-terminates buf. */
void
tsr_gpu_describe(char *buf, size_t n);

/* Self-test: fill n floats on the device with `v` and copy them back into `out`. Exercises
 * the context, a launch and a device-to-host copy. TSR_EINVAL without a device. */
tsr_status
tsr_gpu_fill_test(float *out, size_t n, float v, tsr_error *err);

/* ---- context, arena, uploads ------------------------------------------------------------ */

typedef struct tsr_gpu tsr_gpu;

/* CUDA devices present (0 without a usable one, as tsr_gpu_available says). */
int
tsr_gpu_count(void);

/* The device-to-host ceiling of device `device`: GB/s of a pinned, contiguous copy of `bytes`
 * (memory of its own, outside any context), the best of 5 after a warm-up, CUDA events. What
 * `profile --backend gpu` puts the renderer's rate beside. */
tsr_status
tsr_gpu_d2h_rate(int device, size_t bytes, double *gbps, tsr_error *err);

/* Free and total memory of device `device` now (bytes). TSR_EINVAL without a device. */
tsr_status
tsr_gpu_meminfo(int device, size_t *free_bytes, size_t *total_bytes, tsr_error *err);

/* Open a context on device `device` (0 .. tsr_gpu_count() - 1) with an arena of `arena` bytes
 * (one cudaMalloc). NULL on failure (no device: TSR_EINVAL; the arena cannot be had:
 * TSR_ENOMEM naming the bytes). */
tsr_gpu *
tsr_gpu_open(int device, size_t arena, tsr_error *err);

/* Make g's device the calling thread's current one: a context is used by one thread at a
 * time, but not always the one that opened it (--gpus: a thread per device). Cheap. */
void
tsr_gpu_bind(const tsr_gpu *g);

/* The host team the context may lend its host work to (a chunk's polygons are made and united
 * in pieces on it, geom/geom.h tsr_geom_edges_pieces): copied; NULL: the calling thread alone.
 * The GPU backend lends its host evaluator's team (cpu/cpu.h). */
struct tsr_geom_team;
void
tsr_gpu_set_team(tsr_gpu *g, const struct tsr_geom_team *team);

/* Wait for all work, free everything the context holds (arena, uploads, streams, events,
 * host registrations). NULL is fine. */
void
tsr_gpu_close(tsr_gpu *g);

/* `bytes` of device memory from the arena, 256-byte aligned, valid until the arena is reset
 * below it. NULL with TSR_ENOMEM when the arena is full ("gpu: arena full: ..."). */
void *
tsr_gpu_alloc(tsr_gpu *g, size_t bytes, tsr_error *err);

/* `bytes` from the other end of the arena, kept until tsr_gpu_release_kept whatever resets
 * happen meanwhile (a node several parents read, computed once per chunk). NULL with
 * TSR_ENOMEM when the two ends would meet. */
void *
tsr_gpu_alloc_kept(tsr_gpu *g, size_t bytes, tsr_error *err);

void
tsr_gpu_release_kept(tsr_gpu *g);

/* `bytes` from the kept end for the context's life (a small node computed once and kept on the
 * device): tsr_gpu_release_kept never frees it. NULL with TSR_ENOMEM when it does not fit. */
void *
tsr_gpu_alloc_resident(tsr_gpu *g, size_t bytes, tsr_error *err);

/* The arena's fill level, and a reset to an earlier level. Memory above the mark may be reused
 * by later launches at once: stream order puts them after every earlier reader. */
size_t
tsr_gpu_mark(const tsr_gpu *g);

void
tsr_gpu_reset(tsr_gpu *g, size_t mark);

/* Most arena bytes in use at once so far. */
size_t
tsr_gpu_arena_peak(const tsr_gpu *g);

/* A device copy of `bytes` bytes at `host`, uploaded on first use and kept (keyed by the host
 * pointer, which must stay valid and unchanged for the context's life: design tables, images,
 * points, kernels). Outside the arena. NULL with err filled on failure. */
const void *
tsr_gpu_resident(tsr_gpu *g, const void *host, size_t bytes, tsr_error *err);

/* ---- float regions ---------------------------------------------------------------------------- */

/* Pixels of a node over rect r (node coordinates), r.w * r.h floats on the device, row-major,
 * stride r.w. */
typedef struct tsr_gpu_buf {
    tsr_rect r;
    float *px;
} tsr_gpu_buf;

/* Where the root's samples go (docs/format.md §7: range, calibration, depth): the device band
 * `dst` at row pitch `pitch` bytes; pixel (x, y) of the root lands at byte (x - x0) * bps of
 * band row y - y0, or of row h - 1 - (y - y0) when `up`. The launch that finishes a root chunk
 * (its base when it has no edge, else its last edge) takes one of these and writes samples
 * instead of floats: the root's floats never reach device memory. */
typedef struct tsr_gpu_out {
    const tsr_output *o;
    uint8_t *dst;
    size_t pitch;
    int64_t x0, y0, h;
    bool up;
} tsr_gpu_out;

/* The node's base over out.r: fill, then its source (docs/format.md §4). With `to` (may be NULL)
 * the samples go there and buf.px is not written (it may be NULL). */
tsr_status
tsr_gpu_base(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf buf, const tsr_gpu_out *to,
             tsr_error *err);

/* out(x, y) = period[floor_mod(y, ph)][floor_mod(x, pw)]: a periodic node from its period
 * tile (device, pw * ph floats). */
tsr_status
tsr_gpu_periodic(tsr_gpu *g, const float *period, int64_t pw, int64_t ph, tsr_gpu_buf out,
                 tsr_error *err);

/* Previews (gpu/preview.cu): host[y * nb + b], nb = ceil(in.r.w / kx), the sum in double, left
 * to right, of row y of `in` over columns [b * kx, min((b + 1) * kx, in.r.w)); its device
 * scratch comes from the arena (the caller's mark and reset free it). Synchronous. */
tsr_status
tsr_gpu_rowsums(tsr_gpu *g, tsr_gpu_buf in, int64_t kx, double *host, tsr_error *err);

/* Copy host floats (out.r.w * out.r.h) into out (a node the host computed). Synchronous with
 * respect to `host`: it may be freed on return. */
tsr_status
tsr_gpu_upload(tsr_gpu *g, tsr_gpu_buf out, const float *host, tsr_error *err);

/* Copy the pixels of rect r (node coordinates) that both buffers hold from src to dst, on the
 * compute stream (device to device: a cached tile into a child region, or back). */
tsr_status
tsr_gpu_copy_rect(tsr_gpu *g, tsr_gpu_buf dst, tsr_gpu_buf src, tsr_rect r, tsr_error *err);

/* Copy a region back to the host (synchronous; tests and previews). */
tsr_status
tsr_gpu_download(tsr_gpu *g, tsr_gpu_buf in, float *host, tsr_error *err);

/* ---- edges: each computes edge e's layer over P.r and blends it into P (mask, blend) ---------
 * `child` holds the child's pixels over (at least) the bounding box of what e->trait->need()
 * returns for P.r; pixels outside it are never read. P and child never overlap. With `to`
 * (may be NULL: the last edge of a root chunk) every pixel of P.r goes out as a sample, blended
 * or not, and P itself is not written. One launcher family per gpu/<family>.cu, named by the
 * trait table's gpu column (nodes/traits.def), each with a `_can` saying whether an edge runs
 * on the device (false: its node is computed on the host; repeat's lattices that must be
 * walked in a reduced basis with order-dependent overlaps). */

typedef tsr_status (*tsr_gpu_edge_fn)(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P,
                                      tsr_gpu_buf child, const tsr_gpu_out *to, tsr_error *err);

#define TSR_GPU_FAMILY(f)                                                                       \
    tsr_status tsr_gpu_##f(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,     \
                           const tsr_gpu_out *to, tsr_error *err);                               \
    bool tsr_gpu_##f##_can(const tsr_edge *e);
TSR_GPU_FAMILY(pattern)
TSR_GPU_FAMILY(repeat)
TSR_GPU_FAMILY(distance)
TSR_GPU_FAMILY(blur)
TSR_GPU_FAMILY(rank)
TSR_GPU_FAMILY(transform)
#undef TSR_GPU_FAMILY

/* The trait table's GPU column (gpu/traits.c): per trait id its launcher and `_can`, both NULL
 * for a trait whose gpu column says `none`. */
typedef struct tsr_gpu_trait {
    tsr_gpu_edge_fn launch;
    bool (*can)(const tsr_edge *e);
} tsr_gpu_trait;

extern const tsr_gpu_trait tsr_gpu_traits[TSR_TRAIT_COUNT];

/* Whether edge e runs on the device (its trait has a launcher that takes it). */
bool
tsr_gpu_edge_can(const tsr_edge *e);

/* The source table's GPU column (gpu/traits.c): per source kind its family's launcher (the
 * base: fill, then the source) and `_can` (false: the node is drawn on the host; a polygon of
 * many points), both NULL for a kind whose gpu column says `none`. */
typedef tsr_status (*tsr_gpu_base_fn)(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out,
                                      const tsr_gpu_out *to, tsr_error *err);

typedef struct tsr_gpu_source {
    tsr_gpu_base_fn launch;
    bool (*can)(const tsr_source *s);
} tsr_gpu_source;

#define X(ID, params, key, value, family, gpu, caps)                                             \
    tsr_status tsr_gpu_src_##gpu(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out,              \
                                 const tsr_gpu_out *to, tsr_error *err);                       \
    bool tsr_gpu_src_##gpu##_can(const tsr_source *s);
#include "nodes/sources.def"
#undef X

extern const tsr_gpu_source tsr_gpu_sources[TSR_SRC_COUNT];

/* Whether node n's base (its source) is drawn on the device. */
bool
tsr_gpu_source_can(const tsr_source *s);

/* Whether the device computes node n: its source and every edge have kernels that take them
 * (the tables' GPU columns). When not, why (for people: "trait warp has no GPU kernel") into
 * why[0 .. len) (why may be NULL). The GPU backend computes such a node on the host: the
 * same bits, and `check --tree` and `profile` say so. */
bool
tsr_gpu_node_why(const tsr_node *n, char *why, size_t len);

/* Whether this build has the CUDA side (false: gpu_none.c; no device is then ever usable). */
bool
tsr_gpu_built(void);

/* ---- output ------------------------------------------------------------------------------ */

/* Root values `in` as samples to `to` (a root chunk whose last stage wrote floats: a node the
 * host computed, or an edge that did not reach the chunk). */
tsr_status
tsr_gpu_convert(tsr_gpu *g, tsr_gpu_buf in, const tsr_gpu_out *to, tsr_error *err);

/* Rect r (root coordinates) of the band at `to` from a periodic root's converted period:
 * `period` (device, pw x ph samples of to->o's depth, row pitch pw samples) has its origin at
 * root pixel (px, py), and sample (x, y) is period[floor_mod(y - py, ph)][floor_mod(x - px,
 * pw)], the bytes the host's row copies write (engine.c). */
tsr_status
tsr_gpu_period_fill(tsr_gpu *g, const uint8_t *period, int64_t pw, int64_t ph, int64_t px,
                    int64_t py, tsr_rect r, const tsr_gpu_out *to, tsr_error *err);

/* Fill `bytes` of device memory with the samples of a constant (the pipeline milestone). */
tsr_status
tsr_gpu_memset(tsr_gpu *g, void *dst, int value, size_t bytes, tsr_error *err);

/* Make host memory [p, p + bytes) pinned for copies (cudaHostRegister; the range stays
 * registered until the context closes). Such memory must never be donated to a pipe. */
tsr_status
tsr_gpu_register(tsr_gpu *g, void *p, size_t bytes, tsr_error *err);

/* Undo tsr_gpu_register for the range starting at p (after the copies into it are waited
 * for, and before the memory is unmapped). Unknown p: nothing. */
void
tsr_gpu_unregister(tsr_gpu *g, void *p);

/* Enqueue a copy of `bytes` from device `src` to host `dst` after everything enqueued so far
 * on the compute stream, on the copy stream; *ticket names its completion. */
tsr_status
tsr_gpu_copy_out(tsr_gpu *g, void *dst, const void *src, size_t bytes, uint64_t *ticket,
                 tsr_error *err);

/* Block until the copy `ticket` (and every earlier one) is done. Fails with TSR_EIO on any
 * device error met by the work before it (sticky errors included). */
tsr_status
tsr_gpu_wait(tsr_gpu *g, uint64_t ticket, tsr_error *err);

/* Make the compute stream wait (on the device) until copy `ticket` is done: a band buffer is
 * reused only after its copy. */
tsr_status
tsr_gpu_after(tsr_gpu *g, uint64_t ticket, tsr_error *err);

/* Block until the compute stream is idle; TSR_EIO on a device error. */
tsr_status
tsr_gpu_sync(tsr_gpu *g, tsr_error *err);

/* ---- stage timing (profile) -------------------------------------------------------------- */

/* What the device's time is spent on: four stages of its own, then one per trait. */
enum {
    TSR_GPU_BASE,     /* fills and sources */
    TSR_GPU_CONVERT,  /* floats to samples, when not fused into a trait's launch */
    TSR_GPU_COPIES,   /* device tile cache copies, periodic nodes, host uploads */
    TSR_GPU_PERIOD,   /* a periodic root's samples from its period (tsr_gpu_period_fill) */
    TSR_GPU_TRAIT0,   /* + trait id: that trait's launches */
    TSR_GPU_STAGES = TSR_GPU_TRAIT0 + TSR_TRAIT_COUNT
};

/* The stage's name ("base", or the trait's: "blur"). */
static inline const char *
tsr_gpu_stage_name(int stage)
{
    static const char *const names[TSR_GPU_TRAIT0] = {"base", "convert", "copies", "period"};
    if (stage >= 0 && stage < TSR_GPU_TRAIT0)
        return names[stage];
    return stage < TSR_GPU_STAGES ? tsr_traits[stage - TSR_GPU_TRAIT0]->name : "?";
}

/* Time the work enqueued on the compute stream between begin and end as `stage`: CUDA events
 * around it, read once they complete (they cost no synchronisation). begin returns a timer, or
 * -1 when too many are in flight (that work goes untimed). */
int
tsr_gpu_stage_begin(tsr_gpu *g);

void
tsr_gpu_stage_end(tsr_gpu *g, int timer, int stage);

/* Seconds of device time per stage so far (waits for the timed work still in flight). */
void
tsr_gpu_stage_seconds(tsr_gpu *g, double out[TSR_GPU_STAGES]);

/* Test hook: make the next tsr_gpu_wait/tsr_gpu_sync fail as a sticky device error would
 * (TSR_FAULT=gpu in the engine). */
void
tsr_gpu_inject_fault(tsr_gpu *g);

#endif
