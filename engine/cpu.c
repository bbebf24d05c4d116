/* The CPU backend (the reference): a band is cut into root-tile-wide rects computed in
 * parallel (compute.c, on the worker team of engine/pool.c), each quantized into its place as soon as it is done. Submit
 * does all the work, so one band is in flight and complete has nothing to wait for. */
#include "engine/backend.h"
#include "engine/engine_int.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Root rect r cut into pieces at most one root tile wide, so a band spreads over threads. */
size_t
tsr_cpu_cut_rects(const tsr_engine *e, tsr_rect r, tsr_rect **out)
{
    int64_t t = e->tile[e->d->root->id];
    size_t n = (size_t)((r.w + t - 1) / t);
    tsr_rect *v = malloc(n * sizeof *v);
    if (!v)
        return 0;
    for (size_t k = 0; k < n; k++) {
        int64_t x = r.x + (int64_t)k * t;
        v[k] = tsr_rect_make(x, r.y, (r.x + r.w - x) < t ? (r.x + r.w - x) : t, r.h);
    }
    *out = v;
    return n;
}

typedef struct copy_ctx {
    const tsr_rect *rects;
    tsr_rect area;
    float *dst; /* area.w * area.h */
} copy_ctx;

static void
emit_copy(void *ctx, size_t k, const float *px)
{
    copy_ctx *c = ctx;
    tsr_rect r = c->rects[k];
    for (int64_t y = 0; y < r.h; y++)
        memcpy(c->dst + (r.y - c->area.y + y) * c->area.w + (r.x - c->area.x), px + y * r.w,
               (size_t)r.w * sizeof(float));
}

static tsr_status
cpu_values(tsr_engine *e, tsr_rect r, float *out, tsr_error *err)
{
    int64_t bh = e->plan.band_rows; /* what the plan's per-thread figure assumes */
    for (int64_t y = r.y; y < r.y + r.h; y += bh) {
        tsr_rect band = tsr_rect_make(r.x, y, r.w, (r.y + r.h - y) < bh ? (r.y + r.h - y) : bh);
        tsr_rect *rects;
        size_t n = tsr_cpu_cut_rects(e, band, &rects);
        if (!n)
            return tsr_fail(err, TSR_ENOMEM, "out of memory");
        copy_ctx c = {rects, r, out};
        tsr_status st = tsr_cpu_root_batch(e, rects, n, emit_copy, &c, err);
        free(rects);
        if (st != TSR_OK)
            return st;
    }
    return TSR_OK;
}

typedef struct quant_ctx {
    const tsr_engine *e;
    const tsr_rect *rects;
    const tsr_band_job *j;
} quant_ctx;

/* Quantize a computed root rect straight into its place in the band buffer (the last pass
 * over the rect, while it is still in this core's cache). */
static void
emit_quant(void *ctx, size_t k, const float *px)
{
    quant_ctx *q = ctx;
    const tsr_band_job *j = q->j;
    tsr_rect r = q->rects[k];
    for (int64_t y = 0; y < r.h; y++) {
        int64_t row = r.y - j->y + y;
        if (j->up)
            row = j->h - 1 - row;
        uint8_t *dst = j->dst + (row * j->w + (r.x - j->x)) * j->bps;
        tsr_convert(&q->e->d->out, px + y * r.w, (size_t)r.w, dst);
    }
}

/* Freed tiles stay in malloc's heap (compute.c, tune_malloc: no mmap/munmap per tile), and
 * tiles, layers and scratch of many sizes, freed and allocated by different threads, leave
 * holes malloc does not give back by itself: measured, the heap held 2.3x what was live
 * (wafer-fields at --memory 128M: 88 MB in use, 199 MB of heap, 209 MB resident), so the plan
 * would bound what is live but not the process. Between bands, when the resident size passes
 * 7/8 of the budget, the free holes' whole pages go back to the kernel (malloc_trim). Below
 * that nothing is given back: reusing resident holes is what keeps tiles cheap. */
static void
heap_within_budget(const tsr_engine *e)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size, resident;
    if (!f)
        return;
    bool got = fscanf(f, "%llu %llu", &size, &resident) == 2;
    fclose(f);
    if (got && (double)resident * (double)sysconf(_SC_PAGESIZE) > (double)e->plan.budget * 0.875)
        malloc_trim(0);
}

/* The periodic shortcut over the root's interior, and the rest (the whole band of a root that
 * does not repeat) cut into the root's tiles, computed in parallel and quantized into place. */
static tsr_status
cpu_submit(tsr_engine *e, const tsr_band_job *j, tsr_error *err)
{
    tsr_rect rest[4];
    size_t nrest;
    tsr_status st = tsr_engine_fill_inner(e, j, rest, &nrest, err);
    for (size_t i = 0; i < nrest && st == TSR_OK; i++) {
        tsr_rect *rects;
        size_t n = tsr_cpu_cut_rects(e, rest[i], &rects);
        if (!n)
            return tsr_fail(err, TSR_ENOMEM, "out of memory");
        quant_ctx q = {e, rects, j};
        st = tsr_cpu_root_batch(e, rects, n, emit_quant, &q, err);
        free(rects);
    }
    heap_within_budget(e); /* between bands: no tile is being computed */
    return st;
}

static tsr_status
cpu_complete(tsr_engine *e, tsr_error *err)
{
    (void)e, (void)err;
    return TSR_OK;
}

/* The CPU's bands are the plan's (engine/plan.c): its per-thread figure assumes them, and it
 * counts three band buffers: two for the writer and the one being filled. */
static tsr_status
cpu_open(tsr_engine *e, tsr_error *err)
{
    (void)err;
    e->band_rows = e->plan.band_rows;
    e->depth = 1;
    e->writer_bufs = 3;
    return TSR_OK;
}

static void
cpu_close(tsr_engine *e)
{
    (void)e;
}

const tsr_backend_ops tsr_backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .attach = NULL,
    .detach = NULL,
    .submit = cpu_submit,
    .complete = cpu_complete,
    .values = cpu_values,
};
