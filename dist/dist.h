/* dist: the backends a caller injects (engine/backend.h): bands on several GPUs of one host
 * (gpus.c), and `mpirun -n K tessera render ...` (Open MPI), K >= 2. Rank 0 owns the stream: its
 * engine's backend is tsr_backend_mpi, which hands each band to a worker rank and receives its
 * samples back, in order (the stream loop's in-flight bands are the reorder window). Ranks
 * 1..K-1 load the same design, check rank 0's fingerprint and render the bands they are sent
 * with their own engine (docs/scale-out.md).
 *
 * Built from dist/mpi.c when CMake finds MPI (TSR_MPI=ON, the default), else from
 * dist/mpi_none.c, where a launch by mpirun with several ranks is refused: callers never
 * #ifdef on MPI. Only the command links this (cli/): libtessera never needs libmpi. */
#ifndef TSR_DIST_H
#define TSR_DIST_H

#include "engine/backend.h"

/* Start MPI when this process was launched by mpirun with two ranks or more (the launcher's
 * environment says so: OMPI_COMM_WORLD_SIZE, PMI_SIZE); without one, or with a single rank,
 * nothing is started and the render is the one-process render. Returns this process's rank
 * (0 also when alone), or -1 with err filled (a build without MPI launched with several ranks,
 * MPI_Init refused). Call once, before the design is loaded. `stop` (borrowed, may be NULL) is
 * the command's stop flag: every wait for another rank reads it. */
int
tsr_dist_start(volatile sig_atomic_t *stop, tsr_error *err);

/* This process's rank as the launcher's environment gives it (OMPI_COMM_WORLD_RANK,
 * PMI_RANK) when it was launched with two ranks or more, before MPI is started; -1 otherwise. */
int
tsr_dist_launched_rank(void);

/* Ranks of the job: 1 when MPI was not started. */
int
tsr_dist_ranks(void);

/* Rank >= 1: load the design at `path`, make an engine with `opts` (its own backend: every
 * trait is bit-identical across backends) and render the bands rank 0 sends until it says
 * stop. A failure (load, plan, fingerprint, a band) goes to rank 0, which reports it and ends
 * the job; nothing is printed here. Returns the exit status (0 once rank 0 has the failure). */
int
tsr_dist_worker(const char *path, const tsr_engine_opts *opts);

/* The end of the process: on rank 0, stops workers that never got a band (a failure before
 * the engine existed), then MPI_Finalize. Returns rc, the command's exit status. Does nothing
 * when MPI was not started. */
int
tsr_dist_end(int rc);

/* Bands on several GPUs of this host (dist/gpus.c, `--gpus N`): injected as the engine's
 * backend (tsr_engine_opts.ops) with tsr_engine_opts.gpus saying how many (-1: every device).
 * With the gpus_on_cpu knob (tiles/tune.h) its engines are CPU ones (tests of the hand-out and
 * reorder path without a GPU). */
extern const tsr_backend_ops tsr_backend_gpus;

/* Rank 0's backend (NULL in a build without MPI): open fails unless MPI was started. */
extern const tsr_backend_ops *const tsr_dist_backend;

#endif
