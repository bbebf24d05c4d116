/* The memory plan (DESIGN.md §1, §4): band buffers + per-thread working set + fixed tables and
 * images, and what remains goes to the tile cache. The per-thread figure is a worst case along
 * the deepest chain of nested computations (a parent tile's scratch stays allocated while its
 * children compute), so a run that starts never runs out of its budget. */
#include "engine/engine_int.h"
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
 * both points is the same, bit for bit. The engine then computes one period tile and copies
 * it (engine/compute.c); the period of one lattice is |det| / gcd(uy, vy) along x and
 * |det| / gcd(ux, vx) along y, of several the lcm. Periods whose tile exceeds PERIOD_MAX_PX
 * are not worth it. */
#define PERIOD_MAX_PX ((int64_t)1 << 20)

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

static void
find_period(const tsr_node *n, int64_t out[2])
{
    out[0] = out[1] = 0;
    if (n->source || n->nedges == 0)
        return;
    int64_t px = 1, py = 1;
    for (size_t k = 0; k < n->nedges; k++) {
        const tsr_edge *ed = &n->edges[k];
        const char *t = ed->trait->name;
        if (strcmp(t, "repeat") != 0 && strcmp(t, "repeat-vector") != 0)
            return;
        const tsr_repeat_params *r = ed->params;
        if (r->region[2] > 0)
            return;
        __int128 det = (__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0];
        if (det < 0)
            det = -det;
        int64_t gy = gcd64(r->u[1], r->v[1]), gx = gcd64(r->u[0], r->v[0]);
        if (gx == 0 || gy == 0 || det / gy > PERIOD_MAX_PX || det / gx > PERIOD_MAX_PX)
            return;
        px = lcm_capped(px, (int64_t)(det / gy), PERIOD_MAX_PX);
        py = lcm_capped(py, (int64_t)(det / gx), PERIOD_MAX_PX);
        if (!px || !py)
            return;
    }
    int64_t area;
    if (!tsr_mul_checked(px, py, &area) || area > PERIOD_MAX_PX)
        return;
    out[0] = px;
    out[1] = py;
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

/* Bytes one computation of node n over a rect of rw x rh holds itself: L, cov, fetched child
 * rects (assembled copies or pinned tiles, rounded out to whole tiles, and their bookkeeping
 * when it does not fit compute.c's frame) and trait scratch. */
static int64_t
node_work(const tsr_engine *e, const tsr_node *n, int64_t rw, int64_t rh)
{
    int64_t px = sat_mul(rw, rh);
    int64_t w = n->nedges ? sat_mul(px, 5) : 0;
    if (n->source) /* a polygon's scan lists while its source is drawn */
        w = sat_add(w, (int64_t)tsr_source_scratch(n->source, n->w));
    /* a representative rect away from the origin, so halos and wraps are counted */
    tsr_rect r = tsr_rect_make(n->w > rw ? (n->w - rw) / 2 : 0, n->h > rh ? (n->h - rh) / 2 : 0,
                               rw < n->w ? rw : n->w, rh < n->h ? rh : n->h);
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

static tsr_status
plan_for(tsr_engine *e, int64_t band_rows, tsr_error *err)
{
    const tsr_design *d = e->d;
    tsr_plan *p = &e->plan;
    int64_t budget = e->opts.memory > 0 ? e->opts.memory : TSR_DEFAULT_MEMORY;
    int64_t bps = d->out.depth / 8;
    const tsr_node *root = d->root;
    int64_t sw = d->out.order == TSR_ORDER_SWATH && d->out.swath_width < root->w ? d->out.swath_width
                                                                              : root->w;
    int64_t troot = e->tile[root->id];
    p->band_rows = band_rows;
    int64_t row_bytes = sat_mul(sw, bps);
    p->bands = sat_mul(sat_mul(row_bytes, p->band_rows), NBUF);

    /* path[n]: worst bytes held by one thread while computing one tile of n, children included */
    int64_t *path = calloc(d->nnodes, sizeof *path);
    if (!path)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (plan)");
    p->fixed = 0;
    int64_t decode = 0; /* the largest image's decoding scratch */
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        if (e->period[n->id][0]) { /* the period tile, cached but counted as always held */
            int64_t ppx = sat_mul(e->period[n->id][0], e->period[n->id][1]);
            p->fixed = sat_add(p->fixed, (int64_t)tsr_tile_bytes(tsr_rect_make(0, 0, e->period[n->id][0], e->period[n->id][1])));
            if (n == root) /* and, for the root, its samples (engine.c, fill_periodic) */
                p->fixed = sat_add(p->fixed, sat_mul(ppx, bps));
        }
        int64_t t = e->tile[n->id];
        int64_t rw = t < n->w ? t : n->w, rh = n == root ? p->band_rows : (t < n->h ? t : n->h);
        int64_t deepest = 0;
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_node *c = n->edges[k].child;
            int64_t own = sat_add(sat_mul(tile_px(e, c), 4), path[c->id]);
            if (own > deepest)
                deepest = own;
            /* tables that trait->build makes (or made): distance's, up to 67 MB each */
            const tsr_edge *ed = &n->edges[k];
            if (ed->trait->build_bytes)
                p->fixed = sat_add(p->fixed, (int64_t)ed->trait->build_bytes(ed));
        }
        path[n->id] = sat_add(node_work(e, n, rw, rh), deepest);
        const tsr_source *src = n->source;
        if (src && src->kind == TSR_SRC_IMAGE && src->iw > 0) {
            /* decoded (or to be decoded: tsr_design_build) as iw x ih floats; decoding one
             * takes its rows and libpng's buffers too, one image at a time */
            p->fixed = sat_add(p->fixed, sat_add(sat_mul(sat_mul(src->iw, src->ih), 4), 16));
            if (src->scratch > decode)
                decode = src->scratch;
        }
    }
    p->fixed = sat_add(p->fixed, decode);
    int64_t troot_w = troot < root->w ? troot : root->w;
    p->per_thread = sat_add(path[root->id], sat_mul(sat_mul(troot_w, p->band_rows), 4));
    /* the stack pages its recursion touches */
    p->per_thread = sat_add(p->per_thread, tsr_stack_touched(e->nest));
    free(path);
    p->threads = e->threads;
    /* the design itself (nodes, edges, parameters, small state), the engine's bookkeeping
     * per node, and the sink's own buffers: the writer pool rounded out to 2 MiB huge-page
     * boundaries (up to 8 MiB more) and a deflate stream's buffers (~1 MiB) */
    p->fixed = sat_add(p->fixed, sat_add(e->design_bytes, (int64_t)(d->nnodes * 256) +
                                                              ((int64_t)10 << 20)));
    p->minimum = sat_add(sat_add(p->bands, sat_mul(p->per_thread, p->threads)), p->fixed);
    p->budget = budget;
    p->cache = budget - p->minimum;
    return TSR_OK;
}

/* Bands are a root tile tall unless that takes more than a quarter of the budget or does not
 * fit: then halve them, down to one row. The minimum named on refusal is the one-row plan, so
 * a run given exactly that minimum starts. */
static tsr_status
plan_fit(tsr_engine *e, tsr_error *err)
{
    tsr_plan *p = &e->plan;
    if (!e->period) {
        e->period = calloc(e->d->nnodes, sizeof *e->period);
        if (!e->period)
            return tsr_fail(err, TSR_ENOMEM, "out of memory (plan)");
        for (size_t i = 0; i < e->d->nnodes; i++)
            find_period(e->d->nodes[i], e->period[e->d->nodes[i]->id]);
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
    char need[32], have[32];
    tsr_human_bytes(need, sizeof need, (double)p->minimum);
    tsr_human_bytes(have, sizeof have, (double)p->budget);
    return tsr_fail(err, TSR_EPLAN,
                    "memory plan: needs at least %s (--memory %lld), have %s: bands %lld, "
                    "%lld threads x %lld, fixed %lld bytes",
                    need, (long long)p->minimum, have, (long long)p->bands, (long long)p->threads,
                    (long long)p->per_thread, (long long)p->fixed);
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
        st = tsr_stack_setup(e, err);
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
