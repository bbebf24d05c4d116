/* layouts/dxf.c: DXF files written by ezdxf (tests/layouts/make_dxf.py) read into the model,
 * flattened here and compared with what ezdxf and shapely computed from the same drawings
 * (tests/layouts/NAME.expect); the model itself (layers, units, placements, arrays kept as
 * repetitions); and every error the reader reports, with its line. */
#include "layouts/layouts.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TSR_SRC_DIR
#define TSR_SRC_DIR "."
#endif

/* ---- reading ---------------------------------------------------------------------------- */

static tsr_status
read_buf(const char *text, size_t len, const char *name, double arc_tol_m, tsr_layout **out,
         tsr_error *err)
{
    tsr_layout *l = calloc(1, sizeof *l);
    cr_assert(l);
    l->path = strdup(name);
    l->format = TSR_LAYOUT_DXF;
    tsr_layout_opts o = {.arc_tol_m = arc_tol_m};
    tsr_status st = tsr_dxf_read((const uint8_t *)text, len, &o, l, err);
    if (st != TSR_OK) {
        tsr_layout_free(l);
        l = NULL;
    }
    *out = l;
    return st;
}

static char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

static tsr_layout *
read_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/layouts/%s.dxf", TSR_SRC_DIR, name);
    size_t len;
    char *b = slurp(path, &len);
    tsr_layout *l;
    tsr_error err = {TSR_OK, ""};
    /* 1 pm: the reader takes one database unit (a micro-unit) instead, so arcs stay within
     * 1e-6 drawing units of the curve, as ezdxf's samples do */
    tsr_status st = read_buf(b, len, path, 1e-12, &l, &err);
    free(b);
    cr_assert_eq(st, TSR_OK, "%s", err.msg);
    return l;
}

/* ---- flattening (a reference walk of cells, placements and repetitions) ------------------ */

typedef struct aff {
    double a, b, c, d, e, f; /* x' = a x + b y + e, y' = c x + d y + f */
} aff;

static aff
compose(aff p, aff q) /* p after q */
{
    aff r = {p.a * q.a + p.b * q.c, p.a * q.b + p.b * q.d, p.c * q.a + p.d * q.c,
             p.c * q.b + p.d * q.d, p.a * q.e + p.b * q.f + p.e, p.c * q.e + p.d * q.f + p.f};
    return r;
}

typedef struct item {
    uint32_t layer;
    bool circle;
    double area, cx, cy, r; /* drawing units */
    bool used;
} item;

typedef struct items {
    item *v;
    size_t n, cap;
} items;

static void
push(items *it, item x)
{
    if (it->n == it->cap) {
        it->cap = it->cap ? 2 * it->cap : 64;
        it->v = realloc(it->v, it->cap * sizeof *it->v);
        cr_assert(it->v);
    }
    it->v[it->n++] = x;
}

static void
flatten(const tsr_layout *l, uint32_t cell, aff m, int depth, items *out)
{
    cr_assert(depth < 16, "nesting too deep (a cycle?)");
    const tsr_lay_cell *c = &l->cells[cell];
    for (size_t i = 0; i < c->nshapes; i++) {
        const tsr_lay_shape *s = &c->shapes[i];
        if (s->rep) { /* a flattened non-uniform INSERT's array: each element on its own */
            cr_assert(s->rep <= l->nreps);
            const tsr_lay_rep *p = &l->reps[s->rep - 1];
            cr_assert(p->n >= 1 && p->m >= 1, "DXF arrays are lattices");
            for (uint64_t j = 0; j < p->m; j++)
                for (uint64_t k = 0; k < p->n; k++) {
                    tsr_lay_cell one = *c;
                    tsr_lay_shape t = *s;
                    t.rep = 0;
                    one.shapes = &t, one.nshapes = 1, one.nrefs = 0;
                    tsr_layout sub = *l;
                    sub.cells = &one;
                    aff y = {1, 0, 0, 1, (double)k * p->u[0] + (double)j * p->v[0],
                             (double)k * p->u[1] + (double)j * p->v[1]};
                    flatten(&sub, 0, compose(m, y), depth + 1, out);
                }
            continue;
        }
        cr_assert_eq(s->datatype, 0);
        cr_assert(s->first + s->npts <= c->npts);
        item x = {.layer = s->layer};
        if (s->kind == TSR_LAY_CIRCLE) {
            const tsr_lay_pt *p = &c->pts[s->first];
            x.circle = true;
            x.cx = (m.a * p->x + m.b * p->y + m.e) / 1e6;
            x.cy = (m.c * p->x + m.d * p->y + m.f) / 1e6;
            x.r = s->r * sqrt(fabs(m.a * m.d - m.b * m.c)) / 1e6;
        } else {
            cr_assert_eq(s->kind, TSR_LAY_POLYGON);
            cr_assert_geq(s->npts, 3);
            double A = 0, Cx = 0, Cy = 0;
            for (uint32_t k = 0; k < s->npts; k++) {
                const tsr_lay_pt *p = &c->pts[s->first + k];
                const tsr_lay_pt *q = &c->pts[s->first + (k + 1) % s->npts];
                double x0 = (m.a * p->x + m.b * p->y + m.e) / 1e6;
                double y0 = (m.c * p->x + m.d * p->y + m.f) / 1e6;
                double x1 = (m.a * q->x + m.b * q->y + m.e) / 1e6;
                double y1 = (m.c * q->x + m.d * q->y + m.f) / 1e6;
                double cr = x0 * y1 - x1 * y0;
                A += cr;
                Cx += (x0 + x1) * cr;
                Cy += (y0 + y1) * cr;
            }
            x.area = fabs(A / 2);
            x.cx = Cx / (3 * A);
            x.cy = Cy / (3 * A);
        }
        push(out, x);
    }
    for (size_t i = 0; i < c->nrefs; i++) {
        const tsr_lay_ref *r = &c->refs[i];
        double t = r->xf.angle * M_PI / 180, k = r->xf.mag, f = r->xf.mirror ? -1 : 1;
        aff x = {k * cos(t), -k * f * sin(t), k * sin(t), k * f * cos(t), (double)r->xf.dx,
                 (double)r->xf.dy};
        uint64_t n = 1, mm = 1;
        int64_t u[2] = {0, 0}, v[2] = {0, 0};
        if (r->rep) {
            cr_assert(r->rep <= l->nreps);
            const tsr_lay_rep *p = &l->reps[r->rep - 1];
            cr_assert(p->n >= 1 && p->m >= 1, "DXF arrays are lattices");
            n = p->n, mm = p->m;
            memcpy(u, p->u, sizeof u);
            memcpy(v, p->v, sizeof v);
        }
        for (uint64_t j = 0; j < mm; j++)
            for (uint64_t ii = 0; ii < n; ii++) {
                aff y = x;
                y.e += (double)ii * u[0] + (double)j * v[0];
                y.f += (double)ii * u[1] + (double)j * v[1];
                flatten(l, r->cell, compose(m, y), depth + 1, out);
            }
    }
}

static uint32_t
top_of(const tsr_layout *l)
{
    /* the one cell no other places */
    int64_t top = -1;
    for (size_t i = 0; i < l->ncells; i++) {
        bool placed = false;
        for (size_t j = 0; j < l->ncells && !placed; j++)
            for (size_t k = 0; k < l->cells[j].nrefs && !placed; k++)
                placed = l->cells[j].refs[k].cell == i;
        if (!placed) {
            cr_assert_eq(top, -1, "two top cells: %s, %s", l->cells[top].name, l->cells[i].name);
            top = (int64_t)i;
        }
    }
    cr_assert_geq(top, 0);
    return (uint32_t)top;
}

/* ---- the comparison with ezdxf's numbers ------------------------------------------------ */

static void
compare(const char *name, const char *top_name)
{
    tsr_layout *l = read_file(name);
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/tests/layouts/%s.expect", TSR_SRC_DIR, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s", path);
    uint32_t top = top_of(l);
    cr_assert_str_eq(l->cells[top].name, top_name);
    items it = {0};
    aff id = {1, 0, 0, 1, 0, 0};
    flatten(l, top, id, 0, &it);
    uint64_t texts = 0, skipped = 0;
    for (size_t i = 0; i < l->ncells; i++)
        texts += l->cells[i].ntexts, skipped += l->cells[i].nskipped;
    size_t expected = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char lay[256];
        double a, x, y;
        if (strncmp(line, "unit ", 5) == 0) {
            double u = strtod(line + 5, NULL);
            cr_assert_float_eq(l->dbu_m, u / 1e6, 1e-6 * u / 1e6, "%s: dbu %g, unit %g", name,
                               l->dbu_m, u);
        } else if (strncmp(line, "layers ", 7) == 0) {
            size_t k = 0;
            for (char *t = strtok(line + 7, " "); t; t = strtok(NULL, " "), k++) {
                cr_assert_lt(k, l->nlayer_names, "%s: layer %s missing", name, t);
                cr_assert_str_eq(l->layer_names[k], t, "%s: layer %zu", name, k);
            }
            cr_assert_eq(k, l->nlayer_names, "%s: %zu layers, expected %zu", name,
                         l->nlayer_names, k);
        } else if (strncmp(line, "texts ", 6) == 0)
            cr_assert_eq(texts, strtoull(line + 6, NULL, 10), "%s: texts", name);
        else if (strncmp(line, "skipped ", 8) == 0)
            cr_assert_eq(skipped, strtoull(line + 8, NULL, 10), "%s: skipped", name);
        else if (sscanf(line, "poly %255s %lf %lf %lf", lay, &a, &x, &y) == 4 ||
                 sscanf(line, "circle %255s %lf %lf %lf", lay, &x, &y, &a) == 4) {
            bool circle = line[0] == 'c';
            expected++;
            bool found = false;
            for (size_t i = 0; i < it.n && !found; i++) {
                item *m = &it.v[i];
                if (m->used || m->circle != circle || strcmp(l->layer_names[m->layer], lay) != 0)
                    continue;
                double got = circle ? m->r : m->area;
                if (fabs(got - a) > 1e-4 * fabs(a) + 1e-6 ||
                    hypot(m->cx - x, m->cy - y) > 1e-4 + 1e-6 * hypot(x, y))
                    continue;
                m->used = found = true;
            }
            if (!found) {
                for (size_t i = 0; i < it.n; i++)
                    fprintf(stderr, "%s: got %s %s %.9g at %.9g %.9g%s\n", name,
                            it.v[i].circle ? "circle" : "poly", l->layer_names[it.v[i].layer],
                            it.v[i].circle ? it.v[i].r : it.v[i].area, it.v[i].cx, it.v[i].cy,
                            it.v[i].used ? " (matched)" : "");
                cr_assert_fail("%s: no shape matches '%s'", name, line);
            }
        } else
            cr_assert_fail("%s: unknown line '%s'", path, line);
    }
    fclose(f);
    cr_assert_eq(it.n, expected, "%s: %zu shapes, ezdxf says %zu", name, it.n, expected);
    free(it.v);
    tsr_layout_free(l);
}

Test(layouts_dxf, every_area_kind_matches_ezdxf)
{
    compare("shapes", "shapes");
}

Test(layouts_dxf, block_placements_and_arrays_match_ezdxf)
{
    compare("blocks", "blocks");
}

Test(layouts_dxf, r12_polylines_and_unitless_files_match_ezdxf)
{
    compare("r12", "r12");
}

Test(layouts_dxf, inch_drawings_get_inch_micro_units)
{
    compare("inch", "inch");
}

/* ---- the model itself ------------------------------------------------------------------- */

static const tsr_lay_shape *
shape(const tsr_layout *l, uint32_t cell, size_t i)
{
    cr_assert_lt(i, l->cells[cell].nshapes);
    return &l->cells[cell].shapes[i];
}

Test(layouts_dxf, coordinates_are_micro_units_and_solids_go_1_2_4_3)
{
    tsr_layout *l = read_file("shapes");
    uint32_t top = top_of(l);
    const tsr_lay_cell *c = &l->cells[top];
    /* the first rectangle, exactly: mm drawing, 1 nm database units */
    cr_assert_float_eq(l->dbu_m, 1e-9, 1e-21);
    const tsr_lay_shape *s = shape(l, top, 0);
    cr_assert_eq(s->kind, TSR_LAY_POLYGON);
    cr_assert_eq(s->npts, 4);
    const int64_t rect[4][2] = {{0, 0}, {10000000, 0}, {10000000, 5000000}, {0, 5000000}};
    for (int k = 0; k < 4; k++)
        cr_assert(c->pts[s->first + k].x == rect[k][0] && c->pts[s->first + k].y == rect[k][1],
                  "vertex %d", k);
    /* SOLID (0,80) (10,80) (0,90) (10,92): drawn 1-2-4-3 */
    bool solid = false;
    for (size_t i = 0; i < c->nshapes && !solid; i++) {
        const tsr_lay_shape *t = &c->shapes[i];
        const tsr_lay_pt *p = &c->pts[t->first];
        if (t->npts != 4 || p[0].x != 0 || p[0].y != 80000000)
            continue;
        solid = p[1].x == 10000000 && p[1].y == 80000000 && p[2].x == 10000000 &&
                p[2].y == 92000000 && p[3].x == 0 && p[3].y == 90000000;
    }
    cr_assert(solid, "the SOLID's corners are not 1-2-4-3");
    tsr_layout_free(l);
}

Test(layouts_dxf, arrays_stay_repetitions_and_mirrors_are_placements)
{
    tsr_layout *l = read_file("blocks");
    int64_t unit = tsr_lay_cell_find(l, "UNIT"), pair = tsr_lay_cell_find(l, "PAIR");
    cr_assert(unit >= 0 && pair >= 0);
    uint32_t top = top_of(l);
    const tsr_lay_cell *c = &l->cells[top];
    cr_assert_eq(c->nrefs, 11); /* not the three non-uniform INSERTs: flattened */
    /* L and circle (an ellipse now) of the 1st and 3rd; the PAIR array's (2 L, 2 circles,
     * 1 solid), each once with the 2 x 2 lattice */
    cr_assert_eq(c->nshapes, 4 + 5);
    size_t lattices = 0;
    for (size_t i = 0; i < c->nshapes; i++) {
        cr_assert_eq(c->shapes[i].kind, TSR_LAY_POLYGON);
        lattices += c->shapes[i].rep != 0;
    }
    cr_assert_eq(lattices, 5);
    int64_t nu = tsr_lay_cell_find(l, "NU");
    cr_assert(nu >= 0 && l->cells[nu].nshapes == 2 && l->cells[nu].nrefs == 0);
    /* UNIT's L, relative to its base point (1, 1) in um: 0 .. 3 um */
    const tsr_lay_shape *s = shape(l, (uint32_t)unit, 0);
    cr_assert_eq(l->cells[unit].pts[s->first].x, 0);
    cr_assert_eq(l->cells[unit].pts[s->first + 1].x, 3000000);
    /* xscale -1: mirrored and turned half round; extrusion (0, 0, -1), rotation 20: mirrored,
     * -20 + 180 */
    cr_assert(c->refs[2].xf.mirror && fabs(c->refs[2].xf.angle - 180) < 1e-9);
    cr_assert(!c->refs[4].xf.mirror && fabs(c->refs[4].xf.angle - 180) < 1e-9);
    cr_assert(c->refs[5].xf.mirror && fabs(c->refs[5].xf.angle - 160) < 1e-9,
              "angle %g", c->refs[5].xf.angle);
    cr_assert_eq(c->refs[5].xf.dx, -100000000);
    /* the 3 x 2 array: one placement, one lattice */
    const tsr_lay_ref *a = &c->refs[6];
    cr_assert_neq(a->rep, 0);
    const tsr_lay_rep *r = &l->reps[a->rep - 1];
    cr_assert(r->n == 3 && r->m == 2, "%llu x %llu", (unsigned long long)r->n,
              (unsigned long long)r->m);
    cr_assert(llabs(r->u[0] - llround(6e6 * cos(M_PI / 12))) <= 1);
    cr_assert(llabs(r->v[0] + llround(8e6 * sin(M_PI / 12))) <= 1);
    cr_assert_float_eq(c->refs[7].xf.mag, 0.5, 1e-12);
    tsr_layout_free(l);
}

/* ---- errors ----------------------------------------------------------------------------- */

static char *
wrap(const char *entities)
{
    static const char head[] = "0\nSECTION\n2\nENTITIES\n", tail[] = "0\nENDSEC\n0\nEOF\n";
    size_t n = strlen(head) + strlen(entities) + strlen(tail) + 1;
    char *b = malloc(n);
    cr_assert(b);
    snprintf(b, n, "%s%s%s", head, entities, tail);
    return b;
}

/* Reading `text` (as "bad.dxf") fails with TSR_EINVAL and a message holding each of the
 * `want` strings (NULL-terminated). */
static void
refused(const char *text, ...)
{
    tsr_layout *l;
    tsr_error err = {TSR_OK, ""};
    tsr_status st = read_buf(text, strlen(text), "bad.dxf", 0, &l, &err);
    cr_assert_eq(st, TSR_EINVAL, "accepted: %s", text);
    cr_assert_null(l);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strncmp(err.msg, "bad.dxf: line ", 14) == 0, "%s", err.msg);
    va_list ap;
    va_start(ap, text);
    for (const char *w; (w = va_arg(ap, const char *));)
        cr_assert(strstr(err.msg, w), "'%s' not in '%s'", w, err.msg);
    va_end(ap);
}

static void
refused_entities(const char *entities, const char *w1, const char *w2)
{
    char *b = wrap(entities);
    refused(b, w1, w2, NULL);
    free(b);
}

Test(layouts_dxf_errors, odd_number_of_lines)
{
    refused("0\nSECTION\n2\nENTITIES\n0", "line 6:", "expected its value line", NULL);
}

Test(layouts_dxf_errors, non_numeric_and_out_of_range_group_codes)
{
    refused_entities("X\nfoo\n", "line 5:", "group code 'X' is not a number");
    refused_entities("2000\nfoo\n", "line 5:", "expected 0..1071");
    refused_entities("-5\nfoo\n", "line 5:", "expected 0..1071");
}

Test(layouts_dxf_errors, a_file_without_eof_is_truncated)
{
    refused("0\nSECTION\n2\nENTITIES\n0\nCIRCLE\n10\n0\n20\n0\n40\n1\n", "line 13:",
            "the file ends", NULL);
    refused("0\nSECTION\n2\nENTITIES\n0\nENDSEC\n", "line 7:", "expected a group code", NULL);
}

Test(layouts_dxf_errors, binary_dxf)
{
    refused("AutoCAD Binary DXF\r\n\x1a", "line 1:", "binary DXF is not read", NULL);
}

Test(layouts_dxf_errors, missing_required_groups)
{
    refused_entities("0\nCIRCLE\n8\nL\n10\n1\n20\n2\n", "line 5: CIRCLE: no group 40 (radius)",
                     "expected one");
    refused_entities("0\nLWPOLYLINE\n10\n0\n20\n0\n", "line 5: LWPOLYLINE: no group 90",
                     "vertex count");
    refused_entities("0\nINSERT\n10\n0\n20\n0\n", "line 5: INSERT: no group 2", "block name");
    refused_entities("0\nSOLID\n10\n0\n20\n0\n11\n1\n21\n0\n", "SOLID: no group 12", "corner");
    refused_entities("0\nLWPOLYLINE\n90\n1\n10\n0\n", "line 9: LWPOLYLINE: vertex without",
                     "expected 20 after 10");
    refused_entities("0\nHATCH\n70\n1\n", "line 5: HATCH: no group 91", "boundary path");
    refused("0\nSECTION\n0\nENDSEC\n0\nEOF\n", "line 1: SECTION: no group 2", NULL);
}

Test(layouts_dxf_errors, absurd_counts)
{
    refused_entities("0\nLWPOLYLINE\n90\n5\n70\n1\n10\n0\n20\n0\n10\n1\n20\n0\n10\n1\n20\n1\n",
                     "line 7: LWPOLYLINE: group 90 says 5 vertices", "the 3 the entity has");
    refused_entities("0\nHATCH\n91\n1000000\n92\n2\n", "line 7: HATCH: group 91 says 1000000",
                     "more than the 0");
    refused_entities("0\nHATCH\n91\n1\n92\n2\n72\n0\n73\n1\n93\n99\n10\n0\n20\n0\n",
                     "HATCH: group 93 says 99 vertices", "more than the 1");
    refused_entities("0\nHATCH\n91\n1\n92\n0\n93\n1\n72\n1\n10\n0\n20\n0\n",
                     "HATCH: the entity ends, expected group 11", "end x");
    refused_entities("0\nINSERT\n2\nB\n70\n40000\n", "line 9: INSERT: group 70 value '40000'",
                     "0..32767");
}

Test(layouts_dxf_errors, unknown_blocks)
{
    refused_entities("0\nCIRCLE\n10\n0\n20\n0\n40\n1\n0\nINSERT\n2\nNOPE\n",
                     "line 13: INSERT: block 'NOPE' is not defined", "expected a BLOCK");
}

Test(layouts_dxf_errors, duplicate_blocks)
{
    refused("0\nSECTION\n2\nBLOCKS\n0\nBLOCK\n2\nB\n0\nENDBLK\n0\nBLOCK\n2\nB\n0\nENDBLK\n"
            "0\nENDSEC\n0\nEOF\n",
            "line 11: BLOCK: 'B' is defined twice", NULL);
}

Test(layouts_dxf_errors, coordinates_beyond_the_range_or_not_finite)
{
    refused_entities("0\nCIRCLE\n10\n1e20\n20\n0\n40\n1\n", "line 5: CIRCLE: coordinate 1e+20",
                     "beyond the model's range");
    refused_entities("0\nCIRCLE\n10\nnan\n20\n0\n40\n1\n", "line 7: CIRCLE: group 10 value "
                     "'nan' is not a finite number", "expected");
    refused_entities("0\nCIRCLE\n10\n0\n20\ninf\n40\n1\n", "line 9: CIRCLE: group 20",
                     "not a finite number");
    refused_entities("0\nCIRCLE\n10\n0\n20\n1x\n40\n1\n", "line 9: CIRCLE: group 20 value '1x'",
                     "not a finite number");
    refused_entities("0\nLWPOLYLINE\n90\n3\n70\n1\n10\n0\n20\n0\n42\n1e300\n10\n1\n20\n0\n"
                     "10\n1\n20\n1\n", "LWPOLYLINE: bulge 1e+300", "at most 1e6");
}

Test(layouts_dxf_errors, what_is_not_read)
{
    refused_entities("0\nINSERT\n2\nB\n41\n0\n42\n1\n", "line 5: INSERT: block 'B' scaled by "
                     "x 0, y 1", "non-zero");
    refused_entities("0\nCIRCLE\n10\n0\n20\n0\n40\n1\n210\n1\n220\n0\n230\n1\n",
                     "line 5: CIRCLE: extrusion direction (1, 0, 1)", "tilted");
    refused_entities("0\nSPLINE\n74\n3\n11\n0\n21\n0\n11\n1\n21\n0\n11\n1\n21\n1\n",
                     "line 5: SPLINE: fit points without control points are not read",
                     "expected control points");
    refused("0\nSECTION\n2\nHEADER\n9\n$INSUNITS\n70\n99\n0\nENDSEC\n0\nEOF\n",
            "line 7: SECTION: group 70 value '99'", "0..24", NULL);
}

Test(layouts_dxf_errors, structure)
{
    refused_entities("0\nVERTEX\n10\n0\n20\n0\n", "line 5: VERTEX outside a POLYLINE",
                     "expected");
    refused_entities("0\nPOLYLINE\n70\n1\n0\nVERTEX\n10\n0\n20\n0\n0\nCIRCLE\n",
                     "line 15: POLYLINE (line 5): CIRCLE before its SEQEND", "0/SEQEND");
    refused_entities("0\nINSERT\n2\nB\n66\n1\n0\nLINE\n", "INSERT (line 5): LINE before its "
                     "SEQEND", "0/ATTRIB");
    refused("0\nSECTION\n2\nBLOCKS\n0\nBLOCK\n2\nB\n0\nENDSEC\n0\nEOF\n",
            "line 9: ENDSEC in block 'B'", "expected 0/ENDBLK", NULL);
    refused("0\nCIRCLE\n0\nEOF\n", "line 1: CIRCLE outside a section", NULL);
    refused("10\n0\n0\nEOF\n", "line 1: group 10 where a record starts", NULL);
}

Test(layouts_dxf_errors, non_uniform_inserts_that_cannot_be_flattened)
{
    /* a cycle through a stretched INSERT: it could never be flattened */
    refused("0\nSECTION\n2\nBLOCKS\n"
            "0\nBLOCK\n2\nA\n0\nINSERT\n2\nB\n41\n2\n0\nENDBLK\n"
            "0\nBLOCK\n2\nB\n0\nINSERT\n2\nA\n0\nENDBLK\n"
            "0\nENDSEC\n0\nEOF\n",
            "line 9: INSERT: block 'A' places itself", "expected no cycle", NULL);
    /* arrays of arrays: 30000 x 30000 elements */
    refused("0\nSECTION\n2\nBLOCKS\n"
            "0\nBLOCK\n2\nA\n0\nINSERT\n2\nE\n70\n30000\n71\n30000\n0\nENDBLK\n"
            "0\nBLOCK\n2\nE\n0\nENDBLK\n0\nENDSEC\n"
            "0\nSECTION\n2\nENTITIES\n0\nINSERT\n2\nA\n42\n3\n0\nENDSEC\n0\nEOF\n",
            "INSERT: flattening its non-uniformly scaled block walks more than 16777216",
            "scale the block uniformly", NULL);
}

Test(layouts_dxf_errors, splines_that_do_not_add_up)
{
    /* degree 2, 3 control points: 6 knots, not 5 */
    refused_entities("0\nSPLINE\n71\n2\n72\n5\n73\n3\n40\n0\n40\n0\n40\n0\n40\n1\n40\n1\n"
                     "10\n0\n20\n0\n10\n1\n20\n1\n10\n2\n20\n0\n",
                     "line 5: SPLINE: spline of degree 2 with 3 control points and 5 knots",
                     "degree + 1 knots");
    refused_entities("0\nSPLINE\n71\n1\n72\n9\n73\n2\n40\n0\n40\n0\n40\n1\n40\n1\n"
                     "10\n0\n20\n0\n10\n1\n20\n1\n",
                     "line 5: SPLINE: groups 72/73 say 9 knots and 2 control points",
                     "expected the 4 and 2");
    refused_entities("0\nSPLINE\n71\n1\n72\n4\n73\n2\n40\n0\n40\n2\n40\n1\n40\n1\n"
                     "10\n0\n20\n0\n10\n1\n20\n1\n",
                     "SPLINE: spline knots 2 then 1", "non-decreasing");
    refused_entities("0\nSPLINE\n71\n1\n72\n4\n73\n2\n40\n0\n40\n0\n40\n1\n40\n1\n"
                     "41\n1\n41\n-1\n10\n0\n20\n0\n10\n1\n20\n1\n",
                     "SPLINE: spline weight -1", "expected > 0");
    /* a hatch spline edge of degree 0 */
    refused_entities("0\nHATCH\n91\n1\n92\n1\n93\n1\n72\n4\n94\n0\n",
                     "line 15: HATCH: group 94 value '0'", "1..25");
    refused_entities("0\nHATCH\n91\n1\n92\n1\n93\n1\n72\n4\n94\n1\n73\n0\n74\n0\n"
                     "95\n50\n96\n2\n", "HATCH: group 95 says 50 knots", "more than");
}

Test(layouts_dxf_errors, arcs_finer_than_the_file_allows)
{
    /* a bulge of radius 1e9 mm within 1 nm needs ~1e8 segments */
    refused_entities("0\nLWPOLYLINE\n90\n2\n70\n1\n10\n0\n20\n0\n42\n1\n10\n2e9\n20\n0\n",
                     "LWPOLYLINE: a curve of radius 1e+09 needs", "raise arc_tol");
}

/* ---- what is accepted -------------------------------------------------------------------- */

Test(layouts_dxf, block_cycles_are_left_to_the_index)
{
    const char *text =
        "0\nSECTION\n2\nBLOCKS\n"
        "0\nBLOCK\n2\nA\n0\nINSERT\n2\nB\n0\nENDBLK\n"
        "0\nBLOCK\n2\nB\n0\nINSERT\n2\nA\n0\nENDBLK\n"
        "0\nENDSEC\n0\nEOF\n";
    tsr_layout *l;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(read_buf(text, strlen(text), "cyc.dxf", 0, &l, &err), TSR_OK, "%s", err.msg);
    int64_t a = tsr_lay_cell_find(l, "A"), b = tsr_lay_cell_find(l, "B");
    cr_assert(a >= 0 && b >= 0);
    cr_assert(l->cells[a].nrefs == 1 && l->cells[a].refs[0].cell == b);
    cr_assert(l->cells[b].nrefs == 1 && l->cells[b].refs[0].cell == a);
    tsr_layout_free(l);
}

Test(layouts_dxf, crlf_comments_and_padded_codes)
{
    const char *text = "999\r\nmade by hand\r\n  0\r\nSECTION\r\n  2\r\nENTITIES\r\n"
                       "  0\r\nCIRCLE\r\n  8\r\nM\r\n 10\r\n1.5\r\n 20\r\n-2\r\n 40\r\n0.25\r\n"
                       "  0\r\nENDSEC\r\n  0\r\nEOF\r\n";
    tsr_layout *l;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(read_buf(text, strlen(text), "dir/part.v2.dxf", 0, &l, &err), TSR_OK, "%s",
                 err.msg);
    cr_assert_eq(l->ncells, 1);
    cr_assert_str_eq(l->cells[0].name, "part.v2");
    cr_assert_eq(l->nlayer_names, 1);
    cr_assert_str_eq(l->layer_names[0], "M");
    const tsr_lay_shape *s = shape(l, 0, 0);
    cr_assert_eq(s->kind, TSR_LAY_CIRCLE);
    cr_assert_eq(s->r, 250000);
    cr_assert(l->cells[0].pts[s->first].x == 1500000 && l->cells[0].pts[s->first].y == -2000000);
    tsr_layout_free(l);
}

Test(layouts_dxf, the_arc_tolerance_sets_the_segment_count)
{
    /* a circle of radius 1 mm as two bulges: within 1 um of the arc needs fewer segments
     * than within 1 nm; every vertex lies on the circle (to the grid) and the chords stay
     * within the tolerance */
    const char *e = "0\nLWPOLYLINE\n90\n2\n70\n1\n10\n-1\n20\n0\n42\n1\n10\n1\n20\n0\n42\n1\n";
    char *b = wrap(e);
    size_t n[2];
    const double tol[2] = {1e-6, 1e-9};
    for (int k = 0; k < 2; k++) {
        tsr_layout *l;
        tsr_error err = {TSR_OK, ""};
        cr_assert_eq(read_buf(b, strlen(b), "c.dxf", tol[k], &l, &err), TSR_OK, "%s", err.msg);
        const tsr_lay_shape *s = shape(l, 0, 0);
        n[k] = s->npts;
        const double r = 1e6, t = tol[k] / 1e-9; /* database units */
        for (uint32_t i = 0; i < s->npts; i++) {
            const tsr_lay_pt *p = &l->cells[0].pts[s->first + i];
            const tsr_lay_pt *q = &l->cells[0].pts[s->first + (i + 1) % s->npts];
            cr_assert(fabs(hypot((double)p->x, (double)p->y) - r) <= 1);
            double mx = (p->x + q->x) / 2.0, my = (p->y + q->y) / 2.0;
            cr_assert(r - hypot(mx, my) <= t + 1, "chord %u sags %g", i, r - hypot(mx, my));
        }
        tsr_layout_free(l);
    }
    free(b);
    cr_assert(n[0] >= 8 && n[0] < n[1], "%zu, %zu", n[0], n[1]);
}

Test(layouts_dxf, binary_dxf_is_told_by_content_and_refused_by_name)
{
    static const char bin[] = "AutoCAD Binary DXF\r\n\x1a";
    tsr_layout_format f;
    cr_assert(tsr_layout_sniff((const uint8_t *)bin, sizeof bin, &f));
    cr_assert_eq(f, TSR_LAYOUT_DXF);
}

/* ---- through tsr_layout_open: indexing and queries (layouts/query.c) ---------------------- */

typedef struct sums {
    double area[16];
    size_t n[16];
} sums;

static int
add_item(void *ctx, const tsr_lay_item *it)
{
    sums *s = ctx;
    cr_assert_lt(it->layer, 16);
    double a = 0;
    if (it->n == 0)
        a = M_PI * it->r * it->r;
    for (size_t k = 0; k < it->n; k++) {
        const double *p = it->pts[k], *q = it->pts[(k + 1) % it->n];
        a += (p[0] * q[1] - q[0] * p[1]) / 2;
    }
    s->area[it->layer] += fabs(a) / 1e12;
    s->n[it->layer]++;
    return 0;
}

Test(layouts_dxf, opened_files_index_and_their_queries_see_the_flattened_shapes)
{
    const char *names[] = {"shapes", "blocks", "r12", "inch"};
    for (int f = 0; f < 4; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/layouts/%s.dxf", TSR_SRC_DIR, names[f]);
        tsr_error err = {TSR_OK, ""};
        tsr_layout_opts o = {.arc_tol_m = 1e-12};
        tsr_layout *l = tsr_layout_open(path, &o, &err);
        cr_assert(l, "%s", err.msg);
        cr_assert_eq(l->format, TSR_LAYOUT_DXF);
        uint32_t top;
        cr_assert_eq(tsr_layout_cell(l, NULL, &top, &err), TSR_OK, "%s", err.msg);
        cr_assert_str_eq(l->cells[top].name, names[f]);
        /* the reference walk of this file, summed per layer */
        items it = {0};
        aff id = {1, 0, 0, 1, 0, 0};
        flatten(l, top, id, 0, &it);
        sums want, got;
        memset(&want, 0, sizeof want);
        memset(&got, 0, sizeof got);
        for (size_t i = 0; i < it.n; i++) {
            cr_assert_lt(it.v[i].layer, 16);
            want.area[it.v[i].layer] += it.v[i].circle ? M_PI * it.v[i].r * it.v[i].r
                                                        : it.v[i].area;
            want.n[it.v[i].layer]++;
        }
        free(it.v);
        cr_assert(l->cells[top].has_box);
        cr_assert_eq(tsr_layout_query(l, top, l->cells[top].box, NULL, NULL, add_item, &got,
                                      &err), TSR_OK, "%s", err.msg);
        for (int k = 0; k < 16; k++) {
            cr_assert_eq(got.n[k], want.n[k], "%s: layer %d: %zu shapes, walk %zu", names[f], k,
                         got.n[k], want.n[k]);
            cr_assert_float_eq(got.area[k], want.area[k], 1e-9 * (1 + want.area[k]),
                               "%s: layer %d", names[f], k);
        }
        tsr_layout_stats st;
        cr_assert_eq(tsr_layout_get_stats(l, top, &st, &err), TSR_OK, "%s", err.msg);
        cr_assert_eq(st.cells, l->ncells); /* every block is placed from the top */
        tsr_layout_stats_free(&st);
        tsr_layout_free(l);
    }
}

Test(layouts_dxf, block_cycles_are_refused_when_indexed)
{
    const char *text =
        "0\nSECTION\n2\nBLOCKS\n"
        "0\nBLOCK\n2\nA\n0\nINSERT\n2\nB\n0\nENDBLK\n"
        "0\nBLOCK\n2\nB\n0\nINSERT\n2\nA\n0\nENDBLK\n"
        "0\nENDSEC\n0\nSECTION\n2\nENTITIES\n0\nINSERT\n2\nA\n0\nENDSEC\n0\nEOF\n";
    tsr_error err = {TSR_OK, ""};
    tsr_layout *l = tsr_layout_read((const uint8_t *)text, strlen(text), "cyc.dxf", NULL, &err);
    cr_assert_null(l);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "cyc.dxf") && strstr(err.msg, "cycle"), "%s", err.msg);
}
