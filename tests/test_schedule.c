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
    got *v;
    size_t n, cap;
} gots;

static void
add(gots *g, tsr_cache_key k, bool computed)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
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
    qsort(g->v, g->n, sizeof *g->v, got_order);
    size_t u = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (u && key_order(g->v[u - 1].k, g->v[i].k) == 0) {
            cr_assert(!g->v[i].computed, "%s: node %lld tile (%lld, %lld) computed twice", what,
                      (long long)g->v[i].k.node, (long long)g->v[i].k.tx,
                      (long long)g->v[i].k.ty);
            continue;
        }
        g->v[u++] = g->v[i];
    }
    g->n = u;
}

/* The schedule's tiles as the same kind of set (the root's chunks are no cache tiles). */
static void
schedule_set(const tsr_schedule *s, gots *g)
{
    for (size_t i = 0; i < tsr_schedule_nstages(s); i++) {
        const tsr_sched_stage *st = tsr_schedule_stage(s, i);
        for (size_t k = 0; k < st->ncompute + st->nhit; k++) {
            bool computed = k < st->ncompute;
            tsr_sched_tile t = computed ? st->compute[k] : st->hit[k - st->ncompute];
            if (t.ty != TSR_SCHED_CHUNK)
                add(g, (tsr_cache_key){(int64_t)st->node->id, t.tx, t.ty}, computed);
        }
    }
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
        cr_assert_fail("%s: node %s tile (%lld, %lld): the recursion: %s, the schedule: %s (%zu vs %zu "
                "tiles)",
                what, d->nodes[k.node]->name, (long long)k.tx, (long long)k.ty, how(r), how(s),
                rec->n, sch->n);
        return;
    }
}

/* Schedule band b, compute it through the recursion, compare; the cache keeps what the band
 * computed, so the next band starts warm. Returns the tiles the band computed. */
static size_t
check_band(tsr_engine *e, tsr_rect b, const char *what)
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
    schedule_set(s, &sch);
    assert_same(e->d, &rec, &sch, what);
    size_t computed = 0;
    for (size_t i = 0; i < sch.n; i++)
        computed += sch.v[i].computed;
    free(px);
    free(rec.v);
    free(sch.v);
    tsr_schedule_free(s);
    return computed;
}

static tsr_rect
band_at(const tsr_node *root, int64_t x, int64_t y, int64_t w, int64_t h)
{
    return tsr_rect_make(x, y, root->w - x < w ? root->w - x : w, root->h - y < h ? root->h - y : h);
}

/* Every band of a small design, in stream order; for a big one the first two bands over the
 * first three root tiles (cold, then warm) and a band in the middle. */
static void
check_design(const char *path, int64_t tile)
{
    tsr_error err = {0};
    tsr_design *d = tsr_engine_load(path, &err);
    cr_assert(d != NULL, "%s: %s", path, err.msg);
    /* a budget nothing is evicted from: the recursion then asks for each tile once */
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .tile = tile, .memory = (int64_t)1 << 50};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s: engine: %s", path, err.msg);
    const tsr_node *root = d->root;
    int64_t bh = tsr_engine_plan(e)->band_rows, t = e->tile[root->id];
    char what[512];
    size_t computed = 0;
    if ((double)root->w * (double)root->h <= 1e6) {
        for (int64_t y = 0; y < root->h; y += bh) {
            snprintf(what, sizeof what, "%s, tile %lld, rows %lld+%lld", path, (long long)t,
                     (long long)y, (long long)bh);
            computed += check_band(e, band_at(root, 0, y, root->w, bh), what);
        }
    } else {
        int64_t ym = root->h / 2 / bh * bh, xm = root->w / 2 / t * t;
        tsr_rect bands[3] = {band_at(root, 0, 0, 3 * t, bh), band_at(root, 0, bh, 3 * t, bh),
                             band_at(root, xm, ym, 2 * t, bh)};
        for (size_t k = 0; k < 3; k++) {
            snprintf(what, sizeof what, "%s, tile %lld, band %lld,%lld %lldx%lld", path,
                     (long long)t, (long long)bands[k].x, (long long)bands[k].y,
                     (long long)bands[k].w, (long long)bands[k].h);
            computed += check_band(e, bands[k], what);
        }
    }
    tsr_engine_stats st = tsr_engine_get_stats(e);
    fprintf(stderr, "DBG %s tile %lld bh %lld: computed %zu hits %llu\n", path, (long long)t, (long long)bh, computed, (unsigned long long)st.hits);
    cr_assert(st.evictions == 0 && st.overflow == 0, "%s: the cache evicted", path);
    cr_assert(st.misses == computed, "%s: %llu tiles computed, the schedules name %zu", path,
              (unsigned long long)st.misses, computed);
    tsr_engine_free(e);
    tsr_design_free(d);
}

static void
check_designs(const char *pattern)
{
    char **files = th_glob(pattern);
    cr_assert(files[0] != NULL, "no designs match %s", pattern);
    for (size_t i = 0; files[i]; i++) {
        check_design(files[i], 64);
        check_design(files[i], 0); /* the design's own tile sizes */
    }
    th_glob_free(files);
}

Test(schedule, names_the_tiles_the_recursion_acquires_for_every_oracle_design)
{
    check_designs("tests/oracle/designs/*.yaml");
}

Test(schedule, names_the_tiles_the_recursion_acquires_for_every_example_design)
{
    check_designs("designs/examples/*.yaml");
}
