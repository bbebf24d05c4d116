/* gpu/dither.h without CUDA: one stub file (as gpu_none.c is for gpu.h). */
#include "gpu/dither.h"

#define NO_CUDA(err) tsr_fail((err), TSR_EINVAL, "gpu: built without CUDA")

tsr_gpu_dither *
tsr_gpu_dither_new(const tsr_dither *d, int depth, tsr_error *err)
{
    (void)d, (void)depth;
    NO_CUDA(err);
    return NULL;
}

void
tsr_gpu_dither_free(tsr_gpu_dither *g)
{
    (void)g;
}

tsr_status
tsr_gpu_dither_rows(const tsr_gpu_dither *g, const void *in, size_t in_pitch, int64_t x0,
                    int64_t y0, int64_t w, int64_t h, int bits, uint8_t *out, size_t out_pitch,
                    void *stream, tsr_error *err)
{
    (void)g, (void)in, (void)in_pitch, (void)x0, (void)y0, (void)w, (void)h, (void)bits;
    (void)out, (void)out_pitch, (void)stream;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_dither_row_host(const tsr_dither *d, const void *samples, int depth, int64_t x0,
                        size_t n, int64_t y, int bits, uint8_t *row, tsr_error *err)
{
    (void)d, (void)samples, (void)depth, (void)x0, (void)n, (void)y, (void)bits, (void)row;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_dither_band(tsr_gpu *g, const tsr_gpu_dither *d, const void *in, size_t in_pitch,
                    int64_t x0, int64_t y0, int64_t w, int64_t h, bool up, int bits, uint8_t *out,
                    size_t out_pitch, tsr_error *err)
{
    (void)g, (void)d, (void)in, (void)in_pitch, (void)x0, (void)y0, (void)w, (void)h, (void)bits;
    (void)up, (void)out, (void)out_pitch;
    return NO_CUDA(err);
}
