/* The OASIS (SEMI P39) reader: the file's records into layouts.h's model.
 *
 * Written by hand: no C library packaged by Debian reads OASIS (KLayout reads it, but it is an
 * application; the tests use it only as the peer that writes the files they read). The format
 * is small enough to read directly: a stream of records made of variable-length integers, each
 * record's fields present or not by the bits of an info byte, with "modal variables" standing
 * in for omitted fields. docs/oasis.md says what is read and how.
 *
 * One pass over the bytes. Names are resolved at the end: a CELL or PLACEMENT may name a cell
 * by a reference number whose CELLNAME comes later (non-strict files) or sits in a table at
 * the end (strict files, whose table is read first through the offsets when present). Such a
 * cell is held under a placeholder until its name is known; a cell reached both by name and by
 * number is then made one. CBLOCKs are inflated (zlib, raw deflate) into a buffer of exactly
 * the declared size and their records read as if they stood in the file. */
#include "layouts/layouts.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* An out-of-memory in HASH_ADD must not exit() the process; uthash then leaves the item out
 * and sets its hh.tbl to NULL, which we test. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#define MAXC TSR_LAYOUT_COORD_MAX

/* A reference number and the cell or name it stands for (hashed by number or by name). */
typedef struct ent {
    uint64_t key;
    char *name;    /* owned */
    uint32_t cell;
    UT_hash_handle hh;
} ent;

/* What the reader knows of each model cell beyond the model. */
typedef struct cinfo {
    bool defined;     /* a CELL record made it */
    bool placeholder; /* reached by a reference number whose name is not known yet */
    bool dead;        /* merged into another at the end */
    uint64_t ref;     /* placeholders: the number */
    size_t def_at;    /* byte of its CELL record */
    size_t use_at;    /* byte of its first use */
} cinfo;

/* A growable list of points (point lists, outlines). */
typedef struct ptbuf {
    tsr_lay_pt *p;
    size_t n, cap;
} ptbuf;

/* The modal variables (SEMI P39 §10): set by a record, used by later ones that omit them. */
typedef struct modal {
    bool xyrel;
    int64_t px, py, gx, gy, tx, ty; /* placement, geometry and text positions: 0 at reset */
    bool has_pcell, has_layer, has_dt, has_tl, has_tt, has_w, has_h, has_text;
    bool has_ppoly, has_ppath, has_hw, has_sext, has_eext, has_ctype, has_radius;
    bool has_rep, has_propname, has_propval;
    uint32_t pcell, layer, dt, tl, tt;
    int64_t w, h, hw, sext, eext, radius;
    uint64_t ctype;
    ptbuf ppoly, ppath;         /* relative to the element's position; kept across resets */
    tsr_lay_rep rep;            /* disp not set for lists: see rdisp */
    int64_t (*rdisp)[2];        /* a list repetition's displacements */
    size_t nrdisp, caprdisp;
    uint64_t rep_id;            /* 0: not in the layout yet */
    uint64_t rep_count;         /* elements (saturating) */
} modal;

typedef struct rd {
    tsr_layout *l;
    tsr_error *err;
    const char *path;
    /* the bytes being read: the file or a CBLOCK's inflated data */
    const uint8_t *b;
    size_t n, p;
    bool in_cb;
    size_t cb_at;      /* the CBLOCK record's byte in the file */
    size_t rec_at;     /* the current record's first byte (in b) */
    const char *rec;   /* its name, for messages */
    bool ended;        /* END read (or, reading a table ahead, the table's end) */
    bool offsets_at_end; /* START's offset flag: the table offsets are in END */
    /* names */
    ent *cellnames;    /* by number */
    uint64_t next_ref[4]; /* implicit numbers: cellname, textstring, propname, propstring */
    int ref_mode[4];      /* 0 unseen, 1 implicit, 2 explicit */
    ent *by_ref, *by_name; /* cells */
    cinfo *ci;
    size_t nci, capci;
    int64_t cell;      /* the cell being read, -1 outside */
    modal m;
    ptbuf out;         /* scratch outline */
} rd;

/* ---- messages ------------------------------------------------------------------------------ */

static tsr_status
bad(rd *r, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "path: byte N: RECORD: what" (inside a CBLOCK: "path: byte N: CBLOCK: inflated byte K:
 * RECORD: what", N the CBLOCK's). */
static tsr_status
bad(rd *r, size_t at, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char rec[48] = "";
    if (r->rec)
        snprintf(rec, sizeof rec, "%s: ", r->rec);
    if (r->in_cb)
        return tsr_fail(r->err, TSR_EINVAL, "%s: byte %zu: CBLOCK: inflated byte %zu: %s%s",
                        r->path, r->cb_at, at, rec, msg);
    return tsr_fail(r->err, TSR_EINVAL, "%s: byte %zu: %s%s", r->path, at, rec, msg);
}

static tsr_status
oom(rd *r)
{
    return tsr_fail(r->err, TSR_ENOMEM, "%s: out of memory", r->path);
}

/* ---- primitive types (SEMI P39 §7) --------------------------------------------------------- */

static tsr_status
truncated(rd *r, const char *what)
{
    return bad(r, r->p, "%s ends inside %s, expected more bytes",
               r->in_cb ? "the CBLOCK's data" : "the file", what);
}

static tsr_status
get_byte(rd *r, uint8_t *v, const char *what)
{
    if (r->p >= r->n)
        return truncated(r, what);
    *v = r->b[r->p++];
    return TSR_OK;
}

/* An unsigned integer: 7 bits a byte, low first, high bit set on all but the last. Leading
 * zero groups may run long (KLayout pads END with a "long zero"); set bits beyond 64 fail. */
static tsr_status
get_u(rd *r, uint64_t *v, const char *what)
{
    size_t at = r->p;
    uint64_t x = 0;
    unsigned sh = 0;
    for (;;) {
        if (r->p >= r->n)
            return truncated(r, what);
        uint8_t c = r->b[r->p++];
        uint64_t bits = c & 0x7f;
        if (bits) {
            if (sh >= 64 || (sh > 57 && (bits >> (64 - sh)) != 0))
                return bad(r, at, "%s overflows 64 bits", what);
            x |= bits << sh;
        }
        if (!(c & 0x80))
            break;
        if (sh < 64)
            sh += 7;
    }
    *v = x;
    return TSR_OK;
}

/* A signed integer: an unsigned one whose lowest bit is the sign. */
static tsr_status
get_s(rd *r, int64_t *v, const char *what)
{
    uint64_t u;
    tsr_status st = get_u(r, &u, what);
    if (st == TSR_OK)
        *v = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
    return st;
}

static tsr_status
get_u32(rd *r, uint32_t *v, const char *what)
{
    size_t at = r->p;
    uint64_t u;
    tsr_status st = get_u(r, &u, what);
    if (st != TSR_OK)
        return st;
    if (u > UINT32_MAX)
        return bad(r, at, "%s %llu, expected at most %u", what, (unsigned long long)u,
                   UINT32_MAX);
    *v = (uint32_t)u;
    return TSR_OK;
}

/* A length (width, height, radius, half-width) within the coordinate range. */
static tsr_status
get_len(rd *r, int64_t *v, const char *what)
{
    size_t at = r->p;
    uint64_t u;
    tsr_status st = get_u(r, &u, what);
    if (st != TSR_OK)
        return st;
    if (u > (uint64_t)MAXC)
        return bad(r, at, "%s %llu beyond the coordinate range, expected at most 2^52",
                   what, (unsigned long long)u);
    *v = (int64_t)u;
    return TSR_OK;
}

/* A real's payload after its type (0-7). */
static tsr_status
get_real_of(rd *r, uint64_t type, double *v, const char *what)
{
    uint64_t a, b;
    tsr_status st;
    switch (type) {
    case 0:
    case 1:
        if ((st = get_u(r, &a, what)) != TSR_OK)
            return st;
        *v = type == 0 ? (double)a : -(double)a;
        return TSR_OK;
    case 2:
    case 3:
        if ((st = get_u(r, &a, what)) != TSR_OK)
            return st;
        *v = (type == 2 ? 1.0 : -1.0) / (double)a; /* a == 0: infinite, refused where used */
        return TSR_OK;
    case 4:
    case 5:
        if ((st = get_u(r, &a, what)) != TSR_OK || (st = get_u(r, &b, what)) != TSR_OK)
            return st;
        *v = (type == 4 ? 1.0 : -1.0) * (double)a / (double)b;
        return TSR_OK;
    case 6: {
        if (r->n - r->p < 4)
            return truncated(r, what);
        uint32_t u = 0;
        for (int i = 3; i >= 0; i--)
            u = u << 8 | r->b[r->p + (size_t)i];
        float f;
        memcpy(&f, &u, 4);
        r->p += 4;
        *v = f;
        return TSR_OK;
    }
    case 7: {
        if (r->n - r->p < 8)
            return truncated(r, what);
        uint64_t u = 0;
        for (int i = 7; i >= 0; i--)
            u = u << 8 | r->b[r->p + (size_t)i];
        memcpy(v, &u, 8);
        r->p += 8;
        return TSR_OK;
    }
    default:
        return bad(r, r->p, "%s: real of type %llu, expected 0-7", what, (unsigned long long)type);
    }
}

static tsr_status
get_real(rd *r, double *v, const char *what)
{
    uint64_t type;
    tsr_status st = get_u(r, &type, what);
    return st != TSR_OK ? st : get_real_of(r, type, v, what);
}

/* A string: its length, then the bytes (borrowed from the buffer). */
static tsr_status
get_str(rd *r, const uint8_t **s, size_t *len, const char *what)
{
    size_t at = r->p;
    uint64_t u;
    tsr_status st = get_u(r, &u, what);
    if (st != TSR_OK)
        return st;
    if (u > r->n - r->p)
        return bad(r, at, "%s of %llu bytes, longer than the %zu bytes left", what,
                   (unsigned long long)u, r->n - r->p);
    *s = r->b + r->p;
    *len = (size_t)u;
    r->p += (size_t)u;
    return TSR_OK;
}

/* A name as a C string (malloc'd): no NUL byte, not empty. */
static tsr_status
get_name(rd *r, char **out, const char *what)
{
    size_t at = r->p;
    const uint8_t *s = NULL;
    size_t len = 0;
    tsr_status st = get_str(r, &s, &len, what);
    if (st != TSR_OK)
        return st;
    if (len == 0 || memchr(s, 0, len))
        return bad(r, at, "%s is %s, expected printable characters", what,
                   len == 0 ? "empty" : "holds a NUL byte");
    char *c = malloc(len + 1);
    if (!c)
        return oom(r);
    memcpy(c, s, len);
    c[len] = 0;
    *out = c;
    return TSR_OK;
}

/* g-delta (§7.5.5): form 1 an octangular direction and a magnitude in one integer; form 2 an
 * x (sign in bit 1) and a signed y. */
static tsr_status
get_gdelta(rd *r, int64_t d[2], const char *what)
{
    size_t at = r->p;
    uint64_t u;
    tsr_status st = get_u(r, &u, what);
    if (st != TSR_OK)
        return st;
    if (u & 1) {
        int64_t x = (int64_t)(u >> 2), y;
        if ((st = get_s(r, &y, what)) != TSR_OK)
            return st;
        d[0] = (u & 2) ? -x : x;
        d[1] = y;
    } else {
        static const int8_t dir[8][2] = {{1, 0},  {0, 1},   {-1, 0}, {0, -1},
                                         {1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
        int64_t m = (int64_t)(u >> 4);
        d[0] = dir[(u >> 1) & 7][0] * m;
        d[1] = dir[(u >> 1) & 7][1] * m;
    }
    if (d[0] > 2 * MAXC || d[0] < -2 * MAXC || d[1] > 2 * MAXC || d[1] < -2 * MAXC)
        return bad(r, at, "%s (%lld, %lld) beyond the coordinate range", what,
                   (long long)d[0], (long long)d[1]);
    return TSR_OK;
}

/* v = a + b within +-TSR_LAYOUT_COORD_MAX. */
static tsr_status
coord_add(rd *r, size_t at, int64_t a, int64_t b, int64_t *v, const char *what)
{
    int64_t s;
    if (!tsr_add_checked(a, b, &s) || s > MAXC || s < -MAXC)
        return bad(r, at, "%s beyond the coordinate range (|%s| <= 2^52 database units)", what,
                   what);
    *v = s;
    return TSR_OK;
}

/* ---- growable arrays ------------------------------------------------------------------------ */

static bool
pt_push(ptbuf *b, int64_t x, int64_t y)
{
    if (b->n == b->cap) {
        size_t c = b->cap ? 2 * b->cap : 64;
        if (c > SIZE_MAX / sizeof *b->p)
            return false;
        tsr_lay_pt *p = realloc(b->p, c * sizeof *p);
        if (!p)
            return false;
        b->p = p;
        b->cap = c;
    }
    b->p[b->n++] = (tsr_lay_pt){x, y};
    return true;
}

/* ---- modal variables ------------------------------------------------------------------------- */

static void
reset_modal(rd *r)
{
    modal *m = &r->m;
    m->xyrel = false;
    m->px = m->py = m->gx = m->gy = m->tx = m->ty = 0;
    m->has_pcell = m->has_layer = m->has_dt = m->has_tl = m->has_tt = m->has_w = m->has_h = false;
    m->has_text = m->has_ppoly = m->has_ppath = m->has_hw = m->has_sext = m->has_eext = false;
    m->has_ctype = m->has_radius = m->has_rep = m->has_propname = m->has_propval = false;
}

static tsr_status
unset(rd *r, const char *var)
{
    return bad(r, r->rec_at, "uses the modal variable %s before any record set it", var);
}

/* x, y of an element: present (absolute, or relative to the modal value) or the modal value;
 * the result becomes the modal value. */
static tsr_status
get_xy(rd *r, uint8_t info, uint8_t xbit, uint8_t ybit, int64_t *mx, int64_t *my)
{
    tsr_status st;
    int64_t v;
    size_t at = r->p;
    if (info & xbit) {
        if ((st = get_s(r, &v, "x")) != TSR_OK ||
            (st = coord_add(r, at, r->m.xyrel ? *mx : 0, v, mx, "x")) != TSR_OK)
            return st;
    }
    at = r->p;
    if (info & ybit) {
        if ((st = get_s(r, &v, "y")) != TSR_OK ||
            (st = coord_add(r, at, r->m.xyrel ? *my : 0, v, my, "y")) != TSR_OK)
            return st;
    }
    return TSR_OK;
}

static tsr_status
get_layer(rd *r, uint8_t info, bool text)
{
    tsr_status st;
    if (info & 1) {
        if ((st = get_u32(r, text ? &r->m.tl : &r->m.layer, "layer")) != TSR_OK)
            return st;
        *(text ? &r->m.has_tl : &r->m.has_layer) = true;
    }
    if (info & 2) {
        if ((st = get_u32(r, text ? &r->m.tt : &r->m.dt, "datatype")) != TSR_OK)
            return st;
        *(text ? &r->m.has_tt : &r->m.has_dt) = true;
    }
    return TSR_OK;
}

/* ---- repetitions (§7.6) ----------------------------------------------------------------------- */

static tsr_status
rdisp_push(rd *r, int64_t x, int64_t y)
{
    modal *m = &r->m;
    if (m->nrdisp == m->caprdisp) {
        size_t c = m->caprdisp ? 2 * m->caprdisp : 64;
        if (c > SIZE_MAX / sizeof *m->rdisp)
            return oom(r);
        void *p = realloc(m->rdisp, c * sizeof *m->rdisp);
        if (!p)
            return oom(r);
        m->rdisp = p;
        m->caprdisp = c;
    }
    m->rdisp[m->nrdisp][0] = x;
    m->rdisp[m->nrdisp][1] = y;
    m->nrdisp++;
    return TSR_OK;
}

/* A dimension field: the count it stands for (dim + 2). */
static tsr_status
get_dim(rd *r, uint64_t *n)
{
    size_t at = r->p;
    uint64_t d;
    tsr_status st = get_u(r, &d, "repetition dimension");
    if (st != TSR_OK)
        return st;
    if (d > UINT64_MAX - 2)
        return bad(r, at, "repetition dimension %llu overflows (count = dimension + 2)",
                   (unsigned long long)d);
    *n = d + 2;
    return TSR_OK;
}

/* The lattice i*u + j*v, i < n, j < m: n*m must count and its far corner stay in range. */
static tsr_status
set_lattice(rd *r, size_t at, uint64_t n, uint64_t m, int64_t ux, int64_t uy, int64_t vx,
            int64_t vy)
{
    uint64_t cnt;
    if (__builtin_mul_overflow(n, m, &cnt))
        return bad(r, at, "repetition of %llu x %llu elements overflows 64 bits",
                   (unsigned long long)n, (unsigned long long)m);
    int64_t e[4];
    int64_t u[2] = {ux, uy}, v[2] = {vx, vy};
    for (int k = 0; k < 2; k++) {
        if (n - 1 > (uint64_t)INT64_MAX || m - 1 > (uint64_t)INT64_MAX ||
            !tsr_mul_checked((int64_t)(n - 1), u[k], &e[k]) ||
            !tsr_mul_checked((int64_t)(m - 1), v[k], &e[2 + k]) || e[k] > MAXC ||
            e[k] < -MAXC || e[2 + k] > MAXC || e[2 + k] < -MAXC ||
            e[k] + e[2 + k] > MAXC || e[k] + e[2 + k] < -MAXC)
            return bad(r, at, "repetition of %llu x %llu elements reaches beyond the coordinate "
                       "range (2^52 database units)", (unsigned long long)n,
                       (unsigned long long)m);
    }
    r->m.rep = (tsr_lay_rep){.n = n, .m = m, .u = {ux, uy}, .v = {vx, vy}};
    r->m.rep_count = cnt;
    return TSR_OK;
}

static tsr_status
get_rep(rd *r)
{
    modal *m = &r->m;
    size_t at = r->p;
    uint64_t type, n = 0, mm = 0, g = 1, sx, sy;
    int64_t d[2], e[2];
    tsr_status st;
    if ((st = get_u(r, &type, "repetition type")) != TSR_OK)
        return st;
    if (type == 0) {
        if (!m->has_rep)
            return unset(r, "repetition");
        return TSR_OK;
    }
    m->has_rep = false;
    m->rep_id = 0;
    switch (type) {
    case 1:
        if ((st = get_dim(r, &n)) != TSR_OK || (st = get_dim(r, &mm)) != TSR_OK ||
            (st = get_u(r, &sx, "x-space")) != TSR_OK || (st = get_u(r, &sy, "y-space")) != TSR_OK)
            return st;
        if (sx > (uint64_t)MAXC || sy > (uint64_t)MAXC)
            return bad(r, at, "repetition spacing beyond the coordinate range");
        st = set_lattice(r, at, n, mm, (int64_t)sx, 0, 0, (int64_t)sy);
        break;
    case 2:
    case 3:
        if ((st = get_dim(r, &n)) != TSR_OK || (st = get_u(r, &sx, "space")) != TSR_OK)
            return st;
        if (sx > (uint64_t)MAXC)
            return bad(r, at, "repetition spacing beyond the coordinate range");
        st = type == 2 ? set_lattice(r, at, n, 1, (int64_t)sx, 0, 0, 0)
                       : set_lattice(r, at, n, 1, 0, (int64_t)sx, 0, 0);
        break;
    case 8:
        if ((st = get_dim(r, &n)) != TSR_OK || (st = get_dim(r, &mm)) != TSR_OK ||
            (st = get_gdelta(r, d, "n-displacement")) != TSR_OK ||
            (st = get_gdelta(r, e, "m-displacement")) != TSR_OK)
            return st;
        st = set_lattice(r, at, n, mm, d[0], d[1], e[0], e[1]);
        break;
    case 9:
        if ((st = get_dim(r, &n)) != TSR_OK || (st = get_gdelta(r, d, "displacement")) != TSR_OK)
            return st;
        st = set_lattice(r, at, n, 1, d[0], d[1], 0, 0);
        break;
    case 4: case 5: case 6: case 7: case 10: case 11: {
        /* a list: dimension + 1 spaces (or displacements), each at least one byte */
        if ((st = get_dim(r, &n)) != TSR_OK)
            return st;
        if (type == 5 || type == 7 || type == 11) {
            size_t gat = r->p;
            if ((st = get_u(r, &g, "grid")) != TSR_OK)
                return st;
            if (g > (uint64_t)MAXC)
                return bad(r, gat, "repetition grid %llu beyond the coordinate range",
                           (unsigned long long)g);
        }
        if (n - 1 > r->n - r->p)
            return bad(r, at, "repetition of %llu elements, longer than the %zu bytes left",
                       (unsigned long long)n, r->n - r->p);
        m->nrdisp = 0;
        int64_t x = 0, y = 0;
        if ((st = rdisp_push(r, 0, 0)) != TSR_OK)
            return st;
        for (uint64_t i = 1; i < n; i++) {
            size_t dat = r->p;
            if (type >= 10) {
                if ((st = get_gdelta(r, d, "displacement")) != TSR_OK)
                    return st;
            } else {
                uint64_t s;
                if ((st = get_u(r, &s, "space")) != TSR_OK)
                    return st;
                if (s > (uint64_t)MAXC)
                    return bad(r, dat, "repetition space beyond the coordinate range");
                d[0] = type <= 5 ? (int64_t)s : 0;
                d[1] = type <= 5 ? 0 : (int64_t)s;
            }
            int64_t gx, gy;
            if (!tsr_mul_checked(d[0], (int64_t)g, &gx) || !tsr_mul_checked(d[1], (int64_t)g, &gy))
                return bad(r, dat, "repetition displacement beyond the coordinate range");
            if ((st = coord_add(r, dat, x, gx, &x, "repetition displacement")) != TSR_OK ||
                (st = coord_add(r, dat, y, gy, &y, "repetition displacement")) != TSR_OK ||
                (st = rdisp_push(r, x, y)) != TSR_OK)
                return st;
        }
        m->rep = (tsr_lay_rep){.count = n};
        m->rep_count = n;
        st = TSR_OK;
        break;
    }
    default:
        return bad(r, at, "repetition type %llu, expected 0-11", (unsigned long long)type);
    }
    if (st == TSR_OK)
        m->has_rep = true;
    return st;
}

/* The repetition of the current element (info bit `bit`) as a layout id; 0 for none. */
static tsr_status
rep_id(rd *r, bool present, uint64_t *id)
{
    *id = 0;
    if (!present)
        return TSR_OK;
    modal *m = &r->m;
    if (m->rep_id == 0) {
        tsr_lay_rep rep = m->rep;
        tsr_status st;
        if (rep.count &&
            (st = tsr_lay_add_disp(r->l, (const int64_t(*)[2])m->rdisp, m->nrdisp, &rep.off,
                                   r->err)) != TSR_OK)
            return st;
        if ((st = tsr_lay_add_rep(r->l, &rep, &m->rep_id, r->err)) != TSR_OK)
            return st;
    }
    *id = m->rep_id;
    return TSR_OK;
}

/* ---- cells ----------------------------------------------------------------------------------- */

static tsr_status
new_cell(rd *r, const char *name, uint32_t *idx)
{
    tsr_status st = tsr_lay_cell_add(r->l, name, idx, r->err);
    if (st != TSR_OK)
        return st;
    if (r->nci == r->capci) {
        size_t c = r->capci ? 2 * r->capci : 64;
        cinfo *p = realloc(r->ci, c * sizeof *p);
        if (!p)
            return oom(r);
        r->ci = p;
        r->capci = c;
    }
    r->ci[r->nci++] = (cinfo){.def_at = SIZE_MAX, .use_at = SIZE_MAX};
    return TSR_OK;
}

/* The file offset of a position in the current buffer (a CBLOCK's: the CBLOCK's). */
static size_t
file_at(const rd *r, size_t at)
{
    return r->in_cb ? r->cb_at : at;
}

static tsr_status
cell_by_name(rd *r, const char *name, uint32_t *idx)
{
    ent *e;
    HASH_FIND_STR(r->by_name, name, e);
    if (e) {
        *idx = e->cell;
        return TSR_OK;
    }
    tsr_status st = new_cell(r, name, idx);
    if (st != TSR_OK)
        return st;
    if (!(e = calloc(1, sizeof *e)) || !(e->name = strdup(name))) {
        free(e);
        return oom(r);
    }
    e->cell = *idx;
    HASH_ADD_KEYPTR(hh, r->by_name, e->name, strlen(e->name), e);
    if (!e->hh.tbl) {
        free(e->name);
        free(e);
        return oom(r);
    }
    return TSR_OK;
}

static tsr_status
cell_by_ref(rd *r, uint64_t ref, uint32_t *idx)
{
    ent *e;
    HASH_FIND(hh, r->cellnames, &ref, sizeof ref, e);
    if (e)
        return cell_by_name(r, e->name, idx);
    HASH_FIND(hh, r->by_ref, &ref, sizeof ref, e);
    if (e) {
        *idx = e->cell;
        return TSR_OK;
    }
    /* a placeholder: \001 never starts a name we accept in the end (it is renamed) */
    char name[32];
    snprintf(name, sizeof name, "\001#%llu", (unsigned long long)ref);
    tsr_status st = new_cell(r, name, idx);
    if (st != TSR_OK)
        return st;
    r->ci[*idx].placeholder = true;
    r->ci[*idx].ref = ref;
    if (!(e = calloc(1, sizeof *e)))
        return oom(r);
    e->key = ref;
    e->cell = *idx;
    HASH_ADD(hh, r->by_ref, key, sizeof e->key, e);
    if (!e->hh.tbl) {
        free(e);
        return oom(r);
    }
    return TSR_OK;
}

/* A cell named by a record: a reference number (byref) or a string. */
static tsr_status
get_cell(rd *r, bool byref, uint32_t *idx)
{
    tsr_status st;
    if (byref) {
        uint64_t ref;
        if ((st = get_u(r, &ref, "cell reference number")) != TSR_OK)
            return st;
        return cell_by_ref(r, ref, idx);
    }
    char *name = NULL;
    if ((st = get_name(r, &name, "cell name")) != TSR_OK)
        return st;
    st = cell_by_name(r, name, idx);
    free(name);
    return st;
}

/* ---- shapes ---------------------------------------------------------------------------------- */

static tsr_status
need_cell(rd *r)
{
    if (r->cell < 0)
        return bad(r, r->rec_at, "outside a cell (no CELL record before it, or a name record "
                   "ended the cell), expected a CELL record first");
    return TSR_OK;
}

static tsr_status
need_layer(rd *r)
{
    if (!r->m.has_layer)
        return unset(r, "layer");
    if (!r->m.has_dt)
        return unset(r, "datatype");
    return TSR_OK;
}

/* Add a polygon of n points (absolute), dropping repeated consecutive points; fewer than 3
 * left: no area, nothing added. */
static tsr_status
add_polygon(rd *r, tsr_lay_pt *p, size_t n, uint64_t rep)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || p[i].x != p[k - 1].x || p[i].y != p[k - 1].y)
            p[k++] = p[i];
    while (k > 1 && p[k - 1].x == p[0].x && p[k - 1].y == p[0].y)
        k--;
    if (k < 3)
        return TSR_OK;
    if (k > UINT32_MAX)
        return bad(r, r->rec_at, "polygon of %zu points, expected at most 2^32 - 1", k);
    tsr_lay_shape s = {.layer = r->m.layer, .datatype = r->m.dt, .kind = TSR_LAY_POLYGON,
                       .npts = (uint32_t)k, .rep = rep};
    tsr_status st = tsr_lay_add_points(r->l, (uint32_t)r->cell, p, k, &s.first, r->err);
    return st != TSR_OK ? st : tsr_lay_add_shape(r->l, (uint32_t)r->cell, &s, r->err);
}

/* A point list (§7.7) into `b`, relative to the element's position, starting with (0, 0).
 * Polygons of type 0 and 1 get the implied last point that closes them along the axes. */
static tsr_status
get_points(rd *r, ptbuf *b, bool polygon)
{
    size_t at = r->p;
    uint64_t type, cnt;
    tsr_status st;
    if ((st = get_u(r, &type, "point list type")) != TSR_OK)
        return st;
    if (type > 5)
        return bad(r, at, "point list type %llu, expected 0-5", (unsigned long long)type);
    size_t cat = r->p;
    if ((st = get_u(r, &cnt, "point count")) != TSR_OK)
        return st;
    if (cnt > r->n - r->p)
        return bad(r, cat, "point list of %llu points, longer than the %zu bytes left",
                   (unsigned long long)cnt, r->n - r->p);
    b->n = 0;
    int64_t x = 0, y = 0, dx = 0, dy = 0;
    if (!pt_push(b, 0, 0))
        return oom(r);
    for (uint64_t i = 0; i < cnt; i++) {
        size_t dat = r->p;
        int64_t d[2] = {0, 0};
        uint64_t u;
        if (type <= 1) {
            int64_t v;
            if ((st = get_s(r, &v, "point delta")) != TSR_OK)
                return st;
            d[((i & 1) != 0) != (type == 1)] = v;
        } else if (type <= 3) {
            static const int8_t dir[8][2] = {{1, 0},  {0, 1},   {-1, 0}, {0, -1},
                                             {1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
            if ((st = get_u(r, &u, "point delta")) != TSR_OK)
                return st;
            unsigned sh = type == 2 ? 2 : 3;
            int64_t mag = (int64_t)(u >> sh);
            d[0] = dir[u & ((1u << sh) - 1)][0] * mag;
            d[1] = dir[u & ((1u << sh) - 1)][1] * mag;
        } else if ((st = get_gdelta(r, d, "point delta")) != TSR_OK) {
            return st;
        }
        if (type == 5) { /* double deltas: each is added to the previous delta */
            if ((st = coord_add(r, dat, dx, d[0], &dx, "point delta")) != TSR_OK ||
                (st = coord_add(r, dat, dy, d[1], &dy, "point delta")) != TSR_OK)
                return st;
            d[0] = dx;
            d[1] = dy;
        }
        /* relative points may span twice the range (the position may be -2^52) */
        if (!tsr_add_checked(x, d[0], &x) || !tsr_add_checked(y, d[1], &y) || x > 2 * MAXC ||
            x < -2 * MAXC || y > 2 * MAXC || y < -2 * MAXC)
            return bad(r, dat, "point beyond the coordinate range");
        if (!pt_push(b, x, y))
            return oom(r);
    }
    if (polygon && type <= 1 && cnt > 0) {
        bool next_h = ((cnt & 1) == 0) == (type == 0);
        if (!(next_h ? pt_push(b, 0, y) : pt_push(b, x, 0)))
            return oom(r);
    }
    return TSR_OK;
}

/* Relative points + (x, y) into r->out, each within range. */
static tsr_status
place_points(rd *r, const ptbuf *b, int64_t x, int64_t y)
{
    r->out.n = 0;
    for (size_t i = 0; i < b->n; i++) {
        int64_t px = 0, py = 0;
        tsr_status st;
        if ((st = coord_add(r, r->rec_at, x, b->p[i].x, &px, "point")) != TSR_OK ||
            (st = coord_add(r, r->rec_at, y, b->p[i].y, &py, "point")) != TSR_OK)
            return st;
        if (!pt_push(&r->out, px, py))
            return oom(r);
    }
    return TSR_OK;
}

static tsr_status
rd_rectangle(rd *r)
{
    uint8_t f = 0;
    tsr_status st;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK || (st = get_layer(r, f, false)) != TSR_OK)
        return st;
    if ((f & 0x80) && (f & 0x20))
        return bad(r, r->rec_at, "square (S) with a height (H), expected H clear");
    if ((f & 0x40) && (st = get_len(r, &r->m.w, "width")) != TSR_OK)
        return st;
    r->m.has_w |= (f & 0x40) != 0;
    if (f & 0x80) {
        if (!r->m.has_w)
            return unset(r, "geometry-w");
        r->m.h = r->m.w;
        r->m.has_h = true;
    } else if (f & 0x20) {
        if ((st = get_len(r, &r->m.h, "height")) != TSR_OK)
            return st;
        r->m.has_h = true;
    }
    if ((st = get_xy(r, f, 0x10, 0x08, &r->m.gx, &r->m.gy)) != TSR_OK)
        return st;
    uint64_t rep;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK || (st = need_layer(r)) != TSR_OK)
        return st;
    if (!r->m.has_w)
        return unset(r, "geometry-w");
    if (!r->m.has_h)
        return unset(r, "geometry-h");
    tsr_lay_pt p[2] = {{r->m.gx, r->m.gy}, {0, 0}};
    if ((st = coord_add(r, r->rec_at, r->m.gx, r->m.w, &p[1].x, "x + width")) != TSR_OK ||
        (st = coord_add(r, r->rec_at, r->m.gy, r->m.h, &p[1].y, "y + height")) != TSR_OK ||
        (st = rep_id(r, f & 0x04, &rep)) != TSR_OK)
        return st;
    tsr_lay_shape s = {.layer = r->m.layer, .datatype = r->m.dt, .kind = TSR_LAY_BOX, .npts = 2,
                       .rep = rep};
    if ((st = tsr_lay_add_points(r->l, (uint32_t)r->cell, p, 2, &s.first, r->err)) != TSR_OK)
        return st;
    return tsr_lay_add_shape(r->l, (uint32_t)r->cell, &s, r->err);
}

static tsr_status
rd_polygon(rd *r)
{
    uint8_t f = 0;
    tsr_status st;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK || (st = get_layer(r, f, false)) != TSR_OK)
        return st;
    if (f & 0x20) {
        if ((st = get_points(r, &r->m.ppoly, true)) != TSR_OK)
            return st;
        r->m.has_ppoly = true;
    }
    if ((st = get_xy(r, f, 0x10, 0x08, &r->m.gx, &r->m.gy)) != TSR_OK)
        return st;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK || (st = need_layer(r)) != TSR_OK)
        return st;
    if (!r->m.has_ppoly)
        return unset(r, "polygon-point-list");
    uint64_t rep;
    if ((st = place_points(r, &r->m.ppoly, r->m.gx, r->m.gy)) != TSR_OK ||
        (st = rep_id(r, f & 0x04, &rep)) != TSR_OK)
        return st;
    return add_polygon(r, r->out.p, r->out.n, rep);
}

/* A point of a path's outline, rounded, within range. */
static tsr_status
out_pt(rd *r, ptbuf *o, double x, double y)
{
    if (!(fabs(x) <= (double)MAXC && fabs(y) <= (double)MAXC))
        return bad(r, r->rec_at, "path outline beyond the coordinate range");
    return pt_push(o, llround(x), llround(y)) ? TSR_OK : oom(r);
}

/* A path as polygons (docs/oasis.md, "Paths"): its points (absolute, repeats dropped), the
 * first and last segments extended by the start and end extensions, offset by the half-width
 * h on both sides; at each inner vertex the outer corner is the miter, its arms cut at h past
 * the vertex (the "natural" corner of gdspy and KLayout, and of layouts/gdsii.c).
 * Where every turn is at most 90 degrees (the miter is whole) and each segment is longer than
 * the inner corners eat of it, that is one polygon: out along the right side, back along the
 * left. Otherwise (sharper turns, or short segments whose inner offsets would cross) the path
 * is one rectangle per segment and one convex corner piece per turn, neighbours sharing their
 * edges exactly (one rounded offset vector per segment), so their union has no gap. A single
 * point with extensions is a box along x (as KLayout makes it); a zero half-width, nothing.
 * Every shape made carries the element's repetition (has_rep: the modal one). */
static tsr_status
add_path(rd *r, tsr_lay_pt *p, size_t n, double h, double se, double ee, bool has_rep)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || p[i].x != p[k - 1].x || p[i].y != p[k - 1].y)
            p[k++] = p[i];
    n = k;
    if (h <= 0 || n == 0 || (n == 1 && se + ee <= 0))
        return TSR_OK;
    uint64_t rep;
    tsr_status st = rep_id(r, has_rep, &rep);
    if (st != TSR_OK)
        return st;
    ptbuf *o = &r->out;
    o->n = 0;
    if (n == 1) {
        double x = (double)p[0].x, y = (double)p[0].y;
        if ((st = out_pt(r, o, x - se, y - h)) != TSR_OK ||
            (st = out_pt(r, o, x + ee, y - h)) != TSR_OK ||
            (st = out_pt(r, o, x + ee, y + h)) != TSR_OK ||
            (st = out_pt(r, o, x - se, y + h)) != TSR_OK)
            return st;
        return add_polygon(r, o->p, o->n, rep);
    }
    /* unit directions and lengths of the segments; tan(turn / 2) at the inner vertices */
    double (*u)[3] = malloc((n - 1) * sizeof *u), *tn = malloc(n * sizeof *tn);
    if (!u || !tn) {
        free(u);
        free(tn);
        return oom(r);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        double dx = (double)p[i + 1].x - (double)p[i].x, dy = (double)p[i + 1].y - (double)p[i].y;
        u[i][2] = hypot(dx, dy);
        u[i][0] = dx / u[i][2], u[i][1] = dy / u[i][2];
    }
    bool whole = true;
    tn[0] = tn[n - 1] = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        double c = u[i - 1][0] * u[i][0] + u[i - 1][1] * u[i][1];
        double x = u[i - 1][0] * u[i][1] - u[i - 1][1] * u[i][0];
        tn[i] = tan(atan2(fabs(x), c) / 2);
        whole &= tn[i] <= 1 + 1e-12;
    }
    for (size_t i = 0; i + 1 < n; i++)
        whole &= h * (tn[i] + tn[i + 1]) < u[i][2];
    double x0 = (double)p[0].x - se * u[0][0], y0 = (double)p[0].y - se * u[0][1];
    double x1 = (double)p[n - 1].x + ee * u[n - 2][0], y1 = (double)p[n - 1].y + ee * u[n - 2][1];
    if (whole) {
        /* right side out, left side back: at each vertex the offset lines' meeting point,
         * (n1 + n2) h / (1 + cos(turn)) from it (n: the left normals) */
        for (int side = -1; side <= 1 && st == TSR_OK; side += 2)
            for (size_t j = 0; j < n && st == TSR_OK; j++) {
                size_t i = side < 0 ? j : n - 1 - j;
                const double *a = u[i == 0 ? 0 : i - 1], *b = u[i == n - 1 ? n - 2 : i];
                double c = a[0] * b[0] + a[1] * b[1];
                double mx = (-a[1] - b[1]) * h / (1 + c), my = (a[0] + b[0]) * h / (1 + c);
                double vx = i == 0 ? x0 : i == n - 1 ? x1 : (double)p[i].x;
                double vy = i == 0 ? y0 : i == n - 1 ? y1 : (double)p[i].y;
                st = out_pt(r, o, vx + side * mx, vy + side * my);
            }
        if (st == TSR_OK)
            st = add_polygon(r, o->p, o->n, rep);
    } else {
        for (size_t i = 0; i + 1 < n && st == TSR_OK; i++) {
            double ox = (double)llround(-u[i][1] * h), oy = (double)llround(u[i][0] * h);
            double ax = i == 0 ? x0 : (double)p[i].x, ay = i == 0 ? y0 : (double)p[i].y;
            double bx = i + 2 == n ? x1 : (double)p[i + 1].x;
            double by = i + 2 == n ? y1 : (double)p[i + 1].y;
            o->n = 0;
            if ((st = out_pt(r, o, ax - ox, ay - oy)) != TSR_OK ||
                (st = out_pt(r, o, bx - ox, by - oy)) != TSR_OK ||
                (st = out_pt(r, o, bx + ox, by + oy)) != TSR_OK ||
                (st = out_pt(r, o, ax + ox, ay + oy)) != TSR_OK ||
                (st = add_polygon(r, o->p, o->n, rep)) != TSR_OK || i == 0)
                continue;
            /* the corner at p[i], on the outer side of the turn */
            const double *a = u[i - 1], *b = u[i];
            double cross = a[0] * b[1] - a[1] * b[0];
            if (cross == 0)
                continue;
            double s = cross < 0 ? 1 : -1; /* +1: the outer side is the left */
            double px = (double)llround(-a[1] * h), py = (double)llround(a[0] * h);
            double vx = (double)p[i].x, vy = (double)p[i].y;
            double o0x = vx + s * px, o0y = vy + s * py, o1x = vx + s * ox, o1y = vy + s * oy;
            double arm = tn[i] <= 1 ? h * tn[i] : h;
            o->n = 0;
            if ((st = out_pt(r, o, vx, vy)) != TSR_OK ||
                (st = out_pt(r, o, o0x, o0y)) != TSR_OK ||
                (st = out_pt(r, o, o0x + a[0] * arm, o0y + a[1] * arm)) != TSR_OK ||
                (tn[i] > 1 && (st = out_pt(r, o, o1x - b[0] * arm, o1y - b[1] * arm)) != TSR_OK) ||
                (st = out_pt(r, o, o1x, o1y)) != TSR_OK)
                continue;
            st = add_polygon(r, o->p, o->n, rep);
        }
    }
    free(u);
    free(tn);
    return st;
}

static tsr_status
rd_path(rd *r)
{
    uint8_t f = 0;
    tsr_status st;
    modal *m = &r->m;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK || (st = get_layer(r, f, false)) != TSR_OK)
        return st;
    if (f & 0x40) {
        if ((st = get_len(r, &m->hw, "half-width")) != TSR_OK)
            return st;
        m->has_hw = true;
    }
    if (f & 0x80) {
        size_t at = r->p;
        uint64_t e;
        if ((st = get_u(r, &e, "extension scheme")) != TSR_OK)
            return st;
        if (e > 15)
            return bad(r, at, "extension scheme %llu, expected 0-15", (unsigned long long)e);
        for (int end = 0; end < 2; end++) {
            unsigned s = end ? e & 3 : (e >> 2) & 3;
            int64_t *ext = end ? &m->eext : &m->sext;
            bool *has = end ? &m->has_eext : &m->has_sext;
            if (s == 1) {
                *ext = 0, *has = true;
            } else if (s == 2) {
                if (!m->has_hw)
                    return unset(r, "path-halfwidth");
                *ext = m->hw, *has = true;
            } else if (s == 3) {
                size_t xat = r->p;
                if ((st = get_s(r, ext, end ? "end extension" : "start extension")) != TSR_OK)
                    return st;
                if (*ext > MAXC || *ext < -MAXC)
                    return bad(r, xat, "path extension beyond the coordinate range");
                *has = true;
            }
        }
    }
    if (f & 0x20) {
        if ((st = get_points(r, &m->ppath, false)) != TSR_OK)
            return st;
        m->has_ppath = true;
    }
    if ((st = get_xy(r, f, 0x10, 0x08, &m->gx, &m->gy)) != TSR_OK)
        return st;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK || (st = need_layer(r)) != TSR_OK)
        return st;
    if (!m->has_hw)
        return unset(r, "path-halfwidth");
    if (!m->has_sext)
        return unset(r, "path-start-extension");
    if (!m->has_eext)
        return unset(r, "path-end-extension");
    if (!m->has_ppath)
        return unset(r, "path-point-list");
    if ((st = place_points(r, &m->ppath, m->gx, m->gy)) != TSR_OK)
        return st;
    /* add_path reuses r->out for the outline: hand it a copy of the points */
    ptbuf pts = {0};
    for (size_t i = 0; i < r->out.n; i++)
        if (!pt_push(&pts, r->out.p[i].x, r->out.p[i].y)) {
            free(pts.p);
            return oom(r);
        }
    st = add_path(r, pts.p, pts.n, (double)m->hw, (double)m->sext, (double)m->eext, f & 0x04);
    free(pts.p);
    return st;
}

/* TRAPEZOID (23: both deltas, 24: delta-a only, 25: delta-b only). Horizontal (O clear): the
 * parallel sides are the bottom and top of the w x h box; delta-a moves the top-left vertex
 * right (> 0) or the bottom-left one right (< 0), delta-b the bottom-right vertex left (> 0)
 * or the top-right one left (< 0). Vertical (O set): the same turned, the parallel sides left
 * and right, delta-a at the bottom, delta-b at the top. */
static tsr_status
rd_trapezoid(rd *r, uint8_t id)
{
    uint8_t f = 0;
    tsr_status st;
    modal *m = &r->m;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK || (st = get_layer(r, f, false)) != TSR_OK)
        return st;
    if ((f & 0x40) && (st = get_len(r, &m->w, "width")) != TSR_OK)
        return st;
    m->has_w |= (f & 0x40) != 0;
    if ((f & 0x20) && (st = get_len(r, &m->h, "height")) != TSR_OK)
        return st;
    m->has_h |= (f & 0x20) != 0;
    int64_t a = 0, b = 0;
    if ((id == 23 || id == 24) && (st = get_s(r, &a, "delta-a")) != TSR_OK)
        return st;
    if ((id == 23 || id == 25) && (st = get_s(r, &b, "delta-b")) != TSR_OK)
        return st;
    if (a > MAXC || a < -MAXC || b > MAXC || b < -MAXC)
        return bad(r, r->rec_at, "delta beyond the coordinate range");
    if ((st = get_xy(r, f, 0x10, 0x08, &m->gx, &m->gy)) != TSR_OK)
        return st;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK || (st = need_layer(r)) != TSR_OK)
        return st;
    if (!m->has_w)
        return unset(r, "geometry-w");
    if (!m->has_h)
        return unset(r, "geometry-h");
    int64_t w = m->w, h = m->h;
    int64_t pa = a > 0 ? a : 0, na = a < 0 ? -a : 0, pb = b > 0 ? b : 0, nb = b < 0 ? -b : 0;
    ptbuf rel = {0};
    bool ok;
    if (f & 0x80) /* vertical */
        ok = pt_push(&rel, 0, pa) && pt_push(&rel, 0, h - nb) && pt_push(&rel, w, h - pb) &&
             pt_push(&rel, w, na);
    else
        ok = pt_push(&rel, na, 0) && pt_push(&rel, w - pb, 0) && pt_push(&rel, w - nb, h) &&
             pt_push(&rel, pa, h);
    uint64_t rep = 0;
    if (!ok)
        st = oom(r);
    else if ((st = place_points(r, &rel, m->gx, m->gy)) == TSR_OK &&
             (st = rep_id(r, f & 0x04, &rep)) == TSR_OK)
        st = add_polygon(r, r->out.p, r->out.n, rep);
    free(rel.p);
    return st;
}

/* CTRAPEZOID's 26 shapes (§27, the spec's table): for each type, 4 vertices, each x and y as
 * (coefficient of w, coefficient of h); a repeated last vertex makes a triangle. */
static const int8_t ctraps[26][4][4] = {
    {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, -1, 0, 1}, {1, 0, 0, 0}},  /* 0 */
    {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, {1, -1, 0, 0}},  /* 1 */
    {{0, 0, 0, 0}, {0, 1, 0, 1}, {1, 0, 0, 1}, {1, 0, 0, 0}},   /* 2 */
    {{0, 1, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, {1, 0, 0, 0}},   /* 3 */
    {{0, 0, 0, 0}, {0, 1, 0, 1}, {1, -1, 0, 1}, {1, 0, 0, 0}},  /* 4 */
    {{0, 1, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, {1, -1, 0, 0}},  /* 5 */
    {{0, 0, 0, 0}, {0, 1, 0, 1}, {1, 0, 0, 1}, {1, -1, 0, 0}},  /* 6 */
    {{0, 1, 0, 0}, {0, 0, 0, 1}, {1, -1, 0, 1}, {1, 0, 0, 0}},  /* 7 */
    {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, -1, 1}, {1, 0, 0, 0}},  /* 8 */
    {{0, 0, 0, 0}, {0, 0, -1, 1}, {1, 0, 0, 1}, {1, 0, 0, 0}},  /* 9 */
    {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, {1, 0, 1, 0}},   /* 10 */
    {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, {1, 0, 0, 0}},   /* 11 */
    {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, -1, 1}, {1, 0, 1, 0}},  /* 12 */
    {{0, 0, 1, 0}, {0, 0, -1, 1}, {1, 0, 0, 1}, {1, 0, 0, 0}},  /* 13 */
    {{0, 0, 0, 0}, {0, 0, -1, 1}, {1, 0, 0, 1}, {1, 0, 1, 0}},  /* 14 */
    {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, -1, 1}, {1, 0, 0, 0}},  /* 15 */
    {{0, 0, 0, 0}, {0, 0, 1, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}},   /* 16: h = w */
    {{0, 0, 0, 0}, {0, 0, 1, 0}, {1, 0, 1, 0}, {0, 0, 0, 0}},   /* 17 */
    {{0, 0, 0, 0}, {1, 0, 1, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}},   /* 18 */
    {{0, 0, 1, 0}, {1, 0, 1, 0}, {1, 0, 0, 0}, {0, 0, 1, 0}},   /* 19 */
    {{0, 0, 0, 0}, {0, 1, 0, 1}, {0, 2, 0, 0}, {0, 0, 0, 0}},   /* 20: w = 2h */
    {{0, 0, 0, 1}, {0, 2, 0, 1}, {0, 1, 0, 0}, {0, 0, 0, 1}},   /* 21 */
    {{0, 0, 0, 0}, {0, 0, 2, 0}, {1, 0, 1, 0}, {0, 0, 0, 0}},   /* 22: h = 2w */
    {{1, 0, 0, 0}, {0, 0, 1, 0}, {1, 0, 2, 0}, {1, 0, 0, 0}},   /* 23 */
    {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 1}, {1, 0, 0, 0}},   /* 24: box */
    {{0, 0, 0, 0}, {0, 0, 1, 0}, {1, 0, 1, 0}, {1, 0, 0, 0}},   /* 25: square */
};

static tsr_status
rd_ctrapezoid(rd *r)
{
    uint8_t f = 0;
    tsr_status st;
    modal *m = &r->m;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK || (st = get_layer(r, f, false)) != TSR_OK)
        return st;
    if (f & 0x80) {
        size_t at = r->p;
        if ((st = get_u(r, &m->ctype, "ctrapezoid type")) != TSR_OK)
            return st;
        if (m->ctype > 25)
            return bad(r, at, "ctrapezoid type %llu, expected 0-25",
                       (unsigned long long)m->ctype);
        m->has_ctype = true;
    }
    if ((f & 0x40) && (st = get_len(r, &m->w, "width")) != TSR_OK)
        return st;
    m->has_w |= (f & 0x40) != 0;
    if ((f & 0x20) && (st = get_len(r, &m->h, "height")) != TSR_OK)
        return st;
    m->has_h |= (f & 0x20) != 0;
    if ((st = get_xy(r, f, 0x10, 0x08, &m->gx, &m->gy)) != TSR_OK)
        return st;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK || (st = need_layer(r)) != TSR_OK)
        return st;
    if (!m->has_ctype)
        return unset(r, "ctrapezoid-type");
    const int8_t(*t)[4] = ctraps[m->ctype];
    bool uses_w = false, uses_h = false;
    for (int i = 0; i < 4; i++)
        uses_w |= t[i][0] || t[i][2], uses_h |= t[i][1] || t[i][3];
    if (uses_w && !m->has_w)
        return unset(r, "geometry-w");
    if (uses_h && !m->has_h)
        return unset(r, "geometry-h");
    int64_t w = uses_w ? m->w : 0, h = uses_h ? m->h : 0, bw = 0, bh = 0;
    ptbuf rel = {0};
    for (int i = 0; i < 4; i++) {
        int64_t x = t[i][0] * w + t[i][1] * h, y = t[i][2] * w + t[i][3] * h;
        bw = x > bw ? x : bw, bh = y > bh ? y : bh;
        if (!pt_push(&rel, x, y)) {
            free(rel.p);
            return oom(r);
        }
    }
    /* the modal width and height become the shape's box (types 16-23 imply one of them) */
    m->w = bw, m->h = bh, m->has_w = m->has_h = true;
    uint64_t rep;
    if ((st = place_points(r, &rel, m->gx, m->gy)) == TSR_OK &&
        (st = rep_id(r, f & 0x04, &rep)) == TSR_OK)
        st = add_polygon(r, r->out.p, r->out.n, rep);
    free(rel.p);
    return st;
}

static tsr_status
rd_circle(rd *r)
{
    uint8_t f = 0;
    tsr_status st;
    modal *m = &r->m;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK || (st = get_layer(r, f, false)) != TSR_OK)
        return st;
    if (f & 0x20) {
        if ((st = get_len(r, &m->radius, "radius")) != TSR_OK)
            return st;
        m->has_radius = true;
    }
    if ((st = get_xy(r, f, 0x10, 0x08, &m->gx, &m->gy)) != TSR_OK)
        return st;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK || (st = need_layer(r)) != TSR_OK)
        return st;
    if (!m->has_radius)
        return unset(r, "circle-radius");
    int64_t t;
    if ((st = coord_add(r, r->rec_at, llabs(m->gx), m->radius, &t, "x + radius")) != TSR_OK ||
        (st = coord_add(r, r->rec_at, llabs(m->gy), m->radius, &t, "y + radius")) != TSR_OK)
        return st;
    if (m->radius == 0) /* no area */
        return TSR_OK;
    uint64_t rep;
    if ((st = rep_id(r, f & 0x04, &rep)) != TSR_OK)
        return st;
    tsr_lay_pt c = {m->gx, m->gy};
    tsr_lay_shape s = {.layer = m->layer, .datatype = m->dt, .kind = TSR_LAY_CIRCLE, .npts = 1,
                       .r = m->radius, .rep = rep};
    if ((st = tsr_lay_add_points(r->l, (uint32_t)r->cell, &c, 1, &s.first, r->err)) != TSR_OK)
        return st;
    return tsr_lay_add_shape(r->l, (uint32_t)r->cell, &s, r->err);
}

static tsr_status
rd_text(rd *r)
{
    uint8_t f = 0;
    tsr_status st;
    modal *m = &r->m;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK)
        return st;
    if (f & 0x40) {
        if (f & 0x20) {
            uint64_t ref;
            if ((st = get_u(r, &ref, "text string reference number")) != TSR_OK)
                return st;
        } else {
            const uint8_t *s = NULL;
            size_t len = 0;
            if ((st = get_str(r, &s, &len, "text string")) != TSR_OK)
                return st;
        }
        m->has_text = true;
    }
    if ((st = get_layer(r, f, true)) != TSR_OK ||
        (st = get_xy(r, f, 0x10, 0x08, &m->tx, &m->ty)) != TSR_OK)
        return st;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK)
        return st;
    if (!m->has_text)
        return unset(r, "text-string");
    if (!m->has_tl)
        return unset(r, "textlayer");
    if (!m->has_tt)
        return unset(r, "texttype");
    tsr_lay_cell *c = &r->l->cells[r->cell];
    uint64_t k = (f & 0x04) ? m->rep_count : 1;
    c->ntexts = c->ntexts > UINT64_MAX - k ? UINT64_MAX : c->ntexts + k;
    return TSR_OK;
}

static tsr_status
rd_placement(rd *r, uint8_t id)
{
    uint8_t f = 0;
    tsr_status st;
    modal *m = &r->m;
    size_t at;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK)
        return st;
    if (f & 0x80) {
        if ((st = get_cell(r, f & 0x40, &m->pcell)) != TSR_OK)
            return st;
        m->has_pcell = true;
        cinfo *ci = &r->ci[m->pcell];
        if (ci->use_at == SIZE_MAX)
            ci->use_at = file_at(r, r->rec_at);
    }
    tsr_lay_xform xf = {.mag = 1, .angle = 0, .mirror = (f & 1) != 0};
    if (id == 18) {
        at = r->p;
        if ((f & 0x04) && (st = get_real(r, &xf.mag, "magnification")) != TSR_OK)
            return st;
        if (!(xf.mag > 0 && isfinite(xf.mag)))
            return bad(r, at, "magnification %g, expected a finite value > 0", xf.mag);
        at = r->p;
        if ((f & 0x02) && (st = get_real(r, &xf.angle, "angle")) != TSR_OK)
            return st;
        if (!isfinite(xf.angle))
            return bad(r, at, "angle %g, expected a finite number of degrees", xf.angle);
    } else {
        xf.angle = 90.0 * ((f >> 1) & 3);
    }
    if ((st = get_xy(r, f, 0x20, 0x10, &m->px, &m->py)) != TSR_OK)
        return st;
    if ((f & 0x08) && (st = get_rep(r)) != TSR_OK)
        return st;
    if ((st = need_cell(r)) != TSR_OK)
        return st;
    if (!m->has_pcell)
        return unset(r, "placement-cell");
    xf.dx = m->px;
    xf.dy = m->py;
    tsr_lay_ref ref = {.cell = m->pcell, .xf = xf};
    if ((st = rep_id(r, f & 0x08, &ref.rep)) != TSR_OK)
        return st;
    return tsr_lay_add_ref(r->l, (uint32_t)r->cell, &ref, r->err);
}

/* ---- properties and extensions (read over) --------------------------------------------------- */

static tsr_status
rd_property(rd *r)
{
    uint8_t f = 0;
    tsr_status st;
    modal *m = &r->m;
    const uint8_t *s = NULL;
    size_t len = 0;
    uint64_t u;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK)
        return st;
    if (f & 0x04) {
        if ((f & 0x02) ? (st = get_u(r, &u, "property name reference number")) != TSR_OK
                       : (st = get_str(r, &s, &len, "property name")) != TSR_OK)
            return st;
        m->has_propname = true;
    } else if (!m->has_propname) {
        return unset(r, "last-property-name");
    }
    if (f & 0x08) {
        if (!m->has_propval)
            return unset(r, "last-value-list");
        return TSR_OK;
    }
    uint64_t cnt = f >> 4;
    size_t at = r->p;
    if (cnt == 15 && (st = get_u(r, &cnt, "value count")) != TSR_OK)
        return st;
    if (cnt > r->n - r->p)
        return bad(r, at, "%llu property values, more than the %zu bytes left",
                   (unsigned long long)cnt, r->n - r->p);
    for (uint64_t i = 0; i < cnt; i++) {
        size_t vat = r->p;
        uint64_t type;
        double d;
        int64_t v;
        if ((st = get_u(r, &type, "property value type")) != TSR_OK)
            return st;
        if (type > 15)
            return bad(r, vat, "property value type %llu, expected 0-15",
                       (unsigned long long)type);
        if (type <= 7)
            st = get_real_of(r, type, &d, "property value");
        else if (type == 8 || type >= 13)
            st = get_u(r, &u, "property value");
        else if (type == 9)
            st = get_s(r, &v, "property value");
        else
            st = get_str(r, &s, &len, "property value");
        if (st != TSR_OK)
            return st;
    }
    m->has_propval = true;
    return TSR_OK;
}

static tsr_status
rd_xgeometry(rd *r)
{
    uint8_t f = 0;
    uint64_t u;
    const uint8_t *s = NULL;
    size_t len = 0;
    tsr_status st;
    if ((st = get_byte(r, &f, "the info byte")) != TSR_OK ||
        (st = get_u(r, &u, "attribute")) != TSR_OK || (st = get_layer(r, f, false)) != TSR_OK ||
        (st = get_str(r, &s, &len, "data")) != TSR_OK ||
        (st = get_xy(r, f, 0x10, 0x08, &r->m.gx, &r->m.gy)) != TSR_OK)
        return st;
    if ((f & 0x04) && (st = get_rep(r)) != TSR_OK)
        return st;
    return need_cell(r);
}

/* ---- names ----------------------------------------------------------------------------------- */

/* A name record's reference number: implicit (counted) or explicit; a file uses one way per
 * kind. */
static tsr_status
name_ref(rd *r, int kind, bool expl, uint64_t *ref)
{
    static const char *what[4] = {"CELLNAME", "TEXTSTRING", "PROPNAME", "PROPSTRING"};
    int mode = expl ? 2 : 1;
    if (r->ref_mode[kind] && r->ref_mode[kind] != mode)
        return bad(r, r->rec_at, "%s with %s reference number after ones with %s, expected one "
                   "way in a file", what[kind], expl ? "an explicit" : "an implicit",
                   expl ? "implicit" : "explicit");
    r->ref_mode[kind] = mode;
    if (expl)
        return get_u(r, ref, "reference number");
    *ref = r->next_ref[kind]++;
    return TSR_OK;
}

static tsr_status
add_cellname(rd *r, uint64_t ref, char *name, size_t at)
{
    ent *e;
    HASH_FIND(hh, r->cellnames, &ref, sizeof ref, e);
    if (e) {
        bool same = strcmp(e->name, name) == 0;
        free(name);
        if (same) /* a strict table read ahead, met again */
            return TSR_OK;
        return bad(r, at, "reference number %llu named twice", (unsigned long long)ref);
    }
    if (!(e = calloc(1, sizeof *e))) {
        free(name);
        return oom(r);
    }
    e->key = ref;
    e->name = name;
    HASH_ADD(hh, r->cellnames, key, sizeof e->key, e);
    if (!e->hh.tbl) {
        free(name);
        free(e);
        return oom(r);
    }
    return TSR_OK;
}

static tsr_status
rd_name(rd *r, uint8_t id)
{
    tsr_status st;
    const uint8_t *s = NULL;
    size_t len = 0;
    uint64_t ref, u;
    r->cell = -1; /* a name record ends a cell */
    if (id == 3 || id == 4) {
        char *name = NULL;
        if ((st = get_name(r, &name, "cell name")) != TSR_OK)
            return st;
        if ((st = name_ref(r, 0, id == 4, &ref)) != TSR_OK) {
            free(name);
            return st;
        }
        st = add_cellname(r, ref, name, r->rec_at);
    } else if (id <= 10) {
        if ((st = get_str(r, &s, &len, "string")) != TSR_OK)
            return st;
        st = name_ref(r, (id - 3) / 2, id % 2 == 0, &ref);
    } else if (id <= 12) { /* LAYERNAME: the name, then layer and datatype intervals */
        if ((st = get_str(r, &s, &len, "layer name")) != TSR_OK)
            return st;
        for (int k = 0; k < 2 && st == TSR_OK; k++) {
            size_t at = r->p;
            uint64_t type;
            if ((st = get_u(r, &type, "interval type")) != TSR_OK)
                return st;
            if (type > 4)
                return bad(r, at, "interval type %llu, expected 0-4", (unsigned long long)type);
            for (uint64_t j = 0; j < (type == 4 ? 2u : type ? 1u : 0u) && st == TSR_OK; j++)
                st = get_u(r, &u, "interval bound");
        }
    } else { /* XNAME */
        if ((st = get_u(r, &u, "attribute")) != TSR_OK ||
            (st = get_str(r, &s, &len, "string")) != TSR_OK)
            return st;
        if (id == 31)
            st = get_u(r, &u, "reference number");
    }
    reset_modal(r);
    return st;
}

/* ---- the record stream ------------------------------------------------------------------------ */

static tsr_status records(rd *r, bool prescan);

static tsr_status
rd_cblock(rd *r, bool prescan)
{
    size_t at = r->rec_at;
    uint64_t type, ulen, clen;
    tsr_status st;
    if (r->in_cb)
        return bad(r, at, "a CBLOCK inside a CBLOCK, expected plain records");
    if ((st = get_u(r, &type, "compression type")) != TSR_OK)
        return st;
    if (type != 0)
        return bad(r, at, "compression type %llu, expected 0 (deflate)", (unsigned long long)type);
    if ((st = get_u(r, &ulen, "uncompressed byte count")) != TSR_OK)
        return st;
    size_t cat = r->p;
    if ((st = get_u(r, &clen, "compressed byte count")) != TSR_OK)
        return st;
    if (clen > r->n - r->p)
        return bad(r, cat, "%llu compressed bytes, more than the %zu bytes left",
                   (unsigned long long)clen, r->n - r->p);
    if (ulen > SIZE_MAX / 2)
        return bad(r, at, "%llu uncompressed bytes, more than this machine can hold",
                   (unsigned long long)ulen);
    /* inflate into a buffer that grows with what comes out, never past the declared size */
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK)
        return oom(r);
    size_t cap = ulen < 65536 ? (size_t)ulen : 65536, got = 0;
    uint8_t *out = malloc(cap ? cap : 1);
    if (!out) {
        inflateEnd(&z);
        return oom(r);
    }
    const uint8_t *in = r->b + r->p;
    size_t left = (size_t)clen;
    int zr = Z_OK;
    uint8_t probe;
    st = TSR_OK;
    for (;;) {
        if (got == cap && cap < ulen) {
            size_t c = cap > ulen / 2 ? (size_t)ulen : 2 * cap;
            uint8_t *p = realloc(out, c);
            if (!p) {
                st = oom(r);
                break;
            }
            out = p, cap = c;
        }
        /* past the declared size, one probe byte tells "more than declared" */
        z.next_out = got < cap ? out + got : &probe;
        z.avail_out = got < cap ? (uInt)(cap - got > UINT32_MAX ? UINT32_MAX : cap - got) : 1;
        uInt chunk = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
        z.next_in = (Bytef *)in;
        z.avail_in = chunk;
        uInt before_out = z.avail_out;
        zr = inflate(&z, Z_NO_FLUSH);
        size_t used = chunk - z.avail_in, made = before_out - z.avail_out;
        in += used, left -= used;
        if (got >= cap && made > 0) {
            st = bad(r, at, "inflates to more than the declared %llu bytes",
                     (unsigned long long)ulen);
            break;
        }
        got += made;
        if (zr == Z_STREAM_END)
            break;
        if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT) {
            st = bad(r, at, "deflate data are corrupt (%s)", z.msg ? z.msg : "zlib");
            break;
        }
        if (zr == Z_MEM_ERROR) {
            st = oom(r);
            break;
        }
        if (left == 0 && used == 0 && made == 0) {
            st = bad(r, at, "deflate data end before the stream does (%llu compressed bytes)",
                     (unsigned long long)clen);
            break;
        }
    }
    inflateEnd(&z);
    if (st == TSR_OK && got != ulen)
        st = bad(r, at, "inflates to %zu bytes, declared %llu", got, (unsigned long long)ulen);
    if (st == TSR_OK && left != 0)
        st = bad(r, at, "%zu compressed bytes after the deflate stream's end", left);
    if (st != TSR_OK) {
        free(out);
        return st;
    }
    /* read the inflated records as if they stood here */
    const uint8_t *sb = r->b;
    size_t sn = r->n, sp = r->p + (size_t)clen;
    r->b = out, r->n = got, r->p = 0, r->in_cb = true, r->cb_at = at;
    st = records(r, prescan);
    r->b = sb, r->n = sn, r->p = sp, r->in_cb = false;
    free(out);
    return st;
}

/* The table offsets (§13.4): six (flag, offset) pairs; the cellname one into *cn if strict. */
static tsr_status
rd_offsets(rd *r, uint64_t *cn)
{
    tsr_status st;
    uint64_t flag, off;
    *cn = 0;
    for (int i = 0; i < 6; i++) {
        if ((st = get_u(r, &flag, "table offset flag")) != TSR_OK ||
            (st = get_u(r, &off, "table offset")) != TSR_OK)
            return st;
        if (i == 0 && flag == 1)
            *cn = off;
    }
    return TSR_OK;
}

static tsr_status
rd_end(rd *r, bool offsets_here)
{
    tsr_status st;
    uint64_t cn, scheme;
    const uint8_t *s = NULL;
    size_t len = 0;
    if (r->in_cb)
        return bad(r, r->rec_at, "inside a CBLOCK, expected it in the file itself");
    if (offsets_here && (st = rd_offsets(r, &cn)) != TSR_OK)
        return st;
    if ((st = get_str(r, &s, &len, "padding")) != TSR_OK)
        return st;
    size_t at = r->p;
    if ((st = get_u(r, &scheme, "validation scheme")) != TSR_OK)
        return st;
    if (scheme > 2)
        return bad(r, at, "validation scheme %llu, expected 0-2", (unsigned long long)scheme);
    if (scheme && r->n - r->p < 4)
        return truncated(r, "the validation signature");
    if (scheme)
        r->p += 4; /* not checked: docs/oasis.md */
    if (r->p != r->n)
        return bad(r, r->p, "%zu bytes after the END record, expected the file to end",
                   r->n - r->p);
    r->ended = true;
    return TSR_OK;
}

/* Read records until the buffer ends (or END). prescan: only CELLNAME records (and what may
 * sit among them: PAD, PROPERTY, CBLOCK) are taken, and any other record stops the scan. */

static tsr_status
records(rd *r, bool prescan)
{
    tsr_status st = TSR_OK;
    while (r->p < r->n && st == TSR_OK && !r->ended) {
        r->rec_at = r->p;
        r->rec = NULL;
        uint8_t id = r->b[r->p++];
        static const char *names[35] = {
            "PAD", "START", "END", "CELLNAME", "CELLNAME", "TEXTSTRING", "TEXTSTRING",
            "PROPNAME", "PROPNAME", "PROPSTRING", "PROPSTRING", "LAYERNAME", "LAYERNAME",
            "CELL", "CELL", "XYABSOLUTE", "XYRELATIVE", "PLACEMENT", "PLACEMENT", "TEXT",
            "RECTANGLE", "POLYGON", "PATH", "TRAPEZOID", "TRAPEZOID", "TRAPEZOID", "CTRAPEZOID",
            "CIRCLE", "PROPERTY", "PROPERTY", "XNAME", "XNAME", "XELEMENT", "XGEOMETRY",
            "CBLOCK"};
        if (id > 34)
            return bad(r, r->rec_at, "unknown record id %u, expected 0-34", id);
        r->rec = names[id];
        if (prescan && !(id == 0 || id == 3 || id == 4 || id == 28 || id == 29 || id == 34)) {
            r->ended = true; /* the table ends here */
            return TSR_OK;
        }
        switch (id) {
        case 0:
            break;
        case 1:
            st = bad(r, r->rec_at, "a second START, expected one at the file's start");
            break;
        case 2:
            st = rd_end(r, r->offsets_at_end);
            break;
        case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12:
        case 30: case 31:
            st = rd_name(r, id);
            break;
        case 13:
        case 14: {
            uint32_t idx;
            if ((st = get_cell(r, id == 13, &idx)) != TSR_OK)
                break;
            cinfo *ci = &r->ci[idx];
            if (ci->defined && ci->placeholder)
                return bad(r, r->rec_at, "cell number %llu defined again (first at byte %zu)",
                           (unsigned long long)ci->ref, ci->def_at);
            if (ci->defined)
                return bad(r, r->rec_at, "cell '%s' defined again (first at byte %zu)",
                           r->l->cells[idx].name, ci->def_at);
            ci->defined = true;
            ci->def_at = file_at(r, r->rec_at);
            r->cell = idx;
            reset_modal(r);
            break;
        }
        case 15:
        case 16:
            r->m.xyrel = id == 16;
            break;
        case 17: case 18: st = rd_placement(r, id); break;
        case 19: st = rd_text(r); break;
        case 20: st = rd_rectangle(r); break;
        case 21: st = rd_polygon(r); break;
        case 22: st = rd_path(r); break;
        case 23: case 24: case 25: st = rd_trapezoid(r, id); break;
        case 26: st = rd_ctrapezoid(r); break;
        case 27: st = rd_circle(r); break;
        case 28: st = rd_property(r); break;
        case 29:
            if (!r->m.has_propname || !r->m.has_propval)
                st = unset(r, !r->m.has_propname ? "last-property-name" : "last-value-list");
            break;
        case 32: {
            uint64_t u;
            const uint8_t *s = NULL;
            size_t len = 0;
            if ((st = get_u(r, &u, "attribute")) == TSR_OK)
                st = get_str(r, &s, &len, "data");
            break;
        }
        case 33: st = rd_xgeometry(r); break;
        case 34: st = rd_cblock(r, prescan); break;
        }
    }
    return st;
}

/* ---- after the records: names resolved, cells merged -------------------------------------------- */

static tsr_status
resolve(rd *r)
{
    tsr_layout *l = r->l;
    size_t n = l->ncells;
    uint32_t *remap = malloc((n ? n : 1) * sizeof *remap);
    if (!remap)
        return oom(r);
    for (size_t i = 0; i < n; i++)
        remap[i] = (uint32_t)i;
    tsr_status st = TSR_OK;
    r->in_cb = false;
    r->rec = NULL;
    for (size_t i = 0; i < n && st == TSR_OK; i++) {
        cinfo *ci = &r->ci[i];
        if (!ci->placeholder)
            continue;
        ent *e;
        HASH_FIND(hh, r->cellnames, &ci->ref, sizeof ci->ref, e);
        if (!e) {
            st = bad(r, ci->defined ? ci->def_at : ci->use_at,
                     "cell reference number %llu has no CELLNAME record, expected one",
                     (unsigned long long)ci->ref);
            break;
        }
        ent *c;
        HASH_FIND_STR(r->by_name, e->name, c);
        size_t keep = i;
        if (c) {
            size_t j = c->cell;
            if (ci->defined && r->ci[j].defined) {
                st = bad(r, ci->def_at, "cell '%s' defined again (by number; by name at byte "
                         "%zu)", e->name, r->ci[j].def_at);
                break;
            }
            size_t drop = ci->defined ? j : i;
            keep = ci->defined ? i : j;
            remap[drop] = (uint32_t)keep;
            r->ci[drop].dead = true;
            if (r->ci[drop].use_at < r->ci[keep].use_at)
                r->ci[keep].use_at = r->ci[drop].use_at;
            c->cell = (uint32_t)keep;
        }
        ci->placeholder = false;
        if (keep == i) {
            char *nm = strdup(e->name);
            if (!nm) {
                st = oom(r);
                break;
            }
            free(l->cells[i].name);
            l->cells[i].name = nm;
        }
        if (!c) { /* later numbers with the same name find it */
            if (!(c = calloc(1, sizeof *c)) || !(c->name = strdup(e->name))) {
                free(c);
                st = oom(r);
                break;
            }
            c->cell = (uint32_t)i;
            HASH_ADD_KEYPTR(hh, r->by_name, c->name, strlen(c->name), c);
            if (!c->hh.tbl) {
                free(c->name);
                free(c);
                st = oom(r);
                break;
            }
        }
    }
    for (size_t i = 0; i < n && st == TSR_OK; i++)
        if (!r->ci[i].dead && !r->ci[i].defined)
            st = bad(r, r->ci[i].use_at, "cell '%s' is placed but no CELL record defines it",
                     l->cells[i].name);
    if (st != TSR_OK) {
        free(remap);
        return st;
    }
    /* compact: follow merges, number the live cells in order, rewrite the placements. Cells
     * are renamed and moved here: the reader never calls tsr_lay_cell_find, so the model has
     * made no name table yet (tsr_layout_index makes it from the final names). */
    uint32_t *newi = malloc((n ? n : 1) * sizeof *newi);
    if (!newi) {
        free(remap);
        return oom(r);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (r->ci[i].dead) {
            free(l->cells[i].name);
            free(l->cells[i].shapes);
            free(l->cells[i].pts);
            free(l->cells[i].refs);
            continue;
        }
        newi[i] = (uint32_t)k;
        l->cells[k++] = l->cells[i];
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t t = (uint32_t)i;
        while (remap[t] != t)
            t = remap[t];
        remap[i] = newi[t];
    }
    l->ncells = k;
    for (size_t i = 0; i < k; i++)
        for (size_t j = 0; j < l->cells[i].nrefs; j++)
            l->cells[i].refs[j].cell = remap[l->cells[i].refs[j].cell];
    free(newi);
    free(remap);
    return TSR_OK;
}

/* A strict CELLNAME table read ahead through its offset, so that cells by number get their
 * names at once. Anything amiss: forget it (the main pass reads the same records and reports). */
static void
prescan(rd *r, uint64_t off)
{
    if (off < 14 || off >= r->n)
        return;
    rd t = *r;
    t.err = NULL;
    t.p = (size_t)off;
    t.cellnames = NULL;
    memset(t.next_ref, 0, sizeof t.next_ref);
    memset(t.ref_mode, 0, sizeof t.ref_mode);
    tsr_status st = records(&t, true);
    ent *e, *tmp;
    if (st == TSR_OK && t.ref_mode[0]) {
        r->cellnames = t.cellnames;
        return;
    }
    HASH_ITER(hh, t.cellnames, e, tmp) {
        HASH_DEL(t.cellnames, e);
        free(e->name);
        free(e);
    }
}

static void
free_ents(ent **h, bool names)
{
    ent *e, *tmp;
    HASH_ITER(hh, *h, e, tmp) {
        HASH_DEL(*h, e);
        if (names)
            free(e->name);
        free(e);
    }
}

tsr_status
tsr_oasis_read(const uint8_t *buf, size_t len, const tsr_layout_opts *o, tsr_layout *l,
               tsr_error *err)
{
    (void)o; /* circles stay circles: no tolerance needed here */
    static const char magic[] = "%SEMI-OASIS\r\n";
    rd r = {.l = l, .err = err, .path = l->path, .b = buf, .n = len, .cell = -1};
    tsr_status st;
    reset_modal(&r);
    if (len < sizeof magic - 1 || memcmp(buf, magic, sizeof magic - 1) != 0)
        return bad(&r, 0, "no OASIS magic, expected \"%%SEMI-OASIS\\r\\n\"");
    r.p = sizeof magic - 1;
    r.rec_at = r.p;
    r.rec = "START";
    uint8_t id = 0;
    const uint8_t *v = NULL;
    size_t vlen = 0;
    double unit;
    uint64_t flag, cn = 0;
    size_t at;
    if ((st = get_byte(&r, &id, "the START record")) != TSR_OK)
        return st;
    if (id != 1)
        return bad(&r, r.rec_at, "record id %u, expected START (1)", id);
    at = r.p;
    if ((st = get_str(&r, &v, &vlen, "version")) != TSR_OK)
        return st;
    if (vlen != 3 || memcmp(v, "1.0", 3) != 0)
        return bad(&r, at, "version \"%.*s\", expected \"1.0\"", (int)(vlen > 16 ? 16 : vlen),
                   (const char *)v);
    at = r.p;
    if ((st = get_real(&r, &unit, "unit")) != TSR_OK)
        return st;
    if (!(unit > 0 && isfinite(unit) && isfinite(1e-6 / unit) && 1e-6 / unit > 0))
        return bad(&r, at, "unit %g grid steps per micron, expected a finite value > 0", unit);
    l->dbu_m = 1e-6 / unit;
    at = r.p;
    if ((st = get_u(&r, &flag, "offset flag")) != TSR_OK)
        return st;
    if (flag > 1)
        return bad(&r, at, "offset flag %llu, expected 0 or 1", (unsigned long long)flag);
    r.offsets_at_end = flag == 1;
    if (!r.offsets_at_end && (st = rd_offsets(&r, &cn)) != TSR_OK)
        return st;
    size_t body = r.p;
    /* the table offsets in END: END is the last 256 bytes (§13.4) */
    if (r.offsets_at_end && len >= body + 256 && buf[len - 256] == 2) {
        rd t = r;
        t.err = NULL;
        t.p = len - 255;
        if (rd_offsets(&t, &cn) != TSR_OK)
            cn = 0;
    }
    if (cn)
        prescan(&r, cn);
    r.p = body;
    st = records(&r, false);
    if (st == TSR_OK && !r.ended) {
        r.rec = NULL;
        st = bad(&r, r.n, "the file ends without an END record, expected one");
    }
    if (st == TSR_OK)
        st = resolve(&r);
    free_ents(&r.cellnames, true);
    free_ents(&r.by_name, true);
    free_ents(&r.by_ref, false);
    free(r.ci);
    free(r.m.ppoly.p);
    free(r.m.ppath.p);
    free(r.m.rdisp);
    free(r.out.p);
    return st;
}
