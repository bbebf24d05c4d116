/* The coverage launchers of a build without CUDA (gpu/coverage.h). */
#include "gpu/coverage.h"

tsr_status
tsr_gpu_coverage(tsr_gpu *g, const tsr_geom_edge *edges, const uint64_t *first, size_t n,
                 uint64_t pieces, tsr_rect r, int64_t *acc, float *out, tsr_error *err)
{
    (void)g, (void)edges, (void)first, (void)n, (void)pieces, (void)r, (void)acc, (void)out;
    return tsr_fail(err, TSR_EINVAL, "gpu: built without CUDA");
}

tsr_status
tsr_gpu_coverage_host(const tsr_geom_edges *e, float *out, tsr_error *err)
{
    (void)e, (void)out;
    return tsr_fail(err, TSR_EINVAL, "gpu: built without CUDA");
}
