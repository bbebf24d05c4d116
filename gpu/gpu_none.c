/* The GPU backend of a build without CUDA: one stub file, no #ifdefs elsewhere. */
#include "gpu/gpu.h"

#include <stdio.h>

bool
tsr_gpu_available(void)
{
    return false;
}

void
tsr_gpu_describe(char *buf, size_t n)
{
    snprintf(buf, n, "built without CUDA");
}

tsr_status
tsr_gpu_fill_test(float *out, size_t n, float v, tsr_error *err)
{
    (void)out;
    (void)n;
    (void)v;
    return tsr_fail(err, TSR_EINVAL, "gpu: built without CUDA");
}
