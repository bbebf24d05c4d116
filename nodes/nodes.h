/* nodes: the node DAG a design describes, its sources, and the trait table.
 *
 * A design is a DAG of nodes. Each node is a float32 raster of size w x h: its fill, then its
 * source (if any) drawn over it, then each edge's layer blended in order (docs/format.md §3).
 * An edge joins a child node to its parent through a trait: a small vtable (need + layer)
 * plus a parameter table that drives YAML parsing, validation, hashing and printing.
 *
 * nodes/ knows nothing of YAML, caches or threads: the designs/ loader fills these structs,
 * the engine schedules the work. Everything here is read-only once a design is prepared, so
 * any number of threads may call need/layer/source functions concurrently. */
#ifndef TSR_NODES_H
#define TSR_NODES_H

#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TSR_COORD_MAX ((int64_t)1 << 40) /* |coordinate| and size bound, docs/format.md §2 */
#define TSR_TILE_MAX 16384
#define TSR_NEED_MAX 16 /* most child rects one need() call returns */

/* ---- parameter tables ------------------------------------------------------ */

typedef enum tsr_ptype {
    TSR_P_INT,     /* int64_t; with `names`, also one of those words, stored as -1 - index */
    TSR_P_INT2,    /* int64_t[2] */
    TSR_P_INT4,    /* int64_t[4] */
    TSR_P_F32,     /* float: parsed as double, rounded once to float32 */
    TSR_P_F32_2,   /* float[2] */
    TSR_P_F64,     /* double */
    TSR_P_F64_2,   /* double[2] */
    TSR_P_F64_4,   /* double[4] */
    TSR_P_POINTS,  /* tsr_points: a list of [a, b] pairs of doubles */
    TSR_P_ENUM,    /* int: index into tsr_param.names */
    TSR_P_BOOL,    /* bool */
    TSR_P_PROFILE, /* tsr_profile */
    TSR_P_KERNEL,  /* tsr_kernel */
    TSR_P_PATH,    /* char *: a file path, resolved against the design's folder */
    TSR_P_NAME,    /* char *: a name, as written (a layout's cell) */
    TSR_P_LAYERS,  /* tsr_layer_map: [[layer, datatype, value], ...] or [[name, value], ...] */
    TSR_P_EXPR     /* tsr_expr * (nodes/expr.h): a per-copy function of (i, j); NULL when
                    * absent, else owned */
} tsr_ptype;

enum {
    TSR_PF_REQUIRED = 1u << 0, /* the key must be present */
    TSR_PF_MIN_OPEN = 1u << 1, /* value > min rather than >= min */
    TSR_PF_MAX_OPEN = 1u << 2, /* value < max rather than <= max */
    TSR_PF_RANGE = 1u << 3,    /* check every number against [min, max] */
    TSR_PF_RECT = 1u << 4,     /* TSR_P_INT4 [x, y, w, h]: w and h must be > 0 where the key
                                * is given (an all-zero default can still mean "none") */
    TSR_PF_UNITLESS = 1u << 5, /* not a length: takes no physical unit (see below) */
    TSR_PF_FORM_IF_SET = 1u << 6, /* in the canonical form only where it differs from its
                                   * default: a key added to a table later leaves the
                                   * fingerprints of designs without it as they were */
    TSR_PF_MICRONS = 1u << 7   /* TSR_P_F64, _F64_4: a physical length kept in micrometres, not
                                * pixels (a layout's pitch and window): a plain number is um,
                                * one with a unit (nm, um, mm) is converted to um exactly, with
                                * or without a design pitch */
};

/* One key of a parameter struct. A static array of these is the only description of a
 * trait's or source's parameters: parsing, validation, the canonical dump and `tessera check`
 * all walk it. */
typedef struct tsr_param {
    const char *key;          /* YAML key */
    tsr_ptype type;           /* storage and syntax */
    size_t offset;            /* offsetof() into the parameter struct */
    unsigned flags;           /* TSR_PF_* */
    double min, max;          /* with TSR_PF_RANGE: bounds for every number */
    size_t min_count;         /* TSR_P_POINTS: fewest pairs allowed */
    const char *const *names; /* TSR_P_ENUM: NULL-terminated value names */
    const char *help;         /* one line for `tessera check` and error hints */
} tsr_param;

/* Lengths (docs/units.md): every TSR_P_INT, _INT2, _INT4 parameter is a length in whole
 * pixels and every TSR_P_F64, _F64_2, _F64_4 and _POINTS parameter a length in pixels, unless
 * its table marks it TSR_PF_UNITLESS (a count, a factor, a value range). With a `pixel:` pitch
 * in the design, a length may be written with a unit (`12.5um`, `3mm`, `250nm`): the loader
 * converts it to pixels, exactly for the integer kinds (an error when it is not a whole
 * number of pixels), rounded once to double for the real ones. float32 parameters (values,
 * fills, kernel weights) are never lengths. Parameter structs always hold pixels. */
static inline bool
tsr_param_is_length(const tsr_param *pm)
{
    if (pm->flags & (TSR_PF_UNITLESS | TSR_PF_MICRONS))
        return false;
    switch (pm->type) {
    case TSR_P_INT:
    case TSR_P_INT2:
    case TSR_P_INT4:
    case TSR_P_F64:
    case TSR_P_F64_2:
    case TSR_P_F64_4:
    case TSR_P_POINTS: return true;
    default: return false;
    }
}

/* A list of [a, b] pairs (polygon points, profile points, calibration). Owned by its struct. */
typedef struct tsr_points {
    double (*p)[2];
    size_t n;
} tsr_points;

/* A layout source's layer table: which shapes of the file are drawn, and with what value, in
 * table order. An entry names a layer by number and datatype (GDSII, OASIS) or by name (DXF
 * layers; then `name` is set and layer, datatype are unused). Owned by its struct. */
typedef struct tsr_layer_entry {
    int64_t layer, datatype;
    char *name;  /* NULL unless named */
    float value; /* drawn with coverage c as P = P (1 - c) + value c */
} tsr_layer_entry;

typedef struct tsr_layer_map {
    tsr_layer_entry *e;
    size_t n;
} tsr_layer_map;

/* Distance profile f(d), docs/format.md §5. */
typedef enum tsr_profile_kind {
    TSR_PROFILE_LINEAR,
    TSR_PROFILE_SPHERE,
    TSR_PROFILE_COSINE,
    TSR_PROFILE_GAUSSIAN,
    TSR_PROFILE_POINTS
} tsr_profile_kind;

typedef struct tsr_profile {
    tsr_profile_kind kind;
    double s;       /* gaussian: s > 0 */
    tsr_points pts; /* points: d strictly increasing, d0 >= 0 */
} tsr_profile;

/* An explicit convolution kernel, rows are y. Both sizes odd, <= 63. Values rounded to float. */
typedef struct tsr_kernel {
    int64_t w, h; /* 0 x 0 when absent */
    float *k;     /* w*h, owned */
} tsr_kernel;

/* Frees what a parameter struct owns (points, kernels, paths), walking its table. */
void
tsr_params_free(const tsr_param *params, size_t n, void *st);

/* Cross-field validation reports through this, naming the key that is wrong; the loader
 * turns it into "file:line:col: path.key: msg". Implemented by whoever validates. */
typedef struct tsr_check tsr_check;
struct tsr_check {
    tsr_status (*fail)(tsr_check *c, const char *key, const char *msg);
};

tsr_status
tsr_check_failf(tsr_check *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- sources (docs/format.md §4) ------------------------------------------------ */

#include "nodes/optics.h" /* tsr_optic: surface and noise keys (docs/optics.md) */

/* Source kinds, in the order of nodes/sources.def. */
typedef enum tsr_source_kind {
#define X(ID, params, key, value, family, gpu, caps) TSR_SRC_##ID,
#include "nodes/sources.def"
#undef X
    TSR_SRC_COUNT
} tsr_source_kind;

/* What the planners may assume of a source kind: the caps column of nodes/sources.def. */
enum {
    TSR_SRC_CAP_COVERS = 1u << 0, /* it sets every pixel of its node (once its data is there):
                                   * the fill under it is never seen */
    TSR_SRC_CAP_BOXED = 1u << 1,  /* it draws only inside tsr_source_box (a shape): pixels
                                   * outside keep the fill, and aa blends over it */
    TSR_SRC_CAP_FILE = 1u << 2    /* it reads a file (`path`): hashed into the stream's
                                   * fingerprint, its decoded pixels counted by the plan */
};

/* `aa: exact`: a shape's exact area coverage (geom/, docs/coverage.md §shapes) instead of
 * n x n sub-samples. */
#define TSR_AA_EXACT ((int64_t)-1)

/* One struct for every source kind; a kind's table names the fields it uses. */
typedef struct tsr_source {
    tsr_source_kind kind;
    double center[2];
    double radius;
    double radii[2];
    double rect[4];      /* x, y, w, h */
    tsr_points points;   /* polygon */
    double from[2], to[2];
    float values[2];     /* gradients: a, b */
    float value;         /* shapes: default 1 */
    int64_t aa;          /* 0 = off, 1..16 sub-samples, or TSR_AA_EXACT */
    char *path;          /* image: absolute or relative to the cwd (the loader resolved it) */
    /* decoded image, filled by the engine before rendering (the image owner is the source) */
    float *img;          /* iw*ih values in [0, 1]; NULL until decoded (tsr_design_build) */
    int64_t iw, ih;      /* its size, from the header (0 x 0 when no reader was given) */
    int64_t scratch;     /* bytes decoding it takes beyond the iw*ih floats (rows, zlib) */
    char *where;         /* "file:line:col: key.path" of the source, for late errors (of its
                          * `image:` value when decoding is left for later) */
    /* layout (nodes/layout_src.c): the file is `path` */
    char *cell;          /* the cell drawn; NULL: the file's single top cell */
    tsr_layer_map layers;
    double pitch, pitch_nm; /* um per pixel, or nm per pixel: at most one is given; neither:
                             * the design's `pixel:` (tsr_src_layout_open sets pitch_nm) */
    double window[4];    /* x0, y0, x1, y1 in um, of the transformed layout; all 0: its box */
    /* a layout's transform (about its origin) is `rotate`, `mirror`, `scale` and `translate`
     * below, the fields text and shapes use */
    void *lay;           /* the opened layout and its mapping (tsr_src_layout_open), owned */
    /* text (nodes/text_src.c): `text: STRING`; the font file, when one is given, is `path` */
    char *text;
    double height;        /* capital height, px */
    double position[2];   /* where the anchor goes, px */
    int halign, valign;   /* tsr_text_halign, tsr_text_valign (text/text.h) */
    double rotate;        /* degrees, counterclockwise as the image is seen, about the anchor */
    bool mirror;          /* mirrored left-right about the anchor, before the rotation */
    double line_spacing;  /* capital heights baseline to baseline; 0: the font's */
    double tolerance;     /* chords within this of an outline's curves, px */
    /* shapes and layouts placed by a transform (docs/shape-transforms.md, docs/layouts.md),
     * with `rotate` and `mirror` above: mirror, scale, rotate about the shape's centre (a
     * layout's origin), then translate */
    double scale;         /* factor, > 0, default 1 */
    double translate[2];  /* px, after the rest */
    void *vec;            /* text, booleans: the outlines (nodes/vector.h), owned */
    void *exact;          /* `aa: exact` and transformed shapes: their rings, made once at load
                           * (tsr_src_shape_prepare), owned; a shallow copy with other
                           * parameters (a repeat's per-copy source) makes its own per call */
    /* booleans (nodes/boolean_src.c): a op b of the operands' outlines, then grown by offset */
    double offset;        /* px, > 0 grows, < 0 shrinks */
    int join;             /* tsr_geom_join: round, square, miter */
    struct tsr_source *operands; /* booleans: the operands as parsed, a's then b's, kept only
                                  * to print the design back (their outlines dropped); owned */
    size_t nop_a, nop_b;  /* how many of them are a's, b's */
    tsr_optic optic;     /* surface and noise keys (nodes/optics.h); terms in `points` */
} tsr_source;

/* A row of the source table (nodes/sources.def): how a source mapping is recognised
 * (`shape: circle`, `gradient: linear`, `image: path`), its keys, and its CPU functions. */
typedef struct tsr_source_desc {
    const char *disc_key;   /* "shape", "gradient" or "image" */
    const char *disc_value; /* "circle", ... ; NULL for image (its value is the path) */
    tsr_source_kind kind;
    const tsr_param *params;
    size_t nparams;
    unsigned caps;          /* TSR_SRC_CAP_* */
    /* draw over px (rect r of the node, holding the fill): tsr_source_render */
    void (*render)(const tsr_source *s, tsr_rect r, float *px);
    /* cross-field rules after parsing, naming the key (may be NULL) */
    tsr_status (*check)(const tsr_source *s, tsr_check *c);
    /* bytes render allocates for a rect at most w px wide (may be NULL: none) */
    size_t (*scratch)(const tsr_source *s, int64_t w);
} tsr_source_desc;

extern const tsr_source_desc tsr_source_descs[TSR_SRC_COUNT];

/* Whether source s's kind has every capability in `caps` (TSR_SRC_CAP_*). */
static inline bool
tsr_source_has(const tsr_source *s, unsigned caps)
{
    return (tsr_source_descs[s->kind].caps & caps) == caps;
}

/* The source families' CPU functions the table names (nodes/sources.c). */
#define X(ID, params, key, value, family, gpu, caps)                                             \
    void tsr_src_##family##_render(const tsr_source *s, tsr_rect r, float *px);                 \
    tsr_status tsr_src_##family##_check(const tsr_source *s, tsr_check *c);                     \
    size_t tsr_src_##family##_scratch(const tsr_source *s, int64_t w);
#include "nodes/sources.def"
#undef X

/* The text source (nodes/text_src.c, docs/text.md). open: lay the string out in its font
 * (the built-in one, or `path`) and place it, once per design, by the loader: TSR_EINVAL
 * ("no glyph for U+00E9 ...", a font FreeType cannot read), TSR_EIO, TSR_ENOMEM. */
tsr_status
tsr_src_text_open(tsr_source *s, tsr_error *err);
void
tsr_src_text_close(tsr_source *s);

/* Boolean sources (nodes/boolean_src.c, docs/booleans.md): append operand source o's outlines
 * (a shape or text, in node pixels; circles and arcs as chords within tol px) to *p, for the
 * loader; TSR_EINVAL for a kind that has no outline (a gradient, an image, a layout), naming
 * it. Then make s's outlines from the two sets (taken): s->kind's operation, then the offset.
 * TSR_EINVAL (coordinates beyond geom's range), TSR_ENOMEM. */
tsr_status
tsr_src_boolean_operand(tsr_source *o, double tol, void *p, tsr_error *err);
tsr_status
tsr_src_boolean_make(tsr_source *s, void *a, void *b, tsr_error *err);

/* The layout source (nodes/layout_src.c, docs/layouts.md §8). open: read s->path (format by
 * content) into s->lay, pick the cell, resolve the table; once per design, by the loader, who
 * passes the design's `pixel:` in nm (0: none: a source without a pitch of its own takes it,
 * written into s->pitch_nm; one with both must agree, else TSR_EINVAL naming the keys);
 * TSR_EINVAL with the reader's "file: byte N: what" (DXF: line), TSR_EIO, TSR_ENOMEM. size: the
 * window in pixels, rounded up (0 x 0 unopened). bytes: what the opened model holds. draw:
 * the source over rect r (tsr_source_render's contract, with a status: TSR_ENOMEM, TSR_EINTR).
 * describe: `tessera check`'s lines (cells, shapes, layers found and unmapped, boxes). */
tsr_status
tsr_src_layout_open(tsr_source *s, double pixel_nm, tsr_error *err);
void
tsr_src_layout_close(tsr_source *s);
void
tsr_src_layout_size(const tsr_source *s, int64_t *w, int64_t *h);
int64_t
tsr_src_layout_bytes(const tsr_source *s);
tsr_status
tsr_src_layout_draw(const tsr_source *s, tsr_rect r, float *px, tsr_error *err);
void
tsr_src_layout_describe(const tsr_source *s, FILE *f, int indent);

/* Defaults for a kind (value 1, aa off). */
void
tsr_source_defaults(tsr_source *s, tsr_source_kind kind);

/* Cross-field rules (r_in < r_out, distinct gradient ends, ...). */
tsr_status
tsr_source_check(const tsr_source *s, tsr_check *c);

/* Draw the source over `px` (rect r of the node, rows of r.w floats, holding the fill).
 * Shapes write only covered pixels (aa blends with what is there), gradients and images every
 * pixel. Thread-safe. */
void
tsr_source_render(const tsr_source *s, tsr_rect r, float *px);

void
tsr_source_free(tsr_source *s);

/* tsr_source_render with a status: the sources that allocate while drawing (layouts, `aa:
 * exact` shapes) return TSR_ENOMEM (or TSR_EINTR on a stop request) instead of leaving the rect
 * as it was with a warning; px is unfinished then. The CPU evaluator calls this. */
tsr_status
tsr_source_draw(const tsr_source *s, tsr_rect r, float *px, tsr_error *err);

/* Bytes tsr_source_render allocates for a while drawing s over a rect at most w px wide: a
 * polygon's edge and crossing lists (and per-pixel counts with aa); 0 for the other sources. */
size_t
tsr_source_scratch(const tsr_source *s, int64_t w);

/* The part of rect r a shape source may draw on: its bounding box grown by 2 px (so rounding
 * never cuts a pixel the inside test takes) and clipped to r; may be empty. Every backend tests
 * exactly these pixels. Gradients and images: meaningless (they cover every pixel). */
tsr_rect
tsr_source_box(const tsr_source *s, tsr_rect r);

/* ---- nodes, edges, designs ------------------------------------------------------ */

typedef enum tsr_blend {
    TSR_BLEND_OVER,
    TSR_BLEND_ADD,
    TSR_BLEND_MAX,
    TSR_BLEND_MIN,
    TSR_BLEND_MULTIPLY
} tsr_blend;

extern const char *const tsr_blend_names[];   /* NULL-terminated, indexed by tsr_blend */
extern const char *const tsr_mask_names[];    /* "none", "nonzero" */

typedef struct tsr_trait tsr_trait;
typedef struct tsr_node tsr_node;

typedef struct tsr_edge {
    const tsr_trait *trait;
    tsr_node *child;   /* borrowed: the design owns every node */
    tsr_blend blend;
    int64_t offset[2]; /* child (0,0) at parent (ox, oy) */
    int mask;          /* 0 none, 1 nonzero */
    void *params;      /* trait->params_size bytes, owned */
    void *state;       /* what trait->prepare built (tables), owned */
    char *where;       /* "file:line:col: key.path" */
} tsr_edge;

struct tsr_node {
    char *name;        /* ref name, or the key path of an inline node ("root.children[0].node") */
    int64_t w, h;
    int64_t tile;      /* tile edge for this node (the loader fills the design default) */
    float fill;
    tsr_source *source; /* NULL when none; owned */
    tsr_edge *edges;    /* owned array */
    size_t nedges;
    size_t id;          /* index in design->nodes */
    char *where;
};

/* The number key a repeat's `source-*` parameter sets ("radius", "value") in child's source
 * table: its row, or NULL when the child has no source or its kind has no such key (nodes/
 * repeat.c; the GPU's per-copy sources read the same row). */
const tsr_param *
tsr_source_key(const tsr_node *child, const char *key);

typedef enum tsr_order { TSR_ORDER_RASTER, TSR_ORDER_SWATH } tsr_order;
typedef enum tsr_corner { TSR_TOP_LEFT, TSR_TOP_RIGHT, TSR_BOTTOM_LEFT, TSR_BOTTOM_RIGHT } tsr_corner;

typedef struct tsr_output {
    int64_t depth;          /* 8 or 16 */
    double range[2];        /* lo != hi */
    tsr_points calibration; /* n == 0: none */
    int order;              /* tsr_order */
    int64_t swath_width;    /* swath order only */
    bool serpentine;
    int start;              /* tsr_corner */
    /* `depth: 1 | 2 | 4` (docs/outputs.md): depth is then 8 (the samples the backends
     * compute, as for depth 8) and the engine dithers them to `bits` per pixel, rows packed
     * MSB-first and padded to whole bytes; 0 for a depth 8 or 16 output */
    int bits;
    int dither;             /* tsr_dither_kind (nodes/dither.h), with bits only */
    int dither_size;        /* the threshold array's edge N */
    /* `stage:` (docs/outputs.md §7): the machine's scan, which changes only the order of the
     * samples. bidir: 0 none, 1 every other row of a swath reversed (right to left), 2 every
     * other swath's rows reversed; mirror_x, y_up: the machine's axes point the other way */
    int bidir;
    bool mirror_x, y_up;
    /* stage overlap (docs/outputs.md §8): each swath goes on `overlap` columns into the next
     * one (stream order), the dose there feathered: feather 0 linear, 1 cosine */
    int64_t overlap;
    int feather;
    /* overscan: `overscan` samples of `overscan_value` (a sample, or a level at depth 1, 2, 4)
     * at both ends of every stream row */
    int64_t overscan, overscan_value;
    /* bit planes (docs/outputs.md §2): 0 none; else each `planes` rows of a swath (stream
     * order) are sent as depth 1-bit planes, top bit first */
    int64_t planes;
} tsr_output;

/* The corner the stream starts from, the stage's axes applied (mirror_x swaps left and right,
 * y_up top and bottom): a tsr_corner. */
int
tsr_output_start(const tsr_output *o);

/* Whether a row streamed as row `i` of swath `k` (both counted in stream order from 0) runs
 * right to left: mirror_x, xor bidir's alternation. */
bool
tsr_output_reversed(const tsr_output *o, int64_t k, int64_t i);

/* Bits a pixel has in the stream: bits, else depth. */
int
tsr_output_bits(const tsr_output *o);

/* Stream bytes of one row of w pixels ((w * bits + 7) / 8; w * depth / 8 at depth 8, 16). */
uint64_t
tsr_output_row_bytes(const tsr_output *o, int64_t w);

/* The overlap's weight (docs/outputs.md §8) of the later swath at overlap column j of len
 * (0 .. len - 1, counted from the earlier swath's side), in 1/65536: feather 0 linear, 1
 * cosine. The earlier swath gets the rest of each sample. */
uint32_t
tsr_feather_weight(int feather, int64_t len, int64_t j);

/* Feather one row of w samples (bps 1 or 2 bytes, little-endian) of a swath in place: its
 * first `lead` columns (counted from the side of the swath before it: the left when
 * lead_left) get the later swath's share round(s w / 65536) of wt_lead[j], its `trail`
 * columns past its own (on the other side) the rest, s - round(s wt_trail[j] / 65536); so a
 * column two swaths send sums to its sample exactly. */
void
tsr_feather_row(uint8_t *samples, int bps, int64_t w, int64_t lead, int64_t trail,
                bool lead_left, const uint32_t *wt_lead, const uint32_t *wt_trail);

/* A stream row with overscan: `overscan` pixels of `overscan_value`, the row's w pixels
 * (`data`: w samples at depth 8 or 16, which may lie inside dst; or at depth 1, 2, 4 its
 * packed row from pixel 0, apart from dst), `overscan` more, into dst
 * ((w + 2 overscan) pixels, packed and padded like any row). */
void
tsr_output_pad(const tsr_output *o, const uint8_t *data, int64_t w, uint8_t *dst);

/* The dither array's spelling ("blue64", "bayer8", "threshold") into buf; "" without bits. */
const char *
tsr_output_dither_name(const tsr_output *o, char *buf, size_t n);

/* The output conversion (docs/format.md §7) as thresholds, for kernels that would otherwise
 * spend their time on its double division (gpu/): where the sample is monotone in the value,
 * w = dir * v (dir = +1 or -1) and thr[i] is the least float w whose sample is at least
 * smin + 1 + i, so tsr_pw_table_sample gives every non-NaN value's sample exactly. dir == 0:
 * no table (a calibration that is not monotone); convert in double. Built by evaluating the
 * conversion itself (nodes/pointwise.h) on floats, ordered by value: a binary search per
 * sample. */
typedef struct tsr_sample_table {
    int dir;
    uint32_t smin, smax; /* the samples of w = -inf and +inf */
    float *thr;          /* smax - smin floats; NULL when dir == 0 */
} tsr_sample_table;

/* TSR_ENOMEM only; a conversion that is not monotone gives dir == 0 and TSR_OK. */
tsr_status
tsr_sample_table_make(const tsr_output *o, tsr_sample_table *t, tsr_error *err);

void
tsr_sample_table_free(tsr_sample_table *t);

/* ---- output conversion (docs/format.md §7) ------------------------------------------ */

/* Convert n values to samples: 1 byte each at depth 8, 2 bytes little-endian at depth 16. */
void
tsr_convert(const tsr_output *o, const float *v, size_t n, uint8_t *out);

/* One value to its sample (reference for tests and preview). */
uint32_t
tsr_convert_one(const tsr_output *o, double v);

typedef struct tsr_design {
    char *path;        /* the design file as given */
    char *name;        /* may be NULL */
    int64_t tile;      /* default tile edge */
    tsr_output out;
    tsr_node **nodes;  /* every node once, children before parents; owned */
    size_t nnodes;
    tsr_node *root;    /* == nodes[nnodes - 1] */
    double pixel_nm;   /* the pixel pitch `pixel:` states, in nm; 0 when the design gives none
                        * (lengths are then plain pixels only). Changes no sample. */
} tsr_design;

/* Free a design and everything it owns (nodes, params, states, images). NULL is fine. */
void
tsr_design_free(tsr_design *d);

/* Complete every edge (trait->prepare: defaults that depend on the child, small state).
 * Called once by the loader after validation; idempotent. */
tsr_status
tsr_design_prepare(tsr_design *d, tsr_error *err);

/* Heap bytes a design keeps once loaded: every struct, string, list and table of
 * small state it owns (what a memory plan counts for the design itself), not the decoded
 * images or trait->build's tables. Each allocation counts its chunk header too. */
int64_t
tsr_design_bytes(const tsr_design *d);

/* Make what a prepared design still lacks to render: decode every image source not decoded
 * yet with `read_image` (tsr_design_images; NULL: leave them; sizes must match the header the
 * loader read, src->iw x src->ih; a reader that returns NULL pixels only validates, as
 * image/'s tsr_png_check does), and build every trait's large state (trait->build). The loader does it
 * itself unless told to defer (tsr_design_opts.defer), so that a memory plan can count all of
 * it first (tsr_design_build_bytes) and refuse before any of it is made. Idempotent; not
 * thread-safe on the same design. Errors name the source or edge ("file:line:col: key"). */
tsr_status
tsr_design_images(tsr_design *d,
                  tsr_status (*read_image)(const char *path, int64_t *w, int64_t *h, float **px,
                                           tsr_error *err),
                  tsr_error *err);

tsr_status
tsr_design_build(tsr_design *d,
                 tsr_status (*read_image)(const char *path, int64_t *w, int64_t *h, float **px,
                                          tsr_error *err),
                 tsr_error *err);

/* ---- traits ------------------------------------------------------------------------ */

/* One trait: a row of the trait table (nodes/traits.def). Read-only, shared. */
struct tsr_trait {
    const char *name;          /* YAML name: "pattern", "repeat-vector", ... */
    const tsr_param *params;   /* trait-specific keys (beyond trait/node/ref/blend/offset/mask) */
    size_t nparams;
    size_t params_size;        /* bytes of the parameter struct */
    void (*defaults)(void *params);
    /* Cross-field validation after parsing, with the child known; may be NULL. */
    tsr_status (*check)(const tsr_edge *e, tsr_check *c);
    /* Complete e->params and build small state (resolved defaults, fitted coefficients) at
     * load; what need(), scratch() and the memory plan read. May be NULL. */
    tsr_status (*prepare)(tsr_edge *e, tsr_error *err);
    /* Build the large state that scales with the parameters (a distance table: up to 67 MB)
     * into e->state, once the memory plan has counted build_bytes (tsr_design_build). Checks
     * the parameters again, so a hand-made edge cannot reach the build unchecked. Both NULL
     * when the trait has none. */
    tsr_status (*build)(tsr_edge *e, tsr_error *err);
    size_t (*build_bytes)(const tsr_edge *e);
    void (*release)(tsr_edge *e);
    /* The child rects (child coordinates, clipped to the child, non-empty) needed to compute
     * the layer over parent rect `pr`. Writes at most TSR_NEED_MAX rects; returns the count. */
    size_t (*need)(const tsr_edge *e, tsr_rect pr, tsr_rect *out);
    /* The layer over parent rect `pr`: L and cov are pr.w * pr.h, row-major. Sets cov[i] = 1
     * where the layer covers (the engine applies mask: nonzero and the blend), and L[i] there.
     * `views` hold the child pixels of the rects need() returned, in the same order.
     * Thread-safe; fails only on out of memory, or with TSR_EINTR when a long layer sees
     * tsr_stop_requested() (L and cov are then unfinished). */
    tsr_status (*layer)(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews,
                        float *L, uint8_t *cov, tsr_error *err);
    /* Bytes of temporary memory layer() may allocate for a parent tile of tw x th. */
    size_t (*scratch)(const tsr_edge *e, int64_t tw, int64_t th);
    /* Shift invariance, for the plan's periodicity (engine/plan.c): the layer at parent pixel
     * p is covered, and its value is the same function of the child pixels in the window
     * [p - o - h, p - o + h] (o the offset, h what halo() writes per axis) at every p whose
     * window lies inside the child. So a child periodic inside some rect gives a layer
     * periodic inside that rect shrunk by h. NULL for traits without it (repeat and
     * repeat-vector are periodic by their lattice, which the plan reads itself). */
    void (*halo)(const tsr_edge *e, int64_t h[2]);
};

/* Trait ids, in the order of nodes/traits.def (TSR_TRAIT_pattern, ...): what per-trait arrays
 * are indexed by, never the name. */
typedef enum tsr_trait_id {
#define X(id, gpu, caps) TSR_TRAIT_##id,
#include "nodes/traits.def"
#undef X
    TSR_TRAIT_COUNT
} tsr_trait_id;

/* What the planners (engine/plan.c, gpu/backend.c, previews) may assume of a trait's layer:
 * the caps column of nodes/traits.def. A new trait states these; no planner switches on ids. */
enum {
    TSR_CAP_COVERS = 1u << 0,     /* the layer covers every pixel of its covered rect
                                   * (tsr_edge_covered): a first layer drawn `over` without a
                                   * mask makes the node's base dead there */
    TSR_CAP_LATTICE = 1u << 1,    /* the layer is a lattice of copies of the child
                                   * (tsr_repeat_params): periodic by its lattice, may leave
                                   * gaps, reads a small child whole */
    TSR_CAP_NEIGHBOURS = 1u << 2, /* each pixel reads a neighbourhood of the child (its halo):
                                   * costly to recompute, worth caching, and its kernels take
                                   * scratch of about 3x the child region */
    TSR_CAP_PLACES = 1u << 3      /* the child is read once, over the parent's rect shifted by
                                   * the offset: a child only such an edge reads is computed
                                   * into the parent's buffer, never cached */
};

/* The id of a trait of the table (its index in tsr_traits[]). */
tsr_trait_id
tsr_trait_id_of(const tsr_trait *t);

/* Whether trait t has every capability in `caps` (TSR_CAP_*). */
bool
tsr_trait_has(const tsr_trait *t, unsigned caps);

/* The trait named `name`, or NULL. */
const tsr_trait *
tsr_trait_find(const char *name);

/* The trait table, NULL-terminated, for listings and "did you mean". */
extern const tsr_trait *const tsr_traits[];

/* Common edge keys, parsed by the loader into tsr_edge itself. */
extern const char *const tsr_edge_keys[]; /* NULL-terminated */

/* The part of parent rect `pr` that a child placed at the edge's offset covers, in child
 * coordinates (pr shifted by -offset, clipped to the child): what pattern, distance and blur
 * lay over pr. Empty when they do not reach it. */
tsr_rect
tsr_edge_covered(const tsr_edge *e, tsr_rect pr);

/* Blend a layer into P over n pixels (docs/format.md §5, float32 arithmetic). */
void
tsr_blend_apply(tsr_blend b, int mask_nonzero, float *P, const float *L, const uint8_t *cov,
                size_t n);

/* Compute node pixels that need no child: fill then source, over rect r (rows of r.w). */
void
tsr_node_base(const tsr_node *n, tsr_rect r, float *px);

/* The same with a status (tsr_source_draw): TSR_ENOMEM or TSR_EINTR, px unfinished then. */
tsr_status
tsr_node_base_draw(const tsr_node *n, tsr_rect r, float *px, tsr_error *err);

#endif
