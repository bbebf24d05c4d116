/* schedule: the band schedule (engine/schedule.c) names exactly the tiles the CPU recursion
 * acquires over the same band, computed and hit alike, with a cold cache and a warm one.
 *
 * The recursion is the reference: the cache's observer records every tile it acquires while
 * tsr_engine_render_rect computes a band (one thread, a budget nothing is evicted from, the
 * band no taller than the plan's band rows so cpu_values computes it in one batch of
 * tsr_cpu_cut_rects, the same chunks tsr_schedule_band takes). The schedule is made just
 * before, against the same cache. */
#include "engine/schedule.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* One tile and how it was had: computed, or found in the cache. */
typedef struct got {
    tsr_cache_key k;
    bool computed;
} got;

typedef struct gots {
    got *v; /* room for n rounded up to a multiple of 1024 */
    size_t n;
} gots;

static void
add(gots *g, tsr_cache_key k, bool computed)
{
    if (g->n % 1024 == 0) {
        g->v = realloc(g->v, (g->n + 1024) * sizeof *g->v);
        cr_assert(g->v != NULL);
    }
    g->v[g->n++] = (got){k, computed};
}

static void
observe(void *ctx, tsr_cache_key k, bool computed)
{
    add(ctx, k, computed);
}

static int
key_order(tsr_cache_key a, tsr_cache_key b)
{
    if (a.node != b.node)
        return a.node < b.node ? -1 : 1;
    if (a.ty != b.ty)
        return a.ty < b.ty ? -1 : 1;
    return a.tx < b.tx ? -1 : a.tx > b.tx;
}

/* by key, computed before hit */
static int
got_order(const void *a, const void *b)
{
    const got *p = a, *q = b;
    int c = key_order(p->k, q->k);
    return c ? c : (int)q->computed - (int)p->computed;
}

/* The recursion's acquires as a set: a tile the band computed is "computed" (its later
 * acquires found it ready), one it only found is a hit. Nothing may be computed twice. */
static void
recursion_set(gots *g, const char *what)
{
    if (g->n > 1) /* qsort's array may not be NULL, even for no element */
        qsort(g->v, g->n, sizeof *g->v, got_order);
    size_t u = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (u && key_order(g->v[u - 1].k, g->v[i].k) == 0) {
            cr_assert(!g->v[i].computed, "%s: node %lld tile (%lld, %lld) computed twice", what,
                      (long long)g->v[i].k.node, (long long)g->v[i].k.tx, (long long)g->v[i].k.ty);
            continue;
        }
        g->v[u++] = g->v[i];
    }
    g->n = u;
}

/* One list of a stage into g, checking that it runs in row-then-column order without repeats
 * (the root's chunks are no cache tiles: left out). */
static void
add_list(gots *g, const tsr_node *n, const tsr_sched_tile *v, size_t nv, bool computed,
         const char *what)
{
    for (size_t k = 0; k < nv; k++) {
        cr_assert(k == 0 || v[k - 1].ty < v[k].ty ||
                      (v[k - 1].ty == v[k].ty && v[k - 1].tx < v[k].tx),
                  "%s: node %s: tiles out of order", what, n->name);
        if (v[k].ty != TSR_SCHED_CHUNK)
            add(g, (tsr_cache_key){(int64_t)n->id, v[k].tx, v[k].ty}, computed);
    }
}

/* The schedule's tiles as the same kind of set, its stages checked to come children first
 * (node ids follow design->nodes). */
static void
schedule_set(const tsr_schedule *s, gots *g, const char *what)
{
    for (size_t i = 0; i < tsr_schedule_nstages(s); i++) {
        const tsr_sched_stage *st = tsr_schedule_stage(s, i);
        cr_assert(i == 0 || tsr_schedule_stage(s, i - 1)->node->id < st->node->id,
                  "%s: stage %zu (%s) out of order", what, i, st->node->name);
        add_list(g, st->node, st->compute, st->ncompute, true, what);
        add_list(g, st->node, st->hit, st->nhit, false, what);
    }
    if (g->n > 1)
        qsort(g->v, g->n, sizeof *g->v, got_order);
}

static const char *
how(const got *g)
{
    return !g ? "not asked for" : g->computed ? "computed" : "a hit";
}

/* Fails naming the first tile the two sets disagree on (each holds a tile once). */
static void
assert_same(const tsr_design *d, const gots *rec, const gots *sch, const char *what)
{
    size_t i = 0, j = 0;
    while (i < rec->n || j < sch->n) {
        int c = i == rec->n ? 1 : j == sch->n ? -1 : key_order(rec->v[i].k, sch->v[j].k);
        if (c == 0 && rec->v[i].computed == sch->v[j].computed) {
            i++, j++;
            continue;
        }
        const got *r = c <= 0 ? &rec->v[i] : NULL, *s = c >= 0 ? &sch->v[j] : NULL;
        tsr_cache_key k = r ? r->k : s->k;
        cr_assert_fail(
            "%s: node %s tile (%lld, %lld): the recursion: %s, the schedule: %s (%zu vs %zu "
            "tiles)",
            what, d->nodes[k.node]->name, (long long)k.tx, (long long)k.ty, how(r), how(s), rec->n,
            sch->n);
        return;
    }
}

/* Counts over the bands checked. */
typedef struct tally {
    size_t computed, hits;
} tally;

/* Schedule band b, compute it through the recursion, compare; the cache keeps what the band
 * computed, so the next band starts warm. */
static void
check_band(tsr_engine *e, tsr_rect b, const char *what, tally *n)
{
    tsr_error err = {0};
    cr_assert(b.h <= tsr_engine_plan(e)->band_rows, "%s: the band must be computed in one batch",
              what);
    tsr_schedule *s = tsr_schedule_band(e, b, &err);
    cr_assert(s != NULL, "%s: schedule: %s", what, err.msg);
    gots rec = {0}, sch = {0};
    float *px = malloc((size_t)b.w * (size_t)b.h * sizeof *px);
    cr_assert(px != NULL);
    tsr_cache_set_observer(e->cache, observe, &rec);
    tsr_status st = tsr_engine_render_rect(e, b, px, &err);
    tsr_cache_set_observer(e->cache, NULL, NULL);
    cr_assert(st == TSR_OK, "%s: render: %s", what, err.msg);
    recursion_set(&rec, what);
    schedule_set(s, &sch, what);
    assert_same(e->d, &rec, &sch, what);
    for (size_t i = 0; i < sch.n; i++) {
        n->computed += sch.v[i].computed;
        n->hits += !sch.v[i].computed;
    }
    free(px);
    free(rec.v);
    free(sch.v);
    tsr_schedule_free(s);
}

static tsr_rect
band_at(const tsr_node *root, int64_t x, int64_t y, int64_t w, int64_t h)
{
    return tsr_rect_make(x, y, root->w - x < w ? root->w - x : w,
                         root->h - y < h ? root->h - y : h);
}

/* Every band of a small design, in stream order; for a big one the first two bands over the
 * first three root tiles (cold, then warm) and a band in the middle. */
static void
check_design(const char *path, int64_t tile, int threads, tally *all)
{
    tsr_error err = {0};
    tsr_design *d = tsr_engine_load(path, &err);
    cr_assert(d != NULL, "%s: %s", path, err.msg);
    /* a budget nothing is evicted from: the recursion then asks for each tile once */
    tsr_engine_opts o = {.backend = "cpu", .threads = threads, .tile = tile, .memory = (int64_t)1 << 50};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s: engine: %s", path, err.msg);
    const tsr_node *root = d->root;
    int64_t bh = tsr_engine_plan(e)->band_rows, t = e->tile[root->id];
    char what[512];
    tally n = {0, 0};
    if ((double)root->w * (double)root->h <= 1e6) {
        for (int64_t y = 0; y < root->h; y += bh) {
            snprintf(what, sizeof what, "%s, tile %lld, rows %lld+%lld", path, (long long)t,
                     (long long)y, (long long)bh);
            check_band(e, band_at(root, 0, y, root->w, bh), what, &n);
        }
    } else {
        int64_t ym = root->h / 2 / bh * bh, xm = root->w / 2 / t * t;
        tsr_rect bands[3] = {band_at(root, 0, 0, 3 * t, bh), band_at(root, 0, bh, 3 * t, bh),
                             band_at(root, xm, ym, 2 * t, bh)};
        for (size_t k = 0; k < 3; k++) {
            snprintf(what, sizeof what, "%s, tile %lld, band %lld,%lld %lldx%lld", path,
                     (long long)t, (long long)bands[k].x, (long long)bands[k].y,
                     (long long)bands[k].w, (long long)bands[k].h);
            check_band(e, bands[k], what, &n);
        }
    }
    tsr_engine_stats st = tsr_engine_get_stats(e);
    cr_assert(st.evictions == 0 && st.overflow == 0, "%s: the cache evicted", path);
    cr_assert(st.misses == n.computed, "%s: %llu tiles computed, the schedules name %zu", path,
              (unsigned long long)st.misses, n.computed);
    all->computed += n.computed;
    all->hits += n.hits;
    tsr_engine_free(e);
    tsr_design_free(d);
}

static void
check_designs(const char *pattern)
{
    char **files = th_glob(pattern);
    cr_assert(files[0] != NULL, "no designs match %s", pattern);
    tally all = {0, 0};
    for (size_t i = 0; files[i]; i++) {
        check_design(files[i], 64, 1, &all);
        check_design(files[i], 0, 1, &all); /* the design's own tile sizes */
        check_design(files[i], 7, 1, &all); /* need() rects over many tiles: every seam */
        /* threads race for tiles, so which acquire computes varies, but not the set */
        check_design(files[i], 64, 2, &all);
    }
    th_glob_free(files);
    cr_assert(all.hits > 0, "%s: no band found a tile in the cache: pruning went untested",
              pattern);
}

Test(schedule, names_the_tiles_the_recursion_acquires_for_every_oracle_design)
{
    check_designs("tests/oracle/designs/*.yaml");
}

Test(schedule, names_the_tiles_the_recursion_acquires_for_every_example_design)
{
    check_designs("designs/examples/*.yaml");
}

/* the loader's fixtures that load here (sources.yaml names absent images on purpose): every
 * trait in one design, and ref: sharing */
Test(schedule, names_the_tiles_the_recursion_acquires_for_the_loader_fixtures)
{
    check_designs("tests/designs/good/every_trait.yaml");
    check_designs("tests/designs/good/shared.yaml");
    check_designs("tests/designs/good/full.yaml");
}
