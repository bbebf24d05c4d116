/* The `layout` source (docs/layouts.md §8): a cell of a GDSII, OASIS or DXF file drawn over a
 * node's fill, one table entry (layer, datatype -> value) after another, each with its exact
 * area coverage (geom/): P = P (1 - c) + v c.
 *
 * The file is opened once, when the design is loaded (tsr_src_layout_open), and kept as the
 * hierarchical model layouts/ reads (memory follows the file, not the flattened shape count).
 * A rect to draw asks the model for the shapes that meet the rect's reach (tsr_geom_reach, so
 * a pixel's bits never depend on how the node is tiled), maps them into pixels and hands them to
 * the coverage rasterizer. Mapping (fixed so that anyone can check it): layout point (x, y) is
 * pixel ((x - x0) / p, (y1 - y) / p), window [x0, y0, x1, y1] (default the cell's box), pitch p:
 * layout y up, raster y down, the window's top-left corner at pixel (0, 0). */
#include "geom/geom.h"
#include "layouts/layouts.h"
#include "nodes/layout_src.h"
#include "nodes/nodes.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Circles (OASIS CIRCLE, DXF CIRCLE) are polygons within this many pixels of the circle, and
 * the readers' arcs within this fraction of a pixel: far below an 8-bit step of area. */
#define ARC_TOL_PX (1.0 / 1024.0)

/* What an opened layout source keeps. */
typedef struct lsrc {
    tsr_layout *l;    /* owned */
    uint32_t cell;
    double k;         /* pixels per database unit */
    double x0, y1;    /* the window's left and top, database units (transformed layout) */
    double win[4];    /* the window, database units (transformed layout) */
    bool xf;          /* a transform other than the identity is given */
    double a[4];      /* q = (a0 x + a1 y, a2 x + a3 y): scale, rotate, mirror, database units */
    double ai[4];     /* its inverse */
    double tx, ty;    /* translate, px */
    double pitch_nm;  /* the pitch used */
    int64_t w, h;     /* the window's size in pixels, rounded up */
    int64_t *lnum;    /* per table entry: its layer number in the file (DXF names resolved) */
    int64_t *dnum;    /* per table entry: its datatype, -1: any (a DXF name) */
} lsrc;

tsr_status
tsr_src_layout_check(const tsr_source *s, tsr_check *c)
{
    /* neither: the design's `pixel:` (tsr_src_layout_open), or an error there */
    if (s->pitch > 0 && s->pitch_nm > 0)
        return tsr_check_failf(c, "pitch_nm", "give at most one of 'pitch' or 'pitch_nm'");
    const double *w = s->window;
    if ((w[0] || w[1] || w[2] || w[3]) && !(w[0] < w[2] && w[1] < w[3]))
        return tsr_check_failf(c, "window", "must be [x0, y0, x1, y1] with x0 < x1, y0 < y1");
    for (int i = 0; i < 4; i++)
        if (!(fabs(w[i]) < 1e12))
            return tsr_check_failf(c, "window", "|coordinates| must be < 1e12 um");
    return TSR_OK;
}

size_t
tsr_src_layout_scratch(const tsr_source *s, int64_t w)
{
    (void)s;
    /* a rect's coverage floats and int64 accumulators, one row of blocks high at least: the
     * caller multiplies nothing, so this is per row of 64 px (docs/layouts.md §8) */
    return (size_t)(w > 0 ? w : 0) * TSR_GEOM_BLOCK * (sizeof(float) + sizeof(int64_t));
}

static void
lsrc_free(lsrc *ls)
{
    if (!ls)
        return;
    tsr_layout_free(ls->l);
    free(ls->lnum);
    free(ls->dnum);
    free(ls);
}

void
tsr_src_layout_close(tsr_source *s)
{
    lsrc_free(s->lay);
    s->lay = NULL;
}

/* The pitch in meters. */
static double
pitch_m(const tsr_source *s)
{
    return s->pitch > 0 ? s->pitch * 1e-6 : s->pitch_nm * 1e-9;
}

/* The pitch: the source's own, or the design's `pixel:` (pixel_nm, 0: none) written into
 * pitch_nm so that the canonical form holds what determines the samples; both given, they must
 * agree (to 1e-12, as decimals do: 0.25 um and 250nm), else the keys are named. */
static tsr_status
resolve_pitch(tsr_source *s, double pixel_nm, tsr_error *err)
{
    double own = s->pitch > 0 ? s->pitch * 1e3 : s->pitch_nm;
    if (!(own > 0)) {
        if (!(pixel_nm > 0))
            return tsr_fail(err, TSR_EINVAL,
                            "no pixel pitch: give 'pitch' (um, or with a unit: 250nm) or "
                            "'pitch_nm', or the design's 'pixel:'");
        s->pitch_nm = pixel_nm;
        return TSR_OK;
    }
    if (pixel_nm > 0 && !(fabs(own - pixel_nm) <= 1e-12 * pixel_nm))
        return tsr_fail(err, TSR_EINVAL,
                        "'%s' is %.17g nm, but the design's 'pixel:' is %.17g nm: a layout is "
                        "drawn at the design's pitch (leave '%s' out, or make them equal)",
                        s->pitch > 0 ? "pitch" : "pitch_nm", own, pixel_nm,
                        s->pitch > 0 ? "pitch" : "pitch_nm");
    return TSR_OK;
}

/* cos and sin of `deg` degrees, exact at multiples of 90 (so a quarter turn keeps on-grid
 * layouts on the grid and their coverage equal to the unturned one's, turned). */
static void
cos_sin_deg(double deg, double *c, double *s)
{
    double q = deg / 90.0;
    if (q == nearbyint(q)) {
        static const double cs[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
        int k = (int)(((long long)q % 4 + 4) % 4);
        *c = cs[k][0];
        *s = cs[k][1];
        return;
    }
    double r = deg * (M_PI / 180.0);
    *c = cos(r);
    *s = sin(r);
}

/* The transform (docs/layouts.md §8): q = scale * R(rotate) * M p, M = diag(-1, 1) when
 * mirrored, about the layout's origin, in database units; then the window and the mapping,
 * then translate in pixels. */
static void
set_transform(lsrc *ls, const tsr_source *s)
{
    double sc = s->scale > 0 ? s->scale : 1.0, c, sn, m = s->mirror ? -1.0 : 1.0;
    cos_sin_deg(s->rotate, &c, &sn);
    ls->a[0] = sc * c * m;
    ls->a[1] = -sc * sn;
    ls->a[2] = sc * sn * m;
    ls->a[3] = sc * c;
    /* inverse: M R(-rotate) / scale */
    ls->ai[0] = m * c / sc;
    ls->ai[1] = m * sn / sc;
    ls->ai[2] = -sn / sc;
    ls->ai[3] = c / sc;
    ls->tx = s->translate[0];
    ls->ty = s->translate[1];
    ls->xf = !(ls->a[0] == 1 && ls->a[1] == 0 && ls->a[2] == 0 && ls->a[3] == 1) ||
             ls->tx != 0 || ls->ty != 0;
}

/* The box of box b's four corners through matrix m. */
static void
box_through(const double m[4], const double b[4], double out[4])
{
    out[0] = out[1] = HUGE_VAL;
    out[2] = out[3] = -HUGE_VAL;
    for (int i = 0; i < 4; i++) {
        double x = b[i & 1 ? 2 : 0], y = b[i & 2 ? 3 : 1];
        double qx = m[0] * x + m[1] * y, qy = m[2] * x + m[3] * y;
        out[0] = fmin(out[0], qx);
        out[1] = fmin(out[1], qy);
        out[2] = fmax(out[2], qx);
        out[3] = fmax(out[3], qy);
    }
}

/* A size in pixels rounded up; within 1e-9 of a whole number it is that number: a window of
 * 82000 um at 25 um is 3280 px, though um -> database units -> pixels rounds on the way. */
static double
px_up(double v)
{
    double r = nearbyint(v);
    return fabs(v - r) <= 1e-9 * fmax(1.0, fabs(v)) ? r : ceil(v);
}

tsr_status
tsr_src_layout_open(tsr_source *s, double pixel_nm, tsr_error *err)
{
    if (s->lay)
        return TSR_OK;
    tsr_status rs = resolve_pitch(s, pixel_nm, err);
    if (rs != TSR_OK)
        return rs;
    double pm = pitch_m(s);
    if (!(pm > 0) || !s->path)
        return tsr_fail(err, TSR_EINVAL, "layout: no pitch or no file");
    tsr_layout_opts o = {.arc_tol_m = pm * ARC_TOL_PX};
    lsrc *ls = calloc(1, sizeof *ls);
    if (!ls)
        return tsr_fail(err, TSR_ENOMEM, "layout: out of memory");
    tsr_status st = TSR_OK;
    if (!(ls->l = tsr_layout_open(s->path, &o, err))) {
        st = err ? err->status : TSR_EINVAL;
        goto fail;
    }
    const tsr_layout *l = ls->l;
    if ((st = tsr_layout_cell(l, s->cell, &ls->cell, err)) != TSR_OK)
        goto fail;
    const tsr_lay_cell *c = &l->cells[ls->cell];
    ls->k = l->dbu_m / pm;
    ls->pitch_nm = pm * 1e9;
    set_transform(ls, s);
    /* the transformed cell's box (through turns by other angles than multiples of 90 degrees,
     * the box of the turned box: it holds everything) */
    double cbox[4] = {0, 0, 0, 0};
    if (c->has_box)
        box_through(ls->a, c->box, cbox);
    const double *w = s->window;
    if (w[0] || w[1] || w[2] || w[3]) {
        for (int i = 0; i < 4; i++)
            ls->win[i] = w[i] * 1e-6 / l->dbu_m;
    } else if (c->has_box) {
        memcpy(ls->win, cbox, sizeof ls->win);
    } else {
        st = tsr_fail(err, TSR_EINVAL, "%s: cell \"%s\" holds no shape: give a window", l->path,
                      c->name);
        goto fail;
    }
    ls->x0 = ls->win[0];
    ls->y1 = ls->win[3];
    double pw = px_up((ls->win[2] - ls->win[0]) * ls->k), ph = px_up((ls->win[3] - ls->win[1]) * ls->k);
    if (!(pw >= 1 && ph >= 1 && pw <= (double)TSR_COORD_MAX && ph <= (double)TSR_COORD_MAX)) {
        st = tsr_fail(err, TSR_EINVAL,
                      "%s: the window is %.17g x %.17g px at this pitch: must be 1..2^40 each way",
                      l->path, pw, ph);
        goto fail;
    }
    ls->w = (int64_t)pw;
    ls->h = (int64_t)ph;
    /* every shape's pixels must stay within the rasterizer's range: the cell's box mapped */
    if (c->has_box) {
        double b[4] = {(cbox[0] - ls->x0) * ls->k + ls->tx, (ls->y1 - cbox[3]) * ls->k + ls->ty,
                       (cbox[2] - ls->x0) * ls->k + ls->tx, (ls->y1 - cbox[1]) * ls->k + ls->ty};
        for (int i = 0; i < 4; i++)
            if (!(fabs(b[i]) < TSR_GEOM_LIMIT / 2)) {
                st = tsr_fail(err, TSR_EINVAL,
                              "%s: cell \"%s\" reaches %.17g px from the window's corner at this "
                              "pitch: at most 2^36 px",
                              l->path, c->name, b[i]);
                goto fail;
            }
    }
    ls->lnum = malloc((s->layers.n + 1) * sizeof *ls->lnum);
    ls->dnum = malloc((s->layers.n + 1) * sizeof *ls->dnum);
    if (!ls->lnum || !ls->dnum) {
        st = tsr_fail(err, TSR_ENOMEM, "layout: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < s->layers.n; i++) {
        const tsr_layer_entry *e = &s->layers.e[i];
        ls->lnum[i] = e->layer;
        ls->dnum[i] = e->datatype;
        if (!e->name)
            continue;
        if (!l->layer_names) {
            static const char *const fmt[] = {"GDSII", "OASIS", "DXF"};
            st = tsr_fail(err, TSR_EINVAL, "%s: layers[%zu]: names a layer (\"%s\"), but %s "
                          "layers are numbers: write [layer, datatype, value]", l->path, i,
                          e->name, fmt[l->format]);
            goto fail;
        }
        ls->lnum[i] = -1;
        ls->dnum[i] = -1;
        for (size_t j = 0; j < l->nlayer_names; j++)
            if (strcmp(l->layer_names[j], e->name) == 0)
                ls->lnum[i] = (int64_t)j;
        if (ls->lnum[i] < 0) {
            char names[256] = "";
            size_t at = 0;
            for (size_t j = 0; j < l->nlayer_names && at < sizeof names - 1; j++)
                at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%s\"", j ? ", " : "",
                                       l->layer_names[j]);
            st = tsr_fail(err, TSR_EINVAL, "%s: layers[%zu]: no layer named \"%s\" in the file%s%s",
                          l->path, i, e->name, l->nlayer_names ? " (it has " : "",
                          l->nlayer_names ? names : "");
            if (l->nlayer_names && err && strlen(err->msg) + 2 < sizeof err->msg)
                strcat(err->msg, ")");
            goto fail;
        }
    }
    s->lay = ls;
    return TSR_OK;
fail:
    lsrc_free(ls);
    return st;
}

void
tsr_src_layout_size(const tsr_source *s, int64_t *w, int64_t *h)
{
    const lsrc *ls = s->lay;
    *w = ls ? ls->w : 0;
    *h = ls ? ls->h : 0;
}

int64_t
tsr_src_layout_bytes(const tsr_source *s)
{
    const lsrc *ls = s->lay;
    if (!ls)
        return 0;
    const tsr_layout *l = ls->l;
    /* what the model holds (layouts.h): every array it grew, at capacity, plus the index,
     * about as large again as the shapes (query.c: one box per shape and placement) */
    int64_t b = (int64_t)(l->capcells * sizeof *l->cells + l->capreps * sizeof *l->reps +
                          l->capdisp * sizeof *l->disp);
    for (size_t i = 0; i < l->ncells; i++) {
        const tsr_lay_cell *c = &l->cells[i];
        b += (int64_t)(c->capshapes * sizeof *c->shapes + c->cappts * sizeof *c->pts +
                       c->caprefs * sizeof *c->refs);
        b += (int64_t)((c->nshapes + c->nrefs) * 48 + strlen(c->name) + 16);
    }
    return b + 2 * (int64_t)s->layers.n * 8;
}

/* ---- drawing ------------------------------------------------------------------------------ */

typedef struct gather {
    const tsr_source *s;
    const lsrc *ls;
    tsr_geom_polys *polys; /* one set per table entry */
    tsr_geom_pt *buf;      /* one shape's points in pixels */
    size_t cap;
    tsr_status st;
    tsr_error *err;
} gather;

static bool
entry_matches(const lsrc *ls, size_t i, uint32_t layer, uint32_t datatype)
{
    return ls->lnum[i] == (int64_t)layer && (ls->dnum[i] < 0 || ls->dnum[i] == (int64_t)datatype);
}

static bool
want(void *ctx, uint32_t layer, uint32_t datatype)
{
    const gather *g = ctx;
    for (size_t i = 0; i < g->s->layers.n; i++)
        if (entry_matches(g->ls, i, layer, datatype))
            return true;
    return false;
}

/* The magnification (0 written: absent, 1). */
static double
s_scale(const tsr_source *s)
{
    return s->scale > 0 ? s->scale : 1.0;
}

/* Layout point (x, y) of the cell, database units, to node pixels: transformed, windowed,
 * scaled to pixels, translated; without a transform the plain mapping's very operations. */
static void
map_pt(const lsrc *ls, double x, double y, tsr_geom_pt *o)
{
    if (!ls->xf) {
        o->x = (x - ls->x0) * ls->k;
        o->y = (ls->y1 - y) * ls->k;
        return;
    }
    double qx = ls->a[0] * x + ls->a[1] * y, qy = ls->a[2] * x + ls->a[3] * y;
    o->x = (qx - ls->x0) * ls->k + ls->tx;
    o->y = (ls->y1 - qy) * ls->k + ls->ty;
}

static int
visit(void *ctx, const tsr_lay_item *it)
{
    gather *g = ctx;
    const lsrc *ls = g->ls;
    size_t n = it->n;
    if (n > 0) {
        if (n > g->cap) {
            tsr_geom_pt *nb = realloc(g->buf, n * sizeof *nb);
            if (!nb) {
                g->st = tsr_fail(g->err, TSR_ENOMEM, "layout: out of memory");
                return 1;
            }
            g->buf = nb;
            g->cap = n;
        }
        if (!ls->xf) {
            for (size_t i = 0; i < n; i++) {
                g->buf[i].x = (it->pts[i][0] - ls->x0) * ls->k;
                g->buf[i].y = (ls->y1 - it->pts[i][1]) * ls->k;
            }
        } else {
            for (size_t i = 0; i < n; i++)
                map_pt(ls, it->pts[i][0], it->pts[i][1], &g->buf[i]);
        }
        /* Every shape fills its own outline whichever way it is wound (a mirrored placement
         * turns it over), and the layer is the union of the shapes: wound alike (positive
         * area, as circles are), two overlapping shapes never cancel under the nonzero rule.
         * A self-crossing polygon keeps its lobes as they come (docs/layouts.md §8). */
        double a2 = 0;
        for (size_t i = 0; i < n; i++) {
            const tsr_geom_pt *u = &g->buf[i], *v = &g->buf[i + 1 == n ? 0 : i + 1];
            a2 += (u->x - g->buf[0].x) * (v->y - g->buf[0].y) -
                  (v->x - g->buf[0].x) * (u->y - g->buf[0].y);
        }
        if (a2 < 0)
            for (size_t i = 0, j = n - 1; i < j; i++, j--) {
                tsr_geom_pt t = g->buf[i];
                g->buf[i] = g->buf[j];
                g->buf[j] = t;
            }
    }
    for (size_t e = 0; e < g->s->layers.n; e++) {
        if (!entry_matches(ls, e, it->layer, it->datatype))
            continue;
        tsr_status st;
        if (n > 0) {
            st = tsr_geom_polys_add(&g->polys[e], g->buf, n, g->err);
        } else {
            /* a circle: vertices on it, within ARC_TOL_PX, or fewer when that would take more
             * than the most segments a circle gets (a tolerance that fits them) */
            double r = it->r * ls->k * (s_scale(g->s)), tol = ARC_TOL_PX;
            size_t segs;
            tsr_error e2;
            while (tsr_geom_arc_segments(r, 2 * M_PI, tol, &segs, &e2) != TSR_OK && tol < r)
                tol *= 2;
            tsr_geom_pt ctr;
            map_pt(ls, it->cx, it->cy, &ctr);
            st = tsr_geom_polys_add_circle(&g->polys[e], ctr.x, ctr.y, r, tol, g->err);
        }
        if (st != TSR_OK) {
            g->st = st;
            return 1;
        }
    }
    return 0;
}

tsr_status
tsr_src_layout_polys(const tsr_source *s, tsr_rect r, tsr_geom_polys *polys, tsr_error *err)
{
    const lsrc *ls = s->lay;
    for (size_t e = 0; e < s->layers.n; e++)
        tsr_geom_polys_clear(&polys[e]);
    if (!ls || tsr_rect_empty(r))
        return TSR_OK;
    tsr_rect reach = tsr_geom_reach(r);
    /* the reach in database units, a hair wider than the pixels so that rounding never drops a
     * shape that touches it (more is harmless: tsr_geom_reach) */
    double slack = 1.0 + 1e-9 * (fabs(ls->x0) + fabs(ls->y1));
    double q[4] = {ls->x0 + ((double)reach.x - ls->tx) / ls->k - slack,
                   ls->y1 - ((double)(reach.y + reach.h) - ls->ty) / ls->k - slack,
                   ls->x0 + ((double)(reach.x + reach.w) - ls->tx) / ls->k + slack,
                   ls->y1 - ((double)reach.y - ls->ty) / ls->k + slack};
    double win[4];
    if (!ls->xf) {
        memcpy(win, q, sizeof win);
    } else {
        /* the box of the reach's inverse image in the cell's coordinates, widened as above
         * (a larger window only visits shapes the coverage then finds empty) */
        box_through(ls->ai, q, win);
        double sl = 1.0 + 1e-9 * (fabs(win[0]) + fabs(win[3]));
        win[0] -= sl;
        win[1] -= sl;
        win[2] += sl;
        win[3] += sl;
    }
    /* the visitor's own failure, kept apart: the query reports "stopped by its visitor" */
    tsr_error gerr = {TSR_OK, ""};
    gather g = {s, ls, polys, NULL, 0, TSR_OK, &gerr};
    tsr_status st = tsr_layout_query(ls->l, ls->cell, win, want, &g, visit, &g, err);
    if (g.st != TSR_OK) {
        st = g.st;
        if (err)
            *err = gerr;
    }
    free(g.buf);
    return st;
}

/* Draw rect r; TSR_ENOMEM, or TSR_EINTR on a stop request (px unfinished then). */
tsr_status
tsr_src_layout_draw(const tsr_source *s, tsr_rect r, float *px, tsr_error *err)
{
    if (!s->lay || tsr_rect_empty(r))
        return TSR_OK;
    size_t ne = s->layers.n, npx = (size_t)r.w * (size_t)r.h;
    tsr_geom_polys *polys = calloc(ne, sizeof *polys);
    float *cov = malloc(npx * sizeof *cov);
    tsr_status st = TSR_OK;
    if (!polys || !cov) {
        st = tsr_fail(err, TSR_ENOMEM, "layout: out of memory for a %lldx%lld rect",
                      (long long)r.w, (long long)r.h);
        goto done;
    }
    if ((st = tsr_src_layout_polys(s, r, polys, err)) != TSR_OK)
        goto done;
    for (size_t e = 0; e < ne; e++) {
        if (polys[e].nring == 0)
            continue;
        if (tsr_stop_requested()) {
            st = tsr_fail(err, TSR_EINTR, "layout: stopped");
            goto done;
        }
        if ((st = tsr_geom_coverage(&polys[e], r, cov, err)) != TSR_OK)
            goto done;
        float v = s->layers.e[e].value;
        for (size_t i = 0; i < npx; i++)
            px[i] = tsr_src_layout_mix(px[i], cov[i], v);
    }
done:
    for (size_t e = 0; polys && e < ne; e++)
        tsr_geom_polys_free(&polys[e]);
    free(polys);
    free(cov);
    return st;
}

void
tsr_src_layout_render(const tsr_source *s, tsr_rect r, float *px)
{
    /* The table's render cannot fail: out of memory here leaves the rect as it was, and a
     * warning on stderr (docs/layouts.md §8 says so). */
    tsr_error err = {TSR_OK, ""};
    tsr_status st = tsr_src_layout_draw(s, r, px, &err);
    if (st != TSR_OK && st != TSR_EINTR)
        fprintf(stderr, "tessera: %s: %s\n", s->where ? s->where : "layout", err.msg);
}

/* ---- what `tessera check` says ------------------------------------------------------------ */

static bool
mapped(const tsr_source *s, uint32_t layer, uint32_t datatype)
{
    const lsrc *ls = s->lay;
    for (size_t i = 0; i < s->layers.n; i++)
        if (entry_matches(ls, i, layer, datatype))
            return true;
    return false;
}

void
tsr_src_layout_describe(const tsr_source *s, FILE *f, int indent)
{
    const lsrc *ls = s->lay;
    if (!ls)
        return;
    const tsr_layout *l = ls->l;
    const tsr_lay_cell *c = &l->cells[ls->cell];
    static const char *const fmt[] = {"GDSII", "OASIS", "DXF"};
    fprintf(f, "%*s# %s, database unit %.6g nm, cell \"%s\"", indent, "", fmt[l->format],
            l->dbu_m * 1e9, c->name);
    tsr_layout_stats st;
    if (tsr_layout_get_stats(l, ls->cell, &st, NULL) != TSR_OK) {
        fputc('\n', f);
        return;
    }
    fprintf(f, ": %zu cell%s, %" PRIu64 " shapes stored, %" PRIu64 " flattened\n", st.cells,
            st.cells == 1 ? "" : "s", st.shapes, st.flat_shapes);
    double um = l->dbu_m * 1e6;
    if (c->has_box) {
        double b[4]; /* through the transform, when there is one */
        box_through(ls->a, c->box, b);
        fprintf(f, "%*s# cell box [%.9g, %.9g, %.9g, %.9g] um = pixels [%.9g, %.9g, %.9g, %.9g]\n",
                indent, "", c->box[0] * um, c->box[1] * um, c->box[2] * um, c->box[3] * um,
                (b[0] - ls->x0) * ls->k + ls->tx, (ls->y1 - b[3]) * ls->k + ls->ty,
                (b[2] - ls->x0) * ls->k + ls->tx, (ls->y1 - b[1]) * ls->k + ls->ty);
    }
    fprintf(f, "%*s# pitch %.9g nm\n", indent, "", ls->pitch_nm);
    if (ls->xf)
        fprintf(f, "%*s# transformed: mirror %s, scale %.9g, rotate %.9g deg about the origin, "
                "then translate [%.9g, %.9g] px\n", indent, "", s->mirror ? "x -> -x" : "none",
                s_scale(s), s->rotate, ls->tx, ls->ty);
    fprintf(f, "%*s# window [%.9g, %.9g, %.9g, %.9g] um = %" PRId64 " x %" PRId64 " px\n", indent,
            "", ls->win[0] * um, ls->win[1] * um, ls->win[2] * um, ls->win[3] * um, ls->w, ls->h);
    for (size_t i = 0; i < st.nlayers; i++) {
        const struct tsr_layout_layer *ly = &st.layers[i];
        fprintf(f, "%*s# layer ", indent, "");
        if (l->layer_names && ly->layer < l->nlayer_names)
            fprintf(f, "\"%s\"", l->layer_names[ly->layer]);
        else
            fprintf(f, "%" PRIu32 "/%" PRIu32, ly->layer, ly->datatype);
        fprintf(f, ": %" PRIu64 " shapes%s\n", ly->shapes,
                mapped(s, ly->layer, ly->datatype) ? "" : " (not in the table: not drawn)");
    }
    for (size_t i = 0; i < s->layers.n; i++) {
        bool found = false;
        for (size_t j = 0; j < st.nlayers && !found; j++)
            found = entry_matches(ls, i, st.layers[j].layer, st.layers[j].datatype);
        if (!found)
            fprintf(f, "%*s# layers[%zu]: no shape of it in the cell\n", indent, "", i);
    }
    if (st.texts)
        fprintf(f, "%*s# %" PRIu64 " text elements: not geometry, not drawn\n", indent, "",
                st.texts);
    uint64_t skipped = 0;
    for (size_t i = 0; i < l->ncells; i++)
        skipped += l->cells[i].nskipped;
    if (skipped)
        fprintf(f, "%*s# %" PRIu64 " elements that bound no area left out (lines, open paths)\n",
                indent, "", skipped);
    fprintf(f, "%*s# model in memory: %.1f MiB\n", indent, "",
            (double)tsr_src_layout_bytes(s) / 1048576.0);
    tsr_layout_stats_free(&st);
}
