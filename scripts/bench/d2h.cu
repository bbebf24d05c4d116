/* The device-to-host ceiling for scripts/bench-gpu.sh: a pinned, contiguous copy of 256 MiB,
 * best of 10 after a warm-up, timed with CUDA events. Prints "d2h_gbps <GB/s>", then the
 * device's own store bandwidth (cudaMemset of 1 GiB, best of 10): "store_gbps <GB/s>". */
#include <cstdio>
#include <cuda_runtime.h>

int
main()
{
    const size_t n = (size_t)256 << 20;
    unsigned char *d = nullptr, *h = nullptr;
    if (cudaMalloc(&d, n) != cudaSuccess || cudaHostAlloc((void **)&h, n, 0) != cudaSuccess) {
        fprintf(stderr, "d2h: allocation failed\n");
        return 1;
    }
    cudaMemset(d, 7, n);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 11; r++) {
        cudaEventRecord(a);
        cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (r > 0 && ms < best)
            best = ms;
    }
    if (cudaGetLastError() != cudaSuccess || h[n - 1] != 7) {
        fprintf(stderr, "d2h: copy failed\n");
        return 1;
    }
    printf("d2h_gbps %.2f\n", (double)n / best / 1e6);
    const size_t m = (size_t)1 << 30;
    unsigned char *s = nullptr;
    if (cudaMalloc(&s, m) != cudaSuccess)
        return 1;
    best = 1e30f;
    for (int r = 0; r < 11; r++) {
        cudaEventRecord(a);
        cudaMemsetAsync(s, r, m);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (r > 0 && ms < best)
            best = ms;
    }
    printf("store_gbps %.2f\n", (double)m / best / 1e6);
    return 0;
}
