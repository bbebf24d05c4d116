/* Fuzz target: text/'s font reading and layout (FreeType under our wrapper), the reader of
 * the one binary input a text source pulls in. One input is one font file, opened from memory
 * and asked to lay out a string that uses curves, holes, descenders and a line break; the
 * outlines are then rasterized over the text's neighbourhood. Properties: a failure has a
 * status and a message naming the font; a success gives rings whose points are finite, a
 * coverage in [0, 1], and the same polygons a second time (no state left behind). Seeds: the
 * DejaVu fonts where installed (fonts-dejavu-core), and tests/fuzz/regress/font/. */
#include "text/text.h"

#define FUZZ_TARGET "fuzz_font"
#include "tests/fuzz/fuzz.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsr_font *f = NULL;
    tsr_error err = {TSR_OK, ""};
    tsr_status st = tsr_font_open_memory(data, size, "fuzz.ttf", &f, &err);
    if (st != TSR_OK) {
        PROPERTY(f == NULL && err.status == st && strstr(err.msg, "fuzz.ttf"), "open: %s",
                 err.msg);
        PROPERTY(st == TSR_EINVAL || st == TSR_ENOMEM, "open: status %s", tsr_status_name(st));
        return 0;
    }
    tsr_text_style style = {.height = 12, .halign = TSR_TEXT_LEFT, .valign = TSR_TEXT_TOP,
                            .line_spacing = 0, .tol = 0.05};
    tsr_geom_polys a, b;
    tsr_geom_polys_init(&a);
    tsr_geom_polys_init(&b);
    st = tsr_text_polys(f, "Hg@ 0\nIl%&", &style, &a, &err);
    if (st != TSR_OK) {
        PROPERTY(err.msg[0] && strstr(err.msg, "fuzz.ttf"), "layout: %s", err.msg);
        PROPERTY(a.nring == 0 && a.npt == 0, "a failed layout left %zu rings", a.nring);
    } else {
        PROPERTY(tsr_text_polys(f, "Hg@ 0\nIl%&", &style, &b, &err) == TSR_OK, "again: %s",
                 err.msg);
        PROPERTY(a.npt == b.npt && a.nring == b.nring &&
                     memcmp(a.pt, b.pt, a.npt * sizeof *a.pt) == 0,
                 "the second layout differs");
        bool finite = true;
        for (size_t i = 0; i < a.npt; i++)
            finite = finite && isfinite(a.pt[i].x) && isfinite(a.pt[i].y);
        PROPERTY(finite, "a point is not finite");
        /* hostile fonts may place points anywhere: only rasterize what lies near the text */
        float cov[64 * 32];
        tsr_status sc = tsr_geom_coverage(&a, tsr_rect_make(-8, -4, 64, 32), cov, &err);
        if (sc == TSR_OK)
            for (int i = 0; i < 64 * 32; i++)
                PROPERTY(cov[i] >= 0.0f && cov[i] <= 1.0f, "coverage %g", (double)cov[i]);
        else
            PROPERTY(sc == TSR_EINVAL || sc == TSR_ENOMEM, "coverage: %s", err.msg);
    }
    tsr_geom_polys_free(&a);
    tsr_geom_polys_free(&b);
    tsr_font_close(f);
    return 0;
}
