/* The `tessera` command's TSR_* environment variables, read into the library's knobs
 * (tiles/tune.h) once at start. Tests call it too, so the same variables steer them. */
#ifndef TSR_CLI_TUNE_H
#define TSR_CLI_TUNE_H

#include "tiles/tiles.h"

/* Read TSR_NOGPU, TSR_GPU_GRID_BLOCKS, TSR_GPU_CACHE (all|off), TSR_GPU_TUNE (CHUNK_MPX,
 * BAND_MIB), TSR_GPU_TRACE, TSR_GPU_PERIOD (host), TSR_GPU_FAULT (N), TSR_MULTI_CPU,
 * TSR_NO_VMSPLICE, TSR_FRAME_THREADS (1..64) and TSR_FAULT into the knobs (tsr_tune_set).
 * TSR_EINVAL naming the variable for a value it cannot take; the knobs are then unchanged. */
tsr_status
tsr_cli_tune_from_env(tsr_error *err);

/* TSR_DIRECT=1: compute every node directly (tsr_engine_opts.direct), for kernel benchmarks. */
bool
tsr_cli_direct_from_env(void);

#endif
