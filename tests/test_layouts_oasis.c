/* layouts/oasis.c: the OASIS reader.
 *
 * Truth comes from outside the reader: tests/layouts/oasis_src.py (gdspy) writes a GDSII file
 * and its flattened polygons as gdspy computes them; KLayout (oasis_klayout.py) turns the GDSII
 * into OASIS four ways (CBLOCKs on/off, strict on/off), and reads back oasis_hand.oas (the
 * records KLayout never writes, made byte by byte by oasis_hand.py) into its own flattened
 * polygons. Here the reader's layout is flattened (a small walk of placements and repetitions,
 * independent of layouts/query.c) and both sides are sampled on a grid, layer by layer.
 * Error tests build their bytes here and check the message and the byte offset it names. */
#include "layouts/layouts.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- files ------------------------------------------------------------------------------------ */

static uint8_t *
slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/layouts/%s", TSR_SRC_DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    cr_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static tsr_layout *
oas_read(const uint8_t *b, size_t n, const char *name, tsr_error *err)
{
    tsr_layout *l = calloc(1, sizeof *l);
    cr_assert(l && (l->path = strdup(name)));
    l->format = TSR_LAYOUT_OASIS;
    if (tsr_oasis_read(b, n, NULL, l, err) != TSR_OK) {
        tsr_layout_free(l);
        return NULL;
    }
    return l;
}

static tsr_layout *
oas_file(const char *name)
{
    size_t n;
    uint8_t *b = slurp(name, &n);
    tsr_error err = {0};
    tsr_layout *l = oas_read(b, n, name, &err);
    cr_assert(l, "%s", err.msg);
    free(b);
    return l;
}

static uint32_t
cell_named(const tsr_layout *l, const char *name)
{
    for (size_t i = 0; i < l->ncells; i++)
        if (strcmp(l->cells[i].name, name) == 0)
            return (uint32_t)i;
    cr_assert_fail("no cell %s", name);
    return 0;
}

/* ---- flattening ------------------------------------------------------------------------------ */

typedef struct fpoly {
    uint32_t layer, dt;
    size_t n;
    double (*p)[2];
} fpoly;

typedef struct fcirc {
    uint32_t layer, dt;
    double x, y, r;
} fcirc;

typedef struct flat {
    fpoly *polys;
    size_t n, cap;
    fcirc *circ;
    size_t nc, capc;
    uint64_t texts;
} flat;

/* x' = a x + b y + e, y' = c x + d y + f */
typedef struct aff {
    double a, b, c, d, e, f;
} aff;

static aff
compose(aff m, aff k) /* m after k */
{
    return (aff){m.a * k.a + m.b * k.c, m.a * k.b + m.b * k.d, m.c * k.a + m.d * k.c,
                 m.c * k.b + m.d * k.d, m.a * k.e + m.b * k.f + m.e, m.c * k.e + m.d * k.f + m.f};
}

static void
apply(aff m, double x, double y, double out[2])
{
    out[0] = m.a * x + m.b * y + m.e;
    out[1] = m.c * x + m.d * y + m.f;
}

static void
push_poly(flat *f, uint32_t layer, uint32_t dt, size_t n)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 64;
        f->polys = realloc(f->polys, f->cap * sizeof *f->polys);
    }
    f->polys[f->n++] = (fpoly){layer, dt, n, malloc(n * sizeof(double[2]))};
}

/* The displacements of repetition `rep` (0: just (0, 0)). */
static size_t
disps(const tsr_layout *l, uint64_t rep, double (**out)[2])
{
    if (rep == 0) {
        *out = calloc(1, sizeof **out);
        return 1;
    }
    const tsr_lay_rep *r = &l->reps[rep - 1];
    if (r->count) {
        *out = malloc(r->count * sizeof **out);
        for (uint64_t i = 0; i < r->count; i++)
            (*out)[i][0] = (double)l->disp[r->off + i][0], (*out)[i][1] = (double)l->disp[r->off + i][1];
        return r->count;
    }
    cr_assert(r->n >= 1 && r->m >= 1 && r->n * r->m < 100000);
    *out = malloc(r->n * r->m * sizeof **out);
    size_t k = 0;
    for (uint64_t j = 0; j < r->m; j++)
        for (uint64_t i = 0; i < r->n; i++, k++)
            (*out)[k][0] = (double)i * (double)r->u[0] + (double)j * (double)r->v[0],
            (*out)[k][1] = (double)i * (double)r->u[1] + (double)j * (double)r->v[1];
    return k;
}

static void
walk(const tsr_layout *l, uint32_t cell, aff m, flat *f, int depth)
{
    cr_assert(depth < 32, "placements nest too deep");
    const tsr_lay_cell *c = &l->cells[cell];
    f->texts += c->ntexts;
    for (size_t i = 0; i < c->nshapes; i++) {
        const tsr_lay_shape *s = &c->shapes[i];
        const tsr_lay_pt *p = c->pts + s->first;
        double (*d)[2];
        size_t nd = disps(l, s->rep, &d);
        for (size_t k = 0; k < nd; k++) {
            aff mk = compose(m, (aff){1, 0, 0, 1, d[k][0], d[k][1]});
            if (s->kind == TSR_LAY_CIRCLE) {
                if (f->nc == f->capc) {
                    f->capc = f->capc ? 2 * f->capc : 16;
                    f->circ = realloc(f->circ, f->capc * sizeof *f->circ);
                }
                double q[2];
                apply(mk, (double)p[0].x, (double)p[0].y, q);
                f->circ[f->nc++] = (fcirc){s->layer, s->datatype, q[0], q[1],
                                           (double)s->r * sqrt(fabs(mk.a * mk.d - mk.b * mk.c))};
            } else if (s->kind == TSR_LAY_BOX) {
                push_poly(f, s->layer, s->datatype, 4);
                double x0 = (double)p[0].x, y0 = (double)p[0].y, x1 = (double)p[1].x,
                       y1 = (double)p[1].y;
                apply(mk, x0, y0, f->polys[f->n - 1].p[0]);
                apply(mk, x1, y0, f->polys[f->n - 1].p[1]);
                apply(mk, x1, y1, f->polys[f->n - 1].p[2]);
                apply(mk, x0, y1, f->polys[f->n - 1].p[3]);
            } else {
                cr_assert(s->kind == TSR_LAY_POLYGON && s->npts >= 3);
                push_poly(f, s->layer, s->datatype, s->npts);
                for (uint32_t j = 0; j < s->npts; j++)
                    apply(mk, (double)p[j].x, (double)p[j].y, f->polys[f->n - 1].p[j]);
            }
        }
        free(d);
    }
    for (size_t i = 0; i < c->nrefs; i++) {
        const tsr_lay_ref *r = &c->refs[i];
        cr_assert(r->cell < l->ncells);
        double a = r->xf.angle * M_PI / 180, co = cos(a), si = sin(a), g = r->xf.mag;
        if (fmod(r->xf.angle, 90) == 0) { /* exact quarter turns */
            long q = ((long)(r->xf.angle / 90) % 4 + 4) % 4;
            co = q == 0 ? 1 : q == 2 ? -1 : 0;
            si = q == 1 ? 1 : q == 3 ? -1 : 0;
        }
        double fy = r->xf.mirror ? -1 : 1;
        double (*d)[2];
        size_t nd = disps(l, r->rep, &d);
        for (size_t k = 0; k < nd; k++) {
            aff x = {g * co, -g * si * fy, g * si, g * co * fy, (double)r->xf.dx + d[k][0],
                     (double)r->xf.dy + d[k][1]};
            walk(l, r->cell, compose(m, x), f, depth + 1);
        }
        free(d);
    }
}

static flat
flatten(const tsr_layout *l, const char *top)
{
    flat f = {0};
    walk(l, cell_named(l, top), (aff){1, 0, 0, 1, 0, 0}, &f, 0);
    return f;
}

static void
flat_free(flat *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->polys[i].p);
    free(f->polys);
    free(f->circ);
}

/* A text dump of polygons ("poly layer dt n x y ...", "texts n"): gdspy's or KLayout's. */
static flat
load_dump(const char *name)
{
    size_t len;
    char *t = (char *)slurp(name, &len);
    t[len] = 0;
    flat f = {0};
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned layer, dt;
        size_t n;
        int off;
        unsigned long long texts;
        if (sscanf(line, "texts %llu", &texts) == 1) {
            f.texts = texts;
        } else if (sscanf(line, "poly %u %u %zu%n", &layer, &dt, &n, &off) == 3) {
            push_poly(&f, layer, dt, n);
            char *q = line + off;
            for (size_t i = 0; i < n; i++)
                for (int k = 0; k < 2; k++)
                    f.polys[f.n - 1].p[i][k] = strtod(q, &q);
        }
    }
    free(t);
    return f;
}

/* ---- comparing by sampling -------------------------------------------------------------------- */

typedef struct grid {
    double x0, y0, step;
    size_t nx, ny;
    uint8_t *a, *b;
} grid;

/* Mark in m the samples inside polygon p (nonzero winding), row by row. */
static void
fill_poly(const grid *g, uint8_t *m, const fpoly *p)
{
    double ymin = INFINITY, ymax = -INFINITY;
    for (size_t i = 0; i < p->n; i++)
        ymin = fmin(ymin, p->p[i][1]), ymax = fmax(ymax, p->p[i][1]);
    double *xs = malloc(2 * p->n * sizeof *xs);
    long j0 = (long)floor((ymin - g->y0) / g->step) - 1, j1 = (long)ceil((ymax - g->y0) / g->step) + 1;
    for (long j = j0 < 0 ? 0 : j0; j <= j1 && j < (long)g->ny; j++) {
        double y = g->y0 + ((double)j + 0.5) * g->step;
        size_t k = 0;
        for (size_t i = 0; i < p->n; i++) {
            const double *a = p->p[i], *b = p->p[(i + 1) % p->n];
            if ((a[1] <= y) != (b[1] <= y)) {
                double x = a[0] + (y - a[1]) * (b[0] - a[0]) / (b[1] - a[1]);
                /* the winding: +1 up, -1 down, coded in the low bit of a pair */
                xs[2 * k] = x;
                xs[2 * k + 1] = b[1] > a[1] ? 1 : -1;
                k++;
            }
        }
        /* sort crossings by x (pairs) */
        for (size_t u = 1; u < k; u++)
            for (size_t v = u; v > 0 && xs[2 * v] < xs[2 * (v - 1)]; v--) {
                double t0 = xs[2 * v], t1 = xs[2 * v + 1];
                xs[2 * v] = xs[2 * (v - 1)], xs[2 * v + 1] = xs[2 * (v - 1) + 1];
                xs[2 * (v - 1)] = t0, xs[2 * (v - 1) + 1] = t1;
            }
        int wind = 0;
        for (size_t u = 0; u + 1 < k + 1 && u < k; u++) {
            wind += (int)xs[2 * u + 1];
            if (wind != 0 && u + 1 < k) {
                double xa = xs[2 * u], xb = xs[2 * (u + 1)];
                long i0 = (long)ceil((xa - g->x0) / g->step - 0.5);
                long i1 = (long)floor((xb - g->x0) / g->step - 0.5);
                for (long i = i0 < 0 ? 0 : i0; i <= i1 && i < (long)g->nx; i++)
                    m[(size_t)j * g->nx + (size_t)i] = 1;
            }
        }
    }
    free(xs);
}

static void
fill_circ(const grid *g, uint8_t *m, const fcirc *c)
{
    for (size_t j = 0; j < g->ny; j++)
        for (size_t i = 0; i < g->nx; i++) {
            double x = g->x0 + ((double)i + 0.5) * g->step - c->x;
            double y = g->y0 + ((double)j + 0.5) * g->step - c->y;
            if (x * x + y * y < c->r * c->r)
                m[j * g->nx + i] = 1;
        }
}

/* Every (layer, datatype) of either side sampled on a grid of about `cells` samples along the
 * longer side of their joint box. Samples within `band` database units of an edge of x may
 * differ (one side keeps fractions the other rounded away: GDSII and OASIS store integers,
 * gdspy's flatten does not), and `tol` more. Returns the number of layers compared. */
static size_t
same_coverage(const flat *x, const flat *y, double cells, double band, size_t tol)
{
    uint64_t keys[256];
    size_t nk = 0;
    const flat *sides[2] = {x, y};
    for (int s = 0; s < 2; s++) {
        for (size_t i = 0; i < sides[s]->n + sides[s]->nc; i++) {
            uint64_t k = i < sides[s]->n
                             ? (uint64_t)sides[s]->polys[i].layer << 32 | sides[s]->polys[i].dt
                             : (uint64_t)sides[s]->circ[i - sides[s]->n].layer << 32 |
                                   sides[s]->circ[i - sides[s]->n].dt;
            size_t j = 0;
            while (j < nk && keys[j] != k)
                j++;
            if (j == nk) {
                cr_assert(nk < 256);
                keys[nk++] = k;
            }
        }
    }
    for (size_t kk = 0; kk < nk; kk++) {
        uint32_t layer = (uint32_t)(keys[kk] >> 32), dt = (uint32_t)keys[kk];
        double bx0 = INFINITY, by0 = INFINITY, bx1 = -INFINITY, by1 = -INFINITY;
        size_t count[2] = {0, 0};
        double perimeter = 0;
        for (int s = 0; s < 2; s++) {
            for (size_t i = 0; i < sides[s]->n; i++) {
                const fpoly *p = &sides[s]->polys[i];
                if (p->layer != layer || p->dt != dt)
                    continue;
                count[s]++;
                for (size_t j = 0; s == 0 && j < p->n; j++)
                    perimeter += hypot(p->p[(j + 1) % p->n][0] - p->p[j][0],
                                       p->p[(j + 1) % p->n][1] - p->p[j][1]);
                for (size_t j = 0; j < p->n; j++) {
                    bx0 = fmin(bx0, p->p[j][0]), bx1 = fmax(bx1, p->p[j][0]);
                    by0 = fmin(by0, p->p[j][1]), by1 = fmax(by1, p->p[j][1]);
                }
            }
            for (size_t i = 0; i < sides[s]->nc; i++) {
                const fcirc *c = &sides[s]->circ[i];
                if (c->layer != layer || c->dt != dt)
                    continue;
                count[s]++;
                bx0 = fmin(bx0, c->x - c->r), bx1 = fmax(bx1, c->x + c->r);
                by0 = fmin(by0, c->y - c->r), by1 = fmax(by1, c->y + c->r);
            }
        }
        cr_assert(count[0] > 0 && count[1] > 0, "layer %u/%u: %zu shapes on one side, %zu on the "
                  "other", layer, dt, count[0], count[1]);
        grid g;
        /* an odd step, so that samples do not sit on the integer grid of the edges */
        g.step = fmax(bx1 - bx0, by1 - by0) / cells * 1.0137;
        g.x0 = bx0 - 2 * g.step, g.y0 = by0 - 2 * g.step;
        g.nx = (size_t)((bx1 - g.x0) / g.step) + 3, g.ny = (size_t)((by1 - g.y0) / g.step) + 3;
        g.a = calloc(g.nx * g.ny, 1), g.b = calloc(g.nx * g.ny, 1);
        for (int s = 0; s < 2; s++) {
            uint8_t *m = s ? g.b : g.a;
            for (size_t i = 0; i < sides[s]->n; i++)
                if (sides[s]->polys[i].layer == layer && sides[s]->polys[i].dt == dt)
                    fill_poly(&g, m, &sides[s]->polys[i]);
            for (size_t i = 0; i < sides[s]->nc; i++)
                if (sides[s]->circ[i].layer == layer && sides[s]->circ[i].dt == dt)
                    fill_circ(&g, m, &sides[s]->circ[i]);
        }
        size_t diff = 0, on = 0;
        for (size_t i = 0; i < g.nx * g.ny; i++)
            diff += g.a[i] != g.b[i], on += g.a[i];
        cr_assert(on > 0, "layer %u/%u covers nothing", layer, dt);
        double allowed = (double)tol + perimeter * 2 * band / (g.step * g.step);
        cr_assert(diff <= allowed, "layer %u/%u: %zu of %zu samples differ (%zu covered, %.1f "
                  "allowed)", layer, dt, diff, g.nx * g.ny, on, allowed);
        free(g.a);
        free(g.b);
    }
    return nk;
}

/* ---- KLayout's files against gdspy's flattening ---------------------------------------------- */

static const char *klayout_files[] = {"oasis_plain_loose.oas", "oasis_plain_strict.oas",
                                      "oasis_cblock_loose.oas", "oasis_cblock_strict.oas"};

Test(layouts_oasis, klayout_files_flatten_to_gdspy_polygons)
{
    flat truth = load_dump("oasis_src.txt");
    cr_assert(truth.n > 100);
    for (size_t i = 0; i < 4; i++) {
        tsr_layout *l = oas_file(klayout_files[i]);
        cr_assert_float_eq(l->dbu_m, 1e-9, 1e-20, "%s", klayout_files[i]);
        cr_assert_eq(l->ncells, 4, "%s: %zu cells", klayout_files[i], l->ncells);
        flat f = flatten(l, "TOP");
        cr_assert_eq(f.texts, truth.texts, "%s: %llu texts, gdspy %llu", klayout_files[i],
                     (unsigned long long)f.texts, (unsigned long long)truth.texts);
        /* one polygon a shape, but for the sharp path on 13 (pieces: docs/oasis.md) */
        size_t nf = 0, nt = 0;
        for (size_t k = 0; k < f.n; k++)
            nf += f.polys[k].layer != 13;
        for (size_t k = 0; k < truth.n; k++)
            nt += truth.polys[k].layer != 13;
        cr_assert_eq(nf, nt, "%s: %zu polygons, gdspy %zu", klayout_files[i], nf, nt);
        cr_assert_eq(same_coverage(&f, &truth, 3000, 1, 3), 12);
        flat_free(&f);
        tsr_layout_free(l);
    }
    flat_free(&truth);
}

/* The repetitions KLayout makes of arrays and of repeated shapes stay repetitions. */
Test(layouts_oasis, klayout_arrays_stay_repetitions)
{
    for (size_t i = 0; i < 4; i++) {
        tsr_layout *l = oas_file(klayout_files[i]);
        const tsr_lay_cell *row = &l->cells[cell_named(l, "ROW")];
        cr_assert_lt(row->nshapes, 20, "%s: ROW holds %zu shapes", klayout_files[i], row->nshapes);
        bool lattice2d = false, list = false, skew = false;
        for (size_t k = 0; k < l->nreps; k++) {
            const tsr_lay_rep *r = &l->reps[k];
            lattice2d |= r->n > 1 && r->m > 1;
            list |= r->count > 0;
            skew |= r->n > 1 && r->m > 1 && r->u[1] != 0 && r->v[0] != 0;
        }
        cr_assert(lattice2d && list && skew, "%s", klayout_files[i]);
        tsr_layout_free(l);
    }
}

Test(layouts_oasis, klayout_circles_stay_circles)
{
    tsr_layout *l = oas_file("oasis_circles.oas");
    flat f = flatten(l, "CIRCLES");
    flat truth = {0};
    size_t len;
    char *t = (char *)slurp("oasis_circles.txt", &len);
    t[len] = 0;
    size_t n = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned layer, dt;
        long long x, y, r;
        if (sscanf(line, "circle %u %u %lld %lld %lld", &layer, &dt, &x, &y, &r) != 5)
            continue;
        n++;
        bool found = false;
        for (size_t i = 0; i < f.nc; i++)
            found |= f.circ[i].layer == layer && f.circ[i].dt == dt && f.circ[i].x == (double)x &&
                     f.circ[i].y == (double)y && f.circ[i].r == (double)r;
        cr_assert(found, "circle %u/%u at %lld, %lld, r %lld not read", layer, dt, x, y, r);
    }
    cr_assert_eq(n, 9);
    cr_assert_eq(f.nc, n);
    cr_assert_eq(f.n, 0);
    free(t);
    flat_free(&truth);
    flat_free(&f);
    tsr_layout_free(l);
}

/* ---- records KLayout does not write, against KLayout's reading of them ------------------------ */

Test(layouts_oasis, hand_made_records_flatten_as_klayout_reads_them)
{
    tsr_layout *l = oas_file("oasis_hand.oas");
    flat truth = load_dump("oasis_hand.txt");
    flat f = flatten(l, "HAND");
    cr_assert_eq(f.texts, truth.texts, "%llu texts, KLayout %llu", (unsigned long long)f.texts,
                 (unsigned long long)truth.texts);
    cr_assert_eq(f.n, truth.n, "%zu polygons, KLayout %zu", f.n, truth.n);
    /* 1/0, 1/2, 1/5 (the CBLOCK's), 2-8 and SUB2's 9 (XGEOMETRY's 9 is not geometry) */
    cr_assert_eq(same_coverage(&f, &truth, 4000, 0, 3), 11);
    flat_free(&f);
    flat_free(&truth);
    tsr_layout_free(l);
}

Test(layouts_oasis, hand_made_layout_keeps_what_the_records_say)
{
    tsr_layout *l = oas_file("oasis_hand.oas");
    cr_assert_eq(l->ncells, 3);
    const tsr_lay_cell *h = &l->cells[cell_named(l, "HAND")];
    uint32_t sub = cell_named(l, "SUB"), sub2 = cell_named(l, "SUB2");
    /* the cells by number got the names the CELLNAME records at the end gave them */
    bool places_sub = false, places_sub2 = false;
    for (size_t i = 0; i < h->nrefs; i++)
        places_sub |= h->refs[i].cell == sub, places_sub2 |= h->refs[i].cell == sub2;
    cr_assert(places_sub && places_sub2);
    /* PLACEMENT 18: magnification 1/2 (reciprocal), angle 30 (float), then 3/2 and -45 flipped */
    size_t k = 0;
    while (k < h->nrefs && h->refs[k].xf.mag == 1)
        k++;
    cr_assert_lt(k + 1, h->nrefs);
    cr_assert_float_eq(h->refs[k].xf.mag, 0.5, 1e-15);
    cr_assert_float_eq(h->refs[k].xf.angle, 30, 1e-6);
    cr_assert_float_eq(h->refs[k + 1].xf.mag, 1.5, 1e-15);
    cr_assert_float_eq(h->refs[k + 1].xf.angle, -45, 1e-15);
    cr_assert(h->refs[k + 1].xf.mirror);
    /* repetition type 0 reuses the repetition before it */
    size_t reused = 0;
    for (size_t i = 1; i < h->nshapes; i++)
        reused += h->shapes[i].rep && h->shapes[i].rep == h->shapes[i - 1].rep;
    cr_assert_geq(reused, 1);
    tsr_layout_free(l);
}

/* ---- bytes made here ----------------------------------------------------------------------- */

typedef struct ob {
    uint8_t b[8192];
    size_t n;
} ob;

static void
by(ob *o, uint8_t v)
{
    cr_assert(o->n < sizeof o->b);
    o->b[o->n++] = v;
}

static void
uu(ob *o, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        by(o, c | (v ? 0x80 : 0));
    } while (v);
}

static void
ss(ob *o, int64_t v)
{
    uu(o, v < 0 ? ((uint64_t)-v << 1) | 1 : (uint64_t)v << 1);
}

static void
str(ob *o, const char *s)
{
    uu(o, strlen(s));
    for (; *s; s++)
        by(o, (uint8_t)*s);
}

/* magic, START (1 nm, table offsets here, all zero), and CELL "T" */
static void
head(ob *o)
{
    o->n = 0;
    for (const char *m = "%SEMI-OASIS\r\n"; *m; m++)
        by(o, (uint8_t)*m);
    by(o, 1);
    str(o, "1.0");
    uu(o, 0);
    uu(o, 1000);
    uu(o, 0);
    for (int i = 0; i < 12; i++)
        by(o, 0);
    by(o, 14);
    str(o, "T");
}

static void
tail(ob *o)
{
    by(o, 2);
    uu(o, 0);
    uu(o, 0);
}

/* RECTANGLE on 1/0, w x h at x, y */
static void
rect(ob *o, int64_t w, int64_t h, int64_t x, int64_t y)
{
    by(o, 20);
    by(o, 0x7b);
    uu(o, 1);
    uu(o, 0);
    uu(o, (uint64_t)w);
    uu(o, (uint64_t)h);
    ss(o, x);
    ss(o, y);
}

#define HEAD_LEN 34 /* bytes of head(): 13 + 1 + 4 + 2 + 1 + 12 + 1 */

static void
fails(const ob *o, const char *want1, const char *want2)
{
    tsr_error err = {0};
    tsr_layout *l = oas_read(o->b, o->n, "t.oas", &err);
    cr_assert_null(l, "read, expected \"%s\"", want1);
    cr_assert_eq(err.status, TSR_EINVAL, "%s", err.msg);
    cr_assert(strncmp(err.msg, "t.oas: byte ", 12) == 0, "%s", err.msg);
    cr_assert(strstr(err.msg, want1), "\"%s\" lacks \"%s\"", err.msg, want1);
    if (want2)
        cr_assert(strstr(err.msg, want2), "\"%s\" lacks \"%s\"", err.msg, want2);
}

static tsr_layout *
reads(const ob *o)
{
    tsr_error err = {0};
    tsr_layout *l = oas_read(o->b, o->n, "t.oas", &err);
    cr_assert(l, "%s", err.msg);
    return l;
}

Test(layouts_oasis, head_is_what_the_tests_assume)
{
    ob o;
    head(&o);
    cr_assert_eq(o.n, HEAD_LEN + 3);
    rect(&o, 10, 20, -5, 7);
    tail(&o);
    tsr_layout *l = reads(&o);
    cr_assert_eq(l->ncells, 1);
    cr_assert_eq(l->cells[0].nshapes, 1);
    cr_assert_eq(l->cells[0].pts[0].x, -5);
    cr_assert_eq(l->cells[0].pts[1].y, 27);
    tsr_layout_free(l);
}

Test(layouts_oasis, every_truncation_of_a_file_fails_with_a_place)
{
    for (size_t f = 0; f < 4; f++) {
        size_t n;
        uint8_t *b = slurp(klayout_files[f], &n);
        for (size_t k = 0; k < n; k++) {
            uint8_t *c = malloc(k ? k : 1);
            memcpy(c, b, k);
            tsr_error err = {0};
            tsr_layout *l = oas_read(c, k, "cut.oas", &err);
            cr_assert_null(l, "%s cut to %zu bytes was read", klayout_files[f], k);
            cr_assert_eq(err.status, TSR_EINVAL);
            cr_assert(strncmp(err.msg, "cut.oas: byte ", 14) == 0, "%s", err.msg);
            if (k > 300)
                cr_assert(strstr(err.msg, "ends inside") || strstr(err.msg, "without an END") ||
                              strstr(err.msg, "deflate data end") ||
                              strstr(err.msg, "bytes left"),
                          "%zu: %s", k, err.msg);
            free(c);
        }
        free(b);
    }
}

Test(layouts_oasis, bad_magic_and_version)
{
    ob o;
    head(&o);
    o.b[1] = 'X';
    fails(&o, "byte 0: ", "no OASIS magic");
    head(&o);
    o.b[15] = '2'; /* "1.0" -> "2.0" */
    tail(&o);
    fails(&o, "byte 14: START: version \"2.0\", expected \"1.0\"", NULL);
    head(&o);
    o.b[13] = 3; /* CELLNAME where START must be */
    fails(&o, "byte 13: START: record id 3, expected START (1)", NULL);
    head(&o);
    o.b[19] = 0x80; /* unit 0, in two bytes */
    o.b[20] = 0;
    fails(&o, "unit 0 grid steps per micron", NULL);
}

Test(layouts_oasis, unknown_record_id)
{
    ob o;
    head(&o);
    by(&o, 35);
    tail(&o);
    fails(&o, "byte 37: unknown record id 35, expected 0-34", NULL);
}

Test(layouts_oasis, varint_beyond_64_bits_fails_but_long_zeros_read)
{
    ob o;
    head(&o);
    by(&o, 20);
    by(&o, 0x7b);
    uu(&o, 1);
    uu(&o, 0);
    for (int i = 0; i < 9; i++)
        by(&o, 0xff);
    by(&o, 0x02); /* bit 64 */
    fails(&o, "byte 41: RECTANGLE: width overflows 64 bits", NULL);
    /* 2^63 - 1 in ten bytes reads (and is then beyond the coordinate range) */
    o.n -= 10;
    for (int i = 0; i < 8; i++)
        by(&o, 0xff);
    by(&o, 0x7f);
    fails(&o, "byte 41: RECTANGLE: width 9223372036854775807 beyond the coordinate range", NULL);
    /* a width written as 5 followed by many zero groups is 5 */
    head(&o);
    by(&o, 20);
    by(&o, 0x7b);
    uu(&o, 1);
    uu(&o, 0);
    by(&o, 0x85);
    for (int i = 0; i < 20; i++)
        by(&o, 0x80);
    by(&o, 0);
    uu(&o, 3);
    ss(&o, 0);
    ss(&o, 0);
    tail(&o);
    tsr_layout *l = reads(&o);
    cr_assert_eq(l->cells[0].pts[1].x, 5);
    tsr_layout_free(l);
}

Test(layouts_oasis, absurd_counts_fail_before_allocating)
{
    ob o;
    head(&o);
    by(&o, 21); /* POLYGON with a point list of 2^40 points */
    by(&o, 0x23);
    uu(&o, 1);
    uu(&o, 0);
    uu(&o, 4);
    uu(&o, (uint64_t)1 << 40);
    uu(&o, 3);
    tail(&o);
    fails(&o, "POLYGON: point list of 1099511627776 points, longer than the", "bytes left");
    head(&o);
    rect(&o, 1, 1, 0, 0);
    o.b[o.n - 7] |= 0x04; /* R */
    uu(&o, 10);           /* type 10 with 2^50 displacements */
    uu(&o, (uint64_t)1 << 50);
    tail(&o);
    fails(&o, "RECTANGLE: repetition of 1125899906842626 elements, longer than the", NULL);
    head(&o);
    by(&o, 19); /* TEXT with a string of 2^30 bytes */
    by(&o, 0x40);
    uu(&o, (uint64_t)1 << 30);
    tail(&o);
    fails(&o, "byte 39: TEXT: text string of 1073741824 bytes, longer than the", NULL);
    head(&o);
    by(&o, 28); /* PROPERTY with 2^20 values */
    by(&o, 0xf4);
    str(&o, "P");
    uu(&o, 1 << 20);
    tail(&o);
    fails(&o, "PROPERTY: 1048576 property values, more than the", NULL);
}

Test(layouts_oasis, modal_variables_used_before_set)
{
    struct {
        uint8_t rec[8];
        size_t n;
        const char *want;
    } cases[] = {
        {{20, 0x60, 5, 5}, 4, "RECTANGLE: uses the modal variable layer before"},
        {{20, 0x61, 1, 5, 5}, 5, "RECTANGLE: uses the modal variable datatype before"},
        {{20, 0x83, 1, 0}, 4, "uses the modal variable geometry-w before"},
        {{21, 0x03, 1, 0}, 4, "POLYGON: uses the modal variable polygon-point-list before"},
        {{17, 0x30, 0, 0}, 4, "PLACEMENT: uses the modal variable placement-cell before"},
        {{19, 0x03, 1, 0}, 4, "TEXT: uses the modal variable text-string before"},
        {{27, 0x03, 1, 0}, 4, "CIRCLE: uses the modal variable circle-radius before"},
        {{26, 0x63, 1, 0, 4, 4}, 6, "CTRAPEZOID: uses the modal variable ctrapezoid-type before"},
        {{22, 0x63, 1, 0, 4, 0, 0}, 7, "PATH: uses the modal variable path-start-extension"},
        {{20, 0x7f, 1, 0, 1, 1, 0, 0}, 8, "RECTANGLE: uses the modal variable repetition before"},
        {{28, 0x00}, 2, "PROPERTY: uses the modal variable last-property-name before"},
        {{29}, 1, "PROPERTY: uses the modal variable last-property-name before"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ob o;
        head(&o);
        for (size_t i = 0; i < cases[c].n; i++)
            by(&o, cases[c].rec[i]);
        if (cases[c].rec[0] == 20 && cases[c].rec[1] == 0x7f)
            by(&o, 0); /* repetition type 0 */
        tail(&o);
        fails(&o, "byte 37: ", cases[c].want);
    }
}

Test(layouts_oasis, repetition_dimensions_that_overflow)
{
    ob o;
    head(&o);
    rect(&o, 1, 1, 0, 0);
    o.b[o.n - 7] |= 0x04;
    uu(&o, 2);
    uu(&o, UINT64_MAX);
    uu(&o, 1);
    tail(&o);
    fails(&o, "RECTANGLE: repetition dimension 18446744073709551615 overflows", NULL);
    head(&o);
    rect(&o, 1, 1, 0, 0);
    o.b[o.n - 7] |= 0x04;
    uu(&o, 1);
    uu(&o, (uint64_t)1 << 33);
    uu(&o, (uint64_t)1 << 33);
    uu(&o, 0);
    uu(&o, 0);
    tail(&o);
    fails(&o, "repetition of 8589934594 x 8589934594 elements overflows 64 bits", NULL);
    head(&o);
    rect(&o, 1, 1, 0, 0);
    o.b[o.n - 7] |= 0x04;
    uu(&o, 3);
    uu(&o, (uint64_t)1 << 40);
    uu(&o, (uint64_t)1 << 20);
    tail(&o);
    fails(&o, "reaches beyond the coordinate range", NULL);
    /* a huge lattice inside the range is kept as it is */
    head(&o);
    rect(&o, 1, 1, 0, 0);
    o.b[o.n - 7] |= 0x04;
    uu(&o, 1);
    uu(&o, (uint64_t)1 << 24);
    uu(&o, (uint64_t)1 << 24);
    uu(&o, 4);
    uu(&o, 4);
    tail(&o);
    tsr_layout *l = reads(&o);
    cr_assert_eq(l->nreps, 1);
    cr_assert_eq(l->reps[0].n, ((uint64_t)1 << 24) + 2);
    cr_assert_eq(l->reps[0].v[1], 4);
    tsr_layout_free(l);
}

Test(layouts_oasis, coordinates_beyond_the_range)
{
    ob o;
    head(&o);
    rect(&o, 1, 1, (int64_t)1 << 53, 0);
    tail(&o);
    fails(&o, "RECTANGLE: x beyond the coordinate range", NULL);
    head(&o);
    rect(&o, 1, 1, TSR_LAYOUT_COORD_MAX, 0);
    tail(&o);
    fails(&o, "RECTANGLE: x + width beyond the coordinate range", NULL);
    head(&o); /* relative mode: two steps of 2^51 + 2^51 + 2^51 */
    by(&o, 16);
    for (int i = 0; i < 3; i++)
        rect(&o, 0, 1, (int64_t)1 << 51, 0);
    tail(&o);
    fails(&o, "RECTANGLE: x beyond the coordinate range", NULL);
    head(&o);
    rect(&o, 1, 1, TSR_LAYOUT_COORD_MAX - 1, -TSR_LAYOUT_COORD_MAX);
    tail(&o);
    tsr_layout *l = reads(&o);
    tsr_layout_free(l);
}

static void
cblock(ob *o, const uint8_t *raw, size_t n, uint64_t declared)
{
    uint8_t comp[4096];
    z_stream z = {0};
    cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)raw;
    z.avail_in = (uInt)n;
    z.next_out = comp;
    z.avail_out = sizeof comp;
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t cn = sizeof comp - z.avail_out;
    deflateEnd(&z);
    by(o, 34);
    uu(o, 0);
    uu(o, declared);
    uu(o, cn);
    for (size_t i = 0; i < cn; i++)
        by(o, comp[i]);
}

Test(layouts_oasis, cblock_sizes_must_match)
{
    ob in = {0}, o;
    rect(&in, 5, 6, 7, 8);
    rect(&in, 1, 2, 3, 4);
    head(&o);
    cblock(&o, in.b, in.n, in.n);
    tail(&o);
    tsr_layout *l = reads(&o);
    cr_assert_eq(l->cells[0].nshapes, 2);
    tsr_layout_free(l);
    head(&o);
    cblock(&o, in.b, in.n, in.n - 1);
    tail(&o);
    fails(&o, "byte 37: CBLOCK: inflates to more than the declared 15 bytes", NULL);
    head(&o);
    cblock(&o, in.b, in.n, in.n + 1);
    tail(&o);
    fails(&o, "byte 37: CBLOCK: inflates to 16 bytes, declared 17", NULL);
    head(&o);
    cblock(&o, in.b, in.n, (uint64_t)1 << 40); /* never allocated up front */
    tail(&o);
    fails(&o, "inflates to 16 bytes, declared 1099511627776", NULL);
    /* an error inside names the CBLOCK and the inflated byte */
    ob bad = {0};
    rect(&bad, 5, 6, 7, 8);
    by(&bad, 40);
    head(&o);
    cblock(&o, bad.b, bad.n, bad.n);
    tail(&o);
    fails(&o, "byte 37: CBLOCK: inflated byte 8: unknown record id 40", NULL);
    /* no CBLOCK in a CBLOCK */
    ob outer = {0};
    cblock(&outer, in.b, in.n, in.n);
    head(&o);
    cblock(&o, outer.b, outer.n, outer.n);
    tail(&o);
    fails(&o, "CBLOCK: a CBLOCK inside a CBLOCK", NULL);
    /* corrupt deflate data */
    head(&o);
    cblock(&o, in.b, in.n, in.n);
    o.b[o.n - 3] ^= 0xff;
    o.b[o.n - 4] ^= 0x55;
    tail(&o);
    tsr_error err = {0};
    cr_assert_null(oas_read(o.b, o.n, "t.oas", &err));
    cr_assert(strstr(err.msg, "t.oas: byte 37: CBLOCK: "), "%s", err.msg);
}

Test(layouts_oasis, cells_and_names_that_do_not_resolve)
{
    ob o;
    head(&o);
    by(&o, 17); /* PLACEMENT of "U", which no CELL defines */
    by(&o, 0x80);
    str(&o, "U");
    tail(&o);
    fails(&o, "byte 37: cell 'U' is placed but no CELL record defines it", NULL);
    head(&o);
    by(&o, 13); /* CELL 4 with no CELLNAME */
    uu(&o, 4);
    tail(&o);
    fails(&o, "byte 37: cell reference number 4 has no CELLNAME record", NULL);
    head(&o);
    by(&o, 14);
    str(&o, "T");
    tail(&o);
    fails(&o, "byte 37: CELL: cell 'T' defined again (first at byte 34)", NULL);
    head(&o); /* "T" by name and by number 0 */
    by(&o, 13);
    uu(&o, 0);
    by(&o, 3);
    str(&o, "T");
    tail(&o);
    fails(&o, "cell 'T' defined again", NULL);
    head(&o);
    by(&o, 3);
    str(&o, "A");
    by(&o, 4);
    str(&o, "B");
    uu(&o, 7);
    tail(&o);
    fails(&o, "CELLNAME with an explicit reference number after ones with implicit", NULL);
    head(&o);
    by(&o, 4);
    str(&o, "A");
    uu(&o, 7);
    by(&o, 4);
    str(&o, "B");
    uu(&o, 7);
    tail(&o);
    fails(&o, "CELLNAME: reference number 7 named twice", NULL);
    head(&o); /* a name record ends the cell */
    by(&o, 5);
    str(&o, "text");
    rect(&o, 1, 1, 0, 0);
    tail(&o);
    fails(&o, "RECTANGLE: outside a cell", NULL);
}

Test(layouts_oasis, forward_references_by_number_and_by_name_meet)
{
    ob o;
    head(&o);
    by(&o, 17); /* T places number 0 and "B" */
    by(&o, 0xc0);
    uu(&o, 0);
    by(&o, 17);
    by(&o, 0x80);
    str(&o, "B");
    by(&o, 13); /* CELL 0 */
    uu(&o, 0);
    rect(&o, 1, 1, 0, 0);
    by(&o, 3); /* CELLNAME 0 = "B" */
    str(&o, "B");
    tail(&o);
    tsr_layout *l = reads(&o);
    cr_assert_eq(l->ncells, 2);
    uint32_t b = cell_named(l, "B"), t = cell_named(l, "T");
    cr_assert_eq(l->cells[t].nrefs, 2);
    cr_assert_eq(l->cells[t].refs[0].cell, b);
    cr_assert_eq(l->cells[t].refs[1].cell, b);
    cr_assert_eq(l->cells[b].nshapes, 1);
    tsr_layout_free(l);
}

Test(layouts_oasis, more_malformed_records)
{
    ob o;
    head(&o);
    by(&o, 20);
    by(&o, 0xe3); /* square and height */
    tail(&o);
    fails(&o, "RECTANGLE: square (S) with a height (H)", NULL);
    head(&o);
    by(&o, 20);
    by(&o, 0x7b);
    uu(&o, (uint64_t)1 << 32);
    tail(&o);
    fails(&o, "byte 39: RECTANGLE: layer 4294967296, expected at most 4294967295", NULL);
    head(&o);
    by(&o, 21);
    by(&o, 0x23);
    uu(&o, 1);
    uu(&o, 0);
    uu(&o, 6);
    tail(&o);
    fails(&o, "POLYGON: point list type 6, expected 0-5", NULL);
    head(&o);
    rect(&o, 1, 1, 0, 0);
    o.b[o.n - 7] |= 0x04;
    uu(&o, 12);
    tail(&o);
    fails(&o, "repetition type 12, expected 0-11", NULL);
    head(&o);
    by(&o, 26);
    by(&o, 0x83);
    uu(&o, 1);
    uu(&o, 0);
    uu(&o, 26);
    tail(&o);
    fails(&o, "CTRAPEZOID: ctrapezoid type 26, expected 0-25", NULL);
    head(&o);
    by(&o, 18);
    by(&o, 0x84);
    str(&o, "T");
    uu(&o, 8);
    tail(&o);
    fails(&o, "PLACEMENT: magnification: real of type 8, expected 0-7", NULL);
    head(&o);
    by(&o, 18);
    by(&o, 0x84);
    str(&o, "T");
    uu(&o, 1);
    uu(&o, 2);
    tail(&o);
    fails(&o, "PLACEMENT: magnification -2, expected a finite value > 0", NULL);
    head(&o);
    by(&o, 28);
    by(&o, 0x14);
    str(&o, "P");
    uu(&o, 16);
    tail(&o);
    fails(&o, "PROPERTY: property value type 16, expected 0-15", NULL);
    head(&o);
    tail(&o);
    by(&o, 0);
    fails(&o, "1 bytes after the END record", NULL);
    head(&o);
    fails(&o, "the file ends without an END record", NULL);
    head(&o);
    by(&o, 2);
    uu(&o, 0);
    uu(&o, 3);
    fails(&o, "END: validation scheme 3, expected 0-2", NULL);
    head(&o);
    by(&o, 1);
    tail(&o);
    fails(&o, "byte 37: START: a second START", NULL);
    head(&o);
    by(&o, 34);
    uu(&o, 1);
    tail(&o);
    fails(&o, "CBLOCK: compression type 1, expected 0", NULL);
}

/* A strict file's CELLNAME table read through the END record's offsets names cells at once:
 * the same layout as without the table. */
Test(layouts_oasis, strict_and_loose_files_give_the_same_cells)
{
    tsr_layout *a = oas_file("oasis_plain_loose.oas"), *b = oas_file("oasis_cblock_strict.oas");
    cr_assert_eq(a->ncells, b->ncells);
    for (size_t i = 0; i < a->ncells; i++) {
        uint32_t j = cell_named(b, a->cells[i].name);
        cr_assert_eq(a->cells[i].nshapes, b->cells[j].nshapes, "%s", a->cells[i].name);
        cr_assert_eq(a->cells[i].nrefs, b->cells[j].nrefs, "%s", a->cells[i].name);
        cr_assert_eq(a->cells[i].npts, b->cells[j].npts, "%s", a->cells[i].name);
    }
    tsr_layout_free(a);
    tsr_layout_free(b);
}

/* Through tsr_layout_read: the format is told by content and the reader's error comes back. */
Test(layouts_oasis, sniffed_as_oasis)
{
    size_t n;
    uint8_t *b = slurp("oasis_hand.oas", &n);
    tsr_layout_format f;
    cr_assert(tsr_layout_sniff(b, n, &f));
    cr_assert_eq(f, TSR_LAYOUT_OASIS);
    free(b);
    ob o;
    head(&o);
    by(&o, 35);
    tsr_error err = {0};
    cr_assert_null(tsr_layout_read(o.b, o.n, "m.oas", NULL, &err));
    cr_assert(strstr(err.msg, "m.oas: byte 37: unknown record id 35"), "%s", err.msg);
}

/* ---- with the rest of layouts/ ----------------------------------------------------------------- */

static tsr_layout *
open_file(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/layouts/%s", TSR_SRC_DIR, name);
    tsr_error err = {0};
    tsr_layout *l = tsr_layout_open(path, NULL, &err);
    cr_assert(l, "%s", err.msg);
    return l;
}

/* The GDSII file through layouts/gdsii.c and its OASIS through this reader cover the same
 * ground (the two readers outline paths alike), and both index. */
Test(layouts_oasis, gdsii_reader_and_oasis_reader_agree)
{
    tsr_layout *g = open_file("oasis_src.gds");
    flat fg = flatten(g, "TOP");
    for (size_t i = 0; i < 4; i++) {
        tsr_layout *o = open_file(klayout_files[i]);
        cr_assert(o->indexed);
        flat fo = flatten(o, "TOP");
        cr_assert_eq(fo.texts, fg.texts);
        cr_assert_eq(same_coverage(&fo, &fg, 3000, 0.5, 3), 12);
        flat_free(&fo);
        tsr_layout_free(o);
    }
    flat_free(&fg);
    tsr_layout_free(g);
}

static int
count_item(void *ctx, const tsr_lay_item *it)
{
    size_t *n = ctx;
    n[it->n == 0]++;
    return 0;
}

/* layouts/query.c walks the reader's repetitions (lattices and lists) as the flatten here does. */
Test(layouts_oasis, queries_see_every_flattened_shape)
{
    const char *files[] = {"oasis_cblock_strict.oas", "oasis_hand.oas", "oasis_circles.oas"};
    const char *tops[] = {"TOP", "HAND", "CIRCLES"};
    for (size_t i = 0; i < 3; i++) {
        tsr_layout *l = open_file(files[i]);
        flat f = flatten(l, tops[i]);
        uint32_t top;
        tsr_error err = {0};
        cr_assert_eq(tsr_layout_cell(l, tops[i], &top, &err), TSR_OK, "%s", err.msg);
        double win[4] = {-1e12, -1e12, 1e12, 1e12};
        size_t n[2] = {0, 0};
        cr_assert_eq(tsr_layout_query(l, top, win, NULL, NULL, count_item, n, &err), TSR_OK,
                     "%s", err.msg);
        cr_assert_eq(n[0], f.n, "%s: %zu polygons queried, %zu flattened", files[i], n[0], f.n);
        cr_assert_eq(n[1], f.nc, "%s: %zu circles queried, %zu flattened", files[i], n[1], f.nc);
        tsr_layout_stats st;
        cr_assert_eq(tsr_layout_get_stats(l, top, &st, &err), TSR_OK, "%s", err.msg);
        cr_assert_eq(st.texts, f.texts);
        cr_assert_eq(st.flat_shapes, f.n + f.nc);
        tsr_layout_stats_free(&st);
        flat_free(&f);
        tsr_layout_free(l);
    }
}
