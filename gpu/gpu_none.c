/* The GPU backend of a build without CUDA: one stub file, no #ifdefs elsewhere. Nothing here
 * can be reached with a context, since tsr_gpu_open never returns one. */
#include "gpu/gpu.h"

#include <stdio.h>

#define NO_CUDA(err) tsr_fail((err), TSR_EINVAL, "gpu: built without CUDA")

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
    (void)out, (void)n, (void)v;
    return NO_CUDA(err);
}

int
tsr_gpu_count(void)
{
    return 0;
}

tsr_status
tsr_gpu_meminfo(int device, size_t *free_bytes, size_t *total_bytes, tsr_error *err)
{
    (void)device;
    *free_bytes = *total_bytes = 0;
    return NO_CUDA(err);
}

tsr_gpu *
tsr_gpu_open(int device, size_t arena, tsr_error *err)
{
    (void)device, (void)arena;
    NO_CUDA(err);
    return NULL;
}

void
tsr_gpu_bind(const tsr_gpu *g)
{
    (void)g;
}

void
tsr_gpu_close(tsr_gpu *g)
{
    (void)g;
}

void
tsr_gpu_set_team(tsr_gpu *g, const struct tsr_geom_team *team)
{
    (void)g, (void)team;
}

void *
tsr_gpu_alloc(tsr_gpu *g, size_t bytes, tsr_error *err)
{
    (void)g, (void)bytes;
    NO_CUDA(err);
    return NULL;
}

void *
tsr_gpu_alloc_kept(tsr_gpu *g, size_t bytes, tsr_error *err)
{
    (void)g, (void)bytes;
    NO_CUDA(err);
    return NULL;
}

void
tsr_gpu_release_kept(tsr_gpu *g)
{
    (void)g;
}

void *
tsr_gpu_alloc_resident(tsr_gpu *g, size_t bytes, tsr_error *err)
{
    (void)g, (void)bytes;
    NO_CUDA(err);
    return NULL;
}

size_t
tsr_gpu_mark(const tsr_gpu *g)
{
    (void)g;
    return 0;
}

void
tsr_gpu_reset(tsr_gpu *g, size_t mark)
{
    (void)g, (void)mark;
}

size_t
tsr_gpu_arena_peak(const tsr_gpu *g)
{
    (void)g;
    return 0;
}

const void *
tsr_gpu_resident(tsr_gpu *g, const void *host, size_t bytes, tsr_error *err)
{
    (void)g, (void)host, (void)bytes;
    NO_CUDA(err);
    return NULL;
}

tsr_status
tsr_gpu_base(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf buf, const tsr_gpu_out *to,
             tsr_error *err)
{
    (void)g, (void)n, (void)buf, (void)to;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_periodic(tsr_gpu *g, const float *period, int64_t pw, int64_t ph, tsr_gpu_buf out,
                 tsr_error *err)
{
    (void)g, (void)period, (void)pw, (void)ph, (void)out;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_upload(tsr_gpu *g, tsr_gpu_buf out, const float *host, tsr_error *err)
{
    (void)g, (void)out, (void)host;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_copy_rect(tsr_gpu *g, tsr_gpu_buf dst, tsr_gpu_buf src, tsr_rect r, tsr_error *err)
{
    (void)g, (void)dst, (void)src, (void)r;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_download(tsr_gpu *g, tsr_gpu_buf in, float *host, tsr_error *err)
{
    (void)g, (void)in, (void)host;
    return NO_CUDA(err);
}

#define EDGE_STUB(name)                                                                        \
    tsr_status name(tsr_gpu *g, const tsr_edge *e, tsr_gpu_buf P, tsr_gpu_buf child,          \
                    const tsr_gpu_out *to, tsr_error *err)                                     \
    {                                                                                          \
        (void)g, (void)e, (void)P, (void)child, (void)to;                                      \
        return NO_CUDA(err);                                                                   \
    }
EDGE_STUB(tsr_gpu_pattern)
EDGE_STUB(tsr_gpu_repeat)
EDGE_STUB(tsr_gpu_distance)
EDGE_STUB(tsr_gpu_blur)
EDGE_STUB(tsr_gpu_rank)
EDGE_STUB(tsr_gpu_transform)

#define CAN_STUB(name)                                                                          \
    bool name(const tsr_edge *e)                                                                \
    {                                                                                           \
        (void)e;                                                                                \
        return false;                                                                           \
    }
CAN_STUB(tsr_gpu_pattern_can)
CAN_STUB(tsr_gpu_repeat_can)
CAN_STUB(tsr_gpu_distance_can)
CAN_STUB(tsr_gpu_blur_can)
CAN_STUB(tsr_gpu_rank_can)
CAN_STUB(tsr_gpu_transform_can)

#define SRC_STUB(fam)                                                                           \
    tsr_status tsr_gpu_src_##fam(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out,               \
                                 const tsr_gpu_out *to, tsr_error *err)                         \
    {                                                                                           \
        (void)g, (void)n, (void)out, (void)to;                                                  \
        return NO_CUDA(err);                                                                    \
    }                                                                                           \
    bool tsr_gpu_src_##fam##_can(const tsr_source *s)                                           \
    {                                                                                           \
        (void)s;                                                                                \
        return false;                                                                           \
    }
SRC_STUB(shape)
SRC_STUB(gradient)
SRC_STUB(image)
SRC_STUB(layout)
SRC_STUB(vector)
SRC_STUB(surface)
SRC_STUB(noise)

bool
tsr_gpu_built(void)
{
    return false;
}

tsr_status
tsr_gpu_convert(tsr_gpu *g, tsr_gpu_buf in, const tsr_gpu_out *to, tsr_error *err)
{
    (void)g, (void)in, (void)to;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_d2h_rate(int device, size_t bytes, double *gbps, tsr_error *err)
{
    (void)device, (void)bytes;
    *gbps = 0;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_period_fill(tsr_gpu *g, const uint8_t *period, int64_t pw, int64_t ph, int64_t px,
                    int64_t py, tsr_rect r, const tsr_gpu_out *to, tsr_error *err)
{
    (void)g, (void)period, (void)pw, (void)ph, (void)px, (void)py, (void)r, (void)to;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_memset(tsr_gpu *g, void *dst, int value, size_t bytes, tsr_error *err)
{
    (void)g, (void)dst, (void)value, (void)bytes;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_register(tsr_gpu *g, void *p, size_t bytes, tsr_error *err)
{
    (void)g, (void)p, (void)bytes;
    return NO_CUDA(err);
}

void
tsr_gpu_unregister(tsr_gpu *g, void *p)
{
    (void)g, (void)p;
}

tsr_status
tsr_gpu_copy_out(tsr_gpu *g, void *dst, const void *src, size_t bytes, uint64_t *ticket,
                 tsr_error *err)
{
    (void)g, (void)dst, (void)src, (void)bytes, (void)ticket;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_wait(tsr_gpu *g, uint64_t ticket, tsr_error *err)
{
    (void)g, (void)ticket;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_after(tsr_gpu *g, uint64_t ticket, tsr_error *err)
{
    (void)g, (void)ticket;
    return NO_CUDA(err);
}

tsr_status
tsr_gpu_sync(tsr_gpu *g, tsr_error *err)
{
    (void)g;
    return NO_CUDA(err);
}

void
tsr_gpu_inject_fault(tsr_gpu *g)
{
    (void)g;
}

int
tsr_gpu_stage_begin(tsr_gpu *g)
{
    (void)g;
    return -1;
}

void
tsr_gpu_stage_end(tsr_gpu *g, int timer, int stage)
{
    (void)g, (void)timer, (void)stage;
}

void
tsr_gpu_stage_seconds(tsr_gpu *g, double out[TSR_GPU_STAGES])
{
    (void)g;
    for (int k = 0; k < TSR_GPU_STAGES; k++)
        out[k] = 0.0;
}

tsr_status
tsr_gpu_rowsums(tsr_gpu *g, tsr_gpu_buf in, int64_t kx, double *host, tsr_error *err)
{
    (void)g, (void)in, (void)kx, (void)host;
    return NO_CUDA(err);
}
