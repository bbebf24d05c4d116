/* layouts: layout files (GDSII, OASIS, DXF) read into one model of cells, kept hierarchical.
 *
 * A file is read whole into a tsr_layout: cells, each with its own shapes (in the cell's
 * coordinates, database units) and its placements of other cells; repetitions (arrays) stay
 * repetitions. Nothing is flattened at load, so memory grows with the file, not with the
 * flattened shape count. tsr_layout_index then checks the hierarchy (every reference resolves,
 * no cycle, nesting within TSR_LAYOUT_MAX_DEPTH), computes each cell's bounding box and builds
 * a spatial index per cell; tsr_layout_query visits the shapes that meet a window, resolving
 * placements lazily (only the array elements that can meet the window are visited).
 *
 * The format is told by content, never by the file name (layouts/layout.c: GDSII starts with a
 * HEADER record, OASIS with its magic "%SEMI-OASIS\r\n", DXF is text whose first group is
 * "0"/"SECTION" or a comment). One reader per format, one file each: gdsii.c, oasis.c, dxf.c.
 * Readers read from bytes in memory (the file mapped), so the fuzz targets drive them directly.
 *
 * Errors name the file and the place: a byte offset for GDSII and OASIS ("chip.gds: byte 1234:
 * BOUNDARY: XY record of 7 bytes, expected a multiple of 8"), a line for DXF ("part.dxf: line
 * 88: LWPOLYLINE: ..."), with TSR_EINVAL; the layout is not made. Readers never trust a count
 * or a length from the file: every size is checked against what is left of the buffer and
 * every product and sum is overflow-checked.
 *
 * Read-only once indexed: any number of threads may query one layout at once. */
#ifndef TSR_LAYOUTS_H
#define TSR_LAYOUTS_H

#include "tiles/tiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSR_LAYOUT_MAX_DEPTH 64 /* placements nested deeper than this are refused */
#define TSR_LAYOUT_COORD_MAX ((int64_t)1 << 52) /* |coordinate| in database units: exact in a
                                                 * double, and sums of two never overflow */

typedef enum tsr_layout_format { TSR_LAYOUT_GDSII, TSR_LAYOUT_OASIS, TSR_LAYOUT_DXF } tsr_layout_format;

/* What a reader is asked to do beyond reading. */
typedef struct tsr_layout_opts {
    /* Largest distance, in meters, between an arc and the polygon that replaces it (DXF bulges
     * and arcs, GDSII round path ends, OASIS circles are kept as circles): the caller passes a
     * small fraction of its pixel pitch. 0: 1e-9 m. */
    double arc_tol_m;
    /* A reader that goes through the bytes once (GDSII) calls consumed(consumed_ctx, off) each
     * time it has passed another `consumed_every` bytes (0: 64 MiB): it may still look back
     * (an error message, an element's records), but seldom. tsr_layout_open gives a mapped
     * file's pages before `off` back to the system (they are re-read from the file if asked
     * for), so the file does not count in the peak beside the model; then it calls the
     * caller's own. NULL: none. */
    void (*consumed)(void *consumed_ctx, size_t off);
    void *consumed_ctx;
    size_t consumed_every;
} tsr_layout_opts;

/* A point in database units. */
typedef struct tsr_lay_pt {
    int64_t x, y;
} tsr_lay_pt;

/* How a placement puts a cell's point p into its parent's coordinates:
 *   p' = (dx, dy) + R(angle) * (mag * F * p),  F = diag(1, -1) when `mirror`, else identity,
 * angle in degrees counterclockwise: mirror about the x axis first, then magnify, then rotate,
 * then translate (GDSII's STRANS/MAG/ANGLE and OASIS's flip/magnification/angle alike). */
typedef struct tsr_lay_xform {
    double mag;   /* > 0 */
    double angle; /* degrees */
    bool mirror;
    int64_t dx, dy;
} tsr_lay_xform;

/* A repetition: the displacements (in the parent's coordinates, added after the placement's
 * own transform) at which a shape or a placement is repeated. Either a lattice
 * i * u + j * v for i in [0, n), j in [0, m) (GDSII AREF; OASIS repetitions 1-3, 8, 9), or a
 * list of `count` displacements at disp[off .. off + count) of the layout (OASIS 4-7, 10, 11). */
typedef struct tsr_lay_rep {
    uint64_t n, m;       /* lattice counts, both >= 1; 0 for a list */
    int64_t u[2], v[2];  /* lattice vectors */
    uint64_t count, off; /* a list's displacements */
} tsr_lay_rep;

typedef enum tsr_lay_kind {
    TSR_LAY_POLYGON, /* npts >= 3 vertices at pts[first ..], closed implicitly */
    TSR_LAY_BOX,     /* two points: min and max corners (GDSII BOX, OASIS RECTANGLE) */
    TSR_LAY_CIRCLE   /* one point, its centre; radius r (OASIS CIRCLE, DXF CIRCLE) */
} tsr_lay_kind;

/* One shape of a cell. Paths, trapezoids, DXF solids and the like are turned into polygons by
 * their reader; the layer is a number (DXF: the index of the layer's name in layer_names). */
typedef struct tsr_lay_shape {
    uint32_t layer, datatype;
    uint8_t kind;   /* tsr_lay_kind */
    uint32_t npts;
    uint64_t first; /* index of its first point in its cell's pts */
    int64_t r;      /* circles: radius (> 0) */
    uint64_t rep;   /* 0: none, else 1 + index into the layout's reps */
} tsr_lay_shape;

/* A placement of another cell (GDSII SREF/AREF, OASIS PLACEMENT, DXF INSERT). */
typedef struct tsr_lay_ref {
    uint32_t cell; /* index into the layout's cells */
    tsr_lay_xform xf;
    uint64_t rep;  /* 0: none, else 1 + index into the layout's reps */
} tsr_lay_ref;

typedef struct tsr_lay_cell {
    char *name;
    tsr_lay_shape *shapes;
    size_t nshapes, capshapes;
    tsr_lay_pt *pts;
    size_t npts, cappts;
    tsr_lay_ref *refs;
    size_t nrefs, caprefs;
    uint64_t ntexts;   /* text elements met (not geometry: `check` says so) */
    uint64_t nskipped; /* elements met that bound no area and were left out (DXF: LINE, ARC,
                        * open polylines without width, ...: docs/dxf.md; `check` says so) */
    /* filled by tsr_layout_index: */
    bool has_box;      /* false: the cell holds no shape anywhere below it */
    double box[4];     /* x0, y0, x1, y1 holding everything below it, database units (exact
                        * through placements turned by multiples of 90 degrees; else the
                        * box of each placed cell's turned box) */
    void *index;       /* the spatial index (layouts/query.c) */
} tsr_lay_cell;

typedef struct tsr_layout {
    char *path;                /* as opened (messages) */
    tsr_layout_format format;
    double dbu_m;              /* meters per database unit (> 0) */
    tsr_lay_cell *cells;
    size_t ncells, capcells;
    tsr_lay_rep *reps;
    size_t nreps, capreps;
    int64_t (*disp)[2];        /* list repetitions' displacements */
    size_t ndisp, capdisp;
    char **layer_names;        /* DXF: layer number i is named layer_names[i]; else NULL */
    size_t nlayer_names;
    bool indexed;
    void *byname;              /* cells by name (layouts/model.c): made by the first
                                * tsr_lay_cell_find of a layout with many cells */
} tsr_layout;

/* ---- opening ------------------------------------------------------------------------------ */

/* Read the file at `path` (format by content), then tsr_layout_index it. NULL on failure with
 * err filled (TSR_EIO: the file cannot be read; TSR_EINVAL: it is not a layout this reads, or
 * it is malformed: "path: byte N: what" / "path: line N: what"). */
tsr_layout *
tsr_layout_open(const char *path, const tsr_layout_opts *o, tsr_error *err);

/* The same over `len` bytes in memory (`name` for messages); the bytes are not kept. */
tsr_layout *
tsr_layout_read(const uint8_t *buf, size_t len, const char *name, const tsr_layout_opts *o,
                tsr_error *err);

/* Which format `len` bytes hold; false when none. */
bool
tsr_layout_sniff(const uint8_t *buf, size_t len, tsr_layout_format *f);

void
tsr_layout_free(tsr_layout *l);

/* The readers, one file each: fill an empty layout `l` (calloc'd, path set) from the bytes.
 * On failure `l` may hold part of the file: the caller frees it. */
tsr_status
tsr_gdsii_read(const uint8_t *buf, size_t len, const tsr_layout_opts *o, tsr_layout *l,
               tsr_error *err);
tsr_status
tsr_oasis_read(const uint8_t *buf, size_t len, const tsr_layout_opts *o, tsr_layout *l,
               tsr_error *err);
tsr_status
tsr_dxf_read(const uint8_t *buf, size_t len, const tsr_layout_opts *o, tsr_layout *l,
             tsr_error *err);

/* ---- building the model (readers; layouts/model.c) ------------------------------------------ */

/* A new cell named `name` (copied); its index in *idx. Names are unique: a second cell of the
 * same name is an error the reader reports (GDSII, DXF blocks), or the same cell (OASIS cell
 * references by name before the cell itself): tsr_lay_cell_find first. */
tsr_status
tsr_lay_cell_add(tsr_layout *l, const char *name, uint32_t *idx, tsr_error *err);

/* The index of the cell named `name`, or -1. Linear while a layout has few cells; then a
 * hash table, made on first use (so not thread-safe while reading; tsr_layout_index makes it,
 * after which finds only read). */
int64_t
tsr_lay_cell_find(const tsr_layout *l, const char *name);

/* Append shapes, points, placements, repetitions and displacements (amortised growth, every
 * size checked). The point functions return the index of the first point appended. */
tsr_status
tsr_lay_add_points(tsr_layout *l, uint32_t cell, const tsr_lay_pt *p, size_t n, uint64_t *first,
                   tsr_error *err);
tsr_status
tsr_lay_add_shape(tsr_layout *l, uint32_t cell, const tsr_lay_shape *s, tsr_error *err);
tsr_status
tsr_lay_add_ref(tsr_layout *l, uint32_t cell, const tsr_lay_ref *r, tsr_error *err);
tsr_status
tsr_lay_add_rep(tsr_layout *l, const tsr_lay_rep *r, uint64_t *id, tsr_error *err); /* *id: 1 + index */
tsr_status
tsr_lay_add_disp(tsr_layout *l, const int64_t (*d)[2], size_t n, uint64_t *off, tsr_error *err);

/* ---- after reading (layouts/query.c) -------------------------------------------------------- */

/* Check the hierarchy and build what queries need (cell boxes, per-cell spatial indexes).
 * TSR_EINVAL naming the cells for a reference cycle or nesting deeper than
 * TSR_LAYOUT_MAX_DEPTH; coordinates whose transformed values leave +-TSR_LAYOUT_COORD_MAX are
 * refused likewise. Idempotent. */
tsr_status
tsr_layout_index(tsr_layout *l, tsr_error *err);

/* Cells no other cell places, in file order, into out[0 .. max) (may be NULL); returns how
 * many there are. */
size_t
tsr_layout_tops(const tsr_layout *l, uint32_t *out, size_t max);

/* The cell named `name`, or with name NULL the single top cell; TSR_EINVAL naming the
 * candidates when there are several tops, or the cells when `name` is unknown. */
tsr_status
tsr_layout_cell(const tsr_layout *l, const char *name, uint32_t *cell, tsr_error *err);

/* One shape met by a query, in the queried cell's coordinates (database units, doubles after
 * the placements' transforms). Polygons: pts[0 .. n) (a box comes as its 4 corners,
 * counterclockwise). Circles: n == 0, centre cx, cy and radius r. */
typedef struct tsr_lay_item {
    uint32_t layer, datatype;
    const double (*pts)[2];
    size_t n;
    double cx, cy, r;
} tsr_lay_item;

/* Return non-zero to stop the walk (the query then returns TSR_EINTR). */
typedef int (*tsr_lay_visit)(void *ctx, const tsr_lay_item *it);

/* Visit every shape of `cell`, through all its placements and repetitions, whose bounding box
 * meets `win` (x0, y0, x1, y1 in the cell's coordinates), on the layers for which
 * want(want_ctx, layer, datatype) is true (want may be NULL: all; it is asked once per shape
 * and array element considered, so keep it cheap). Through a placement turned by an angle
 * that is not a multiple of 90 degrees, a shape whose box meets the window but whose outline
 * does not may be left out (the window is carried into the placed cell as a box); every shape
 * with a point in the window is visited, and none whose box misses it (docs/layouts.md).
 * Each element of an array that may meet the window is visited; the others are skipped
 * without being walked. The
 * order is fixed (cells' shapes in file order, then placements in file order, array elements
 * i fastest), so two queries of the same window see the same items. Thread-safe. Fails only on
 * out of memory (TSR_ENOMEM) or when visit stops it (TSR_EINTR). */
tsr_status
tsr_layout_query(const tsr_layout *l, uint32_t cell, const double win[4],
                 bool (*want)(void *want_ctx, uint32_t layer, uint32_t datatype), void *want_ctx,
                 tsr_lay_visit visit, void *ctx, tsr_error *err);

/* What `tessera check` prints of a layout's cell. */
typedef struct tsr_layout_stats {
    size_t cells;          /* cells under `cell`, itself included */
    uint64_t shapes;       /* shapes stored in those cells (each once) */
    uint64_t flat_shapes;  /* shapes after flattening every placement and repetition
                            * (saturating at UINT64_MAX) */
    uint64_t texts;        /* text elements under it (flattened), not geometry */
    struct tsr_layout_layer {
        uint32_t layer, datatype;
        uint64_t shapes;   /* flattened */
    } *layers;             /* malloc'd, sorted by layer then datatype */
    size_t nlayers;
} tsr_layout_stats;

tsr_status
tsr_layout_get_stats(const tsr_layout *l, uint32_t cell, tsr_layout_stats *st, tsr_error *err);

void
tsr_layout_stats_free(tsr_layout_stats *st);

#endif
