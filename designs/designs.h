/* designs: YAML design file -> validated, prepared node DAG (docs/format.md §2).
 *
 * The only libyaml user. A design is parsed with libyaml's event API into a small tree that
 * keeps every value's line:column, then checked key by key against the parameter tables of
 * nodes/ (sources, traits): nothing is rendered from a design that did not load. Every error
 * reads "FILE:LINE:COL: key.path: what", e.g.
 *
 *     design.yaml:12:5: root.children[0].sigma: must be in 0.3..256
 *
 * Loading is reentrant: any number of threads may load designs at once. A loaded design is
 * read-only and shared like every tsr_design (nodes/nodes.h).
 *
 * Where docs/format.md §2 is silent, the loader decides:
 * - Integers are -?(0|[1-9][0-9]*) in int64: no '+', no leading zeros (YAML 1.1 would read
 *   octal), no '_', hex or exponent. Every integer parameter is a placement value, so every one
 *   is also held to |v| <= 2^40.
 * - Reals are what strtod takes (hex floats, "+1", ".5", "5." included) except inf/nan in any
 *   spelling and values that overflow a double; float32 values are range-checked as written,
 *   then rounded, and refused if they overflow a float. Parsed in the C locale.
 * - Numbers and booleans must be plain scalars ("5" is a string); names, enum values, trait
 *   names, refs and paths may be quoted. An empty value, ~ and null are "missing value".
 *   Tags of any kind, non-scalar keys, NUL characters and a second document are errors.
 * - Positions: a bad value points at the value (list elements at the element, path "[i]"),
 *   unknown and duplicate keys at the key (the second one), a missing key at the mapping
 *   that lacks it, a trait's or source's check() at the key it names (else the mapping).
 * - "did you mean": edit distance <= 2 (a transposition counts 1), else the one candidate the
 *   word is a prefix of (>= 3 characters); an edge key of another trait says whose it is.
 * - `swath:` needs `order: swath` and `order: swath` needs `swath:`. Calibration t must start
 *   at exactly 0 and end at exactly 1.
 * - An image source's path is absolute or relative to the design file's folder. With a
 *   reader, `size` may be omitted and must equal the image if given; the reader's status
 *   (TSR_EIO for a missing file) and message are kept, prefixed with our position. With a
 *   header reader (read_size) only reached images are decoded, after the tree is ordered.
 * - Named nodes never reached from root are validated, then left out of design->nodes.
 *   Inline nodes are named by their key path; paths longer than 240 characters are shortened
 *   in the middle ("...") in names, wheres and messages.
 * - At most TSR_DESIGN_MAX_DEPTH nested node levels and TSR_DESIGN_MAX_YAML_DEPTH nested
 *   collections.
 * - With `pixel: P` (a pitch with a unit), lengths may be written with units (docs/units.md):
 *   converted to pixels on the decimal text, exactly for whole-pixel kinds (else an error with
 *   the value in pixels), rounded once for real ones; design->pixel_nm keeps the pitch. */
#ifndef TSR_DESIGNS_H
#define TSR_DESIGNS_H

#include "nodes/nodes.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Deepest chain of nodes (inline `node:` nesting plus `ref:` hops) a design may have. The
 * loader recurses once per level; deeper designs are refused with a message, never a crash. */
#define TSR_DESIGN_MAX_DEPTH 2000

/* Deepest nesting of YAML collections; the tree is built without recursion, this only bounds
 * what a hostile file can make us allocate per level. */
#define TSR_DESIGN_MAX_YAML_DEPTH 10000

/* Largest design text, in bytes (16 MiB: a polygon of some 700 000 points). The file is
 * read whole and its YAML tree costs several times its size, so a bigger file, or one that
 * never ends (/dev/zero, a pipe), is refused (TSR_EINVAL) after reading at most this much. */
#define TSR_DESIGN_MAX_BYTES ((size_t)16 << 20)

typedef struct tsr_design_opts {
    /* Decodes an image source: a w x h array of values in [0, 1] the caller of the loader then
     * owns (freed with free()). The engine passes image/'s tsr_png_read_gray. NULL: images
     * are not decoded (src->img stays NULL) and a node with an image source must give `size`
     * unless read_size is given. */
    tsr_status (*read_image)(const char *path, int64_t *w, int64_t *h, float **px,
                             tsr_error *err);
    /* Reads an image's header only: its size, and in *scratch the bytes decoding it takes
     * beyond the w x h floats (image/'s tsr_png_read_info). Given, the loader reads only
     * headers while parsing (size, validation, a missing or corrupt header is an error as
     * before) and decodes afterwards, only the images of nodes reached from root (named nodes
     * nobody refs are validated, never decoded). Without it, images are decoded as they are
     * parsed, unreferenced ones included. */
    tsr_status (*read_size)(const char *path, int64_t *w, int64_t *h, int64_t *scratch,
                            tsr_error *err);
    /* Leave decoding and the traits' large tables to the caller (tsr_design_build), e.g. until
     * a memory plan has counted them: tsr_engine_load sets it and tsr_engine_new builds. */
    bool defer;
} tsr_design_opts;

/* Load the design file at `path` (borrowed; it names the file in messages and images are
 * resolved against its folder). `opts` may be NULL (= all defaults). Returns a prepared design
 * the caller frees with tsr_design_free, or NULL with `err` (may be NULL) filled:
 * TSR_EINVAL for a file that cannot be opened or is a folder (bad input, exit 2: "PATH: cannot
 * open: ..."), for an invalid design or one larger than TSR_DESIGN_MAX_BYTES; TSR_EIO for a
 * read that fails after the open;
 * TSR_ENOMEM, or whatever status opts->read_image returned for an image. */
tsr_design *
tsr_design_load(const char *path, const tsr_design_opts *opts, tsr_error *err);

/* The same from memory: `len` bytes of `text` (need not be NUL-terminated). `name` (may be
 * NULL: "<string>") stands for the file in messages and becomes design->path; `base_dir` (may
 * be NULL: the current directory) is where relative image paths start. For tests and fuzzing. */
tsr_design *
tsr_design_load_string(const char *text, size_t len, const char *name, const char *base_dir,
                       const tsr_design_opts *opts, tsr_error *err);

/* Print the canonical tree of a loaded design to `f`: the header and output section, then
 * every node in design order (children first, root last) and every edge with every parameter,
 * defaults filled in, walking the same parameter tables the loader used. Reals are printed
 * with the fewest digits that read back to the same double (float for float32 values).
 * Used by `tessera check`. Write errors are left to the caller (ferror(f)). */
void
tsr_design_dump(const tsr_design *d, FILE *f);

/* Print the design back as a design file that loads to the same parameters, every length in
 * pixels (docs/units.md): `tessera check --pixels`. Keys at their defaults are left out; every
 * node but root is a named node (its own name when that is a plain word, else a generated
 * one) used through `ref:`; image paths are absolute. The pitch (`pixel:`) is kept, in nm.
 * Loading the printed text gives the same canonical form, so the same samples and fingerprint
 * (tests/test_units.c). Write errors are left to the caller (ferror(f)). */
void
tsr_design_write_pixels(const tsr_design *d, FILE *f);

/* A length of `px` pixels in physical units for people ("12.5 um", "3 mm", "250 nm": the
 * largest unit that keeps the number >= 1, 6 significant digits) at the design's pitch;
 * "" when the design states none. */
void
tsr_design_length_text(const tsr_design *d, double px, char *buf, size_t size);

/* The canonical form's version: its first line is "tessera-canonical N". Bump it with any
 * change to the form (every fingerprint changes with it, docs/streaming.md §7). */
#define TSR_CANONICAL_VERSION 1

/* Receives the canonical form in pieces; the pieces concatenated are the form. */
typedef void (*tsr_canonical_put)(void *ctx, const void *bytes, size_t n);

/* Feed `put` the canonical form of a loaded (prepared) design: exactly what determines its
 * samples, from the parsed values. Text lines; the version tag, the output section, then every
 * node reached from root in the loader's depth-first order (children first) with its size,
 * fill, source (kind and every parameter of its table, an image as "input K", K counting the
 * image sources in that order) and edges (trait name, child id, blend, offset, mask, every
 * parameter of the trait's table, prepared), then the root's id. Integers in decimal, reals as
 * the hex of their IEEE bits (d + 16 digits, f + 8 digits), enums by name, keys in table order.
 * Names, tiles, paths and positions are left out: they change no sample. Never calls
 * tsr_design_dump, whose layout may change without touching the form. */
void
tsr_design_canonical(const tsr_design *d, tsr_canonical_put put, void *ctx);

#endif
