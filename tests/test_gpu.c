/* gpu: the CUDA context and a launch + device-to-host copy. Skipped without a device (CI). */
#include "gpu/gpu.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

Test(gpu, describe_always_says_something)
{
    char buf[256];
    memset(buf, 'x', sizeof buf);
    tsr_gpu_describe(buf, sizeof buf);
    cr_assert(memchr(buf, '\0', sizeof buf) != NULL, "not NUL-terminated");
    cr_assert(strlen(buf) > 0);
}

Test(gpu, without_a_device_the_self_test_is_refused)
{
    if (tsr_gpu_available())
        cr_skip_test("a GPU is present");
    float v = 0;
    tsr_error err = {0};
    cr_assert_eq(tsr_gpu_fill_test(&v, 1, 1.0f, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "gpu:") != NULL, "%s", err.msg);
}

Test(gpu, fill_kernel_result_comes_back_exactly)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    size_t n = (1u << 20) + 7; /* not a multiple of the block size */
    float *v = calloc(n, sizeof *v);
    tsr_error err = {0};
    cr_assert_eq(tsr_gpu_fill_test(v, n, 0.375f, &err), TSR_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_assert(v[i] == 0.375f, "element %zu", i);
    free(v);
}
