/* Fuzz target: layouts/'s OASIS reader (layouts/oasis.c) and the index and queries over what
 * it read. One input is one OASIS file, read from memory by tsr_oasis_read into an empty
 * layout. Properties: a failure has a status and a message naming the file and a byte
 * ("fuzz.oas: byte N: ..."); a layout that reads keeps the model's invariants (every shape's
 * points inside its cell's, polygons of 3 points or more, boxes of 2, circles of radius > 0,
 * coordinates within +-TSR_LAYOUT_COORD_MAX, repetitions and placements that point at what
 * exists, lattices of counts >= 1, lists inside the displacements, cell names unique and not
 * empty, a database unit > 0); it then indexes or fails with a message naming the file, and
 * each top's statistics and a query over its box succeed (the query stops after 20000 items:
 * a repetition of 2^40 elements is a valid file of 20 bytes). Seeds: tests/fuzz/regress/oasis/
 * (KLayout's files with and without CBLOCKs and strict tables, the hand-made records, broken
 * files). */
#include "layouts/layouts.h"

#define FUZZ_TARGET "fuzz_oasis"
#include "tests/fuzz/fuzz.h"

#include <math.h>
#include <string.h>

static int
visit(void *ctx, const tsr_lay_item *it)
{
    size_t *n = ctx;
    if (it->n == 0)
        PROPERTY(it->r > 0 && isfinite(it->r) && isfinite(it->cx) && isfinite(it->cy),
                 "circle %g, %g, r %g", it->cx, it->cy, it->r);
    else
        for (size_t k = 0; k < it->n; k++)
            PROPERTY(isfinite(it->pts[k][0]) && isfinite(it->pts[k][1]), "point %zu", k);
    return ++*n >= 20000;
}

static void
check_model(const tsr_layout *l)
{
    PROPERTY(l->dbu_m > 0 && isfinite(l->dbu_m), "dbu %g", l->dbu_m);
    for (size_t i = 0; i < l->nreps; i++) {
        const tsr_lay_rep *r = &l->reps[i];
        if (r->count)
            PROPERTY(r->off <= l->ndisp && r->count <= l->ndisp - r->off, "list rep %zu", i);
        else
            PROPERTY(r->n >= 1 && r->m >= 1, "lattice rep %zu", i);
    }
    for (size_t i = 0; i < l->ndisp; i++)
        PROPERTY(llabs(l->disp[i][0]) <= TSR_LAYOUT_COORD_MAX &&
                     llabs(l->disp[i][1]) <= TSR_LAYOUT_COORD_MAX, "displacement %zu", i);
    for (size_t i = 0; i < l->ncells; i++) {
        const tsr_lay_cell *c = &l->cells[i];
        PROPERTY(c->name && c->name[0], "cell %zu has no name", i);
        for (size_t j = 0; j < i; j++)
            PROPERTY(strcmp(c->name, l->cells[j].name) != 0, "cell name %s twice", c->name);
        for (size_t k = 0; k < c->npts; k++)
            PROPERTY(llabs(c->pts[k].x) <= TSR_LAYOUT_COORD_MAX &&
                         llabs(c->pts[k].y) <= TSR_LAYOUT_COORD_MAX, "%s: point %zu", c->name, k);
        for (size_t k = 0; k < c->nshapes; k++) {
            const tsr_lay_shape *s = &c->shapes[k];
            PROPERTY(s->first <= c->npts && s->npts <= c->npts - s->first, "%s: shape %zu",
                     c->name, k);
            PROPERTY(s->rep <= l->nreps, "%s: shape %zu: rep %llu", c->name, k,
                     (unsigned long long)s->rep);
            if (s->kind == TSR_LAY_POLYGON)
                PROPERTY(s->npts >= 3, "%s: polygon of %u points", c->name, s->npts);
            else if (s->kind == TSR_LAY_BOX)
                PROPERTY(s->npts == 2, "%s: box of %u points", c->name, s->npts);
            else
                PROPERTY(s->kind == TSR_LAY_CIRCLE && s->npts == 1 && s->r > 0 &&
                             s->r <= TSR_LAYOUT_COORD_MAX, "%s: shape %zu kind %d", c->name, k,
                         s->kind);
        }
        for (size_t k = 0; k < c->nrefs; k++) {
            const tsr_lay_ref *r = &c->refs[k];
            PROPERTY(r->cell < l->ncells, "%s: placement of cell %u", c->name, r->cell);
            PROPERTY(r->rep <= l->nreps, "%s: placement rep", c->name);
            PROPERTY(r->xf.mag > 0 && isfinite(r->xf.mag) && isfinite(r->xf.angle),
                     "%s: transform", c->name);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsr_error err = {TSR_OK, ""};
    tsr_layout *l = calloc(1, sizeof *l);
    if (!l || !(l->path = strdup("fuzz.oas")))
        abort();
    l->format = TSR_LAYOUT_OASIS;
    tsr_status st = tsr_oasis_read(data, size, NULL, l, &err);
    if (st != TSR_OK) {
        PROPERTY(err.status == st && (st == TSR_EINVAL || st == TSR_ENOMEM), "status %s: %s",
                 tsr_status_name(st), err.msg);
        PROPERTY(strncmp(err.msg, "fuzz.oas: ", 10) == 0, "message: %s", err.msg);
        PROPERTY(st != TSR_EINVAL || strncmp(err.msg, "fuzz.oas: byte ", 15) == 0,
                 "message: %s", err.msg);
        tsr_layout_free(l);
        return 0;
    }
    check_model(l);
    if ((st = tsr_layout_index(l, &err)) != TSR_OK) {
        PROPERTY(strncmp(err.msg, "fuzz.oas: ", 10) == 0, "index: %s", err.msg);
        tsr_layout_free(l);
        return 0;
    }
    uint32_t tops[4];
    size_t nt = tsr_layout_tops(l, tops, 4);
    PROPERTY(nt > 0 || l->ncells == 0, "%zu cells, no top", l->ncells);
    for (size_t t = 0; t < nt && t < 4; t++) {
        tsr_layout_stats s;
        PROPERTY(tsr_layout_get_stats(l, tops[t], &s, &err) == TSR_OK, "stats: %s", err.msg);
        const tsr_lay_cell *c = &l->cells[tops[t]];
        if (c->has_box) {
            size_t n = 0;
            tsr_status q = tsr_layout_query(l, tops[t], c->box, NULL, NULL, visit, &n, &err);
            PROPERTY(q == TSR_OK || q == TSR_EINTR, "query: %s", err.msg);
        }
        tsr_layout_stats_free(&s);
    }
    tsr_layout_free(l);
    return 0;
}
