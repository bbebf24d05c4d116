/* Stops inside a band, and while an engine decodes and builds: the engine's workers poll tsr_engine_opts.stop per
 * tile and inside long loops (sources per row, blur and distance per row block), abandon what
 * they were computing and fail with TSR_EINTR; nothing unfinished reaches the cache, so the
 * same engine, once the flag is cleared, renders exactly what a fresh engine does. */
#include "engine/engine.h"
#include "image/image.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct stopper {
    volatile sig_atomic_t *flag;
    unsigned ms;
} stopper;

static void *
stop_later(void *arg)
{
    stopper *s = arg;
    usleep(s->ms * 1000);
    *s->flag = 1;
    return NULL;
}

/* A comb of 10000 teeth (a 20000-point polygon) with 16x16 anti-aliasing, the child of a blur
 * and of a distance: every sub-sample row of the 4096 px root crosses all 20000 edges (the
 * scanline fill computes each crossing once a sub-row, 320000 a pixel row), so a band takes
 * seconds and a stop lands in the middle of a source, a layer or both. (A 100-point star was
 * enough while every sub-sample tested every edge; the scanline fill draws it in 0.1 s.) */
static char *
heavy_yaml(void)
{
    size_t cap = 1 << 20, len = 0;
    char *y = malloc(cap);
    cr_assert(y != NULL);
    len += (size_t)snprintf(y + len, cap - len,
                            "tessera: 1\ntile: 256\nnodes:\n  poly:\n    size: [4096, 4096]\n"
                            "    source: {shape: polygon, aa: 16, points: [");
    for (int i = 0; i < 10000; i++) {
        double x = 4096.0 * i / 10000;
        len += (size_t)snprintf(y + len, cap - len, "%s[%.3f, 100], [%.3f, 3996]", i ? ", " : "",
                                x, x + 0.2048);
    }
    cr_assert(len < cap - 256);
    snprintf(y + len, cap - len,
             "]}\nroot:\n  size: [4096, 4096]\n  children:\n"
             "    - {trait: blur, sigma: 6, ref: poly}\n"
             "    - {trait: distance, ref: poly, dmax: 40, blend: add}\n");
    return y;
}

Test(stop, a_stop_abandons_the_band_and_leaves_nothing_unfinished_cached)
{
    char *yaml = heavy_yaml();
    tsr_design *d = th_design(yaml);
    volatile sig_atomic_t flag = 0;
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 2, .stop = &flag};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    tsr_rect all = tsr_rect_make(0, 0, 4096, 1024);
    float *px = malloc((size_t)all.w * (size_t)all.h * sizeof *px);
    stopper s = {&flag, 300};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, stop_later, &s), 0);
    tsr_status st = tsr_engine_render_rect(e, all, px, &err); /* ~7 s without the stop */
    pthread_join(t, NULL);
    cr_assert_eq(st, TSR_EINTR, "%s (%s)", tsr_status_name(st), err.msg);
    cr_assert_str_eq(err.msg, "interrupted");

    /* the same engine goes on: every tile it cached is whole */
    flag = 0;
    tsr_rect r = tsr_rect_make(0, 0, 512, 256);
    cr_assert_eq(tsr_engine_render_rect(e, r, px, &err), TSR_OK, "%s", err.msg);
    float *want = th_rect(d, r, 0, 1);
    for (int64_t i = 0; i < r.w * r.h; i++)
        cr_assert(memcmp(&px[i], &want[i], sizeof *px) == 0, "pixel %lld is %.9g, want %.9g",
                  (long long)i, (double)px[i], (double)want[i]);
    free(want);
    free(px);
    tsr_engine_free(e);
    tsr_design_free(d);
    free(yaml);
}

Test(stop, a_stop_set_before_the_call_computes_nothing)
{
    tsr_design *d = th_design("tessera: 1\nroot: {size: [64, 48], source: {shape: circle, "
                              "center: [32, 24], radius: 20}}\n");
    volatile sig_atomic_t flag = SIGTERM;
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .stop = &flag};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    uint64_t bytes = 1;
    cr_assert_eq(tsr_engine_drain(e, tsr_rect_make(0, 0, 64, 48), &bytes, &err), TSR_EINTR);
    cr_assert_eq(tsr_engine_get_stats(e).misses, 0, "a tile was computed");
    tsr_engine_free(e);
    tsr_design_free(d);
}

/* Decoding a big image or building a distance table takes seconds: both poll the stop, and
 * what they leave is dropped (the design stays unbuilt; a later engine builds it). */
Test(stop, a_stop_while_building_drops_the_image_and_the_table)
{
    const char *yaml = "tessera: 1\n"
                       "nodes:\n"
                       "  g: {source: {image: tests/oracle/designs/img/g8.png}}\n"
                       "root:\n"
                       "  size: [64, 48]\n"
                       "  children:\n"
                       "    - {trait: distance, ref: g, dmax: 600, blend: add}\n";
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = th_design_deferred(yaml, "s.yaml");
    volatile sig_atomic_t flag = SIGINT;
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .stop = &flag};
    cr_assert_null(tsr_engine_new(d, &o, &err));
    cr_assert_eq(err.status, TSR_EINTR, "%s", err.msg);
    cr_assert(strstr(err.msg, "s.yaml:3:") && strstr(err.msg, "interrupted"), "%s", err.msg);
    cr_assert_null(d->nodes[0]->source->img);
    /* the image decoded, the table interrupted */
    cr_assert_eq(tsr_design_build(d, tsr_png_read_gray, &err), TSR_OK, "%s", err.msg);
    tsr_design_free(d);
    d = th_design_deferred(yaml, "s.yaml");
    cr_assert_eq(tsr_design_build(d, tsr_png_read_gray, &err), TSR_OK, "%s", err.msg);
    tsr_edge *dist = &d->root->edges[0];
    dist->trait->release(dist); /* as if never built */
    tsr_stop_bind(&flag);
    cr_assert_eq(tsr_design_build(d, tsr_png_read_gray, &err), TSR_EINTR, "%s", err.msg);
    tsr_stop_bind(NULL);
    cr_assert_null(dist->state);
    /* cleared, the engine builds it and renders */
    flag = 0;
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_not_null(dist->state);
    tsr_engine_free(e);
    tsr_design_free(d);
}

/* `tessera check` plans only: nothing is decoded or built, and the engine cannot render. */
Test(stop, a_plan_only_engine_makes_nothing_and_renders_nothing)
{
    const char *yaml = "tessera: 1\nroot:\n  source: {image: tests/oracle/designs/img/g8.png}\n";
    tsr_error err = {TSR_OK, ""};
    tsr_design *d = th_design_deferred(yaml, "p.yaml");
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .plan_only = true};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_null(d->root->source->img);
    float px[4];
    cr_assert_eq(tsr_engine_render_rect(e, tsr_rect_make(0, 0, 2, 2), px, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "plan only"), "%s", err.msg);
    tsr_engine_free(e);
    tsr_design_free(d);
}
