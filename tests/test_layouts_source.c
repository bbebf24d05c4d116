/* layouts_source: the `layout` source of designs (nodes/layout_src.c, docs/layouts.md §8):
 * the mapping conventions, tiling invariance, the same layout read from GDSII and OASIS giving
 * the same bytes, `check`'s description, and every error the loader reports for it. The
 * shapely oracle comparison is tests/cli/layout_oracle.sh. */
#include "designs/designs.h"
#include "engine/engine.h"
#include "helpers/helpers.h"
#include "gpu/gpu.h"
#include "layouts/layouts.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(layouts_source, .init = th_dir_make, .fini = th_dir_remove);

Test(layouts_source, node_size_defaults_to_the_cell_box_in_pixels_rounded_up)
{
    /* elements.gds: ELEMENTS, 1 nm database units; its box from the layout model itself */
    tsr_error err = {0};
    char *path = th_src("tests/layouts/elements.gds");
    tsr_layout *l = tsr_layout_open(path, NULL, &err);
    cr_assert_not_null(l, "%s", err.msg);
    uint32_t cell;
    cr_assert_eq(tsr_layout_cell(l, NULL, &cell, &err), TSR_OK, "%s", err.msg);
    const double *b = l->cells[cell].box;
    double pitch = 0.3; /* um: the box is not a whole number of pixels */
    int64_t w = (int64_t)ceil((b[2] - b[0]) * l->dbu_m / (pitch * 1e-6));
    int64_t h = (int64_t)ceil((b[3] - b[1]) * l->dbu_m / (pitch * 1e-6));
    tsr_design *d = th_design(th_fmt("tessera: 1\nroot:\n  source: {layout: tests/layouts/"
                                   "elements.gds, layers: [[1, 0, 1]], pitch: 0.3}\n"));
    cr_assert_eq(d->root->w, w);
    cr_assert_eq(d->root->h, h);
    tsr_design_free(d);
    /* pitch_nm is the same pitch */
    d = th_design(th_fmt("tessera: 1\nroot:\n  source: {layout: tests/layouts/elements.gds, "
                       "layers: [[1, 0, 1]], pitch_nm: 300}\n"));
    cr_assert_eq(d->root->w, w);
    cr_assert_eq(d->root->h, h);
    tsr_design_free(d);
    tsr_layout_free(l);
    free(path);
}

/* A window's top-left corner is pixel (0, 0) and layout y goes up: a 10 x 5 um box at the
 * origin (elements.gds, layer 1, under a second box from (8, 2)), windowed [-1, -2, 3, 6] um
 * at 1 um, covers columns 1..3 and, y flipped, rows 1..5 (y 5..0 um) exactly. */
Test(layouts_source, window_top_left_is_pixel_zero_and_y_goes_up)
{
    tsr_design *d = th_design(th_fmt(
        "tessera: 1\nroot:\n  fill: 0.25\n  source: {layout: tests/layouts/elements.gds, "
        "layers: [[1, 0, 0.75]], pitch: 1, window: [-1, -2, 3, 6]}\n"));
    cr_assert_eq(d->root->w, 4);
    cr_assert_eq(d->root->h, 8);
    float *px = th_rect(d, tsr_rect_make(0, 0, 4, 8), 0, 1);
    for (int64_t y = 0; y < 8; y++)
        for (int64_t x = 0; x < 4; x++) {
            bool in = x >= 1 && y >= 1 && y <= 5; /* x 0..3 um, y 5..0 um */
            cr_assert_eq(px[y * 4 + x], in ? 0.75f : 0.25f, "pixel %lld,%lld: %g",
                         (long long)x, (long long)y, px[y * 4 + x]);
        }
    free(px);
    tsr_design_free(d);
}

/* Off-grid edges: the box [0, 10] x [0, 5] um at a 0.3 um pitch from window corner (-0.1, 5.1)
 * covers each pixel by the product of its overlaps with [0.1, 10.1] / 0.3 and [0, 5] / 0.3 in
 * pixels; layer 1's second box starts at x = 8 um, so columns below 26 see only the first. */
Test(layouts_source, off_grid_box_covers_by_its_exact_area)
{
    tsr_design *d = th_design(th_fmt(
        "tessera: 1\nroot:\n  source: {layout: tests/layouts/elements.gds, "
        "layers: [[1, 0, 1]], pitch: 0.3, window: [-0.1, -1, 7, 5.1]}\n"));
    int64_t w = d->root->w, h = d->root->h;
    float *px = th_rect(d, tsr_rect_make(0, 0, w, h), 0, 1);
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            double bx0 = 0.1 / 0.3, bx1 = 10.1 / 0.3, by0 = 0.1 / 0.3, by1 = 5.1 / 0.3;
            double ox = fmax(0, fmin(x + 1.0, bx1) - fmax((double)x, bx0));
            double oy = fmax(0, fmin(y + 1.0, by1) - fmax((double)y, by0));
            cr_assert(fabs(px[y * w + x] - ox * oy) < 1e-6, "pixel %lld,%lld: %.9g, expected %.9g",
                      (long long)x, (long long)y, px[y * w + x], ox * oy);
        }
    free(px);
    tsr_design_free(d);
}

/* Layers are drawn in table order over the fill, P = P (1 - c) + v c. */
Test(layouts_source, layers_blend_in_table_order)
{
    const char *t = "tessera: 1\nroot:\n  fill: 0.5\n  source: {layout: tests/layouts/"
                    "elements.gds, layers: %s, pitch: 0.7}\n";
    tsr_design *a = th_design(th_fmt(t, "[[1, 0, 1], [2, 0, 0.2]]"));
    tsr_design *b = th_design(th_fmt(t, "[[1, 0, 1]]"));
    tsr_design *c = th_design(th_fmt(t, "[[2, 0, 0.2]]"));
    cr_assert_eq(a->root->w, b->root->w);
    tsr_rect r = tsr_rect_make(0, 0, a->root->w, a->root->h);
    float *pa = th_rect(a, r, 0, 1), *pb = th_rect(b, r, 0, 1), *pc = th_rect(c, r, 0, 1);
    size_t n = (size_t)(r.w * r.h), seen = 0;
    for (size_t i = 0; i < n; i++) {
        double c1 = (pb[i] - 0.5) / 0.5; /* layer 1's coverage, from b */
        double c2 = (pc[i] - 0.5) / (0.2 - 0.5);
        double p = 0.5 * (1 - c1) + 1.0 * c1;
        p = p * (1 - c2) + 0.2 * c2;
        cr_assert(fabs(pa[i] - p) < 1e-6, "pixel %zu: %g, expected %g", i, pa[i], p);
        seen += c1 > 0 && c2 > 0;
    }
    (void)seen;
    free(pa), free(pb), free(pc);
    tsr_design_free(a), tsr_design_free(b), tsr_design_free(c);
}

Test(layouts_source, tiles_and_threads_change_no_byte)
{
    tsr_design *d = th_design(th_fmt(
        "tessera: 1\nroot:\n  fill: 0.1\n  source: {layout: tests/layouts/oasis_src.gds, "
        "layers: [[1, 0, 1], [2, 0, 0.5], [3, 0, 0.8]], pitch: 0.37}\n"));
    size_t n0 = 0;
    uint8_t *ref = th_stream(d, 512, 1, &n0);
    /* 3 px tiles, not 1: a tile's query and rasterizer set-up per pixel took most of the
     * sanitizer suite's minute here, and 3 and 7 cut every shape at tile edges as well */
    static const int64_t tiles[] = {3, 7, 64};
    for (size_t t = 0; t < 3; t++)
        for (int threads = th_threads_from(tiles[t]); threads <= 2; threads++) {
            if (tiles[t] == 3 && threads > th_threads_from(3))
                continue; /* the smallest tiles: slow, once is enough */
            size_t n = 0;
            uint8_t *got = th_stream(d, tiles[t], threads, &n);
            cr_assert_eq(n, n0);
            cr_assert(memcmp(got, ref, n) == 0, "tile %lld, %d threads differ",
                      (long long)tiles[t], threads);
            free(got);
        }
    free(ref);
    tsr_design_free(d);
}

/* KLayout's OASIS files of oasis_src.gds (tests/layouts/oasis_klayout.py) hold the same
 * geometry: the same design over either gives the same bytes (at most `tol` apart). The window
 * is given: KLayout writes a 64-point circle as a polygon whose box may differ from gdspy's by
 * a grid unit. */
static void
same_bytes(const char *cell, int tol)
{
    const char *t = "tessera: 1\nroot:\n  source: {layout: tests/layouts/%s, cell: %s, "
                    "layers: [[1, 0, 1], [2, 0, 0.6], [3, 0, 0.3], [4, 0, 0.9], [5, 0, 0.1], "
                    "[6, 0, 0.8], [7, 0, 0.5], [8, 0, 0.4], [9, 0, 0.7], [11, 0, 1], [12, 0, 0.2], "
                    "[13, 0, 0.35]], pitch: 0.45, window: [-10, -220, 560, 570]}\n";
    tsr_design *g = th_design(th_fmt(t, "oasis_src.gds", cell));
    size_t ng = 0;
    uint8_t *bg = th_stream(g, 0, 2, &ng);
    static const char *const oas[] = {"oasis_plain_loose.oas", "oasis_plain_strict.oas",
                                      "oasis_cblock_loose.oas", "oasis_cblock_strict.oas"};
    for (size_t i = 0; i < 4; i++) {
        tsr_design *o = th_design(th_fmt(t, oas[i], cell));
        cr_assert_eq(o->root->w, g->root->w, "%s", oas[i]);
        cr_assert_eq(o->root->h, g->root->h, "%s", oas[i]);
        size_t no = 0;
        uint8_t *bo = th_stream(o, 0, 2, &no);
        cr_assert_eq(no, ng);
        size_t k = 0;
        while (k < no && abs((int)bo[k] - (int)bg[k]) <= tol)
            k++;
        cr_assert_eq(k, no, "%s, %s: byte %zu (x %zu, y %zu): %d, GDSII %d", cell, oas[i], k,
                     k % (size_t)g->root->w, k / (size_t)g->root->w, k < no ? bo[k] : 0,
                     k < no ? bg[k] : 0);
        free(bo);
        tsr_design_free(o);
    }
    free(bg);
    tsr_design_free(g);
}

/* LEAF holds every element kind (paths of every end type, sharp turns), ROW every repetition
 * type, MID placements turned, mirrored and magnified: the same bytes. TOP adds arrays, one
 * turned by atan(3/4): there 3 pixels of 1.6 million differ by one step (not explained yet:
 * docs/layouts.md §8). */
Test(layouts_source, gdsii_and_oasis_of_one_layout_give_the_same_bytes)
{
    same_bytes("LEAF", 0);
    same_bytes("ROW", 0);
    same_bytes("MID", 0);
    same_bytes("TOP", 1);
}

/* A placement that mirrors turns its shapes' outlines over; shapes overlapping there still
 * unite (every outline is wound alike before the union). */
Test(layouts_source, mirrored_overlapping_shapes_still_unite)
{
    const char *t = "tessera: 1\nroot:\n  source: {layout: tests/layouts/oasis_src.gds, cell: "
                    "%s, layers: [[4, 0, 1]], pitch: 0.37, window: [%s]}\n";
    /* MID places LEAF at (200, 0) mirrored: its layer-4 path (pieces that overlap at the
     * bends) is LEAF's own, flipped about y = 0 */
    tsr_design *a = th_design(th_fmt(t, "LEAF", "-1, 30, 25, 45"));
    tsr_design *b = th_design(th_fmt(t, "MID", "199, -45, 225, -30"));
    int64_t w = a->root->w, h = a->root->h;
    cr_assert_eq(b->root->w, w);
    float *pa = th_rect(a, tsr_rect_make(0, 0, w, h), 0, 1);
    float *pb = th_rect(b, tsr_rect_make(0, 0, w, h), 0, 1);
    double sa = 0, sb = 0;
    for (int64_t i = 0; i < w * h; i++)
        sa += pa[i], sb += pb[i];
    cr_assert(sa > 100 && fabs(sa - sb) < 1e-3, "covered %.6f px unmirrored, %.6f mirrored", sa,
              sb);
    free(pa), free(pb);
    tsr_design_free(a), tsr_design_free(b);
}

Test(layouts_source, dxf_layers_are_named)
{
    tsr_design *d = th_design(th_fmt("tessera: 1\nroot:\n  source: {layout: tests/layouts/"
                                   "shapes.dxf, layers: [[METAL, 1]], pitch: 100}\n"));
    cr_assert_gt(d->root->w, 0);
    tsr_design_free(d);
    tsr_error err = th_load_error(th_fmt("tessera: 1\nroot:\n  source: {layout: tests/layouts/"
                                    "shapes.dxf, layers: [[NOPE, 1]], pitch: 100}\n"));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "root.source.layout") && strstr(err.msg, "no layer named \"NOPE\""),
              "%s", err.msg);
}

Test(layouts_source, check_tree_describes_the_layout)
{
    tsr_design *d = th_design(th_fmt("tessera: 1\nroot:\n  source: {layout: tests/layouts/"
                                   "elements.gds, layers: [[1, 0, 1], [9, 9, 1]], pitch: 1}\n"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tsr_design_dump(d, f);
    fclose(f);
    cr_assert(strstr(buf, "GDSII") && strstr(buf, "cell \"ELEMENTS\""), "%s", buf);
    cr_assert(strstr(buf, "layer 2/3:") && strstr(buf, "not in the table"), "%s", buf);
    cr_assert(strstr(buf, "layers[1]: no shape of it"), "%s", buf);
    cr_assert(strstr(buf, "2 text elements: not geometry"), "%s", buf);
    cr_assert(strstr(buf, "cell box [") && strstr(buf, "] um = pixels ["), "%s", buf);
    free(buf);
    tsr_design_free(d);
}

/* ---- errors ----------------------------------------------------------------------------- */

Test(layouts_source, a_corrupt_file_names_the_byte_and_the_key)
{
    size_t n = 0;
    char *src = th_src("tests/layouts/elements.gds");
    uint8_t *b = th_read_file(src, &n);
    cr_assert_not_null(b);
    FILE *f = fopen(th_in_dir("cut.gds"), "wb");
    fwrite(b, 1, n / 2, f);
    fclose(f);
    tsr_error err = th_load_error(th_fmt("tessera: 1\nroot:\n  source: {layout: %s, layers: "
                                    "[[1, 0, 1]], pitch: 1}\n", th_in_dir("cut.gds")));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "t.yaml:3:20: root.source.layout: ") && strstr(err.msg, "cut.gds") &&
                  strstr(err.msg, "byte "),
              "%s", err.msg);
    free(b);
    free(src);
}

Test(layouts_source, not_a_layout_and_missing_files_are_bad_input)
{
    tsr_error err = th_load_error("tessera: 1\nroot:\n  source: {layout: tests/layouts/make_dxf.py, "
                               "layers: [[1, 0, 1]], pitch: 1}\n");
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "root.source.layout") && strstr(err.msg, "make_dxf.py"), "%s",
              err.msg);
    err = th_load_error("tessera: 1\nroot:\n  source: {layout: tests/layouts/none.gds, "
                     "layers: [[1, 0, 1]], pitch: 1}\n");
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "none.gds") && strstr(err.msg, "No such file"), "%s", err.msg);
}

Test(layouts_source, several_top_cells_are_named)
{
    /* hierarchy.gds has more than one top cell */
    tsr_error err = {0};
    char *path = th_src("tests/layouts/hierarchy.gds");
    tsr_layout *l = tsr_layout_open(path, NULL, &err);
    cr_assert_not_null(l, "%s", err.msg);
    size_t tops = tsr_layout_tops(l, NULL, 0);
    tsr_layout_free(l);
    free(path);
    if (tops > 1) {
        err = th_load_error("tessera: 1\nroot:\n  source: {layout: tests/layouts/hierarchy.gds, "
                         "layers: [[1, 0, 1]], pitch: 1}\n");
        cr_assert(strstr(err.msg, "root.source.layout") && strstr(err.msg, "top"), "%s", err.msg);
    }
    err = th_load_error("tessera: 1\nroot:\n  source: {layout: tests/layouts/hierarchy.gds, "
                     "cell: NO_SUCH_CELL, layers: [[1, 0, 1]], pitch: 1}\n");
    cr_assert(strstr(err.msg, "NO_SUCH_CELL"), "%s", err.msg);
}

Test(layouts_source, parameters_are_checked)
{
    const char *base = "tessera: 1\nroot:\n  source: {layout: tests/layouts/elements.gds, %s}\n";
    struct {
        const char *keys, *want;
    } cases[] = {
        {"layers: [[1, 0, 1]]", "no pixel pitch: give 'pitch'"},
        {"layers: [[1, 0, 1]], pitch: 1, pitch_nm: 1000", "give at most one of 'pitch'"},
        {"layers: [[1, 0, 1]], pitch: 0", "root.source.pitch: must be > 0"},
        {"layers: [], pitch: 1", "needs at least one"},
        {"layers: [[1, 0]], pitch: 1", "GDSII layers are numbers"},
        {"layers: [[1, 0, 1, 2]], pitch: 1", "expected [layer, datatype, value]"},
        {"layers: [[-1, 0, 1]], pitch: 1", "root.source.layers[0][0]"},
        {"layers: [[1, 0, x]], pitch: 1", "root.source.layers[0][2]"},
        {"pitch: 1", "missing required key 'layers'"},
        {"layers: [[1, 0, 1]], pitch: 1, window: [1, 0, 0, 1]", "root.source.window: must be"},
        {"layers: [[1, 0, 1]], pitch: 1, window: [0, 0, 1e300, 1]", "root.source.window"},
        {"layers: [[1, 0, 1]], pitch: 1e-9", "w*h*4 bytes must be <= 2^62"},
        {"layers: [[1, 0, 1]], pitch: 1e-13", "px at this pitch"},
        {"layers: [[1, 0, 1]], pitch: 1, cel: X", "did you mean 'cell'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tsr_error err = th_load_error(th_fmt(base, cases[i].keys));
        cr_assert_eq(err.status, TSR_EINVAL, "%s", cases[i].keys);
        cr_assert(strstr(err.msg, cases[i].want), "%s: got '%s', expected '%s'", cases[i].keys,
                  err.msg, cases[i].want);
    }
}

/* ---- the GPU backend ------------------------------------------------------------------- */

/* The device accumulates what the host's unions give (gpu/sources.cu): the CPU's bytes, for
 * every format and for chunk sizes that cut blocks oddly. Skips without a device. */
Test(layouts_source, gpu_gives_the_cpu_bytes)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    static const char *const designs[] = {
        "tessera: 1\nroot:\n  fill: 0.2\n  source: {layout: tests/layouts/oasis_src.gds, cell: "
        "TOP, layers: [[1, 0, 1], [2, 0, 0.6], [3, 0, 0.3], [4, 0, 0.9], [6, 0, 0.5], "
        "[13, 0, 0.7]], pitch: 0.37}\n",
        "tessera: 1\nroot:\n  source: {layout: tests/layouts/oasis_cblock_strict.oas, cell: TOP, "
        "layers: [[7, 0, 1], [8, 0, 0.4], [9, 0, 0.7], [1, 0, 0.3]], pitch: 0.61}\n",
        "tessera: 1\noutput: {depth: 16}\nroot:\n  source: {layout: tests/layouts/shapes.dxf, "
        "layers: [[METAL, 1], [via, 0.5], [Fill, 0.25]], pitch: 40}\n",
        "tessera: 1\nroot:\n  size: [500, 200]\n  source: {layout: tests/layouts/oasis_circles.oas,"
        " cell: CIRCLES, layers: [[20, 0, 1], [21, 3, 0.5]], pitch: 0.05, window: [-3, -4, 21, 5]}\n",
    };
    static const int64_t chunks[] = {0, 37 * 53};
    for (size_t i = 0; i < sizeof designs / sizeof *designs; i++) {
        tsr_design *d = th_design(designs[i]);
        size_t nc = 0;
        uint8_t *cpu = th_stream(d, 0, 2, &nc);
        for (size_t c = 0; c < 2; c++) {
            tsr_engine_opts o = {.backend = "gpu", .gpu_chunk = chunks[c],
                                 .gpu_memory = (int64_t)2 << 30};
            size_t ng = 0;
            uint8_t *gpu = th_stream_opts(d, &o, &ng);
            cr_assert_eq(ng, nc);
            size_t k = 0;
            while (k < ng && gpu[k] == cpu[k])
                k++;
            cr_assert_eq(k, ng, "design %zu, chunk %lld: byte %zu differs", i,
                         (long long)chunks[c], k);
            free(gpu);
        }
        free(cpu);
        tsr_design_free(d);
    }
}
