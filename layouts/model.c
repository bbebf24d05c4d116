/* The layout model's storage: growable arrays with checked sizes, cells found by name. */
#include "layouts/layouts.h"

#include <stdlib.h>
#include <string.h>

/* Room for `more` elements of `size` bytes in *arr (n used, *cap allocated): doubling growth,
 * every product checked. */
static tsr_status
grow(void **arr, size_t n, size_t *cap, size_t more, size_t size, const char *what,
     tsr_error *err)
{
    if (more <= *cap - n)
        return TSR_OK;
    if (more > SIZE_MAX / size - n)
        return tsr_fail(err, TSR_ENOMEM, "layout: too many %s", what);
    size_t want = n + more, c = *cap ? *cap : 16;
    while (c < want)
        c = c > SIZE_MAX / 2 / size ? want : 2 * c;
    void *p = realloc(*arr, c * size);
    if (!p)
        return tsr_fail(err, TSR_ENOMEM, "layout: out of memory (%zu %s)", want, what);
    *arr = p;
    *cap = c;
    return TSR_OK;
}

tsr_status
tsr_lay_cell_add(tsr_layout *l, const char *name, uint32_t *idx, tsr_error *err)
{
    if (l->ncells >= UINT32_MAX)
        return tsr_fail(err, TSR_EINVAL, "%s: more than %u cells", l->path, UINT32_MAX);
    tsr_status st = grow((void **)&l->cells, l->ncells, &l->capcells, 1, sizeof *l->cells,
                         "cells", err);
    if (st != TSR_OK)
        return st;
    tsr_lay_cell *c = &l->cells[l->ncells];
    memset(c, 0, sizeof *c);
    if (!(c->name = strdup(name)))
        return tsr_fail(err, TSR_ENOMEM, "layout: out of memory (cell name)");
    *idx = (uint32_t)l->ncells++;
    return TSR_OK;
}

int64_t
tsr_lay_cell_find(const tsr_layout *l, const char *name)
{
    for (size_t i = 0; i < l->ncells; i++)
        if (strcmp(l->cells[i].name, name) == 0)
            return (int64_t)i;
    return -1;
}

tsr_status
tsr_lay_add_points(tsr_layout *l, uint32_t cell, const tsr_lay_pt *p, size_t n, uint64_t *first,
                   tsr_error *err)
{
    tsr_lay_cell *c = &l->cells[cell];
    tsr_status st = grow((void **)&c->pts, c->npts, &c->cappts, n, sizeof *c->pts, "points", err);
    if (st != TSR_OK)
        return st;
    if (n) /* memcpy's pointers must not be NULL, even for 0 bytes */
        memcpy(c->pts + c->npts, p, n * sizeof *p);
    *first = c->npts;
    c->npts += n;
    return TSR_OK;
}

tsr_status
tsr_lay_add_shape(tsr_layout *l, uint32_t cell, const tsr_lay_shape *s, tsr_error *err)
{
    tsr_lay_cell *c = &l->cells[cell];
    tsr_status st = grow((void **)&c->shapes, c->nshapes, &c->capshapes, 1, sizeof *c->shapes,
                         "shapes", err);
    if (st == TSR_OK)
        c->shapes[c->nshapes++] = *s;
    return st;
}

tsr_status
tsr_lay_add_ref(tsr_layout *l, uint32_t cell, const tsr_lay_ref *r, tsr_error *err)
{
    tsr_lay_cell *c = &l->cells[cell];
    tsr_status st = grow((void **)&c->refs, c->nrefs, &c->caprefs, 1, sizeof *c->refs,
                         "placements", err);
    if (st == TSR_OK)
        c->refs[c->nrefs++] = *r;
    return st;
}

tsr_status
tsr_lay_add_rep(tsr_layout *l, const tsr_lay_rep *r, uint64_t *id, tsr_error *err)
{
    tsr_status st = grow((void **)&l->reps, l->nreps, &l->capreps, 1, sizeof *l->reps,
                         "repetitions", err);
    if (st != TSR_OK)
        return st;
    l->reps[l->nreps++] = *r;
    *id = l->nreps;
    return TSR_OK;
}

tsr_status
tsr_lay_add_disp(tsr_layout *l, const int64_t (*d)[2], size_t n, uint64_t *off, tsr_error *err)
{
    tsr_status st = grow((void **)&l->disp, l->ndisp, &l->capdisp, n, sizeof *l->disp,
                         "displacements", err);
    if (st != TSR_OK)
        return st;
    if (n)
        memcpy(l->disp + l->ndisp, d, n * sizeof *d);
    *off = l->ndisp;
    l->ndisp += n;
    return TSR_OK;
}

/* layouts/query.c frees a cell's index */
void
tsr_lay_index_free(void *index);

void
tsr_layout_free(tsr_layout *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->ncells; i++) {
        tsr_lay_cell *c = &l->cells[i];
        free(c->name);
        free(c->shapes);
        free(c->pts);
        free(c->refs);
        tsr_lay_index_free(c->index);
    }
    for (size_t i = 0; i < l->nlayer_names; i++)
        free(l->layer_names[i]);
    free(l->layer_names);
    free(l->cells);
    free(l->reps);
    free(l->disp);
    free(l->path);
    free(l);
}
