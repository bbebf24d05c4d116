/* gpu: the CUDA backend. Built from the gpu .cu files by nvcc (sm_90) when CUDA is found, else from
 * gpu_none.c, where every entry point reports "no GPU". Callers never #ifdef on CUDA. */
#ifndef TSR_GPU_H
#define TSR_GPU_H

#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>

/* True when this build has CUDA and a usable device is present. Thread-safe, cheap after the
 * first call. */
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

#endif
