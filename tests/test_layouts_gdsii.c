/* The GDSII reader and layout queries (layouts/gdsii.c, layouts/query.c).
 *
 * tests/layouts/{elements,paths,hierarchy}.gds were written by gdspy
 * (tests/layouts/make_gdsii.py), which also wrote what its own flatten makes of each file
 * (NAME.txt): the queries here must give the same polygons (paths: the same covered area,
 * sampled). Records gdspy does not write (BOX, NODE, properties, ELFLAGS, PLEX, negative
 * widths) and every malformed file are built here, record by record. */
#include "helpers/helpers.h"
#include "layouts/layouts.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a GDSII writer for hand-made files ----------------------------------------------------- */

typedef struct gb {
    uint8_t *b;
    size_t n, cap;
} gb;

static void
put(gb *g, const void *p, size_t n)
{
    if (g->n + n > g->cap) {
        g->cap = (g->n + n) * 2;
        g->b = realloc(g->b, g->cap);
        cr_assert(g->b);
    }
    memcpy(g->b + g->n, p, n);
    g->n += n;
}

static void
rec(gb *g, int type, int dt, const void *data, size_t n)
{
    uint8_t h[4] = {(uint8_t)((n + 4) >> 8), (uint8_t)(n + 4), (uint8_t)type, (uint8_t)dt};
    put(g, h, 4);
    if (n)
        put(g, data, n);
}

static void
rec16(gb *g, int type, int dt, const int *v, size_t n)
{
    uint8_t d[64];
    for (size_t i = 0; i < n; i++)
        d[2 * i] = (uint8_t)((unsigned)v[i] >> 8), d[2 * i + 1] = (uint8_t)v[i];
    rec(g, type, dt, d, 2 * n);
}

static void
rec32(gb *g, int type, const int64_t *v, size_t n)
{
    uint8_t *d = malloc(4 * n + 1);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            d[4 * i + k] = (uint8_t)((uint64_t)v[i] >> (24 - 8 * k));
    rec(g, type, 3, d, 4 * n);
    free(d);
}

/* an 8-byte GDSII real, written independently of the reader: sign, excess-64 exponent of 16,
 * 56-bit fraction in [1/16, 1) */
static void
real8_bytes(double v, uint8_t out[8])
{
    memset(out, 0, 8);
    if (v == 0)
        return;
    int s = v < 0;
    v = fabs(v);
    int e = 64;
    while (v >= 1)
        v /= 16, e++;
    while (v < 1.0 / 16)
        v *= 16, e--;
    uint64_t f = (uint64_t)llround(ldexp(v, 56));
    out[0] = (uint8_t)(s << 7 | e);
    for (int k = 1; k < 8; k++)
        out[k] = (uint8_t)(f >> (8 * (7 - k)));
}

static void
recr8(gb *g, int type, const double *v, size_t n)
{
    uint8_t d[32];
    for (size_t i = 0; i < n; i++)
        real8_bytes(v[i], d + 8 * i);
    rec(g, type, 5, d, 8 * n);
}

static void
recs(gb *g, int type, const char *s)
{
    size_t n = strlen(s);
    char d[300] = {0};
    memcpy(d, s, n);
    rec(g, type, 6, d, n + (n & 1));
}

static const int stamp[12] = {2026, 1, 1, 0, 0, 0, 2026, 1, 1, 0, 0, 0};

static void
lib_begin(gb *g)
{
    int v = 600;
    rec16(g, 0x00, 2, &v, 1);
    rec16(g, 0x01, 2, stamp, 12);
    recs(g, 0x02, "LIB");
    double u[2] = {1e-3, 1e-9};
    recr8(g, 0x03, u, 2);
}

static void
str_begin(gb *g, const char *name)
{
    rec16(g, 0x05, 2, stamp, 12);
    recs(g, 0x06, name);
}

static void
str_end(gb *g)
{
    rec(g, 0x07, 0, NULL, 0);
}

static void
lib_end(gb *g)
{
    rec(g, 0x04, 0, NULL, 0);
}

static void
endel(gb *g)
{
    rec(g, 0x11, 0, NULL, 0);
}

static void
layer_dt(gb *g, int layer, int dt_rec, int dt)
{
    rec16(g, 0x0d, 2, &layer, 1);
    rec16(g, dt_rec, 2, &dt, 1);
}

static void
boundary(gb *g, int layer, const int64_t *xy, size_t npts)
{
    rec(g, 0x08, 0, NULL, 0);
    layer_dt(g, layer, 0x0e, 0);
    rec32(g, 0x10, xy, 2 * npts);
    endel(g);
}

static void
square(gb *g, int layer, int64_t x, int64_t y, int64_t s)
{
    int64_t xy[10] = {x, y, x + s, y, x + s, y + s, x, y + s, x, y};
    boundary(g, layer, xy, 5);
}

/* SREF (cols == 0) or AREF of `name` at xy (1 or 3 points) */
static void
place(gb *g, const char *name, int strans, double mag, double angle, int cols, int rows,
      const int64_t *xy)
{
    rec(g, cols ? 0x0b : 0x0a, 0, NULL, 0);
    recs(g, 0x12, name);
    if (strans >= 0) {
        rec16(g, 0x1a, 1, &strans, 1);
        recr8(g, 0x1b, &mag, 1);
        recr8(g, 0x1c, &angle, 1);
    }
    if (cols) {
        int cr[2] = {cols, rows};
        rec16(g, 0x13, 2, cr, 2);
    }
    rec32(g, 0x10, xy, cols ? 6 : 2);
    endel(g);
}

static tsr_layout *
read_ok(const gb *g)
{
    tsr_error err = {TSR_OK, ""};
    tsr_layout *l = tsr_layout_read(g->b, g->n, "hand.gds", NULL, &err);
    cr_assert(l != NULL, "%s", err.msg);
    return l;
}

static void
read_fails(const gb *g, const char *text)
{
    tsr_error err = {TSR_OK, ""};
    tsr_layout *l = tsr_layout_read(g->b, g->n, "hand.gds", NULL, &err);
    cr_assert(l == NULL, "read a file that should fail with '%s'", text);
    cr_assert_eq(err.status, TSR_EINVAL, "status %s: %s", tsr_status_name(err.status), err.msg);
    cr_assert(strstr(err.msg, "hand.gds: ") == err.msg, "the file is not named: %s", err.msg);
    cr_assert(strstr(err.msg, text) != NULL, "'%s' not in '%s'", text, err.msg);
}

/* ---- collecting query results --------------------------------------------------------------- */

typedef struct poly {
    uint32_t layer, datatype;
    size_t n;
    double (*p)[2];
    double cx, cy, r;
} poly;

typedef struct polys {
    poly *v;
    size_t n, cap;
    size_t stop_after; /* 0: never */
} polys;

static int
collect(void *ctx, const tsr_lay_item *it)
{
    polys *ps = ctx;
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 64;
        ps->v = realloc(ps->v, ps->cap * sizeof *ps->v);
    }
    poly *p = &ps->v[ps->n++];
    *p = (poly){it->layer, it->datatype, it->n, NULL, it->cx, it->cy, it->r};
    if (it->n) {
        p->p = malloc(it->n * sizeof *p->p);
        memcpy(p->p, it->pts, it->n * sizeof *p->p);
    }
    return ps->stop_after && ps->n >= ps->stop_after;
}

static void
polys_free(polys *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->v[i].p);
    free(ps->v);
    *ps = (polys){0};
}

static const double everywhere[4] = {-1e18, -1e18, 1e18, 1e18};

static polys
query_all(const tsr_layout *l, uint32_t cell, const double win[4])
{
    polys ps = {0};
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_layout_query(l, cell, win, NULL, NULL, collect, &ps, &err), TSR_OK, "%s",
                 err.msg);
    return ps;
}

static tsr_layout *
open_test(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/layouts/%s", TSR_SRC_DIR, name);
    tsr_error err = {TSR_OK, ""};
    tsr_layout *l = tsr_layout_open(path, NULL, &err);
    cr_assert(l != NULL, "%s", err.msg);
    return l;
}

/* gdspy's flattened polygons of NAME.txt, and its cell and label counts */
static polys
read_dump(const char *name, size_t *cells, size_t *texts)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/layouts/%s", TSR_SRC_DIR, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    cr_assert_eq(fscanf(f, "cells %zu texts %zu", cells, texts), 2);
    polys ps = {0};
    unsigned layer, dt;
    size_t n;
    while (fscanf(f, "%u %u %zu", &layer, &dt, &n) == 3) {
        tsr_lay_item it = {.layer = layer, .datatype = dt, .n = n};
        double(*p)[2] = malloc(n * sizeof *p);
        for (size_t k = 0; k < n; k++)
            cr_assert_eq(fscanf(f, "%lf %lf", &p[k][0], &p[k][1]), 2);
        it.pts = (const double(*)[2])p;
        collect(&ps, &it);
        free(p);
    }
    fclose(f);
    return ps;
}

/* the same vertices in the same cyclic order, either direction, within tol */
static bool
same_polygon(const poly *a, const poly *b, double tol)
{
    if (a->layer != b->layer || a->datatype != b->datatype || a->n != b->n)
        return false;
    size_t n = a->n;
    for (size_t s = 0; s < n; s++)
        for (int dir = -1; dir <= 1; dir += 2) {
            size_t k = 0;
            for (; k < n; k++) {
                size_t j = (s + n + (size_t)dir * k) % n;
                if (fabs(a->p[k][0] - b->p[j][0]) > tol || fabs(a->p[k][1] - b->p[j][1]) > tol)
                    break;
            }
            if (k == n)
                return true;
        }
    return false;
}

/* every polygon of `want` matched by a distinct one of `got`, and nothing else in `got` */
static void
assert_same_polygons(const polys *got, const polys *want, double tol)
{
    cr_assert_eq(got->n, want->n, "%zu polygons, gdspy's flatten has %zu", got->n, want->n);
    bool *used = calloc(got->n, 1);
    for (size_t i = 0; i < want->n; i++) {
        size_t j = 0;
        for (; j < got->n; j++)
            if (!used[j] && same_polygon(&got->v[j], &want->v[i], tol))
                break;
        cr_assert(j < got->n, "gdspy's polygon %zu (layer %u/%u, %zu points, first %.3f %.3f) "
                  "is not among the query's", i, want->v[i].layer, want->v[i].datatype,
                  want->v[i].n, want->v[i].p[0][0], want->v[i].p[0][1]);
        used[j] = true;
    }
    free(used);
}

static double
signed_area(const poly *p)
{
    double a = 0;
    for (size_t k = 0; k < p->n; k++) {
        size_t j = (k + 1) % p->n;
        a += p->p[k][0] * p->p[j][1] - p->p[j][0] * p->p[k][1];
    }
    return a / 2;
}

/* ---- files written by gdspy ----------------------------------------------------------------- */

Test(layouts_gdsii, flat_elements_match_gdspy)
{
    tsr_layout *l = open_test("elements.gds");
    cr_assert_eq(l->format, TSR_LAYOUT_GDSII);
    cr_assert_eq(l->dbu_m, 1e-9);
    uint32_t top;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_layout_cell(l, NULL, &top, &err), TSR_OK, "%s", err.msg);
    cr_assert_str_eq(l->cells[top].name, "ELEMENTS");
    size_t cells, texts;
    polys want = read_dump("elements.txt", &cells, &texts);
    polys got = query_all(l, top, everywhere);
    assert_same_polygons(&got, &want, 1e-6);
    /* rectangles are kept as boxes: two points each */
    size_t boxes = 0;
    for (size_t i = 0; i < l->cells[top].nshapes; i++)
        boxes += l->cells[top].shapes[i].kind == TSR_LAY_BOX;
    cr_assert_eq(boxes, 2);
    tsr_layout_stats st;
    cr_assert_eq(tsr_layout_get_stats(l, top, &st, &err), TSR_OK);
    cr_assert_eq(st.cells, cells);
    cr_assert_eq(st.texts, texts);
    cr_assert_eq(st.shapes, want.n);
    cr_assert_eq(st.flat_shapes, want.n);
    cr_assert_eq(st.nlayers, 4);
    cr_assert(st.layers[0].layer == 1 && st.layers[0].shapes == 2);
    cr_assert(st.layers[1].layer == 2 && st.layers[1].datatype == 0);
    cr_assert(st.layers[2].layer == 2 && st.layers[2].datatype == 3);
    tsr_layout_stats_free(&st);
    /* the cell's box */
    cr_assert(l->cells[top].has_box);
    cr_assert_eq(l->cells[top].box[0], 0);
    cr_assert_eq(l->cells[top].box[2], 63000);
    cr_assert_eq(l->cells[top].box[3], 10000);
    polys_free(&want);
    polys_free(&got);
    tsr_layout_free(l);
}

Test(layouts_gdsii, hierarchy_matches_gdspy_flatten)
{
    tsr_layout *l = open_test("hierarchy.gds");
    size_t cells, texts;
    polys want = read_dump("hierarchy.txt", &cells, &texts);
    uint32_t top;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_layout_cell(l, NULL, &top, &err), TSR_OK, "%s", err.msg);
    /* TOP is written first: its placements all refer forward, and it stays first */
    cr_assert_eq(top, 0);
    cr_assert_str_eq(l->cells[0].name, "TOP");
    cr_assert_eq(l->ncells, cells);
    polys got = query_all(l, top, everywhere);
    assert_same_polygons(&got, &want, 1e-6);
    /* boxes come counterclockwise, through mirrors too */
    for (size_t i = 0; i < got.n; i++)
        if (got.v[i].layer == 2)
            cr_assert(signed_area(&got.v[i]) > 0, "box %zu is clockwise", i);
    tsr_layout_stats st;
    cr_assert_eq(tsr_layout_get_stats(l, top, &st, &err), TSR_OK);
    cr_assert_eq(st.cells, 3);
    cr_assert_eq(st.shapes, 3);
    cr_assert_eq(st.flat_shapes, want.n);
    cr_assert_eq(st.texts, texts);
    uint64_t sum = 0;
    for (size_t k = 0; k < st.nlayers; k++) {
        size_t n = 0;
        for (size_t i = 0; i < want.n; i++)
            n += want.v[i].layer == st.layers[k].layer &&
                 want.v[i].datatype == st.layers[k].datatype;
        cr_assert_eq(st.layers[k].shapes, n, "layer %u/%u", st.layers[k].layer,
                     st.layers[k].datatype);
        sum += n;
    }
    cr_assert_eq(sum, want.n);
    tsr_layout_stats_free(&st);
    /* the top's box holds every flattened vertex, and each side is reached by one */
    const double *b = l->cells[top].box;
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (size_t i = 0; i < want.n; i++)
        for (size_t k = 0; k < want.v[i].n; k++)
            for (int a = 0; a < 2; a++) {
                lo[a] = fmin(lo[a], want.v[i].p[k][a]);
                hi[a] = fmax(hi[a], want.v[i].p[k][a]);
            }
    for (int a = 0; a < 2; a++) {
        cr_assert(b[a] <= lo[a] + 1e-6, "box side %d: %.9g, gdspy %.9g", a, b[a], lo[a]);
        cr_assert(b[2 + a] >= hi[a] - 1e-6, "box side %d: %.9g, gdspy %.9g", 2 + a, b[2 + a],
                  hi[a]);
    }
    /* a window: exactly the flattened polygons whose boxes meet it */
    double win[4] = {15000, -3000, 120000, 30000};
    polys part = query_all(l, top, win);
    size_t expect = 0;
    for (size_t i = 0; i < want.n; i++) {
        double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t k = 0; k < want.v[i].n; k++) {
            x0 = fmin(x0, want.v[i].p[k][0]), x1 = fmax(x1, want.v[i].p[k][0]);
            y0 = fmin(y0, want.v[i].p[k][1]), y1 = fmax(y1, want.v[i].p[k][1]);
        }
        expect += x0 <= win[2] && x1 >= win[0] && y0 <= win[3] && y1 >= win[1];
    }
    cr_assert(expect > 0 && expect < want.n);
    cr_assert_eq(part.n, expect);
    polys_free(&part);
    polys_free(&want);
    polys_free(&got);
    tsr_layout_free(l);
}

/* point in polygon (crossings; for gdspy's simple outlines and our convex pieces alike) */
static bool
inside(const poly *p, double x, double y)
{
    bool in = false;
    for (size_t k = 0, j = p->n - 1; k < p->n; j = k++) {
        double xk = p->p[k][0], yk = p->p[k][1], xj = p->p[j][0], yj = p->p[j][1];
        if ((yk > y) != (yj > y) && x < (xj - xk) * (y - yk) / (yj - yk) + xk)
            in = !in;
    }
    return in;
}

static double
seg_dist(double x, double y, const double a[2], const double b[2])
{
    double dx = b[0] - a[0], dy = b[1] - a[1], l2 = dx * dx + dy * dy;
    double t = l2 > 0 ? ((x - a[0]) * dx + (y - a[1]) * dy) / l2 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return hypot(x - a[0] - t * dx, y - a[1] - t * dy);
}

static bool
near_edge(const polys *ps, uint32_t layer, double x, double y, double m)
{
    for (size_t i = 0; i < ps->n; i++) {
        const poly *p = &ps->v[i];
        if (p->layer != layer)
            continue;
        for (size_t k = 0, j = p->n - 1; k < p->n; j = k++)
            if (seg_dist(x, y, p->p[j], p->p[k]) < m)
                return true;
    }
    return false;
}

static bool
covered(const polys *ps, uint32_t layer, double x, double y)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->v[i].layer == layer && inside(&ps->v[i], x, y))
            return true;
    return false;
}

Test(layouts_gdsii, paths_cover_what_gdspy_covers)
{
    tsr_layout *l = open_test("paths.gds");
    size_t cells, texts;
    polys want = read_dump("paths.txt", &cells, &texts);
    polys got = query_all(l, 0, everywhere);
    /* every path type, straight and bent */
    uint32_t layers[] = {10, 11, 12, 13, 20, 21, 22, 23};
    for (size_t k = 0; k < sizeof layers / sizeof *layers; k++) {
        uint32_t L = layers[k];
        size_t pieces = 0;
        double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t i = 0; i < want.n; i++)
            if (want.v[i].layer == L)
                for (size_t j = 0; j < want.v[i].n; j++) {
                    x0 = fmin(x0, want.v[i].p[j][0]), x1 = fmax(x1, want.v[i].p[j][0]);
                    y0 = fmin(y0, want.v[i].p[j][1]), y1 = fmax(y1, want.v[i].p[j][1]);
                }
        for (size_t i = 0; i < got.n; i++)
            pieces += got.v[i].layer == L;
        cr_assert(pieces > 0 && x0 < x1, "layer %u: no path", L);
        /* our pieces vs gdspy's outline at points on a 151-unit grid around the path, but for
         * those within 3 units of an edge (rounding to the grid; gdspy's arcs) */
        size_t tested = 0;
        for (double y = y0 - 500; y <= y1 + 500; y += 151)
            for (double x = x0 - 500; x <= x1 + 500; x += 151) {
                if (near_edge(&want, L, x, y, 3) || near_edge(&got, L, x, y, 3))
                    continue;
                bool a = covered(&got, L, x, y), b = covered(&want, L, x, y);
                cr_assert_eq(a, b, "layer %u at (%g, %g): ours %d, gdspy %d", L, x, y, a, b);
                tested++;
            }
        cr_assert(tested > 1000);
        /* the pieces are convex and counterclockwise */
        for (size_t i = 0; i < got.n; i++)
            if (got.v[i].layer == L)
                cr_assert(signed_area(&got.v[i]) > 0, "layer %u: piece %zu", L, i);
    }
    polys_free(&want);
    polys_free(&got);
    tsr_layout_free(l);
}

/* ---- hand-made files: what gdspy does not write ------------------------------------------- */

Test(layouts_gdsii, box_node_text_properties_and_negative_width)
{
    gb g = {0};
    int v = 600;
    rec16(&g, 0x00, 2, &v, 1);
    rec16(&g, 0x01, 2, stamp, 12);
    recs(&g, 0x02, "LIB");
    recs(&g, 0x1f, "REFLIB");  /* REFLIBS */
    recs(&g, 0x20, "FONT0");   /* FONTS */
    v = 3;
    rec16(&g, 0x22, 2, &v, 1); /* GENERATIONS */
    double u[2] = {1e-3, 1e-9};
    recr8(&g, 0x03, u, 2);
    str_begin(&g, "C");
    v = 0;
    rec16(&g, 0x34, 1, &v, 1); /* STRCLASS */
    /* BOX, with ELFLAGS, PLEX and two properties */
    rec(&g, 0x2d, 0, NULL, 0);
    rec16(&g, 0x26, 1, &v, 1);
    int64_t plex = 7;
    rec32(&g, 0x2f, &plex, 1);
    layer_dt(&g, 4, 0x2e, 2);
    int64_t box[10] = {10, 20, 10, 50, 40, 50, 40, 20, 10, 20};
    rec32(&g, 0x10, box, 10);
    int pa = 1;
    rec16(&g, 0x2b, 2, &pa, 1);
    recs(&g, 0x2c, "net1");
    pa = 2;
    rec16(&g, 0x2b, 2, &pa, 1);
    recs(&g, 0x2c, "x");
    endel(&g);
    /* NODE: ignored */
    rec(&g, 0x15, 0, NULL, 0);
    layer_dt(&g, 4, 0x2a, 0);
    int64_t node[4] = {0, 0, 5, 5};
    rec32(&g, 0x10, node, 4);
    endel(&g);
    /* TEXT with its presentation and transform: counted, not geometry */
    rec(&g, 0x0c, 0, NULL, 0);
    layer_dt(&g, 4, 0x16, 0);
    rec16(&g, 0x17, 1, &v, 1);
    int st_ = 0x8000;
    rec16(&g, 0x1a, 1, &st_, 1);
    double mag = 2;
    recr8(&g, 0x1b, &mag, 1);
    int64_t txy[2] = {1, 1};
    rec32(&g, 0x10, txy, 2);
    recs(&g, 0x19, "label");
    endel(&g);
    /* two paths, width 10 and -10 (absolute): the same polygons */
    for (int k = 0; k < 2; k++) {
        rec(&g, 0x09, 0, NULL, 0);
        layer_dt(&g, 5 + k, 0x0e, 0);
        int pt = 2;
        rec16(&g, 0x21, 2, &pt, 1);
        int64_t w = k ? -10 : 10;
        rec32(&g, 0x0f, &w, 1);
        int64_t xy[6] = {0, 0, 100, 0, 100, 100};
        rec32(&g, 0x10, xy, 6);
        endel(&g);
    }
    str_end(&g);
    lib_end(&g);
    /* padding after ENDLIB, as tape blocks have */
    uint8_t zeros[100] = {0};
    put(&g, zeros, sizeof zeros);
    tsr_layout *l = read_ok(&g);
    const tsr_lay_cell *c = &l->cells[0];
    cr_assert_eq(c->ntexts, 1);
    cr_assert_eq(c->shapes[0].kind, TSR_LAY_BOX);
    cr_assert_eq(c->shapes[0].layer, 4);
    cr_assert_eq(c->shapes[0].datatype, 2);
    const tsr_lay_pt *p = c->pts + c->shapes[0].first;
    cr_assert(p[0].x == 10 && p[0].y == 20 && p[1].x == 40 && p[1].y == 50);
    polys ps = query_all(l, 0, everywhere);
    size_t n5 = 0, n6 = 0;
    for (size_t i = 0; i < ps.n; i++) {
        n5 += ps.v[i].layer == 5;
        n6 += ps.v[i].layer == 6;
    }
    /* two segments and the join */
    cr_assert_eq(n5, 3);
    cr_assert_eq(n6, 3);
    for (size_t i = 0; i < ps.n; i++)
        if (ps.v[i].layer == 5) {
            size_t j = 0;
            for (; j < ps.n; j++)
                if (ps.v[j].layer == 6 && ps.v[j].n == ps.v[i].n) {
                    poly a = ps.v[j];
                    a.layer = 5;
                    if (same_polygon(&ps.v[i], &a, 0))
                        break;
                }
            cr_assert(j < ps.n, "piece %zu of the positive width has no twin", i);
        }
    /* extended ends (type 2): the path's box reaches half the width past its end points */
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < ps.n; i++)
        if (ps.v[i].layer == 5)
            for (size_t k = 0; k < ps.v[i].n; k++) {
                lo = fmin(lo, ps.v[i].p[k][0]);
                hi = fmax(hi, ps.v[i].p[k][1]);
            }
    cr_assert_eq(lo, -5);
    cr_assert_eq(hi, 105);
    tsr_layout_stats st;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_layout_get_stats(l, 0, &st, &err), TSR_OK);
    cr_assert_eq(st.shapes, 7);
    cr_assert_eq(st.texts, 1);
    tsr_layout_stats_free(&st);
    polys_free(&ps);
    tsr_layout_free(l);
    free(g.b);
}

/* Round ends (type 1): vertices on the circle about the end point, chords within the
 * tolerance of it; a finer tolerance, more vertices. */
Test(layouts_gdsii, round_path_ends_keep_within_the_arc_tolerance)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "C");
    rec(&g, 0x09, 0, NULL, 0);
    layer_dt(&g, 1, 0x0e, 0);
    int pt = 1;
    rec16(&g, 0x21, 2, &pt, 1);
    int64_t w = 2000, xy[4] = {0, 0, 5000, 3000};
    rec32(&g, 0x0f, &w, 1);
    rec32(&g, 0x10, xy, 4);
    endel(&g);
    str_end(&g);
    lib_end(&g);
    size_t before = 0;
    const double tols[] = {20e-9, 5e-9, 1e-9};
    for (size_t t = 0; t < 3; t++) {
        tsr_layout_opts o = {.arc_tol_m = tols[t]};
        tsr_error err = {TSR_OK, ""};
        tsr_layout *l = tsr_layout_read(g.b, g.n, "round.gds", &o, &err);
        cr_assert(l, "%s", err.msg);
        polys ps = query_all(l, 0, everywhere);
        cr_assert_eq(ps.n, 1);
        const poly *p = &ps.v[0];
        cr_assert(p->n > before, "tolerance %g: %zu vertices, %zu before", tols[t], p->n,
                  before);
        before = p->n;
        double tol = tols[t] / 1e-9;
        for (int e = 0; e < 2; e++) {
            double cx = e ? 5000 : 0, cy = e ? 3000 : 0;
            double prev[2] = {NAN, NAN};
            size_t on = 0;
            for (size_t k = 0; k <= p->n; k++) {
                const double *q = p->p[k % p->n];
                double d = hypot(q[0] - cx, q[1] - cy);
                if (fabs(d - 1000) > 1) {
                    prev[0] = NAN;
                    continue;
                }
                on++;
                if (!isnan(prev[0])) {
                    double mx = (prev[0] + q[0]) / 2 - cx, my = (prev[1] + q[1]) / 2 - cy;
                    cr_assert(1000 - hypot(mx, my) <= tol + 1, "chord sagitta %g, tolerance %g",
                              1000 - hypot(mx, my), tol);
                }
                prev[0] = q[0], prev[1] = q[1];
            }
            cr_assert(on >= 3, "end %d: %zu vertices on its circle", e, on);
        }
        polys_free(&ps);
        tsr_layout_free(l);
    }
    free(g.b);
}

Test(layouts_gdsii, units_are_decoded_exactly)
{
    const double dbus[] = {1e-9, 1e-10, 2.5e-7, 1.0 / 3 * 1e-6, 0.001, 5e-12};
    for (size_t k = 0; k < sizeof dbus / sizeof *dbus; k++) {
        gb g = {0};
        int v = 600;
        rec16(&g, 0x00, 2, &v, 1);
        rec16(&g, 0x01, 2, stamp, 12);
        recs(&g, 0x02, "LIB");
        double u[2] = {dbus[k] / 1e-6, dbus[k]};
        recr8(&g, 0x03, u, 2);
        str_begin(&g, "C");
        square(&g, 1, 0, 0, 10);
        str_end(&g);
        lib_end(&g);
        tsr_layout *l = read_ok(&g);
        cr_assert_eq(l->dbu_m, dbus[k], "%.17g read as %.17g", dbus[k], l->dbu_m);
        tsr_layout_free(l);
        free(g.b);
    }
}

/* ---- placements ----------------------------------------------------------------------------- */

/* the transform as layouts.h states it, computed here in long double */
static void
xf_point(double mag, double angle, bool mirror, double dx, double dy, double *x, double *y)
{
    long double a = (long double)angle * 3.14159265358979323846264338327950288L / 180;
    long double px = (long double)mag * *x, py = (long double)mag * (mirror ? -*y : *y);
    *x = (double)(dx + cosl(a) * px - sinl(a) * py);
    *y = (double)(dy + sinl(a) * px + cosl(a) * py);
}

typedef struct counter {
    size_t want_calls, visits;
    double last[2];
    bool ordered;
    double (*at)[2]; /* each visit's first vertex */
    size_t cap;
} counter;

static bool
count_want(void *ctx, uint32_t layer, uint32_t datatype)
{
    (void)layer, (void)datatype;
    ((counter *)ctx)->want_calls++;
    return true;
}

static int
count_visit(void *ctx, const tsr_lay_item *it)
{
    counter *c = ctx;
    if (c->visits == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->at = realloc(c->at, c->cap * sizeof *c->at);
    }
    c->at[c->visits][0] = it->pts[0][0];
    c->at[c->visits][1] = it->pts[0][1];
    c->visits++;
    return 0;
}

/* A cell "S" of one 10 x 10 square, placed by TOP as a cols x rows AREF. */
static gb
aref_file(int cols, int rows, int64_t px, int64_t py, int strans, double mag, double angle)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "TOP");
    /* the lattice vectors in the parent's frame: the placement's rotation applied */
    double ux = px, uy = 0, vx = 0, vy = py;
    double o[2] = {0, 0};
    xf_point(1, angle, false, 0, 0, &ux, &uy);
    xf_point(1, angle, false, 0, 0, &vx, &vy);
    int64_t xy[6] = {(int64_t)o[0], (int64_t)o[1], llround(cols * ux), llround(cols * uy),
                     llround(rows * vx), llround(rows * vy)};
    place(&g, "S", strans, mag, angle, cols, rows, xy);
    str_end(&g);
    str_begin(&g, "S");
    square(&g, 1, 0, 0, 10);
    str_end(&g);
    lib_end(&g);
    return g;
}

Test(layouts_gdsii, a_small_window_visits_only_the_array_elements_near_it)
{
    gb g = aref_file(1000, 1000, 100, 100, -1, 1, 0);
    tsr_layout *l = read_ok(&g);
    tsr_layout_stats st;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_layout_get_stats(l, 0, &st, &err), TSR_OK);
    cr_assert_eq(st.flat_shapes, 1000000);
    cr_assert_eq(st.shapes, 1);
    tsr_layout_stats_free(&st);
    cr_assert_eq(l->cells[0].box[2], 99910);
    double win[4] = {1234, 5678, 1534, 5978};
    counter c = {0};
    cr_assert_eq(tsr_layout_query(l, 0, win, count_want, &c, count_visit, &c, &err), TSR_OK);
    /* the elements meeting the window, found by walking all of them here */
    size_t expect = 0;
    for (int j = 0; j < 1000; j++)
        for (int i = 0; i < 1000; i++) {
            double x = 100.0 * i, y = 100.0 * j;
            if (x <= win[2] && x + 10 >= win[0] && y <= win[3] && y + 10 >= win[1]) {
                cr_assert(expect < c.visits, "too few visits");
                /* in order: i fastest */
                cr_assert(c.at[expect][0] == x && c.at[expect][1] == y,
                          "visit %zu at (%g, %g), expected (%g, %g)", expect, c.at[expect][0],
                          c.at[expect][1], x, y);
                expect++;
            }
        }
    cr_assert_eq(c.visits, expect);
    cr_assert_eq(expect, 9);
    /* `want` is asked once per element considered: only those near the window were */
    cr_assert(c.want_calls <= 2 * expect, "%zu elements considered for %zu visits",
              c.want_calls, expect);
    free(c.at);
    tsr_layout_free(l);
    free(g.b);
}

/* does the convex quadrilateral q meet the rectangle w? (separating axes: x, y, and the
 * normals of q's edges) */
static bool
quad_meets(const double q[4][2], const double w[4])
{
    double wc[4][2] = {{w[0], w[1]}, {w[2], w[1]}, {w[2], w[3]}, {w[0], w[3]}};
    double axes[4][2] = {{1, 0}, {0, 1}, {q[1][1] - q[0][1], q[0][0] - q[1][0]},
                         {q[2][1] - q[1][1], q[1][0] - q[2][0]}};
    for (int a = 0; a < 4; a++) {
        double p0 = INFINITY, p1 = -INFINITY, r0 = INFINITY, r1 = -INFINITY;
        for (int k = 0; k < 4; k++) {
            double pq = q[k][0] * axes[a][0] + q[k][1] * axes[a][1];
            double pw = wc[k][0] * axes[a][0] + wc[k][1] * axes[a][1];
            p0 = fmin(p0, pq), p1 = fmax(p1, pq), r0 = fmin(r0, pw), r1 = fmax(r1, pw);
        }
        if (p1 < r0 || r1 < p0)
            return false;
    }
    return true;
}

/* Arrays under rotations, mirrors and magnifications: every element whose square meets the
 * window is visited, none whose box misses it, in order; at a multiple of 90 degrees exactly
 * those whose boxes meet it. The first vertex (the square's origin) lands on the lattice point
 * exactly in both computations, which tells the elements apart. */
Test(layouts_gdsii, rotated_mirrored_magnified_arrays_visit_the_elements_met)
{
    const struct {
        int strans;
        double mag, angle;
    } cases[] = {{0, 1, 30}, {0x8000, 1.5, 45}, {0x8000, 0.75, 250}, {0, 2, 90},
                 {0x8000, 3, 180}, {0, 1, -10}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        bool right = fmod(cases[k].angle, 90) == 0;
        gb g = aref_file(200, 300, 40, 25, cases[k].strans, cases[k].mag, cases[k].angle);
        tsr_layout *l = read_ok(&g);
        const tsr_lay_rep *r = &l->reps[l->cells[0].refs[0].rep - 1];
        /* around the middle element */
        double mx = (double)(100 * r->u[0] + 150 * r->v[0]);
        double my = (double)(100 * r->u[1] + 150 * r->v[1]);
        double win[4] = {mx - 1200, my - 700, mx + 1100, my + 800};
        counter c = {0};
        tsr_error err = {TSR_OK, ""};
        cr_assert_eq(tsr_layout_query(l, 0, win, count_want, &c, count_visit, &c, &err),
                     TSR_OK);
        size_t v = 0, meet = 0;
        for (int j = 0; j < 300; j++)
            for (int i = 0; i < 200; i++) {
                double q[4][2], b[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
                for (int n = 0; n < 4; n++) {
                    q[n][0] = n == 1 || n == 2 ? 10 : 0, q[n][1] = n >= 2 ? 10 : 0;
                    xf_point(cases[k].mag, cases[k].angle, cases[k].strans != 0,
                             (double)(i * r->u[0] + j * r->v[0]),
                             (double)(i * r->u[1] + j * r->v[1]), &q[n][0], &q[n][1]);
                    b[0] = fmin(b[0], q[n][0]), b[1] = fmin(b[1], q[n][1]);
                    b[2] = fmax(b[2], q[n][0]), b[3] = fmax(b[3], q[n][1]);
                }
                bool box = b[0] <= win[2] && b[2] >= win[0] && b[1] <= win[3] && b[3] >= win[1];
                bool geo = quad_meets(q, win);
                bool seen = v < c.visits && c.at[v][0] == q[0][0] && c.at[v][1] == q[0][1];
                meet += geo;
                cr_assert(!seen || box, "case %zu: (%d, %d) visited, its box misses", k, i, j);
                cr_assert(seen || !geo, "case %zu: (%d, %d) meets the window, not visited", k,
                          i, j);
                cr_assert(!right || seen == box, "case %zu: (%d, %d): visited %d, box meets %d",
                          k, i, j, seen, box);
                v += seen;
            }
        cr_assert_eq(v, c.visits, "case %zu: %zu visits out of order or extra", k, c.visits);
        cr_assert(meet > 20, "case %zu: %zu", k, meet);
        cr_assert(c.want_calls < 3 * meet + 50, "case %zu: %zu considered for %zu", k,
                  c.want_calls, meet);
        free(c.at);
        tsr_layout_free(l);
        free(g.b);
    }
}

Test(layouts_gdsii, a_cell_of_many_shapes_is_queried_through_its_index_in_file_order)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "MANY");
    uint64_t s = 12345;
    int64_t pos[3000][3];
    for (int k = 0; k < 3000; k++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        pos[k][0] = (int64_t)(s >> 40) % 100000;
        pos[k][1] = (int64_t)(s >> 20 & 0xfffff) % 100000;
        pos[k][2] = 1 + (int64_t)(s & 0xff) * 10;
        square(&g, 1 + k % 3, pos[k][0], pos[k][1], pos[k][2]);
    }
    str_end(&g);
    lib_end(&g);
    tsr_layout *l = read_ok(&g);
    for (int w = 0; w < 50; w++) {
        double x = (w * 7919) % 100000, y = (w * 104729) % 100000, sz = 500 + 300 * (w % 20);
        double win[4] = {x, y, x + sz, y + sz};
        counter c = {0};
        tsr_error err = {TSR_OK, ""};
        cr_assert_eq(tsr_layout_query(l, 0, win, NULL, NULL, count_visit, &c, &err), TSR_OK);
        size_t expect = 0;
        for (int k = 0; k < 3000; k++) {
            double x0 = (double)pos[k][0], y0 = (double)pos[k][1];
            double x1 = x0 + (double)pos[k][2], y1 = y0 + (double)pos[k][2];
            if (x0 <= win[2] && x1 >= win[0] && y0 <= win[3] && y1 >= win[1]) {
                cr_assert(expect < c.visits);
                cr_assert(c.at[expect][0] == x0 && c.at[expect][1] == y0,
                          "window %d: visit %zu is not square %d", w, expect, k);
                expect++;
            }
        }
        cr_assert_eq(c.visits, expect, "window %d", w);
        free(c.at);
    }
    tsr_layout_free(l);
    free(g.b);
}

static bool
only_layer_2(void *ctx, uint32_t layer, uint32_t datatype)
{
    (void)ctx, (void)datatype;
    return layer == 2;
}

Test(layouts_gdsii, layers_filter_a_visitor_stops_and_empty_windows_meet_nothing)
{
    tsr_layout *l = open_test("hierarchy.gds");
    polys ps = {0};
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_layout_query(l, 0, everywhere, only_layer_2, NULL, collect, &ps, &err),
                 TSR_OK);
    cr_assert(ps.n > 0);
    for (size_t i = 0; i < ps.n; i++)
        cr_assert_eq(ps.v[i].layer, 2);
    polys_free(&ps);
    ps.stop_after = 3;
    cr_assert_eq(tsr_layout_query(l, 0, everywhere, NULL, NULL, collect, &ps, &err), TSR_EINTR);
    cr_assert_eq(ps.n, 3);
    polys_free(&ps);
    double empty[4] = {10, 10, 0, 0};
    cr_assert_eq(tsr_layout_query(l, 0, empty, NULL, NULL, collect, &ps, &err), TSR_OK);
    cr_assert_eq(ps.n, 0);
    /* two queries of one window see the same items in the same order */
    polys a = query_all(l, 0, everywhere), b = query_all(l, 0, everywhere);
    cr_assert_eq(a.n, b.n);
    for (size_t i = 0; i < a.n; i++)
        cr_assert(a.v[i].n == b.v[i].n &&
                  memcmp(a.v[i].p, b.v[i].p, a.v[i].n * sizeof *a.v[i].p) == 0);
    polys_free(&a);
    polys_free(&b);
    tsr_layout_free(l);
}

/* ---- choosing cells ------------------------------------------------------------------------- */

Test(layouts_gdsii, several_tops_and_unknown_names_list_the_candidates)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "A");
    square(&g, 1, 0, 0, 5);
    str_end(&g);
    str_begin(&g, "B");
    int64_t o[2] = {0, 0};
    place(&g, "C", -1, 1, 0, 0, 0, o);
    str_end(&g);
    str_begin(&g, "C");
    square(&g, 1, 0, 0, 5);
    str_end(&g);
    str_begin(&g, "EMPTY");
    str_end(&g);
    lib_end(&g);
    tsr_layout *l = read_ok(&g);
    uint32_t tops[4];
    cr_assert_eq(tsr_layout_tops(l, tops, 4), 3);
    cr_assert_str_eq(l->cells[tops[0]].name, "A");
    cr_assert_str_eq(l->cells[tops[1]].name, "B");
    cr_assert_str_eq(l->cells[tops[2]].name, "EMPTY");
    cr_assert(!l->cells[tops[2]].has_box);
    uint32_t c;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_layout_cell(l, NULL, &c, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "3 top cells") && strstr(err.msg, "\"A\", \"B\", \"EMPTY\""),
              "%s", err.msg);
    cr_assert_eq(tsr_layout_cell(l, "NOPE", &c, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "no cell named \"NOPE\"") && strstr(err.msg, "\"C\""), "%s",
              err.msg);
    cr_assert_eq(tsr_layout_cell(l, "C", &c, &err), TSR_OK);
    cr_assert_str_eq(l->cells[c].name, "C");
    polys ps = query_all(l, tops[2], everywhere);
    cr_assert_eq(ps.n, 0);
    tsr_layout_free(l);
    free(g.b);
}

/* ---- errors --------------------------------------------------------------------------------- */

Test(layouts_gdsii, every_truncation_of_a_file_is_an_error)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/layouts/hierarchy.gds", TSR_SRC_DIR);
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cr_assert(n > 100 && n < sizeof buf);
    for (size_t k = 0; k < n; k++) {
        tsr_error err = {TSR_OK, ""};
        tsr_layout *l = tsr_layout_read(buf, k, "cut.gds", NULL, &err);
        cr_assert(l == NULL, "%zu of %zu bytes read", k, n);
        cr_assert_eq(err.status, TSR_EINVAL, "%zu bytes: %s", k, err.msg);
        cr_assert(strncmp(err.msg, "cut.gds: byte ", 14) == 0, "%zu bytes: %s", k, err.msg);
    }
}

Test(layouts_gdsii, truncated_mid_record_says_so)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "C");
    square(&g, 1, 0, 0, 10);
    g.n -= 10; /* into the XY record */
    read_fails(&g, "expected at most the");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    read_fails(&g, "the file ends here, expected ENDLIB");
    free(g.b);
}

static gb
one_square_file(void)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "C");
    square(&g, 1, 0, 0, 10);
    str_end(&g);
    lib_end(&g);
    return g;
}

Test(layouts_gdsii, corrupt_record_lengths_and_types)
{
    gb g = one_square_file();
    /* find the BOUNDARY record (type 0x08) */
    size_t at = 0;
    while (g.b[at + 2] != 0x08)
        at += (size_t)g.b[at] << 8 | g.b[at + 1];
    char want[64];
    uint8_t save[4];
    memcpy(save, g.b + at, 4);
    g.b[at] = 0, g.b[at + 1] = 3;
    snprintf(want, sizeof want, "byte %zu: record length 3, expected an even", at);
    read_fails(&g, want);
    g.b[at + 1] = 2;
    read_fails(&g, "record length 2, expected an even length of at least 4");
    g.b[at] = 0x7f, g.b[at + 1] = 0xfe;
    read_fails(&g, "record of 32766 bytes, expected at most the");
    memcpy(g.b + at, save, 4);
    g.b[at + 2] = 0x60;
    read_fails(&g, "record type 0x60, expected a GDSII record type");
    memcpy(g.b + at, save, 4);
    /* LAYER (next record) with a 4-byte integer */
    size_t lay = at + 4;
    g.b[lay + 3] = 3;
    read_fails(&g, "LAYER: data type 3 (4-byte integer), expected 2 (2-byte integer)");
    free(g.b);
    /* a header that is not GDSII at all is refused by the sniffer */
    uint8_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tsr_error err = {TSR_OK, ""};
    cr_assert_null(tsr_layout_read(junk, 8, "junk.gds", NULL, &err));
    cr_assert(strstr(err.msg, "junk.gds: byte 0: not a GDSII"), "%s", err.msg);
}

Test(layouts_gdsii, wrong_point_counts)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "C");
    int64_t tri[6] = {0, 0, 1, 0, 0, 1};
    boundary(&g, 1, tri, 3);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "BOUNDARY: XY of 3 points, expected at least 4");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    square(&g, 1, 0, 0, 1);
    str_end(&g);
    str_begin(&g, "T");
    int64_t two[6] = {0, 0, 1, 1, 2, 2};
    rec(&g, 0x0a, 0, NULL, 0);
    recs(&g, 0x12, "C");
    rec32(&g, 0x10, two, 4);
    endel(&g);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "SREF: XY of 2 points, expected 1");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    rec(&g, 0x2d, 0, NULL, 0);
    layer_dt(&g, 1, 0x2e, 0);
    rec32(&g, 0x10, two, 6);
    endel(&g);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "BOX: XY of 3 points, expected 5");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    rec(&g, 0x09, 0, NULL, 0);
    layer_dt(&g, 1, 0x0e, 0);
    rec32(&g, 0x10, two, 2);
    endel(&g);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "PATH: XY of 1 points, expected at least 2");
    free(g.b);
}

Test(layouts_gdsii, records_out_of_place)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "C");
    int64_t xy[2] = {0, 0};
    rec32(&g, 0x10, xy, 2);
    read_fails(&g, "XY inside cell \"C\", expected an element or ENDSTR");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    rec(&g, 0x0a, 0, NULL, 0);
    int v = 1;
    rec16(&g, 0x0d, 2, &v, 1);
    read_fails(&g, "LAYER inside SREF");
    free(g.b);
    g = (gb){0};
    int h = 600;
    rec16(&g, 0x00, 2, &h, 1);
    rec16(&g, 0x01, 2, stamp, 12);
    str_begin(&g, "C");
    read_fails(&g, "BGNSTR before UNITS");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    lib_end(&g);
    read_fails(&g, "ENDLIB inside cell \"C\"");
    free(g.b);
    g = (gb){0};
    rec16(&g, 0x00, 2, &h, 1);
    recs(&g, 0x02, "LIB");
    read_fails(&g, "LIBNAME, expected BGNLIB after HEADER");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    rec(&g, 0x08, 0, NULL, 0);
    layer_dt(&g, 1, 0x0e, 0);
    v = 2;
    rec16(&g, 0x0d, 2, &v, 1);
    read_fails(&g, "a second LAYER in BOUNDARY");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    rec(&g, 0x08, 0, NULL, 0);
    layer_dt(&g, 1, 0x0e, 0);
    endel(&g);
    read_fails(&g, "BOUNDARY without XY");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    str_end(&g);
    str_begin(&g, "C");
    read_fails(&g, "a second cell named \"C\"");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "C");
    str_end(&g);
    double u[2] = {1e-3, 1e-8};
    recr8(&g, 0x03, u, 2);
    read_fails(&g, "a second UNITS, expected one before the first BGNSTR");
    free(g.b);
}

Test(layouts_gdsii, absurd_counts_and_transforms)
{
    const struct {
        int cols, rows;
        double mag;
        const char *msg;
    } cases[] = {
        {0, 5, 1, "AREF: COLROW 0 x 5, expected counts of at least 1"},
        {3, -2, 1, "AREF: COLROW 3 x -2"},
        {2, 2, 0, "AREF: MAG 0, expected a finite magnification > 0"},
        {2, 2, -1, "AREF: MAG -1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        gb g = {0};
        lib_begin(&g);
        str_begin(&g, "S");
        square(&g, 1, 0, 0, 1);
        str_end(&g);
        str_begin(&g, "T");
        rec(&g, 0x0b, 0, NULL, 0);
        recs(&g, 0x12, "S");
        int st = 0;
        rec16(&g, 0x1a, 1, &st, 1);
        recr8(&g, 0x1b, &cases[k].mag, 1);
        int cr[2] = {cases[k].cols, cases[k].rows};
        rec16(&g, 0x13, 2, cr, 2);
        int64_t xy[6] = {0, 0, 10, 0, 0, 10};
        rec32(&g, 0x10, xy, 6);
        endel(&g);
        str_end(&g);
        lib_end(&g);
        read_fails(&g, cases[k].msg);
        free(g.b);
    }
    /* a UNITS record of zero */
    gb g = {0};
    int h = 600;
    rec16(&g, 0x00, 2, &h, 1);
    rec16(&g, 0x01, 2, stamp, 12);
    double u[2] = {1e-3, 0};
    recr8(&g, 0x03, u, 2);
    read_fails(&g, "UNITS 0.001, 0: expected positive sizes");
    free(g.b);
}

Test(layouts_gdsii, a_reference_cycle_names_its_cells)
{
    gb g = {0};
    lib_begin(&g);
    int64_t o[2] = {0, 0};
    str_begin(&g, "TOP");
    place(&g, "A", -1, 1, 0, 0, 0, o);
    str_end(&g);
    str_begin(&g, "A");
    square(&g, 1, 0, 0, 1);
    place(&g, "B", -1, 1, 0, 0, 0, o);
    str_end(&g);
    str_begin(&g, "B");
    place(&g, "A", 0x8000, 2, 90, 0, 0, o);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "the cells place each other in a cycle: \"A\" -> \"B\" -> \"A\"");
    free(g.b);
    g = (gb){0};
    lib_begin(&g);
    str_begin(&g, "SELF");
    place(&g, "SELF", -1, 1, 0, 0, 0, o);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "cycle: \"SELF\" -> \"SELF\"");
    free(g.b);
}

static gb
chain_file(int levels)
{
    gb g = {0};
    lib_begin(&g);
    int64_t o[2] = {1, 0};
    char name[32], next[32];
    for (int k = 0; k < levels; k++) {
        snprintf(name, sizeof name, "L%d", k);
        snprintf(next, sizeof next, "L%d", k + 1);
        str_begin(&g, name);
        place(&g, next, -1, 1, 0, 0, 0, o);
        str_end(&g);
    }
    snprintf(name, sizeof name, "L%d", levels);
    str_begin(&g, name);
    square(&g, 1, 0, 0, 1);
    str_end(&g);
    lib_end(&g);
    return g;
}

Test(layouts_gdsii, nesting_is_limited)
{
    gb g = chain_file(TSR_LAYOUT_MAX_DEPTH);
    tsr_layout *l = read_ok(&g);
    polys ps = query_all(l, 0, everywhere);
    cr_assert_eq(ps.n, 1);
    cr_assert_eq(ps.v[0].p[0][0], TSR_LAYOUT_MAX_DEPTH);
    polys_free(&ps);
    tsr_layout_free(l);
    free(g.b);
    g = chain_file(TSR_LAYOUT_MAX_DEPTH + 1);
    read_fails(&g, "placements nested deeper than 64 levels: \"L0\" -> \"L1\"");
    free(g.b);
    /* the deep part found first, then placed from above */
    g = (gb){0};
    lib_begin(&g);
    int64_t o[2] = {0, 0};
    char name[32], next[32];
    for (int k = 1; k <= TSR_LAYOUT_MAX_DEPTH; k++) {
        snprintf(name, sizeof name, "L%d", k);
        snprintf(next, sizeof next, "L%d", k + 1);
        str_begin(&g, name);
        if (k < TSR_LAYOUT_MAX_DEPTH)
            place(&g, next, -1, 1, 0, 0, 0, o);
        else
            square(&g, 1, 0, 0, 1);
        str_end(&g);
    }
    str_begin(&g, "UP1");
    place(&g, "L1", -1, 1, 0, 0, 0, o);
    str_end(&g);
    str_begin(&g, "UP2");
    place(&g, "UP1", -1, 1, 0, 0, 0, o);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "nested deeper than 64 levels: \"UP2\" -> \"UP1\"");
    free(g.b);
}

Test(layouts_gdsii, an_undefined_cell_is_named_with_its_placement)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "TOP");
    square(&g, 1, 0, 0, 1);
    size_t at = g.n;
    int64_t o[2] = {0, 0};
    place(&g, "GHOST", -1, 1, 0, 0, 0, o);
    str_end(&g);
    lib_end(&g);
    char want[96];
    snprintf(want, sizeof want, "byte %zu: cell \"GHOST\" is placed but never defined", at);
    read_fails(&g, want);
    free(g.b);
}

Test(layouts_gdsii, coordinates_beyond_the_limit_are_refused)
{
    gb g = {0};
    lib_begin(&g);
    str_begin(&g, "TOP");
    int64_t o[2] = {0, 0};
    place(&g, "S", 0, 1e9, 0, 0, 0, o);
    str_end(&g);
    str_begin(&g, "S");
    square(&g, 1, 2147483000, 0, 10);
    str_end(&g);
    lib_end(&g);
    read_fails(&g, "cell \"TOP\": placement 0 reaches");
    free(g.b);
    /* either side of 2^52: 2^31 magnified by 2e6 (accepted) and 3e6 (refused) */
    for (int k = 0; k < 2; k++) {
        g = (gb){0};
        lib_begin(&g);
        str_begin(&g, "TOP");
        place(&g, "S", 0, k ? 3e6 : 2e6, 0, 0, 0, o);
        str_end(&g);
        str_begin(&g, "S");
        square(&g, 1, 2147483637, 0, 10);
        str_end(&g);
        lib_end(&g);
        if (k) {
            read_fails(&g, "beyond +-2^52");
            free(g.b);
            continue;
        }
        tsr_layout *l = read_ok(&g);
        cr_assert_eq(l->cells[0].box[2], 2147483647.0 * 2e6);
        tsr_layout_free(l);
        free(g.b);
    }
}

/* A reader that passes the file once says so every consumed_every bytes, at record starts in
 * increasing order; tsr_layout_open gives those pages back and reads the same model. */
typedef struct seen {
    size_t n, last, len;
    bool ordered;
} seen;

static void
count_consumed(void *ctx, size_t off)
{
    seen *s = ctx;
    s->ordered = s->ordered && off > s->last && off <= s->len;
    s->last = off;
    s->n++;
}

Test(layouts_gdsii, consumed_offsets_rise_and_open_reads_the_same_model)
{
    char *path = th_src("tests/layouts/hierarchy.gds");
    size_t len = 0;
    uint8_t *b = th_read_file(path, &len);
    cr_assert_not_null(b);
    tsr_error err = {0};
    seen s = {0, 0, len, true};
    tsr_layout_opts o = {.consumed = count_consumed, .consumed_ctx = &s, .consumed_every = 64};
    tsr_layout *a = tsr_layout_read(b, len, "hierarchy.gds", &o, &err);
    cr_assert_not_null(a, "%s", err.msg);
    cr_assert(s.ordered && s.n >= len / 64 / 2, "%zu calls for %zu bytes", s.n, len);
    seen s2 = {0, 0, len, true};
    o.consumed_ctx = &s2;
    tsr_layout *m = tsr_layout_open(path, &o, &err); /* its pages dropped every 64 bytes */
    cr_assert_not_null(m, "%s", err.msg);
    cr_assert(s2.ordered && s2.n == s.n, "the caller's callback still called");
    cr_assert_eq(m->ncells, a->ncells);
    for (size_t c = 0; c < a->ncells; c++) {
        const tsr_lay_cell *x = &a->cells[c], *y = &m->cells[c];
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->nshapes, y->nshapes);
        cr_assert_eq(x->npts, y->npts);
        cr_assert_eq(x->nrefs, y->nrefs);
        cr_assert(x->npts == 0 || memcmp(x->pts, y->pts, x->npts * sizeof *x->pts) == 0);
    }
    tsr_layout_free(a);
    tsr_layout_free(m);
    free(b);
    free(path);
}
