/* The `text` source (docs/text.md): a string laid out in a font (text/), placed by its anchor,
 * mirror and rotation, and drawn over the node's fill with the exact area its outlines cover
 * (geom/): P = P (1 - c) + v c, as a layout's layer is drawn.
 *
 * The outlines are made once, when the design is loaded (tsr_src_text_open), in the node's
 * pixel coordinates, and drawn as every vector source's are (nodes/vector.h), on the CPU and
 * the GPU. */
#include "nodes/vector.h"
#include "text/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (s->vec)
        return TSR_OK;
    tsr_font *f = NULL;
    tsr_status st = tsr_font_open(s->path ? s->path : TSR_FONT_BUILTIN, "font", &f, err);
    if (st != TSR_OK)
        return st;
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    tsr_text_style style = {.height = s->height,
                            .halign = (tsr_text_halign)s->halign,
                            .valign = (tsr_text_valign)s->valign,
                            .line_spacing = s->line_spacing,
                            .tol = s->tolerance};
    st = tsr_text_polys(f, s->text, &style, &p, err);
    tsr_font_close(f);
    if (st != TSR_OK) {
        tsr_geom_polys_free(&p);
        return st;
    }
    /* mirror, rotate (counterclockwise as seen: y is down), then move the anchor into place */
    double c, sn;
    cos_sin(s->rotate, &c, &sn);
    for (size_t i = 0; i < p.npt; i++) {
        double x = s->mirror ? -p.pt[i].x : p.pt[i].x, y = p.pt[i].y;
        p.pt[i].x = s->position[0] + (c * x + sn * y);
        p.pt[i].y = s->position[1] + (c * y - sn * x);
    }
    tsr_vec *v = NULL;
    if ((st = tsr_vec_new(&p, &v, err)) != TSR_OK)
        return st;
    s->vec = v;
    return TSR_OK;
}

void
tsr_src_text_close(tsr_source *s)
{
    tsr_vec_free(s->vec);
    s->vec = NULL;
}

void
tsr_src_text_render(const tsr_source *s, tsr_rect r, float *px)
{
    tsr_vec_render(s->vec, s->value, s->where, r, px);
}
