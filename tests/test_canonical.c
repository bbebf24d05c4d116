/* The canonical design form (designs/canonical.c) and the fingerprint made of it: what leaves
 * the fingerprint alone (names, tiles, comments, key order, ref against inline, YAML spelling,
 * image paths), what changes it (every sample-affecting value, one at a time, from a table),
 * and that the dump's layout is no part of it: this suite links tsr_design_dump wrapped
 * (tests/CMakeLists.txt), printing another layout and counting its calls. */
#include <criterion/criterion.h>
#include "designs/designs.h"
#include "engine/engine.h"
#include "helpers/helpers.h"
#include "image/image.h"
#include "stream/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tsr_design_dump, wrapped ---------------------------------------------------------------- */

void __real_tsr_design_dump(const tsr_design *d, FILE *f);
void __wrap_tsr_design_dump(const tsr_design *d, FILE *f);

static int dump_calls;

/* Another layout: the real dump's lines, indented by two more and with a comment between each,
 * as a reformatted `tessera check` might print them. */
void
__wrap_tsr_design_dump(const tsr_design *d, FILE *f)
{
    dump_calls++;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert_not_null(m);
    __real_tsr_design_dump(d, m);
    fclose(m);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        fprintf(f, "  %s\n# --\n", line);
    free(text);
}

/* ---- helpers --------------------------------------------------------------------------------- */

typedef struct buf {
    char *p;
    size_t n;
} buf;

static void
buf_put(void *ctx, const void *bytes, size_t n)
{
    buf *b = ctx;
    b->p = realloc(b->p, b->n + n + 1);
    cr_assert_not_null(b->p);
    memcpy(b->p + b->n, bytes, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static char *
canonical_of(const tsr_design *d)
{
    buf b = {0};
    tsr_design_canonical(d, buf_put, &b);
    return b.p;
}

static void
fingerprint_rows(const char *yaml, int64_t y0, int64_t y1, uint8_t fp[32])
{
    tsr_design *d = th_design(yaml);
    tsr_engine_opts eo = {.backend = "cpu", .rows = {y0, y1}};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &eo, &err);
    cr_assert_not_null(e, "%s", err.msg);
    tsr_header h;
    cr_assert_eq(tsr_engine_header(e, &h, &err), TSR_OK, "%s", err.msg);
    memcpy(fp, h.fingerprint, 32);
    tsr_engine_free(e);
    tsr_design_free(d);
}

static void
fingerprint(const char *yaml, uint8_t fp[32])
{
    fingerprint_rows(yaml, 0, 0, fp);
}

/* `s` with `from` replaced by `to`: every occurrence when `all`, else exactly one, which must be
 * the only one (so a row of the tables below cannot silently change something else). */
static char *
replace(const char *s, const char *from, const char *to, bool all)
{
    const char *at = strstr(s, from);
    cr_assert_not_null(at, "'%s' not in the design", from);
    cr_assert(all || !strstr(at + 1, from), "'%s' is not unique in the design", from);
    size_t nf = strlen(from), nt = strlen(to);
    char *out = malloc(strlen(s) * (nt + 1) + 1), *o = out;
    cr_assert_not_null(out);
    for (const char *p = s; *p;) {
        if (strncmp(p, from, nf) == 0 && (all || p == at)) {
            memcpy(o, to, nt);
            o += nt;
            p += nf;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

#define SPOT_LINE                                                                              \
    "  spot: {size: [9, 9], fill: 0.125, source: {shape: circle, center: [4.5, 4.25], radius: 3, " \
    "value: 0.75, aa: 4}}\n"
#define ELL_LINE "  ell: {size: [8, 8], source: {shape: ellipse, center: [3.5, 4.5], radii: [3, 1.5]}}\n"

/* Every source kind and every trait with every parameter given; the image is a.png of the
 * suite's folder (images()). */
static const char *base_fmt =
    "tessera: 1\n"
    "name: base\n"
    "tile: 64\n"
    "output: {depth: 8, range: [0, 1], calibration: [[0, 0], [0.5, 0.625], [1, 1]], order: raster}\n"
    "nodes:\n"
    SPOT_LINE
    ELL_LINE
    "  ring: {size: [8, 7], source: {shape: ring, center: [4, 3.75], radii: [0.5, 3.25], aa: 2}}\n"
    "  rect: {size: [10, 8], source: {shape: rect, rect: [1, 1.5, 5.5, 2]}}\n"
    "  poly: {size: [11, 8], source: {shape: polygon, points: [[0, 0], [7, 1], [3, 7.5]], "
    "value: -1}}\n"
    "  lin: {size: [12, 8], source: {gradient: linear, from: [0, 0.5], to: [8, 1.5], "
    "values: [0, 0.875]}}\n"
    "  rad: {size: [13, 8], source: {gradient: radial, center: [4, 2], radius: 4.5, "
    "values: [1, 0.1]}}\n"
    "  img: {source: {image: \"%s\"}}\n"
    "root:\n"
    "  size: [300, 200]\n"
    "  fill: 0.0625\n"
    "  children:\n"
    "    - {trait: pattern, ref: spot, blend: add, offset: [-3, 7], mask: nonzero}\n"
    "    - {trait: repeat, ref: ell, period: [12, 10], overlap: max, region: [10, 20, 100, 90]}\n"
    "    - {trait: repeat-vector, ref: ring, u: [10, 1], v: [-4, 9], overlap: add, "
    "region: [0, 0, 50, 60]}\n"
    "    - {trait: distance, ref: rect, threshold: 0.2, dmax: 16, "
    "profile: {points: [[0, 1], [2.5, 0.5], [8, 0]]}, scale: -2, bias: 1.5}\n"
    "    - {trait: distance, ref: poly, dmax: 5, profile: {gaussian: 1.25}}\n"
    "    - {trait: blur, ref: lin, sigma: 0.75, edge: clamp}\n"
    "    - {trait: blur, ref: rad, kernel: [[0.0625, 0.125, 0.0625], [0.125, 0.25, 0.125], "
    "[0.0625, 0.125, 0.0625]], edge: wrap}\n"
    "    - {trait: pattern, ref: img, offset: [100, 100], blend: max}\n";

/* a.png and b.png: the same 6 x 5 bytes; c.png: one sample differs. */
static void
images(void)
{
    uint8_t px[30];
    for (int i = 0; i < 30; i++)
        px[i] = (uint8_t)(i * 8);
    tsr_error err = {0};
    cr_assert_eq(tsr_png_write(th_in_dir("a.png"), 6, 5, 8, px, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_png_write(th_in_dir("b.png"), 6, 5, 8, px, &err), TSR_OK, "%s", err.msg);
    px[17] ^= 1;
    cr_assert_eq(tsr_png_write(th_in_dir("c.png"), 6, 5, 8, px, &err), TSR_OK, "%s", err.msg);
}

static char *
base(void)
{
    images();
    char *s = malloc(8192);
    cr_assert_not_null(s);
    snprintf(s, 8192, base_fmt, th_in_dir("a.png"));
    return s;
}

/* ---- what leaves the fingerprint alone ------------------------------------------------------- */

typedef struct edit {
    const char *what, *from, *to;
    bool all;
} edit;

/* Apply each edit of the table to `b` alone; each must keep (same) or change the fingerprint. */
static void
check_edits(const char *b, const edit *t, size_t n, bool same)
{
    uint8_t want[32], got[32];
    fingerprint(b, want);
    for (size_t i = 0; i < n; i++) {
        char *v = replace(b, t[i].from, t[i].to, t[i].all);
        fingerprint(v, got);
        cr_assert(same == (memcmp(want, got, 32) == 0), "%s %s the fingerprint", t[i].what,
                  same ? "changed" : "left alone");
        free(v);
    }
}

static const edit same[] = {
    {"the design's name", "name: base", "name: other", false},
    {"the design's tile", "tile: 64", "tile: 128", false},
    {"a node's name", "spot", "dot", true},
    {"a node's tile", "  ell: {size", "  ell: {tile: 32, size", false},
    {"comments", "tile: 64\n", "tile: 64  # the tile\n# a line of comment\n", false},
    {"key order in a node", "{size: [9, 9], fill: 0.125,", "{fill: 0.125, size: [9, 9],", false},
    {"key order in a source", "center: [4.5, 4.25], radius: 3,", "radius: 3, center: [4.5, 4.25],",
     false},
    {"key order in an edge", "{trait: pattern, ref: spot, blend: add, offset: [-3, 7], mask: nonzero}",
     "{mask: nonzero, offset: [-3, 7], blend: add, ref: spot, trait: pattern}", false},
    {"the nodes: section's order", SPOT_LINE ELL_LINE, ELL_LINE SPOT_LINE, false},
    {"inline instead of ref", "ref: poly,",
     "node: {size: [11, 8], source: {shape: polygon, points: [[0, 0], [7, 1], [3, 7.5]], "
     "value: -1}},", false},
    {"block instead of flow YAML",
     "output: {depth: 8, range: [0, 1], calibration: [[0, 0], [0.5, 0.625], [1, 1]], order: raster}\n",
     "output:\n  order: raster\n  depth: 8\n  calibration:\n    - [0, 0]\n    - [0.5, 0.625]\n"
     "    - - 1\n      - 1.0\n  range: [0.0, 1e0]\n", false},
    {"the spelling of reals", "radius: 4.5,", "radius: 0x1.2p+2,", false},
    {"quoted names", "ref: lin,", "ref: \"lin\",", false},
    {"defaults written out", "ref: ell,", "ref: ell, blend: over, offset: [0, 0], mask: none,", false},
    {"an image's path (same bytes)", "a.png", "b.png", false},
};

Test(canonical, invariances, .init = th_dir_make, .fini = th_dir_remove)
{
    char *b = base();
    check_edits(b, same, sizeof same / sizeof same[0], true);
    uint8_t want[32];
    fingerprint(b, want);
    /* --tile and --threads are no part of it either */
    tsr_design *d = th_design(b);
    tsr_engine_opts eo = {.backend = "cpu", .tile = 32, .threads = 3};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &eo, &err);
    cr_assert_not_null(e, "%s", err.msg);
    tsr_header h;
    cr_assert_eq(tsr_engine_header(e, &h, &err), TSR_OK, "%s", err.msg);
    cr_assert(memcmp(want, h.fingerprint, 32) == 0, "--tile, --threads");
    tsr_engine_free(e);
    tsr_design_free(d);
    free(b);
}

/* ---- what changes it --------------------------------------------------------------------------- */

static const edit differ[] = {
    {"output.depth", "depth: 8", "depth: 16", false},
    {"output.range", "range: [0, 1]", "range: [0, 2]", false},
    {"output.calibration point", "[0.5, 0.625]", "[0.5, 0.5]", false},
    {"output.calibration absent", ", calibration: [[0, 0], [0.5, 0.625], [1, 1]]", "", false},
    {"root size", "size: [300, 200]", "size: [300, 201]", false},
    {"root fill", "fill: 0.0625", "fill: 0.125", false},
    {"a node's size", "size: [9, 9]", "size: [9, 10]", false},
    {"a node's fill", "fill: 0.125,", "fill: 0.25,", false},
    {"source kind", "shape: ellipse, center: [3.5, 4.5], radii: [3, 1.5]",
     "shape: ring, center: [3.5, 4.5], radii: [1.5, 3]", false},
    {"circle.center", "center: [4.5, 4.25]", "center: [4.5, 4.5]", false},
    {"circle.radius", "radius: 3,", "radius: 3.5,", false},
    {"circle.value", "value: 0.75", "value: 0.5", false},
    {"circle.aa", "aa: 4", "aa: 3", false},
    {"ellipse.center", "center: [3.5, 4.5]", "center: [3.5, 4]", false},
    {"ellipse.radii", "radii: [3, 1.5]", "radii: [3, 2]", false},
    {"ellipse.aa", "radii: [3, 1.5]", "radii: [3, 1.5], aa: 2", false},
    {"ring.center", "center: [4, 3.75]", "center: [4, 3.5]", false},
    {"ring.radii", "radii: [0.5, 3.25]", "radii: [0.5, 3]", false},
    {"ring.value", "radii: [0.5, 3.25]", "radii: [0.5, 3.25], value: 2", false},
    {"ring.aa", "aa: 2", "aa: 1", false},
    {"rect.rect", "rect: [1, 1.5, 5.5, 2]", "rect: [1, 1.5, 5.5, 2.5]", false},
    {"polygon.points", "[7, 1]", "[7, 2]", false},
    {"polygon.value", "value: -1", "value: -0.5", false},
    {"linear.from", "from: [0, 0.5]", "from: [0, 0.25]", false},
    {"linear.to", "to: [8, 1.5]", "to: [8, 1]", false},
    {"linear.values", "values: [0, 0.875]", "values: [0, 0.75]", false},
    {"radial.center", "center: [4, 2]", "center: [4, 3]", false},
    {"radial.radius", "radius: 4.5", "radius: 5", false},
    {"radial.values", "values: [1, 0.1]", "values: [1, 0.2]", false},
    {"image bytes", "a.png", "c.png", false},
    {"edge trait", "trait: pattern, ref: spot", "trait: repeat, ref: spot", false},
    {"edge blend", "blend: add", "blend: over", false},
    {"edge offset", "offset: [-3, 7]", "offset: [-3, 8]", false},
    {"edge mask", "mask: nonzero", "mask: none", false},
    {"edge child", "ref: lin,", "ref: rad,", false},
    {"edge order", "    - {trait: pattern, ref: img, offset: [100, 100], blend: max}\n", "", false},
    {"repeat.period", "period: [12, 10]", "period: [12, 11]", false},
    {"repeat.overlap", "overlap: max", "overlap: first", false},
    {"repeat.region", "region: [10, 20, 100, 90]", "region: [10, 20, 100, 91]", false},
    {"repeat-vector.u", "u: [10, 1]", "u: [10, 2]", false},
    {"repeat-vector.v", "v: [-4, 9]", "v: [-4, 8]", false},
    {"repeat-vector.overlap", "overlap: add", "overlap: average", false},
    {"repeat-vector.region", "region: [0, 0, 50, 60]", "region: [0, 0, 50, 61]", false},
    {"distance.threshold", "threshold: 0.2", "threshold: 0.3", false},
    {"distance.dmax", "dmax: 16", "dmax: 17", false},
    {"distance.profile points", "[2.5, 0.5]", "[2.5, 0.25]", false},
    {"distance.profile kind", "profile: {gaussian: 1.25}", "profile: sphere", false},
    {"distance.profile gaussian", "gaussian: 1.25", "gaussian: 1.5", false},
    {"distance.scale", "scale: -2", "scale: -1", false},
    {"distance.bias", "bias: 1.5", "bias: 1", false},
    {"blur.sigma", "sigma: 0.75", "sigma: 1", false},
    {"blur.edge", "edge: clamp", "edge: zero", false},
    {"blur.kernel", "[0.125, 0.25, 0.125]", "[0.125, 0.5, 0.125]", false},
    {"blur.edge (kernel)", "edge: wrap", "edge: clamp", false},
};

Test(canonical, every_value_changes_it, .init = th_dir_make, .fini = th_dir_remove)
{
    char *b = base();
    check_edits(b, differ, sizeof differ / sizeof differ[0], false);
    uint8_t want[32], got[32];
    fingerprint(b, want);
    /* the crop */
    fingerprint_rows(b, 0, 200, got);
    cr_assert(memcmp(want, got, 32) == 0, "--rows 0:H is the whole root");
    fingerprint_rows(b, 0, 199, got);
    cr_assert(memcmp(want, got, 32) != 0, "the crop");
    free(b);
}

static const edit swath_differ[] = {
    {"output.order", "order: swath, swath: {width: 64, serpentine: true, start: top-right}",
     "order: raster", false},
    {"swath.width", "width: 64", "width: 32", false},
    {"swath.serpentine", "serpentine: true", "serpentine: false", false},
    {"swath.start", "start: top-right", "start: bottom-left", false},
};

Test(canonical, swath_values_change_it, .init = th_dir_make, .fini = th_dir_remove)
{
    char *b0 = base();
    char *b = replace(b0, "order: raster",
                      "order: swath, swath: {width: 64, serpentine: true, start: top-right}", false);
    check_edits(b, swath_differ, sizeof swath_differ / sizeof swath_differ[0], false);
    free(b);
    free(b0);
}

/* ---- the form itself, and the dump's independence ----------------------------------------------- */

static void
hash_put(void *ctx, const void *bytes, size_t n)
{
    tsr_sha256_update(ctx, bytes, n);
}

Test(canonical, fingerprint_is_the_form_the_crop_and_image_bytes, .init = th_dir_make,
     .fini = th_dir_remove)
{
    char *b = base();
    tsr_design *d = th_design(b);
    char *form = canonical_of(d);
    cr_assert(strncmp(form, "tessera-canonical 1\n", 20) == 0, "%.40s", form);
    /* no names, no paths, no tiles */
    cr_assert_null(strstr(form, "spot"), "%s", form);
    cr_assert_null(strstr(form, "a.png"), "%s", form);
    cr_assert_null(strstr(form, "tile"), "%s", form);
    cr_assert_not_null(strstr(form, "source image input 0"), "%s", form);

    /* docs/streaming.md §7's recipe, recomputed here: the engine hashes nothing else */
    dump_calls = 0;
    tsr_engine_opts eo = {.backend = "cpu", .rows = {10, 150}};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &eo, &err);
    cr_assert_not_null(e, "%s", err.msg);
    tsr_header h;
    cr_assert_eq(tsr_engine_header(e, &h, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(dump_calls, 0, "the fingerprint printed the dump");
    tsr_sha256 *sh = tsr_sha256_new();
    cr_assert_not_null(sh);
    tsr_design_canonical(d, hash_put, sh);
    const char *tail = "stream:\n  rows: [10, 150]\n";
    tsr_sha256_update(sh, tail, strlen(tail));
    uint8_t img[32], want[32];
    cr_assert_eq(tsr_sha256_file(th_in_dir("a.png"), img, &err), TSR_OK, "%s", err.msg);
    tsr_sha256_update(sh, img, 32);
    tsr_sha256_final(sh, want); /* frees sh */
    cr_assert(memcmp(want, h.fingerprint, 32) == 0);

    /* the dump still works, in the wrapped layout: the form did not follow it */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert_not_null(m);
    tsr_design_dump(d, m);
    fclose(m);
    cr_assert_eq(dump_calls, 1);
    cr_assert(strncmp(text, "  tessera: 1\n# --\n", 18) == 0, "%.40s", text);
    char *again = canonical_of(d);
    cr_assert_str_eq(form, again);
    free(text);
    free(again);
    free(form);
    tsr_engine_free(e);
    tsr_design_free(d);
    free(b);
}

/* Reals are their bits: values one ulp apart differ, and the form holds no printf rendering of
 * a real (a float32 0.1 and the double 0.1 are told apart by their width). */
Test(canonical, reals_are_bits)
{
    tsr_design *a = th_design("tessera: 1\nroot: {size: [4, 4], source: {shape: circle, "
                              "center: [2, 2], radius: 1}}\n");
    tsr_design *b = th_design("tessera: 1\nroot: {size: [4, 4], source: {shape: circle, "
                              "center: [2, 2], radius: 1.0000000000000002}}\n");
    char *fa = canonical_of(a), *fb = canonical_of(b);
    cr_assert_str_neq(fa, fb);
    /* radius 1 = 0x3ff0000000000000; fill 0 and value 1 as float32 */
    cr_assert_not_null(strstr(fa, "radius d3ff0000000000000"), "%s", fa);
    cr_assert_not_null(strstr(fa, "value f3f800000"), "%s", fa);
    cr_assert_not_null(strstr(fa, "fill f00000000"), "%s", fa);
    free(fa);
    free(fb);
    tsr_design_free(a);
    tsr_design_free(b);
}
