/* dist/ of a build without MPI (TSR_MPI=OFF, or no MPI found): one stub file, no #ifdefs
 * elsewhere. A render is always the one-process render; started by mpirun with several ranks
 * it refuses, since every rank would write the whole stream to the same output. */
#include "dist/dist.h"

#include <stdlib.h>

int
tsr_dist_start(volatile sig_atomic_t *stop, tsr_error *err)
{
    (void)stop;
    const char *n = getenv("OMPI_COMM_WORLD_SIZE");
    if (!n)
        n = getenv("PMI_SIZE");
    if (!n || atoi(n) < 2)
        return 0;
    tsr_fail(err, TSR_EINVAL, "started by mpirun with %s ranks, but this tessera was built "
             "without MPI (install libopenmpi-dev and rebuild)", n);
    return -1;
}

int
tsr_dist_launched_rank(void)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE"), *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!n) {
        n = getenv("PMI_SIZE");
        r = getenv("PMI_RANK");
    }
    return n && r && atoi(n) >= 2 ? atoi(r) : -1;
}

int
tsr_dist_ranks(void)
{
    return 1;
}

int
tsr_dist_worker(const char *path, const tsr_engine_opts *opts)
{
    (void)path, (void)opts;
    return 2; /* never reached: tsr_dist_start returns rank 0 or fails */
}

int
tsr_dist_end(int rc)
{
    return rc;
}

const tsr_backend_ops *const tsr_dist_backend = NULL;
