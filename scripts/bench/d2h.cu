/* The device-to-host ceiling for scripts/bench-gpu.sh: a pinned, contiguous copy of 256 MiB,
 * best of 10 after a warm-up, timed with CUDA events. Prints "d2h_gbps <GB/s>", then the
 * device's own store bandwidth (cudaMemset of 1 GiB, best of 10): "store_gbps <GB/s>". */
#include <cstdio>
#include <cuda_runtime.h>

/* The fastest of 10 runs of op(r) after a warm-up (r = 0), in ms between CUDA events. */
template <typename Op>
static float
best_ms(Op op)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r < 11; r++) {
        cudaEventRecord(a);
        op(r);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (r > 0 && ms < best)
            best = ms;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}

int
main()
{
    const size_t n = (size_t)256 << 20, m = (size_t)1 << 30;
    unsigned char *d = nullptr, *h = nullptr, *s = nullptr;
    if (cudaMalloc(&d, n) != cudaSuccess || cudaHostAlloc((void **)&h, n, 0) != cudaSuccess ||
        cudaMalloc(&s, m) != cudaSuccess) {
        fprintf(stderr, "d2h: allocation failed\n");
        return 1;
    }
    cudaMemset(d, 7, n);
    float ms = best_ms([&](int) { cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost); });
    if (cudaGetLastError() != cudaSuccess || h[n - 1] != 7) {
        fprintf(stderr, "d2h: copy failed\n");
        return 1;
    }
    printf("d2h_gbps %.2f\n", (double)n / ms / 1e6);
    ms = best_ms([&](int r) { cudaMemsetAsync(s, r, m); });
    printf("store_gbps %.2f\n", (double)m / ms / 1e6);
    return 0;
}
