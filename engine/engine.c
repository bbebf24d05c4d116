/* Engine lifetime, design loading, root rects and the stream in output order. */
#include "engine/engine_int.h"
#include "designs/designs.h"

#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

tsr_design *
tsr_engine_load(const char *path, tsr_error *err)
{
    /* headers only: tsr_engine_new decodes, once its plan has counted the images */
    tsr_design_opts o = {.read_image = tsr_png_read_gray, .read_size = tsr_png_read_info,
                         .defer = true};
    return tsr_design_load(path, &o, err);
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
    const char *be = e->opts.backend ? e->opts.backend : "auto";
    if (strcmp(be, "gpu") == 0) {
        tsr_fail(err, TSR_EINVAL, "--backend gpu: the GPU backend does not render designs yet");
        goto fail;
    }
    if (strcmp(be, "cpu") != 0 && strcmp(be, "auto") != 0) {
        tsr_fail(err, TSR_EINVAL, "--backend %s: must be cpu, gpu or auto", be);
        goto fail;
    }
    e->backend = "cpu";
    e->threads = e->opts.threads > 0 ? e->opts.threads : omp_get_num_procs();
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
    e->node_ns = calloc(d->nnodes, sizeof *e->node_ns);
    e->node_seconds = calloc(d->nnodes, sizeof *e->node_seconds);
    if (!e->tile || !e->grid || !e->node_ns || !e->node_seconds) {
        tsr_fail(err, TSR_ENOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        e->tile[i] = e->opts.tile > 0 ? e->opts.tile : n->tile;
        e->grid[i] = tsr_grid_make(n->w, n->h, e->tile[i]);
    }
    if (tsr_plan_make(e, err) != TSR_OK)
        goto fail;
    e->cache = tsr_cache_new((size_t)e->plan.cache);
    if (!e->cache) {
        tsr_fail(err, TSR_ENOMEM, "out of memory (cache)");
        goto fail;
    }
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
    tsr_cache_free(e->cache);
    free(e->tile);
    free(e->period);
    free(e->root_period);
    free(e->grid);
    free(e->node_ns);
    free(e->node_seconds);
    free(e);
}

const tsr_plan *
tsr_engine_plan(const tsr_engine *e)
{
    return &e->plan;
}

const char *
tsr_engine_backend(const tsr_engine *e)
{
    return e->backend;
}

int
tsr_engine_threads(const tsr_engine *e)
{
    return e->threads;
}

bool
tsr_engine_period(const tsr_engine *e, const tsr_node *n, int64_t p[2])
{
    bool periodic = e->period && e->period[n->id][0];
    p[0] = periodic ? e->period[n->id][0] : 0;
    p[1] = periodic ? e->period[n->id][1] : 0;
    return periodic;
}

tsr_engine_stats
tsr_engine_get_stats(tsr_engine *e)
{
    tsr_cache_stats cs = tsr_cache_get_stats(e->cache);
    tsr_engine_stats s = {0};
    s.hits = cs.hits;
    s.misses = cs.misses;
    s.evictions = cs.evictions;
    s.waits = cs.waits;
    s.overflow = cs.overflow;
    s.cache_bytes = (int64_t)cs.bytes;
    s.cache_peak = (int64_t)cs.peak_bytes;
    s.node_seconds = e->node_seconds;
    s.nnodes = e->d->nnodes;
    for (size_t i = 0; i < e->d->nnodes; i++)
        e->node_seconds[i] = (double)atomic_load(&e->node_ns[i]) * 1e-9;
    for (size_t i = 0; i < 16; i++)
        s.trait_seconds[i] = (double)atomic_load(&e->trait_ns[i]) * 1e-9;
    return s;
}

/* ---- rects of the root ----------------------------------------------------------------- */

/* Root rect r cut into pieces at most one root tile wide, so a band spreads over threads. */
static size_t
cut_rects(const tsr_engine *e, tsr_rect r, tsr_rect **out)
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

tsr_status
tsr_engine_render_rect(tsr_engine *e, tsr_rect r, float *out, tsr_error *err)
{
    const tsr_node *root = e->d->root;
    if (!tsr_rect_contains(tsr_rect_make(0, 0, root->w, root->h), r) || tsr_rect_empty(r))
        return tsr_fail(err, TSR_EINVAL, "region %lld,%lld,%lld,%lld: must lie inside the root (%lldx%lld)",
                        (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                        (long long)root->w, (long long)root->h);
    int64_t bh = e->plan.band_rows; /* what the plan's per-thread figure assumes */
    for (int64_t y = r.y; y < r.y + r.h; y += bh) {
        tsr_rect band = tsr_rect_make(r.x, y, r.w, (r.y + r.h - y) < bh ? (r.y + r.h - y) : bh);
        tsr_rect *rects;
        size_t n = cut_rects(e, band, &rects);
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

/* ---- the stream ----------------------------------------------------------------------- */

/* One band of the stream: root columns [x, x+w), crop rows [y, y+h) (crop coordinates),
 * written bottom row first when `up`. */
typedef struct band {
    int64_t x, w, y, h;
    bool up;
} band;

typedef struct quant_ctx {
    const tsr_engine *e;
    const tsr_rect *rects;
    band b;
    int64_t root_y; /* root row of crop row b.y */
    int64_t bps;
    uint8_t *buf;   /* b.w * b.h samples */
} quant_ctx;

/* Quantize a computed root rect straight into its place in the band buffer (the last pass
 * over the rect, while it is still in this core's cache). */
static void
emit_quant(void *ctx, size_t k, const float *px)
{
    quant_ctx *q = ctx;
    tsr_rect r = q->rects[k];
    for (int64_t y = 0; y < r.h; y++) {
        int64_t row = r.y - q->root_y + y;
        if (q->b.up)
            row = q->b.h - 1 - row;
        uint8_t *dst = q->buf + (row * q->b.w + (r.x - q->b.x)) * q->bps;
        tsr_convert(&q->e->d->out, px + y * r.w, (size_t)r.w, dst);
    }
}

/* ---- a periodic root ------------------------------------------------------------------
 * When the root itself repeats (engine/plan.c finds its period Px x Py: a motif repeated over
 * the whole root), every output sample is the converted value of one pixel of its period, and
 * the conversion is per pixel. So the period is computed and converted once, and every band is
 * filled by copying sample rows: no per-band tile computation, float copy or conversion at all
 * (the bits are the same: tsr_convert of a value does not depend on its neighbours). */

static tsr_status
root_period_samples(tsr_engine *e, tsr_error *err)
{
    if (e->root_period)
        return TSR_OK;
    const tsr_node *root = e->d->root;
    int64_t pw = e->period[root->id][0], ph = e->period[root->id][1], bps = e->d->out.depth / 8;
    tsr_tile *t = tsr_tile_new(tsr_rect_make(0, 0, pw, ph));
    uint8_t *s = malloc((size_t)(pw * ph * bps));
    tsr_status st = TSR_OK;
    if (!t || !s)
        st = tsr_fail(err, TSR_ENOMEM, "out of memory (period of %s)", root->name);
    else
        st = tsr_cpu_compute_direct(e, root, t->r, t->px, err);
    if (st == TSR_OK)
        for (int64_t y = 0; y < ph; y++)
            tsr_convert(&e->d->out, t->px + y * pw, (size_t)pw, s + y * pw * bps);
    tsr_tile_free(t);
    if (st != TSR_OK) {
        free(s);
        return st;
    }
    e->root_period = s;
    return TSR_OK;
}

/* Band b (root columns [b.x, b.x + b.w), root rows from root_y) of a periodic root. */
static void
fill_periodic(const tsr_engine *e, band b, int64_t root_y, int64_t bps, uint8_t *buf)
{
    const tsr_node *root = e->d->root;
    int64_t pw = e->period[root->id][0], ph = e->period[root->id][1];
    int64_t x0 = tsr_floor_mod(b.x, pw), py = tsr_floor_mod(root_y, ph);
    size_t row = (size_t)(b.w * bps), prow = (size_t)(pw * bps);
    for (int64_t j = 0; j < b.h; j++) {
        uint8_t *dst = buf + (size_t)(b.up ? b.h - 1 - j : j) * row;
        if (j >= ph) {
            /* a row Py above (in root order) is this row: one long copy */
            int64_t same = b.up ? b.h - 1 - (j - ph) : j - ph;
            memcpy(dst, buf + (size_t)same * row, row);
        } else {
            /* one period from phase x0, then doubling copies of what is already there (a
             * whole number of periods each time) */
            const uint8_t *src = e->root_period + (size_t)py * prow;
            size_t first = (size_t)((pw - x0) * bps), done;
            if (first > row)
                first = row;
            memcpy(dst, src + x0 * bps, first);
            done = first;
            if (done < row) {
                size_t more = prow - first < row - done ? prow - first : row - done;
                memcpy(dst + done, src, more);
                done += more;
            }
            while (done < row) {
                size_t n = done < row - done ? done : row - done;
                memcpy(dst + done, dst, n);
                done += n;
            }
        }
        if (++py == ph)
            py = 0;
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

/* Fill one band: the periodic shortcut, or the root's tiles computed in parallel and
 * quantized into place. */
static tsr_status
fill_band(tsr_engine *e, band b, int64_t root_y, int64_t bps, uint8_t *buf, tsr_error *err)
{
    if (e->period && e->period[e->d->root->id][0]) {
        tsr_status st = root_period_samples(e, err); /* counts its own compute time */
        if (st != TSR_OK)
            return st;
        uint64_t t0 = tsr_now_ns();
        fill_periodic(e, b, root_y, bps, buf);
        /* the copies are the root's own time too (profile's per-node seconds) */
        atomic_fetch_add(&e->node_ns[e->d->root->id], tsr_now_ns() - t0);
        return TSR_OK;
    }
    tsr_rect *rects;
    size_t n = cut_rects(e, tsr_rect_make(b.x, root_y, b.w, b.h), &rects);
    if (!n)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    quant_ctx q = {e, rects, b, root_y, bps, buf};
    tsr_status st = tsr_cpu_root_batch(e, rects, n, emit_quant, &q, err);
    free(rects);
    heap_within_budget(e); /* between bands: no tile is being computed */
    return st;
}

uint64_t
tsr_engine_stream_bytes(const tsr_engine *e)
{
    return (uint64_t)e->d->root->w * (uint64_t)(e->rows1 - e->rows0) *
           (uint64_t)(e->d->out.depth / 8);
}

/* Swath k's columns for the start corner: from the left, or from the right edge inward. */
static void
swath_cols(const tsr_engine *e, int64_t sw, int64_t k, int64_t *x, int64_t *w)
{
    int64_t W = e->d->root->w;
    int start = e->d->out.start;
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

tsr_status
tsr_engine_stream(tsr_engine *e, tsr_sink *sink, uint64_t start, tsr_progress_fn progress,
                  void *ctx, tsr_error *err)
{
    tsr_stream_opts o = {start, progress, ctx, NULL};
    return tsr_engine_stream_ex(e, sink, &o, err);
}

tsr_status
tsr_engine_stream_ex(tsr_engine *e, tsr_sink *sink, const tsr_stream_opts *so, tsr_error *err)
{
    static const tsr_stream_opts none = {0};
    if (!so)
        so = &none;
    uint64_t start = so->start;
    tsr_progress_fn progress = so->progress;
    void *ctx = so->ctx;
    const tsr_design *d = e->d;
    const tsr_output *o = &d->out;
    int64_t W = d->root->w, H = e->rows1 - e->rows0, bps = o->depth / 8;
    int64_t sw = o->order == TSR_ORDER_SWATH && o->swath_width < W ? o->swath_width : W;
    int64_t nswath = (W + sw - 1) / sw;
    int64_t bh = e->plan.band_rows;
    uint64_t total = tsr_engine_stream_bytes(e), pos = 0;
    if (start > total)
        return tsr_fail(err, TSR_EINVAL, "resume offset %llu is past the end (%llu bytes)",
                        (unsigned long long)start, (unsigned long long)total);
    tsr_writer *wr = tsr_writer_new(sink, 3, (size_t)(sw * bh * bps));
    if (!wr)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (writer)");
    tsr_status st = TSR_OK;
    bool bottom = o->start == TSR_BOTTOM_LEFT || o->start == TSR_BOTTOM_RIGHT;
    for (int64_t k = 0; k < nswath && st == TSR_OK; k++) {
        band b;
        swath_cols(e, sw, k, &b.x, &b.w);
        b.up = bottom;
        if (o->order == TSR_ORDER_SWATH && o->serpentine && (k & 1))
            b.up = !b.up;
        for (int64_t i = 0; i * bh < H && st == TSR_OK; i++) {
            b.h = (H - i * bh) < bh ? (H - i * bh) : bh;
            b.y = b.up ? H - i * bh - b.h : i * bh;
            uint64_t len = (uint64_t)(b.w * b.h * bps);
            if (pos + len <= start) { /* before the resume offset: nothing to compute */
                pos += len;
                continue;
            }
            if (so->stop && *so->stop) {
                st = tsr_fail(err, TSR_EINTR, "interrupted");
                break;
            }
            uint8_t *buf = tsr_writer_acquire(wr);
            if (!buf)
                break; /* the writer failed: its error comes from finish */
            st = fill_band(e, b, e->rows0 + b.y, bps, buf, err);
            if (st != TSR_OK)
                break;
            uint64_t skip = start > pos ? start - pos : 0;
            if (skip)
                memmove(buf, buf + skip, (size_t)(len - skip));
            tsr_writer_submit(wr, buf, (size_t)(len - skip));
            pos += len;
            if (progress)
                progress(ctx, pos, total);
        }
    }
    tsr_error werr;
    tsr_status ws = tsr_writer_finish(wr, &werr);
    if (st == TSR_OK && ws != TSR_OK) {
        if (err)
            *err = werr;
        st = ws;
    }
    return st;
}

tsr_status
tsr_engine_drain(tsr_engine *e, tsr_rect r, uint64_t *bytes, tsr_error *err)
{
    const tsr_node *root = e->d->root;
    if (tsr_rect_empty(r) || !tsr_rect_contains(tsr_rect_make(0, 0, root->w, root->h), r))
        return tsr_fail(err, TSR_EINVAL, "region %lld,%lld,%lld,%lld: must lie inside the root (%lldx%lld)",
                        (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                        (long long)root->w, (long long)root->h);
    int64_t bh = e->plan.band_rows, bps = e->d->out.depth / 8;
    uint8_t *buf = malloc((size_t)(r.w * bh * bps));
    if (!buf)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (band)");
    tsr_status st = TSR_OK;
    *bytes = 0;
    for (int64_t y = r.y; y < r.y + r.h && st == TSR_OK; y += bh) {
        band b = {r.x, r.w, y, (r.y + r.h - y) < bh ? (r.y + r.h - y) : bh, false};
        st = fill_band(e, b, b.y, bps, buf, err);
        *bytes += (uint64_t)(b.w * b.h * bps);
    }
    free(buf);
    return st;
}

/* ---- the framed stream's header ------------------------------------------------------------ */

/* Keep a dump line in the fingerprint? Names and tiles do not change a sample (DESIGN.md §3);
 * an image path is replaced by its index, its bytes are hashed instead. */
static void
fingerprint_line(tsr_sha256 *h, char *line, size_t *nimg)
{
    static const char *const drop[] = {"name: ", "tile: ", "    name: ", "    tile: ", NULL};
    for (int i = 0; drop[i]; i++)
        if (strncmp(line, drop[i], strlen(drop[i])) == 0)
            return;
    if (strncmp(line, "        child: ", 15) == 0) {
        char *hash = strstr(line, "  # ");
        if (hash) {
            hash[0] = '\n';
            hash[1] = '\0';
        }
    }
    if (strncmp(line, "      image: ", 13) == 0) {
        char b[64];
        snprintf(b, sizeof b, "      image: input %zu\n", (*nimg)++);
        tsr_sha256_update(h, b, strlen(b));
        return;
    }
    tsr_sha256_update(h, line, strlen(line));
}

tsr_status
tsr_engine_header(const tsr_engine *e, tsr_header *hd, tsr_error *err)
{
    const tsr_design *d = e->d;
    const tsr_output *o = &d->out;
    tsr_header h = {0};
    h.version = 1;
    h.depth = (uint16_t)o->depth;
    h.width = (uint64_t)d->root->w;
    h.height = (uint64_t)(e->rows1 - e->rows0);
    h.order = o->order == TSR_ORDER_SWATH ? 1 : 0;
    h.serpentine = h.order && o->serpentine ? 1 : 0;
    h.start = h.order ? (uint8_t)o->start : 0;
    h.swath_width = h.order && (uint64_t)o->swath_width < h.width ? (uint64_t)o->swath_width
                                                                  : h.width;
    h.total = tsr_engine_stream_bytes(e);

    char *dump = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&dump, &len);
    if (!f)
        return tsr_fail(err, TSR_ENOMEM, "fingerprint: out of memory");
    tsr_design_dump(d, f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        free(dump);
        return tsr_fail(err, TSR_ENOMEM, "fingerprint: out of memory");
    }
    tsr_sha256 *sh = tsr_sha256_new();
    if (!sh) {
        free(dump);
        return tsr_fail(err, TSR_ENOMEM, "fingerprint: out of memory (sha256)");
    }
    size_t nimg = 0;
    for (char *line = dump; line && *line;) {
        char *nl = strchr(line, '\n');
        char *next = nl ? nl + 1 : NULL;
        char save = 0;
        if (next) {
            save = *next;
            *next = '\0';
        }
        fingerprint_line(sh, line, &nimg);
        if (next)
            *next = save;
        line = next;
    }
    free(dump);
    bool blur = false;
    for (size_t i = 0; i < d->nnodes; i++)
        for (size_t k = 0; k < d->nodes[i]->nedges; k++)
            blur |= strcmp(d->nodes[i]->edges[k].trait->name, "blur") == 0;
    char tail[160];
    snprintf(tail, sizeof tail, "stream:\n  rows: [%lld, %lld]\n%s%s%s",
             (long long)e->rows0, (long long)e->rows1, blur ? "  backend: " : "",
             blur ? e->backend : "", blur ? "\n" : "");
    tsr_sha256_update(sh, tail, strlen(tail));
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_source *src = d->nodes[i]->source;
        if (!src || src->kind != TSR_SRC_IMAGE || !src->path)
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
