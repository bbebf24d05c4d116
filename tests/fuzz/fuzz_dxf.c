/* Fuzz target: layouts/dxf.c, the DXF reader. One input is one file's bytes, read by
 * tsr_dxf_read into an empty layout named "fuzz.dxf" (arc_tol 1 um, so no input makes
 * millions of arc points within the time limit; the reader refuses arcs finer than 2^20
 * segments anyway). Properties: a refusal is TSR_EINVAL with a message naming the file and a
 * line ("fuzz.dxf: line N: ..."), or TSR_ENOMEM; what is read is a well-formed model: every
 * shape's points inside its cell's, polygons of >= 3 points with no repeated neighbour,
 * circles of one point and a radius > 0, layers named, coordinates within
 * TSR_LAYOUT_COORD_MAX, placements of existing cells with a magnification > 0 and an angle in
 * [0, 360), repetitions lattices of counts >= 1, dbu_m > 0; and tsr_layout_index takes it or
 * refuses it naming the file. Seeds: the DXF files of tests/layouts/ (ezdxf's
 * files of every entity kind) and tests/fuzz/regress/dxf/. */
#include "layouts/layouts.h"

#define FUZZ_TARGET "fuzz_dxf"
#include "tests/fuzz/fuzz.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool
in_range(int64_t v)
{
    return v >= -TSR_LAYOUT_COORD_MAX && v <= TSR_LAYOUT_COORD_MAX;
}

static void
check(const tsr_layout *l)
{
    PROPERTY(l->dbu_m > 0 && isfinite(l->dbu_m), "dbu_m %g", l->dbu_m);
    PROPERTY(l->ncells >= 1, "no top cell");
    for (size_t i = 0; i < l->nlayer_names; i++)
        PROPERTY(l->layer_names[i] != NULL, "layer %zu unnamed", i);
    for (size_t ci = 0; ci < l->ncells; ci++) {
        const tsr_lay_cell *c = &l->cells[ci];
        PROPERTY(c->name && (size_t)tsr_lay_cell_find(l, c->name) == ci, "cell %zu's name", ci);
        for (size_t i = 0; i < c->npts; i++)
            PROPERTY(in_range(c->pts[i].x) && in_range(c->pts[i].y), "point %zu out of range", i);
        for (size_t i = 0; i < c->nshapes; i++) {
            const tsr_lay_shape *s = &c->shapes[i];
            PROPERTY(s->layer < l->nlayer_names && s->datatype == 0,
                     "shape %zu: layer %u of %zu", i, s->layer, l->nlayer_names);
            /* shapes of a flattened non-uniform INSERT carry its array */
            PROPERTY(s->rep <= l->nreps &&
                         (s->rep == 0 || (l->reps[s->rep - 1].n >= 1 && l->reps[s->rep - 1].m >= 1)),
                     "shape %zu: repetition %llu of %zu", i, (unsigned long long)s->rep, l->nreps);
            PROPERTY(s->first <= c->npts && s->npts <= c->npts - s->first,
                     "shape %zu: points %llu + %u of %zu", i, (unsigned long long)s->first,
                     s->npts, c->npts);
            const tsr_lay_pt *p = c->pts + s->first;
            if (s->kind == TSR_LAY_CIRCLE) {
                PROPERTY(s->npts == 1 && s->r > 0 && in_range(s->r), "circle %zu", i);
                continue;
            }
            PROPERTY(s->kind == TSR_LAY_POLYGON && s->npts >= 3, "polygon %zu: %u points", i,
                     s->npts);
            for (uint32_t k = 0; k < s->npts; k++) {
                const tsr_lay_pt *q = &p[(k + 1) % s->npts];
                PROPERTY(p[k].x != q->x || p[k].y != q->y, "polygon %zu: point %u repeated",
                         i, k);
            }
        }
        for (size_t i = 0; i < c->nrefs; i++) {
            const tsr_lay_ref *r = &c->refs[i];
            PROPERTY(r->cell < l->ncells, "placement %zu of cell %u", i, r->cell);
            PROPERTY(r->xf.mag > 0 && isfinite(r->xf.mag) && r->xf.angle >= 0 &&
                     r->xf.angle < 360, "placement %zu: mag %g angle %g", i, r->xf.mag,
                     r->xf.angle);
            PROPERTY(in_range(r->xf.dx) && in_range(r->xf.dy), "placement %zu offset", i);
            PROPERTY(r->rep <= l->nreps, "placement %zu: repetition %llu of %zu", i,
                     (unsigned long long)r->rep, l->nreps);
            if (r->rep) {
                const tsr_lay_rep *p = &l->reps[r->rep - 1];
                PROPERTY(p->n >= 1 && p->m >= 1 && p->n * p->m > 1, "repetition %llu",
                         (unsigned long long)r->rep);
            }
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsr_layout *l = calloc(1, sizeof *l);
    if (!l || !(l->path = strdup("fuzz.dxf")))
        abort();
    l->format = TSR_LAYOUT_DXF;
    tsr_layout_opts o = {.arc_tol_m = 1e-6};
    tsr_error err = {TSR_OK, ""};
    tsr_status st = tsr_dxf_read(data, size, &o, l, &err);
    if (st == TSR_OK) {
        check(l);
        /* what query.c makes of it: the hierarchy checked (cycles, depth, coordinates
         * through placements), boxes and indexes built */
        st = tsr_layout_index(l, &err);
        PROPERTY(st == TSR_OK || st == TSR_ENOMEM ||
                     (st == TSR_EINVAL && strncmp(err.msg, "fuzz.dxf: ", 10) == 0),
                 "index: %s: %s", tsr_status_name(st), err.msg);
        PROPERTY(st != TSR_OK || tsr_layout_tops(l, NULL, 0) >= 1, "indexed without a top");
    } else {
        PROPERTY(err.status == st, "status %d, err.status %d", (int)st, (int)err.status);
        PROPERTY(st == TSR_ENOMEM ||
                     (st == TSR_EINVAL && strncmp(err.msg, "fuzz.dxf: line ", 15) == 0),
                 "%s: %s", tsr_status_name(st), err.msg);
    }
    tsr_layout_free(l);
    return 0;
}
