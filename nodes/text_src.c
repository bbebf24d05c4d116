/* The `text` source (docs/text.md): a string laid out in a font (text/), placed by its anchor,
 * mirror and rotation, and drawn over the node's fill with the exact area its outlines cover
 * (geom/): P = P (1 - c) + v c, as a layout's layer is drawn.
 *
 * The outlines are made once, when the design is loaded (tsr_src_text_open), in the node's
 * pixel coordinates; a rect to draw takes the rings whose boxes meet its reach
 * (tsr_geom_reach: a pixel's bits never depend on how the node is tiled). The GPU draws the
 * same rings through the same unions (gpu/vector.cu). */
#include "nodes/text_src.h"

#include "nodes/layout_src.h" /* tsr_src_layout_mix: the blend of a coverage */
#include "text/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tsrc {
    tsr_geom_polys p;  /* every ring, node pixels */
    double (*box)[4];  /* per ring: x0, y0, x1, y1 */
} tsrc;

tsr_status
tsr_src_text_check(const tsr_source *s, tsr_check *c)
{
    if (!s->text || !s->text[0])
        return tsr_check_failf(c, "text", "the text is empty");
    return TSR_OK;
}

size_t
tsr_src_text_scratch(const tsr_source *s, int64_t w)
{
    (void)s;
    /* a rect's coverage floats, int64 accumulators and edges, a row of blocks at a time at
     * least (as a layout's) */
    return (size_t)(w > 0 ? w : 0) * TSR_GEOM_BLOCK * (sizeof(float) + sizeof(int64_t));
}

/* cos and sin of `deg` degrees, exact at multiples of 90 (a label turned a quarter keeps its
 * cell edges on the pixel grid). */
static void
cos_sin(double deg, double *c, double *s)
{
    double q = deg / 90.0;
    if (q == floor(q)) {
        static const double cs[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
        int k = (int)fmod(fmod(q, 4.0) + 4.0, 4.0);
        *c = cs[k][0];
        *s = cs[k][1];
        return;
    }
    double r = deg * (M_PI / 180.0);
    *c = cos(r);
    *s = sin(r);
}

tsr_status
tsr_src_text_open(tsr_source *s, tsr_error *err)
{
    if (s->txt)
        return TSR_OK;
    tsr_font *f = NULL;
    tsr_status st = tsr_font_open(s->path ? s->path : TSR_FONT_BUILTIN, "font", &f, err);
    if (st != TSR_OK)
        return st;
    tsrc *t = calloc(1, sizeof *t);
    if (!t) {
        tsr_font_close(f);
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    }
    tsr_geom_polys_init(&t->p);
    tsr_text_style style = {.height = s->height,
                            .halign = (tsr_text_halign)s->halign,
                            .valign = (tsr_text_valign)s->valign,
                            .line_spacing = s->line_spacing,
                            .tol = s->tolerance};
    st = tsr_text_polys(f, s->text, &style, &t->p, err);
    tsr_font_close(f);
    if (st == TSR_OK && !(t->box = malloc((t->p.nring ? t->p.nring : 1) * sizeof *t->box)))
        st = tsr_fail(err, TSR_ENOMEM, "out of memory");
    if (st != TSR_OK) {
        tsr_geom_polys_free(&t->p);
        free(t);
        return st;
    }
    /* mirror, rotate (counterclockwise as seen: y is down), then move the anchor into place */
    double c, sn;
    cos_sin(s->rotate, &c, &sn);
    for (size_t i = 0; i < t->p.npt; i++) {
        double x = s->mirror ? -t->p.pt[i].x : t->p.pt[i].x, y = t->p.pt[i].y;
        t->p.pt[i].x = s->position[0] + (c * x + sn * y);
        t->p.pt[i].y = s->position[1] + (c * y - sn * x);
    }
    for (size_t k = 0; k < t->p.nring; k++) {
        size_t a = k ? t->p.end[k - 1] : 0, b = t->p.end[k];
        double *bx = t->box[k];
        bx[0] = bx[1] = INFINITY;
        bx[2] = bx[3] = -INFINITY;
        for (size_t i = a; i < b; i++) {
            bx[0] = fmin(bx[0], t->p.pt[i].x), bx[1] = fmin(bx[1], t->p.pt[i].y);
            bx[2] = fmax(bx[2], t->p.pt[i].x), bx[3] = fmax(bx[3], t->p.pt[i].y);
        }
    }
    s->txt = t;
    return TSR_OK;
}

void
tsr_src_text_close(tsr_source *s)
{
    tsrc *t = s->txt;
    if (!t)
        return;
    tsr_geom_polys_free(&t->p);
    free(t->box);
    free(t);
    s->txt = NULL;
}

tsr_status
tsr_src_text_polys(const tsr_source *s, tsr_rect r, tsr_geom_polys *out, tsr_error *err)
{
    tsr_geom_polys_clear(out);
    const tsrc *t = s->txt;
    if (!t)
        return TSR_OK;
    tsr_rect g = tsr_geom_reach(r);
    for (size_t k = 0; k < t->p.nring; k++) {
        const double *bx = t->box[k];
        if (bx[2] < (double)g.x || bx[0] > (double)(g.x + g.w) || bx[3] < (double)g.y ||
            bx[1] > (double)(g.y + g.h))
            continue;
        size_t a = k ? t->p.end[k - 1] : 0;
        tsr_status st = tsr_geom_polys_add(out, t->p.pt + a, t->p.end[k] - a, err);
        if (st != TSR_OK)
            return st;
    }
    return TSR_OK;
}

void
tsr_src_text_bounds(const tsr_source *s, double b[4])
{
    const tsrc *t = s->txt;
    b[0] = b[1] = INFINITY;
    b[2] = b[3] = -INFINITY;
    for (size_t k = 0; t && k < t->p.nring; k++) {
        b[0] = fmin(b[0], t->box[k][0]), b[1] = fmin(b[1], t->box[k][1]);
        b[2] = fmax(b[2], t->box[k][2]), b[3] = fmax(b[3], t->box[k][3]);
    }
}

void
tsr_src_text_render(const tsr_source *s, tsr_rect r, float *px)
{
    if (!s->txt || tsr_rect_empty(r))
        return;
    tsr_error err = {TSR_OK, ""};
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    size_t npx = (size_t)r.w * (size_t)r.h;
    float *cov = NULL;
    tsr_status st = tsr_src_text_polys(s, r, &p, &err);
    if (st == TSR_OK && p.nring > 0) {
        if (!(cov = malloc(npx * sizeof *cov)))
            st = tsr_fail(&err, TSR_ENOMEM, "text: out of memory for a %lldx%lld rect",
                          (long long)r.w, (long long)r.h);
        else if ((st = tsr_geom_coverage(&p, r, cov, &err)) == TSR_OK)
            for (size_t i = 0; i < npx; i++)
                px[i] = tsr_src_layout_mix(px[i], cov[i], s->value);
    }
    /* the table's render cannot fail: as a layout's, a failure leaves the rect as it was and
     * says so on stderr (out of memory is the only one: the outlines were checked at open) */
    if (st != TSR_OK)
        fprintf(stderr, "tessera: %s: %s\n", s->where ? s->where : "text", err.msg);
    free(cov);
    tsr_geom_polys_free(&p);
}
