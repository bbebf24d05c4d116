/* text: strings as polygons, for the exact-area rasterizer (geom/geom.h).
 *
 * A font is the built-in manhattan font (`builtin`) or a TrueType/OpenType file read through
 * FreeType. A string is laid out left to right with each glyph's advance (no kerning, no
 * shaping: what lithographic labels need, and what gives the same outlines on every machine),
 * '\n' starting a new line; the result is a polygon set in pixel coordinates, y down, placed
 * by its anchor. Curves (quadratic and cubic Bezier arcs of outline fonts) are flattened into
 * chords within `tol` px of the curve.
 *
 * Sizes: `height` is the height of a capital letter (H) in pixels: the manhattan font's 7
 * cells, an outline font's OS/2 cap height (or the H glyph's top when the font has none).
 * docs/text.md has the conventions, the built-in font's design rules and the errors. */
#ifndef TSR_TEXT_H
#define TSR_TEXT_H

#include "geom/geom.h"
#include "tiles/tiles.h"

#include <stddef.h>

typedef struct tsr_font tsr_font;

/* The built-in font's name in designs and tsr_font_open. */
#define TSR_FONT_BUILTIN "builtin"

/* Open a font: TSR_FONT_BUILTIN, or the path of a font file (a regular file: a FIFO or device
 * is refused before it is opened for reading). `where` names the place in messages (a key
 * path; NULL: the path). TSR_EINVAL (not a font FreeType reads, no outlines, not a regular
 * file), TSR_EIO (cannot be read), TSR_ENOMEM. */
tsr_status
tsr_font_open(const char *spec, const char *where, tsr_font **out, tsr_error *err);

/* The same from bytes in memory (the fuzz target; `name` names it in messages). The bytes must
 * outlive the font. */
tsr_status
tsr_font_open_memory(const unsigned char *bytes, size_t n, const char *name, tsr_font **out,
                     tsr_error *err);

void
tsr_font_close(tsr_font *f);

typedef enum tsr_text_halign { TSR_TEXT_LEFT, TSR_TEXT_CENTER, TSR_TEXT_RIGHT } tsr_text_halign;

/* The vertical anchor: the top of the first line's capitals, the first line's baseline, the
 * middle between the first line's cap top and the last line's baseline, or the last line's
 * baseline. */
typedef enum tsr_text_valign {
    TSR_TEXT_TOP,
    TSR_TEXT_BASELINE,
    TSR_TEXT_MIDDLE,
    TSR_TEXT_BOTTOM
} tsr_text_valign;

typedef struct tsr_text_style {
    double height;         /* capital height, px (> 0) */
    tsr_text_halign halign; /* lines aligned on the anchor: left edges, centres or right ends */
    tsr_text_valign valign;
    double line_spacing;   /* baseline to baseline in capital heights; 0: the font's own */
    double tol;            /* chord tolerance, px (> 0); the built-in font has no curves */
} tsr_text_style;

/* Append the outlines of UTF-8 `s` to `out`, the anchor at (0, 0), y down. TSR_EINVAL for
 * text that is not UTF-8 or a character the font has no glyph for (naming it, U+XXXX, and
 * its byte offset in the string), a style out of range; TSR_ENOMEM. `out` is unchanged on
 * failure. */
tsr_status
tsr_text_polys(const tsr_font *f, const char *s, const tsr_text_style *st, tsr_geom_polys *out,
               tsr_error *err);

/* The built-in font's glyph of code point c (32..126): 9 rows of 5 bits, bit 4 the left
 * column, rows 0..6 above the baseline (row 6 sits on it), 7..8 the descenders; NULL for
 * others. The rows are as drawn, before the corner rule (docs/text.md). */
const unsigned char *
tsr_text_builtin_glyph(unsigned c);

#endif
