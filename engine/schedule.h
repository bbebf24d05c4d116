/* The band schedule (engine-internal; notes/gpu-architecture.md §2.3): which tiles of which
 * node must exist to compute some root chunks, resolved on the host before anything computes.
 *
 * It is the CPU recursion (engine/compute.c) written as a walk instead of a call tree: from the
 * root towards the leaves, in reverse topological order (design->nodes from the end), every
 * tile a parent computes asks its edges' need() for child rects, and every child tile meeting
 * one of them is wanted. A wanted tile that the cache holds is a *hit*: the recursion would
 * pin it and not look below it, so the schedule does not either (a hit prunes its subtree). A
 * node that repeats (engine/plan.c) is read through its one period tile, cache key
 * (id, -1, -1), computed over the period's rect at the top-left of its interior, wherever the
 * asked-for rect meets that interior, and through its grid tiles over the rest (the border of
 * a node periodic only inside); so is the schedule. The root is not tiled: its chunks are its
 * tiles. tests/test_schedule.c checks the result against the tiles the recursion acquires. */
#ifndef TSR_ENGINE_SCHEDULE_H
#define TSR_ENGINE_SCHEDULE_H

#include "engine/engine_int.h"

/* Tile coordinates that are not grid tiles: */
#define TSR_SCHED_PERIOD (-1) /* tx = ty = -1: the period tile of a node that repeats */
#define TSR_SCHED_CHUNK (-2)  /* ty = -2: the root's chunk number tx */

typedef struct tsr_sched_tile {
    int64_t tx, ty; /* grid tile of the node (cache key (node id, tx, ty)), or one above */
} tsr_sched_tile;

/* One node's work. Both lists are sorted by row then column and hold each tile once. */
typedef struct tsr_sched_stage {
    const tsr_node *node;
    const tsr_sched_tile *compute; /* tiles missing from the cache, to compute */
    size_t ncompute;
    const tsr_sched_tile *hit;     /* tiles the cache held when the schedule was made, which
                                    * some computed parent tile reads */
    size_t nhit;
} tsr_sched_stage;

typedef struct tsr_schedule tsr_schedule;

/* The schedule of root chunks chunks[0..n) (root coordinates, inside the root; copied) against
 * what e's cache holds now. Computing its stages in order, each tile after the stages before it,
 * computes every tile the chunks need. The cache is only read (no pin, no LRU move, no counter):
 * the result is a snapshot, so a caller that executes it must keep the hits from being evicted
 * meanwhile. A periodic root's stage lists its period tile, not the chunks (a stream fills a
 * periodic root by row copies, engine.c: fill_periodic, without a schedule). Borrows e, which
 * must outlive the schedule. NULL on out of memory, err filled. Thread-safe against renders of
 * e in other threads, but then hits and computes race them. */
tsr_schedule *
tsr_schedule_make(const tsr_engine *e, const tsr_rect *chunks, size_t n, tsr_error *err);

/* The schedule of root rect `band` cut into chunks as the CPU backend cuts a band
 * (tsr_cpu_cut_rects: one root tile wide, full height). As tsr_schedule_make. */
tsr_schedule *
tsr_schedule_band(const tsr_engine *e, tsr_rect band, tsr_error *err);

void
tsr_schedule_free(tsr_schedule *s);

/* Stages with work (a tile to compute or a hit), children before parents: stage i may only
 * read tiles of stages before it. The pointer is valid until tsr_schedule_free. */
size_t
tsr_schedule_nstages(const tsr_schedule *s);

const tsr_sched_stage *
tsr_schedule_stage(const tsr_schedule *s, size_t i);

/* The node rect of tile t of node n: a grid tile, its period tile (tsr_period_rect), or a
 * root chunk. */
tsr_rect
tsr_schedule_tile_rect(const tsr_schedule *s, const tsr_node *n, tsr_sched_tile t);

#endif
