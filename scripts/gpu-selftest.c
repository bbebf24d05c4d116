/* A GPU smoke test with no dependencies beyond the CUDA runtime (the device machines lack
 * cmake, libyaml and Criterion): builds gpu/context.cu for sm_90, launches the fill kernel,
 * copies back and checks every value. Used by scripts/gpu-smoke.sh. */
#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>

int
main(void)
{
    char d[256];
    tsr_gpu_describe(d, sizeof d);
    printf("device: %s\n", d);
    if (!tsr_gpu_available())
        return 2;
    size_t n = ((size_t)1 << 24) + 7;
    float *v = calloc(n, sizeof *v);
    tsr_error err = {0};
    if (!v || tsr_gpu_fill_test(v, n, 0.375f, &err) != TSR_OK) {
        printf("FAIL: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (v[i] != 0.375f) {
            printf("FAIL: element %zu is %g\n", i, (double)v[i]);
            return 1;
        }
    printf("ok: %zu floats filled on the device and copied back exactly\n", n);
    free(v);
    return 0;
}
