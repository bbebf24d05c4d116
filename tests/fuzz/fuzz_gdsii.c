/* Fuzz target: layouts/'s GDSII reader and the queries over what it read. One input is one
 * GDSII file, read from memory by tsr_layout_read (which also indexes it). Properties: a
 * failure has a status and a message naming the file and a byte ("fuzz.gds: byte N: ..."); a
 * layout that reads has at least one top cell unless it is empty, statistics for each top, and
 * a query over each top's box that visits only items whose boxes meet it, with finite
 * coordinates, no more of them than the flattened shape count. The query stops after 20000
 * items (a 32767 x 32767 array is a valid file of 100 bytes). Seeds: tests/fuzz/regress/gdsii/
 * (small valid files of every element kind, and broken ones). */
#include "layouts/layouts.h"

#define FUZZ_TARGET "fuzz_gdsii"
#include "tests/fuzz/fuzz.h"

#include <math.h>
#include <string.h>

typedef struct seen {
    const double *win;
    size_t n;
} seen;

static int
visit(void *ctx, const tsr_lay_item *it)
{
    seen *s = ctx;
    double b[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    if (it->n == 0) {
        PROPERTY(it->r > 0 && isfinite(it->r), "circle radius %g", it->r);
        b[0] = it->cx - it->r, b[1] = it->cy - it->r, b[2] = it->cx + it->r, b[3] = it->cy + it->r;
    } else {
        PROPERTY(it->n >= 3, "a polygon of %zu points", it->n);
        for (size_t k = 0; k < it->n; k++) {
            PROPERTY(isfinite(it->pts[k][0]) && isfinite(it->pts[k][1]), "point %zu", k);
            b[0] = fmin(b[0], it->pts[k][0]), b[1] = fmin(b[1], it->pts[k][1]);
            b[2] = fmax(b[2], it->pts[k][0]), b[3] = fmax(b[3], it->pts[k][1]);
        }
    }
    const double *w = s->win;
    PROPERTY(b[0] <= w[2] && b[2] >= w[0] && b[1] <= w[3] && b[3] >= w[1],
             "an item outside the window");
    return ++s->n >= 20000;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsr_error err = {TSR_OK, ""};
    tsr_layout_opts o = {.arc_tol_m = 1e-8};
    tsr_layout *l = tsr_layout_read(data, size, "fuzz.gds", &o, &err);
    if (!l) {
        PROPERTY(err.status == TSR_EINVAL || err.status == TSR_ENOMEM, "status %s: %s",
                 tsr_status_name(err.status), err.msg);
        PROPERTY(strncmp(err.msg, "fuzz.gds: ", 10) == 0, "message: %s", err.msg);
        return 0;
    }
    uint32_t tops[4];
    size_t nt = tsr_layout_tops(l, tops, 4);
    PROPERTY(nt > 0 || l->ncells == 0, "%zu cells, no top", l->ncells);
    for (size_t t = 0; t < nt && t < 4; t++) {
        tsr_layout_stats st;
        PROPERTY(tsr_layout_get_stats(l, tops[t], &st, &err) == TSR_OK, "stats: %s", err.msg);
        const tsr_lay_cell *c = &l->cells[tops[t]];
        if (c->has_box) {
            PROPERTY(c->box[0] <= c->box[2] && c->box[1] <= c->box[3], "box");
            seen s = {c->box, 0};
            tsr_status q = tsr_layout_query(l, tops[t], c->box, NULL, NULL, visit, &s, &err);
            PROPERTY(q == TSR_OK || q == TSR_EINTR, "query: %s", err.msg);
            PROPERTY(s.n <= st.flat_shapes, "%zu visits, %llu flat shapes", s.n,
                     (unsigned long long)st.flat_shapes);
            PROPERTY(q == TSR_EINTR || st.flat_shapes == 0 || s.n > 0, "nothing visited");
        } else {
            PROPERTY(st.flat_shapes == 0, "no box, %llu shapes",
                     (unsigned long long)st.flat_shapes);
        }
        tsr_layout_stats_free(&st);
    }
    tsr_layout_free(l);
    return 0;
}
