/* text/: the built-in font's cells and corner rule, layout (anchors, alignment, lines), outline
 * fonts through FreeType (DejaVu, fonts-dejavu-core), and every error path. */
#include "text/text.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEJAVU "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

static tsr_font *
open_font(const char *spec)
{
    tsr_font *f = NULL;
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_font_open(spec, "test.font", &f, &err), TSR_OK, "%s", err.msg);
    return f;
}

static tsr_text_style
style(double height, tsr_text_halign h, tsr_text_valign v)
{
    return (tsr_text_style){.height = height, .halign = h, .valign = v, .tol = 0.01};
}

/* coverage of r (w x h floats, freed by the caller) */
static float *
cover(const tsr_geom_polys *p, tsr_rect r)
{
    float *c = malloc((size_t)(r.w * r.h) * sizeof *c);
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_geom_coverage(p, r, c, &err), TSR_OK, "%s", err.msg);
    return c;
}

Test(text, builtin_h_is_its_cells_at_one_pixel_a_cell)
{
    /* H drawn by hand: columns 0 and 4 on every row, row 3 full */
    tsr_font *f = open_font(TSR_FONT_BUILTIN);
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    tsr_text_style s = style(7, TSR_TEXT_LEFT, TSR_TEXT_TOP);
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_text_polys(f, "H", &s, &p, &err), TSR_OK, "%s", err.msg);
    float *c = cover(&p, tsr_rect_make(-1, -1, 7, 9)); /* a ring of empty pixels around */
    for (int y = -1; y < 8; y++)
        for (int x = -1; x < 6; x++) {
            bool ink = y >= 0 && y < 7 && (x == 0 || x == 4 || (y == 3 && x >= 0 && x < 5));
            cr_assert_eq(c[(y + 1) * 7 + (x + 1)], ink ? 1.0f : 0.0f, "pixel %d,%d", x, y);
        }
    free(c);
    tsr_geom_polys_free(&p);
    tsr_font_close(f);
}

Test(text, builtin_glyphs_never_touch_at_a_corner_only)
{
    /* the corner rule: no 2 x 2 checkerboard of covered cells in any glyph */
    tsr_font *f = open_font(TSR_FONT_BUILTIN);
    tsr_text_style s = style(7, TSR_TEXT_LEFT, TSR_TEXT_TOP);
    for (unsigned ch = 33; ch < 127; ch++) {
        char str[2] = {(char)ch, 0};
        tsr_geom_polys p;
        tsr_geom_polys_init(&p);
        tsr_error err = {TSR_OK, ""};
        cr_assert_eq(tsr_text_polys(f, str, &s, &p, &err), TSR_OK, "%s", err.msg);
        float *c = cover(&p, tsr_rect_make(0, 0, 5, 9));
        int ink = 0;
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 4; x++) {
                bool a = c[y * 5 + x] > 0.5f, b = c[y * 5 + x + 1] > 0.5f;
                bool d = c[(y + 1) * 5 + x] > 0.5f, e = c[(y + 1) * 5 + x + 1] > 0.5f;
                cr_assert(!((a && e && !b && !d) || (b && d && !a && !e)),
                          "'%c' touches at a corner at %d,%d", ch, x, y);
            }
        for (int i = 0; i < 45; i++) {
            cr_assert(c[i] == 0.0f || c[i] == 1.0f, "'%c': cells are whole", ch);
            ink += c[i] > 0.5f;
        }
        cr_assert_gt(ink, 0, "'%c' has no ink", ch);
        free(c);
        tsr_geom_polys_free(&p);
    }
    tsr_font_close(f);
}

Test(text, anchors_and_alignment_move_the_text_as_stated)
{
    tsr_font *f = open_font(TSR_FONT_BUILTIN);
    /* "HH" at 14 px (2 px cells): 11 cells wide (two 5-cell glyphs and a gap), 7 tall */
    struct {
        tsr_text_halign h;
        tsr_text_valign v;
        double x0, y0; /* where the ink's top-left corner must be */
    } cases[] = {
        {TSR_TEXT_LEFT, TSR_TEXT_TOP, 0, 0},
        {TSR_TEXT_LEFT, TSR_TEXT_BASELINE, 0, -14},
        {TSR_TEXT_RIGHT, TSR_TEXT_BOTTOM, -22, -14},
        {TSR_TEXT_CENTER, TSR_TEXT_MIDDLE, -11, -7},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        tsr_geom_polys p;
        tsr_geom_polys_init(&p);
        tsr_text_style s = style(14, cases[k].h, cases[k].v);
        tsr_error err = {TSR_OK, ""};
        cr_assert_eq(tsr_text_polys(f, "HH", &s, &p, &err), TSR_OK, "%s", err.msg);
        double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
        for (size_t i = 0; i < p.npt; i++) {
            x0 = fmin(x0, p.pt[i].x), y0 = fmin(y0, p.pt[i].y);
            x1 = fmax(x1, p.pt[i].x), y1 = fmax(y1, p.pt[i].y);
        }
        cr_assert(x0 == cases[k].x0 && y0 == cases[k].y0, "case %zu: ink at %g,%g", k, x0, y0);
        cr_assert(x1 - x0 == 22 && y1 - y0 == 14, "case %zu: ink %g x %g", k, x1 - x0, y1 - y0);
        tsr_geom_polys_free(&p);
    }
    tsr_font_close(f);
}

Test(text, lines_are_a_line_spacing_apart)
{
    tsr_font *f = open_font(TSR_FONT_BUILTIN);
    tsr_geom_polys a, b;
    tsr_geom_polys_init(&a);
    tsr_geom_polys_init(&b);
    tsr_text_style s = style(7, TSR_TEXT_LEFT, TSR_TEXT_BASELINE);
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_text_polys(f, "T", &s, &a, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_text_polys(f, "\nT", &s, &b, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(a.npt, b.npt);
    for (size_t i = 0; i < a.npt; i++) /* the built-in font's 11 cells */
        cr_assert(b.pt[i].x == a.pt[i].x && b.pt[i].y == a.pt[i].y + 11, "point %zu", i);
    tsr_geom_polys_clear(&b);
    s.line_spacing = 2; /* two capital heights */
    cr_assert_eq(tsr_text_polys(f, "\nT", &s, &b, &err), TSR_OK, "%s", err.msg);
    for (size_t i = 0; i < a.npt; i++)
        cr_assert(b.pt[i].y == a.pt[i].y + 14, "point %zu", i);
    tsr_geom_polys_free(&a);
    tsr_geom_polys_free(&b);
    tsr_font_close(f);
}

Test(text, dejavu_capitals_are_the_height_asked_and_counters_are_holes)
{
    if (access(DEJAVU, R_OK) != 0)
        cr_skip_test("no %s (fonts-dejavu-core)", DEJAVU);
    tsr_font *f = open_font(DEJAVU);
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    tsr_text_style s = style(100, TSR_TEXT_LEFT, TSR_TEXT_BASELINE);
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_text_polys(f, "O", &s, &p, &err), TSR_OK, "%s", err.msg);
    double y0 = INFINITY, y1 = -INFINITY, x0 = INFINITY, x1 = -INFINITY;
    for (size_t i = 0; i < p.npt; i++) {
        y0 = fmin(y0, p.pt[i].y), y1 = fmax(y1, p.pt[i].y);
        x0 = fmin(x0, p.pt[i].x), x1 = fmax(x1, p.pt[i].x);
    }
    /* O overshoots the cap height and the baseline by a little (round letters do) */
    cr_assert(y0 < -100 && y0 > -103 && y1 > 0 && y1 < 3, "O spans y %g .. %g", y0, y1);
    cr_assert_eq(p.nring, 2, "O is an outer ring and a counter");
    /* the counter is empty: the middle of the O is not covered, its stroke is */
    int64_t cx = (int64_t)floor((x0 + x1) / 2), cy = (int64_t)floor((y0 + y1) / 2);
    float *c = cover(&p, tsr_rect_make(cx, cy, 1, 1));
    cr_assert_eq(c[0], 0.0f, "the counter is covered: %g", (double)c[0]);
    free(c);
    c = cover(&p, tsr_rect_make((int64_t)floor(x0) + 2, cy, 1, 1));
    cr_assert_eq(c[0], 1.0f, "the stroke is not covered: %g", (double)c[0]);
    free(c);
    tsr_geom_polys_free(&p);
    tsr_font_close(f);
}

Test(text, right_alignment_shifts_by_the_line_width)
{
    if (access(DEJAVU, R_OK) != 0)
        cr_skip_test("no %s", DEJAVU);
    tsr_font *f = open_font(DEJAVU);
    tsr_geom_polys a, b;
    tsr_geom_polys_init(&a);
    tsr_geom_polys_init(&b);
    tsr_text_style s = style(20, TSR_TEXT_LEFT, TSR_TEXT_TOP);
    tsr_error err = {TSR_OK, ""};
    cr_assert_eq(tsr_text_polys(f, "Wafer 7", &s, &a, &err), TSR_OK, "%s", err.msg);
    s.halign = TSR_TEXT_RIGHT;
    cr_assert_eq(tsr_text_polys(f, "Wafer 7", &s, &b, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(a.npt, b.npt);
    double d = b.pt[0].x - a.pt[0].x;
    cr_assert(d < -60 && d > -120, "shift %g", d);
    for (size_t i = 0; i < a.npt; i++)
        cr_assert(fabs(b.pt[i].x - a.pt[i].x - d) < 1e-9 && b.pt[i].y == a.pt[i].y, "point %zu", i);
    tsr_geom_polys_free(&a);
    tsr_geom_polys_free(&b);
    tsr_font_close(f);
}

Test(text, finer_tolerance_converges_on_the_curve)
{
    if (access(DEJAVU, R_OK) != 0)
        cr_skip_test("no %s", DEJAVU);
    /* the inked area of "o" with chords within 0.1 px and within 0.001 px differ by less than
     * the perimeter times 0.1 px */
    tsr_font *f = open_font(DEJAVU);
    double area[2];
    size_t npt[2];
    for (int k = 0; k < 2; k++) {
        tsr_geom_polys p;
        tsr_geom_polys_init(&p);
        tsr_text_style s = style(200, TSR_TEXT_LEFT, TSR_TEXT_TOP);
        s.tol = k ? 0.001 : 0.1;
        tsr_error err = {TSR_OK, ""};
        cr_assert_eq(tsr_text_polys(f, "o", &s, &p, &err), TSR_OK, "%s", err.msg);
        float *c = cover(&p, tsr_rect_make(-10, -10, 200, 240));
        area[k] = 0;
        for (int i = 0; i < 200 * 240; i++)
            area[k] += c[i];
        npt[k] = p.npt;
        free(c);
        tsr_geom_polys_free(&p);
    }
    cr_assert_gt(npt[1], npt[0], "a finer tolerance takes more chords");
    cr_assert(area[0] > 5000 && fabs(area[0] - area[1]) < 0.1 * 2000, "areas %g, %g", area[0],
              area[1]);
    tsr_font_close(f);
}

static void
expect_error(tsr_status want, const char *spec, const char *text, const char *needle)
{
    tsr_font *f = NULL;
    tsr_error err = {TSR_OK, ""};
    tsr_status st = tsr_font_open(spec, "root.source.font", &f, &err);
    if (st == TSR_OK) {
        tsr_geom_polys p;
        tsr_geom_polys_init(&p);
        tsr_text_style s = style(10, TSR_TEXT_LEFT, TSR_TEXT_TOP);
        st = tsr_text_polys(f, text, &s, &p, &err);
        cr_assert_eq(p.nring, 0, "a failed layout left rings: %s %s", spec, err.msg);
        tsr_geom_polys_free(&p);
        tsr_font_close(f);
    }
    cr_assert_eq(st, want, "%s / %s: %s", spec, text, err.msg);
    cr_assert(strstr(err.msg, needle) && strstr(err.msg, "root.source.font"), "%s", err.msg);
}

Test(text, bad_fonts_and_text_are_refused_naming_them)
{
    expect_error(TSR_EINVAL, TSR_FONT_BUILTIN, "caf\xc3\xa9", "U+00E9 '\xc3\xa9' at byte 3");
    expect_error(TSR_EINVAL, TSR_FONT_BUILTIN, "ab\tc", "U+0009 at byte 2");
    expect_error(TSR_EINVAL, TSR_FONT_BUILTIN, "a\xc3(", "not UTF-8 at byte 1");
    expect_error(TSR_EINVAL, TSR_FONT_BUILTIN, "\xed\xa0\x80", "not UTF-8 at byte 0");
    expect_error(TSR_EINVAL, TSR_FONT_BUILTIN, "\xc0\xaf", "not UTF-8 at byte 0");
    expect_error(TSR_EINVAL, "/nonexistent/font.ttf", "x", "No such file");
    char dir[] = "/tmp/tsr-text-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/fifo.ttf", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    expect_error(TSR_EINVAL, path, "x", "not a regular file"); /* and does not block */
    unlink(path);
    snprintf(path, sizeof path, "%s/text.ttf", dir);
    FILE *fp = fopen(path, "wx");
    cr_assert(fp);
    fputs("this is not a font\n", fp);
    fclose(fp);
    expect_error(TSR_EINVAL, path, "x", "not a font FreeType can read");
    unlink(path);
    snprintf(path, sizeof path, "%s/empty.ttf", dir);
    fp = fopen(path, "wx");
    cr_assert(fp);
    fclose(fp);
    expect_error(TSR_EINVAL, path, "x", "0 bytes");
    unlink(path);
    rmdir(dir);
    if (access(DEJAVU, R_OK) == 0)
        expect_error(TSR_EINVAL, DEJAVU, "ab\xe4\xb8\xad", "no glyph for U+4E2D '\xe4\xb8\xad' at byte 2");
}

Test(text, bad_styles_are_refused)
{
    tsr_font *f = open_font(TSR_FONT_BUILTIN);
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    tsr_error err = {TSR_OK, ""};
    tsr_text_style s = style(0, TSR_TEXT_LEFT, TSR_TEXT_TOP);
    cr_assert_eq(tsr_text_polys(f, "x", &s, &p, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "height"), "%s", err.msg);
    s = style(NAN, TSR_TEXT_LEFT, TSR_TEXT_TOP);
    cr_assert_eq(tsr_text_polys(f, "x", &s, &p, &err), TSR_EINVAL);
    s = style(5, TSR_TEXT_LEFT, TSR_TEXT_TOP);
    s.line_spacing = -1;
    cr_assert_eq(tsr_text_polys(f, "x", &s, &p, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "line spacing"), "%s", err.msg);
    cr_assert_eq(tsr_text_polys(NULL, "x", &s, &p, &err), TSR_EINVAL);
    cr_assert_eq(tsr_font_open(NULL, NULL, NULL, &err), TSR_EINVAL);
    tsr_geom_polys_free(&p);
    tsr_font_close(f);
}
