/* The CPU backend (the reference): a band is cut into root-tile-wide rects computed in
 * parallel by the evaluator (cpu/compute.c, on the worker team of cpu/pool.c), each quantized
 * into its place as soon as it is done. Submit does all the work, so one band is in flight and
 * complete has nothing to wait for. */
#include "cpu/cpu_int.h"
#include "tiles/tune.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t
tsr_cpu_cut_rects(const tsr_backend_ctx *ctx, tsr_rect r, tsr_rect **out)
{
    int64_t t = ctx->tile[ctx->d->root->id];
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
cpu_values(void *bk, tsr_rect r, float *out, tsr_error *err)
{
    tsr_cpu *cp = bk;
    int64_t bh = cp->ctx->plan->band_rows; /* what the plan's per-thread figure assumes */
    for (int64_t y = r.y; y < r.y + r.h; y += bh) {
        tsr_rect band = tsr_rect_make(r.x, y, r.w, (r.y + r.h - y) < bh ? (r.y + r.h - y) : bh);
        tsr_rect *rects;
        size_t n = tsr_cpu_cut_rects(cp->ctx, band, &rects);
        if (!n)
            return tsr_fail(err, TSR_ENOMEM, "out of memory");
        copy_ctx c = {rects, r, out};
        tsr_status st = tsr_cpu_root_batch(cp, rects, n, emit_copy, &c, err);
        free(rects);
        if (st != TSR_OK)
            return st;
    }
    return TSR_OK;
}

typedef struct sample_ctx {
    float *v;
    _Atomic uint64_t *done;
} sample_ctx;

static void
emit_sample(void *ctx, size_t k, const float *px)
{
    sample_ctx *c = ctx;
    c->v[k] = px[0];
    if (c->done)
        atomic_fetch_add_explicit(c->done, 1, memory_order_relaxed);
}

/* Many small rects on the team at once: only the child tiles under them are computed. */
static tsr_status
cpu_samples(void *bk, const tsr_rect *rects, size_t n, float *out, _Atomic uint64_t *done,
            tsr_error *err)
{
    sample_ctx c = {out, done};
    return tsr_cpu_root_batch(bk, rects, n, emit_sample, &c, err);
}

typedef struct quant_ctx {
    const tsr_output *o;
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
        tsr_convert(q->o, px + y * r.w, (size_t)r.w, dst);
    }
    if (j->done) /* the progress display moves per rect, not per band */
        atomic_fetch_add_explicit(j->done, (uint64_t)(r.w * r.h * j->bps), memory_order_relaxed);
}

/* Freed tiles stay in malloc's heap (the `tessera` command sets malloc to keep blocks up to
 * 256 MiB in the heap and one arena: cli/main.c), and tiles, layers and scratch of many sizes,
 * freed and allocated by different threads, leave holes malloc does not give back by itself:
 * measured, the heap held 2.3x what was live (wafer-fields at --memory 128M: 88 MB in use,
 * 199 MB of heap, 209 MB resident), so the plan would bound what is live but not the process.
 * With the trim_heap knob, between bands, when the resident size passes 7/8 of the budget, the
 * free holes' whole pages go back to the kernel (malloc_trim). A library's host decides: the
 * resident size is the whole process's. */
static void
heap_within_budget(const tsr_cpu *cp)
{
    if (!tsr_tune_get()->trim_heap)
        return;
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long long size, resident;
    if (!f)
        return;
    bool got = fscanf(f, "%llu %llu", &size, &resident) == 2;
    fclose(f);
    if (got && (double)resident * (double)sysconf(_SC_PAGESIZE) >
                   (double)cp->ctx->plan->budget * 0.875)
        malloc_trim(0);
}

/* The periodic shortcut over the root's interior, and the rest (the whole band of a root that
 * does not repeat) cut into the root's tiles, computed in parallel and quantized into place. */
tsr_status
tsr_cpu_band(tsr_cpu *cp, const tsr_band_job *j, tsr_error *err)
{
    tsr_rect rest[4];
    size_t nrest;
    tsr_status st = tsr_cpu_fill_inner(cp, j, rest, &nrest, err);
    for (size_t i = 0; i < nrest && st == TSR_OK; i++) {
        tsr_rect *rects;
        size_t n = tsr_cpu_cut_rects(cp->ctx, rest[i], &rects);
        if (!n)
            return tsr_fail(err, TSR_ENOMEM, "out of memory");
        quant_ctx q = {&cp->ctx->d->out, rects, j};
        st = tsr_cpu_root_batch(cp, rects, n, emit_quant, &q, err);
        free(rects);
    }
    heap_within_budget(cp); /* between bands: no tile is being computed */
    return st;
}

static tsr_status
cpu_submit(void *bk, const tsr_band_job *j, tsr_error *err)
{
    return tsr_cpu_band(bk, j, err);
}

static tsr_status
cpu_complete(void *bk, tsr_error *err)
{
    (void)bk, (void)err;
    return TSR_OK;
}

/* The CPU's bands are the plan's (engine/plan.c): its per-thread figure assumes them, and it
 * counts three band buffers: two for the writer and the one being filled. Its tile cache is
 * the plan's. */
static tsr_status
cpu_open(const tsr_backend_ctx *ctx, void **bk, tsr_backend_shape *shape, tsr_error *err)
{
    tsr_cpu *cp = tsr_cpu_new(ctx, ctx->plan->cache, err);
    if (!cp)
        return TSR_ENOMEM;
    *bk = cp;
    *shape = (tsr_backend_shape){.band_rows = ctx->plan->band_rows, .depth = 1, .writer_bufs = 3};
    return TSR_OK;
}

static void
cpu_close(void *bk)
{
    tsr_cpu_free(bk);
}

static void
cpu_stats(void *bk, tsr_engine_stats *st)
{
    tsr_cpu_stats(bk, st);
}

const tsr_backend_ops tsr_backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .submit = cpu_submit,
    .complete = cpu_complete,
    .values = cpu_values,
    .samples = cpu_samples,
    .stats = cpu_stats,
};
