/* gpu: the CUDA backend against the CPU reference, bit for bit (docs/format.md §9.3): root floats over
 * whole designs or regions at several chunk sizes, and streamed bytes in every order, depth,
 * crop and resume offset. Tests that need a device skip without one (CI); the ones that check
 * what happens without a device, and the build flags, run everywhere. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void
need_gpu(void)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
}

static tsr_design *
load_file(const char *path)
{
    tsr_error err = {0};
    tsr_design *d = tsr_engine_load(path, &err);
    cr_assert(d != NULL, "%s: %s", path, err.msg);
    return d;
}

static tsr_engine *
gpu_engine(const tsr_design *d, int64_t chunk, const int64_t rows[2])
{
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "gpu", .gpu_chunk = chunk, .gpu_memory = (int64_t)4 << 30};
    if (rows) {
        o.rows[0] = rows[0];
        o.rows[1] = rows[1];
    }
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "gpu engine: %s", err.msg);
    cr_assert_str_eq(tsr_engine_backend(e), "gpu");
    return e;
}

/* The first differing float, for the message. */
static size_t
first_diff(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0)
            return i;
    return n;
}

/* The chunk sizes assert_values_equal tries: the default, a band-sized one and an odd one that
 * cuts rows and columns oddly. */
static const int64_t all_chunks[] = {0, 4096, 37 * 53};
static const int64_t *chunks = all_chunks;
static size_t nchunks = 3;

static void
assert_values_equal(const char *path, const tsr_design *d, tsr_rect r)
{
    size_t n = (size_t)r.w * (size_t)r.h;
    float *ref = th_rect(d, r, 512, 2);
    for (size_t c = 0; c < nchunks; c++) {
        tsr_engine *e = gpu_engine(d, chunks[c], NULL);
        float *got = malloc(n * sizeof *got);
        memset(got, 0xff, n * sizeof *got); /* NaN: an unwritten pixel never passes */
        tsr_error err = {0};
        cr_assert_eq(tsr_engine_render_rect(e, r, got, &err), TSR_OK, "%s: %s", path, err.msg);
        size_t i = first_diff(ref, got, n);
        cr_assert(i == n,
                  "%s: region %lld,%lld,%lldx%lld, chunk %lld: pixel (%lld, %lld) is %.9g on the "
                  "GPU, %.9g on the CPU",
                  path, (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                  (long long)chunks[c], (long long)(r.x + (int64_t)(i % (size_t)r.w)),
                  (long long)(r.y + (int64_t)(i / (size_t)r.w)), i < n ? got[i] : 0.0,
                  i < n ? ref[i] : 0.0);
        free(got);
        tsr_engine_free(e);
    }
    free(ref);
}

/* Whole small designs; for big ones the top-left corner, a middle region that straddles every
 * tile and chunk seam, and the bottom-right corner. */
static void
assert_design_values(const char *path)
{
    tsr_design *d = load_file(path);
    int64_t w = d->root->w, h = d->root->h;
    if ((double)w * (double)h <= 1e6) {
        assert_values_equal(path, d, tsr_rect_make(0, 0, w, h));
    } else {
        int64_t rw = w < 700 ? w : 700, rh = h < 300 ? h : 300;
        assert_values_equal(path, d, tsr_rect_make(0, 0, rw, rh));
        assert_values_equal(path, d, tsr_rect_make(w / 2 - rw / 2, h / 2 - rh / 2, rw, rh));
        assert_values_equal(path, d, tsr_rect_make(w - rw, h - rh, rw, rh));
    }
    tsr_design_free(d);
}

static size_t
for_each_design(void (*f)(const char *path))
{
    const char *sets[] = {"tests/oracle/designs/*.yaml", "designs/examples/*.yaml",
                          "designs/bench/*.yaml"};
    size_t count = 0;
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        char **files = th_glob(sets[s]);
        for (size_t i = 0; files[i]; i++, count++)
            f(files[i]);
        th_glob_free(files);
    }
    return count;
}

Test(gpu, every_design_gives_the_cpu_floats_bit_for_bit, .timeout = 1200)
{
    need_gpu();
    cr_assert(for_each_design(assert_design_values) > 30, "too few designs found");
}

/* The device tile cache's paths on every design: every device and host node below the root
 * kept in it (TSR_GPU_CACHE=all), at the odd chunk size, whose chunks gather tiles across
 * every seam. */
Test(gpu, every_design_with_every_node_cached_gives_the_cpu_floats, .timeout = 1200)
{
    need_gpu();
    th_env("TSR_GPU_CACHE", "all");
    static const int64_t odd[] = {37 * 53};
    chunks = odd;
    nchunks = 1;
    cr_assert(for_each_design(assert_design_values) > 30, "too few designs found");
}

/* A blur of a blurred disc: the inner blur's node is cached (it costs a blur, and the outer
 * blur's halo, ~96 px around each band, makes neighbouring bands read ~40 % of the same
 * pixels again). */
static const char cached_yaml[] =
    "tessera: 1\n"
    "output: {depth: 16}\n"
    "root:\n"
    "  size: [3000, 2000]\n"
    "  children:\n"
    "    - trait: blur\n"
    "      sigma: 24\n"
    "      node:\n"
    "        size: [3000, 2000]\n"
    "        children:\n"
    "          - trait: blur\n"
    "            sigma: 2\n"
    "            node: {size: [3000, 2000], source: {shape: circle, center: [1500, 1000], "
    "radius: 900, value: 1}}\n";

/* The stream of cached_yaml on the GPU with `gpu_memory` bytes (0: the smallest plan and 6 MiB,
 * about 5 device tiles), equal to the CPU's; its device cache figures in *st. */
static void
stream_cached(int64_t gpu_memory, tsr_engine_stats *st)
{
    tsr_design *d = th_design(cached_yaml);
    tsr_error err = {0};
    if (gpu_memory == 0) { /* the refusal names the smallest plan */
        tsr_engine_opts o = {.backend = "gpu", .gpu_memory = 1};
        cr_assert(tsr_engine_new(d, &o, &err) == NULL);
        const char *p = strstr(err.msg, "--gpu-memory ");
        cr_assert(p != NULL, "%s", err.msg);
        gpu_memory = strtoll(p + strlen("--gpu-memory "), NULL, 10) + ((int64_t)6 << 20);
    }
    tsr_engine_opts o = {.backend = "gpu", .gpu_memory = gpu_memory};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_str_eq(tsr_engine_node_class(e, d->root->edges[0].child), "device, cached");
    size_t nref, n;
    uint8_t *ref = th_stream(d, 512, 2, &nref);
    uint8_t *got = th_stream_engine(e, 0, &n);
    cr_assert(n == nref && memcmp(ref, got, n) == 0, "the GPU's stream differs (--gpu-memory %lld)",
              (long long)gpu_memory);
    *st = tsr_engine_get_stats(e);
    free(ref);
    free(got);
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(gpu, the_device_tile_cache_keeps_tiles_for_the_next_band, .timeout = 120)
{
    need_gpu();
    tsr_engine_stats st;
    stream_cached((int64_t)1 << 30, &st);
    cr_assert(st.dev_misses > 0 && st.dev_hits > 0, "hits %llu, misses %llu",
              (unsigned long long)st.dev_hits, (unsigned long long)st.dev_misses);
    cr_assert_eq(st.dev_evictions, 0);
    /* every tile of the cached node computed once: 6 x 4 tiles of 512 px */
    cr_assert_eq(st.dev_misses, 24);
}

Test(gpu, eviction_under_a_tiny_gpu_memory_gives_the_same_bytes, .timeout = 120)
{
    need_gpu();
    tsr_engine_stats st;
    stream_cached(0, &st);
    cr_assert(st.dev_cache_budget > 0 && st.dev_cache_budget <= (int64_t)6 << 20, "budget %lld",
              (long long)st.dev_cache_budget);
    cr_assert(st.dev_evictions > 0, "evictions %llu", (unsigned long long)st.dev_evictions);
    cr_assert(st.dev_misses > 24, "tiles computed again after eviction: %llu misses",
              (unsigned long long)st.dev_misses);
}

/* A node read by several edges is computed once per chunk and rect: the ref bomb (n20 reaches
 * n0 by 4^20 paths, 21 nodes) renders at once instead of walking 1e12 paths. */
Test(gpu, shared_nodes_are_computed_once_per_chunk, .timeout = 120)
{
    need_gpu();
    char *path = th_src("tests/designs/limits/ref_bomb.yaml");
    tsr_design *d = load_file(path);
    assert_values_equal(path, d, tsr_rect_make(0, 0, d->root->w, d->root->h));
    tsr_design_free(d);
    free(path);
}

/* The oracle designs once, at the default chunk: what scripts/gpu-check.sh runs under
 * compute-sanitizer (memcheck, racecheck), where the whole sweep would take too long. */
static void
assert_oracle_values(const char *path)
{
    tsr_design *d = load_file(path);
    int64_t w = d->root->w < 300 ? d->root->w : 300, h = d->root->h < 200 ? d->root->h : 200;
    tsr_rect r = tsr_rect_make(0, 0, w, h);
    size_t n = (size_t)w * (size_t)h;
    float *ref = th_rect(d, r, 512, 2), *got = malloc(n * sizeof *got);
    tsr_engine *e = gpu_engine(d, 0, NULL);
    tsr_error err = {0};
    cr_assert_eq(tsr_engine_render_rect(e, r, got, &err), TSR_OK, "%s: %s", path, err.msg);
    cr_assert(first_diff(ref, got, n) == n, "%s: GPU floats differ", path);
    tsr_engine_free(e);
    free(ref);
    free(got);
    tsr_design_free(d);
}

Test(gpu, sanitized_oracle_designs_equal_the_cpu, .timeout = 1200)
{
    need_gpu();
    /* TSR_GPU_SWEEP=a,b: only the designs whose file name starts with one of these (a slow
     * sanitizer's subset) */
    const char *only = getenv("TSR_GPU_SWEEP");
    char **files = th_glob("tests/oracle/designs/*.yaml");
    size_t i = 0, done = 0;
    for (; files[i]; i++) {
        const char *base = strrchr(files[i], '/') ? strrchr(files[i], '/') + 1 : files[i];
        bool take = !only;
        for (const char *p = only; p && *p && !take;) {
            size_t len = strcspn(p, ",");
            take = len && strncmp(base, p, len) == 0;
            p += len + (p[len] == ',');
        }
        if (take) {
            assert_oracle_values(files[i]);
            done++;
        }
    }
    th_glob_free(files);
    cr_assert(done > 0 && (only || done > 20), "%zu designs", done);
}

/* ---- random designs: every source, trait, mode and blend drawn at random ----------------- */

static uint64_t rng_state;

static uint32_t
rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

static double
rndf(double lo, double hi)
{
    return lo + (hi - lo) * (double)rnd(1u << 20) / (double)(1u << 20);
}

/* A motif node's source, as a YAML flow mapping, inside a w x h node. */
static void
rand_source(char *b, size_t n, int w, int h)
{
    char aa[16] = "";
    if (rnd(2))
        snprintf(aa, sizeof aa, ", aa: %u", 1 + rnd(5));
    double cx = rndf(-2, w + 2), cy = rndf(-2, h + 2), v = rndf(-0.5, 1.5);
    switch (rnd(7)) {
    case 0: snprintf(b, n, "{shape: circle, center: [%.3f, %.3f], radius: %.3f, value: %.3f%s}", cx, cy, rndf(0.3, w), v, aa); break;
    case 1: snprintf(b, n, "{shape: ellipse, center: [%.3f, %.3f], radii: [%.3f, %.3f], value: %.3f%s}", cx, cy, rndf(0.5, w), rndf(0.5, h), v, aa); break;
    case 2: { double r0 = rndf(0, w / 2.0); snprintf(b, n, "{shape: ring, center: [%.3f, %.3f], radii: [%.3f, %.3f], value: %.3f%s}", cx, cy, r0, r0 + rndf(0.5, w / 2.0), v, aa); break; }
    case 3: snprintf(b, n, "{shape: rect, rect: [%.3f, %.3f, %.3f, %.3f], value: %.3f%s}", rndf(-2, w), rndf(-2, h), rndf(0.5, w), rndf(0.5, h), v, aa); break;
    case 4: snprintf(b, n, "{shape: polygon, points: [[%.2f, %.2f], [%.2f, %.2f], [%.2f, %.2f], [%.2f, %.2f]], value: %.3f%s}", rndf(0, w), rndf(0, h), rndf(0, w), rndf(0, h), rndf(0, w), rndf(0, h), rndf(0, w), rndf(0, h), v, aa); break;
    case 5: snprintf(b, n, "{gradient: linear, from: [%.2f, %.2f], to: [%.2f, %.2f], values: [%.3f, %.3f]}", rndf(0, w), rndf(0, h), rndf(0, w) + w, rndf(0, h), rndf(0, 1), rndf(0, 1)); break;
    default: snprintf(b, n, "{gradient: radial, center: [%.2f, %.2f], radius: %.2f, values: [%.3f, %.3f]}", cx, cy, rndf(1, w), rndf(0, 1), rndf(0, 1)); break;
    }
}

static const char *const blends[] = {"over", "add", "max", "min", "multiply"};

/* An edge from the root to `motif` (mw x mh) with a random trait. */
static void
rand_edge(char *b, size_t n, int mw, int mh)
{
    char common[96];
    snprintf(common, sizeof common, "ref: motif, blend: %s, mask: %s, offset: [%d, %d]",
             blends[rnd(5)], rnd(3) ? "none" : "nonzero", (int)rnd(40) - 20, (int)rnd(40) - 20);
    static const char *const ov[] = {"average", "max", "add", "first"};
    static const char *const em[] = {"zero", "clamp", "wrap"};
    static const char *const pr[] = {"linear", "sphere", "cosine", "{gaussian: 3.5}", "{points: [[0, 1], [4, 0.2], [9, 0.6]]}"};
    switch (rnd(5)) {
    case 0: snprintf(b, n, "{trait: pattern, %s}", common); break;
    case 1: snprintf(b, n, "{trait: repeat, %s, period: [%d, %d], overlap: %s}", common, 1 + (int)rnd(mw + 6), 1 + (int)rnd(mh + 6), ov[rnd(4)]); break;
    case 2: {
        int ux = 1 + (int)rnd(mw + 4), uy = (int)rnd(7) - 3, vx = (int)rnd(9) - 4, vy = 1 + (int)rnd(mh + 4);
        if (ux * vy == uy * vx)
            vy++;
        snprintf(b, n, "{trait: repeat-vector, %s, u: [%d, %d], v: [%d, %d], overlap: %s%s}", common, ux, uy, vx, vy, ov[rnd(4)], rnd(2) ? ", region: [10, 5, 150, 90]" : "");
        break;
    }
    case 3: snprintf(b, n, "{trait: distance, %s, dmax: %u, threshold: %.3f, profile: %s, scale: %.2f, bias: %.2f}", common, 1 + rnd(20), rndf(0, 1), pr[rnd(5)], rndf(0.5, 1.5), rndf(-0.2, 0.2)); break;
    default:
        if (rnd(3))
            snprintf(b, n, "{trait: blur, %s, sigma: %.3f, edge: %s}", common, rnd(2) ? rndf(0.3, 6) : rndf(6.5, 14), em[rnd(3)]);
        else
            snprintf(b, n, "{trait: blur, %s, kernel: [[0.1, 0.2, 0.1], [0.05, 0.4, -0.1], [0.2, 0.0, 0.05]], edge: %s}", common, em[rnd(3)]);
        break;
    }
}

Test(gpu, random_designs_give_the_cpu_floats_and_bytes, .timeout = 600)
{
    need_gpu();
    size_t loaded = 0;
    for (uint64_t seed = 1; seed <= 150; seed++) {
        rng_state = seed * 0x9e3779b97f4a7c15ull;
        int mw = 4 + (int)rnd(40), mh = 4 + (int)rnd(40), W = 60 + (int)rnd(240), H = 40 + (int)rnd(160);
        char src[512], e1[512], e2[512], rsrc[512], rootsrc[600] = "", yaml[4096];
        rand_source(src, sizeof src, mw, mh);
        rand_source(rsrc, sizeof rsrc, W, H);
        if (rnd(2))
            snprintf(rootsrc, sizeof rootsrc, "  source: %s\n", rsrc);
        rand_edge(e1, sizeof e1, mw, mh);
        rand_edge(e2, sizeof e2, mw, mh);
        int depth = rnd(2) ? 8 : 16;
        double lo = rndf(-0.5, 0.2), hi = rndf(0.8, 1.5), mfill = rndf(0, 0.5), rfill = rndf(0, 0.3);
        snprintf(yaml, sizeof yaml,
                 "tessera: 1\noutput: {depth: %d, range: [%.2f, %.2f]}\n"
                 "nodes:\n  motif: {size: [%d, %d], fill: %.3f, source: %s}\n"
                 "root:\n  size: [%d, %d]\n  fill: %.3f\n%s  children:\n    - %s\n    - %s\n",
                 depth, lo, hi, mw, mh, mfill, src, W, H, rfill, rootsrc, e1, e2);
        tsr_error err = {0};
        tsr_design_opts o = {0};
        tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), "random.yaml", ".", &o, &err);
        if (!d)
            continue; /* a draw the loader refuses (a rule the generator does not know) */
        loaded++;
        char name[64];
        snprintf(name, sizeof name, "random design %llu:\n%s", (unsigned long long)seed, yaml);
        assert_values_equal(name, d, tsr_rect_make(0, 0, W, H));
        size_t nref, n;
        uint8_t *ref = th_stream(d, 64, 2, &nref);
        tsr_engine *e = gpu_engine(d, 1000, NULL);
        uint8_t *got = th_stream_engine(e, 0, &n);
        cr_assert(n == nref && memcmp(ref, got, n) == 0, "%s: stream differs", name);
        free(ref);
        free(got);
        tsr_engine_free(e);
        tsr_design_free(d);
    }
    cr_assert(loaded >= 100, "only %zu of 150 random designs loaded", loaded);
}


/* Every order, corner and depth of the oracle designs: the GPU's stream equals the CPU's,
 * whole, cropped to a few rows and resumed from an odd offset. */
static void
assert_design_stream(const char *path)
{
    tsr_design *d = load_file(path);
    if ((double)d->root->w * (double)d->root->h > 4e6) {
        tsr_design_free(d);
        return;
    }
    size_t nref, n;
    uint8_t *ref = th_stream(d, 512, 2, &nref);
    const int64_t chunks[] = {0, 37 * 53};
    for (size_t c = 0; c < 2; c++) {
        tsr_engine *e = gpu_engine(d, chunks[c], NULL);
        uint8_t *got = th_stream_engine(e, 0, &n);
        cr_assert(n == nref && memcmp(ref, got, n) == 0, "%s: GPU stream differs (chunk %lld)",
                  path, (long long)chunks[c]);
        free(got);
        uint64_t start = nref / 3 + 1;
        got = th_stream_engine(e, start, &n);
        cr_assert(n == nref - start && memcmp(ref + start, got, n) == 0,
                  "%s: GPU stream resumed at %llu differs", path, (unsigned long long)start);
        free(got);
        tsr_engine_free(e);
    }
    free(ref);
    int64_t h = d->root->h;
    if (h >= 3) {
        int64_t rows[2] = {h / 3, h / 3 + (h / 3 > 1 ? h / 3 : 1)};
        tsr_error err = {0};
        tsr_engine_opts o = {.backend = "cpu", .rows = {rows[0], rows[1]}};
        tsr_engine *cpu = tsr_engine_new(d, &o, &err);
        cr_assert(cpu != NULL, "%s", err.msg);
        uint8_t *a = th_stream_engine(cpu, 0, &nref);
        tsr_engine *gpu = gpu_engine(d, 0, rows);
        uint8_t *b = th_stream_engine(gpu, 0, &n);
        cr_assert(n == nref && memcmp(a, b, n) == 0, "%s: cropped GPU stream differs", path);
        free(a);
        free(b);
        tsr_engine_free(cpu);
        tsr_engine_free(gpu);
    }
    tsr_design_free(d);
}

Test(gpu, streams_equal_the_cpu_in_every_order_crop_and_resume, .timeout = 1200)
{
    need_gpu();
    cr_assert(for_each_design(assert_design_stream) > 30);
}

/* A root that repeats, whole or inside a border: its bands come from the converted period,
 * by the device's period fill (the default, and TSR_GPU_PERIOD=device) or the host's row
 * copies (TSR_GPU_PERIOD=host), the border computed on the device; each equals the CPU
 * computing every pixel (`direct`).
 * Whole streams of small designs; of big ones the first 160 rows (border) and 96 rows in the
 * middle (interior and both side borders). */
static void
assert_period_rows(const char *path, const tsr_design *d, int64_t r0, int64_t r1)
{
    const char *ways[] = {NULL, "host", "device"};
    size_t nref, n;
    tsr_engine_opts o = {.backend = "cpu", .direct = true, .rows = {r0, r1}};
    uint8_t *ref = th_stream_opts(d, &o, &nref);
    for (size_t w = 0; w < 3; w++) {
        if (ways[w])
            th_env("TSR_GPU_PERIOD", ways[w]);
        else
            th_env("TSR_GPU_PERIOD", NULL);
        int64_t rows[2] = {r0, r1};
        tsr_engine *e = gpu_engine(d, 0, rows);
        uint8_t *got = th_stream_engine(e, 0, &n);
        cr_assert(n == nref && memcmp(ref, got, n) == 0,
                  "%s rows %lld:%lld, period by %s: GPU stream differs from the CPU's "
                  "direct one", path, (long long)r0, (long long)r1, ways[w] ? ways[w] : "default");
        free(got);
        tsr_engine_free(e);
    }
    th_env("TSR_GPU_PERIOD", NULL);
    free(ref);
}

static size_t nperiodic;

static void
assert_period_stream(const char *path)
{
    tsr_design *d = load_file(path);
    tsr_engine *e = gpu_engine(d, 0, NULL);
    int64_t p[2];
    tsr_rect in;
    bool periodic = tsr_engine_period(e, d->root, p, &in);
    tsr_engine_free(e);
    if (periodic) {
        int64_t h = d->root->h;
        nperiodic++;
        if ((double)d->root->w * (double)h <= 4e6) {
            assert_period_rows(path, d, 0, h);
        } else {
            assert_period_rows(path, d, 0, h < 160 ? h : 160);
            assert_period_rows(path, d, h / 2, h / 2 + 96 < h ? h / 2 + 96 : h);
        }
    }
    tsr_design_free(d);
}

Test(gpu, a_periodic_root_streams_from_its_period_as_the_cpu_computes_it, .timeout = 600)
{
    need_gpu();
    cr_assert(for_each_design(assert_period_stream) > 30);
    /* and one made for the fill's edges: 16-bit, bottom-up swaths, widths and a period row
     * (37 px x 2 bytes) that no 16-byte store lines up with, a blur's border */
    tsr_design *d = th_design("tessera: 1\n"
                              "output: {depth: 16, order: swath,\n"
                              "  swath: {width: 333, serpentine: true, start: bottom-left}}\n"
                              "nodes:\n"
                              "  dot: {size: [37, 23], source: {shape: circle, center: [18, 11],"
                              " radius: 7, value: 1, aa: 2}}\n"
                              "root:\n"
                              "  size: [1237, 401]\n"
                              "  children:\n"
                              "    - trait: blur\n"
                              "      sigma: 2.5\n"
                              "      node:\n"
                              "        size: [1237, 401]\n"
                              "        children: [{trait: repeat, ref: dot}]\n");
    nperiodic++;
    tsr_engine *e = gpu_engine(d, 0, NULL);
    int64_t p[2];
    tsr_rect in;
    cr_assert(tsr_engine_period(e, d->root, p, &in) && p[0] == 37 && p[1] == 23,
              "the made design's root is not periodic 37 x 23 inside its border");
    tsr_engine_free(e);
    assert_period_rows("made", d, 0, d->root->h);
    assert_period_rows("made", d, 101, 399);
    tsr_design_free(d);
    /* a period row of 2 x 12347 bytes, too long for the fill's shared-memory copy: the other
     * kernel, gathering from the period in global memory */
    d = th_design("tessera: 1\n"
                  "output: {depth: 16}\n"
                  "nodes:\n"
                  "  bar: {size: [12347, 3], source: {gradient: linear, from: [0, 0],"
                  " to: [12347, 3], values: [0, 1]}}\n"
                  "root:\n"
                  "  size: [30001, 17]\n"
                  "  children: [{trait: repeat, ref: bar, offset: [-5, 1]}]\n");
    nperiodic++;
    e = gpu_engine(d, 0, NULL);
    cr_assert(tsr_engine_period(e, d->root, p, &in) && p[0] == 12347,
              "the long design's root is not periodic 12347 px wide");
    tsr_engine_free(e);
    assert_period_rows("long period", d, 0, d->root->h);
    tsr_design_free(d);
    cr_assert(nperiodic >= 4, "only %zu periodic roots tried", nperiodic);
}

Test(gpu, a_device_error_mid_stream_ends_it_with_an_error_and_a_resume_offset)
{
    need_gpu();
    tsr_design *d = th_design("tessera: 1\n"
                              "root:\n"
                              "  size: [4000, 3000]\n"
                              "  source: {gradient: radial, center: [2000, 1500], radius: 2000, "
                              "values: [0, 1]}\n");
    th_env("TSR_GPU_FAULT", "1");
    tsr_engine_opts o = {.backend = "gpu", .gpu_chunk = 4096, .gpu_memory = (int64_t)1 << 30};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    th_env("TSR_GPU_FAULT", NULL);
    cr_assert(e != NULL, "%s", err.msg);
    tsr_sink *s = tsr_sink_open("null", &err);
    cr_assert(s != NULL);
    tsr_status st = tsr_engine_stream(e, s, 0, NULL, NULL, &err);
    cr_assert_eq(st, TSR_EIO, "status %d: %s", st, err.msg);
    cr_assert(strstr(err.msg, "gpu:") != NULL, "%s", err.msg);
    /* what was delivered is whole bands before the failed one: a resume offset */
    uint64_t off = tsr_sink_offset(s);
    cr_assert(off < tsr_engine_stream_bytes(e), "offset %llu", (unsigned long long)off);
    tsr_sink_close(s, NULL);
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(gpu, a_device_budget_below_the_minimum_is_refused_naming_it)
{
    need_gpu();
    tsr_design *d = th_design("tessera: 1\nroot: {size: [5000, 5000], fill: 0.5}\n");
    tsr_engine_opts o = {.backend = "gpu", .gpu_memory = 1 << 20};
    tsr_error err = {0};
    cr_assert(tsr_engine_new(d, &o, &err) == NULL);
    cr_assert_eq(err.status, TSR_EPLAN);
    cr_assert(strstr(err.msg, "--gpu-memory") != NULL, "%s", err.msg);
    tsr_design_free(d);
}

Test(gpu, auto_takes_the_cpu_when_the_device_plan_cannot_hold_the_design)
{
    need_gpu();
    tsr_design *d = th_design("tessera: 1\nroot: {size: [5000, 5000], fill: 0.5}\n");
    tsr_engine_opts o = {.backend = "auto", .gpu_memory = 1 << 20};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_str_eq(tsr_engine_backend(e), "cpu");
    tsr_engine_free(e);
    tsr_design_free(d);
}

Test(gpu, describe_always_says_something)
{
    char buf[256];
    memset(buf, 'x', sizeof buf);
    tsr_gpu_describe(buf, sizeof buf);
    cr_assert(memchr(buf, '\0', sizeof buf) != NULL, "not NUL-terminated");
    cr_assert(strlen(buf) > 0);
}

Test(gpu, without_a_device_backend_gpu_is_refused_and_auto_is_the_cpu)
{
    if (tsr_gpu_available())
        cr_skip_test("a GPU is present");
    tsr_design *d = th_design("tessera: 1\nroot: {size: [10, 10], fill: 0.5}\n");
    tsr_engine_opts o = {.backend = "gpu"};
    tsr_error err = {0};
    cr_assert(tsr_engine_new(d, &o, &err) == NULL);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "--backend gpu: no usable GPU") != NULL, "%s", err.msg);
    o.backend = "auto";
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "%s", err.msg);
    cr_assert_str_eq(tsr_engine_backend(e), "cpu");
    tsr_engine_free(e);
    float v = 0;
    cr_assert_eq(tsr_gpu_fill_test(&v, 1, 1.0f, &err), TSR_EINVAL);
    tsr_design_free(d);
}

Test(gpu, tsr_nogpu_hides_the_device)
{
    /* the probe is cached per process: each Criterion test runs in its own */
    th_env("TSR_NOGPU", "1");
    cr_assert(!tsr_gpu_available());
    char buf[256];
    tsr_gpu_describe(buf, sizeof buf);
    cr_assert(strstr(buf, "TSR_NOGPU") != NULL || strstr(buf, "without CUDA") != NULL, "%s", buf);
}

Test(gpu, fill_kernel_result_comes_back_exactly)
{
    need_gpu();
    size_t n = (1u << 20) + 7; /* not a multiple of the block size */
    float *v = calloc(n, sizeof *v);
    tsr_error err = {0};
    cr_assert_eq(tsr_gpu_fill_test(v, n, 0.375f, &err), TSR_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_assert(v[i] == 0.375f, "element %zu", i);
    free(v);
}

/* docs/format.md §2: exact arithmetic on both sides. The kernels are built without fused
 * multiply-add and never with fast math (which would also flush denormals and approximate
 * division); the C side without contraction. */
Test(gpu, build_flags_keep_the_arithmetic_exact)
{
    size_t n;
    char *path = th_src("gpu/CMakeLists.txt");
    char *txt = (char *)th_read_file(path, &n);
    free(path);
    cr_assert(txt != NULL);
    char *s = realloc(txt, n + 1);
    cr_assert(s != NULL);
    s[n] = '\0';
    cr_assert(strstr(s, "--fmad=false") != NULL, "gpu/CMakeLists.txt lost --fmad=false");
    cr_assert(strstr(s, "use_fast_math") == NULL, "gpu/CMakeLists.txt asks for fast math");
    cr_assert(strstr(s, "ftz=true") == NULL && strstr(s, "prec-div=false") == NULL &&
                  strstr(s, "prec-sqrt=false") == NULL,
              "gpu/CMakeLists.txt relaxes IEEE arithmetic");
    free(s);
    path = th_src("CMakeLists.txt");
    s = (char *)th_read_file(path, &n);
    free(path);
    cr_assert(s != NULL);
    cr_assert(memmem(s, n, "-ffp-contract=off", 17) != NULL, "CMakeLists.txt lost -ffp-contract=off");
    free(s);
}

/* The trait and source tables' GPU columns: in a build with CUDA every row names a kernel, so
 * a trait or source added without one fails here (it would run on the host, slower, and
 * `check --tree` would say so). Needs no device. */
Test(gpu, every_table_row_has_a_kernel_in_a_cuda_build)
{
    if (!tsr_gpu_built())
        cr_skip_test("built without CUDA");
    for (size_t i = 0; i < TSR_TRAIT_COUNT; i++)
        cr_assert(tsr_gpu_traits[i].launch && tsr_gpu_traits[i].can,
                  "trait %s has no GPU kernel (nodes/traits.def)", tsr_traits[i]->name);
    for (size_t i = 0; i < TSR_SRC_COUNT; i++)
        cr_assert(tsr_gpu_sources[i].launch && tsr_gpu_sources[i].can,
                  "source %s has no GPU kernel (nodes/sources.def)",
                  tsr_source_descs[i].disc_value ? tsr_source_descs[i].disc_value
                                                 : tsr_source_descs[i].disc_key);
}

/* A distance read sparsely: seeds (pattern edges) in a child of fill 0, so a chunk reads only
 * the box where the seeds are, which its rows and columns may lie beside, above or across
 * (nodes/distance.c); dmax 300 runs on the device, dmax 5000 on the host (the same bits). */
static const char seeds_yaml[] =
    "tessera: 1\n"
    "output: {depth: 16}\n"
    "nodes:\n"
    "  seeds:\n"
    "    size: [3000, 2200]\n"
    "    children:\n"
    "      - {trait: pattern, offset: [1400, 1000], node: {size: [1, 1], fill: 1.0}}\n"
    "      - {trait: pattern, offset: [1420, 1090], node: {size: [2, 3], fill: 1.0}}\n"
    "      - {trait: pattern, offset: [200, 2150], blend: max, node: {size: [5, 5], fill: 0.0,"
    " source: {shape: circle, center: [2.5, 2.5], radius: 2, value: 1}}}\n"
    "root:\n"
    "  size: [3000, 2200]\n"
    "  children:\n"
    "    - {trait: distance, ref: seeds, dmax: %d, profile: sphere}\n"
    "    - {trait: distance, ref: seeds, dmax: 40, profile: cosine, blend: add}\n";

Test(gpu, a_distance_over_a_box_of_seeds_gives_the_cpu_floats, .timeout = 300)
{
    need_gpu();
    static const int dmaxes[] = {300, 5000};
    for (int i = 0; i < 2; i++) {
        char yaml[sizeof seeds_yaml + 16];
        snprintf(yaml, sizeof yaml, seeds_yaml, dmaxes[i]);
        tsr_design *d = th_design(yaml);
        assert_values_equal("seeds", d, tsr_rect_make(0, 0, d->root->w, d->root->h));
        tsr_design_free(d);
    }
}

/* Patterns of full-size shape nodes (a layout converted the obvious way): the device computes
 * each over its shape's box and blends its fill elsewhere only where that changes a pixel
 * (gpu/backend.c, as cpu/compute.c does); every blend, mask and fill against the CPU. */
Test(gpu, full_size_shape_nodes_give_the_cpu_floats, .timeout = 300)
{
    need_gpu();
    static const char *const blends[] = {"over", "add", "max", "min", "multiply"};
    static const char *const fills[] = {"0", "-0.0", "0.25", "1", "-1"};
    for (int seed = 0; seed < 10; seed++) {
        char yaml[16384];
        size_t len = (size_t)snprintf(yaml, sizeof yaml,
                                      "tessera: 1\nroot:\n  size: [2000, 1500]\n  fill: %s\n"
                                      "  children:\n", fills[seed % 5]);
        for (int i = 0; i < 40; i++) {
            int k = seed * 40 + i;
            char src[160];
            if (k % 2)
                snprintf(src, sizeof src, "{shape: circle, center: [%d, %d], radius: %d, value: %s, "
                         "aa: 3}", (k * 97) % 2000, (k * 61) % 1500, 3 + k % 40, fills[(k * 11) % 5]);
            else
                snprintf(src, sizeof src, "{shape: rect, rect: [%d, %d, %d, %d], value: %s}",
                         (k * 89) % 2000, (k * 53) % 1500, 5 + k % 60, 4 + k % 30,
                         fills[(k * 11) % 5]);
            len += (size_t)snprintf(
                yaml + len, sizeof yaml - len,
                "    - {trait: pattern, blend: %s, mask: %s, offset: [%d, %d], node: {size: "
                "[2000, 1500], fill: %s, source: %s}}\n",
                (seed < 5 && i > 0) ? "max" : blends[(k * 7) % 5], k % 4 == 0 ? "nonzero" : "none",
                (k % 3) * 50 - 50, (k % 5) * 30 - 60, (seed < 5) ? "0" : fills[(k * 3) % 5], src);
            cr_assert_lt(len, sizeof yaml - 256);
        }
        tsr_design *d = th_design(yaml);
        assert_values_equal("full-size shapes", d, tsr_rect_make(0, 0, 2000, 1500));
        tsr_design_free(d);
    }
}
