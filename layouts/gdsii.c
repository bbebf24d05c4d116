/* The GDSII stream reader.
 *
 * Written by hand rather than taken from a library: GDSII is a flat stream of length-prefixed
 * records (2-byte length, record type, data type, big-endian data) with a small grammar, a
 * reader is a few hundred lines, and no C library packaged by Debian reads it (KLayout's
 * reader lives inside its C++ application, gdspy's in Python). What is ours here is the
 * mapping onto the model of layouts/layouts.h and the checks; docs/layouts.md states both.
 *
 * The grammar checked (every record's data type and length too):
 *   HEADER BGNLIB {LIBDIRSIZE SRFNAME LIBSECUR LIBNAME REFLIBS FONTS ATTRTABLE GENERATIONS
 *   FORMAT MASK ENDMASKS UNITS} {BGNSTR STRNAME [STRCLASS] {element} ENDSTR} ENDLIB
 *   element: BOUNDARY|PATH|SREF|AREF|TEXT|NODE|BOX, then its own records, then ENDEL.
 * Bytes after ENDLIB are ignored (tapes and some writers pad to 2048-byte blocks).
 *
 * Cells may be placed before they are defined: a placement of an unknown name makes a
 * placeholder cell of that name, which its BGNSTR later fills; one never filled is an error
 * naming it and the byte of its first placement. */
#include "layouts/layouts.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    R_HEADER = 0x00, R_BGNLIB = 0x01, R_LIBNAME = 0x02, R_UNITS = 0x03, R_ENDLIB = 0x04,
    R_BGNSTR = 0x05, R_STRNAME = 0x06, R_ENDSTR = 0x07, R_BOUNDARY = 0x08, R_PATH = 0x09,
    R_SREF = 0x0a, R_AREF = 0x0b, R_TEXT = 0x0c, R_LAYER = 0x0d, R_DATATYPE = 0x0e,
    R_WIDTH = 0x0f, R_XY = 0x10, R_ENDEL = 0x11, R_SNAME = 0x12, R_COLROW = 0x13,
    R_TEXTNODE = 0x14, R_NODE = 0x15, R_TEXTTYPE = 0x16, R_PRESENTATION = 0x17,
    R_SPACING = 0x18, R_STRING = 0x19, R_STRANS = 0x1a, R_MAG = 0x1b, R_ANGLE = 0x1c,
    R_UINTEGER = 0x1d, R_USTRING = 0x1e, R_REFLIBS = 0x1f, R_FONTS = 0x20, R_PATHTYPE = 0x21,
    R_GENERATIONS = 0x22, R_ATTRTABLE = 0x23, R_STYPTABLE = 0x24, R_STRTYPE = 0x25,
    R_ELFLAGS = 0x26, R_ELKEY = 0x27, R_LINKTYPE = 0x28, R_LINKKEYS = 0x29, R_NODETYPE = 0x2a,
    R_PROPATTR = 0x2b, R_PROPVALUE = 0x2c, R_BOX = 0x2d, R_BOXTYPE = 0x2e, R_PLEX = 0x2f,
    R_BGNEXTN = 0x30, R_ENDEXTN = 0x31, R_TAPENUM = 0x32, R_TAPECODE = 0x33,
    R_STRCLASS = 0x34, R_RESERVED = 0x35, R_FORMAT = 0x36, R_MASK = 0x37, R_ENDMASKS = 0x38,
    R_LIBDIRSIZE = 0x39, R_SRFNAME = 0x3a, R_LIBSECUR = 0x3b, R_COUNT
};

enum { D_NONE = 0, D_BITS = 1, D_I16 = 2, D_I32 = 3, D_R4 = 4, D_R8 = 5, D_ASCII = 6 };

static const struct {
    const char *name;
    uint8_t dtype;
} rec[R_COUNT] = {
    {"HEADER", D_I16},      {"BGNLIB", D_I16},      {"LIBNAME", D_ASCII},
    {"UNITS", D_R8},        {"ENDLIB", D_NONE},     {"BGNSTR", D_I16},
    {"STRNAME", D_ASCII},   {"ENDSTR", D_NONE},     {"BOUNDARY", D_NONE},
    {"PATH", D_NONE},       {"SREF", D_NONE},       {"AREF", D_NONE},
    {"TEXT", D_NONE},       {"LAYER", D_I16},       {"DATATYPE", D_I16},
    {"WIDTH", D_I32},       {"XY", D_I32},          {"ENDEL", D_NONE},
    {"SNAME", D_ASCII},     {"COLROW", D_I16},      {"TEXTNODE", D_NONE},
    {"NODE", D_NONE},       {"TEXTTYPE", D_I16},    {"PRESENTATION", D_BITS},
    {"SPACING", D_NONE},    {"STRING", D_ASCII},    {"STRANS", D_BITS},
    {"MAG", D_R8},          {"ANGLE", D_R8},        {"UINTEGER", D_I32},
    {"USTRING", D_ASCII},   {"REFLIBS", D_ASCII},   {"FONTS", D_ASCII},
    {"PATHTYPE", D_I16},    {"GENERATIONS", D_I16}, {"ATTRTABLE", D_ASCII},
    {"STYPTABLE", D_ASCII}, {"STRTYPE", D_I16},     {"ELFLAGS", D_BITS},
    {"ELKEY", D_I32},       {"LINKTYPE", D_I16},    {"LINKKEYS", D_I32},
    {"NODETYPE", D_I16},    {"PROPATTR", D_I16},    {"PROPVALUE", D_ASCII},
    {"BOX", D_NONE},        {"BOXTYPE", D_I16},     {"PLEX", D_I32},
    {"BGNEXTN", D_I32},     {"ENDEXTN", D_I32},     {"TAPENUM", D_I16},
    {"TAPECODE", D_I16},    {"STRCLASS", D_BITS},   {"RESERVED", D_I32},
    {"FORMAT", D_I16},      {"MASK", D_ASCII},      {"ENDMASKS", D_NONE},
    {"LIBDIRSIZE", D_I16},  {"SRFNAME", D_ASCII},   {"LIBSECUR", D_I16},
};

static const char *const dtype_name[] = {"no data", "bit array", "2-byte integer",
                                         "4-byte integer", "4-byte real", "8-byte real",
                                         "ASCII string"};
static const unsigned dtype_size[] = {1, 2, 2, 4, 4, 8, 1};

#define BIT(r) ((uint64_t)1 << (r))

/* Records each element kind may hold between its opening record and ENDEL. */
#define COMMON (BIT(R_ELFLAGS) | BIT(R_PLEX) | BIT(R_PROPATTR) | BIT(R_PROPVALUE) | BIT(R_XY))
#define XFORM (BIT(R_STRANS) | BIT(R_MAG) | BIT(R_ANGLE))
static uint64_t
allowed(int kind)
{
    switch (kind) {
    case R_BOUNDARY: return COMMON | BIT(R_LAYER) | BIT(R_DATATYPE);
    case R_PATH:
        return COMMON | BIT(R_LAYER) | BIT(R_DATATYPE) | BIT(R_PATHTYPE) | BIT(R_WIDTH) |
               BIT(R_BGNEXTN) | BIT(R_ENDEXTN);
    case R_SREF: return COMMON | BIT(R_SNAME) | XFORM;
    case R_AREF: return COMMON | BIT(R_SNAME) | XFORM | BIT(R_COLROW);
    case R_TEXT:
        return COMMON | BIT(R_LAYER) | BIT(R_TEXTTYPE) | BIT(R_PRESENTATION) | BIT(R_PATHTYPE) |
               BIT(R_WIDTH) | XFORM | BIT(R_STRING);
    case R_NODE: return COMMON | BIT(R_LAYER) | BIT(R_NODETYPE);
    default: /* R_BOX */ return COMMON | BIT(R_LAYER) | BIT(R_BOXTYPE);
    }
}

/* Library header records we accept and ignore between BGNLIB and the first BGNSTR. */
#define LIB_IGNORED \
    (BIT(R_LIBDIRSIZE) | BIT(R_SRFNAME) | BIT(R_LIBSECUR) | BIT(R_LIBNAME) | BIT(R_REFLIBS) | \
     BIT(R_FONTS) | BIT(R_ATTRTABLE) | BIT(R_GENERATIONS) | BIT(R_FORMAT) | BIT(R_MASK) | \
     BIT(R_ENDMASKS))

/* The element being read, filled record by record, turned into the model at ENDEL. */
typedef struct elem {
    int kind;                  /* R_BOUNDARY .. R_BOX */
    size_t at;                 /* byte of its opening record */
    uint64_t seen;             /* BIT(record) of every record met */
    int32_t layer, datatype;   /* datatype also holds BOXTYPE */
    int32_t width, bgnextn, endextn;
    int16_t pathtype;
    uint16_t strans;
    double mag, angle;
    int16_t cols, rows;
    const uint8_t *xy;         /* the XY record's data (in the buffer) */
    size_t nxy;                /* its points */
    const uint8_t *sname;      /* SNAME's data */
    size_t snamelen;
} elem;

typedef struct reader {
    const uint8_t *buf;
    size_t len;
    const tsr_layout_opts *o;
    tsr_layout *l;
    tsr_error *err;
    size_t at;                 /* byte of the record being read */
    /* per cell: byte of its first placement while only placed, SIZE_MAX once defined */
    size_t *pending;
    size_t npending;
    tsr_lay_pt *pts;           /* scratch for one element's points */
    size_t cappts;
    size_t told;               /* the last offset given to o->consumed */
} reader;

static tsr_status
bad(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static tsr_status
bad(reader *r, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tsr_fail(r->err, TSR_EINVAL, "%s: byte %zu: %s", r->l->path, r->at, what);
}

static tsr_status
oom(reader *r)
{
    return tsr_fail(r->err, TSR_ENOMEM, "%s: byte %zu: out of memory", r->l->path, r->at);
}

static int16_t
i16(const uint8_t *p)
{
    return (int16_t)(uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static int32_t
i32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/* An 8-byte GDSII real: sign bit, 7-bit exponent of 16 in excess 64, 56-bit fraction:
 * (-1)^s * (f / 2^56) * 16^(e - 64). The fraction's conversion to double is the one rounding
 * (correctly rounded; exact when f fits 53 bits, which every value a writer made from a double
 * does); the scaling by a power of two is exact, the range 2^-312 .. 2^252 lies well inside a
 * double's normal range. */
static double
real8(const uint8_t *p)
{
    uint64_t f = 0;
    for (int i = 1; i < 8; i++)
        f = f << 8 | p[i];
    int e = p[0] & 0x7f;
    double v = ldexp((double)f, 4 * (e - 64) - 56);
    return p[0] & 0x80 ? -v : v;
}

/* ---- cells by name ------------------------------------------------------------------------- */

/* The cell named `name`: found, or made (a placeholder when `placed`, pending from this
 * record's byte, else defined from here). */
static tsr_status
cell_get(reader *r, const char *name, bool placed, uint32_t *idx)
{
    int64_t k = tsr_lay_cell_find(r->l, name);
    if (k >= 0) {
        *idx = (uint32_t)k;
        return TSR_OK;
    }
    if (r->npending <= r->l->ncells) {
        size_t n = r->npending ? 2 * r->npending : 64;
        size_t *p = realloc(r->pending, n * sizeof *p);
        if (!p)
            return oom(r);
        r->pending = p;
        r->npending = n;
    }
    tsr_status st = tsr_lay_cell_add(r->l, name, idx, r->err);
    if (st != TSR_OK)
        return st;
    r->pending[*idx] = placed ? r->at : SIZE_MAX;
    return TSR_OK;
}

/* An ASCII record's text up to its first NUL (writers pad to even lengths with one). */
static tsr_status
name_of(reader *r, const uint8_t *d, size_t n, const char *what, char **out)
{
    size_t k = 0;
    while (k < n && d[k])
        k++;
    if (k == 0)
        return bad(r, "%s: empty name", what);
    char *s = malloc(k + 1);
    if (!s)
        return oom(r);
    memcpy(s, d, k);
    s[k] = 0;
    *out = s;
    return TSR_OK;
}

/* ---- elements into the model --------------------------------------------------------------- */

static tsr_status
pts_room(reader *r, size_t n)
{
    if (n <= r->cappts)
        return TSR_OK;
    size_t c = r->cappts ? r->cappts : 64;
    while (c < n)
        c *= 2;
    tsr_lay_pt *p = realloc(r->pts, c * sizeof *p);
    if (!p)
        return oom(r);
    r->pts = p;
    r->cappts = c;
    return TSR_OK;
}

static tsr_lay_pt
xy_at(const elem *e, size_t i)
{
    return (tsr_lay_pt){i32(e->xy + 8 * i), i32(e->xy + 8 * i + 4)};
}

static tsr_status
add_poly(reader *r, uint32_t cell, const elem *e, const tsr_lay_pt *p, size_t n)
{
    tsr_lay_shape s = {.layer = (uint32_t)e->layer, .datatype = (uint32_t)e->datatype};
    /* an axis-parallel rectangle is kept as a box: two points instead of four */
    if (n == 4 && ((p[0].x == p[1].x && p[1].y == p[2].y && p[2].x == p[3].x &&
                    p[3].y == p[0].y) ||
                   (p[0].y == p[1].y && p[1].x == p[2].x && p[2].y == p[3].y &&
                    p[3].x == p[0].x))) {
        tsr_lay_pt b[2] = {{p[0].x < p[2].x ? p[0].x : p[2].x, p[0].y < p[2].y ? p[0].y : p[2].y},
                           {p[0].x < p[2].x ? p[2].x : p[0].x, p[0].y < p[2].y ? p[2].y : p[0].y}};
        if (b[0].x == b[1].x || b[0].y == b[1].y)
            return TSR_OK; /* no area */
        s.kind = TSR_LAY_BOX;
        s.npts = 2;
        tsr_status st = tsr_lay_add_points(r->l, cell, b, 2, &s.first, r->err);
        return st != TSR_OK ? st : tsr_lay_add_shape(r->l, cell, &s, r->err);
    }
    s.kind = TSR_LAY_POLYGON;
    s.npts = (uint32_t)n;
    tsr_status st = tsr_lay_add_points(r->l, cell, p, n, &s.first, r->err);
    return st != TSR_OK ? st : tsr_lay_add_shape(r->l, cell, &s, r->err);
}

static int64_t
rnd(double v)
{
    return (int64_t)llround(v);
}

/* A path as polygons (docs/layouts.md, "Paths"): each segment a rectangle of the path's width
 * (the first and last extended by the path type's extension, or capped by half circles for
 * type 1), and at each inner vertex a join piece filling the outer corner: the miter, its two
 * arms cut at half the width past the vertex (gdspy's and KLayout's "natural" corner). Every
 * piece is convex; neighbours share their edges exactly (one rounded offset vector per
 * segment, used on both sides), so their union has no gap. */
static tsr_status
add_path(reader *r, uint32_t cell, const elem *e)
{
    double h = fabs((double)e->width) / 2;
    if (h == 0)
        return TSR_OK; /* a zero-width path covers nothing */
    /* drop repeated points: a zero-length segment has no direction */
    size_t n = 0;
    tsr_lay_pt *p = r->pts;
    for (size_t i = 0; i < e->nxy; i++) {
        tsr_lay_pt q = xy_at(e, i);
        if (n == 0 || q.x != p[n - 1].x || q.y != p[n - 1].y)
            p[n++] = q;
    }
    if (n < 2)
        return TSR_OK;
    double ext0 = 0, ext1 = 0;
    switch (e->pathtype) {
    case 2: ext0 = ext1 = h; break;
    case 4: ext0 = e->bgnextn, ext1 = e->endextn; break;
    default: break;
    }
    /* round ends: half circles of radius h through arcs of at most `step` radians, so that
     * the sagitta h (1 - cos(step / 2)) stays within the tolerance; 2^12 arcs at most */
    int narc = 0;
    if (e->pathtype == 1) {
        double tol = (r->o->arc_tol_m > 0 ? r->o->arc_tol_m : 1e-9) / r->l->dbu_m;
        double c = 1 - tol / h;
        double step = c <= -1 ? M_PI : 2 * acos(c);
        double k = step > 0 ? ceil(M_PI / step) : INFINITY; /* 0: a tolerance below rounding */
        narc = k <= 1 ? 1 : k >= 1 << 12 ? 1 << 12 : (int)k;
    }
    tsr_lay_pt piece[5];
    tsr_lay_pt *cap = NULL;
    if (narc > 0 && !(cap = malloc(((size_t)2 * narc + 4) * sizeof *cap)))
        return oom(r);
    tsr_status st = TSR_OK;
    tsr_lay_pt off_prev = {0, 0};
    double dprev[2] = {0, 0};
    for (size_t i = 0; i + 1 < n && st == TSR_OK; i++) {
        double dx = (double)(p[i + 1].x - p[i].x), dy = (double)(p[i + 1].y - p[i].y);
        double len = hypot(dx, dy), ux = dx / len, uy = dy / len;
        tsr_lay_pt off = {rnd(-uy * h), rnd(ux * h)}; /* to the left of the direction */
        tsr_lay_pt a = p[i], b = p[i + 1];
        if (i == 0 && ext0 != 0)
            a = (tsr_lay_pt){a.x - rnd(ux * ext0), a.y - rnd(uy * ext0)};
        if (i + 2 == n && ext1 != 0)
            b = (tsr_lay_pt){b.x + rnd(ux * ext1), b.y + rnd(uy * ext1)};
        if (narc > 0 && (i == 0 || i + 2 == n)) {
            /* the segment's rectangle with a half circle on each path end it holds */
            size_t k = 0;
            double ang = atan2(uy, ux);
            cap[k++] = (tsr_lay_pt){b.x - off.x, b.y - off.y};
            if (i + 2 == n)
                for (int j = 1; j < narc; j++) {
                    double t = ang - M_PI / 2 + M_PI * j / narc;
                    cap[k++] = (tsr_lay_pt){b.x + rnd(h * cos(t)), b.y + rnd(h * sin(t))};
                }
            cap[k++] = (tsr_lay_pt){b.x + off.x, b.y + off.y};
            cap[k++] = (tsr_lay_pt){a.x + off.x, a.y + off.y};
            if (i == 0)
                for (int j = 1; j < narc; j++) {
                    double t = ang + M_PI / 2 + M_PI * j / narc;
                    cap[k++] = (tsr_lay_pt){a.x + rnd(h * cos(t)), a.y + rnd(h * sin(t))};
                }
            cap[k++] = (tsr_lay_pt){a.x - off.x, a.y - off.y};
            st = add_poly(r, cell, e, cap, k);
        } else {
            piece[0] = (tsr_lay_pt){a.x - off.x, a.y - off.y};
            piece[1] = (tsr_lay_pt){b.x - off.x, b.y - off.y};
            piece[2] = (tsr_lay_pt){b.x + off.x, b.y + off.y};
            piece[3] = (tsr_lay_pt){a.x + off.x, a.y + off.y};
            st = add_poly(r, cell, e, piece, 4);
        }
        if (i > 0 && st == TSR_OK) {
            /* the join at p[i]: on the outer side of the turn (left for a right turn) */
            double cross = dprev[0] * uy - dprev[1] * ux;
            if (cross != 0) {
                double s = cross < 0 ? 1 : -1; /* +1: the outer side is the left */
                tsr_lay_pt v = p[i];
                tsr_lay_pt o0 = {v.x + (int64_t)s * off_prev.x, v.y + (int64_t)s * off_prev.y};
                tsr_lay_pt o1 = {v.x + (int64_t)s * off.x, v.y + (int64_t)s * off.y};
                /* the miter's arms: h * tan(turn / 2) past the vertex along each direction,
                 * cut at h */
                double dot = dprev[0] * ux + dprev[1] * uy;
                double turn = atan2(fabs(cross), dot);
                double arm = h * tan(turn / 2);
                size_t k = 0;
                piece[k++] = v;
                piece[k++] = o0;
                if (arm <= h * (1 + 1e-12)) {
                    double mx = (double)o0.x + dprev[0] * arm, my = (double)o0.y + dprev[1] * arm;
                    piece[k++] = (tsr_lay_pt){rnd(mx), rnd(my)};
                } else {
                    piece[k++] = (tsr_lay_pt){rnd((double)o0.x + dprev[0] * h),
                                              rnd((double)o0.y + dprev[1] * h)};
                    piece[k++] = (tsr_lay_pt){rnd((double)o1.x - ux * h),
                                              rnd((double)o1.y - uy * h)};
                }
                piece[k++] = o1;
                if (s > 0) /* keep the pieces counterclockwise */
                    for (size_t q = 1; q < k - q; q++) {
                        tsr_lay_pt t = piece[q];
                        piece[q] = piece[k - q];
                        piece[k - q] = t;
                    }
                st = add_poly(r, cell, e, piece, k);
            }
        }
        off_prev = off;
        dprev[0] = ux, dprev[1] = uy;
    }
    free(cap);
    return st;
}

/* ENDEL: the element complete, checked, and stored. */
static tsr_status
end_element(reader *r, uint32_t cell, const elem *e)
{
    const char *kn = rec[e->kind].name;
    r->at = e->at;
    if (e->kind == R_TEXT) {
        r->l->cells[cell].ntexts++;
        return TSR_OK;
    }
    if (e->kind == R_NODE)
        return TSR_OK; /* electrical nodes: no geometry */
    if (!(e->seen & BIT(R_XY)))
        return bad(r, "%s without XY, expected one before ENDEL", kn);
    size_t n = e->nxy;
    if (e->kind == R_SREF || e->kind == R_AREF) {
        if (!(e->seen & BIT(R_SNAME)))
            return bad(r, "%s without SNAME, expected the name of the placed cell", kn);
        size_t want = e->kind == R_SREF ? 1 : 3;
        if (n != want)
            return bad(r, "%s: XY of %zu points, expected %zu", kn, n, want);
        if (e->kind == R_AREF && !(e->seen & BIT(R_COLROW)))
            return bad(r, "AREF without COLROW, expected the counts of columns and rows");
        if (e->kind == R_AREF && (e->cols < 1 || e->rows < 1))
            return bad(r, "AREF: COLROW %d x %d, expected counts of at least 1", e->cols,
                       e->rows);
        if (!(e->mag > 0) || !isfinite(e->mag))
            return bad(r, "%s: MAG %g, expected a finite magnification > 0", kn, e->mag);
        if (!isfinite(e->angle))
            return bad(r, "%s: ANGLE %g, expected a finite angle", kn, e->angle);
        char *name = NULL;
        tsr_status st = name_of(r, e->sname, e->snamelen, "SNAME", &name);
        if (st != TSR_OK)
            return st;
        tsr_lay_ref ref = {.xf = {.mag = e->mag, .angle = e->angle,
                                  .mirror = (e->strans & 0x8000) != 0}};
        st = cell_get(r, name, true, &ref.cell);
        free(name);
        if (st != TSR_OK)
            return st;
        tsr_lay_pt o = xy_at(e, 0);
        ref.xf.dx = o.x, ref.xf.dy = o.y;
        if (e->kind == R_AREF) {
            /* the lattice vectors: the displacement to the point past the last column (row)
             * over the count, rounded to the database grid as KLayout does */
            tsr_lay_pt pc = xy_at(e, 1), pr = xy_at(e, 2);
            tsr_lay_rep rp = {.n = (uint64_t)e->cols, .m = (uint64_t)e->rows};
            rp.u[0] = rnd((double)(pc.x - o.x) / e->cols);
            rp.u[1] = rnd((double)(pc.y - o.y) / e->cols);
            rp.v[0] = rnd((double)(pr.x - o.x) / e->rows);
            rp.v[1] = rnd((double)(pr.y - o.y) / e->rows);
            if ((st = tsr_lay_add_rep(r->l, &rp, &ref.rep, r->err)) != TSR_OK)
                return st;
        }
        return tsr_lay_add_ref(r->l, cell, &ref, r->err);
    }
    if (!(e->seen & BIT(R_LAYER)))
        return bad(r, "%s without LAYER", kn);
    if (e->layer < 0 || e->datatype < 0)
        return bad(r, "%s: layer %d, %s %d, expected numbers >= 0", kn, e->layer,
                   e->kind == R_BOX ? "boxtype" : "datatype", e->datatype);
    if (e->kind == R_BOX) {
        if (!(e->seen & BIT(R_BOXTYPE)))
            return bad(r, "BOX without BOXTYPE");
        if (n != 5)
            return bad(r, "BOX: XY of %zu points, expected 5", n);
        tsr_status st = pts_room(r, 4);
        if (st != TSR_OK)
            return st;
        for (size_t i = 0; i < 4; i++)
            r->pts[i] = xy_at(e, i);
        return add_poly(r, cell, e, r->pts, 4);
    }
    if (!(e->seen & BIT(R_DATATYPE)))
        return bad(r, "%s without DATATYPE", kn);
    tsr_status st = pts_room(r, n);
    if (st != TSR_OK)
        return st;
    if (e->kind == R_BOUNDARY) {
        if (n < 4)
            return bad(r, "BOUNDARY: XY of %zu points, expected at least 4 (the first repeated "
                          "last)", n);
        for (size_t i = 0; i < n; i++)
            r->pts[i] = xy_at(e, i);
        if (r->pts[n - 1].x == r->pts[0].x && r->pts[n - 1].y == r->pts[0].y)
            n--; /* the closing point; an open outline is closed implicitly */
        return add_poly(r, cell, e, r->pts, n);
    }
    /* PATH */
    if (n < 2)
        return bad(r, "PATH: XY of %zu points, expected at least 2", n);
    if (e->pathtype != 0 && e->pathtype != 1 && e->pathtype != 2 && e->pathtype != 4)
        return bad(r, "PATH: PATHTYPE %d, expected 0, 1, 2 or 4", e->pathtype);
    return add_path(r, cell, e);
}

/* ---- the record stream --------------------------------------------------------------------- */

enum { S_START, S_BGNLIB, S_LIB, S_STRNAME, S_STR, S_ELEM, S_END };

static tsr_status
read_stream(reader *r)
{
    int state = S_START;
    uint32_t cell = 0;
    bool units = false;
    elem e = {0};
    size_t pos = 0;
    size_t every = r->o->consumed_every ? r->o->consumed_every : (size_t)64 << 20;
    while (state != S_END) {
        r->at = pos;
        if (r->o->consumed && pos - r->told >= every) {
            r->o->consumed(r->o->consumed_ctx, pos);
            r->told = pos;
        }
        if (r->len - pos < 4)
            return bad(r, "the file ends %s, expected %s", pos == r->len ? "here" :
                       "inside a record header", state == S_START ? "HEADER" : "ENDLIB");
        const uint8_t *h = r->buf + pos;
        size_t rlen = (size_t)h[0] << 8 | h[1];
        unsigned type = h[2], dt = h[3];
        if (rlen < 4 || rlen % 2)
            return bad(r, "record length %zu, expected an even length of at least 4", rlen);
        if (rlen > r->len - pos)
            return bad(r, "record of %zu bytes, expected at most the %zu bytes left (truncated "
                          "file?)", rlen, r->len - pos);
        if (type >= R_COUNT)
            return bad(r, "record type 0x%02x, expected a GDSII record type (0x00..0x3b)", type);
        const char *name = rec[type].name;
        if (dt != rec[type].dtype)
            return bad(r, "%s: data type %u (%s), expected %u (%s)", name, dt,
                       dt < 7 ? dtype_name[dt] : "unknown", rec[type].dtype,
                       dtype_name[rec[type].dtype]);
        const uint8_t *d = h + 4;
        size_t n = rlen - 4;
        if (n % dtype_size[dt])
            return bad(r, "%s: %zu data bytes, expected a multiple of %u", name, n,
                       dtype_size[dt]);
        if (dt == D_NONE && n)
            return bad(r, "%s: %zu data bytes, expected none", name, n);
        /* records whose values we read need at least those values */
        static const uint8_t need[R_COUNT] = {
            [R_HEADER] = 2, [R_UNITS] = 16, [R_LAYER] = 2, [R_DATATYPE] = 2, [R_WIDTH] = 4,
            [R_COLROW] = 4, [R_TEXTTYPE] = 2, [R_STRANS] = 2, [R_MAG] = 8, [R_ANGLE] = 8,
            [R_PATHTYPE] = 2, [R_BOXTYPE] = 2, [R_BGNEXTN] = 4, [R_ENDEXTN] = 4,
            [R_BGNLIB] = 24, [R_BGNSTR] = 24, [R_NODETYPE] = 2};
        if (n < need[type] || ((type == R_MAG || type == R_ANGLE || type == R_WIDTH ||
                                type == R_BGNEXTN || type == R_ENDEXTN) && n != need[type]))
            return bad(r, "%s: %zu data bytes, expected %u", name, n, need[type]);
        pos += rlen;
        switch (state) {
        case S_START:
            if (type != R_HEADER)
                return bad(r, "%s, expected HEADER", name);
            state = S_BGNLIB;
            break;
        case S_BGNLIB:
            if (type != R_BGNLIB)
                return bad(r, "%s, expected BGNLIB after HEADER", name);
            state = S_LIB;
            break;
        case S_LIB:
            if (type == R_UNITS) {
                if (units) /* a unit changed between cells would rescale half the file */
                    return bad(r, "a second UNITS, expected one before the first BGNSTR");
                double uu = real8(d), m = real8(d + 8);
                if (!(m > 0) || !isfinite(m) || !(uu > 0) || !isfinite(uu))
                    return bad(r, "UNITS %g, %g: expected positive sizes of the database unit",
                               uu, m);
                r->l->dbu_m = m;
                units = true;
            } else if (type == R_BGNSTR) {
                if (!units)
                    return bad(r, "BGNSTR before UNITS, expected UNITS first");
                state = S_STRNAME;
            } else if (type == R_ENDLIB) {
                state = S_END;
            } else if (!(LIB_IGNORED & BIT(type))) {
                return bad(r, "%s in the library header, expected UNITS, BGNSTR or ENDLIB",
                           name);
            }
            break;
        case S_STRNAME: {
            if (type != R_STRNAME)
                return bad(r, "%s, expected STRNAME after BGNSTR", name);
            char *s = NULL;
            tsr_status st = name_of(r, d, n, "STRNAME", &s);
            if (st != TSR_OK)
                return st;
            size_t before = r->l->ncells;
            st = cell_get(r, s, false, &cell);
            free(s);
            if (st != TSR_OK)
                return st;
            if (r->l->ncells == before && r->pending[cell] == SIZE_MAX)
                return bad(r, "STRNAME: a second cell named \"%s\"", r->l->cells[cell].name);
            r->pending[cell] = SIZE_MAX;
            state = S_STR;
            break;
        }
        case S_STR:
            if (type == R_ENDSTR) {
                state = S_LIB;
            } else if (type == R_BOUNDARY || type == R_PATH || type == R_SREF ||
                       type == R_AREF || type == R_TEXT || type == R_NODE || type == R_BOX) {
                e = (elem){.kind = (int)type, .at = r->at, .mag = 1, .width = 0};
                state = S_ELEM;
            } else if (type != R_STRCLASS) {
                return bad(r, "%s inside cell \"%s\", expected an element or ENDSTR", name,
                           r->l->cells[cell].name);
            }
            break;
        case S_ELEM:
            if (type == R_ENDEL) {
                tsr_status st = end_element(r, cell, &e);
                if (st != TSR_OK)
                    return st;
                state = S_STR;
                break;
            }
            if (!(allowed(e.kind) & BIT(type)))
                return bad(r, "%s inside %s (from byte %zu), expected one of its records or "
                              "ENDEL", name, rec[e.kind].name, e.at);
            if (type != R_PROPATTR && type != R_PROPVALUE && (e.seen & BIT(type)))
                return bad(r, "a second %s in %s (from byte %zu)", name, rec[e.kind].name,
                           e.at);
            e.seen |= BIT(type);
            switch (type) {
            case R_LAYER: e.layer = i16(d); break;
            case R_DATATYPE: case R_BOXTYPE: e.datatype = i16(d); break;
            case R_WIDTH: e.width = i32(d); break;
            case R_PATHTYPE: e.pathtype = i16(d); break;
            case R_BGNEXTN: e.bgnextn = i32(d); break;
            case R_ENDEXTN: e.endextn = i32(d); break;
            case R_STRANS: e.strans = (uint16_t)i16(d); break;
            case R_MAG: e.mag = real8(d); break;
            case R_ANGLE: e.angle = real8(d); break;
            case R_COLROW: e.cols = i16(d), e.rows = i16(d + 2); break;
            case R_SNAME: e.sname = d, e.snamelen = n; break;
            case R_XY:
                if (n % 8)
                    return bad(r, "XY: %zu data bytes, expected a multiple of 8 (x, y pairs)", n);
                e.xy = d, e.nxy = n / 8;
                break;
            default: break; /* ELFLAGS, PLEX, properties, text attributes: not geometry */
            }
            break;
        default: break;
        }
    }
    if (!units)
        return r->at = 0, bad(r, "no UNITS record, expected one in the library header");
    for (size_t i = 0; i < r->l->ncells; i++)
        if (r->pending[i] != SIZE_MAX) {
            r->at = r->pending[i];
            return bad(r, "cell \"%s\" is placed but never defined", r->l->cells[i].name);
        }
    return TSR_OK;
}

tsr_status
tsr_gdsii_read(const uint8_t *buf, size_t len, const tsr_layout_opts *o, tsr_layout *l,
               tsr_error *err)
{
    reader r = {.buf = buf, .len = len, .o = o, .l = l, .err = err};
    l->format = TSR_LAYOUT_GDSII;
    l->dbu_m = 1e-9;
    tsr_status st = read_stream(&r);
    free(r.pending);
    free(r.pts);
    return st;
}
