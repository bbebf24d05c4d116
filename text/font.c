/* Fonts and the layout of a string into polygons (text/text.h). The built-in font's cells
 * become rectangles; an outline font's contours, through FreeType (Debian libfreetype), become
 * rings with their Bezier arcs flattened into chords. */
#include "text/text.h"

#include <ft2build.h>
#include FT_FREETYPE_H
#include FT_OUTLINE_H
#include FT_TRUETYPE_TABLES_H

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A font file larger than this is refused before it is read (the largest CJK fonts are ~20 MB). */
#define FONT_MAX_BYTES ((size_t)256 << 20)
/* The most chords one Bezier arc becomes. */
#define ARC_MAX 4096
/* The built-in font: 7 cells to the capital height, 6 to the advance, 11 between baselines. */
#define CELLS_CAP 7
#define CELLS_ADVANCE 6
#define CELLS_LINE 11

struct tsr_font {
    bool builtin;
    FT_Library lib;
    FT_Face face;
    unsigned char *bytes; /* the file's bytes when we read them (FreeType reads from them) */
    double cap;           /* capital height, font units (builtin: cells) */
    double line;          /* baseline to baseline, font units */
    char name[256];       /* for messages */
};

static const char *
ft_reason(FT_Error e)
{
    const char *s = FT_Error_String(e);
    return s ? s : "FreeType error";
}

static tsr_status
finish_open(tsr_font *f, tsr_font **out, tsr_error *err)
{
    FT_Face face = f->face;
    if (!FT_IS_SCALABLE(face)) {
        tsr_font_close(f);
        return tsr_fail(err, TSR_EINVAL, "%s: not an outline font (a bitmap font has no outlines "
                        "to rasterize exactly)", f->name);
    }
    if (face->units_per_EM == 0) {
        tsr_font_close(f);
        return tsr_fail(err, TSR_EINVAL, "%s: units per em is 0", f->name);
    }
    TT_OS2 *os2 = (TT_OS2 *)FT_Get_Sfnt_Table(face, FT_SFNT_OS2);
    if (os2 && os2->version != 0xFFFF && os2->version >= 2 && os2->sCapHeight > 0)
        f->cap = os2->sCapHeight;
    else {
        FT_UInt gi = FT_Get_Char_Index(face, 'H');
        FT_BBox b;
        if (gi && FT_Load_Glyph(face, gi, FT_LOAD_NO_SCALE | FT_LOAD_NO_HINTING |
                                              FT_LOAD_NO_BITMAP) == 0 &&
            face->glyph->format == FT_GLYPH_FORMAT_OUTLINE) {
            FT_Outline_Get_CBox(&face->glyph->outline, &b);
            f->cap = (double)b.yMax;
        }
    }
    if (!(f->cap > 0)) {
        tsr_font_close(f);
        return tsr_fail(err, TSR_EINVAL, "%s: no capital height (no OS/2 cap height and no H "
                        "glyph): the text's height cannot be set", f->name);
    }
    f->line = face->height > 0 ? (double)face->height : 1.2 * face->units_per_EM;
    *out = f;
    return TSR_OK;
}

static tsr_font *
new_font(const char *name, tsr_error *err)
{
    tsr_font *f = calloc(1, sizeof *f);
    if (!f) {
        tsr_fail(err, TSR_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(f->name, sizeof f->name, "%s", name ? name : "font");
    return f;
}

tsr_status
tsr_font_open_memory(const unsigned char *bytes, size_t n, const char *name, tsr_font **out,
                     tsr_error *err)
{
    if (!bytes || !out)
        return tsr_fail(err, TSR_EINVAL, "tsr_font_open_memory: NULL argument");
    *out = NULL;
    tsr_font *f = new_font(name, err);
    if (!f)
        return TSR_ENOMEM;
    FT_Error e = FT_Init_FreeType(&f->lib);
    if (e) {
        free(f);
        return tsr_fail(err, TSR_ENOMEM, "%s: FreeType: %s", name ? name : "font", ft_reason(e));
    }
    if (n > (size_t)0x7fffffff) {
        tsr_font_close(f);
        return tsr_fail(err, TSR_EINVAL, "%s: %zu bytes is too large for a font", f->name, n);
    }
    e = FT_New_Memory_Face(f->lib, bytes, (FT_Long)n, 0, &f->face);
    if (e) {
        f->face = NULL;
        tsr_font_close(f);
        return tsr_fail(err, TSR_EINVAL, "%s: not a font FreeType can read (%s)",
                        name ? name : "font", ft_reason(e));
    }
    return finish_open(f, out, err);
}

tsr_status
tsr_font_open(const char *spec, const char *where, tsr_font **out, tsr_error *err)
{
    if (!spec || !out)
        return tsr_fail(err, TSR_EINVAL, "tsr_font_open: NULL argument");
    *out = NULL;
    const char *name = where ? where : spec;
    if (strcmp(spec, TSR_FONT_BUILTIN) == 0) {
        tsr_font *f = new_font(name, err);
        if (!f)
            return TSR_ENOMEM;
        f->builtin = true;
        f->cap = CELLS_CAP;
        f->line = CELLS_LINE;
        *out = f;
        return TSR_OK;
    }
    /* Read it ourselves: a FIFO or device must not block us (O_NONBLOCK, then fstat), and the
     * size is bounded before anything is allocated. */
    int fd = open(spec, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return tsr_fail(err, errno == ENOENT ? TSR_EINVAL : TSR_EIO, "%s: %s: %s", name, spec,
                        strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tsr_fail(err, TSR_EINVAL, "%s: %s: not a regular file", name, spec);
    }
    if ((uint64_t)sb.st_size > FONT_MAX_BYTES || sb.st_size == 0) {
        close(fd);
        return tsr_fail(err, TSR_EINVAL, "%s: %s: %lld bytes: a font file has 1 to %zu",
                        name, spec, (long long)sb.st_size, FONT_MAX_BYTES);
    }
    size_t n = (size_t)sb.st_size, got = 0;
    unsigned char *bytes = malloc(n);
    if (!bytes) {
        close(fd);
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory reading %s", name, spec);
    }
    while (got < n) {
        ssize_t r = read(fd, bytes + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            close(fd);
            free(bytes);
            return tsr_fail(err, TSR_EIO, "%s: %s: %s", name, spec,
                            e ? strerror(e) : "shorter than its size (changed while read)");
        }
        got += (size_t)r;
    }
    close(fd);
    char label[300];
    snprintf(label, sizeof label, "%s: %s", name, spec);
    tsr_status st = tsr_font_open_memory(bytes, n, label, out, err);
    if (st != TSR_OK) {
        free(bytes);
        return st;
    }
    (*out)->bytes = bytes;
    return TSR_OK;
}

void
tsr_font_close(tsr_font *f)
{
    if (!f)
        return;
    if (f->face)
        FT_Done_Face(f->face);
    if (f->lib)
        FT_Done_FreeType(f->lib);
    free(f->bytes);
    free(f);
}

/* ---- UTF-8 ------------------------------------------------------------------------------------ */

/* The code point at s[*i] (advancing *i), or -1 for bytes that are not UTF-8 (overlong forms,
 * surrogates and values past U+10FFFF included). */
static long
utf8_next(const unsigned char *s, size_t *i)
{
    unsigned c = s[*i];
    int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (n < 0)
        return -1;
    long v = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k <= n; k++) {
        unsigned d = s[*i + k];
        if ((d & 0xC0) != 0x80)
            return -1;
        v = (v << 6) | (d & 0x3F);
    }
    static const long least[] = {0, 0x80, 0x800, 0x10000};
    if (v < least[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return -1;
    *i += (size_t)n + 1;
    return v;
}

/* ---- emitting rings --------------------------------------------------------------------------- */

typedef struct emit {
    tsr_geom_polys *out;
    tsr_geom_pt *ring;
    size_t n, cap;
    double ox, oy, scale, tol; /* pixel = (ox + fx scale, oy - fy scale) */
    double cx, cy;             /* the current point, font units */
    tsr_status st;
    tsr_error *err;
} emit;

static int
push(emit *m, double fx, double fy)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        if (cap > ((size_t)1 << 26)) {
            m->st = tsr_fail(m->err, TSR_EINVAL, "a glyph contour of more than 2^26 points");
            return 1;
        }
        tsr_geom_pt *p = realloc(m->ring, cap * sizeof *p);
        if (!p) {
            m->st = tsr_fail(m->err, TSR_ENOMEM, "out of memory");
            return 1;
        }
        m->ring = p;
        m->cap = cap;
    }
    m->ring[m->n].x = m->ox + fx * m->scale;
    m->ring[m->n].y = m->oy - fy * m->scale;
    m->n++;
    m->cx = fx;
    m->cy = fy;
    return 0;
}

static int
close_ring(emit *m)
{
    if (m->n >= 3) {
        tsr_status st = tsr_geom_polys_add(m->out, m->ring, m->n, m->err);
        if (st != TSR_OK) {
            m->st = st;
            return 1;
        }
    }
    m->n = 0;
    return 0;
}

static int
move_to(const FT_Vector *to, void *u)
{
    emit *m = u;
    return close_ring(m) || push(m, (double)to->x, (double)to->y);
}

static int
line_to(const FT_Vector *to, void *u)
{
    return push(u, (double)to->x, (double)to->y);
}

/* Chords for an arc whose second differences are at most d2 font units: uniform steps in t
 * keep a chord within d2 s / (8 n^2) * k of the curve (k = 2 for a quadratic, 6 for a cubic). */
static int
chords(const emit *m, double d2, double k)
{
    double dev = d2 * m->scale * k / 8.0;
    double n = ceil(sqrt(dev / m->tol));
    return n < 1 ? 1 : n > ARC_MAX ? ARC_MAX : (int)n;
}

static int
conic_to(const FT_Vector *c, const FT_Vector *to, void *u)
{
    emit *m = u;
    double x0 = m->cx, y0 = m->cy, x1 = (double)c->x, y1 = (double)c->y;
    double x2 = (double)to->x, y2 = (double)to->y;
    int n = chords(m, hypot(x0 - 2 * x1 + x2, y0 - 2 * y1 + y2), 2.0);
    for (int i = 1; i <= n; i++) {
        double t = (double)i / n, s = 1 - t;
        if (push(m, s * s * x0 + 2 * s * t * x1 + t * t * x2, s * s * y0 + 2 * s * t * y1 + t * t * y2))
            return 1;
    }
    return 0;
}

static int
cubic_to(const FT_Vector *c1, const FT_Vector *c2, const FT_Vector *to, void *u)
{
    emit *m = u;
    double x0 = m->cx, y0 = m->cy, x1 = (double)c1->x, y1 = (double)c1->y;
    double x2 = (double)c2->x, y2 = (double)c2->y, x3 = (double)to->x, y3 = (double)to->y;
    double a = hypot(x0 - 2 * x1 + x2, y0 - 2 * y1 + y2), b = hypot(x1 - 2 * x2 + x3, y1 - 2 * y2 + y3);
    int n = chords(m, a > b ? a : b, 6.0);
    for (int i = 1; i <= n; i++) {
        double t = (double)i / n, s = 1 - t;
        double w0 = s * s * s, w1 = 3 * s * s * t, w2 = 3 * s * t * t, w3 = t * t * t;
        if (push(m, w0 * x0 + w1 * x1 + w2 * x2 + w3 * x3, w0 * y0 + w1 * y1 + w2 * y2 + w3 * y3))
            return 1;
    }
    return 0;
}

/* The built-in glyph's cells after the corner rule: where two filled cells meet at a corner
 * only, the cell below the upper one is filled too, until no 2 x 2 square is a checkerboard.
 * Then every feature and every gap is at least a cell wide and nothing touches at a point. */
static void
builtin_cells(const unsigned char *g, unsigned char cell[9][5])
{
    for (int r = 0; r < 9; r++)
        for (int c = 0; c < 5; c++)
            cell[r][c] = (g[r] >> (4 - c)) & 1;
    for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < 8; r++)
            for (int c = 0; c < 4; c++) {
                int a = cell[r][c], b = cell[r][c + 1], d = cell[r + 1][c], e = cell[r + 1][c + 1];
                if (a && e && !b && !d) {
                    cell[r + 1][c] = 1;
                    changed = true;
                } else if (b && d && !a && !e) {
                    cell[r + 1][c + 1] = 1;
                    changed = true;
                }
            }
    }
}

static tsr_status
emit_builtin(emit *m, const unsigned char *g)
{
    unsigned char cell[9][5];
    builtin_cells(g, cell);
    for (int r = 0; r < 9; r++)
        for (int c = 0; c < 5;) {
            if (!cell[r][c]) {
                c++;
                continue;
            }
            int c1 = c;
            while (c1 < 5 && cell[r][c1])
                c1++;
            /* row r spans font y (6 - r) .. (7 - r) cells above the baseline */
            double x = m->ox + c * m->scale, y = m->oy - (CELLS_CAP - r) * m->scale;
            tsr_status st = tsr_geom_polys_add_rect(m->out, x, y, (c1 - c) * m->scale, m->scale,
                                                    m->err);
            if (st != TSR_OK)
                return st;
            c = c1;
        }
    return TSR_OK;
}

/* ---- layout ----------------------------------------------------------------------------------- */

/* The glyph of code point v, or an error naming it and where it is in the string. */
static tsr_status
glyph_of(const tsr_font *f, long v, size_t at, const char *s, FT_UInt *gi, tsr_error *err)
{
    char shown[8] = "";
    if (v >= 32 && v < 127)
        snprintf(shown, sizeof shown, " '%c'", (char)v);
    else if (v >= 0x80) /* the character's own bytes, so the message shows it */
        snprintf(shown, sizeof shown, " '%.*s'", v < 0x800 ? 2 : v < 0x10000 ? 3 : 4, s + at);
    if (f->builtin) {
        if (!tsr_text_builtin_glyph((unsigned)v))
            return tsr_fail(err, TSR_EINVAL, "%s: no glyph for U+%04lX%s at byte %zu of the text "
                            "(the built-in font has ASCII 32..126 and line breaks)", f->name, v,
                            shown, at);
        *gi = (FT_UInt)v;
        return TSR_OK;
    }
    *gi = FT_Get_Char_Index(f->face, (FT_ULong)v);
    if (*gi == 0)
        return tsr_fail(err, TSR_EINVAL, "%s: no glyph for U+%04lX%s at byte %zu of the text",
                        f->name, v, shown, at);
    return TSR_OK;
}

static tsr_status
load(const tsr_font *f, FT_UInt gi, double *advance, tsr_error *err)
{
    FT_Error e = FT_Load_Glyph(f->face, gi, FT_LOAD_NO_SCALE | FT_LOAD_NO_HINTING |
                                                FT_LOAD_NO_BITMAP | FT_LOAD_IGNORE_TRANSFORM);
    if (e)
        return tsr_fail(err, TSR_EINVAL, "%s: glyph %u: %s", f->name, gi, ft_reason(e));
    if (f->face->glyph->format != FT_GLYPH_FORMAT_OUTLINE)
        return tsr_fail(err, TSR_EINVAL, "%s: glyph %u has no outline", f->name, gi);
    *advance = (double)f->face->glyph->advance.x;
    return TSR_OK;
}

/* Widths of the lines in font units (the built-in font: cells, less the last glyph's empty
 * column), into w[nlines] (NULL: count only). */
static tsr_status
measure(const tsr_font *f, const char *s, double *w, size_t *nlines, tsr_error *err)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, line = 0;
    double pen = 0;
    bool any = false;
    for (;;) {
        if (u[i] == 0 || u[i] == '\n') {
            if (w)
                w[line] = f->builtin && any ? pen - 1 : pen;
            line++;
            if (u[i] == 0)
                break;
            i++;
            pen = 0;
            any = false;
            continue;
        }
        size_t at = i;
        long v = utf8_next(u, &i);
        if (v < 0)
            return tsr_fail(err, TSR_EINVAL, "%s: the text is not UTF-8 at byte %zu", f->name, at);
        FT_UInt gi;
        tsr_status st = glyph_of(f, v, at, s, &gi, err);
        if (st != TSR_OK)
            return st;
        double adv = CELLS_ADVANCE;
        if (!f->builtin && (st = load(f, gi, &adv, err)) != TSR_OK)
            return st;
        pen += adv;
        any = true;
    }
    *nlines = line;
    return TSR_OK;
}

tsr_status
tsr_text_polys(const tsr_font *f, const char *s, const tsr_text_style *st, tsr_geom_polys *out,
               tsr_error *err)
{
    if (!f || !s || !st || !out)
        return tsr_fail(err, TSR_EINVAL, "tsr_text_polys: NULL argument");
    if (!(st->height > 0 && st->height < TSR_GEOM_LIMIT))
        return tsr_fail(err, TSR_EINVAL, "%s: text height %g px: expected > 0", f->name, st->height);
    if (!(st->line_spacing >= 0 && st->line_spacing < 1e6))
        return tsr_fail(err, TSR_EINVAL, "%s: line spacing %g: expected >= 0 (0: the font's)",
                        f->name, st->line_spacing);
    if (!f->builtin && !(st->tol > 0 && st->tol < 1e6))
        return tsr_fail(err, TSR_EINVAL, "%s: tolerance %g px: expected > 0", f->name, st->tol);
    size_t nlines = 0;
    tsr_status rc = measure(f, s, NULL, &nlines, err);
    if (rc != TSR_OK)
        return rc;
    double *w = calloc(nlines, sizeof *w);
    if (!w)
        return tsr_fail(err, TSR_ENOMEM, "out of memory");
    if ((rc = measure(f, s, w, &nlines, err)) != TSR_OK) {
        free(w);
        return rc;
    }
    double scale = st->height / f->cap;                 /* px per font unit */
    double sp = st->line_spacing > 0 ? st->line_spacing * st->height : f->line * scale;
    double last = (double)(nlines - 1) * sp;            /* the last baseline, first at 0 */
    double anchor = st->valign == TSR_TEXT_TOP        ? -st->height
                    : st->valign == TSR_TEXT_BASELINE ? 0
                    : st->valign == TSR_TEXT_BOTTOM   ? last
                                                      : (last - st->height) / 2;
    size_t npt0 = out->npt, nring0 = out->nring;
    emit m = {.out = out, .scale = scale, .tol = st->tol, .st = TSR_OK, .err = err};
    static const FT_Outline_Funcs funcs = {move_to, line_to, conic_to, cubic_to, 0, 0};
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, line = 0;
    double pen = 0;
    for (; rc == TSR_OK;) {
        double dx = st->halign == TSR_TEXT_LEFT ? 0 : st->halign == TSR_TEXT_CENTER ? -w[line] / 2
                                                                                    : -w[line];
        if (u[i] == 0)
            break;
        if (u[i] == '\n') {
            i++;
            line++;
            pen = 0;
            continue;
        }
        size_t at = i;
        long v = utf8_next(u, &i);
        FT_UInt gi = 0;
        if ((rc = glyph_of(f, v, at, s, &gi, err)) != TSR_OK)
            break;
        m.ox = (pen + dx) * scale;
        m.oy = (double)line * sp - anchor;
        if (f->builtin) {
            rc = emit_builtin(&m, tsr_text_builtin_glyph((unsigned)v));
            pen += CELLS_ADVANCE;
            continue;
        }
        double adv = 0;
        if ((rc = load(f, gi, &adv, err)) != TSR_OK)
            break;
        m.n = 0;
        FT_Error e = FT_Outline_Decompose(&f->face->glyph->outline, &funcs, &m);
        if (m.st != TSR_OK)
            rc = m.st;
        else if (e)
            rc = tsr_fail(err, TSR_EINVAL, "%s: glyph %u's outline: %s", f->name, gi, ft_reason(e));
        else if (close_ring(&m))
            rc = m.st;
        pen += adv;
    }
    free(m.ring);
    free(w);
    if (rc != TSR_OK) { /* out as it was */
        out->npt = npt0;
        out->nring = nring0;
    }
    return rc;
}
