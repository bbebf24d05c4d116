/* The memory plan (docs/format.md §1, docs/semantics.md §1): band buffers + per-thread working set + fixed tables and
 * images, and what remains goes to the tile cache. The per-thread figure is a worst case along
 * the deepest chain of nested computations (a parent tile's scratch stays allocated while its
 * children compute), so a run that starts never runs out of its budget. */
#include "engine/engine_int.h"
#include "cpu/cpu.h"
#include "image/image.h"
#include "nodes/params.h"

#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUF 3 /* band buffers: one computing, two queued for the sink */

/* Periodic nodes. A node with no source whose every edge is a repeat or repeat-vector without
 * `region` is the same at (x, y) and (x + Px, y) and (x, y + Py): its constant fill and every
 * lattice repeat are invariant under the lattice's axis-aligned periods, and a translation by
 * a lattice vector keeps the copy order (ascending j, then i), so the float32 arithmetic at
 * both points is the same, bit for bit. The period of one lattice is |det| / gcd(uy, vy) along
 * x and |det| / gcd(ux, vx) along y, of several the lcm.
 *
 * Periodicity also passes through shift-invariant edges (trait->halo: pattern, distance,
 * blur): over a child periodic inside rect I, the layer is periodic inside I shrunk by the
 * halo and placed at the offset, because each of its pixels is the same function of the same
 * child window. A `region` makes a lattice periodic inside the region. So every node gets the
 * rect inside which it repeats (the intersection of its edges' rects; the constant fill
 * repeats everywhere), and the engine computes one period tile there and copies it over that
 * interior (cpu/compute.c), computing only the border directly. A node periodic over its
 * whole rect (tsr_periodic_whole) has its period tile at the origin, and such a root streams
 * by row copies of converted samples (engine.c). Periods whose tile exceeds PERIOD_MAX_PX are
 * not worth it, nor interiors under PERIOD_MIN_COPIES periods. */
#define PERIOD_MAX_PX ((int64_t)1 << 20)
#define PERIOD_MIN_COPIES 4

static int64_t
gcd64(int64_t a, int64_t b)
{
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* lcm, or 0 when it exceeds `cap` */
static int64_t
lcm_capped(int64_t a, int64_t b, int64_t cap)
{
    int64_t m;
    if (!tsr_mul_checked(a / gcd64(a, b), b, &m) || m > cap)
        return 0;
    return m;
}

/* The axis-aligned periods of a repeat's lattice into p; false when too long. */
static bool
lattice_period(const tsr_repeat_params *r, int64_t p[2])
{
    __int128 det = (__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0];
    if (det < 0)
        det = -det;
    int64_t gy = gcd64(r->u[1], r->v[1]), gx = gcd64(r->u[0], r->v[0]);
    if (gx == 0 || gy == 0 || det / gy > PERIOD_MAX_PX || det / gx > PERIOD_MAX_PX)
        return false;
    p[0] = (int64_t)(det / gy);
    p[1] = (int64_t)(det / gx);
    return true;
}

/* The rect (parent coords) inside which edge ed's layer repeats, with its period in p; false
 * when it does not. Children come first (d->nodes), so e->inner holds theirs. */
static bool
edge_period(const tsr_engine *e, const tsr_node *n, const tsr_edge *ed, int64_t p[2],
            tsr_rect *in)
{
    if (tsr_trait_has(ed->trait, TSR_CAP_LATTICE)) {
        if (!tsr_lattice_periodic(ed)) /* per-copy variation or jitter (docs/variation.md) */
            return false;
        const tsr_repeat_params *r = ed->params;
        *in = r->region[2] > 0 ? tsr_rect_make(r->region[0], r->region[1], r->region[2], r->region[3])
                               : tsr_rect_make(0, 0, n->w, n->h);
        return lattice_period(r, p);
    }
    const tsr_inner *c = &e->inner[ed->child->id];
    if (!ed->trait->halo || !c->p[0])
        return false;
    int64_t h[2];
    ed->trait->halo(ed, h);
    if (2 * h[0] >= c->in.w || 2 * h[1] >= c->in.h) /* the halo leaves nothing inside */
        return false;
    *in = tsr_rect_make(c->in.x + h[0] + ed->offset[0], c->in.y + h[1] + ed->offset[1],
                        c->in.w - 2 * h[0], c->in.h - 2 * h[1]);
    p[0] = c->p[0];
    p[1] = c->p[1];
    return true;
}

static void
find_period(const tsr_engine *e, const tsr_node *n, tsr_inner *out)
{
    *out = (tsr_inner){{0, 0}, {0, 0, 0, 0}};
    if (n->source || n->nedges == 0)
        return;
    int64_t px = 1, py = 1;
    tsr_rect in = tsr_rect_make(0, 0, n->w, n->h);
    for (size_t k = 0; k < n->nedges; k++) {
        int64_t p[2];
        tsr_rect ein;
        if (!edge_period(e, n, &n->edges[k], p, &ein))
            return;
        in = tsr_rect_intersect(in, ein);
        px = lcm_capped(px, p[0], PERIOD_MAX_PX);
        py = lcm_capped(py, p[1], PERIOD_MAX_PX);
        if (!px || !py)
            return;
    }
    int64_t area;
    if (!tsr_mul_checked(px, py, &area) || area > PERIOD_MAX_PX || in.w < px || in.h < py)
        return;
    if (in.w / px * (in.h / py) < PERIOD_MIN_COPIES && !(in.w == n->w && in.h == n->h))
        return;
    out->p[0] = px;
    out->p[1] = py;
    out->in = in;
}

/* Nodes computed into their parent's buffer instead of the cache. A node that exactly one edge
 * of the design reads, a pattern, is asked for once per computation of its parent, over the
 * parent's rect shifted by the offset: caching its tiles saves nothing (the parent's own tile
 * is what the cache keeps), and it cost fresh pages for every tile and evicted tiles that are
 * read again (a 100000 px disc cutting a wafer map was 1.4 GiB of such tiles in a 3 s
 * profile). Not the root, and not a node that repeats (its period tile is the point). Any rect
 * computes the same values as its tiles would (docs/format.md §9.3). */
static void
find_uncached(tsr_engine *e)
{
    const tsr_design *d = e->d;
    size_t *uses = calloc(d->nnodes, sizeof *uses);
    bool *pattern = calloc(d->nnodes, sizeof *pattern);
    if (uses && pattern) {
        for (size_t i = 0; i < d->nnodes; i++)
            for (size_t k = 0; k < d->nodes[i]->nedges; k++) {
                const tsr_edge *ed = &d->nodes[i]->edges[k];
                uses[ed->child->id]++;
                pattern[ed->child->id] = tsr_trait_has(ed->trait, TSR_CAP_PLACES);
            }
        for (size_t i = 0; i < d->nnodes; i++) {
            const tsr_node *n = d->nodes[i];
            e->uncached[n->id] = n != d->root && uses[n->id] == 1 && pattern[n->id] &&
                                 !e->inner[n->id].p[0];
        }
    } /* out of memory: nothing uncached, which is always correct */
    free(uses);
    free(pattern);
}

static int64_t
sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return tsr_add_checked(a, b, &r) ? r : INT64_MAX;
}

static int64_t
sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return tsr_mul_checked(a, b, &r) ? r : INT64_MAX;
}

/* Pixels of node n's largest tile: a node smaller than its tile edge is one small tile. */
static int64_t
tile_px(const tsr_engine *e, const tsr_node *n)
{
    int64_t t = e->tile[n->id];
    return sat_mul(t < n->w ? t : n->w, t < n->h ? t : n->h);
}

/* A representative rect of rw x rh away from node n's origin, so halos and wraps count. */
static tsr_rect
mid_rect(const tsr_node *n, int64_t rw, int64_t rh)
{
    return tsr_rect_make(n->w > rw ? (n->w - rw) / 2 : 0, n->h > rh ? (n->h - rh) / 2 : 0,
                         rw < n->w ? rw : n->w, rh < n->h ? rh : n->h);
}

/* Bytes one computation of node n over rect r, of rw x rh, holds itself: L, cov, fetched child
 * rects (assembled copies or pinned tiles, rounded out to whole tiles, and their bookkeeping
 * when it does not fit compute.c's frame) and trait scratch. */
static int64_t
node_work(const tsr_engine *e, const tsr_node *n, int64_t rw, int64_t rh, tsr_rect r)
{
    int64_t px = sat_mul(rw, rh);
    int64_t w = n->nedges ? sat_mul(px, 5) : 0;
    if (n->source) /* a polygon's scan lists while its source is drawn */
        w = sat_add(w, (int64_t)tsr_source_scratch(n->source, n->w));
    int64_t edges = 0;
    for (size_t k = 0; k < n->nedges; k++) {
        const tsr_edge *ed = &n->edges[k];
        tsr_rect want[TSR_NEED_MAX];
        size_t nw = ed->trait->need(ed, r, want);
        int64_t tb = tile_px(e, ed->child), b = 0;
        for (size_t i = 0; i < nw; i++) {
            /* assembled copy + the tile pinned while copying, or the pinned tile itself */
            b = sat_add(b, sat_add(sat_mul(sat_mul(want[i].w, want[i].h), 4), sat_mul(tb, 4)));
        }
        if (nw > TSR_FETCH_INLINE) /* their views, pins and copies' pointers */
            b = sat_add(b, (int64_t)(nw * TSR_FETCH_BYTES));
        if (ed->trait->scratch)
            b = sat_add(b, (int64_t)ed->trait->scratch(ed, rw, rh));
        if (b > edges)
            edges = b; /* edges run one after another: only one edge's fetches are live */
    }
    return sat_add(w, edges);
}

/* MemAvailable of /proc/meminfo in bytes, or 0 where it cannot be read */
static int64_t
host_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
            break;
    fclose(f);
    return kib > 0 && kib < INT64_MAX / 1024 ? (int64_t)kib * 1024 : 0;
}

int64_t
tsr_plan_default_memory(void)
{
    /* read once: every engine of a process (--gpus, previews) plans with the same default */
    static _Atomic int64_t cached;
    int64_t m = cached;
    if (m == 0) {
        m = host_available() / 4;
        if (m < TSR_DEFAULT_MEMORY)
            m = TSR_DEFAULT_MEMORY;
        cached = m;
    }
    return m;
}

static tsr_status
plan_for(tsr_engine *e, int64_t band_rows, tsr_error *err)
{
    const tsr_design *d = e->d;
    tsr_plan *p = &e->plan;
    int64_t budget = e->opts.memory > 0 ? e->opts.memory : tsr_plan_default_memory();
    int64_t bps = d->out.depth / 8;
    const tsr_node *root = d->root;
    int64_t sw = tsr_band_width(d);
    int64_t troot = e->tile[root->id];
    p->band_rows = band_rows;
    int64_t row_bytes = sat_mul(sw, bps);
    p->bands = sat_mul(sat_mul(row_bytes, p->band_rows), NBUF);

    /* path[n]: worst bytes held by one thread while computing one tile of n, children included;
     * dims[n]: the largest rect n is computed over: its tile (the root: a root tile by a band),
     * its period tile, or for an uncached node its parent's (parents come after children in
     * d->nodes, so a walk from the end sets a parent's before its children's) */
    int64_t *path = calloc(d->nnodes, sizeof *path);
    int64_t (*dims)[2] = calloc(d->nnodes, sizeof *dims);
    if (!path || !dims) {
        free(path);
        free(dims);
        return tsr_fail(err, TSR_ENOMEM, "out of memory (plan)");
    }
    for (size_t i = d->nnodes; i-- > 0;) {
        const tsr_node *n = d->nodes[i];
        int64_t t = e->tile[n->id];
        if (!e->uncached[n->id]) {
            dims[n->id][0] = t < n->w ? t : n->w;
            dims[n->id][1] = n == root ? p->band_rows : (t < n->h ? t : n->h);
        }
        const tsr_inner *per = &e->inner[n->id];
        if (per->p[0] && per->p[0] > dims[n->id][0])
            dims[n->id][0] = per->p[0];
        if (per->p[0] && per->p[1] > dims[n->id][1])
            dims[n->id][1] = per->p[1];
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_node *c = n->edges[k].child;
            if (e->uncached[c->id]) {
                dims[c->id][0] = dims[n->id][0] < c->w ? dims[n->id][0] : c->w;
                dims[c->id][1] = dims[n->id][1] < c->h ? dims[n->id][1] : c->h;
            }
        }
    }
    p->fixed = 0;
    int64_t decode = 0; /* the largest image's decoding scratch */
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        const tsr_inner *per = &e->inner[n->id];
        int64_t period_work = 0;
        if (per->p[0]) { /* the period tile, cached but counted as always held */
            tsr_rect pr = tsr_rect_make(per->in.x, per->in.y, per->p[0], per->p[1]);
            p->fixed = sat_add(p->fixed, (int64_t)tsr_tile_bytes(pr));
            if (n == root) /* and a periodic root's samples (engine.c) */
                p->fixed = sat_add(p->fixed, sat_mul(sat_mul(pr.w, pr.h), bps));
            /* computing it is one computation over the period's rect */
            period_work = node_work(e, n, pr.w, pr.h, pr);
        }
        int64_t rw = dims[n->id][0], rh = dims[n->id][1];
        int64_t deepest = 0;
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_node *c = n->edges[k].child;
            /* a cached child's tile stays pinned while it is read; an uncached child's pixels
             * are the parent's assembled copy, which node_work counts */
            int64_t own = e->uncached[c->id] ? path[c->id]
                                             : sat_add(sat_mul(tile_px(e, c), 4), path[c->id]);
            if (own > deepest)
                deepest = own;
            /* tables that trait->build makes (or made): distance's, up to 67 MB each */
            const tsr_edge *ed = &n->edges[k];
            if (ed->trait->build_bytes)
                p->fixed = sat_add(p->fixed, (int64_t)ed->trait->build_bytes(ed));
        }
        path[n->id] = sat_add(node_work(e, n, rw, rh, mid_rect(n, rw, rh)), deepest);
        if (sat_add(period_work, deepest) > path[n->id])
            path[n->id] = sat_add(period_work, deepest);
        const tsr_source *src = n->source;
        if (src && tsr_source_has(src, TSR_SRC_CAP_FILE) && src->iw > 0) {
            /* decoded (or to be decoded: tsr_design_build) as iw x ih floats; decoding one
             * takes its rows and libpng's buffers too, one image at a time */
            p->fixed = sat_add(p->fixed, sat_add(sat_mul(sat_mul(src->iw, src->ih), 4), 16));
            if (src->scratch > decode)
                decode = src->scratch;
        }
    }
    free(dims);
    p->fixed = sat_add(p->fixed, decode);
    int64_t troot_w = troot < root->w ? troot : root->w;
    p->per_thread = sat_add(path[root->id], sat_mul(sat_mul(troot_w, p->band_rows), 4));
    /* the stack pages its recursion touches */
    p->per_thread = sat_add(p->per_thread, tsr_stack_touched(e->nest));
    free(path);
    p->threads = e->threads;
    p->cores = e->cores;
    /* the design itself (nodes, edges, parameters, small state), the engine's bookkeeping
     * per node, and the sink's own buffers: the writer pool rounded out to 2 MiB huge-page
     * boundaries (up to 8 MiB more) and a deflate stream's buffers (~1 MiB) */
    p->fixed = sat_add(p->fixed, sat_add(e->design_bytes, (int64_t)(d->nnodes * 256) +
                                                              ((int64_t)10 << 20)));
    p->minimum = sat_add(sat_add(p->bands, sat_mul(p->per_thread, p->threads)), p->fixed);
    p->budget = budget;
    /* Tiles of many sizes, freed by other threads than made them, leave holes in malloc's heap
     * (the `tessera` command gives whole free pages back between bands: cli/main.c): an eighth of
     * what the cache could have is kept for them, so the process, not only what is live,
     * stays within the budget (measured: peak RSS up to 0.4 MiB over --memory 64M plus the
     * binary's own without it, tests/cli/memory.sh). */
    p->cache = budget - p->minimum;
    p->cache -= p->cache / 8;
    return TSR_OK;
}

static tsr_status
plan_fit(tsr_engine *e, tsr_error *err);

/* The plan of a budget that `fit` threads fit at the most (with one-row bands, the smallest
 * per-thread figure) and a thread per core do not. As many threads as fit would leave the
 * tile cache next to nothing and the bands a few rows: every tile is computed again for each
 * band that reads it (a 64-core plan of --memory 64M had 23 threads, 4-row bands and 0.5 MiB
 * of cache where 2 cores had 512-row bands and 28 MiB). So the count halves from `fit` until
 * the cache gets a quarter of the budget, or one thread is left. */
static tsr_status
fewer_threads(tsr_engine *e, int64_t fit, tsr_error *err)
{
    for (int64_t t = fit;; t /= 2) {
        e->threads = (int)t;
        tsr_status st = plan_fit(e, err); /* fits: t <= fit */
        if (st != TSR_OK || t == 1 || e->plan.cache >= e->plan.budget / 4)
            return st;
    }
}

/* Bands are a root tile tall unless that takes more than a quarter of the budget or does not
 * fit: then halve them, down to one row. The minimum named on refusal is the one-row plan, so
 * a run given exactly that minimum starts. */
static tsr_status
plan_fit(tsr_engine *e, tsr_error *err)
{
    tsr_plan *p = &e->plan;
    if (!e->inner) {
        e->inner = calloc(e->d->nnodes, sizeof *e->inner);
        e->uncached = calloc(e->d->nnodes, sizeof *e->uncached);
        if (!e->inner || !e->uncached)
            return tsr_fail(err, TSR_ENOMEM, "out of memory (plan)");
        for (size_t i = 0; i < e->d->nnodes && !e->opts.direct; i++) /* children first */
            find_period(e, e->d->nodes[i], &e->inner[e->d->nodes[i]->id]);
        find_uncached(e);
    }
    int64_t troot = e->tile[e->d->root->id];
    int64_t rows = troot < e->d->root->h ? troot : e->d->root->h;
    int64_t fallback = 0;
    for (;;) {
        tsr_status st = plan_for(e, rows, err);
        if (st != TSR_OK)
            return st;
        if (p->minimum <= p->budget) {
            if (p->bands <= p->budget / 4)
                return TSR_OK;
            if (!fallback)
                fallback = rows; /* fits, but bands are big: try shorter ones first */
        }
        if (rows == 1)
            break;
        rows /= 2;
    }
    if (fallback)
        return plan_for(e, fallback, err);
    /* Nothing fits with a thread per core. Threads the caller did not choose are ours to cut
     * (fewer_threads), so `--memory 64M` runs on a 64-core host as on 2 cores; only a budget
     * that one thread does not fit is refused. An explicit --threads is the caller's and
     * refused as it is (engine.c names how many fit). */
    int64_t room = p->budget - p->bands - p->fixed;
    int64_t fit = room > 0 && p->per_thread > 0 ? room / p->per_thread : 0;
    if (e->opts.threads <= 0 && fit >= 1 && fit < e->threads)
        return fewer_threads(e, fit, err);
    if (e->opts.threads <= 0 && e->threads > 1) { /* the minimum named is one thread's */
        e->threads = 1;
        tsr_status st = plan_for(e, 1, err);
        if (st != TSR_OK)
            return st;
    }
    char need[32], have[32];
    tsr_human_bytes(need, sizeof need, (double)p->minimum);
    tsr_human_bytes(have, sizeof have, (double)p->budget);
    return tsr_fail(err, TSR_EPLAN,
                    "memory plan: needs at least %s (--memory %lld), have %s: bands %lld, "
                    "%lld threads x %lld, fixed %lld bytes",
                    need, (long long)p->minimum, have, (long long)p->bands, (long long)p->threads,
                    (long long)p->per_thread, (long long)p->fixed);
}

/* The smallest --memory that runs is the one-row plan's minimum, whatever bands this budget
 * chose (a budget that fits it starts, with one-row bands: plan_fit), not the minimum of the
 * bands chosen (microlens-sphere's 512-row plan said 243.5 MiB, and it runs at 20M). */
static tsr_status
plan_minimum(tsr_engine *e, tsr_error *err)
{
    tsr_plan chosen = e->plan;
    tsr_status st = plan_for(e, 1, err);
    chosen.minimum = e->plan.minimum;
    e->plan = chosen;
    return st;
}

tsr_status
tsr_plan_make(tsr_engine *e, tsr_error *err)
{
    e->nest = tsr_design_depth(e->d);
    if (e->nest < 0)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (plan)");
    e->stack = tsr_stack_for_depth(e->nest);
    e->design_bytes = tsr_design_bytes(e->d);
    tsr_status st = plan_fit(e, err);
    if (st == TSR_OK)
        st = tsr_stack_check(e->threads, e->stack, e->nest, e->plan.minimum, err);
    if (st == TSR_OK)
        st = plan_minimum(e, err);
    if (st != TSR_OK)
        return st;
    /* Only now that the plan counted them: decode the images and build the tables a design
     * loaded by tsr_engine_load left (tsr_design_opts.defer). The engine completes the design
     * it borrows, once; a design built already is left as it is. Planning only, the images
     * are read through and dropped (tsr_png_check: damage past a header is still found). */
    tsr_design *d = (tsr_design *)(uintptr_t)e->d;
    tsr_stop_bind(e->opts.stop); /* decoding a big image takes seconds: it polls the stop */
    st = e->opts.plan_only ? tsr_design_images(d, tsr_png_check, err)
                           : tsr_design_build(d, tsr_png_read_gray, err);
    tsr_stop_bind(NULL);
    return st;
}

/* ---- what the plan makes the engine compute again ----------------------------------------
 *
 * A tile evicted before its last reader computes again, with everything below it: behind a
 * small --memory a lens array took 7x the CPU with nothing saying why. The tiles one band
 * reads of each cached node below the root (need()'s bounding boxes from a band in the middle
 * of the design, down the DAG, rounded out to whole tiles) are what the tile cache must hold
 * for a band to compute each of them once; the neighbouring band reads the rows its halo
 * shares with this one from the same tiles. */
int64_t
tsr_plan_band_tiles(const tsr_engine *e)
{
    const tsr_design *d = e->d;
    const tsr_node *root = d->root;
    tsr_rect *want = calloc(d->nnodes, sizeof *want);
    if (!want)
        return -1;
    int64_t rows = e->plan.band_rows > 0 ? e->plan.band_rows : 1;
    want[root->id] = mid_rect(root, tsr_band_width(d), rows);
    int64_t bytes = 0;
    for (size_t i = d->nnodes; i-- > 0;) { /* parents before their children */
        const tsr_node *n = d->nodes[i];
        tsr_rect r = want[n->id];
        if (tsr_rect_empty(r))
            continue;
        if (n != root && !e->uncached[n->id] && !e->inner[n->id].p[0]) {
            const tsr_grid *g = &e->grid[n->id];
            int64_t tx0, ty0, tx1, ty1;
            tsr_grid_tiles_of(g, r, &tx0, &ty0, &tx1, &ty1);
            int64_t t = tile_px(e, n);
            bytes = sat_add(bytes, sat_mul(sat_mul((tx1 - tx0) * (ty1 - ty0), t),
                                           (int64_t)sizeof(float)));
        }
        if (e->inner[n->id].p[0]) /* copied from its period tile: nothing below is read again */
            continue;
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_edge *ed = &n->edges[k];
            tsr_rect got[TSR_NEED_MAX];
            size_t nw = ed->trait->need(ed, r, got);
            for (size_t j = 0; j < nw; j++)
                want[ed->child->id] = tsr_rect_union(want[ed->child->id], got[j]);
        }
    }
    free(want);
    return bytes;
}

size_t
tsr_plan_print_warnings(const tsr_engine *e, FILE *f)
{
    const tsr_plan *p = &e->plan;
    int64_t ws = tsr_plan_band_tiles(e);
    if (ws <= 0 || p->cache >= ws)
        return 0;
    /* cache = (budget - what the plan holds besides) less an eighth (plan_for): the budget
     * whose cache holds ws, rounded up to MiB. What it holds besides is this plan's (its bands,
     * threads and fixed part), not p->minimum, the one-row plan's least. */
    int64_t held = sat_add(sat_add(p->bands, sat_mul(p->per_thread, p->threads)), p->fixed);
    int64_t want = sat_add(held, sat_add(ws, ws / 7 + 1));
    want = sat_mul((want + ((int64_t)1 << 20) - 1) >> 20, (int64_t)1 << 20);
    char b[32], c[32], w[32], m[32];
    tsr_human_bytes(b, sizeof b, (double)p->budget);
    tsr_human_bytes(c, sizeof c, (double)(p->cache > 0 ? p->cache : 0));
    tsr_human_bytes(w, sizeof w, (double)ws);
    tsr_human_bytes(m, sizeof m, (double)want);
    fprintf(f,
            "  warning: --memory %s leaves a tile cache of %s, less than the %s of tiles one "
            "band reads below the root: tiles are evicted and computed again, with everything "
            "below them (`profile` counts the evictions); raise --memory to %s (--memory %lld) "
            "to compute each once\n",
            b, c, w, m, (long long)want);
    return 1;
}
