/* gpu_preview: previews on the GPU backend, a render and a box average with the rows of each
 * block summed on the device (gpu/preview.cu), give the CPU's bytes: blocks dividing the region
 * or clipped, K = 1, blocks wider than a device chunk, 8 and 16 bits; and --fast there is the
 * exact preview (the GPU takes no batches of samples: it would go sample by sample). Tests that
 * need a device skip without one; the choice --fast makes on each backend is checked
 * everywhere. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a radial gradient, a blurred disc added, a lattice of dots: every block differs */
static const char *design_yaml =
    "tessera: 1\n"
    "output: {depth: 16}\n"
    "nodes:\n"
    "  dot: {size: [9, 7], source: {shape: circle, center: [4, 3], radius: 3}}\n"
    "root:\n"
    "  size: [3000, 900]\n"
    "  source: {gradient: radial, center: [1500, 450], radius: 1600, values: [0, 0.6]}\n"
    "  children:\n"
    "    - {trait: repeat, ref: dot, blend: max}\n"
    "    - trait: blur\n"
    "      sigma: 3\n"
    "      blend: add\n"
    "      node: {size: [3000, 900], source: {shape: circle, center: [1400, 420], radius: 300, "
    "value: 0.3}}\n";

/* The PNG of a preview of region r at scale k, depth `depth`, by an engine of `opts`. */
static uint8_t *
preview_bytes(const tsr_design *d, const tsr_engine_opts *opts, tsr_rect r, int64_t k,
              int depth, bool fast, size_t *n)
{
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, opts, &err);
    cr_assert(e != NULL, "engine: %s", err.msg);
    char path[] = "/tmp/tsr-gpu-prev-XXXXXX";
    close(mkstemp(path));
    tsr_preview_opts po = {.scale = k, .depth = depth, .fast = fast};
    cr_assert(tsr_engine_preview_ex(e, r, &po, path, &err) == TSR_OK, "preview: %s", err.msg);
    uint8_t *b = th_read_file(path, n);
    unlink(path);
    tsr_engine_free(e);
    return b;
}

static void
same_as_cpu(const tsr_design *d, tsr_rect r, int64_t k, int depth, int64_t chunk)
{
    tsr_engine_opts cpu = {.backend = "cpu", .threads = 2};
    tsr_engine_opts gpu = {.backend = "gpu", .gpu_chunk = chunk, .gpu_memory = (int64_t)1 << 30};
    size_t n1, n2, n3;
    uint8_t *a = preview_bytes(d, &cpu, r, k, depth, false, &n1);
    uint8_t *b = preview_bytes(d, &gpu, r, k, depth, false, &n2);
    uint8_t *c = preview_bytes(d, &gpu, r, k, depth, true, &n3);
    cr_assert(n1 == n2 && memcmp(a, b, n1) == 0, "K %lld, depth %d, chunk %lld: GPU != CPU",
              (long long)k, depth, (long long)chunk);
    cr_assert(n1 == n3 && memcmp(a, c, n1) == 0, "K %lld: --fast on the GPU is not the exact "
              "preview", (long long)k);
    free(a);
    free(b);
    free(c);
}

Test(gpu_preview, the_gpu_preview_is_the_cpu_preview_byte_for_byte, .timeout = 300)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_design *d = th_design(design_yaml);
    tsr_rect r = tsr_rect_make(13, 7, 2950, 880);
    same_as_cpu(d, r, 7, 16, 0);          /* clipped last blocks */
    same_as_cpu(d, r, 10, 8, 0);          /* 2950 = 295 x 10 */
    same_as_cpu(d, r, 1, 16, 0);          /* one pixel a block */
    same_as_cpu(d, r, 5000, 16, 0);       /* one block: the whole region */
    same_as_cpu(d, r, 37, 16, 4096);      /* chunks of 1 row: rows summed across chunks */
    same_as_cpu(d, r, 3, 8, 3 * 2950 + 5); /* chunks that end inside a block row */
    tsr_design_free(d);
}

/* --fast samples on the CPU where that is cheaper (large blocks over cheap nodes), never on a
 * backend without batches of samples; --scale 1 is always the exact preview. */
Test(gpu_preview, fast_samples_only_where_a_backend_batches_samples)
{
    tsr_design *d = th_design(design_yaml);
    tsr_error err = {0};
    tsr_engine_opts cpu = {.backend = "cpu", .threads = 1, .tile = 16};
    tsr_engine *e = tsr_engine_new(d, &cpu, &err);
    cr_assert(e != NULL, "%s", err.msg);
    tsr_rect r = tsr_rect_make(0, 0, 3000, 900);
    cr_assert(!tsr_preview_samples(e, r, 1), "--scale 1 samples");
    tsr_engine_free(e);
    if (tsr_gpu_available()) {
        tsr_engine_opts gpu = {.backend = "gpu", .gpu_memory = (int64_t)1 << 30};
        e = tsr_engine_new(d, &gpu, &err);
        cr_assert(e != NULL, "%s", err.msg);
        cr_assert(!tsr_preview_samples(e, r, 300), "the GPU samples one by one");
        tsr_engine_free(e);
    }
    tsr_engine_opts gpu_opts = {.backend = "gpu"};
    cr_assert_eq(tsr_preview_fast_tile_for(d, &gpu_opts, r, 300), 0,
                 "a GPU engine for --fast gets small tiles");
    tsr_design_free(d);
}
