/* Tuning knobs and test hooks: the one place every setting that is not a design or a command
 * line option lives. The library never reads the environment: a program sets the knobs once,
 * before its first job, with tsr_tune_set (the `tessera` command reads its TSR_* environment
 * variables into them: cli/tune.c, docs/tuning.md lists them). Everything defaults to the
 * measured best; a knob changes cost or adds a fault for a test, never a result. */
#ifndef TSR_TUNE_H
#define TSR_TUNE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tsr_tune {
    /* the GPU backend */
    bool no_gpu;              /* act as if no CUDA device were present (CPU tests on a GPU host) */
    int64_t gpu_grid_blocks;  /* blocks a 2-D launch aims at; -1: the default, 0: one row of
                               * blocks per 256 px (the old shape, for measurement) */
    int gpu_cache;            /* 0: the backend chooses which nodes the device tile cache keeps;
                               * 1: every one (tests of the cache's paths); 2: none */
    int64_t gpu_chunk_px;     /* 0, or root pixels per chunk (measurement) */
    int64_t gpu_band_bytes;   /* 0, or the bytes of a band (measurement) */
    bool gpu_trace;           /* print the device plan's choices on stderr */
    bool gpu_period_host;     /* a periodic root's bands by the host's row copies, not the
                               * device's fill */
    bool gpu_blur_unstaged;   /* the FIR blur by the kernel that reads the child from global
                               * memory, not the staged one (measurement: same bits) */
    bool gpu_host_serial;     /* a chunk's polygons made and united on the GPU's calling thread
                               * alone, not on the host's team (measurement: same bits) */
    uint64_t gpu_fault_band;  /* test hook: fake a sticky device error at band N (0: never) */
    bool gpus_on_cpu;         /* test hook: --gpus makes CPU engines (the hand-out and reorder
                               * path on machines without a GPU) */
    /* the process (a program's choice; the `tessera` command turns it on for itself) */
    bool trim_heap;           /* between the CPU's bands, give malloc's free pages back to the
                               * system when the process's resident size passes 7/8 of the
                               * job's --memory, so the budget bounds the process and not only
                               * what is live (freed tiles of many sizes leave holes) */
    /* sinks */
    bool no_vmsplice;         /* a raw pipe gets plain write(2), not vmsplice */
    int frame_threads;        /* framing threads of a framed sink; 0: from the cores */
    const char *sink_fault;   /* test hook: the sink's fault spec (stream/fault.c), or NULL */
    /* the engine */
    int cores;                /* test hook: 0, or the cores the engine's default thread count
                               * takes instead of the process's (a many-core host's plan on a
                               * small machine) */
} tsr_tune;

/* The knobs in force (the defaults until tsr_tune_set). Any thread. */
const tsr_tune *
tsr_tune_get(void);

/* Replace the knobs (copied; sink_fault is borrowed and must outlive every job). Call before
 * the first job, from one thread: jobs running meanwhile may see either setting. */
void
tsr_tune_set(const tsr_tune *t);

/* The defaults, for a caller that changes a few knobs. */
tsr_tune
tsr_tune_defaults(void);

#endif
