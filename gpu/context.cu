/* CUDA context: device discovery and the launch/copy self-test. */
extern "C" {
#include "gpu/gpu.h"
}

#include <cuda_runtime.h>
#include <stdio.h>

/* Every CUDA call goes through this: a cudaError_t becomes a tsr_status with a message. */
#define TSR_CUDA_TRY(call, err)                                                               \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess)                                                                \
            return tsr_fail((err), TSR_EIO, "cuda: %s: %s", #call, cudaGetErrorString(e_));  \
    } while (0)

static int probed = 0;   /* 0 unknown, 1 present, -1 absent */
static char why[256];

static void
probe(void)
{
    if (probed)
        return;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(why, sizeof why, "no CUDA device: %s",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        probed = -1;
        return;
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        snprintf(why, sizeof why, "no CUDA device: properties unavailable");
        probed = -1;
        return;
    }
    snprintf(why, sizeof why, "%.160s, sm_%d%d, %.0f GiB", p.name, p.major, p.minor,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    probed = 1;
}

extern "C" bool
tsr_gpu_available(void)
{
    probe();
    return probed == 1;
}

extern "C" void
tsr_gpu_describe(char *buf, size_t n)
{
    probe();
    snprintf(buf, n, "%s", why);
}

static __global__ void
fill_kernel(float *p, size_t n, float v)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

extern "C" tsr_status
tsr_gpu_fill_test(float *out, size_t n, float v, tsr_error *err)
{
    if (!tsr_gpu_available())
        return tsr_fail(err, TSR_EINVAL, "gpu: %s", why);
    float *d = NULL;
    TSR_CUDA_TRY(cudaMalloc(&d, n * sizeof(float)), err);
    unsigned blocks = (unsigned)((n + 255) / 256);
    fill_kernel<<<blocks ? blocks : 1, 256>>>(d, n, v);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpy(out, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess)
        return tsr_fail(err, TSR_EIO, "cuda: fill test: %s", cudaGetErrorString(e));
    return TSR_OK;
}
