/* tessera preview and tessera check's printout, and size parsing. */
#include "designs/designs.h"
#include "engine/engine_int.h"
#include "gpu/gpu.h"
#include "image/image.h"
#include "nodes/params.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns one render call covers at least when blocks are at most this wide (as many whole
 * blocks as fit, and at least two root tiles per thread so every worker has rects); wider
 * blocks get a strip of one row. */
#define PREVIEW_COLS 4096

/* Samples one call of the fast preview computes at most (a 1 x 1 rect and a float each: 1.3 MB
 * whatever the image's shape), fewer where the plan's band buffers are smaller. */
#define FAST_BATCH 65536

/* The tile edge of a fast preview's engine where no edge reads a neighbourhood: a sample
 * computes the child tiles under it, so small ones cost little (the 100 mm wafer at --scale
 * 300: 3.1 s of CPU at 16, 8.2 s at its own 512; 8 and 32 cost about what 16 does). A blur or
 * distance would read a halo of many small tiles for each sample (3 blurs of sigma 50: over
 * 60 s at 16 or 64, 18 s at the design's own). */
#define FAST_TILE 16

/* A preview in progress: the PNG writer asks for its rows in order (preview_row), and the
 * rows are made a strip of render calls (exact) or a batch of samples (fast) at a time, so
 * neither the image nor the region is ever held whole. What it holds beside the engine's plan
 * (the strip's floats or row sums, a few output rows, two doubles a block column) is sized
 * to the plan's band buffers, which a preview never allocates (docs/semantics.md §1). */
typedef struct preview {
    tsr_engine *e;
    tsr_rect r;
    int64_t kx, ky, ow, oh;
    const tsr_output *o;
    size_t bps;
    _Atomic uint64_t *done;
    bool fast;
    /* output rows [base, ready) of the image are in out (cap rows of ow samples) */
    uint8_t *out;
    int64_t cap, base, ready;
    /* exact: strips of scols x srows region pixels; the next strip row starts at sy */
    int64_t scols, srows, sy;
    bool sums;    /* the backend's row sums (tsr_backend_ops.rowsums) instead of values */
    float *px;    /* a strip's values (values path) */
    double *rs;   /* a strip's row sums, srows x ow (row sums path) */
    double *racc; /* per block column: the current row's sum so far (left to right) */
    double *acc;  /* per block column: the sum of the block's finished rows (top to bottom) */
    /* fast */
    int64_t batch; /* samples a call */
    tsr_rect *rects;
    float *v;
} preview;

/* One converted sample into output row `row` of the buffer. */
static void
put_sample(preview *p, int64_t row, int64_t bx, double mean)
{
    uint32_t v = tsr_convert_one(p->o, mean);
    size_t at = (size_t)(row - p->base) * (size_t)p->ow + (size_t)bx;
    if (p->bps == 1)
        p->out[at] = (uint8_t)v;
    else
        ((uint16_t *)p->out)[at] = (uint16_t)v;
}

/* Block bx's columns in the region: [bx * kx, end). */
static int64_t
block_end(const preview *p, int64_t bx)
{
    return (bx + 1) * p->kx < p->r.w ? (bx + 1) * p->kx : p->r.w;
}

/* Region row ry is done for the columns [sx, sx + cw): a block whose last column lies there
 * adds its row sum (racc) to its block sum; after the last row of a block row, those blocks
 * are converted. Each block is thus the sum, top to bottom, of its rows' sums, each row's
 * values summed left to right, in double: an order the device can keep (gpu/preview.cu). */
static void
row_done(preview *p, int64_t sx, int64_t cw, int64_t ry)
{
    bool last = (ry + 1) % p->ky == 0 || ry + 1 == p->r.h;
    int64_t by = ry / p->ky, bh = ry + 1 - by * p->ky;
    for (int64_t bx = sx / p->kx; bx <= (sx + cw - 1) / p->kx; bx++) {
        int64_t end = block_end(p, bx);
        if (end > sx + cw)
            continue; /* its row goes on in a later strip */
        p->acc[bx] += p->racc[bx];
        p->racc[bx] = 0.0;
        if (!last)
            continue;
        int64_t bw = end - bx * p->kx;
        put_sample(p, by, bx, p->acc[bx] / ((double)bw * (double)bh));
        p->acc[bx] = 0.0;
    }
}

/* Strip (sx, sy, cw x sh) of region values into the sums, row by row. */
static void
fold_values(preview *p, int64_t sx, int64_t sy, int64_t cw, int64_t sh)
{
    for (int64_t y = 0; y < sh; y++) {
        const float *row = p->px + y * cw;
        for (int64_t x = 0; x < cw; x++)
            p->racc[(sx + x) / p->kx] += (double)row[x];
        row_done(p, sx, cw, sy + y);
    }
}

/* The next strip row of the exact preview. */
static tsr_status
exact_strips(preview *p, tsr_error *err)
{
    int64_t sy = p->sy, sh = p->r.h - sy < p->srows ? p->r.h - sy : p->srows;
    tsr_status st = TSR_OK;
    if (p->sums) { /* whole rows of whole blocks: the backend sums each block's row */
        int64_t nb = p->ow;
        st = p->e->ops->rowsums(p->e->bk, tsr_rect_make(p->r.x, p->r.y + sy, p->r.w, sh),
                                p->kx, p->rs, err);
        for (int64_t y = 0; y < sh && st == TSR_OK; y++) {
            memcpy(p->racc, p->rs + y * nb, (size_t)nb * sizeof *p->racc);
            row_done(p, 0, p->r.w, sy + y);
        }
        if (st == TSR_OK && p->done)
            atomic_fetch_add_explicit(p->done, (uint64_t)(p->r.w * sh), memory_order_relaxed);
    } else {
        for (int64_t sx = 0; sx < p->r.w && st == TSR_OK; sx += p->scols) {
            int64_t cw = p->r.w - sx < p->scols ? p->r.w - sx : p->scols;
            st = tsr_engine_render_rect(p->e, tsr_rect_make(p->r.x + sx, p->r.y + sy, cw, sh),
                                        p->px, err);
            if (st != TSR_OK)
                break;
            fold_values(p, sx, sy, cw, sh);
            if (p->done)
                atomic_fetch_add_explicit(p->done, (uint64_t)(cw * sh), memory_order_relaxed);
        }
    }
    if (st != TSR_OK)
        return st;
    p->sy = sy + sh;
    p->ready = p->sy == p->r.h ? p->oh : p->sy / p->ky;
    return TSR_OK;
}

/* splitmix64 (Steele, Lea, Flood 2014): a fixed, documented scatter of the fast samples. */
static uint64_t
splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* --fast: sample s of block (bx, by), whose top-left region pixel is (x0, y0) and clipped size
 * bw x bh: h = splitmix64((by * ow + bx) * TSR_PREVIEW_FAST_SAMPLES + s), at region pixel
 * (x0 + h mod bw, y0 + (h >> 32) mod bh). Scattered, not on a lattice: a lattice of samples
 * shows a grating finer than K as one of its phases (the wafer's 10 px lines sampled every
 * 300 px at the block centres came out black), scattered ones show it grey. */
static tsr_rect
fast_sample(tsr_rect r, int64_t kx, int64_t ky, int64_t ow, int64_t bx, int64_t by, int s)
{
    int64_t x0 = bx * kx, y0 = by * ky;
    int64_t bw = r.w - x0 < kx ? r.w - x0 : kx, bh = r.h - y0 < ky ? r.h - y0 : ky;
    uint64_t h = splitmix64(((uint64_t)by * (uint64_t)ow + (uint64_t)bx) *
                                TSR_PREVIEW_FAST_SAMPLES + (uint64_t)s);
    return tsr_rect_make(r.x + x0 + (int64_t)(h % (uint64_t)bw),
                         r.y + y0 + (int64_t)((h >> 32) % (uint64_t)bh), 1, 1);
}

/* The fast overview's rows [base, base + n): each output pixel is the mean (in double, in
 * sample order) of the values of TSR_PREVIEW_FAST_SAMPLES region pixels of its block
 * (fast_sample), computed through the engine's values path for those pixels alone. On the CPU
 * a batch of samples goes to the workers as 1 x 1 root rects, so only the child tiles under
 * the samples are computed. */
static tsr_status
fast_rows(preview *p, int64_t n, tsr_error *err)
{
    const int S = TSR_PREVIEW_FAST_SAMPLES;
    int64_t per = p->batch / S, end = (p->base + n) * p->ow;
    tsr_engine *e = p->e;
    tsr_status st = TSR_OK;
    for (int64_t p0 = p->base * p->ow; p0 < end && st == TSR_OK; p0 += per) {
        int64_t np = end - p0 < per ? end - p0 : per;
        size_t m = 0;
        for (int64_t q = p0; q < p0 + np; q++)
            for (int s = 0; s < S; s++)
                p->rects[m++] = fast_sample(p->r, p->kx, p->ky, p->ow, q % p->ow, q / p->ow, s);
        if (e->ops->samples) {
            st = e->ops->samples(e->bk, p->rects, m, p->v, p->done, err);
        } else { /* another backend: its values path, one sample at a time */
            for (size_t k = 0; k < m && st == TSR_OK; k++) {
                st = tsr_engine_render_rect(e, p->rects[k], &p->v[k], err);
                if (st == TSR_OK && p->done)
                    atomic_fetch_add_explicit(p->done, 1, memory_order_relaxed);
            }
        }
        for (int64_t q = 0; q < np && st == TSR_OK; q++) {
            double sum = 0.0;
            for (int s = 0; s < S; s++)
                sum += (double)p->v[q * S + s];
            put_sample(p, (p0 + q) / p->ow, (p0 + q) % p->ow, sum / S);
        }
    }
    if (st == TSR_OK)
        p->ready = p->base + n;
    return st;
}

/* tsr_png_row_fn: image row y, made when first asked for (rows before it are written). */
static tsr_status
preview_row(void *ctx, int64_t y, const void **row, tsr_error *err)
{
    preview *p = ctx;
    if (y >= p->ready) {
        p->base = y;
        tsr_status st = TSR_OK;
        if (p->fast)
            st = fast_rows(p, p->oh - y < p->cap ? p->oh - y : p->cap, err);
        while (st == TSR_OK && !p->fast && p->ready <= y)
            st = exact_strips(p, err);
        if (st != TSR_OK)
            return st;
    }
    *row = p->out + (size_t)(y - p->base) * (size_t)p->ow * p->bps;
    return TSR_OK;
}

/* Size the strips and buffers to `room` bytes (the plan's band buffers) and allocate them. */
static tsr_status
preview_setup(preview *p, int64_t room, tsr_error *err)
{
    int64_t t = p->e->tile[p->e->d->root->id], ow = p->ow, rowb = ow * (int64_t)p->bps;
    int64_t threads = p->e->threads > 0 ? p->e->threads : 1;
    room -= 2 * ow * (int64_t)sizeof(double); /* racc, acc */
    if (p->fast) {
        int64_t per_sample = (int64_t)(sizeof(tsr_rect) + sizeof(float));
        p->cap = (FAST_BATCH / TSR_PREVIEW_FAST_SAMPLES) / ow;
        p->cap = p->cap < 1 ? 1 : p->cap;
        room -= p->cap * rowb;
        p->batch = room / per_sample < FAST_BATCH ? room / per_sample : FAST_BATCH;
        p->batch -= p->batch % TSR_PREVIEW_FAST_SAMPLES;
        if (p->batch < TSR_PREVIEW_FAST_SAMPLES)
            p->batch = TSR_PREVIEW_FAST_SAMPLES; /* the small constant docs/semantics.md names */
        p->rects = malloc((size_t)p->batch * sizeof *p->rects);
        p->v = malloc((size_t)p->batch * sizeof *p->v);
    } else if (p->sums) {
        /* whole rows: as many as the room holds, at least a block's and at most the region's */
        int64_t each = ow * (int64_t)sizeof(double) + rowb;
        p->srows = room / each > 0 ? room / each : 1;
        if (p->srows > p->r.h)
            p->srows = p->r.h;
        p->scols = p->r.w;
        p->cap = p->srows / p->ky + 2;
        p->rs = malloc((size_t)p->srows * (size_t)ow * sizeof *p->rs);
    } else {
        int64_t want = PREVIEW_COLS > 2 * threads * t ? PREVIEW_COLS : 2 * threads * t;
        if (p->kx <= want) {
            p->scols = p->kx * (want / p->kx);
            p->srows = t;
        } else { /* wide blocks: one row of strips, a block's row carried across them */
            p->scols = t * want;
            p->srows = 1;
        }
        p->scols = p->scols < p->r.w ? p->scols : p->r.w;
        p->srows = p->srows < p->r.h ? p->srows : p->r.h;
        /* fewer rows, then narrower strips (whole blocks, or any width for one row), until
         * the strip's floats and the rows it completes fit */
        while (p->srows > 1 && p->srows * p->scols * 4 + (p->srows / p->ky + 2) * rowb > room)
            p->srows /= 2;
        int64_t step = p->srows == 1 ? 1 : p->kx;
        while (p->scols > step && p->scols * 4 + (p->srows / p->ky + 2) * rowb > room) {
            int64_t c = p->scols / 2;
            p->scols = c > step ? c - c % step : step;
        }
        if (p->srows > 1 && p->scols < p->r.w && p->scols % p->kx != 0)
            p->srows = 1; /* a block split across strips is fed one row at a time */
        p->cap = p->srows / p->ky + 2;
        p->px = malloc((size_t)p->srows * (size_t)p->scols * sizeof *p->px);
    }
    if (p->cap > p->oh)
        p->cap = p->oh;
    p->out = malloc((size_t)p->cap * (size_t)rowb);
    p->racc = calloc((size_t)ow, sizeof *p->racc);
    p->acc = calloc((size_t)ow, sizeof *p->acc);
    bool strip = p->fast ? p->rects && p->v : (p->sums ? p->rs != NULL : p->px != NULL);
    if (!strip || !p->out || !p->racc || !p->acc)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (preview of %lldx%lld)",
                        (long long)p->ow, (long long)p->oh);
    return TSR_OK;
}

static void
preview_free(preview *p)
{
    free(p->out);
    free(p->px);
    free(p->rs);
    free(p->racc);
    free(p->acc);
    free(p->rects);
    free(p->v);
}

/* ---- choosing between the exact preview and --fast by estimated cost ---------------------
 *
 * --fast computes TSR_PREVIEW_FAST_SAMPLES 1 x 1 root rects a block, each with the child tiles
 * under it; the exact preview computes every region pixel once, in root tiles. Sampling is
 * cheaper for large blocks of cheap nodes, and far dearer where a sample reads a large
 * neighbourhood (a distance of dmax 4096 scans a window of 8193^2 pixels for each sample: 10.5
 * min against 48 s for the exact preview) or where the blocks are small (a 1 x 1 rect costs
 * about what COST_CALL pixels do). The estimate counts, per node, the pixels its computations
 * cover (its rect, and each edge's child window, which its trait reads whole) times the times
 * it is computed, a node's tiles at most once each (the cache keeps them) and each call
 * COST_CALL more; whichever way is cheaper runs, so --fast is never the slower one by more
 * than the estimate's error. */
#define COST_CALL 64.0

typedef struct cost_node {
    int64_t fw, fh; /* the largest rect a fast sample asks of the node */
    int64_t xw, xh; /* the largest rect one exact root tile asks of it */
    bool seen;
} cost_node;

/* Pixels one computation of node n over a w x h rect covers: its rect and every edge's child
 * windows. */
static double
node_work(const tsr_node *n, int64_t w, int64_t h)
{
    double c = (double)w * (double)h + COST_CALL;
    tsr_rect r = tsr_rect_make(n->w > w ? (n->w - w) / 2 : 0, n->h > h ? (n->h - h) / 2 : 0, w, h);
    for (size_t k = 0; k < n->nedges; k++) {
        tsr_rect want[TSR_NEED_MAX];
        size_t nw = n->edges[k].trait->need(&n->edges[k], r, want);
        for (size_t i = 0; i < nw; i++)
            c += (double)want[i].w * (double)want[i].h;
    }
    return c;
}

/* Tiles of edge t covering a w x h rect at worst (not aligned), at most the node's. */
static double
tiles_over(const tsr_node *n, int64_t t, int64_t w, int64_t h)
{
    double nx = (double)((w + t - 2) / t + 1), ny = (double)((h + t - 2) / t + 1);
    double mx = (double)((n->w + t - 1) / t), my = (double)((n->h + t - 1) / t);
    return (nx < mx ? nx : mx) * (ny < my ? ny : my);
}

/* Estimated pixels computed by the exact preview (*exact) and by --fast (*fast) of a region
 * of rw x rh in blocks of kx x ky, with node tile edges tile[] (per node id). */
static void
preview_costs(const tsr_design *d, const int64_t *tile, int64_t rw, int64_t rh, int64_t kx,
              int64_t ky, double *exact, double *fast)
{
    double blocks = (double)((rw + kx - 1) / kx) * (double)((rh + ky - 1) / ky);
    double samples = blocks * TSR_PREVIEW_FAST_SAMPLES;
    const tsr_node *root = d->root;
    int64_t troot = tile[root->id];
    double root_tiles = tiles_over(root, troot, rw, rh);
    *exact = 0;
    *fast = 0;
    cost_node *cn = calloc(d->nnodes, sizeof *cn);
    if (!cn) { /* no estimate: the exact preview, as asked without --fast */
        *fast = INFINITY;
        return;
    }
    cn[root->id] = (cost_node){1, 1, troot < rw ? troot : rw, troot < rh ? troot : rh, true};
    for (size_t i = d->nnodes; i-- > 0;) { /* parents come after their children */
        const tsr_node *n = d->nodes[i];
        cost_node *c = &cn[n->id];
        if (!c->seen)
            continue;
        int64_t t = tile[n->id];
        if (n == root) {
            *fast += samples * node_work(n, 1, 1);
            *exact += root_tiles * node_work(n, troot < rw ? troot : rw, troot < rh ? troot : rh);
        } else {
            /* a node's tiles, each computed once at most over the whole preview: as many as
             * the exact preview's root tiles ask for, bounded by those covering the node */
            double all = tiles_over(n, t, n->w, n->h), per_tile = node_work(n, t, t);
            double xt = root_tiles * tiles_over(n, t, c->xw, c->xh);
            double ft = samples * tiles_over(n, t, c->fw, c->fh);
            *exact += (xt < all ? xt : all) * per_tile;
            *fast += (ft < all ? ft : all) * per_tile;
        }
        if (n->nedges == 0 || (n != root && c->fw == 0))
            continue;
        /* what its computations ask of its children: a whole tile of this node */
        int64_t fw = n == root ? 1 : (t < n->w ? t : n->w), fh = n == root ? 1 : (t < n->h ? t : n->h);
        int64_t xw = n == root ? c->xw : fw, xh = n == root ? c->xh : fh;
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_edge *ed = &n->edges[k];
            tsr_rect want[TSR_NEED_MAX];
            cost_node *cc = &cn[ed->child->id];
            size_t nw = ed->trait->need(ed, tsr_rect_make(n->w / 2, n->h / 2, fw, fh), want);
            for (size_t j = 0; j < nw; j++) {
                cc->fw = want[j].w > cc->fw ? want[j].w : cc->fw;
                cc->fh = want[j].h > cc->fh ? want[j].h : cc->fh;
            }
            nw = ed->trait->need(ed, tsr_rect_make(n->w / 2, n->h / 2, xw, xh), want);
            for (size_t j = 0; j < nw; j++) {
                cc->xw = want[j].w > cc->xw ? want[j].w : cc->xw;
                cc->xh = want[j].h > cc->xh ? want[j].h : cc->xh;
            }
            cc->seen = true;
        }
    }
    free(cn);
}

/* Whether --fast samples (true) or the exact preview is the cheaper way (the estimate above)
 * with tile edges tile[]. */
static bool
fast_is_cheaper(const tsr_design *d, const int64_t *tile, tsr_rect r, int64_t k)
{
    int64_t kx = k < r.w ? k : r.w, ky = k < r.h ? k : r.h;
    double exact, fast;
    preview_costs(d, tile, r.w, r.h, kx, ky, &exact, &fast);
    return fast < exact;
}

int64_t
tsr_preview_fast_tile_for(const tsr_design *d, const tsr_engine_opts *o, tsr_rect r,
                          int64_t scale)
{
    int64_t t = tsr_preview_fast_tile(d);
    bool auto_be = !o->backend || strcmp(o->backend, "auto") == 0;
    bool gpu = (o->backend && strcmp(o->backend, "gpu") == 0) || (auto_be && tsr_gpu_available());
    if (t == 0 || scale < 1 || tsr_rect_empty(r) || o->ops || gpu)
        return 0; /* a backend that does not sample in batches previews exactly, on its tiles */
    int64_t *tile = malloc(d->nnodes * sizeof *tile);
    if (!tile)
        return 0;
    for (size_t i = 0; i < d->nnodes; i++)
        tile[d->nodes[i]->id] = t;
    bool fast = fast_is_cheaper(d, tile, r, scale);
    free(tile);
    return fast ? t : 0; /* the exact preview runs best on the design's own tiles */
}

bool
tsr_preview_samples(const tsr_engine *e, tsr_rect r, int64_t scale)
{
    /* A backend without batches of samples (the GPU) would go sample by sample: over 100 s on
     * an H200 where its exact preview, a render at its rate with the box average on the
     * device, takes seconds. */
    return scale > 1 && e->ops->samples && fast_is_cheaper(e->d, e->tile, r, scale);
}

int64_t
tsr_preview_fast_tile(const tsr_design *d)
{
    for (size_t i = 0; i < d->nnodes; i++)
        for (size_t k = 0; k < d->nodes[i]->nedges; k++) {
            if (tsr_trait_has(d->nodes[i]->edges[k].trait, TSR_CAP_NEIGHBOURS))
                return 0;
        }
    return FAST_TILE;
}

tsr_status
tsr_engine_preview_ex(tsr_engine *e, tsr_rect r, const tsr_preview_opts *po, const char *path,
                      tsr_error *err)
{
    int64_t k = po->scale;
    int depth = po->depth;
    if (k < 1)
        return tsr_fail(err, TSR_EINVAL, "--scale %lld: must be >= 1", (long long)k);
    const tsr_node *root = e->d->root;
    if (tsr_rect_empty(r) || !tsr_rect_contains(tsr_rect_make(0, 0, root->w, root->h), r))
        return tsr_fail(err, TSR_EINVAL,
                        "--region %lld,%lld,%lld,%lld: must lie inside the root (%lldx%lld)",
                        (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                        (long long)root->w, (long long)root->h);
    /* Blocks are clipped to the region, so a K past the region's size is the region's size:
     * the same image, and nothing below is ever sized by K itself. */
    int64_t kx = k < r.w ? k : r.w, ky = k < r.h ? k : r.h;
    int64_t ow = r.w / kx + (r.w % kx != 0), oh = r.h / ky + (r.h % ky != 0);
    size_t bps = depth == 16 ? 2 : 1;
    int64_t nimg;
    if (ow > INT32_MAX || oh > INT32_MAX || !tsr_mul_checked(ow, oh, &nimg) ||
        !tsr_mul_checked(nimg, (int64_t)bps, &nimg) || (uint64_t)nimg > SIZE_MAX)
        return tsr_fail(err, TSR_EINVAL,
                        "--scale %lld: a preview of %lldx%lld px is more than a PNG holds "
                        "(2^31-1 a side); use a larger --scale",
                        (long long)k, (long long)ow, (long long)oh);
    if (e->opts.plan_only) /* its images and tables were never made */
        return tsr_fail(err, TSR_EINVAL, "this engine was made to plan only (plan_only)");
    tsr_output o = e->d->out;
    o.depth = depth;
    preview p = {.e = e, .r = r, .kx = kx, .ky = ky, .ow = ow, .oh = oh, .o = &o,
                 .bps = bps, .done = po->done,
                 .fast = po->fast && tsr_preview_samples(e, r, k)};
    p.sums = !p.fast && e->ops->rowsums;
    tsr_status st = preview_setup(&p, e->plan.bands, err);
    if (st == TSR_OK)
        st = tsr_png_write_rows(path, ow, oh, depth, preview_row, &p, err);
    preview_free(&p);
    return st;
}

tsr_status
tsr_engine_preview(tsr_engine *e, tsr_rect r, int64_t scale, int depth, const char *path,
                   tsr_error *err)
{
    tsr_preview_opts o = {.scale = scale, .depth = depth};
    return tsr_engine_preview_ex(e, r, &o, path, err);
}

void
tsr_human_bytes(char *buf, size_t n, double bytes)
{
    const char *u[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (bytes >= 1024.0 && i < 5) {
        bytes /= 1024.0;
        i++;
    }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

void
tsr_node_label(const tsr_node *n, char *buf, size_t size)
{
    const char *name = n->name;
    size_t len = strlen(name);
    /* an inline node is named by its key path: drop the ".node" every placement has */
    bool inline_node = strchr(name, '.') || strchr(name, '[');
    if (inline_node && len > 5 && strcmp(name + len - 5, ".node") == 0)
        len -= 5;
    const tsr_source *s = n->source;
    if (!inline_node || !s) {
        snprintf(buf, size, "%.*s", (int)len, name);
        return;
    }
    const char *kind = tsr_source_descs[s->kind].disc_value;
    char what[96];
    if (s->kind == TSR_SRC_CIRCLE)
        snprintf(what, sizeof what, "circle r=%g", s->radius);
    else if (s->kind == TSR_SRC_RECT)
        snprintf(what, sizeof what, "rect %gx%g", s->rect[2], s->rect[3]);
    else if (s->kind == TSR_SRC_ELLIPSE)
        snprintf(what, sizeof what, "ellipse %gx%g", s->radii[0], s->radii[1]);
    else
        snprintf(what, sizeof what, "%s", kind ? kind : tsr_source_descs[s->kind].disc_key);
    snprintf(buf, size, "%.*s (%s)", (int)len, name, what);
}

/* Legal designs that are almost certainly not what was meant: one line each. */
static size_t
print_warnings(const tsr_engine *e, FILE *f)
{
    const tsr_design *d = e->d;
    size_t nw = 0;
    char a[192], b[192];
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        tsr_node_label(n, a, sizeof a);
        const tsr_source *s = n->source;
        if (s && s->kind <= TSR_SRC_POLYGON && s->value == n->fill) {
            fprintf(f, "  warning: %s: its %s's value %g equals the node's fill: the shape "
                    "draws nothing visible\n", a, tsr_source_descs[s->kind].disc_value,
                    (double)s->value);
            nw++;
        }
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_edge *ed = &n->edges[k];
            const tsr_node *c = ed->child;
            tsr_node_label(c, b, sizeof b);
            if (strcmp(ed->trait->name, "pattern") == 0 &&
                (ed->offset[0] >= n->w || ed->offset[1] >= n->h ||
                 ed->offset[0] <= -c->w || ed->offset[1] <= -c->h)) {
                fprintf(f, "  warning: %s: pattern of %s at %lld,%lld lies wholly outside "
                        "its %lld x %lld parent: it draws nothing\n", a, b,
                        (long long)ed->offset[0], (long long)ed->offset[1], (long long)n->w,
                        (long long)n->h);
                nw++;
            }
            /* a repeat that adds or averages copies of a distance profile whose table does
             * not reach 0 at dmax: the floor covers every copy's whole square */
            if (strncmp(ed->trait->name, "repeat", 6) != 0)
                continue;
            const tsr_repeat_params *rp = ed->params;
            if (rp->disjoint || (rp->overlap != TSR_OVERLAP_ADD &&
                                 rp->overlap != TSR_OVERLAP_AVERAGE))
                continue;
            for (size_t j = 0; j < c->nedges; j++) {
                if (tsr_trait_id_of(c->edges[j].trait) != TSR_TRAIT_distance)
                    continue;
                const tsr_distance_params *dp = c->edges[j].params;
                float floor_v = tsr_distance_value(dp, (double)dp->dmax);
                if (floor_v == 0.0f)
                    continue;
                fprintf(f, "  warning: %s: %s copies of %s overlap, and its distance profile "
                        "is %g (not 0) at dmax: the floor covers each copy's whole square\n",
                        a, tsr_overlap_names[rp->overlap], b, (double)floor_v);
                nw++;
            }
        }
    }
    return nw;
}

void
tsr_engine_print_check(tsr_engine *e, FILE *f, bool tree)
{
    const tsr_design *d = e->d;
    const tsr_plan *p = &e->plan;
    uint64_t bytes = tsr_engine_stream_bytes(e);
    char a[32], b[32], c[32], dd[32], m[32], bu[32], sb[32];
    tsr_human_bytes(sb, sizeof sb, (double)bytes);
    /* the summary first: a design of thousands of nodes must not push it off the screen */
    fprintf(f, "design: %s, %lld x %lld px, %zu nodes, depth %lld, %s order\n",
            d->name ? d->name : d->path, (long long)d->root->w, (long long)d->root->h,
            d->nnodes, (long long)tsr_output_bits(&d->out),
            d->out.order == TSR_ORDER_SWATH ? "swath" : "raster");
    if (d->pixel_nm > 0) { /* docs/units.md: sizes in physical units beside the pixels */
        char pp[48], pw[48], ph[48];
        tsr_design_length_text(d, 1.0, pp, sizeof pp);
        tsr_design_length_text(d, (double)d->root->w, pw, sizeof pw);
        tsr_design_length_text(d, (double)d->root->h, ph, sizeof ph);
        fprintf(f, "pixel: %s; root %s x %s\n", pp, pw, ph);
    }
    tsr_stream_geom g;
    uint64_t rb0 = 0;
    tsr_design_geom(d, e->rows1 - e->rows0, &g);
    (void)tsr_geom_row_bytes(&g, 0, &rb0);
    if (d->out.bits) { /* docs/outputs.md */
        char dn[32];
        fprintf(f, "output: %d bit%s a pixel, dithered from 8-bit samples against %s; rows "
                "packed MSB-first, padded to whole bytes (%llu bytes a row%s); header "
                "version 2\n", d->out.bits, d->out.bits > 1 ? "s" : "",
                tsr_output_dither_name(&d->out, dn, sizeof dn),
                (unsigned long long)rb0,
                d->out.order == TSR_ORDER_SWATH ? " of the first swath" : "");
    }
    if (d->out.bidir || d->out.mirror_x || d->out.y_up) { /* docs/outputs.md §7 */
        static const char *const corner[] = {"top-left", "top-right", "bottom-left",
                                             "bottom-right"};
        fprintf(f, "stage: %s%s%s; the stream starts at the %s corner\n",
                d->out.bidir == 1 ? "every other row right to left"
                : d->out.bidir == 2 ? "every other swath's rows right to left" : "rows as ordered",
                d->out.mirror_x ? ", x mirrored (every row right to left)" : "",
                d->out.y_up ? ", y up" : "", corner[tsr_output_start(&d->out) & 3]);
    }
    if (d->out.overlap || d->out.overscan) { /* docs/outputs.md §8: the stage's geometry */
        uint64_t n = tsr_geom_swaths(&g);
        if (d->out.overlap)
            fprintf(f, "overlap: each swath goes on %lld px into the next, the dose feathered "
                    "(%s weights: the two swaths' samples of a column sum to its sample)\n",
                    (long long)d->out.overlap, d->out.feather ? "cosine" : "linear");
        if (d->out.overscan)
            fprintf(f, "overscan: %lld px of %lld at both ends of every row\n",
                    (long long)d->out.overscan, (long long)d->out.overscan_value);
        for (uint64_t k = 0; k < n; k++) {
            if (k == 4 && n > 6) { /* the middle ones are alike */
                fprintf(f, "  ... %llu more swaths like swath 1\n", (unsigned long long)(n - 6));
                k = n - 2;
            }
            int64_t x, w;
            uint64_t lead, trail, rb = 0;
            tsr_stream_swath(d, &g, (int64_t)k, &x, &w, &lead, &trail);
            (void)tsr_geom_row_bytes(&g, k, &rb);
            fprintf(f, "  swath %llu: columns [%lld, %lld), overlap %llu with the one before, "
                    "%llu with the next; a row %lld px, %llu bytes\n", (unsigned long long)k,
                    (long long)x, (long long)(x + w), (unsigned long long)lead,
                    (unsigned long long)trail, (long long)(w + 2 * d->out.overscan),
                    (unsigned long long)rb);
        }
    }
    if (d->out.planes) /* docs/outputs.md §2 */
        fprintf(f, "bit planes: every %lld rows of a swath (stream order) go as %lld 1-bit "
                "planes, top bit first, each row padded to whole bytes (%llu bytes a row of the "
                "first swath, all planes)\n", (long long)d->out.planes,
                (long long)d->out.depth, (unsigned long long)rb0);
    fprintf(f, "stream: %llu bytes (%s); `tessera profile` measures the compute rate\n",
            (unsigned long long)bytes, sb);
    tsr_human_bytes(a, sizeof a, (double)p->bands);
    tsr_human_bytes(b, sizeof b, (double)p->per_thread);
    tsr_human_bytes(c, sizeof c, (double)p->fixed);
    tsr_human_bytes(dd, sizeof dd, (double)p->cache);
    tsr_human_bytes(m, sizeof m, (double)p->minimum);
    tsr_human_bytes(bu, sizeof bu, (double)p->budget);
    fprintf(f, "memory plan (--memory %s%s):\n", bu,
            e->opts.memory > 0 ? "" : ", the default: a quarter of the host's available "
            "memory, at least 2 GiB");
    fprintf(f, "  bands        %s (3 in flight, %lld rows each)\n", a, (long long)p->band_rows);
    fprintf(f, "  per thread   %s x %lld threads\n", b, (long long)p->threads);
    fprintf(f, "  fixed        %s (tables, images, sink buffers)\n", c);
    fprintf(f, "  tile cache   %s\n", dd);
    fprintf(f, "  minimum      %s (--memory %lld, the smallest that runs)\n", m,
            (long long)p->minimum);
    fprintf(f, "warnings:\n");
    size_t nw = print_warnings(e, f) + tsr_plan_print_warnings(e, f);
    if (!nw)
        fprintf(f, "  none\n");
    if (!tree) {
        fprintf(f, "(--tree prints the nodes and the design with every default)\n");
        return;
    }
    fprintf(f, "\nnodes (children first):\n");
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        const tsr_grid *g = &e->grid[n->id];
        char lb[192];
        tsr_node_label(n, lb, sizeof lb);
        tsr_human_bytes(b, sizeof b, (double)n->w * (double)n->h * 4.0);
        fprintf(f, "  %-32s %lld x %lld px, tile %lld, %lld x %lld tiles, %s as float32", lb,
                (long long)n->w, (long long)n->h, (long long)g->t, (long long)g->nx,
                (long long)g->ny, b);
        if (d->pixel_nm > 0) {
            char pw[48], ph[48];
            tsr_design_length_text(d, (double)n->w, pw, sizeof pw);
            tsr_design_length_text(d, (double)n->h, ph, sizeof ph);
            fprintf(f, "; %s x %s", pw, ph);
        }
        int64_t per[2];
        tsr_rect in;
        if (tsr_engine_period(e, n, per, &in) && in.w == n->w && in.h == n->h)
            fprintf(f, "; periodic %lld x %lld: one period computed, the rest copied%s",
                    (long long)per[0], (long long)per[1],
                    n == d->root ? " as output samples" : "");
        else if (tsr_engine_period(e, n, per, &in))
            fprintf(f, "; periodic %lld x %lld inside [%lld, %lld, %lld, %lld]: one period "
                    "computed, the inside copied, the border computed",
                    (long long)per[0], (long long)per[1], (long long)in.x, (long long)in.y,
                    (long long)in.w, (long long)in.h);
        if (tsr_engine_uncached(e, n))
            fprintf(f, "; uncached: computed where its one pattern parent reads it");
        const char *cls = tsr_engine_node_class(e, n);
        if (cls)
            fprintf(f, "; gpu: %s", cls);
        char why[160];
        if (!tsr_gpu_node_why(n, why, sizeof why)) /* any backend: what --backend gpu would do */
            fprintf(f, "; computed on the host under the GPU backend (%s)", why);
        fputc('\n', f);
    }
    fputc('\n', f);
    tsr_design_dump(d, f);
}

/* Length of the decimal number `s` starts with: digits with an optional fraction and an
 * optional exponent ("64", "1.5", ".5", "1e9"); 0 if there is none. No sign, blanks, hex,
 * inf or nan, all of which strtod takes. */
static size_t
decimal_len(const char *s)
{
    size_t n = strspn(s, "0123456789"), m = n;
    if (s[n] == '.') {
        m = strspn(s + n + 1, "0123456789");
        n += 1 + m;
    }
    if (n == 0 || (m == 0 && n == 1))
        return 0; /* no digit at all */
    if (s[n] == 'e' || s[n] == 'E') {
        size_t sign = s[n + 1] == '+' || s[n + 1] == '-';
        size_t d = strspn(s + n + 1 + sign, "0123456789");
        if (d > 0)
            n += 1 + sign + d;
    }
    return n;
}

/* The value of the decimal `s` starts with, *len its length (0: none, or not finite). */
static double
decimal(const char *s, size_t *len)
{
    *len = decimal_len(s);
    if (*len == 0)
        return 0;
    char buf[64];
    if (*len >= sizeof buf) {
        *len = 0; /* 63 characters of digits are no size anyone means */
        return 0;
    }
    memcpy(buf, s, *len);
    buf[*len] = 0;
    double v = strtod(buf, NULL);
    if (!isfinite(v))
        *len = 0;
    return v;
}

bool
tsr_parse_decimal(const char *s, double *out)
{
    size_t n;
    double v = decimal(s, &n);
    if (n == 0 || s[n])
        return false;
    *out = v;
    return true;
}

bool
tsr_parse_size(const char *s, double *out)
{
    size_t n = strlen(s);
    if (n >= 2 && strcmp(s + n - 2, "/s") == 0)
        return false; /* a rate is not a size: --memory 64MB/s is a typo */
    return tsr_parse_rate(s, out);
}

bool
tsr_parse_rate(const char *s, double *out)
{
    size_t n;
    double v = decimal(s, &n);
    if (n == 0)
        return false;
    const char *end = s + n;
    double mul = 1;
    if (strncmp(end, "KiB", 3) == 0) { mul = 1024.0; end += 3; }
    else if (strncmp(end, "MiB", 3) == 0) { mul = 1048576.0; end += 3; }
    else if (strncmp(end, "GiB", 3) == 0) { mul = 1073741824.0; end += 3; }
    else if (strncmp(end, "TiB", 3) == 0) { mul = 1099511627776.0; end += 3; }
    else if (*end == 'K' || *end == 'k') { mul = 1e3; end++; }
    else if (*end == 'M') { mul = 1e6; end++; }
    else if (*end == 'G') { mul = 1e9; end++; }
    else if (*end == 'T') { mul = 1e12; end++; }
    if (*end == 'B')
        end++;
    if (strcmp(end, "/s") == 0)
        end += 2;
    if (*end || !isfinite(v * mul))
        return false;
    *out = v * mul;
    return true;
}
