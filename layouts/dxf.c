/* The DXF reader: ASCII DXF (R12 to R2018) into the layout model (layouts/layouts.h).
 *
 * Written by hand, not on Debian's libdime (libdime-dev): dime is C++ (this build is C11), a
 * 2011 snapshot with no HATCH (it hands HATCH back as an unknown record, whose boundary paths
 * we would parse ourselves anyway), reads through its own file input and reports a failure as
 * a file position on stderr, while our errors must name the line, the entity and what was
 * expected, and it takes counts from the file as they come. What a reader of group pairs needs
 * is small; the geometry (bulges, OCS, hatch boundaries, block placements) is ours either way.
 *
 * The file is read as group code / value line pairs (\n or \r\n), one record ("0" NAME and
 * the groups up to the next "0") at a time; a record's groups point into the buffer. What
 * becomes of each entity, and why, is docs/dxf.md's; in short:
 *   - coordinates are stored as integers of a micro-unit grid: dbu_m = $INSUNITS's unit / 1e6
 *     (unitless files: mm, so mm drawings get 1 nm database units);
 *   - layers are numbered by name in order of first appearance (LAYER table, then entities),
 *     names compared without case as CAD programs do; datatype 0;
 *   - each BLOCK is a cell (coordinates relative to its base point); the ENTITIES section and
 *     *Model_Space make the top cell, named after the file; *Paper_Space blocks and entities
 *     with group 67 = 1 are ignored;
 *   - areas: closed LWPOLYLINE/POLYLINE (bulges polygonized within arc_tol), CIRCLE (a model
 *     circle), full ELLIPSE, closed SPLINE, SOLID/TRACE (vertex order 1-2-4-3), 3DFACE, HATCH
 *     (every boundary path of lines, arcs, elliptic arcs and splines, joined into one polygon
 *     by doubled bridge edges, so its even-odd fill is the hatch's); open polylines of
 *     constant width > 0 become their outline (mitred joins, flush ends); other open geometry
 *     (LINE, ARC, open polylines and splines, partial ELLIPSE, ...) is not an area: cells
 *     count it in nskipped, texts in ntexts;
 *   - INSERT: a placement (uniform scale, rotation, mirroring by negative scales or extrusion
 *     (0, 0, -1)), its column/row array a lattice repetition; one scaled non-uniformly is no
 *     placement the model has, and its block is flattened into the cell at the end;
 *   - extrusion (0, 0, -1) mirrors OCS entities (x -> -x); other tilted extrusions are refused.
 * Binary DXF is refused. */
#include "layouts/layouts.h"

#include <ctype.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ARC_SEGMENTS ((int64_t)1 << 20) /* per arc, bulge or ellipse: more is an error */
#define MAX_ARRAY 32767                       /* INSERT column/row counts are 16-bit in DXF */
#define MAX_FLAT ((uint64_t)1 << 24)          /* shapes non-uniform INSERTs may make */
#define MAX_DEGREE 25                         /* of a spline (de Boor's work array) */

typedef struct grp {
    int code;
    uint64_t line; /* of the code line, 1-based */
    const char *v; /* the value line, without its line end; not NUL-terminated */
    size_t n;
} grp;

typedef struct cellinfo {
    bool defined;  /* a BLOCK (or the model space) made it; false: only INSERTs named it */
    uint64_t line; /* the first INSERT that named it (undefined blocks' message) */
    uint8_t state; /* flattening: 0 not yet, 1 under way, 2 done */
    int64_t pend;  /* its first non-uniform INSERT to flatten (index into rd.pd), or -1 */
} cellinfo;

/* An INSERT scaled non-uniformly, flattened into its cell once every block is read: the
 * block's shapes through m (block database units to the cell's), repeated by rep. */
typedef struct pend {
    uint32_t into, block;
    double m[6]; /* x' = m0 x + m1 y + m4, y' = m2 x + m3 y + m5 */
    uint64_t rep;
    uint64_t line;
    int64_t next; /* the next of the same cell, or -1 */
} pend;

typedef struct vtx {
    double x, y, bulge, w0, w1;
    bool has_w;
} vtx;

typedef struct rd {
    const uint8_t *b;
    size_t len, pos;
    uint64_t line;   /* the line at pos */
    const char *path;
    tsr_layout *l;
    const tsr_layout_opts *o;
    tsr_error *err;
    grp la;          /* the group read ahead */
    bool have_la;
    grp *g;          /* the current record: g[0] is its "0" NAME group */
    size_t ng, capg;
    char name[64];   /* the record's name (truncated copy, for messages and dispatch) */
    double unit_m;   /* meters per drawing unit */
    double tol;      /* arc tolerance in drawing units */
    double base[2];  /* the current block's base point */
    cellinfo *ci;    /* per cell */
    size_t capci;
    int64_t top;     /* the top cell, -1 until made */
    uint32_t *lh;    /* layer name hash: 1 + layer index, 0 empty */
    size_t lhcap, lcap;
    double (*p)[2];  /* scratch points, drawing units */
    size_t np, capp;
    double (*q)[2];  /* second scratch (outlines) */
    size_t capq;
    tsr_lay_pt *ip;  /* scratch integer points */
    size_t nip, capip;
    vtx *vx;         /* polyline vertices */
    size_t nvx, capvx;
    double *kn;      /* spline knots */
    size_t nkn, capkn;
    double (*cp)[3]; /* spline control points, homogeneous: x w, y w, w */
    size_t ncp, capcp;
    pend *pd;        /* non-uniform INSERTs */
    size_t npd, cappd;
    uint64_t nflat;  /* shapes they made */
} rd;

/* ---- errors ----------------------------------------------------------------------------- */

static tsr_status
fail_at(rd *r, uint64_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static tsr_status
fail_at(rd *r, uint64_t line, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tsr_fail(r->err, TSR_EINVAL, "%s: line %llu: %s", r->path, (unsigned long long)line,
                    what);
}

static tsr_status
nomem(rd *r)
{
    return tsr_fail(r->err, TSR_ENOMEM, "%s: out of memory", r->path);
}

/* Room for `more` elements in *arr of n used, *cap allocated; every size checked. */
static tsr_status
grow(rd *r, void **arr, size_t n, size_t *cap, size_t more, size_t size)
{
    if (more <= *cap - n)
        return TSR_OK;
    if (more > SIZE_MAX / size / 2 - n)
        return nomem(r);
    size_t c = *cap ? *cap : 16;
    while (c < n + more)
        c *= 2;
    void *p = realloc(*arr, c * size);
    if (!p)
        return nomem(r);
    *arr = p;
    *cap = c;
    return TSR_OK;
}

/* A value for messages: at most 40 bytes of it, control bytes as '?'. */
static const char *
show(const grp *g, char buf[48])
{
    size_t n = g->n < 40 ? g->n : 40, i;
    for (i = 0; i < n; i++)
        buf[i] = (unsigned char)g->v[i] < 0x20 ? '?' : g->v[i];
    if (g->n > 40)
        buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
    buf[i] = 0;
    return buf;
}

/* ---- groups ----------------------------------------------------------------------------- */

/* One line from pos: [*s, *s + *n) without its \n or \r\n; false at the end of the buffer. */
static bool
getline_(rd *r, const char **s, size_t *n)
{
    if (r->pos >= r->len)
        return false;
    const uint8_t *a = r->b + r->pos;
    const uint8_t *e = memchr(a, '\n', r->len - r->pos);
    size_t k = e ? (size_t)(e - a) : r->len - r->pos;
    r->pos += e ? k + 1 : k;
    r->line++;
    if (k > 0 && a[k - 1] == '\r')
        k--;
    *s = (const char *)a;
    *n = k;
    return true;
}

static void
trim(const char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t'))
        (*s)++, (*n)--;
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
        (*n)--;
}

/* The next group (comments, code 999, skipped). */
static tsr_status
next(rd *r, grp *g)
{
    if (r->have_la) {
        *g = r->la;
        r->have_la = false;
        return TSR_OK;
    }
    for (;;) {
        const char *s;
        size_t n;
        uint64_t line = r->line;
        if (!getline_(r, &s, &n))
            return fail_at(r, line, "the file ends, expected a group code (0/EOF ends a DXF "
                                    "file)");
        trim(&s, &n);
        bool neg = n > 0 && s[0] == '-';
        size_t i = neg;
        long code = 0;
        if (i == n || n - i > 4) {
            grp t = {0, line, s, n};
            char b[48];
            return fail_at(r, line, "group code '%s' is not a number, expected an integer "
                           "group code 0..1071 (lines alternate code, value)", show(&t, b));
        }
        for (; i < n; i++) {
            if (s[i] < '0' || s[i] > '9') {
                grp t = {0, line, s, n};
                char b[48];
                return fail_at(r, line, "group code '%s' is not a number, expected an "
                               "integer group code 0..1071 (lines alternate code, value)",
                               show(&t, b));
            }
            code = code * 10 + (s[i] - '0');
        }
        if (neg || code > 1071)
            return fail_at(r, line, "group code %s%ld, expected 0..1071", neg ? "-" : "", code);
        const char *v;
        size_t vn;
        if (!getline_(r, &v, &vn))
            return fail_at(r, line + 1, "the file ends after group code %ld, expected its "
                           "value line (an odd number of lines)", code);
        if (code == 999)
            continue;
        g->code = (int)code;
        g->line = line;
        g->v = v;
        g->n = vn;
        return TSR_OK;
    }
}

static bool
is(const grp *g, const char *s)
{
    const char *v = g->v;
    size_t n = g->n;
    trim(&v, &n);
    return n == strlen(s) && memcmp(v, s, n) == 0;
}

/* The next record: its "0" NAME group and the groups up to the next "0", into r->g. */
static tsr_status
record(rd *r)
{
    grp g;
    tsr_status st = next(r, &g);
    if (st != TSR_OK)
        return st;
    if (g.code != 0)
        return fail_at(r, g.line, "group %d where a record starts, expected group 0", g.code);
    r->ng = 0;
    for (;;) {
        if ((st = grow(r, (void **)&r->g, r->ng, &r->capg, 1, sizeof *r->g)) != TSR_OK)
            return st;
        r->g[r->ng++] = g;
        if (r->ng == 1 && is(&g, "EOF")) /* the end: whatever follows is not read */
            break;
        if ((st = next(r, &g)) != TSR_OK)
            return st;
        if (g.code == 0) {
            r->la = g;
            r->have_la = true;
            break;
        }
    }
    const char *v = r->g[0].v;
    size_t n = r->g[0].n;
    trim(&v, &n);
    if (n >= sizeof r->name)
        n = sizeof r->name - 1;
    memcpy(r->name, v, n);
    r->name[n] = 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)r->name[i] < 0x20)
            r->name[i] = '?';
    return TSR_OK;
}

static bool
named(const rd *r, const char *s)
{
    return strcmp(r->name, s) == 0;
}

static uint64_t
rline(const rd *r)
{
    return r->g[0].line;
}

/* ---- values ----------------------------------------------------------------------------- */

static tsr_status
num_of(rd *r, const grp *g, double *out)
{
    const char *s = g->v;
    size_t n = g->n;
    trim(&s, &n);
    char buf[64], b[48];
    if (n == 0 || n >= sizeof buf)
        return fail_at(r, g->line, "%s: group %d value '%s' is not a number, expected a "
                       "finite number", r->name, g->code, show(g, b));
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    double v = strtod(buf, &end);
    if (*end != 0 || !isfinite(v))
        return fail_at(r, g->line, "%s: group %d value '%s' is not a finite number, expected "
                       "a finite number", r->name, g->code, show(g, b));
    *out = v;
    return TSR_OK;
}

static tsr_status
int_of(rd *r, const grp *g, int64_t lo, int64_t hi, int64_t *out)
{
    const char *s = g->v;
    size_t n = g->n;
    trim(&s, &n);
    char buf[32], b[48];
    if (n == 0 || n >= sizeof buf)
        return fail_at(r, g->line, "%s: group %d value '%s' is not an integer, expected an "
                       "integer in %lld..%lld", r->name, g->code, show(g, b), (long long)lo,
                       (long long)hi);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (*end != 0 || v < lo || v > hi)
        return fail_at(r, g->line, "%s: group %d value '%s', expected an integer in "
                       "%lld..%lld", r->name, g->code, show(g, b), (long long)lo,
                       (long long)hi);
    *out = v;
    return TSR_OK;
}

/* The record's first group of `code`, or NULL. */
static const grp *
find(const rd *r, int code)
{
    for (size_t i = 1; i < r->ng; i++)
        if (r->g[i].code == code)
            return &r->g[i];
    return NULL;
}

static tsr_status
num(rd *r, int code, double def, double *out)
{
    const grp *g = find(r, code);
    if (!g) {
        *out = def;
        return TSR_OK;
    }
    return num_of(r, g, out);
}

static tsr_status
req_num(rd *r, int code, const char *what, double *out)
{
    const grp *g = find(r, code);
    if (!g)
        return fail_at(r, rline(r), "%s: no group %d (%s), expected one", r->name, code, what);
    return num_of(r, g, out);
}

static tsr_status
inum(rd *r, int code, int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
    const grp *g = find(r, code);
    if (!g) {
        *out = def;
        return TSR_OK;
    }
    return int_of(r, g, lo, hi, out);
}

/* A required point of groups code (x), code + 10 (y). */
static tsr_status
req_pt(rd *r, int code, const char *what, double p[2])
{
    tsr_status st = req_num(r, code, what, &p[0]);
    return st != TSR_OK ? st : req_num(r, code + 10, what, &p[1]);
}

/* The extrusion direction (210/220/230): *flip when it is (0, 0, -1), which mirrors the
 * entity's OCS x axis (the arbitrary axis algorithm gives Ax = (-1, 0, 0), Ay = (0, 1, 0)). */
static tsr_status
ocs(rd *r, bool *flip)
{
    double n[3];
    tsr_status st;
    if ((st = num(r, 210, 0, &n[0])) != TSR_OK || (st = num(r, 220, 0, &n[1])) != TSR_OK ||
        (st = num(r, 230, 1, &n[2])) != TSR_OK)
        return st;
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (!(len > 0) || !isfinite(len) || fabs(n[0]) > 1e-9 * len || fabs(n[1]) > 1e-9 * len)
        return fail_at(r, rline(r), "%s: extrusion direction (%g, %g, %g), expected (0, 0, 1) "
                       "or (0, 0, -1): a tilted entity has no outline in the drawing plane",
                       r->name, n[0], n[1], n[2]);
    *flip = n[2] < 0;
    return TSR_OK;
}

/* ---- layers and cells ------------------------------------------------------------------- */

static uint64_t
hash_name(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint64_t)tolower((unsigned char)s[i])) * 1099511628211ull;
    return h;
}

/* The number of the layer named by [s, s + n) (compared without case), added when new. */
static tsr_status
layer(rd *r, const char *s, size_t n, uint32_t *out)
{
    tsr_layout *l = r->l;
    trim(&s, &n);
    if (2 * (l->nlayer_names + 1) > r->lhcap) { /* rehash at half load */
        size_t cap = r->lhcap ? 2 * r->lhcap : 64;
        uint32_t *t = calloc(cap, sizeof *t);
        if (!t)
            return nomem(r);
        for (size_t i = 0; i < l->nlayer_names; i++) {
            const char *nm = l->layer_names[i];
            size_t k = hash_name(nm, strlen(nm)) & (cap - 1);
            while (t[k])
                k = (k + 1) & (cap - 1);
            t[k] = (uint32_t)(i + 1);
        }
        free(r->lh);
        r->lh = t;
        r->lhcap = cap;
    }
    size_t k = hash_name(s, n) & (r->lhcap - 1);
    for (; r->lh[k]; k = (k + 1) & (r->lhcap - 1)) {
        const char *nm = l->layer_names[r->lh[k] - 1];
        if (strlen(nm) == n && strncasecmp(nm, s, n) == 0) {
            *out = r->lh[k] - 1;
            return TSR_OK;
        }
    }
    if (l->nlayer_names >= UINT32_MAX - 1)
        return fail_at(r, rline(r), "%s: more than %u layers", r->name, UINT32_MAX - 1);
    tsr_status st = grow(r, (void **)&l->layer_names, l->nlayer_names, &r->lcap, 1,
                         sizeof *l->layer_names);
    if (st != TSR_OK)
        return st;
    char *nm = malloc(n + 1);
    if (!nm)
        return nomem(r);
    memcpy(nm, s, n);
    nm[n] = 0;
    l->layer_names[l->nlayer_names] = nm;
    r->lh[k] = (uint32_t)++l->nlayer_names;
    *out = r->lh[k] - 1;
    return TSR_OK;
}

/* The entity's layer (group 8; "0" without one). */
static tsr_status
ent_layer(rd *r, uint32_t *out)
{
    const grp *g = find(r, 8);
    return g ? layer(r, g->v, g->n, out) : layer(r, "0", 1, out);
}

static tsr_status
cell_new(rd *r, const char *name, bool defined, uint64_t line, uint32_t *idx)
{
    tsr_status st = grow(r, (void **)&r->ci, r->l->ncells, &r->capci, 1, sizeof *r->ci);
    if (st != TSR_OK || (st = tsr_lay_cell_add(r->l, name, idx, r->err)) != TSR_OK)
        return st;
    r->ci[*idx] = (cellinfo){defined, line, 0, -1};
    return TSR_OK;
}

/* The top cell (ENTITIES, *Model_Space), made on first use: named after the file (its base
 * name without extension), or "ENTITIES" when a block has that name or the file none. */
static tsr_status
top_cell(rd *r, uint32_t *out)
{
    if (r->top >= 0) {
        *out = (uint32_t)r->top;
        return TSR_OK;
    }
    const char *b = strrchr(r->path, '/');
    b = b ? b + 1 : r->path;
    char name[256];
    size_t n = strlen(b);
    const char *dot = strrchr(b, '.');
    if (dot && dot != b)
        n = (size_t)(dot - b);
    if (n >= sizeof name)
        n = sizeof name - 1;
    memcpy(name, b, n);
    name[n] = 0;
    if (n == 0 || tsr_lay_cell_find(r->l, name) >= 0)
        strcpy(name, "ENTITIES");
    for (int k = 2; tsr_lay_cell_find(r->l, name) >= 0; k++)
        snprintf(name, sizeof name, "ENTITIES_%d", k);
    tsr_status st = cell_new(r, name, true, 0, out);
    if (st == TSR_OK)
        r->top = *out;
    return st;
}

/* *Model_Space and *Paper_Space (any number after it), $Model_Space and $Paper_Space in R12 */
static bool
is_model_space(const char *s, size_t n)
{
    return n == 12 && (s[0] == '*' || s[0] == '$') && strncasecmp(s + 1, "Model_Space", 11) == 0;
}

static bool
is_paper_space(const char *s, size_t n)
{
    return n >= 12 && (s[0] == '*' || s[0] == '$') && strncasecmp(s + 1, "Paper_Space", 11) == 0;
}

/* A block's cell named by an INSERT at `line`: the block's, or a placeholder a BLOCK of that
 * name defines later (blocks may come in any order; one never defined is an error at the end). */
static tsr_status
cell_ref(rd *r, const char *s, size_t n, uint64_t line, uint32_t *out)
{
    if (is_model_space(s, n))
        return top_cell(r, out);
    char name[512];
    if (n >= sizeof name)
        return fail_at(r, line, "%s: block name of %zu bytes, expected at most %zu", r->name,
                       n, sizeof name - 1);
    memcpy(name, s, n);
    name[n] = 0;
    int64_t c = tsr_lay_cell_find(r->l, name);
    if (c >= 0) {
        *out = (uint32_t)c;
        return TSR_OK;
    }
    return cell_new(r, name, false, line, out);
}

/* ---- geometry --------------------------------------------------------------------------- */

static tsr_status
add_p(rd *r, double x, double y)
{
    tsr_status st = grow(r, (void **)&r->p, r->np, &r->capp, 1, sizeof *r->p);
    if (st == TSR_OK) {
        r->p[r->np][0] = x;
        r->p[r->np][1] = y;
        r->np++;
    }
    return st;
}

/* Segments for `sweep` radians of a curve of radius `rad` so that no chord is farther than the
 * tolerance from it: each spans 2 acos(1 - tol / rad). */
static tsr_status
segments(rd *r, double rad, double sweep, int64_t min, int64_t *out)
{
    /* 1 - cos(step / 2) = tol / rad, in a form that stays exact for tiny ratios */
    double step = rad > r->tol ? 4 * asin(sqrt(r->tol / rad / 2)) : M_PI;
    if (step > M_PI / 2)
        step = M_PI / 2;
    double k = ceil(fabs(sweep) / step);
    if (!(k <= (double)MAX_ARC_SEGMENTS))
        return fail_at(r, rline(r), "%s: a curve of radius %g needs %.0f segments to stay "
                       "within arc_tol, expected at most %lld (raise arc_tol)", r->name, rad,
                       k, (long long)MAX_ARC_SEGMENTS);
    *out = (int64_t)k < min ? min : (int64_t)k;
    return TSR_OK;
}

/* The points strictly between (x0, y0) and (x1, y1) on the arc of bulge b (tan of a quarter
 * of its angle, > 0 counterclockwise) between them. */
static tsr_status
bulge_pts(rd *r, double x0, double y0, double x1, double y1, double b)
{
    double dx = x1 - x0, dy = y1 - y0, c = hypot(dx, dy);
    if (b == 0 || c == 0)
        return TSR_OK;
    if (!isfinite(b) || fabs(b) > 1e6)
        return fail_at(r, rline(r), "%s: bulge %g, expected a finite bulge of at most 1e6",
                       r->name, b);
    /* the centre lies left of the chord by c (1 - b^2) / (4 b) (right when b < 0) */
    double h = c * (1 - b * b) / (4 * b);
    double cx = (x0 + x1) / 2 - dy / c * h, cy = (y0 + y1) / 2 + dx / c * h;
    double rad = c * (1 + b * b) / (4 * fabs(b));
    double sweep = 4 * atan(b), a0 = atan2(y0 - cy, x0 - cx);
    int64_t k = 1;
    tsr_status st = segments(r, rad, sweep, 1, &k);
    for (int64_t i = 1; st == TSR_OK && i < k; i++) {
        double a = a0 + sweep * (double)i / (double)k;
        st = add_p(r, cx + rad * cos(a), cy + rad * sin(a));
    }
    return st;
}

/* Points of an elliptic arc: centre c, major axis vector m, minor axis ratio q, from
 * parameter t0 over `sweep` radians, k + 1 points (both ends) when `ends`, else k - 1. */
static tsr_status
ellipse_pts(rd *r, const double c[2], const double m[2], double q, double t0, double sweep,
            int64_t min, bool ends)
{
    int64_t k = 1;
    tsr_status st = segments(r, hypot(m[0], m[1]), sweep, min, &k);
    for (int64_t i = ends ? 0 : 1; st == TSR_OK && i <= (ends ? k : k - 1); i++) {
        double t = t0 + sweep * (double)i / (double)k, ct = cos(t), s = sin(t);
        st = add_p(r, c[0] + ct * m[0] - s * q * m[1], c[1] + ct * m[1] + s * q * m[0]);
    }
    return st;
}

/* Drawing units to database units, relative to the block's base point. */
static tsr_status
to_dbu(rd *r, double v, double base, int64_t *out)
{
    double x = (v - base) * 1e6;
    if (!(fabs(x) <= (double)TSR_LAYOUT_COORD_MAX))
        return fail_at(r, rline(r), "%s: coordinate %g is beyond the model's range, expected "
                       "|coordinate| <= %g drawing units", r->name, v,
                       (double)TSR_LAYOUT_COORD_MAX / 1e6);
    *out = llround(x);
    return TSR_OK;
}

/* r->p[from ..) (mirrored when flip) as integer points appended to r->ip, consecutive and
 * closing duplicates dropped; *n: how many were appended. */
static tsr_status
ring(rd *r, size_t from, bool flip, size_t *n)
{
    size_t start = r->nip;
    tsr_status st = grow(r, (void **)&r->ip, r->nip, &r->capip, r->np - from, sizeof *r->ip);
    for (size_t i = from; st == TSR_OK && i < r->np; i++) {
        tsr_lay_pt q;
        if ((st = to_dbu(r, flip ? -r->p[i][0] : r->p[i][0], r->base[0], &q.x)) != TSR_OK ||
            (st = to_dbu(r, r->p[i][1], r->base[1], &q.y)) != TSR_OK)
            break;
        if (r->nip > start && r->ip[r->nip - 1].x == q.x && r->ip[r->nip - 1].y == q.y)
            continue;
        r->ip[r->nip++] = q;
    }
    while (st == TSR_OK && r->nip > start + 1 && r->ip[r->nip - 1].x == r->ip[start].x &&
           r->ip[r->nip - 1].y == r->ip[start].y)
        r->nip--;
    *n = r->nip - start;
    return st;
}

static tsr_status
emit_ip(rd *r, uint32_t cell, uint32_t lay)
{
    if (r->nip < 3) { /* collapsed onto the grid: no area */
        r->l->cells[cell].nskipped++;
        return TSR_OK;
    }
    if (r->nip > UINT32_MAX)
        return fail_at(r, rline(r), "%s: %zu vertices, expected at most %u", r->name, r->nip,
                       UINT32_MAX);
    tsr_lay_shape s = {.layer = lay, .kind = TSR_LAY_POLYGON, .npts = (uint32_t)r->nip};
    tsr_status st = tsr_lay_add_points(r->l, cell, r->ip, r->nip, &s.first, r->err);
    return st != TSR_OK ? st : tsr_lay_add_shape(r->l, cell, &s, r->err);
}

/* The polygon r->p[0 .. np) (OCS, mirrored when flip) as a shape of `cell`. */
static tsr_status
emit_poly(rd *r, uint32_t cell, uint32_t lay, bool flip)
{
    size_t n;
    r->nip = 0;
    tsr_status st = ring(r, 0, flip, &n);
    return st != TSR_OK ? st : emit_ip(r, cell, lay);
}

/* A polyline's vertices r->vx (OCS) as the points of its centre line into r->p: bulges
 * polygonized, and back to the first vertex when closed. */
static tsr_status
centre_line(rd *r, bool closed)
{
    tsr_status st = TSR_OK;
    r->np = 0;
    for (size_t i = 0; st == TSR_OK && i < r->nvx; i++) {
        const vtx *a = &r->vx[i];
        if ((st = add_p(r, a->x, a->y)) != TSR_OK)
            break;
        if (i + 1 < r->nvx || closed) {
            const vtx *b = &r->vx[(i + 1) % r->nvx];
            st = bulge_pts(r, a->x, a->y, b->x, b->y, a->bulge);
        }
    }
    return st;
}

/* The outline of the open centre line r->p at constant width w: mitred joins (bevelled where
 * a mitre would reach beyond twice the width), flush ends, into r->p. */
static tsr_status
outline(rd *r, double w)
{
    size_t m = 0;
    for (size_t i = 0; i < r->np; i++) /* no zero-length segments */
        if (m == 0 || r->p[i][0] != r->p[m - 1][0] || r->p[i][1] != r->p[m - 1][1])
            r->p[m][0] = r->p[i][0], r->p[m][1] = r->p[i][1], m++;
    r->np = m;
    if (m < 2)
        return TSR_OK;
    size_t cap = 4 * m;
    tsr_status st = grow(r, (void **)&r->q, 0, &r->capq, cap, sizeof *r->q);
    if (st != TSR_OK)
        return st;
    double (*L)[2] = r->q, (*R)[2] = r->q + 2 * m, h = w / 2;
    size_t nl = 0;
    for (size_t i = 0; i < m; i++) {
        double na[2], nb[2];
        size_t a = i == 0 ? 0 : i - 1, b = i + 1 < m ? i : m - 2;
        double dxa = r->p[a + 1][0] - r->p[a][0], dya = r->p[a + 1][1] - r->p[a][1];
        double dxb = r->p[b + 1][0] - r->p[b][0], dyb = r->p[b + 1][1] - r->p[b][1];
        double la = hypot(dxa, dya), lb = hypot(dxb, dyb);
        na[0] = -dya / la, na[1] = dxa / la, nb[0] = -dyb / lb, nb[1] = dxb / lb;
        double sx = na[0] + nb[0], sy = na[1] + nb[1], s2 = sx * sx + sy * sy;
        const double *p = r->p[i];
        if (s2 > 0.25) { /* mitre h / cos(half the turn) <= 4 h: s2 = 4 cos^2 */
            double k = 2 * h / s2;
            L[nl][0] = p[0] + sx * k, L[nl][1] = p[1] + sy * k;
            R[nl][0] = p[0] - sx * k, R[nl][1] = p[1] - sy * k;
            nl++;
        } else {
            L[nl][0] = p[0] + na[0] * h, L[nl][1] = p[1] + na[1] * h;
            R[nl][0] = p[0] - na[0] * h, R[nl][1] = p[1] - na[1] * h;
            nl++;
            L[nl][0] = p[0] + nb[0] * h, L[nl][1] = p[1] + nb[1] * h;
            R[nl][0] = p[0] - nb[0] * h, R[nl][1] = p[1] - nb[1] * h;
            nl++;
        }
    }
    r->np = 0;
    for (size_t i = 0; st == TSR_OK && i < nl; i++)
        st = add_p(r, L[i][0], L[i][1]);
    for (size_t i = nl; st == TSR_OK && i-- > 0;)
        st = add_p(r, R[i][0], R[i][1]);
    return st;
}

/* A polyline of r->vx: closed, an area; open with one width w > 0 everywhere, its outline;
 * otherwise not an area (counted). */
static tsr_status
emit_polyline(rd *r, uint32_t cell, uint32_t lay, bool flip, bool closed, double cw)
{
    if (r->nvx == 0) {
        r->l->cells[cell].nskipped++;
        return TSR_OK;
    }
    tsr_status st = centre_line(r, closed);
    if (st != TSR_OK)
        return st;
    if (closed)
        return emit_poly(r, cell, lay, flip);
    /* per-vertex widths where given, else the constant width */
    double w = -1;
    bool same = true;
    for (size_t i = 0; i + 1 < r->nvx; i++) {
        double w0 = r->vx[i].has_w ? r->vx[i].w0 : cw, w1 = r->vx[i].has_w ? r->vx[i].w1 : cw;
        if (w < 0)
            w = w0;
        same = same && w0 == w && w1 == w;
    }
    if (!same || !(w > 0)) {
        r->l->cells[cell].nskipped++;
        return TSR_OK;
    }
    if ((st = outline(r, w)) != TSR_OK)
        return st;
    return emit_poly(r, cell, lay, flip);
}

static tsr_status
add_vtx(rd *r, double x, double y)
{
    tsr_status st = grow(r, (void **)&r->vx, r->nvx, &r->capvx, 1, sizeof *r->vx);
    if (st == TSR_OK)
        r->vx[r->nvx++] = (vtx){x, y, 0, 0, 0, false};
    return st;
}

static tsr_status
width(rd *r, double w)
{
    if (w < 0)
        return fail_at(r, rline(r), "%s: width %g, expected >= 0", r->name, w);
    return TSR_OK;
}

/* ---- entities --------------------------------------------------------------------------- */

static tsr_status
lwpolyline(rd *r, uint32_t cell, uint32_t lay)
{
    bool flip;
    int64_t flags, count;
    double cw;
    tsr_status st;
    if ((st = ocs(r, &flip)) != TSR_OK || (st = inum(r, 70, 0, 0, 65535, &flags)) != TSR_OK ||
        (st = num(r, 43, 0, &cw)) != TSR_OK || (st = width(r, cw)) != TSR_OK)
        return st;
    const grp *c = find(r, 90);
    if (!c)
        return fail_at(r, rline(r), "LWPOLYLINE: no group 90 (vertex count), expected one");
    if ((st = int_of(r, c, 0, INT32_MAX, &count)) != TSR_OK)
        return st;
    r->nvx = 0;
    for (size_t i = 1; i < r->ng; i++) {
        const grp *g = &r->g[i];
        double v;
        if (g->code == 10) {
            if (i + 1 >= r->ng || r->g[i + 1].code != 20)
                return fail_at(r, g->line, "LWPOLYLINE: vertex without its group 20 (y), "
                               "expected 20 after 10");
            double y;
            if ((st = num_of(r, g, &v)) != TSR_OK || (st = num_of(r, &r->g[i + 1], &y)) != TSR_OK ||
                (st = add_vtx(r, v, y)) != TSR_OK)
                return st;
            i++;
        } else if ((g->code == 40 || g->code == 41 || g->code == 42) && r->nvx > 0) {
            if ((st = num_of(r, g, &v)) != TSR_OK)
                return st;
            vtx *x = &r->vx[r->nvx - 1];
            if (g->code == 42)
                x->bulge = v;
            else {
                if ((st = width(r, v)) != TSR_OK)
                    return st;
                if (!x->has_w)
                    x->w0 = x->w1 = cw;
                x->has_w = true;
                *(g->code == 40 ? &x->w0 : &x->w1) = v;
            }
        }
    }
    if ((uint64_t)count != r->nvx)
        return fail_at(r, c->line, "LWPOLYLINE: group 90 says %lld vertices, expected the %zu "
                       "the entity has", (long long)count, r->nvx);
    return emit_polyline(r, cell, lay, flip, flags & 1, cw);
}

static tsr_status
circle(rd *r, uint32_t cell, uint32_t lay)
{
    bool flip;
    double c[2], rad;
    tsr_status st;
    if ((st = ocs(r, &flip)) != TSR_OK || (st = req_pt(r, 10, "centre", c)) != TSR_OK ||
        (st = req_num(r, 40, "radius", &rad)) != TSR_OK)
        return st;
    if (rad < 0)
        return fail_at(r, rline(r), "CIRCLE: radius %g, expected >= 0", rad);
    tsr_lay_shape s = {.layer = lay, .kind = TSR_LAY_CIRCLE, .npts = 1};
    tsr_lay_pt p;
    if ((st = to_dbu(r, flip ? -c[0] : c[0], r->base[0], &p.x)) != TSR_OK ||
        (st = to_dbu(r, c[1], r->base[1], &p.y)) != TSR_OK ||
        (st = to_dbu(r, rad, 0, &s.r)) != TSR_OK)
        return st;
    if (s.r == 0) {
        r->l->cells[cell].nskipped++;
        return TSR_OK;
    }
    if ((st = tsr_lay_add_points(r->l, cell, &p, 1, &s.first, r->err)) != TSR_OK)
        return st;
    return tsr_lay_add_shape(r->l, cell, &s, r->err);
}

static tsr_status
ellipse(rd *r, uint32_t cell, uint32_t lay)
{
    bool flip;
    double c[2], m[2], q, t0, t1;
    tsr_status st;
    if ((st = ocs(r, &flip)) != TSR_OK || (st = req_pt(r, 10, "centre", c)) != TSR_OK ||
        (st = req_pt(r, 11, "major axis", m)) != TSR_OK ||
        (st = req_num(r, 40, "axis ratio", &q)) != TSR_OK || (st = num(r, 41, 0, &t0)) != TSR_OK ||
        (st = num(r, 42, 2 * M_PI, &t1)) != TSR_OK)
        return st;
    if (!(q > 0 && q <= 1) || (m[0] == 0 && m[1] == 0))
        return fail_at(r, rline(r), "ELLIPSE: axis ratio %g and major axis (%g, %g), expected "
                       "a ratio in (0, 1] and a non-zero axis", q, m[0], m[1]);
    double span = fmod(t1 - t0, 2 * M_PI);
    if (span < 0)
        span += 2 * M_PI;
    if (fabs(t1 - t0) < 1e-12 || (span > 1e-9 && span < 2 * M_PI - 1e-9)) {
        r->l->cells[cell].nskipped++; /* an elliptic arc: no area */
        return TSR_OK;
    }
    /* centre and axis are WCS: the extrusion only orients the minor axis, and a full ellipse
     * is the same set either way */
    r->np = 0;
    if ((st = ellipse_pts(r, c, m, q, 0, 2 * M_PI, 8, false)) != TSR_OK ||
        (st = add_p(r, c[0] + m[0], c[1] + m[1])) != TSR_OK)
        return st;
    return emit_poly(r, cell, lay, false);
}

/* SOLID and TRACE (OCS; corners 1-2-4-3 around), 3DFACE (WCS; 1-2-3-4). */
static tsr_status
quad(rd *r, uint32_t cell, uint32_t lay, bool face)
{
    bool flip = false;
    double p[4][2];
    tsr_status st = face ? TSR_OK : ocs(r, &flip);
    for (int i = 0; st == TSR_OK && i < 3; i++)
        st = req_pt(r, 10 + i, "corner", p[i]);
    if (st != TSR_OK)
        return st;
    if (find(r, 13)) {
        if ((st = req_pt(r, 13, "corner", p[3])) != TSR_OK)
            return st;
    } else
        p[3][0] = p[2][0], p[3][1] = p[2][1];
    static const int solid[4] = {0, 1, 3, 2}, face3[4] = {0, 1, 2, 3};
    r->np = 0;
    for (int i = 0; st == TSR_OK && i < 4; i++) {
        const double *a = p[face ? face3[i] : solid[i]];
        st = add_p(r, a[0], a[1]);
    }
    return st != TSR_OK ? st : emit_poly(r, cell, lay, flip);
}

/* ---- splines ---------------------------------------------------------------------------- */

static tsr_status
add_knot(rd *r, double v)
{
    tsr_status st = grow(r, (void **)&r->kn, r->nkn, &r->capkn, 1, sizeof *r->kn);
    if (st == TSR_OK)
        r->kn[r->nkn++] = v;
    return st;
}

static tsr_status
add_cp(rd *r, double x, double y, double w)
{
    tsr_status st = grow(r, (void **)&r->cp, r->ncp, &r->capcp, 1, sizeof *r->cp);
    if (st == TSR_OK) {
        r->cp[r->ncp][0] = x * w;
        r->cp[r->ncp][1] = y * w;
        r->cp[r->ncp][2] = w;
        r->ncp++;
    }
    return st;
}

/* The point at u in knot span k (kn[k] <= u <= kn[k + 1]) of the rational B-spline of degree
 * p over r->kn, r->cp: de Boor's algorithm in homogeneous coordinates. */
static void
spline_at(const rd *r, int p, size_t k, double u, double out[2])
{
    double d[MAX_DEGREE + 1][3];
    for (int j = 0; j <= p; j++)
        memcpy(d[j], r->cp[j + k - (size_t)p], sizeof d[j]);
    for (int q = 1; q <= p; q++)
        for (int j = p; j >= q; j--) {
            double a = r->kn[j + k - (size_t)p], b = r->kn[j + 1 + k - (size_t)q];
            double t = b > a ? (u - a) / (b - a) : 0;
            for (int c = 0; c < 3; c++)
                d[j][c] = (1 - t) * d[j - 1][c] + t * d[j][c];
        }
    out[0] = d[p][0] / d[p][2];
    out[1] = d[p][1] / d[p][2];
}

/* Points after `a` up to and including `b` on span k between parameters ua and ub: halved
 * until the curve's midpoint is within the tolerance of the chord (at least twice, so an S
 * within one span is not mistaken for a line). */
static tsr_status
spline_piece(rd *r, int p, size_t k, double ua, const double a[2], double ub, const double b[2],
             int depth)
{
    double um = (ua + ub) / 2, m[2];
    spline_at(r, p, k, um, m);
    double dx = b[0] - a[0], dy = b[1] - a[1], len = hypot(dx, dy);
    double dev = len > 0 ? fabs((m[0] - a[0]) * dy - (m[1] - a[1]) * dx) / len
                         : hypot(m[0] - a[0], m[1] - a[1]);
    if (depth < 2 || (dev > r->tol && depth < 24)) {
        tsr_status st = spline_piece(r, p, k, ua, a, um, m, depth + 1);
        return st != TSR_OK ? st : spline_piece(r, p, k, um, m, ub, b, depth + 1);
    }
    if (r->np >= (size_t)MAX_ARC_SEGMENTS)
        return fail_at(r, rline(r), "%s: a spline needs more than %lld points to stay within "
                       "arc_tol, expected fewer (raise arc_tol)", r->name,
                       (long long)MAX_ARC_SEGMENTS);
    return add_p(r, b[0], b[1]);
}

/* The spline of degree p over r->kn and r->cp as points appended to r->p (its first point
 * included), after checking what the file said of it. `line`: where it was defined. */
static tsr_status
spline_pts(rd *r, int64_t p, uint64_t line)
{
    size_t n = r->ncp;
    if (p < 1 || p > MAX_DEGREE)
        return fail_at(r, line, "%s: spline of degree %lld, expected 1..%d", r->name,
                       (long long)p, MAX_DEGREE);
    if (n < (size_t)p + 1 || r->nkn != n + (size_t)p + 1)
        return fail_at(r, line, "%s: spline of degree %lld with %zu control points and %zu "
                       "knots, expected at least %lld control points and control points + "
                       "degree + 1 knots", r->name, (long long)p, n, r->nkn, (long long)p + 1);
    for (size_t i = 0; i < n; i++)
        if (!(r->cp[i][2] > 0))
            return fail_at(r, line, "%s: spline weight %g, expected > 0", r->name, r->cp[i][2]);
    for (size_t i = 1; i < r->nkn; i++)
        if (!(r->kn[i] >= r->kn[i - 1]))
            return fail_at(r, line, "%s: spline knots %g then %g, expected a non-decreasing "
                           "sequence", r->name, r->kn[i - 1], r->kn[i]);
    /* the curve is defined on [kn[p], kn[n]] */
    if (!(r->kn[p] < r->kn[n]))
        return fail_at(r, line, "%s: spline knots leave no parameter range (knot %lld = knot "
                       "%zu), expected a non-empty one", r->name, (long long)p, n);
    double a[2];
    spline_at(r, (int)p, (size_t)p, r->kn[p], a);
    tsr_status st = add_p(r, a[0], a[1]);
    for (size_t k = (size_t)p; st == TSR_OK && k < n; k++) {
        if (!(r->kn[k] < r->kn[k + 1]))
            continue;
        double b[2];
        spline_at(r, (int)p, k, r->kn[k + 1], b);
        st = spline_piece(r, (int)p, k, r->kn[k], a, r->kn[k + 1], b, 0);
        a[0] = b[0], a[1] = b[1];
    }
    return st;
}

/* SPLINE (WCS, projected on the drawing plane): an area when closed (flag 1, or its ends
 * meet); open, no area; fit points without control points are refused. */
static tsr_status
spline(rd *r, uint32_t cell, uint32_t lay)
{
    int64_t flags, p, nk, nc;
    tsr_status st;
    if ((st = inum(r, 70, 0, 0, 65535, &flags)) != TSR_OK ||
        (st = inum(r, 71, 3, 0, 1000, &p)) != TSR_OK ||
        (st = inum(r, 72, 0, 0, INT32_MAX, &nk)) != TSR_OK ||
        (st = inum(r, 73, 0, 0, INT32_MAX, &nc)) != TSR_OK)
        return st;
    r->nkn = r->ncp = 0;
    for (size_t i = 1; i < r->ng; i++) {
        const grp *g = &r->g[i];
        double v, y;
        if (g->code == 40) {
            if ((st = num_of(r, g, &v)) != TSR_OK || (st = add_knot(r, v)) != TSR_OK)
                return st;
        } else if (g->code == 10) {
            if (i + 1 >= r->ng || r->g[i + 1].code != 20)
                return fail_at(r, g->line, "SPLINE: control point without its group 20 (y), "
                               "expected 20 after 10");
            if ((st = num_of(r, g, &v)) != TSR_OK || (st = num_of(r, &r->g[i + 1], &y)) != TSR_OK ||
                (st = add_cp(r, v, y, 1)) != TSR_OK)
                return st;
            i++;
        }
    }
    /* weights (41), one per control point in order, wherever they stand (ezdxf writes them
     * all before the points) */
    size_t nw = 0;
    for (size_t i = 1; i < r->ng; i++) {
        double v;
        if (r->g[i].code != 41)
            continue;
        if ((st = num_of(r, &r->g[i], &v)) != TSR_OK)
            return st;
        if (nw < r->ncp)
            r->cp[nw][0] *= v, r->cp[nw][1] *= v, r->cp[nw][2] *= v;
        nw++;
    }
    if (r->ncp == 0) {
        if (find(r, 11))
            return fail_at(r, rline(r), "SPLINE: fit points without control points are not "
                           "read, expected control points (groups 10/20)");
        return fail_at(r, rline(r), "SPLINE: no control points, expected groups 10/20");
    }
    if ((uint64_t)nk != r->nkn || (uint64_t)nc != r->ncp)
        return fail_at(r, rline(r), "SPLINE: groups 72/73 say %lld knots and %lld control "
                       "points, expected the %zu and %zu the entity has", (long long)nk,
                       (long long)nc, r->nkn, r->ncp);
    if (nw != 0 && nw != r->ncp)
        return fail_at(r, rline(r), "SPLINE: %zu weights for %zu control points, expected one "
                       "for each", nw, r->ncp);
    r->np = 0;
    if ((st = spline_pts(r, p, rline(r))) != TSR_OK)
        return st;
    double gap = hypot(r->p[r->np - 1][0] - r->p[0][0], r->p[r->np - 1][1] - r->p[0][1]);
    if (!(flags & 1) && gap > 1e-6) {
        r->l->cells[cell].nskipped++; /* an open curve */
        return TSR_OK;
    }
    return emit_poly(r, cell, lay, false);
}

/* HATCH: its boundary paths in order (the groups after 91 are positional). */
typedef struct cursor {
    rd *r;
    size_t k;
} cursor;

static tsr_status
want(cursor *c, int code, const char *what, const grp **out)
{
    *out = NULL;
    rd *r = c->r;
    if (c->k >= r->ng)
        return fail_at(r, r->g[r->ng - 1].line, "HATCH: the entity ends, expected group %d "
                       "(%s)", code, what);
    const grp *g = &r->g[c->k];
    if (g->code != code)
        return fail_at(r, g->line, "HATCH: group %d, expected group %d (%s)", g->code, code,
                       what);
    c->k++;
    *out = g;
    return TSR_OK;
}

static tsr_status
want_num(cursor *c, int code, const char *what, double *v)
{
    const grp *g = NULL;
    tsr_status st = want(c, code, what, &g);
    return st != TSR_OK ? st : num_of(c->r, g, v);
}

static tsr_status
want_int(cursor *c, int code, const char *what, int64_t lo, int64_t hi, int64_t *v)
{
    const grp *g = NULL;
    tsr_status st = want(c, code, what, &g);
    return st != TSR_OK ? st : int_of(c->r, g, lo, hi, v);
}

/* A count of items of at least `per` groups each: no more than the entity has left. */
static tsr_status
want_count(cursor *c, int code, const char *what, size_t per, int64_t *v)
{
    const grp *g = NULL;
    tsr_status st = want(c, code, what, &g);
    if (st != TSR_OK || (st = int_of(c->r, g, 0, INT32_MAX, v)) != TSR_OK)
        return st;
    if ((uint64_t)*v > (c->r->ng - c->k) / per)
        return fail_at(c->r, g->line, "HATCH: group %d says %lld %s, more than the %zu the "
                       "entity's remaining groups can hold, expected the actual count", code,
                       (long long)*v, what, (c->r->ng - c->k) / per);
    return TSR_OK;
}

/* An arc or elliptic arc edge: start and end angles (degrees) are stored negated for
 * clockwise edges (73 = 0), so the edge runs from -start clockwise to -end. */
static tsr_status
arc_edge(cursor *c, bool ell)
{
    double ctr[2], m[2] = {0, 0}, rad = 0, q = 1, s, e;
    int64_t ccw;
    tsr_status st;
    if ((st = want_num(c, 10, "centre x", &ctr[0])) != TSR_OK ||
        (st = want_num(c, 20, "centre y", &ctr[1])) != TSR_OK)
        return st;
    if (ell) {
        if ((st = want_num(c, 11, "major axis x", &m[0])) != TSR_OK ||
            (st = want_num(c, 21, "major axis y", &m[1])) != TSR_OK ||
            (st = want_num(c, 40, "axis ratio", &q)) != TSR_OK)
            return st;
        if (!(q > 0 && q <= 1) || (m[0] == 0 && m[1] == 0))
            return fail_at(c->r, c->r->g[c->k - 1].line, "HATCH: ellipse edge of axis ratio "
                           "%g and major axis (%g, %g), expected a ratio in (0, 1] and a "
                           "non-zero axis", q, m[0], m[1]);
    } else if ((st = want_num(c, 40, "radius", &rad)) != TSR_OK)
        return st;
    else if (!(rad > 0))
        return fail_at(c->r, c->r->g[c->k - 1].line, "HATCH: arc edge of radius %g, expected "
                       "> 0", rad);
    if ((st = want_num(c, 50, "start angle", &s)) != TSR_OK ||
        (st = want_num(c, 51, "end angle", &e)) != TSR_OK ||
        (st = want_int(c, 73, "counterclockwise flag", 0, 1, &ccw)) != TSR_OK)
        return st;
    double span = fmod(e - s, 360);
    if (span < 0)
        span += 360;
    if (span == 0 && e != s)
        span = 360;
    double a0 = (ccw ? s : -s) * M_PI / 180, sweep = (ccw ? span : -span) * M_PI / 180;
    if (!ell)
        m[0] = rad, m[1] = 0;
    return ellipse_pts(c->r, ctr, m, q, a0, sweep, 1, true);
}

/* A spline edge: degree, rational, periodic, knot and control point counts, knots, control
 * points (with weights when rational), then fit data: 97 count (written from R2010 on, and
 * then also when 0), fit points, start and end tangents, none of which shape the curve. */
static tsr_status
spline_edge(cursor *c, bool last)
{
    rd *r = c->r;
    uint64_t line = r->g[c->k - 1].line;
    int64_t p, rational, periodic, nk, nc;
    tsr_status st;
    if ((st = want_int(c, 94, "degree", 1, MAX_DEGREE, &p)) != TSR_OK ||
        (st = want_int(c, 73, "rational", 0, 1, &rational)) != TSR_OK ||
        (st = want_int(c, 74, "periodic", 0, 1, &periodic)) != TSR_OK ||
        (st = want_count(c, 95, "knots", 1, &nk)) != TSR_OK ||
        (st = want_count(c, 96, "control points", 2, &nc)) != TSR_OK)
        return st;
    r->nkn = r->ncp = 0;
    for (int64_t i = 0; i < nk; i++) {
        double v;
        if ((st = want_num(c, 40, "knot", &v)) != TSR_OK || (st = add_knot(r, v)) != TSR_OK)
            return st;
    }
    for (int64_t i = 0; i < nc; i++) {
        double x, y, w = 1;
        if ((st = want_num(c, 10, "control point x", &x)) != TSR_OK ||
            (st = want_num(c, 20, "control point y", &y)) != TSR_OK ||
            (rational && (st = want_num(c, 42, "weight", &w)) != TSR_OK) ||
            (st = add_cp(r, x, y, w)) != TSR_OK)
            return st;
    }
    /* 97 here is the fit point count unless this is the path's last edge and the 97 is the
     * path's own count of source objects: that one is followed by 330s or the next path */
    if (c->k < r->ng && r->g[c->k].code == 97) {
        int nxt = c->k + 1 < r->ng ? r->g[c->k + 1].code : -1;
        if (!last || nxt == 11 || nxt == 97 || nxt == 12 || nxt == 13) {
            int64_t nf;
            if ((st = want_count(c, 97, "fit points", 2, &nf)) != TSR_OK)
                return st;
            for (int64_t i = 0; i < nf; i++) {
                double v;
                if ((st = want_num(c, 11, "fit point x", &v)) != TSR_OK ||
                    (st = want_num(c, 21, "fit point y", &v)) != TSR_OK)
                    return st;
            }
        }
    }
    for (int code = 12; code <= 13; code++)
        if (c->k + 1 < r->ng && r->g[c->k].code == code && r->g[c->k + 1].code == code + 10)
            c->k += 2;
    return spline_pts(r, p, line);
}

static tsr_status
hatch_path(cursor *c)
{
    rd *r = c->r;
    int64_t flags, n;
    tsr_status st = want_int(c, 92, "boundary path type", 0, INT32_MAX, &flags);
    if (st != TSR_OK)
        return st;
    if (flags & 2) { /* a polyline */
        int64_t bulges, closed;
        if ((st = want_int(c, 72, "has bulges", 0, 1, &bulges)) != TSR_OK ||
            (st = want_int(c, 73, "closed", 0, 1, &closed)) != TSR_OK ||
            (st = want_count(c, 93, "vertices", 2, &n)) != TSR_OK)
            return st;
        r->nvx = 0;
        for (int64_t i = 0; i < n; i++) {
            double x, y, b = 0;
            if ((st = want_num(c, 10, "vertex x", &x)) != TSR_OK ||
                (st = want_num(c, 20, "vertex y", &y)) != TSR_OK)
                return st;
            /* a 42 after a vertex is its bulge whatever 72 (has bulges) said */
            if (c->k < r->ng && r->g[c->k].code == 42 &&
                (st = want_num(c, 42, "bulge", &b)) != TSR_OK)
                return st;
            if ((st = add_vtx(r, x, y)) != TSR_OK)
                return st;
            r->vx[r->nvx - 1].bulge = b;
        }
        /* the boundary is closed whatever 73 says: it bounds the hatch */
        if ((st = centre_line(r, true)) != TSR_OK)
            return st;
    } else {
        if ((st = want_count(c, 93, "edges", 2, &n)) != TSR_OK)
            return st;
        for (int64_t i = 0; i < n; i++) {
            int64_t type;
            if ((st = want_int(c, 72, "edge type", 1, 4, &type)) != TSR_OK)
                return st;
            if (type == 1) {
                double p[4];
                if ((st = want_num(c, 10, "start x", &p[0])) != TSR_OK ||
                    (st = want_num(c, 20, "start y", &p[1])) != TSR_OK ||
                    (st = want_num(c, 11, "end x", &p[2])) != TSR_OK ||
                    (st = want_num(c, 21, "end y", &p[3])) != TSR_OK ||
                    (st = add_p(r, p[0], p[1])) != TSR_OK || (st = add_p(r, p[2], p[3])) != TSR_OK)
                    return st;
            } else if (type == 4) {
                if ((st = spline_edge(c, i + 1 == n)) != TSR_OK)
                    return st;
            } else if ((st = arc_edge(c, type == 3)) != TSR_OK)
                return st;
        }
    }
    /* source boundary objects: 97 count, then that many 330 handles */
    int64_t nsrc = 0;
    if (c->k < r->ng && r->g[c->k].code == 97 &&
        (st = want_count(c, 97, "source objects", 1, &nsrc)) != TSR_OK)
        return st;
    while (c->k < r->ng && r->g[c->k].code == 330)
        c->k++;
    return TSR_OK;
}

static tsr_status
hatch(rd *r, uint32_t cell, uint32_t lay)
{
    bool flip;
    tsr_status st = ocs(r, &flip);
    if (st != TSR_OK)
        return st;
    cursor c = {r, 1};
    while (c.k < r->ng && r->g[c.k].code != 91)
        c.k++;
    if (c.k == r->ng)
        return fail_at(r, rline(r), "HATCH: no group 91 (boundary path count), expected one");
    int64_t n;
    if ((st = want_count(&c, 91, "boundary paths", 3, &n)) != TSR_OK)
        return st;
    /* each path into r->p, then each as an integer ring into r->ip, joined by bridges from
     * the first ring's first point: the bridges run there and back, so they cancel in the
     * even-odd count and the polygon fills as the paths do together */
    r->nip = 0;
    size_t first = 0;
    bool any = false;
    for (int64_t i = 0; i < n; i++) {
        r->np = 0;
        if ((st = hatch_path(&c)) != TSR_OK)
            return st;
        size_t at = r->nip, k;
        if ((st = ring(r, 0, flip, &k)) != TSR_OK)
            return st;
        if (k < 3) { /* no area */
            r->nip = at;
            continue;
        }
        if (!any) {
            first = at;
            any = true;
            continue;
        }
        /* ..., ring0[0] | ringk[0 .. k), ringk[0], ring0[0] (the last: added by the next ring
         * or by the polygon's implicit closing edge) */
        if ((st = grow(r, (void **)&r->ip, r->nip, &r->capip, 3, sizeof *r->ip)) != TSR_OK)
            return st;
        memmove(r->ip + at + 1, r->ip + at, k * sizeof *r->ip);
        r->ip[at] = r->ip[first];
        r->nip++;
        r->ip[r->nip++] = r->ip[at + 1];
    }
    if (!any) {
        r->l->cells[cell].nskipped++;
        return TSR_OK;
    }
    return emit_ip(r, cell, lay);
}

static tsr_status
insert(rd *r, uint32_t cell)
{
    bool flip;
    double p[2], sx, sy, rot, cs, rs;
    int64_t nc, nr;
    tsr_status st;
    const grp *nm = find(r, 2);
    if (!nm)
        return fail_at(r, rline(r), "INSERT: no group 2 (block name), expected one");
    if ((st = ocs(r, &flip)) != TSR_OK || (st = num(r, 10, 0, &p[0])) != TSR_OK ||
        (st = num(r, 20, 0, &p[1])) != TSR_OK || (st = num(r, 41, 1, &sx)) != TSR_OK ||
        (st = num(r, 42, 1, &sy)) != TSR_OK || (st = num(r, 50, 0, &rot)) != TSR_OK ||
        (st = inum(r, 70, 1, 0, MAX_ARRAY, &nc)) != TSR_OK ||
        (st = inum(r, 71, 1, 0, MAX_ARRAY, &nr)) != TSR_OK ||
        (st = num(r, 44, 0, &cs)) != TSR_OK || (st = num(r, 45, 0, &rs)) != TSR_OK)
        return st;
    const char *s = nm->v;
    size_t n = nm->n;
    trim(&s, &n);
    if (sx == 0 || sy == 0)
        return fail_at(r, rline(r), "INSERT: block '%.*s' scaled by x %g, y %g, expected "
                       "non-zero scales", (int)(n < 200 ? n : 200), s, sx, sy);
    tsr_lay_ref ref = {0};
    if ((st = cell_ref(r, s, n, rline(r), &ref.cell)) != TSR_OK)
        return st;
    if (flip) /* M (T R S) = T' R(-rot) diag(-sx, sy) with M = diag(-1, 1) */
        p[0] = -p[0], sx = -sx, rot = -rot;
    double t = rot * M_PI / 180, ct = cos(t), sn = sin(t);
    if ((st = to_dbu(r, p[0], r->base[0], &ref.xf.dx)) != TSR_OK ||
        (st = to_dbu(r, p[1], r->base[1], &ref.xf.dy)) != TSR_OK)
        return st;
    if (nc == 0)
        nc = 1;
    if (nr == 0)
        nr = 1;
    if (nc * nr > 1) {
        /* columns along the OCS x axis turned by the rotation, rows along its y axis; with
         * the OCS mirrored, x is (-1, 0) turned by the (negated) rotation */
        double sg = flip ? -1 : 1;
        double u[2] = {sg * cs * ct, sg * cs * sn}, v[2] = {-rs * sn, rs * ct};
        tsr_lay_rep rep = {.n = (uint64_t)nc, .m = (uint64_t)nr};
        if ((st = to_dbu(r, u[0], 0, &rep.u[0])) != TSR_OK ||
            (st = to_dbu(r, u[1], 0, &rep.u[1])) != TSR_OK ||
            (st = to_dbu(r, v[0], 0, &rep.v[0])) != TSR_OK ||
            (st = to_dbu(r, v[1], 0, &rep.v[1])) != TSR_OK ||
            (st = tsr_lay_add_rep(r->l, &rep, &ref.rep, r->err)) != TSR_OK)
            return st;
    }
    if (fabs(fabs(sx) - fabs(sy)) > 1e-12 * fabs(sx)) {
        /* no magnification and mirror make this: its block is flattened into the cell at
         * the end, when every block is read */
        if ((st = grow(r, (void **)&r->pd, r->npd, &r->cappd, 1, sizeof *r->pd)) != TSR_OK)
            return st;
        pend *q = &r->pd[r->npd];
        *q = (pend){.into = cell, .block = ref.cell, .rep = ref.rep, .line = rline(r),
                    .next = r->ci[cell].pend,
                    .m = {ct * sx, -sn * sy, sn * sx, ct * sy, (double)ref.xf.dx,
                          (double)ref.xf.dy}};
        r->ci[cell].pend = (int64_t)r->npd++;
        return TSR_OK;
    }
    ref.xf.mag = fabs(sx);
    ref.xf.mirror = (sx < 0) != (sy < 0);
    double a = fmod(rot + (sx < 0 ? 180 : 0), 360);
    ref.xf.angle = a < 0 ? a + 360 : a;
    return tsr_lay_add_ref(r->l, cell, &ref, r->err);
}

/* ---- non-uniform INSERTs ---------------------------------------------------------------- */

static tsr_status finish(rd *r, uint32_t cell, int depth);

static void
apply(const double m[6], double x, double y, double out[2])
{
    out[0] = m[0] * x + m[1] * y + m[4];
    out[1] = m[2] * x + m[3] * y + m[5];
}

/* m after n */
static void
compose(const double m[6], const double n[6], double out[6])
{
    double o[6] = {m[0] * n[0] + m[1] * n[2], m[0] * n[1] + m[1] * n[3],
                   m[2] * n[0] + m[3] * n[2], m[2] * n[1] + m[3] * n[3],
                   m[0] * n[4] + m[1] * n[5] + m[4], m[2] * n[4] + m[3] * n[5] + m[5]};
    memcpy(out, o, sizeof o);
}

/* r->p (database units of the target cell) as a polygon of p->into on `lay` */
static tsr_status
flat_emit(rd *r, const pend *p, uint32_t lay)
{
    r->nip = 0;
    tsr_status st = grow(r, (void **)&r->ip, 0, &r->capip, r->np, sizeof *r->ip);
    for (size_t i = 0; st == TSR_OK && i < r->np; i++) {
        tsr_lay_pt q;
        for (int k = 0; k < 2; k++)
            if (!(fabs(r->p[i][k]) <= (double)TSR_LAYOUT_COORD_MAX))
                return fail_at(r, p->line, "INSERT: a coordinate of its block, scaled, is "
                               "beyond the model's range, expected |coordinate| <= %g drawing "
                               "units", (double)TSR_LAYOUT_COORD_MAX / 1e6);
        q.x = llround(r->p[i][0]), q.y = llround(r->p[i][1]);
        if (r->nip > 0 && r->ip[r->nip - 1].x == q.x && r->ip[r->nip - 1].y == q.y)
            continue;
        r->ip[r->nip++] = q;
    }
    while (r->nip > 1 && r->ip[r->nip - 1].x == r->ip[0].x && r->ip[r->nip - 1].y == r->ip[0].y)
        r->nip--;
    if (st != TSR_OK || r->nip < 3)
        return st;
    tsr_lay_shape s = {.layer = lay, .kind = TSR_LAY_POLYGON, .npts = (uint32_t)r->nip,
                       .rep = p->rep};
    if ((st = tsr_lay_add_points(r->l, p->into, r->ip, r->nip, &s.first, r->err)) != TSR_OK)
        return st;
    return tsr_lay_add_shape(r->l, p->into, &s, r->err);
}

/* The shapes of `cell` and of everything it places, through m, into p->into. */
static tsr_status
flat_walk(rd *r, const pend *p, uint32_t cell, const double m[6], int depth)
{
    if (depth > TSR_LAYOUT_MAX_DEPTH)
        return fail_at(r, p->line, "INSERT: blocks nested deeper than %d, expected at most %d",
                       TSR_LAYOUT_MAX_DEPTH, TSR_LAYOUT_MAX_DEPTH);
    /* each shape and each placement walked counts: arrays of arrays multiply */
    if ((r->nflat += 1 + r->l->cells[cell].nshapes) > MAX_FLAT)
        return fail_at(r, p->line, "INSERT: flattening its non-uniformly scaled block walks "
                       "more than %llu shapes and placements, expected fewer (scale the block "
                       "uniformly)", (unsigned long long)MAX_FLAT);
    tsr_status st = finish(r, cell, depth + 1);
    if (st != TSR_OK)
        return st;
    const tsr_lay_cell *c = &r->l->cells[cell]; /* not p->into: finish() saw to that */
    for (size_t i = 0; i < c->nshapes; i++) {
        const tsr_lay_shape *s = &c->shapes[i];
        const tsr_lay_pt *q = &c->pts[s->first];
        r->np = 0;
        if (s->kind == TSR_LAY_CIRCLE) { /* an ellipse now */
            double ctr[2], ax[2] = {m[0] * (double)s->r, m[2] * (double)s->r};
            double ay[2] = {m[1] * (double)s->r, m[3] * (double)s->r};
            apply(m, (double)q->x, (double)q->y, ctr);
            double big = fmax(hypot(ax[0], ax[1]), hypot(ay[0], ay[1])) / 1e6;
            int64_t k = 8;
            if ((st = segments(r, big, 2 * M_PI, 8, &k)) != TSR_OK)
                return st;
            for (int64_t j = 0; st == TSR_OK && j < k; j++) {
                double t = 2 * M_PI * (double)j / (double)k, ct = cos(t), sn = sin(t);
                st = add_p(r, ctr[0] + ct * ax[0] + sn * ay[0], ctr[1] + ct * ax[1] + sn * ay[1]);
            }
        } else
            for (uint32_t j = 0; st == TSR_OK && j < s->npts; j++) {
                double v[2];
                apply(m, (double)q[j].x, (double)q[j].y, v);
                st = add_p(r, v[0], v[1]);
            }
        if (st != TSR_OK || (st = flat_emit(r, p, s->layer)) != TSR_OK)
            return st;
        c = &r->l->cells[cell];
    }
    for (size_t i = 0; i < c->nrefs; i++) {
        tsr_lay_ref f = c->refs[i];
        double t = f.xf.angle * M_PI / 180, k = f.xf.mag, g = f.xf.mirror ? -1 : 1;
        double x[6] = {k * cos(t), -k * g * sin(t), k * sin(t), k * g * cos(t),
                       (double)f.xf.dx, (double)f.xf.dy};
        uint64_t n = 1, mm = 1;
        int64_t u[2] = {0, 0}, v[2] = {0, 0};
        if (f.rep) {
            const tsr_lay_rep *rp = &r->l->reps[f.rep - 1];
            n = rp->n, mm = rp->m;
            memcpy(u, rp->u, sizeof u);
            memcpy(v, rp->v, sizeof v);
        }
        for (uint64_t jj = 0; jj < mm; jj++)
            for (uint64_t ii = 0; ii < n; ii++) {
                double y[6], z[6];
                memcpy(y, x, sizeof y);
                y[4] += (double)ii * (double)u[0] + (double)jj * (double)v[0];
                y[5] += (double)ii * (double)u[1] + (double)jj * (double)v[1];
                compose(m, y, z);
                if ((st = flat_walk(r, p, f.cell, z, depth + 1)) != TSR_OK)
                    return st;
            }
        c = &r->l->cells[cell];
    }
    return TSR_OK;
}

/* Flatten the non-uniform INSERTs of `cell` into it, after those of every cell they reach. */
static tsr_status
finish(rd *r, uint32_t cell, int depth)
{
    cellinfo *ci = &r->ci[cell];
    if (ci->state == 2)
        return TSR_OK;
    if (ci->state == 1)
        return fail_at(r, ci->pend >= 0 ? r->pd[ci->pend].line : ci->line,
                       "INSERT: block '%s' places itself (a reference cycle through a "
                       "non-uniformly scaled INSERT), expected no cycle", r->l->cells[cell].name);
    if (depth > TSR_LAYOUT_MAX_DEPTH)
        return fail_at(r, ci->line, "INSERT: blocks nested deeper than %d, expected at most %d",
                       TSR_LAYOUT_MAX_DEPTH, TSR_LAYOUT_MAX_DEPTH);
    ci->state = 1;
    for (int64_t i = ci->pend; i >= 0; i = r->pd[i].next) {
        pend p = r->pd[i];
        snprintf(r->name, sizeof r->name, "INSERT"); /* for messages of segments() */
        r->g[0].line = p.line;
        tsr_status st = flat_walk(r, &p, p.block, p.m, depth);
        if (st != TSR_OK)
            return st;
    }
    r->ci[cell].state = 2;
    return TSR_OK;
}

/* One entity record (not POLYLINE, VERTEX, SEQEND) of `cell`, on layer `lay`. */
static tsr_status
entity(rd *r, uint32_t cell, uint32_t lay)
{
    tsr_lay_cell *c = &r->l->cells[cell];
    if (named(r, "TEXT") || named(r, "MTEXT") || named(r, "ATTDEF") || named(r, "ATTRIB")) {
        c->ntexts++;
        return TSR_OK;
    }
    if (named(r, "INSERT"))
        return insert(r, cell);
    bool area = named(r, "LWPOLYLINE") || named(r, "CIRCLE") || named(r, "ELLIPSE") ||
                named(r, "SOLID") || named(r, "TRACE") || named(r, "3DFACE") ||
                named(r, "HATCH") || named(r, "SPLINE");
    if (!area) { /* LINE, ARC, POINT, DIMENSION, ...: no area */
        c->nskipped++;
        return TSR_OK;
    }
    if (named(r, "LWPOLYLINE"))
        return lwpolyline(r, cell, lay);
    if (named(r, "CIRCLE"))
        return circle(r, cell, lay);
    if (named(r, "ELLIPSE"))
        return ellipse(r, cell, lay);
    if (named(r, "HATCH"))
        return hatch(r, cell, lay);
    if (named(r, "SPLINE"))
        return spline(r, cell, lay);
    return quad(r, cell, lay, named(r, "3DFACE"));
}

/* POLYLINE (its record read), then its VERTEX records up to SEQEND. */
static tsr_status
polyline(rd *r, int64_t cell)
{
    uint64_t pline = rline(r);
    bool flip = false;
    int64_t flags;
    double w0, w1;
    uint32_t lay = 0;
    tsr_status st;
    if ((st = inum(r, 70, 0, 0, 65535, &flags)) != TSR_OK ||
        (st = num(r, 40, 0, &w0)) != TSR_OK || (st = num(r, 41, 0, &w1)) != TSR_OK ||
        (st = width(r, w0)) != TSR_OK || (st = width(r, w1)) != TSR_OK)
        return st;
    bool d3 = flags & 8, mesh = flags & (16 | 64);
    if (!d3 && !mesh && (st = ocs(r, &flip)) != TSR_OK)
        return st;
    if (cell >= 0 && !mesh && (st = ent_layer(r, &lay)) != TSR_OK)
        return st;
    bool has_w = find(r, 40) || find(r, 41);
    r->nvx = 0;
    for (;;) {
        if ((st = record(r)) != TSR_OK)
            return st;
        if (named(r, "SEQEND"))
            break;
        if (!named(r, "VERTEX"))
            return fail_at(r, rline(r), "POLYLINE (line %llu): %s before its SEQEND, expected "
                           "0/VERTEX or 0/SEQEND", (unsigned long long)pline, r->name);
        double x, y, b, v0, v1;
        int64_t vf;
        if ((st = req_num(r, 10, "x", &x)) != TSR_OK || (st = req_num(r, 20, "y", &y)) != TSR_OK ||
            (st = num(r, 42, 0, &b)) != TSR_OK || (st = num(r, 40, w0, &v0)) != TSR_OK ||
            (st = num(r, 41, w1, &v1)) != TSR_OK || (st = width(r, v0)) != TSR_OK ||
            (st = width(r, v1)) != TSR_OK || (st = inum(r, 70, 0, 0, 65535, &vf)) != TSR_OK)
            return st;
        if (vf & 16) /* a spline frame control point, not on the curve */
            continue;
        if ((st = add_vtx(r, x, y)) != TSR_OK)
            return st;
        vtx *v = &r->vx[r->nvx - 1];
        v->bulge = d3 ? 0 : b;
        v->w0 = v0, v->w1 = v1, v->has_w = has_w || find(r, 40) || find(r, 41);
    }
    if (cell < 0)
        return TSR_OK;
    if (mesh) {
        r->l->cells[cell].nskipped++;
        return TSR_OK;
    }
    /* messages name the POLYLINE */
    snprintf(r->name, sizeof r->name, "POLYLINE");
    r->g[0].line = pline;
    return emit_polyline(r, (uint32_t)cell, lay, flip, flags & 1, 0);
}

/* The entities of a block (up to ENDBLK) or of the ENTITIES section (up to ENDSEC) into
 * `cell` (-1: read and dropped, paper space). */
static tsr_status
entities(rd *r, int64_t cell, const char *end, const char *where)
{
    uint64_t start = r->have_la ? r->la.line : r->line;
    for (;;) {
        tsr_status st = record(r);
        if (st != TSR_OK)
            return st;
        if (named(r, end))
            return TSR_OK;
        if (named(r, "ENDSEC") || named(r, "ENDBLK") || named(r, "SECTION") ||
            named(r, "EOF") || named(r, "BLOCK"))
            return fail_at(r, rline(r), "%s in %s (from line %llu), expected 0/%s first",
                           r->name, where, (unsigned long long)start, end);
        if (named(r, "POLYLINE")) {
            bool paper = cell < 0;
            const grp *ps = find(r, 67);
            if (ps && is(ps, "1"))
                paper = true;
            if ((st = polyline(r, paper ? -1 : cell)) != TSR_OK)
                return st;
            continue;
        }
        if (named(r, "VERTEX") || named(r, "SEQEND"))
            return fail_at(r, rline(r), "%s outside a POLYLINE or INSERT, expected it after "
                           "0/POLYLINE", r->name);
        const grp *attribs = named(r, "INSERT") ? find(r, 66) : NULL;
        const grp *ps = find(r, 67);
        uint32_t lay;
        if (cell >= 0 && !(ps && is(ps, "1")) &&
            ((st = ent_layer(r, &lay)) != TSR_OK || (st = entity(r, (uint32_t)cell, lay)) != TSR_OK))
            return st;
        if (attribs && is(attribs, "1")) { /* ATTRIB records follow, up to SEQEND */
            uint64_t iline = rline(r);
            for (;;) {
                if ((st = record(r)) != TSR_OK)
                    return st;
                if (named(r, "SEQEND"))
                    break;
                if (!named(r, "ATTRIB"))
                    return fail_at(r, rline(r), "INSERT (line %llu): %s before its SEQEND, "
                                   "expected 0/ATTRIB or 0/SEQEND", (unsigned long long)iline,
                                   r->name);
                if (cell >= 0) {
                    uint32_t lay;
                    if ((st = ent_layer(r, &lay)) != TSR_OK)
                        return st;
                    r->l->cells[cell].ntexts++;
                }
            }
        }
    }
}

/* ---- sections --------------------------------------------------------------------------- */

static const double insunits[] = {
    1e-3,                    /* 0 unitless: read as mm */
    0.0254, 0.3048, 1609.344, 1e-3, 1e-2, 1, 1e3, 0.0254e-6, 0.0254e-3, 0.9144, 1e-10, 1e-9,
    1e-6, 0.1, 10, 100, 1e9, 149597870700.0, 9460730472580800.0, 3.0856775814913673e16,
    1200.0 / 3937, 1.0 / 39.37, 3600.0 / 3937, 6336000.0 / 3937};

static tsr_status
header(rd *r)
{
    for (;;) {
        tsr_status st = record(r);
        if (st != TSR_OK)
            return st;
        if (named(r, "ENDSEC"))
            return TSR_OK;
        if (!named(r, "SECTION") && !named(r, "EOF") && !named(r, "ENDBLK"))
            continue;
        return fail_at(r, rline(r), "%s in the HEADER section, expected 0/ENDSEC first",
                       r->name);
    }
}

/* $INSUNITS among the HEADER record's groups (9 $NAME, then the variable's value). */
static void
set_unit(rd *r, double unit_m)
{
    double t = r->o->arc_tol_m > 0 && isfinite(r->o->arc_tol_m) ? r->o->arc_tol_m : 1e-9;
    r->unit_m = unit_m;
    r->tol = t / unit_m;
    if (!(r->tol >= 1e-6)) /* finer than the grid the points are rounded to buys nothing */
        r->tol = 1e-6;
}

static tsr_status
header_vars(rd *r)
{
    for (size_t i = 1; i < r->ng; i++) {
        if (r->g[i].code != 9 || !is(&r->g[i], "$INSUNITS"))
            continue;
        if (i + 1 >= r->ng || r->g[i + 1].code != 70)
            return fail_at(r, r->g[i].line, "HEADER: $INSUNITS without its group 70, expected "
                           "9/$INSUNITS then 70/unit");
        int64_t u;
        tsr_status st = int_of(r, &r->g[i + 1], 0, 24, &u);
        if (st != TSR_OK)
            return st;
        set_unit(r, insunits[u]);
    }
    return TSR_OK;
}

static tsr_status
tables(rd *r)
{
    bool layers = false;
    for (;;) {
        tsr_status st = record(r);
        if (st != TSR_OK)
            return st;
        if (named(r, "ENDSEC"))
            return TSR_OK;
        if (named(r, "SECTION") || named(r, "EOF"))
            return fail_at(r, rline(r), "%s in the TABLES section, expected 0/ENDSEC first",
                           r->name);
        if (named(r, "TABLE")) {
            const grp *g = find(r, 2);
            layers = g && is(g, "LAYER");
        } else if (named(r, "ENDTAB"))
            layers = false;
        else if (layers && named(r, "LAYER")) {
            const grp *g = find(r, 2);
            uint32_t lay;
            if (!g)
                return fail_at(r, rline(r), "LAYER: no group 2 (layer name), expected one");
            if ((st = layer(r, g->v, g->n, &lay)) != TSR_OK)
                return st;
        }
    }
}

static tsr_status
blocks(rd *r)
{
    for (;;) {
        tsr_status st = record(r);
        if (st != TSR_OK)
            return st;
        if (named(r, "ENDSEC"))
            return TSR_OK;
        if (!named(r, "BLOCK"))
            return fail_at(r, rline(r), "%s in the BLOCKS section, expected 0/BLOCK or "
                           "0/ENDSEC", r->name);
        uint64_t line = rline(r);
        const grp *g = find(r, 2);
        if (!g)
            return fail_at(r, line, "BLOCK: no group 2 (block name), expected one");
        const char *s = g->v;
        size_t n = g->n;
        trim(&s, &n);
        double base[2];
        if ((st = num(r, 10, 0, &base[0])) != TSR_OK || (st = num(r, 20, 0, &base[1])) != TSR_OK)
            return st;
        int64_t cell = -1;
        char where[300];
        snprintf(where, sizeof where, "block '%.*s'", (int)(n < 200 ? n : 200), s);
        if (is_model_space(s, n)) {
            uint32_t t;
            if ((st = top_cell(r, &t)) != TSR_OK)
                return st;
            cell = t;
        } else if (!is_paper_space(s, n)) {
            uint32_t c;
            if ((st = cell_ref(r, s, n, line, &c)) != TSR_OK)
                return st;
            if (r->ci[c].defined)
                return fail_at(r, line, "BLOCK: '%.*s' is defined twice%s, expected unique "
                               "block names", (int)(n < 200 ? n : 200), s,
                               (int64_t)c == r->top ? " (the top cell, the model space, has "
                                                      "that name)" : "");
            r->ci[c].defined = true;
            cell = c;
        }
        r->base[0] = base[0], r->base[1] = base[1];
        st = entities(r, cell, "ENDBLK", where);
        r->base[0] = r->base[1] = 0;
        if (st != TSR_OK)
            return st;
    }
}

static tsr_status
skip_section(rd *r, const char *name)
{
    for (;;) {
        tsr_status st = record(r);
        if (st != TSR_OK)
            return st;
        if (named(r, "ENDSEC"))
            return TSR_OK;
        if (named(r, "SECTION") || named(r, "EOF"))
            return fail_at(r, rline(r), "%s in the %s section, expected 0/ENDSEC first",
                           r->name, name);
    }
}

static tsr_status
read_all(rd *r)
{
    static const char binary[] = "AutoCAD Binary DXF";
    if (r->len >= sizeof binary - 1 && memcmp(r->b, binary, sizeof binary - 1) == 0)
        return fail_at(r, 1, "binary DXF is not read, expected ASCII DXF (save the drawing "
                       "as ASCII DXF)");
    for (;;) {
        tsr_status st = record(r);
        if (st != TSR_OK)
            return st;
        if (named(r, "EOF"))
            break;
        if (!named(r, "SECTION"))
            return fail_at(r, rline(r), "%s outside a section, expected 0/SECTION or 0/EOF",
                           r->name);
        const grp *g = find(r, 2);
        if (!g)
            return fail_at(r, rline(r), "SECTION: no group 2 (section name), expected one");
        char sec[32];
        size_t n = g->n < sizeof sec - 1 ? g->n : sizeof sec - 1;
        const char *s = g->v;
        trim(&s, &n);
        memcpy(sec, s, n);
        sec[n] = 0;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)sec[i] < 0x20)
                sec[i] = '?';
        if (strcmp(sec, "HEADER") == 0) {
            /* the header's variables are groups of the SECTION record itself (its first
             * "0" after the section name is ENDSEC) */
            if ((st = header_vars(r)) != TSR_OK || (st = header(r)) != TSR_OK)
                return st;
        } else if (strcmp(sec, "TABLES") == 0)
            st = tables(r);
        else if (strcmp(sec, "BLOCKS") == 0)
            st = blocks(r);
        else if (strcmp(sec, "ENTITIES") == 0) {
            uint32_t t;
            if ((st = top_cell(r, &t)) == TSR_OK)
                st = entities(r, t, "ENDSEC", "the ENTITIES section");
        } else
            st = skip_section(r, sec);
        if (st != TSR_OK)
            return st;
    }
    uint32_t t;
    tsr_status st = top_cell(r, &t);
    if (st != TSR_OK)
        return st;
    for (size_t i = 0; i < r->l->ncells; i++)
        if (!r->ci[i].defined)
            return fail_at(r, r->ci[i].line, "INSERT: block '%s' is not defined, expected a "
                           "BLOCK of that name in the BLOCKS section", r->l->cells[i].name);
    for (size_t i = 0; r->npd > 0 && i < r->l->ncells; i++)
        if ((st = finish(r, (uint32_t)i, 0)) != TSR_OK)
            return st;
    return TSR_OK;
}

tsr_status
tsr_dxf_read(const uint8_t *buf, size_t len, const tsr_layout_opts *o, tsr_layout *l,
             tsr_error *err)
{
    static const tsr_layout_opts none = {0};
    rd r = {.b = buf, .len = len, .line = 1, .path = l->path ? l->path : "DXF", .l = l,
            .o = o ? o : &none, .err = err, .top = -1};
    set_unit(&r, 1e-3);
    tsr_status st = read_all(&r);
    l->dbu_m = r.unit_m / 1e6;
    free(r.g);
    free(r.ci);
    free(r.lh);
    free(r.p);
    free(r.q);
    free(r.ip);
    free(r.vx);
    free(r.pd);
    free(r.kn);
    free(r.cp);
    return st;
}
