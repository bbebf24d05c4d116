/* Engine lifetime, design loading, root rects and the stream in output order. */
#include "engine/engine_int.h"
#include "designs/designs.h"
#include "gpu/gpu.h"
#include "image/image.h"
#include "tiles/tune.h"
#include "nodes/dither.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* headers only: tsr_engine_new decodes, once its plan has counted the images */
static const tsr_design_opts load_opts = {.read_image = tsr_png_read_gray,
                                          .read_size = tsr_png_read_info, .defer = true};

tsr_design *
tsr_engine_load(const char *path, tsr_error *err)
{
    return tsr_design_load(path, &load_opts, err);
}

tsr_design *
tsr_engine_load_string(const char *text, size_t len, const char *name, const char *base_dir,
                       tsr_error *err)
{
    return tsr_design_load_string(text, len, name, base_dir, &load_opts, err);
}

/* A plan refused because of an explicit --threads that fewer threads would pass is about
 * --threads: say so and name how many fit, rather than a memory figure the user did not
 * choose. The refused plan (one-row bands, plan.c) holds the per-thread figure. */
static void
threads_error(const tsr_engine *e, tsr_error *err)
{
    const tsr_plan *p = &e->plan;
    if (!err || err->status != TSR_EPLAN || e->opts.threads <= 0 || p->per_thread <= 0)
        return;
    int64_t room = p->budget - p->bands - p->fixed, fit = room > 0 ? room / p->per_thread : 0;
    if (fit < 1 || fit >= e->opts.threads)
        return;
    char each[32], have[32];
    tsr_human_bytes(each, sizeof each, (double)p->per_thread);
    tsr_human_bytes(have, sizeof have, (double)p->budget);
    tsr_fail(err, TSR_EPLAN, "--threads %d: at most %lld threads fit in --memory %s (each "
             "needs %s); use --threads %lld or fewer, or a larger --memory", e->opts.threads,
             (long long)fit, have, each, (long long)fit);
}

/* The cores this process may run on (its affinity mask, as taskset or a cgroup's cpuset set
 * it), else the cores online. */
static int
cores(void)
{
    if (tsr_tune_get()->cores > 0) /* a many-core host, for tests on a small machine */
        return tsr_tune_get()->cores;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The backends --backend names, in the order `auto` prefers them. */
static bool
cpu_usable(char *why, size_t n)
{
    (void)why, (void)n;
    return true;
}

static bool
gpu_usable(char *why, size_t n)
{
    if (tsr_gpu_available())
        return true;
    tsr_gpu_describe(why, n);
    return false;
}

const tsr_backend_entry tsr_backends[] = {
    {"gpu", &tsr_backend_gpu, gpu_usable},
    {"cpu", &tsr_backend_cpu, cpu_usable},
    {NULL, NULL, NULL},
};

/* The backend for opts: an injected one (--gpus, MPI), the one --backend names, or with
 * `auto` the first usable one of the table. NULL with err filled when the named one cannot
 * run here. */
static const tsr_backend_ops *
choose_backend(const tsr_engine_opts *o, tsr_error *err)
{
    if (o->ops)
        return o->ops;
    const char *be = o->backend ? o->backend : "auto";
    bool any = strcmp(be, "auto") == 0;
    char why[256] = "";
    for (const tsr_backend_entry *b = tsr_backends; b->name; b++) {
        if (!any && strcmp(be, b->name) != 0)
            continue;
        if (b->usable(why, sizeof why))
            return b->ops;
        if (!any) {
            tsr_fail(err, TSR_EINVAL, "--backend %s: no usable GPU (%s); use --backend cpu",
                     be, why);
            return NULL;
        }
    }
    tsr_fail(err, TSR_EINVAL, "--backend %s: must be cpu, gpu or auto", be);
    return NULL;
}

/* What the backend sees: pointers into the engine's plan (engine/backend.h). */
static void
make_ctx(tsr_engine *e)
{
    e->ctx = (tsr_backend_ctx){.d = e->d,
                               .opts = &e->opts,
                               .plan = &e->plan,
                               .tile = e->tile,
                               .grid = e->grid,
                               .inner = e->inner,
                               .uncached = e->uncached,
                               .threads = e->threads,
                               .stack = e->stack,
                               .nest = e->nest,
                               .rows0 = e->rows0,
                               .rows1 = e->rows1};
}

tsr_engine *
tsr_engine_new(const tsr_design *d, const tsr_engine_opts *opts, tsr_error *err)
{
    tsr_engine *e = calloc(1, sizeof *e);
    if (!e) {
        tsr_fail(err, TSR_ENOMEM, "out of memory");
        return NULL;
    }
    e->d = d;
    if (opts)
        e->opts = *opts;
    const tsr_backend_ops *ops = choose_backend(&e->opts, err);
    if (!ops)
        goto fail;
    e->cores = e->opts.threads > 0 ? e->opts.threads : cores();
    e->threads = e->cores; /* fewer when the plan fits fewer and none were asked (plan.c) */
    e->rows0 = 0;
    e->rows1 = d->root->h;
    if (e->opts.rows[1] != 0) {
        if (e->opts.rows[0] < 0 || e->opts.rows[0] >= e->opts.rows[1] ||
            e->opts.rows[1] > d->root->h) {
            tsr_fail(err, TSR_EINVAL, "--rows %lld:%lld: must satisfy 0 <= Y0 < Y1 <= %lld",
                     (long long)e->opts.rows[0], (long long)e->opts.rows[1],
                     (long long)d->root->h);
            goto fail;
        }
        e->rows0 = e->opts.rows[0];
        e->rows1 = e->opts.rows[1];
    }
    e->tile = calloc(d->nnodes, sizeof *e->tile);
    e->grid = calloc(d->nnodes, sizeof *e->grid);
    e->node_seconds = calloc(d->nnodes, sizeof *e->node_seconds);
    if (!e->tile || !e->grid || !e->node_seconds) {
        tsr_fail(err, TSR_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        e->tile[i] = e->opts.tile > 0 ? e->opts.tile : n->tile;
        e->grid[i] = tsr_grid_make(n->w, n->h, e->tile[i]);
    }
    if (tsr_plan_make(e, err) != TSR_OK) {
        threads_error(e, err);
        goto fail;
    }
    make_ctx(e);
    if (ops->open(&e->ctx, &e->bk, &e->shape, err) != TSR_OK) {
        /* `auto` takes the CPU for a design the device's memory plan cannot hold (a band of a
         * 2^40 px wide root); `--backend gpu` says why instead */
        bool fallback = ops == &tsr_backend_gpu && !e->opts.ops &&
                        (!e->opts.backend || strcmp(e->opts.backend, "auto") == 0) && err &&
                        err->status == TSR_EPLAN;
        e->bk = NULL;
        if (!fallback || tsr_backend_cpu.open(&e->ctx, &e->bk, &e->shape, err) != TSR_OK)
            goto fail;
        ops = &tsr_backend_cpu;
    }
    e->ops = ops;
    return e;
fail:
    tsr_engine_free(e);
    return NULL;
}

void
tsr_engine_free(tsr_engine *e)
{
    if (!e)
        return;
    if (e->ops && e->wmem.mem && e->ops->detach)
        e->ops->detach(e->bk, e->wmem.mem);
    if (e->ops)
        e->ops->close(e->bk);
    tsr_writer_mem_free(&e->wmem);
    free(e->tile);
    free(e->inner);
    free(e->uncached);
    free(e->grid);
    free(e->node_seconds);
    free(e);
}

const tsr_design *
tsr_engine_design(const tsr_engine *e)
{
    return e->d;
}

const tsr_plan *
tsr_engine_plan(const tsr_engine *e)
{
    return &e->plan;
}

const char *
tsr_engine_backend(const tsr_engine *e)
{
    return e->ops->name;
}

int
tsr_engine_threads(const tsr_engine *e)
{
    return e->threads;
}

bool
tsr_engine_period(const tsr_engine *e, const tsr_node *n, int64_t p[2], tsr_rect *in)
{
    bool periodic = tsr_repeats(&e->ctx, n);
    p[0] = periodic ? e->inner[n->id].p[0] : 0;
    p[1] = periodic ? e->inner[n->id].p[1] : 0;
    if (in)
        *in = periodic ? e->inner[n->id].in : tsr_rect_make(0, 0, 0, 0);
    return periodic;
}

bool
tsr_engine_uncached(const tsr_engine *e, const tsr_node *n)
{
    return e->uncached && e->uncached[n->id];
}

tsr_engine_stats
tsr_engine_get_stats(tsr_engine *e)
{
    tsr_engine_stats s = {0};
    memset(e->node_seconds, 0, e->d->nnodes * sizeof *e->node_seconds);
    s.node_seconds = e->node_seconds;
    s.nnodes = e->d->nnodes;
    if (e->ops->stats) /* the backend adds what it counted */
        e->ops->stats(e->bk, &s);
    return s;
}

const char *
tsr_engine_node_class(const tsr_engine *e, const tsr_node *n)
{
    return e->ops->node_class ? e->ops->node_class(e->bk, n) : NULL;
}

tsr_status
tsr_engine_render_rect(tsr_engine *e, tsr_rect r, float *out, tsr_error *err)
{
    const tsr_node *root = e->d->root;
    if (!tsr_rect_contains(tsr_rect_make(0, 0, root->w, root->h), r) || tsr_rect_empty(r))
        return tsr_fail(err, TSR_EINVAL, "region %lld,%lld,%lld,%lld: must lie inside the root (%lldx%lld)",
                        (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                        (long long)root->w, (long long)root->h);
    if (e->opts.plan_only) /* its images and tables were never made */
        return tsr_fail(err, TSR_EINVAL, "this engine was made to plan only (plan_only)");
    return e->ops->values(e->bk, r, out, err);
}

void
tsr_design_geom(const tsr_design *d, int64_t rows, tsr_stream_geom *g)
{
    const tsr_output *o = &d->out;
    g->width = (uint64_t)d->root->w;
    g->height = (uint64_t)rows;
    g->swath_width = (uint64_t)tsr_swath_step(d);
    g->bits = tsr_output_bits(o);
    g->overlap = (uint64_t)o->overlap;
    g->overscan = (uint64_t)o->overscan;
    g->planes = (uint64_t)o->planes;
}

/* Rows x the swaths' row bytes (stream/geom.c): at 8 and 16 bits without stage geometry
 * width * height * depth / 8; packed rows (depth 1, 2, 4) are padded per swath. UINT64_MAX
 * when it overflows (the loader's bounds keep a design's far below). */
static uint64_t
design_stream_bytes(const tsr_design *d, int64_t rows)
{
    tsr_stream_geom g;
    uint64_t total;
    tsr_design_geom(d, rows, &g);
    return tsr_geom_total(&g, &total) ? total : UINT64_MAX;
}

uint64_t
tsr_design_stream_bytes(const tsr_design *d, int64_t rows)
{
    return design_stream_bytes(d, rows);
}

uint64_t
tsr_engine_stream_bytes(const tsr_engine *e)
{
    return design_stream_bytes(e->d, e->rows1 - e->rows0);
}

void
tsr_swath_cols(const tsr_design *d, int64_t sw, int64_t k, int64_t *x, int64_t *w)
{
    int64_t W = d->root->w;
    int start = tsr_output_start(&d->out); /* the stage's axes applied */
    bool right = start == TSR_TOP_RIGHT || start == TSR_BOTTOM_RIGHT;
    int64_t a = k * sw, b = a + sw < W ? a + sw : W;
    if (right) {
        *x = W - b;
        *w = b - a;
    } else {
        *x = a;
        *w = b - a;
    }
}

void
tsr_stream_swath(const tsr_design *d, const tsr_stream_geom *g, int64_t k, int64_t *x,
                 int64_t *w, uint64_t *lead, uint64_t *trail)
{
    uint64_t base;
    int corner = tsr_output_start(&d->out);
    tsr_swath_cols(d, tsr_swath_step(d), k, x, w);
    tsr_geom_swath(g, (uint64_t)k, &base, lead, trail);
    /* the overlap: the next swath's first columns, on the side the swaths go to */
    if (corner == TSR_TOP_RIGHT || corner == TSR_BOTTOM_RIGHT)
        *x -= (int64_t)*trail;
    *w += (int64_t)*trail;
}

tsr_status
tsr_engine_stream(tsr_engine *e, tsr_sink *sink, uint64_t start, tsr_progress_fn progress,
                  void *ctx, tsr_error *err)
{
    tsr_stream_opts o = {start, progress, ctx, NULL, NULL};
    return tsr_engine_stream_ex(e, sink, &o, err);
}

/* ---- bands for another engine's stream (backend.h) ------------------------------------ */

tsr_status
tsr_engine_band(tsr_engine *e, int64_t x, int64_t w, int64_t y, int64_t h, bool up,
                uint8_t *dst, tsr_error *err)
{
    int64_t bps = e->d->out.depth / 8, bh = e->shape.band_rows;
    if (e->shape.band_bytes > 0) { /* a backend that sizes bands in bytes (tsr_engine_drain) */
        bh = e->shape.band_bytes / (w * bps);
        bh = bh < 1 ? 1 : (bh > e->shape.band_rows ? e->shape.band_rows : bh);
    }
    tsr_status st = TSR_OK;
    for (int64_t i = 0; i < h && st == TSR_OK; i += bh) {
        int64_t n = h - i < bh ? h - i : bh;
        int64_t y0 = up ? y + h - i - n : y + i;
        tsr_band_job j = {x, w, y0, n, up, bps, dst + i * w * bps, 0, NULL, NULL, NULL};
        st = e->ops->submit(e->bk, &j, err);
        if (st == TSR_OK)
            st = e->ops->complete(e->bk, err);
    }
    return st;
}

int64_t
tsr_engine_band_pool(const tsr_engine *e, int64_t max_band)
{
    int64_t len, own = 0;
    if (!tsr_mul_checked(max_band > 0 ? max_band : 1, 2, &len))
        return -1;
    if (e->ops->attach && (!tsr_mul_checked(e->shape.band_rows, e->d->root->w, &own) ||
                           !tsr_mul_checked(own, e->d->out.depth / 8, &own) ||
                           !tsr_mul_checked(own, e->shape.writer_bufs, &own)))
        return -1;
    return len > own ? len : own;
}

tsr_status
tsr_engine_submit(tsr_engine *e, const tsr_band_job *j, tsr_error *err)
{
    return e->ops->submit(e->bk, j, err);
}

tsr_status
tsr_engine_complete(tsr_engine *e, tsr_error *err)
{
    return e->ops->complete(e->bk, err);
}

tsr_status
tsr_engine_attach(tsr_engine *e, uint8_t *mem, size_t len, tsr_error *err)
{
    return e->ops->attach ? e->ops->attach(e->bk, mem, len, err) : TSR_OK;
}

void
tsr_engine_detach(tsr_engine *e, uint8_t *mem)
{
    if (e->ops->detach)
        e->ops->detach(e->bk, mem);
}

const tsr_backend_shape *
tsr_engine_shape(const tsr_engine *e)
{
    return &e->shape;
}

/* ---- the pipeline: bands submitted in order, completed in order, handed to the writer ----- */

#define PIPE_MAX TSR_PIPE_MAX /* engine/backend.h */

typedef struct pipe_slot {
    uint8_t *buf;
    uint64_t skip, len; /* bytes before the resume offset, bytes of the band */
    int64_t x, w, y, h; /* the band (root columns and rows): where its pixels are dithered */
    bool up;
    int64_t k;          /* its swath, counted in stream order (the stage's alternation) */
    int64_t lead, trail; /* overlap columns it shares with the swath before / after it */
    bool lead_left;     /* the swath before it lies to its left */
    int64_t drop;       /* bit planes: rows of its swath (stream order) before this one are
                         * not sent (a resume inside a unit starts at the unit's first row) */
    bool packed;        /* the backend delivered it dithered and packed (tsr_band_job) */
} pipe_slot;

typedef struct pipeline {
    tsr_engine *e;
    tsr_writer *wr;
    pipe_slot q[PIPE_MAX];
    size_t head, n, depth;
    uint64_t seq;
    uint64_t pos, total; /* bytes handed to the writer so far (resume skip included) */
    uint64_t next;       /* stream offset of the next band pushed */
    tsr_progress_fn progress;
    void *ctx;
    _Atomic uint64_t *computed; /* tsr_stream_opts.computed */
    tsr_dither *dither;         /* depth 1, 2, 4: the array the samples are dithered against */
    uint8_t *row;               /* ... and one packed row (tsr_output_row) */
    int64_t swath;              /* the swath of the bands pushed now ... */
    int64_t lead, trail;        /* ... its overlaps (docs/outputs.md §8) */
    bool lead_left;
    int64_t drop;               /* ... and its first row sent (bit planes' resume) */
    int64_t first, nrows;       /* the root rows a swath spans (stream order from its side) */
    size_t cap;                 /* bytes of a writer buffer */
    uint32_t *wt[2];            /* the overlap's weights for its (at most) two lengths */
    int64_t wt_len[2];
    uint8_t *unit, *planes;     /* bit planes: a unit's rows of samples, and its planes */
    uint64_t skip_out;          /* bit planes: bytes of the next planes not sent (a resume) */
} pipeline;

/* *c = max(*c, v): the pipeline's own accounting never takes back what rects added. */
static void
raise_to(_Atomic uint64_t *c, uint64_t v)
{
    uint64_t old = atomic_load(c);
    while (old < v && !atomic_compare_exchange_weak(c, &old, v))
        ;
}

static void
pipe_free_bufs(pipeline *p)
{
    tsr_dither_free(p->dither);
    free(p->row);
    free(p->wt[0]);
    free(p->wt[1]);
    free(p->unit);
    free(p->planes);
    p->dither = NULL;
    p->row = p->unit = p->planes = NULL;
    p->wt[0] = p->wt[1] = NULL;
}

/* The overlap's weights for an overlap of len columns (one of the two it can have). */
static const uint32_t *
pipe_weights(const pipeline *p, int64_t len)
{
    return len == p->wt_len[0] ? p->wt[0] : p->wt[1];
}

/* Writer buffers: the bands in flight plus what the writer holds (two queued and one being
 * written), so the backend never waits for the sink while the sink has work. `width`: the
 * widest band's columns (a swath's with its overlap). Its buffers hold a band's samples and
 * then, in place, its stream rows (overscan makes them longer, packing shorter). */
static tsr_status
pipe_open(pipeline *p, tsr_engine *e, tsr_sink *sink, int64_t width, int64_t rows,
          tsr_error *err)
{
    memset(p, 0, sizeof *p);
    if (e->opts.plan_only) /* its images and tables were never made */
        return tsr_fail(err, TSR_EINVAL, "this engine was made to plan only (plan_only)");
    p->e = e;
    p->depth = (size_t)(e->shape.depth > 0 && e->shape.depth <= PIPE_MAX ? e->shape.depth : 1);
    const tsr_output *o = &e->d->out;
    int64_t bps = o->depth / 8, pw, rowb, cap;
    if (!tsr_add_checked(width, 2 * o->overscan, &pw) || !tsr_mul_checked(pw, bps, &rowb) ||
        !tsr_mul_checked(rowb, rows, &cap))
        return tsr_fail(err, TSR_ENOMEM, "out of memory (a band of %lld rows)", (long long)rows);
    if (o->bits) { /* the writer's buffers hold a band's samples, packed in place (pipe_pop) */
        p->dither = tsr_dither_new((tsr_dither_kind)o->dither, o->dither_size, err);
        if (!p->dither)
            return err ? err->status : TSR_ENOMEM;
    }
    bool oom = false;
    if (o->bits || o->overscan)
        oom = !(p->row = malloc((size_t)tsr_output_row_bytes(o, pw) + 1));
    if (o->overlap > 0) { /* the full overlap's, and the narrow last swath's */
        int64_t W = e->d->root->w, sw = tsr_swath_step(e->d), last = W % sw ? W % sw : sw;
        p->wt_len[0] = o->overlap < sw ? o->overlap : sw;
        p->wt_len[1] = o->overlap < last ? o->overlap : last;
        for (int t = 0; t < 2 && !oom; t++) {
            oom = !(p->wt[t] = malloc((size_t)p->wt_len[t] * sizeof *p->wt[t]));
            for (int64_t j = 0; !oom && j < p->wt_len[t]; j++)
                p->wt[t][j] = tsr_feather_weight(o->feather, p->wt_len[t], j);
        }
    }
    if (o->planes > 0 && !oom) { /* a unit of `planes` rows, and its planes */
        int64_t ub, pb;
        oom = !tsr_mul_checked(rowb, o->planes, &ub) ||
              !tsr_mul_checked((pw + 7) / 8 * o->depth, o->planes, &pb) ||
              !(p->unit = malloc((size_t)ub)) || !(p->planes = malloc((size_t)pb));
    }
    if (oom) {
        pipe_free_bufs(p);
        return tsr_fail(err, TSR_ENOMEM, "out of memory (the stream's rows)");
    }
    p->cap = (size_t)cap;
    if (!e->ops->attach) {
        p->wr = tsr_writer_new(sink, (size_t)e->shape.writer_bufs, (size_t)cap);
        return p->wr ? TSR_OK : tsr_fail(err, TSR_ENOMEM, "out of memory (writer)");
    }
    /* A backend that pins the pool keeps it for the engine's life (pinning costs time per
     * byte: a profile's samples and a job's streams pin it once); a bigger one replaces it. */
    if (e->wmem.mem &&
        (e->wmem.nbuf != (size_t)e->shape.writer_bufs || e->wmem.cap < (size_t)cap)) {
        e->ops->detach(e->bk, e->wmem.mem);
        tsr_writer_mem_free(&e->wmem);
    }
    if (!e->wmem.mem && !tsr_writer_mem_new(&e->wmem, (size_t)e->shape.writer_bufs, (size_t)cap))
        return tsr_fail(err, TSR_ENOMEM, "out of memory (writer)");
    tsr_status st = e->ops->attach(e->bk, e->wmem.mem, e->wmem.memlen, err);
    if (st != TSR_OK)
        return st;
    p->wr = tsr_writer_new_in(sink, &e->wmem, (size_t)cap); /* never donates its (pinned) pages */
    return p->wr ? TSR_OK : tsr_fail(err, TSR_ENOMEM, "out of memory (writer)");
}

/* Hand n bytes of bit planes to the writer in buffers of its own, the first skip_out bytes
 * left out (a resume). A writer that has failed takes nothing: its error comes from finish. */
static void
pipe_emit(pipeline *p, const uint8_t *b, size_t n)
{
    size_t k = p->skip_out < n ? (size_t)p->skip_out : n;
    b += k;
    n -= k;
    p->skip_out -= k;
    while (n > 0) {
        uint8_t *buf = tsr_writer_acquire(p->wr);
        if (!buf)
            return;
        size_t c = n < p->cap ? n : p->cap;
        memcpy(buf, b, c);
        tsr_writer_submit(p->wr, buf, c);
        b += c;
        n -= c;
    }
}

/* A unit's `rows` rows of pw samples (in p->unit) as its bit planes, the top bit first
 * (docs/outputs.md §2). */
static tsr_status
pipe_planes(pipeline *p, int64_t rows, int64_t pw, tsr_error *err)
{
    const tsr_output *o = &p->e->d->out;
    int depth = (int)o->depth;
    size_t rowb = (size_t)pw * (size_t)(depth / 8), pb = (size_t)(pw + 7) / 8;
    uint8_t *out = p->planes;
    for (int b = depth - 1; b >= 0; b--)
        for (int64_t r = 0; r < rows; r++, out += pb) {
            tsr_status st = tsr_planes_row(p->unit + (size_t)r * rowb, depth, (size_t)pw, b, out,
                                           err);
            if (st != TSR_OK)
                return st;
        }
    pipe_emit(p, p->planes, (size_t)(out - p->planes));
    return TSR_OK;
}

/* A band's rows as the stream carries them (docs/outputs.md §5, §7, §8), in place in its
 * buffer: each row's overlaps feathered, reversed where the stage says, dithered and packed,
 * padded with the overscan; with bit planes gathered into units instead and sent as planes. */
static tsr_status
pipe_rows(pipeline *p, const pipe_slot *s, tsr_error *err)
{
    const tsr_output *o = &p->e->d->out;
    size_t bps = o->depth == 16 ? 2 : 1, in_b = (size_t)s->w * bps;
    int64_t pw = s->w + 2 * o->overscan; /* pixels of a stream row */
    size_t orb = o->planes ? (size_t)pw * bps : (size_t)tsr_output_row_bytes(o, pw);
    /* a row i of the stream starts at i * orb, row i of samples at i * in_b: where rows grow
     * (overscan) they are made from the last one, so none is overwritten before it is read */
    bool back = !o->planes && orb > in_b;
    tsr_status st = TSR_OK;
    for (int64_t n = 0; n < s->h && st == TSR_OK; n++) {
        int64_t i = back ? s->h - 1 - n : n;
        int64_t r = s->up ? s->y + s->h - 1 - i : s->y + i;
        int64_t si = s->up ? p->first + p->nrows - 1 - r : r - p->first; /* in its swath */
        if (o->planes && si < s->drop)
            continue;
        uint8_t *src = s->buf + (size_t)i * in_b;
        if (s->lead || s->trail)
            tsr_feather_row(src, (int)bps, s->w, s->lead, s->trail, s->lead_left,
                            pipe_weights(p, s->lead), pipe_weights(p, s->trail));
        st = tsr_output_row(o, p->dither, src, s->x, s->w, r, tsr_output_reversed(o, s->k, si),
                            o->bits ? p->row : NULL, err);
        if (st != TSR_OK)
            break;
        const uint8_t *data = o->bits ? p->row : src;
        if (o->planes) {
            int64_t u0 = si / o->planes * o->planes;
            int64_t u1 = u0 + o->planes < p->nrows ? u0 + o->planes : p->nrows;
            uint8_t *dst = p->unit + (size_t)(si - u0) * orb;
            if (o->overscan)
                tsr_output_pad(o, data, s->w, dst);
            else
                memcpy(dst, data, orb);
            if (si == u1 - 1)
                st = pipe_planes(p, u1 - u0, pw, err);
            continue;
        }
        uint8_t *dst = s->buf + (size_t)i * orb;
        if (o->overscan)
            tsr_output_pad(o, data, s->w, dst);
        else if (o->bits)
            memcpy(dst, data, orb);
    }
    return st;
}

/* Whether a band's rows need host work besides the dither: overlaps feathered (its lead and
 * trail columns), rows reversed or padded, bit planes (docs/outputs.md §7, §8). */
static bool
stage_rows(const tsr_output *o, int64_t lead, int64_t trail)
{
    return o->mirror_x || o->bidir || o->overscan || o->planes || lead || trail;
}

/* Complete the oldest band and give it to the writer. */
static tsr_status
pipe_pop(pipeline *p, tsr_error *err)
{
    tsr_status st = p->e->ops->complete(p->e->bk, err);
    pipe_slot s = p->q[p->head];
    p->head = (p->head + 1) % PIPE_MAX;
    p->n--;
    const tsr_output *o = &p->e->d->out;
    if (st == TSR_OK && !s.packed && (p->dither || stage_rows(o, s.lead, s.trail)))
        st = pipe_rows(p, &s, err);
    if (st != TSR_OK)
        return st;
    if (o->planes) { /* its rows went out as planes (pipe_planes): the buffer goes back */
        tsr_writer_submit(p->wr, s.buf, 0);
    } else {
        if (s.skip)
            memmove(s.buf, s.buf + s.skip, (size_t)(s.len - s.skip));
        tsr_writer_submit(p->wr, s.buf, (size_t)(s.len - s.skip));
    }
    p->pos += s.len;
    if (p->computed) /* a band computed whole (the GPU, a periodic root) counts now */
        raise_to(p->computed, p->pos);
    if (p->progress)
        p->progress(p->ctx, p->pos, p->total);
    return TSR_OK;
}

/* Submit band b (root rows); *stopped when the writer has failed (its error comes from
 * finish). rb: the bytes of one of its stream rows. */
static tsr_status
pipe_push(pipeline *p, int64_t x, int64_t w, int64_t y, int64_t h, bool up, uint64_t skip,
          uint64_t rb, bool *stopped, tsr_error *err)
{
    int64_t bps = p->e->d->out.depth / 8;
    *stopped = false;
    if (p->e->opts.stop && *p->e->opts.stop) /* any backend, between bands (profile too) */
        return tsr_fail(err, TSR_EINTR, "interrupted");
    if (p->n == p->depth) {
        tsr_status st = pipe_pop(p, err);
        if (st != TSR_OK)
            return st;
    }
    uint8_t *buf = tsr_writer_acquire(p->wr);
    if (!buf) {
        *stopped = true;
        return TSR_OK;
    }
    /* its rects add to the counter from the band's own offset (before the resume offset in
     * the band that holds it: the display takes the larger of this and what was delivered) */
    uint64_t len = (uint64_t)h * rb;
    if (p->computed)
        raise_to(p->computed, p->next);
    p->next += len;
    /* a band whose rows need only the dither may come back packed from the backend (the GPU
     * dithers on the device and copies an eighth of the bytes at depth 1) */
    const tsr_output *o = &p->e->d->out;
    bool packed = false, only_dither = p->dither && !stage_rows(o, p->lead, p->trail);
    tsr_band_job j = {x, w, y, h, up, bps, buf, p->seq++, p->computed,
                      only_dither ? p->dither : NULL, &packed};
    tsr_status st = p->e->ops->submit(p->e->bk, &j, err);
    if (st != TSR_OK)
        return st;
    p->q[(p->head + p->n) % PIPE_MAX] = (pipe_slot){buf,     skip,    len,          x,
                                                    w,       y,       h,            up,
                                                    p->swath, p->lead, p->trail,    p->lead_left,
                                                    p->drop, packed};
    p->n++;
    return TSR_OK;
}

/* Complete what is in flight (when st is still OK), detach, finish the writer: the first error
 * wins. */
static tsr_status
pipe_close(pipeline *p, tsr_status st, tsr_error *err)
{
    while (p->n > 0) {
        if (st == TSR_OK) {
            st = pipe_pop(p, err);
        } else { /* wait for the band's device work, drop it */
            tsr_error ignore;
            (void)p->e->ops->complete(p->e->bk, &ignore);
            p->head = (p->head + 1) % PIPE_MAX;
            p->n--;
        }
    }
    pipe_free_bufs(p);
    tsr_error werr;
    tsr_status ws = tsr_writer_finish(p->wr, &werr);
    if (st == TSR_OK && ws != TSR_OK) {
        if (err)
            *err = werr;
        st = ws;
    }
    return st;
}

tsr_status
tsr_engine_stream_ex(tsr_engine *e, tsr_sink *sink, const tsr_stream_opts *so, tsr_error *err)
{
    static const tsr_stream_opts none = {0};
    if (!so)
        so = &none;
    uint64_t start = so->start;
    const tsr_design *d = e->d;
    const tsr_output *o = &d->out;
    int64_t H = e->rows1 - e->rows0;
    int64_t bh = e->shape.band_rows;
    tsr_stream_geom g;
    tsr_design_geom(d, H, &g);
    int64_t nswath = (int64_t)tsr_geom_swaths(&g);
    uint64_t total = tsr_engine_stream_bytes(e), pos = 0;
    if (start > total)
        return tsr_fail(err, TSR_EINVAL, "resume offset %llu is past the end (%llu bytes)",
                        (unsigned long long)start, (unsigned long long)total);
    pipeline p;
    tsr_status st = pipe_open(&p, e, sink, tsr_band_width(d), bh, err);
    if (st != TSR_OK) {
        pipe_free_bufs(&p);
        if (p.wr)
            (void)tsr_writer_finish(p.wr, NULL);
        return st;
    }
    p.progress = so->progress;
    p.ctx = so->ctx;
    p.computed = so->computed;
    p.total = total;
    p.first = e->rows0;
    p.nrows = H;
    int corner = tsr_output_start(o);
    bool bottom = corner == TSR_BOTTOM_LEFT || corner == TSR_BOTTOM_RIGHT, stopped = false;
    bool right = corner == TSR_TOP_RIGHT || corner == TSR_BOTTOM_RIGHT;
    for (int64_t k = 0; k < nswath && st == TSR_OK && !stopped; k++) {
        int64_t x, w;
        uint64_t lead, trail, rb = 0;
        tsr_stream_swath(d, &g, k, &x, &w, &lead, &trail);
        (void)tsr_geom_row_bytes(&g, (uint64_t)k, &rb); /* the total above did not overflow */
        p.swath = k;
        p.lead = (int64_t)lead;
        p.trail = (int64_t)trail;
        p.lead_left = !right;
        p.drop = 0;
        uint64_t swath_len = (uint64_t)H * rb;
        if (pos + swath_len <= start) { /* before the resume offset: nothing to compute */
            pos += swath_len;
            p.pos = p.next = pos;
            continue;
        }
        if (o->planes && start > pos) { /* from the first row of the unit holding it */
            uint64_t unit = (uint64_t)o->planes * rb, u = (start - pos) / unit;
            p.drop = (int64_t)u * o->planes;
            p.skip_out = start - pos - u * unit;
        }
        bool up = bottom;
        if (o->order == TSR_ORDER_SWATH && o->serpentine && (k & 1))
            up = !up;
        for (int64_t i = 0; i * bh < H && st == TSR_OK && !stopped; i++) {
            int64_t h = (H - i * bh) < bh ? (H - i * bh) : bh;
            int64_t y = up ? H - i * bh - h : i * bh;
            uint64_t len = (uint64_t)h * rb;
            if (o->planes ? i * bh + h <= p.drop : pos + len <= start) { /* nothing to send */
                pos += len;
                p.pos = p.next = pos;
                continue;
            }
            if (so->stop && *so->stop) {
                st = tsr_fail(err, TSR_EINTR, "interrupted");
                break;
            }
            st = pipe_push(&p, x, w, e->rows0 + y, h, up,
                           !o->planes && start > pos ? start - pos : 0, rb, &stopped, err);
            pos += len;
        }
    }
    return pipe_close(&p, st, err);
}

tsr_status
tsr_engine_drain(tsr_engine *e, tsr_rect r, uint64_t *bytes, tsr_error *err)
{
    const tsr_node *root = e->d->root;
    *bytes = 0;
    if (tsr_rect_empty(r) || !tsr_rect_contains(tsr_rect_make(0, 0, root->w, root->h), r))
        return tsr_fail(err, TSR_EINVAL, "region %lld,%lld,%lld,%lld: must lie inside the root (%lldx%lld)",
                        (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                        (long long)root->w, (long long)root->h);
    /* the same pipeline as a stream, into a null sink: what profile measures is what a stream
     * of this region would cost the renderer */
    tsr_sink *null = tsr_sink_open("null", err);
    if (!null)
        return TSR_EIO;
    /* A backend that sizes bands in bytes (the GPU pins its pool: every byte costs) gets bands
     * of those bytes across the region, which may be wider than the stream's swath; the CPU's
     * bands are its plan's rows. */
    int64_t bh = e->shape.band_rows, bps = e->d->out.depth / 8;
    if (e->shape.band_bytes > 0) {
        bh = e->shape.band_bytes / (r.w * bps);
        bh = bh < 1 ? 1 : (bh > e->shape.band_rows ? e->shape.band_rows : bh);
    }
    /* its rows as a stream's of the region's width: overscan, packing, planes (a region is
     * one swath: no overlap) */
    tsr_stream_geom g;
    tsr_design_geom(e->d, r.h, &g);
    g.width = g.swath_width = (uint64_t)r.w;
    uint64_t rb = 0;
    if (!tsr_geom_row_bytes(&g, 0, &rb)) {
        tsr_sink_close(null, NULL);
        return tsr_fail(err, TSR_EINVAL, "region %lld wide: its rows overflow", (long long)r.w);
    }
    pipeline p;
    tsr_status st = pipe_open(&p, e, null, r.w, bh, err);
    if (st != TSR_OK) {
        pipe_free_bufs(&p);
        if (p.wr)
            (void)tsr_writer_finish(p.wr, NULL);
        tsr_sink_close(null, NULL);
        return st;
    }
    p.first = r.y;
    p.nrows = r.h;
    bool stopped = false;
    for (int64_t y = r.y; y < r.y + r.h && st == TSR_OK && !stopped; y += bh) {
        int64_t h = (r.y + r.h - y) < bh ? (r.y + r.h - y) : bh;
        st = pipe_push(&p, r.x, r.w, y, h, false, 0, rb, &stopped, err);
        *bytes += (uint64_t)h * rb;
    }
    st = pipe_close(&p, st, err);
    tsr_error cerr;
    tsr_status cs = tsr_sink_close(null, &cerr);
    if (st == TSR_OK && cs != TSR_OK) {
        if (err)
            *err = cerr;
        st = cs;
    }
    return st;
}

/* ---- the framed stream's header ------------------------------------------------------------ */

/* tsr_design_canonical's sink: the hash itself, so a 16 MiB design is never held twice. */
static void
hash_put(void *ctx, const void *bytes, size_t n)
{
    tsr_sha256_update(ctx, bytes, n);
}

tsr_status
tsr_engine_header(const tsr_engine *e, tsr_header *hd, tsr_error *err)
{
    return tsr_design_header(e->d, e->rows0, e->rows1, hd, err);
}

tsr_status
tsr_design_header(const tsr_design *d, int64_t rows0, int64_t rows1, tsr_header *hd,
                  tsr_error *err)
{
    const tsr_output *o = &d->out;
    tsr_header h = {0};
    h.stage = (uint8_t)((o->bidir == 1 ? 1 : 0) | (o->bidir == 2 ? 2 : 0) |
                        (o->mirror_x ? 4 : 0) | (o->y_up ? 8 : 0));
    h.feather = (uint8_t)(o->overlap ? o->feather : 0);
    h.overlap = (uint32_t)o->overlap;
    h.overscan = (uint32_t)o->overscan;
    h.overscan_value = (uint16_t)o->overscan_value;
    h.planes = (uint32_t)o->planes;
    /* version 1 for every stream it can describe */
    h.version = o->bits || h.stage || h.overlap || h.overscan || h.planes ? 2 : 1;
    h.depth = (uint16_t)tsr_output_bits(o);
    if (o->bits) {
        h.dither = (uint8_t)(o->dither + 1);
        for (int s = o->dither_size; s > 1; s >>= 1)
            h.dither_log2++;
    }
    h.width = (uint64_t)d->root->w;
    h.height = (uint64_t)(rows1 - rows0);
    h.order = o->order == TSR_ORDER_SWATH ? 1 : 0;
    h.serpentine = h.order && o->serpentine ? 1 : 0;
    h.start = h.order ? (uint8_t)tsr_output_start(o) : 0;
    h.swath_width = h.order && (uint64_t)o->swath_width < h.width ? (uint64_t)o->swath_width
                                                                  : h.width;
    h.total = design_stream_bytes(d, rows1 - rows0);

    tsr_sha256 *sh = tsr_sha256_new();
    if (!sh)
        return tsr_fail(err, TSR_ENOMEM, "fingerprint: out of memory (sha256)");
    tsr_design_canonical(d, hash_put, sh);
    /* every trait is bit-identical across backends (docs/format.md §9.3): the backend is not part of
     * the fingerprint, so a job started on one resumes on the other */
    char tail[160];
    snprintf(tail, sizeof tail, "stream:\n  rows: [%lld, %lld]\n", (long long)rows0,
             (long long)rows1);
    tsr_sha256_update(sh, tail, strlen(tail));
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_source *src = d->nodes[i]->source;
        if (!src || !tsr_source_has(src, TSR_SRC_CAP_FILE) || !src->path)
            continue;
        uint8_t fh[32];
        if (tsr_sha256_file(src->path, fh, err) != TSR_OK) {
            tsr_sha256_free(sh);
            return TSR_EIO;
        }
        tsr_sha256_update(sh, fh, sizeof fh);
    }
    tsr_sha256_final(sh, h.fingerprint);
    *hd = h;
    return TSR_OK;
}

size_t
tsr_engine_thread_stack(const tsr_engine *e)
{
    return e->stack;
}
