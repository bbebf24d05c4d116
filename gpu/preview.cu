/* Previews' row sums on the device (engine/backend.h: rowsums): a preview is a render and a
 * box average, so on the GPU the region's values stay on the device and only one double per
 * block and row crosses the link (at --scale 150, 1/600 of the floats' bytes). The order is
 * the host's (engine/preview.c): each row of a block summed left to right in double, so the
 * bytes are the CPU's; the host adds the rows' sums top to bottom. */
#include "gpu/gpu_int.cuh"

/* One thread per (block b, row y) of a w x h rect of floats: out[y * nb + b] = the sum, left to
 * right in double, of row y's values in columns [b * kx, min((b + 1) * kx, w)). Adjacent
 * threads take adjacent blocks of a row, so at small K the reads coalesce; at large K each
 * thread streams its block's row through the cache. */
__global__ static void
rowsums_kernel(const float *px, int64_t w, int64_t h, int64_t kx, int64_t nb, double *out)
{
    int64_t n = nb * h;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t y = i / nb, b = i - y * nb;
        int64_t x0 = b * kx, x1 = x0 + kx < w ? x0 + kx : w;
        const float *row = px + y * w;
        double s = 0.0;
        for (int64_t x = x0; x < x1; x++)
            s += (double)row[x];
        out[i] = s;
    }
}

extern "C" tsr_status
tsr_gpu_rowsums(tsr_gpu *g, tsr_gpu_buf in, int64_t kx, double *host, tsr_error *err)
{
    int64_t w = in.r.w, h = in.r.h;
    if (kx < 1 || w < 1 || h < 1 || !in.px)
        return tsr_fail(err, TSR_EINTERNAL, "gpu: row sums of %lldx%lld in blocks of %lld",
                        (long long)w, (long long)h, (long long)kx);
    int64_t nb = w / kx + (w % kx != 0);
    size_t bytes = (size_t)nb * (size_t)h * sizeof(double);
    double *d = (double *)tsr_gpu_alloc(g, bytes, err); /* the caller's mark frees it */
    if (!d)
        return TSR_ENOMEM;
    rowsums_kernel<<<tsr_blocks((size_t)(nb * h), 256), 256, 0, g->compute>>>(in.px, w, h, kx,
                                                                           nb, d);
    TSR_LAUNCHED("preview row sums", err);
    TSR_CUDA_TRY(cudaMemcpyAsync(host, d, bytes, cudaMemcpyDeviceToHost, g->compute), err);
    return tsr_gpu_sync(g, err);
}
