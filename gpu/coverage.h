/* gpu: the coverage rasterizer's accumulate and resolve on the device (geom/geom.h builds the
 * edges on the host). Same arithmetic as tsr_geom_accumulate and tsr_geom_resolve
 * (geom/coverage_math.h), int64 sums, so the floats are the CPU's bit for bit. Built from
 * coverage.cu with CUDA, else from coverage_none.c (every entry point: "no GPU"). */
#ifndef TSR_GPU_COVERAGE_H
#define TSR_GPU_COVERAGE_H

#include "geom/geom.h"
#include "tiles/tiles.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tsr_gpu tsr_gpu;

/* Enqueue on g's compute stream: zero acc, add every (edge, row) piece of the n edges (one
 * kernel, a thread a piece, int64 atomics; `pieces` is first[n], which the host has), then
 * resolve each row of r into out (one kernel). All pointers are device memory: edges (n),
 * first (n + 1 piece offsets, as tsr_geom_edges.first), acc (r.w * r.h int64 scratch, e.g.
 * from tsr_gpu_alloc), out (r.w * r.h floats). Returns at once; TSR_EIO for a failed launch. */
tsr_status
tsr_gpu_coverage(tsr_gpu *g, const tsr_geom_edge *edges, const uint64_t *first, size_t n,
                 uint64_t pieces, tsr_rect r, int64_t *acc, float *out, tsr_error *err);

/* The whole thing from the host, for tests and tools: a context of its own on device 0, the
 * edge list uploaded, tsr_gpu_coverage, the floats (e->r.w * e->r.h) copied to out. TSR_EINVAL
 * without a device. */
tsr_status
tsr_gpu_coverage_host(const tsr_geom_edges *e, float *out, tsr_error *err);

#endif
