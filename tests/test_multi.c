/* multi: `--gpus N` (dist/gpus.c), bands of one stream on N engines handed out in runs and
 * put back in order. The same bytes as one engine, always: over every oracle design in both
 * orders, with a crop and from a resume offset. Without a GPU the engines are CPU ones
 * (the gpus_on_cpu knob, TSR_MULTI_CPU=1), which exercises the same hand-out and reorder path; on a device the
 * second test runs them as GPU engines (two on one GPU when there is one). */
#include "designs/designs.h"
#include "dist/dist.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* The design's stream by N engines (tile 16: many small bands, so every engine gets runs), from
 * byte `start`, rows [rows0, rows1) when rows1 > 0. */
static uint8_t *
stream_multi(const tsr_design *d, int gpus, int64_t rows0, int64_t rows1, size_t *n)
{
    tsr_engine_opts o = {.backend = "auto", .gpus = gpus, .ops = &tsr_backend_gpus, .tile = 16, .threads = 1,
                         .rows = {rows0, rows1}};
    return th_stream_opts(d, &o, n);
}

static uint8_t *
stream_one(const tsr_design *d, int64_t rows0, int64_t rows1, size_t *n)
{
    tsr_engine_opts o = {.backend = "cpu", .tile = 16, .threads = 1, .rows = {rows0, rows1}};
    return th_stream_opts(d, &o, n);
}

static void
assert_same(const char *path, const char *what, int gpus, int64_t rows0, int64_t rows1)
{
    tsr_error err = {0};
    tsr_design *d = tsr_engine_load(path, &err);
    cr_assert_not_null(d, "%s: %s", path, err.msg);
    if (rows1 > d->root->h)
        rows1 = d->root->h;
    size_t n1, n3;
    uint8_t *one = stream_one(d, rows0, rows1, &n1);
    uint8_t *many = stream_multi(d, gpus, rows0, rows1, &n3);
    cr_assert(n1 == n3 && memcmp(one, many, n1) == 0, "%s (%s, --gpus %d): bytes differ", path,
              what, gpus);
    free(one);
    free(many);
    tsr_design_free(d);
}

static void
every_oracle_design(int gpus)
{
    char **files = th_glob("tests/oracle/designs/*.yaml");
    size_t k = 0;
    for (; files[k]; k++) {
        assert_same(files[k], "whole", gpus, 0, 0);
        assert_same(files[k], "rows 3:57", gpus, 3, 57);
    }
    th_glob_free(files);
    cr_assert(k > 20, "only %zu oracle designs", k);
}

Test(multi, three_cpu_engines_give_the_bytes_of_one_for_every_oracle_design, .timeout = 300)
{
    th_env("TSR_MULTI_CPU", "1");
    every_oracle_design(3);
}

Test(multi, two_gpu_engines_give_the_bytes_of_the_cpu, .timeout = 600)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    every_oracle_design(2);
}

/* A stream started at an odd offset is the tail of the whole one. */
Test(multi, a_resumed_stream_is_the_tail_of_the_whole, .timeout = 60)
{
    th_env("TSR_MULTI_CPU", "1");
    tsr_design *d = th_design("tessera: 1\n"
                              "output: {depth: 16, order: swath, swath: {width: 96}}\n"
                              "root:\n"
                              "  size: [300, 200]\n"
                              "  source: {gradient: radial, center: [150, 100], radius: 160, "
                              "values: [0, 1]}\n"
                              "  children:\n"
                              "    - trait: blur\n"
                              "      sigma: 2\n"
                              "      node: {size: [300, 200], source: {shape: circle, "
                              "center: [150, 100], radius: 70, aa: 4}}\n");
    size_t n1;
    uint8_t *whole = stream_one(d, 0, 0, &n1);
    tsr_engine_opts o = {.backend = "auto", .gpus = 4, .ops = &tsr_backend_gpus, .tile = 16, .threads = 1};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert_not_null(e, "%s", err.msg);
    cr_assert_str_eq(tsr_engine_backend(e), "gpus");
    uint64_t start = n1 / 3 + 7;
    size_t n;
    uint8_t *tail = th_stream_engine(e, start, &n);
    cr_assert(n == n1 - start && memcmp(tail, whole + start, n) == 0, "the resumed tail differs");
    free(tail);
    free(whole);
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(multi, gpus_with_the_cpu_backend_is_refused)
{
    tsr_design *d = th_design("tessera: 1\nroot: {size: [10, 10], fill: 0.5}\n");
    tsr_engine_opts o = {.backend = "cpu", .gpus = 2, .ops = &tsr_backend_gpus};
    tsr_error err = {0};
    cr_assert_null(tsr_engine_new(d, &o, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "--gpus") != NULL, "%s", err.msg);
    tsr_design_free(d);
}

Test(multi, gpus_without_a_device_is_refused_naming_why)
{
    if (tsr_gpu_available())
        cr_skip_test("a GPU is present");
    tsr_design *d = th_design("tessera: 1\nroot: {size: [10, 10], fill: 0.5}\n");
    tsr_engine_opts o = {.backend = "auto", .gpus = 2, .ops = &tsr_backend_gpus};
    tsr_error err = {0};
    cr_assert_null(tsr_engine_new(d, &o, &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "--gpus: no usable GPU") != NULL, "%s", err.msg);
    tsr_design_free(d);
}
