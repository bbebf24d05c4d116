/* Fuzz target: the design loader, the canonical dump and, for small designs, the engine.
 *
 * One input is one design file. It is loaded with tsr_design_load_string (the loader's
 * fuzzing entry point), dumped to /dev/null and freed. A design that loads and is small
 * (every node <= 256 x 256 px, few nodes, bounded work: see small_enough) is also rendered
 * with the CPU engine on one thread: a rect of at most 16 x 16 px at the design's tile size
 * and again at tile 7 (the two must be bit-identical, docs/format.md §1), and, when the root has
 * at most 64 x 64 px, streamed whole to the null sink.
 *
 * Properties checked beyond "no crash, no sanitizer report, no leak":
 * - a failed load returns NULL with err.status != TSR_OK and a non-empty message, and a
 *   design error (TSR_EINVAL) names the file first ("fuzz.yaml:LINE:COL: ...");
 * - rendering a loaded design fails only with TSR_ENOMEM or TSR_EPLAN, never EINVAL for a
 *   rect inside the root, never EINTERNAL;
 * - tile invariance of the rendered rect.
 *
 * Built twice (tests/fuzz/CMakeLists.txt): with libFuzzer (clang, `make fuzz`) and with
 * driver.c, a plain main() that replays files (ctest fuzz_regress: tests/fuzz/regress/). */
#include "designs/designs.h"
#include "engine/engine.h"
#include "image/image.h"
#include "stream/stream.h"

#define FUZZ_TARGET "fuzz_design"
#include "tests/fuzz/fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef TSR_FUZZ_BASE
#define TSR_FUZZ_BASE "."
#endif

#define FUZZ_NAME "fuzz.yaml"
#define FUZZ_MAX_SIDE 256    /* render only designs whose nodes are all this small */
#define FUZZ_MAX_NODES 64
#define FUZZ_MAX_WORK 2e7    /* sum over nodes of area * (1 + sum of child areas) */
#define FUZZ_MAX_IMAGE_PX (1 << 20)

/* A finding: say what property broke, then abort so libFuzzer (or the replay) stops here. */
/* Images: only regular files (a design may name /dev/stdin or a FIFO, which would block
 * the fuzzer, not the loader), and only small ones (the size is read before decoding). */
static tsr_status
read_image(const char *path, int64_t *w, int64_t *h, float **px, tsr_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return tsr_fail(err, TSR_EIO, "%s: not a regular file (fuzzing)", path);
    int64_t iw, ih;
    tsr_status st = tsr_png_read_size(path, &iw, &ih, err);
    if (st != TSR_OK)
        return st;
    if (iw * ih > FUZZ_MAX_IMAGE_PX)
        return tsr_fail(err, TSR_EINVAL, "%s: larger than the fuzzer decodes", path);
    return tsr_png_read_gray(path, w, h, px, err);
}

/* The header reader the engine's loader uses (regular files only, as above). */
static tsr_status
read_size(const char *path, int64_t *w, int64_t *h, int64_t *scratch, tsr_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return tsr_fail(err, TSR_EIO, "%s: not a regular file (fuzzing)", path);
    return tsr_png_read_info(path, w, h, scratch, err);
}

static bool
small_enough(const tsr_design *d)
{
    if (d->nnodes > FUZZ_MAX_NODES)
        return false;
    double work = 0;
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        if (n->w > FUZZ_MAX_SIDE || n->h > FUZZ_MAX_SIDE)
            return false;
        double per = 1;
        for (size_t k = 0; k < n->nedges; k++)
            per += (double)n->edges[k].child->w * (double)n->edges[k].child->h;
        work += (double)n->w * (double)n->h * per;
    }
    return work <= FUZZ_MAX_WORK;
}

static uint64_t
hash(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

static bool
render_ok(tsr_status st)
{
    return st == TSR_OK || st == TSR_ENOMEM || st == TSR_EPLAN;
}

/* The rect at tile `tile` (0: the design's); NULL when the engine refused (plan, memory). */
static float *
render(const tsr_design *d, tsr_rect r, int64_t tile, FILE *devnull)
{
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 1, .tile = tile};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    if (!e) {
        /* a design loaded with .defer is decoded here: an image damaged past its header is a
         * design error naming the image (file:line:col) */
        bool image = (err.status == TSR_EINVAL || err.status == TSR_EIO) &&
                     strncmp(err.msg, FUZZ_NAME ":", strlen(FUZZ_NAME) + 1) == 0;
        PROPERTY(render_ok(err.status) || image, "tsr_engine_new: %s", err.msg);
        return NULL;
    }
    if (tile == 0)
        tsr_engine_print_check(e, devnull, true);
    float *px = malloc((size_t)r.w * (size_t)r.h * sizeof *px);
    tsr_status st = px ? tsr_engine_render_rect(e, r, px, &err) : TSR_ENOMEM;
    PROPERTY(render_ok(st), "render_rect %lld,%lld,%lld,%lld: %s", (long long)r.x,
             (long long)r.y, (long long)r.w, (long long)r.h, err.msg);
    tsr_engine_free(e);
    if (st != TSR_OK) {
        free(px);
        return NULL;
    }
    return px;
}

static void
stream_null(const tsr_design *d)
{
    tsr_error err = {TSR_OK, ""};
    tsr_engine_opts o = {.backend = "cpu", .threads = 1};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    if (!e) {
        PROPERTY(render_ok(err.status), "tsr_engine_new: %s", err.msg);
        return;
    }
    tsr_sink *s = tsr_sink_open("null", &err);
    PROPERTY(s != NULL, "null sink: %s", err.msg);
    tsr_status st = tsr_engine_stream(e, s, 0, NULL, NULL, &err);
    PROPERTY(render_ok(st), "stream: %s", err.msg);
    tsr_error cerr;
    PROPERTY(tsr_sink_close(s, &cerr) == TSR_OK, "close: %s", cerr.msg);
    tsr_engine_free(e);
}

static void
exercise_engine(const tsr_design *d, uint64_t h, FILE *devnull)
{
    int64_t w = d->root->w, ht = d->root->h;
    int64_t rw = 1 + (int64_t)(h % 16), rh = 1 + (int64_t)((h >> 4) % 16);
    rw = rw < w ? rw : w;
    rh = rh < ht ? rh : ht;
    tsr_rect r = tsr_rect_make((int64_t)((h >> 8) % (uint64_t)(w - rw + 1)),
                               (int64_t)((h >> 24) % (uint64_t)(ht - rh + 1)), rw, rh);
    float *a = render(d, r, 0, devnull);
    float *b = a ? render(d, r, 7, devnull) : NULL;
    if (a && b)
        PROPERTY(memcmp(a, b, (size_t)rw * (size_t)rh * sizeof *a) == 0,
                 "rect %lld,%lld,%lld,%lld differs between the design's tile and tile 7",
                 (long long)r.x, (long long)r.y, (long long)rw, (long long)rh);
    free(a);
    free(b);
    if (w * ht <= 64 * 64)
        stream_null(d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        abort();
    /* Three loaders: decoding while parsing, headers first and decoding after, and headers
     * only with decoding and tables left to tsr_engine_new (tsr_engine_load's), by the
     * input's length so that each input always takes the same path. */
    static const tsr_design_opts eager = {.read_image = read_image};
    static const tsr_design_opts later = {.read_image = read_image, .read_size = read_size};
    static const tsr_design_opts lazy = {.read_image = read_image, .read_size = read_size,
                                         .defer = true};
    const tsr_design_opts *opts = size % 3 == 0 ? &eager : size % 3 == 1 ? &later : &lazy;
    tsr_error err = {TSR_OK, ""};
    tsr_design *d =
        tsr_design_load_string((const char *)data, size, FUZZ_NAME, TSR_FUZZ_BASE, opts, &err);
    if (!d) {
        PROPERTY(err.status != TSR_OK && err.msg[0], "load failed without a status or message");
        PROPERTY(err.status != TSR_EINVAL || strncmp(err.msg, FUZZ_NAME ":", 10) == 0,
                 "design error without its position: %s", err.msg);
        return 0;
    }
    PROPERTY(d->root && d->nnodes > 0 && d->nodes[d->nnodes - 1] == d->root,
             "a loaded design without its root last");
    tsr_design_dump(d, devnull);
    if (small_enough(d))
        exercise_engine(d, hash(data, size), devnull);
    tsr_design_free(d);
    return 0;
}
