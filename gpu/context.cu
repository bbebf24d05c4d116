/* The CUDA context: device discovery, the arena, resident uploads, pinned host ranges, the
 * compute and copy streams and the copy tickets. */
#include "gpu/gpu_int.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int probed = 0; /* 0 unknown, 1 present, -1 absent */
static char why[256];

static void
probe(void)
{
    if (probed)
        return;
    if (tsr_tune_get()->no_gpu) {
        snprintf(why, sizeof why, "no CUDA device: the GPU is turned off (TSR_NOGPU)");
        probed = -1;
        return;
    }
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        /* Without a driver the runtime says "CUDA driver version is insufficient", which
         * sends a user on a machine with no GPU off to update a driver it does not have:
         * where no NVIDIA kernel driver is loaded (/proc/driver/nvidia, nvidia(4)), say so */
        bool driver = access("/proc/driver/nvidia/version", F_OK) == 0;
        if (!driver && (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice ||
                        e == cudaSuccess))
            snprintf(why, sizeof why, "no GPU found: no NVIDIA driver is loaded");
        else
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
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

extern "C" tsr_status
tsr_gpu_fill_test(float *out, size_t n, float v, tsr_error *err)
{
    if (!tsr_gpu_available())
        return tsr_fail(err, TSR_EINVAL, "gpu: %s", why);
    float *d = NULL;
    TSR_CUDA_TRY(cudaMalloc(&d, n * sizeof(float)), err);
    fill_kernel<<<tsr_blocks(n, 256), 256>>>(d, n, v);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpy(out, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess)
        return tsr_fail(err, TSR_EIO, "gpu: fill test: %s", cudaGetErrorString(e));
    return TSR_OK;
}

size_t
tsr_grid_blocks(void)
{
    static size_t blocks = (size_t)-1; /* racy first use is harmless: all write the same */
    if (blocks == (size_t)-1) {
        int64_t v = tsr_tune_get()->gpu_grid_blocks;
        blocks = v >= 0 ? (size_t)v : TSR_GRID_BLOCKS;
    }
    return blocks;
}

/* This build has the CUDA side (gpu_none.c says false). */
extern "C" bool
tsr_gpu_built(void)
{
    return true;
}

extern "C" tsr_status
tsr_gpu_d2h_rate(int device, size_t bytes, double *gbps, tsr_error *err)
{
    *gbps = 0;
    if (!tsr_gpu_available())
        return tsr_fail(err, TSR_EINVAL, "gpu: %s", why);
    TSR_CUDA_TRY(cudaSetDevice(device), err);
    unsigned char *d = NULL, *h = NULL;
    cudaEvent_t a = NULL, b = NULL;
    cudaStream_t s = NULL;
    cudaError_t e = cudaMalloc((void **)&d, bytes);
    if (e == cudaSuccess)
        e = cudaHostAlloc((void **)&h, bytes, cudaHostAllocDefault);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreate(&a);
    if (e == cudaSuccess)
        e = cudaEventCreate(&b);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(d, 7, bytes, s);
    float best = 0;
    for (int r = 0; r < 6 && e == cudaSuccess; r++) { /* a warm-up, then the best of 5 */
        float ms = 0;
        e = cudaEventRecord(a, s);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess)
            e = cudaEventRecord(b, s);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(b);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&ms, a, b);
        if (e == cudaSuccess && r > 0 && (best == 0 || ms < best))
            best = ms;
    }
    if (e == cudaSuccess && h[bytes - 1] != 7)
        e = cudaErrorUnknown;
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    if (s)
        cudaStreamDestroy(s);
    cudaFreeHost(h);
    cudaFree(d);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return tsr_fail(err, TSR_EIO, "gpu: device-to-host copy of %zu bytes: %s", bytes,
                        cudaGetErrorString(e));
    }
    *gbps = best > 0 ? (double)bytes / best / 1e6 : 0;
    return TSR_OK;
}

extern "C" int
tsr_gpu_count(void)
{
    int n = 0;
    if (!tsr_gpu_available() || cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

extern "C" tsr_status
tsr_gpu_meminfo(int device, size_t *free_bytes, size_t *total_bytes, tsr_error *err)
{
    if (!tsr_gpu_available())
        return tsr_fail(err, TSR_EINVAL, "gpu: %s", why);
    TSR_CUDA_TRY(cudaSetDevice(device), err);
    TSR_CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes), err);
    return TSR_OK;
}

extern "C" void
tsr_gpu_bind(const tsr_gpu *g)
{
    int cur = -1;
    if (g && (cudaGetDevice(&cur) != cudaSuccess || cur != g->device))
        cudaSetDevice(g->device);
}

#define NEV 64 /* copy tickets in flight at most (a band each) */

extern "C" tsr_gpu *
tsr_gpu_open(int device, size_t arena, tsr_error *err)
{
    if (!tsr_gpu_available()) {
        tsr_fail(err, TSR_EINVAL, "gpu: %s", why);
        return NULL;
    }
    tsr_gpu *g = (tsr_gpu *)calloc(1, sizeof *g);
    if (!g) {
        tsr_fail(err, TSR_ENOMEM, "out of memory");
        return NULL;
    }
    g->device = device;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&g->compute, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&g->copy, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        tsr_fail(err, TSR_EIO, "gpu: streams: %s", cudaGetErrorString(e));
        tsr_gpu_close(g);
        return NULL;
    }
    g->ev = (cudaEvent_t *)calloc(NEV, sizeof *g->ev);
    if (!g->ev) {
        tsr_fail(err, TSR_ENOMEM, "out of memory");
        tsr_gpu_close(g);
        return NULL;
    }
    for (; g->nev < NEV; g->nev++)
        if (cudaEventCreateWithFlags(&g->ev[g->nev], cudaEventDisableTiming) != cudaSuccess) {
            tsr_fail(err, TSR_EIO, "gpu: events");
            tsr_gpu_close(g);
            return NULL;
        }
    if (arena > 0 && cudaMalloc((void **)&g->arena, arena) != cudaSuccess) {
        cudaGetLastError();
        tsr_fail(err, TSR_ENOMEM, "gpu: cannot allocate %.1f MiB of device memory (--gpu-memory)",
                 (double)arena / 1048576.0);
        g->arena = NULL;
        tsr_gpu_close(g);
        return NULL;
    }
    g->arena_bytes = arena;
    g->top = g->base = arena;
    return g;
}

extern "C" void
tsr_gpu_set_team(tsr_gpu *g, const tsr_geom_team *team)
{
    if (team)
        g->team = *team;
    else
        memset(&g->team, 0, sizeof g->team);
}

void
tsr_gpu_close(tsr_gpu *g)
{
    if (!g)
        return;
    if (g->compute)
        cudaStreamSynchronize(g->compute);
    if (g->copy)
        cudaStreamSynchronize(g->copy);
    for (size_t i = 0; i < g->nup; i++)
        cudaFree(g->up[i].dev);
    free(g->up);
    tsr_sample_table_free(&g->stab);
    for (size_t i = 0; i < g->nreg; i++)
        cudaHostUnregister(g->reg[i]);
    free(g->reg);
    for (size_t i = 0; i < g->nev; i++)
        cudaEventDestroy(g->ev[i]);
    free(g->ev);
    for (size_t i = 0; i < g->ntm; i++) {
        cudaEventDestroy(g->tm[i].a);
        cudaEventDestroy(g->tm[i].b);
    }
    free(g->tm);
    cudaFree(g->arena);
    if (g->compute)
        cudaStreamDestroy(g->compute);
    if (g->copy)
        cudaStreamDestroy(g->copy);
    cudaGetLastError(); /* nothing of this context's errors outlives it */
    free(g);
}

extern "C" void *
tsr_gpu_alloc(tsr_gpu *g, size_t bytes, tsr_error *err)
{
    size_t at = (g->used + 255) & ~(size_t)255;
    if (at > g->top || bytes > g->top - at) {
        tsr_fail(err, TSR_ENOMEM,
                 "gpu: arena full: %.1f MiB wanted, %.1f of %.1f MiB in use (raise --gpu-memory)",
                 (double)bytes / 1048576.0, (double)g->used / 1048576.0,
                 (double)g->arena_bytes / 1048576.0);
        return NULL;
    }
    g->used = at + bytes;
    if (g->used + (g->arena_bytes - g->top) > g->peak)
        g->peak = g->used + (g->arena_bytes - g->top);
    return g->arena + at;
}

extern "C" void *
tsr_gpu_alloc_kept(tsr_gpu *g, size_t bytes, tsr_error *err)
{
    if (bytes > g->top || ((g->top - bytes) & ~(size_t)255) < g->used) {
        tsr_fail(err, TSR_ENOMEM,
                 "gpu: arena full: %.1f MiB wanted, %.1f of %.1f MiB in use (raise --gpu-memory)",
                 (double)bytes / 1048576.0,
                 (double)(g->used + g->arena_bytes - g->top) / 1048576.0,
                 (double)g->arena_bytes / 1048576.0);
        return NULL;
    }
    g->top = (g->top - bytes) & ~(size_t)255;
    if (g->used + (g->arena_bytes - g->top) > g->peak)
        g->peak = g->used + (g->arena_bytes - g->top);
    return g->arena + g->top;
}

extern "C" void
tsr_gpu_release_kept(tsr_gpu *g)
{
    g->top = g->base;
}

/* Only between chunks (nothing kept is live): the resident block goes just below the others. */
extern "C" void *
tsr_gpu_alloc_resident(tsr_gpu *g, size_t bytes, tsr_error *err)
{
    g->top = g->base;
    void *p = tsr_gpu_alloc_kept(g, bytes, err);
    if (p)
        g->base = g->top;
    return p;
}

extern "C" size_t
tsr_gpu_mark(const tsr_gpu *g)
{
    return g->used;
}

extern "C" void
tsr_gpu_reset(tsr_gpu *g, size_t mark)
{
    if (mark < g->used)
        g->used = mark;
}

extern "C" size_t
tsr_gpu_arena_peak(const tsr_gpu *g)
{
    return g->peak;
}

extern "C" const void *
tsr_gpu_resident(tsr_gpu *g, const void *host, size_t bytes, tsr_error *err)
{
    for (size_t i = 0; i < g->nup; i++)
        if (g->up[i].host == host && g->up[i].bytes == bytes)
            return g->up[i].dev;
    if (g->nup == g->capup) {
        size_t cap = g->capup ? 2 * g->capup : 16;
        struct tsr_upload *n = (struct tsr_upload *)realloc(g->up, cap * sizeof *n);
        if (!n) {
            tsr_fail(err, TSR_ENOMEM, "out of memory");
            return NULL;
        }
        g->up = n;
        g->capup = cap;
    }
    void *d = NULL;
    cudaError_t e = cudaMalloc(&d, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        tsr_fail(err, TSR_ENOMEM, "gpu: cannot allocate %zu bytes for design data", bytes);
        return NULL;
    }
    e = cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, g->compute);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(g->compute); /* host may be pageable: done before return */
    if (e != cudaSuccess) {
        cudaFree(d);
        tsr_fail(err, TSR_EIO, "gpu: upload of %zu bytes: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    g->up[g->nup++] = (struct tsr_upload){host, d, bytes};
    return d;
}

extern "C" tsr_status
tsr_gpu_upload(tsr_gpu *g, tsr_gpu_buf out, const float *host, tsr_error *err)
{
    size_t n = (size_t)out.r.w * (size_t)out.r.h * sizeof(float);
    TSR_CUDA_TRY(cudaMemcpyAsync(out.px, host, n, cudaMemcpyHostToDevice, g->compute), err);
    TSR_CUDA_TRY(cudaStreamSynchronize(g->compute), err);
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_download(tsr_gpu *g, tsr_gpu_buf in, float *host, tsr_error *err)
{
    size_t n = (size_t)in.r.w * (size_t)in.r.h * sizeof(float);
    TSR_CUDA_TRY(cudaMemcpyAsync(host, in.px, n, cudaMemcpyDeviceToHost, g->compute), err);
    return tsr_gpu_sync(g, err);
}

extern "C" tsr_status
tsr_gpu_copy_rect(tsr_gpu *g, tsr_gpu_buf dst, tsr_gpu_buf src, tsr_rect r, tsr_error *err)
{
    r = tsr_rect_intersect(tsr_rect_intersect(r, dst.r), src.r);
    if (tsr_rect_empty(r))
        return TSR_OK;
    const float *s = src.px + (r.y - src.r.y) * src.r.w + (r.x - src.r.x);
    float *d = dst.px + (r.y - dst.r.y) * dst.r.w + (r.x - dst.r.x);
    TSR_CUDA_TRY(cudaMemcpy2DAsync(d, (size_t)dst.r.w * sizeof(float), s,
                                   (size_t)src.r.w * sizeof(float), (size_t)r.w * sizeof(float),
                                   (size_t)r.h, cudaMemcpyDeviceToDevice, g->compute), err);
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_memset(tsr_gpu *g, void *dst, int value, size_t bytes, tsr_error *err)
{
    TSR_CUDA_TRY(cudaMemsetAsync(dst, value, bytes, g->compute), err);
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_register(tsr_gpu *g, void *p, size_t bytes, tsr_error *err)
{
    for (size_t i = 0; i < g->nreg; i++)
        if (g->reg[i] == p)
            return TSR_OK;
    if (g->nreg == g->capreg) {
        size_t cap = g->capreg ? 2 * g->capreg : 8;
        void **n = (void **)realloc(g->reg, cap * sizeof *n);
        if (!n)
            return tsr_fail(err, TSR_ENOMEM, "out of memory");
        g->reg = n;
        g->capreg = cap;
    }
    /* Portable: pinned for every context of the process, so the engines of `--gpus N` (one
     * per device) all copy straight into the one writer's pool. The first engine registers it
     * and unregisters it at its detach; the others find it registered and leave it be. */
    cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        return TSR_OK;
    }
    if (e != cudaSuccess)
        return tsr_fail(err, TSR_EIO, "gpu: cudaHostRegister: %s", cudaGetErrorString(e));
    g->reg[g->nreg++] = p;
    return TSR_OK;
}

extern "C" void
tsr_gpu_unregister(tsr_gpu *g, void *p)
{
    for (size_t i = 0; i < g->nreg; i++)
        if (g->reg[i] == p) {
            cudaHostUnregister(p);
            g->reg[i] = g->reg[--g->nreg];
            return;
        }
}

/* The compute stream's "done so far" event for copies, one per ticket slot, reused for the
 * copy's own completion. A slot is reused NEV tickets later: the engine never keeps that many
 * copies in flight (it waits on the oldest band first). */
extern "C" tsr_status
tsr_gpu_copy_out(tsr_gpu *g, void *dst, const void *src, size_t bytes, uint64_t *ticket,
                 tsr_error *err)
{
    uint64_t t = g->next_ticket++;
    cudaEvent_t ev = g->ev[t % g->nev];
    TSR_CUDA_TRY(cudaEventRecord(ev, g->compute), err);
    TSR_CUDA_TRY(cudaStreamWaitEvent(g->copy, ev, 0), err);
    TSR_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g->copy), err);
    TSR_CUDA_TRY(cudaEventRecord(ev, g->copy), err);
    *ticket = t;
    return TSR_OK;
}

static tsr_status
fault(tsr_gpu *g, tsr_error *err)
{
    g->fault = false;
    return tsr_fail(err, TSR_EIO, "gpu: injected device fault (TSR_FAULT=gpu)");
}

extern "C" tsr_status
tsr_gpu_wait(tsr_gpu *g, uint64_t ticket, tsr_error *err)
{
    if (g->fault)
        return fault(g, err);
    TSR_CUDA_TRY(cudaEventSynchronize(g->ev[ticket % g->nev]), err);
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_after(tsr_gpu *g, uint64_t ticket, tsr_error *err)
{
    TSR_CUDA_TRY(cudaStreamWaitEvent(g->compute, g->ev[ticket % g->nev], 0), err);
    return TSR_OK;
}

extern "C" tsr_status
tsr_gpu_sync(tsr_gpu *g, tsr_error *err)
{
    if (g->fault)
        return fault(g, err);
    TSR_CUDA_TRY(cudaStreamSynchronize(g->compute), err);
    return TSR_OK;
}

extern "C" void
tsr_gpu_inject_fault(tsr_gpu *g)
{
    g->fault = true;
}

/* ---- stage timing ------------------------------------------------------------------------ */

#define TIMERS 512 /* event pairs in flight at most: a few bands of launches */

/* Add the completed timers' times to their stages and free them; `wait`: wait for all. */
static void
harvest(tsr_gpu *g, bool wait)
{
    for (size_t i = 0; i < g->ntm; i++) {
        struct tsr_gpu_timer *t = &g->tm[i];
        if (t->stage < 0 || t->stage >= TSR_GPU_STAGES) /* free, or begun and not ended */
            continue;
        if (wait)
            cudaEventSynchronize(t->b);
        else if (cudaEventQuery(t->b) != cudaSuccess)
            continue;
        float ms = 0;
        if (cudaEventElapsedTime(&ms, t->a, t->b) == cudaSuccess)
            g->stage_ms[t->stage] += ms;
        t->stage = -1;
    }
    cudaGetLastError(); /* a query's "not ready" is not an error of anyone's */
}

extern "C" int
tsr_gpu_stage_begin(tsr_gpu *g)
{
    if (!g->tm) {
        g->tm = (struct tsr_gpu_timer *)calloc(TIMERS, sizeof *g->tm);
        if (!g->tm)
            return -1;
        for (; g->ntm < TIMERS; g->ntm++) {
            struct tsr_gpu_timer *t = &g->tm[g->ntm];
            t->stage = -1;
            if (cudaEventCreate(&t->a) != cudaSuccess)
                break;
            if (cudaEventCreate(&t->b) != cudaSuccess) {
                cudaEventDestroy(t->a);
                break;
            }
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < g->ntm; i++)
            if (g->tm[i].stage < 0 && cudaEventRecord(g->tm[i].a, g->compute) == cudaSuccess) {
                g->tm[i].stage = TSR_GPU_STAGES; /* taken, not yet ended */
                return (int)i;
            }
        harvest(g, false);
    }
    return -1;
}

extern "C" void
tsr_gpu_stage_end(tsr_gpu *g, int timer, int stage)
{
    if (timer < 0 || (size_t)timer >= g->ntm || stage < 0 || stage >= TSR_GPU_STAGES)
        return;
    struct tsr_gpu_timer *t = &g->tm[timer];
    t->stage = cudaEventRecord(t->b, g->compute) == cudaSuccess ? stage : -1;
}

extern "C" void
tsr_gpu_stage_seconds(tsr_gpu *g, double out[TSR_GPU_STAGES])
{
    if (g)
        harvest(g, true);
    for (int k = 0; k < TSR_GPU_STAGES; k++)
        out[k] = g ? g->stage_ms[k] * 1e-3 : 0.0;
}
