/* The band schedule: see schedule.h. Each node's wanted tiles are gathered in a list with
 * repeats (one entry per parent tile and need() rect that meets it); when the walk reaches the
 * node, every parent has added its wants (topological order), so the list is sorted, made
 * unique and split into computes and hits, and only the computes add wants to the children.
 * Nothing recurses: a chain 2000 nodes deep costs one step per node. */
#include "engine/schedule.h"

#include <stdlib.h>
#include <string.h>

struct tsr_schedule {
    const tsr_engine *e;       /* borrowed: grids and periods */
    tsr_rect *chunks;          /* [nchunks] the root chunks (owned) */
    size_t nchunks;
    tsr_sched_stage *stages;   /* [nstages] children first; each owns its compute array, which
                                * the hits follow */
    size_t nstages;
};

/* The tiles a node's parents want, with repeats. */
typedef struct want_list {
    tsr_sched_tile *v;
    size_t n, cap;
} want_list;

static bool
want(want_list *l, int64_t tx, int64_t ty)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        tsr_sched_tile *v = cap > SIZE_MAX / sizeof *v ? NULL : realloc(l->v, cap * sizeof *v);
        if (!v)
            return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (tsr_sched_tile){tx, ty};
    return true;
}

static bool
want_rect(const tsr_engine *e, want_list *wants, const tsr_node *c, tsr_rect r);

/* What node c's edges need to compute c over r, wanted of its children: for each tile a stage
 * computes, and at once for an uncached node (engine/plan.c), computed over r where it is read
 * with no tile of its own (its children come later in the walk: they precede it in
 * d->nodes). */
static bool
want_edges(const tsr_engine *e, want_list *wants, const tsr_node *c, tsr_rect r)
{
    for (size_t k = 0; k < c->nedges; k++) {
        const tsr_edge *ed = &c->edges[k];
        tsr_rect rects[TSR_NEED_MAX];
        size_t nr = ed->trait->need(ed, r, rects);
        for (size_t j = 0; j < nr; j++)
            if (!want_rect(e, wants, ed->child, rects[j]))
                return false;
    }
    return true;
}

/* Child rect r is read the way compute.c reads it: an uncached node computed over r; a node
 * that repeats (engine/plan.c) through its period tile where r meets its interior and through
 * its grid tiles over the rest of r; any other through every grid tile r meets. */
static bool
want_rect(const tsr_engine *e, want_list *wants, const tsr_node *c, tsr_rect r)
{
    if (tsr_engine_uncached(e, c))
        return want_edges(e, wants, c, r);
    want_list *l = &wants[c->id];
    tsr_rect parts[4] = {r};
    size_t np = 1;
    if (tsr_repeats(e, c)) {
        tsr_rect in = tsr_rect_intersect(r, e->inner[c->id].in);
        np = tsr_rect_minus(r, in, parts);
        if (!tsr_rect_empty(in) && !want(l, TSR_SCHED_PERIOD, TSR_SCHED_PERIOD))
            return false;
    }
    for (size_t k = 0; k < np; k++) {
        int64_t tx0, ty0, tx1, ty1;
        tsr_grid_tiles_of(&e->grid[c->id], parts[k], &tx0, &ty0, &tx1, &ty1);
        for (int64_t ty = ty0; ty < ty1; ty++)
            for (int64_t tx = tx0; tx < tx1; tx++)
                if (!want(l, tx, ty))
                    return false;
    }
    return true;
}

static int
tile_order(const void *a, const void *b)
{
    const tsr_sched_tile *p = a, *q = b;
    if (p->ty != q->ty)
        return p->ty < q->ty ? -1 : 1;
    return p->tx < q->tx ? -1 : p->tx > q->tx;
}

tsr_rect
tsr_schedule_tile_rect(const tsr_schedule *s, const tsr_node *n, tsr_sched_tile t)
{
    if (t.ty == TSR_SCHED_CHUNK)
        return s->chunks[t.tx];
    if (t.ty == TSR_SCHED_PERIOD)
        return tsr_period_rect(s->e, n);
    return tsr_grid_tile_rect(&s->e->grid[n->id], t.tx, t.ty);
}

/* Node n's stage from its wants (consumed): computes first, then hits, each in tile order.
 * Every computed tile adds what its edges need to the children's wants. */
static bool
make_stage(tsr_schedule *s, const tsr_node *n, want_list *l, want_list *wants)
{
    const tsr_engine *e = s->e;
    if (l->n > 1) /* qsort's array may not be NULL, even for no element */
        qsort(l->v, l->n, sizeof *l->v, tile_order);
    size_t u = 0;
    for (size_t i = 0; i < l->n; i++)
        if (u == 0 || tile_order(&l->v[u - 1], &l->v[i]) != 0)
            l->v[u++] = l->v[i];
    tsr_sched_tile *out = malloc(u * sizeof *out);
    if (!out)
        return false;
    tsr_sched_stage *st = &s->stages[s->nstages++];
    *st = (tsr_sched_stage){n, out, 0, NULL, 0};
    size_t back = u; /* hits fill the array from its end, so in reverse order */
    for (size_t i = 0; i < u; i++) {
        tsr_sched_tile t = l->v[i];
        tsr_cache_key key = {(int64_t)n->id, t.tx, t.ty};
        if (t.ty != TSR_SCHED_CHUNK && tsr_cache_ready(e->cache, key)) {
            out[--back] = t;
            continue;
        }
        out[st->ncompute++] = t;
        if (!want_edges(e, wants, n, tsr_schedule_tile_rect(s, n, t)))
            return false;
    }
    st->hit = out + back;
    st->nhit = u - back;
    for (size_t i = 0; i < st->nhit / 2; i++) {
        tsr_sched_tile t = out[back + i];
        out[back + i] = out[u - 1 - i];
        out[u - 1 - i] = t;
    }
    return true;
}

tsr_schedule *
tsr_schedule_make(const tsr_engine *e, const tsr_rect *chunks, size_t n, tsr_error *err)
{
    const tsr_design *d = e->d;
    tsr_schedule *s = calloc(1, sizeof *s);
    want_list *wants = calloc(d->nnodes, sizeof *wants);
    if (!s || !wants)
        goto fail;
    s->e = e;
    s->chunks = malloc((n ? n : 1) * sizeof *s->chunks);
    s->stages = calloc(d->nnodes, sizeof *s->stages);
    if (!s->chunks || !s->stages)
        goto fail;
    memcpy(s->chunks, chunks, n * sizeof *chunks);
    s->nchunks = n;
    /* the root's chunks are its tiles; a root that repeats is read like any such node */
    const tsr_node *root = d->root;
    for (size_t k = 0; k < n; k++) {
        bool ok = tsr_repeats(e, root) ? want_rect(e, wants, root, chunks[k])
                                    : want(&wants[root->id], (int64_t)k, TSR_SCHED_CHUNK);
        if (!ok)
            goto fail;
    }
    for (size_t i = d->nnodes; i-- > 0;) { /* parents before children */
        const tsr_node *m = d->nodes[i];
        want_list *l = &wants[m->id];
        if (l->n && !make_stage(s, m, l, wants))
            goto fail;
        free(l->v);
        *l = (want_list){NULL, 0, 0};
    }
    free(wants);
    /* the walk went parents first; execution goes children first */
    for (size_t i = 0; i < s->nstages / 2; i++) {
        tsr_sched_stage t = s->stages[i];
        s->stages[i] = s->stages[s->nstages - 1 - i];
        s->stages[s->nstages - 1 - i] = t;
    }
    return s;

fail:
    for (size_t i = 0; wants && i < d->nnodes; i++)
        free(wants[i].v);
    free(wants);
    tsr_schedule_free(s);
    tsr_fail(err, TSR_ENOMEM, "out of memory (band schedule)");
    return NULL;
}

tsr_schedule *
tsr_schedule_band(const tsr_engine *e, tsr_rect band, tsr_error *err)
{
    if (tsr_rect_empty(band))
        return tsr_schedule_make(e, &band, 0, err);
    tsr_rect *chunks;
    size_t n = tsr_cpu_cut_rects(e, band, &chunks);
    if (!n) {
        tsr_fail(err, TSR_ENOMEM, "out of memory (band schedule)");
        return NULL;
    }
    tsr_schedule *s = tsr_schedule_make(e, chunks, n, err);
    free(chunks);
    return s;
}

void
tsr_schedule_free(tsr_schedule *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->stages && i < s->nstages; i++)
        free((void *)s->stages[i].compute);
    free(s->stages);
    free(s->chunks);
    free(s);
}

size_t
tsr_schedule_nstages(const tsr_schedule *s)
{
    return s->nstages;
}

const tsr_sched_stage *
tsr_schedule_stage(const tsr_schedule *s, size_t i)
{
    return i < s->nstages ? &s->stages[i] : NULL;
}
