/* Generic parameter parsing: one routine per tsr_ptype, driven by the tables of nodes/.
 *
 * docs/architecture.md, house style: "no per-trait hand-written parser". A trait or source kind only declares its
 * keys; types, ranges, required keys and coordinate bounds are enforced here, and the
 * trait's own check() sees a fully typed struct. */
#include "designs/designs_int.h"
#include "nodes/expr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
in_range(const tsr_param *pm, double d)
{
    if (!(pm->flags & TSR_PF_RANGE))
        return true;
    bool lo = (pm->flags & TSR_PF_MIN_OPEN) ? d > pm->min : d >= pm->min;
    bool hi = (pm->flags & TSR_PF_MAX_OPEN) ? d < pm->max : d <= pm->max;
    return lo && hi;
}

/* The message of a range violation, "must be in 1..4096", "must be > 0", ... */
static void
range_text(const tsr_param *pm, char *buf, size_t size)
{
    char a[40], b[40];
    bool lo = isfinite(pm->min), hi = isfinite(pm->max);
    bool lo_open = pm->flags & TSR_PF_MIN_OPEN, hi_open = pm->flags & TSR_PF_MAX_OPEN;
    tsr_fmt_double(a, sizeof a, pm->min);
    tsr_fmt_double(b, sizeof b, pm->max);
    if (lo && hi && !lo_open && !hi_open)
        snprintf(buf, size, "must be in %s..%s", a, b);
    else if (lo && hi)
        snprintf(buf, size, "must be %s %s and %s %s", lo_open ? ">" : ">=", a,
                 hi_open ? "<" : "<=", b);
    else if (lo)
        snprintf(buf, size, "must be %s %s", lo_open ? ">" : ">=", a);
    else if (hi)
        snprintf(buf, size, "must be %s %s", hi_open ? "<" : "<=", b);
    else
        snprintf(buf, size, "must be a number");
}

/* `got 500`, or for a length written with a unit `got 3mm (6000 px)`: ranges are in pixels. */
static tsr_status
range_err(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, double px)
{
    char what[128], pxs[40];
    tsr_dlen d;
    range_text(pm, what, sizeof what);
    if (v->kind == Y_SCALAR && tsr_dlen_parse(v->s, &d) == 1) {
        tsr_fmt_double(pxs, sizeof pxs, px);
        return tsr_derr(c, v, p, "%s px, got %.64s (%s px)", what, v->s, pxs);
    }
    return tsr_derr(c, v, p, "%s, got %s", what, v->s);
}

/* Whether v is written with a unit (docs/units.md): 1 with *d filled; 0 when it is not (the
 * plain-number parsers take it from there); -1 with *st set when the unit is not allowed
 * here (not a length, no pitch) or the number before it is malformed. */
static int
unit_of(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, tsr_dlen *d,
        tsr_status *st)
{
    if (v->kind != Y_SCALAR || !v->plain || tsr_ynull(v))
        return 0;
    int k = tsr_dlen_parse(v->s, d);
    if (k == 0)
        return 0;
    if (!tsr_param_is_length(pm))
        *st = tsr_derr(c, v, p, "'%.64s': not a length, so it takes no unit", v->s);
    else if (k < 0)
        *st = tsr_derr(c, v, p,
                       "expected a decimal number before the unit (at most 19 digits), got "
                       "'%.64s'",
                       v->s);
    else if (!c->has_pitch)
        *st = tsr_derr(c, v, p,
                       "'%.64s' has a unit, but the design states no pixel pitch (add e.g. "
                       "'pixel: 1um' at the top)",
                       v->s);
    else
        return 1;
    return -1;
}

/* Every integer parameter is a placement value: docs/format.md §2 bounds all of them by 2^40.
 * A length may be written with a unit; it must come to a whole number of pixels. */
static tsr_status
get_int(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, int64_t *out)
{
    int64_t x;
    tsr_dlen d;
    tsr_status st = TSR_OK;
    int u = unit_of(c, v, p, pm, &d, &st);
    if (u < 0)
        return st;
    if (u > 0) {
        double approx;
        char a[40];
        if (!tsr_dlen_pixels_int(&d, &c->pitch, &x, &approx)) {
            tsr_fmt_double(a, sizeof a, approx);
            if (!(fabs(approx) <= (double)TSR_COORD_MAX))
                return tsr_derr(c, v, p,
                                "%.64s is %s px at the pixel pitch %.64s: |v| must be <= 2^40 px",
                                v->s, a, c->pitch_text);
            return tsr_derr(c, v, p,
                            "%.64s is %s px at the pixel pitch %.64s: must be a whole number of "
                            "pixels",
                            v->s, a, c->pitch_text);
        }
    } else {
        if ((st = tsr_dget_int(c, v, p, &x)) != TSR_OK)
            return st;
        if (x > TSR_COORD_MAX || x < -TSR_COORD_MAX)
            return tsr_derr(c, v, p, "|%s| must be <= 2^40 (1099511627776)", v->s);
    }
    if (!in_range(pm, (double)x))
        return range_err(c, v, p, pm, (double)x);
    *out = x;
    return TSR_OK;
}

/* A physical length kept in um (TSR_PF_MICRONS: a layout's pitch and window): a plain number
 * is um; one with a unit is its exact decimal value in um, rounded once, whether or not the
 * design states a pitch (these are not pixels, so no pitch is needed). */
static tsr_status
get_microns(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, double *out)
{
    double d;
    tsr_dlen len;
    int k = v->kind == Y_SCALAR && v->plain && !tsr_ynull(v) ? tsr_dlen_parse(v->s, &len) : 0;
    if (k < 0)
        return tsr_derr(c, v, p,
                        "expected a decimal number before the unit (at most 19 digits), got "
                        "'%.64s'",
                        v->s);
    if (k > 0) {
        static const tsr_dlen um = {1, 3, false};
        d = tsr_dlen_pixels_real(&len, &um);
        if (!isfinite(d))
            return tsr_derr(c, v, p, "%.64s is out of the range of a double", v->s);
    } else {
        tsr_status st = tsr_dget_real(c, v, p, &d);
        if (st != TSR_OK)
            return st;
    }
    if (!in_range(pm, d)) {
        char what[128], ums[40];
        range_text(pm, what, sizeof what);
        tsr_fmt_double(ums, sizeof ums, d);
        return tsr_derr(c, v, p, "%s um, got %.64s (%s um)", what, v->s, ums);
    }
    *out = d;
    return TSR_OK;
}

/* A real length with a unit is the quotient rounded once to double. */
static tsr_status
get_f64(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, double *out)
{
    double d;
    tsr_dlen len;
    tsr_status st = TSR_OK;
    if (pm->flags & TSR_PF_MICRONS)
        return get_microns(c, v, p, pm, out);
    int u = unit_of(c, v, p, pm, &len, &st);
    if (u < 0)
        return st;
    if (u > 0) {
        d = tsr_dlen_pixels_real(&len, &c->pitch);
        if (!isfinite(d))
            return tsr_derr(c, v, p, "%.64s at the pixel pitch %.64s is out of the range of a double",
                            v->s, c->pitch_text);
    } else if ((st = tsr_dget_real(c, v, p, &d)) != TSR_OK)
        return st;
    if (!in_range(pm, d))
        return range_err(c, v, p, pm, d);
    *out = d;
    return TSR_OK;
}

/* Parsed as double, range-checked as written, then rounded once to float32. */
static tsr_status
get_f32(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, float *out)
{
    double d = 0;
    tsr_status st = get_f64(c, v, p, pm, &d);
    if (st != TSR_OK)
        return st;
    float f = (float)d;
    if (!isfinite(f))
        return tsr_derr(c, v, p, "%s is out of the range of float32", v->s);
    *out = f;
    return TSR_OK;
}

/* A fixed-length list: [a, b] or [x, y, w, h]. */
#define FIXED_LIST(getter, T) \
    static tsr_status getter##_n(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, \
                                 T *out, size_t n) \
    { \
        T tmp[4]; \
        tsr_status st = tsr_dwant_seq(c, v, p, n); \
        for (size_t i = 0; i < n && st == TSR_OK; i++) { \
            kpath kp = KP_INDEX(p, i); \
            st = getter(c, v->kids[i], &kp, pm, &tmp[i]); \
        } \
        if (st == TSR_OK) \
            memcpy(out, tmp, n * sizeof *out); \
        return st; \
    }
FIXED_LIST(get_int, int64_t)
FIXED_LIST(get_f64, double)
FIXED_LIST(get_f32, float)

/* [[a, b], ...] with at least min_count pairs; a checked against pa, b against pb (range and
 * whether it is a length). */
static tsr_status
get_points(dctx *c, const ynode *v, const kpath *p, const tsr_param *pa, const tsr_param *pb,
           size_t min_count, tsr_points *out)
{
    double(*pts)[2] = NULL;
    tsr_status st = tsr_dwant_seq(c, v, p, (size_t)-1);
    if (st != TSR_OK)
        return st;
    if (v->n < min_count)
        return tsr_derr(c, v, p, "needs at least %zu point%s, got %zu", min_count,
                        min_count == 1 ? "" : "s", v->n);
    if (v->n && !(pts = malloc(v->n * sizeof *pts)))
        return tsr_doom(c);
    for (size_t i = 0; i < v->n; i++) {
        kpath kp = KP_INDEX(p, i);
        if ((st = tsr_dwant_seq(c, v->kids[i], &kp, 2)) != TSR_OK)
            goto fail;
        for (size_t j = 0; j < 2; j++) {
            kpath kj = KP_INDEX(&kp, j);
            if ((st = get_f64(c, v->kids[i]->kids[j], &kj, j ? pb : pa, &pts[i][j])) != TSR_OK)
                goto fail;
        }
    }
    out->p = pts;
    out->n = v->n;
    return TSR_OK;
fail:
    free(pts);
    return st;
}

static const char *const profile_names[] = {"linear", "sphere", "cosine", NULL};
static const char *const profile_map_keys[] = {"gaussian", "points", NULL};

/* `linear | sphere | cosine | {gaussian: s} | {points: [[d, z], ...]}` (docs/format.md §5). */
static tsr_status
get_profile(dctx *c, const ynode *v, const kpath *p, tsr_profile *out)
{
    tsr_profile pr = {0};
    tsr_status st;
    /* s and the distances d are lengths, the heights z are not */
    static const tsr_param any = {"", TSR_P_F64, 0, 0, 0, 0, 0, NULL, NULL};
    static const tsr_param height = {"", TSR_P_F64, 0, TSR_PF_UNITLESS, 0, 0, 0, NULL, NULL};
    static const tsr_param positive = {
        "", TSR_P_F64, 0, TSR_PF_RANGE | TSR_PF_MIN_OPEN, 0, HUGE_VAL, 0, NULL, NULL};
    if (v->kind == Y_SCALAR) {
        if (!tsr_ynull(v) && (strcmp(v->s, "gaussian") == 0 || strcmp(v->s, "points") == 0))
            return tsr_derr(c, v, p, "'%s' needs a value: write {%s: ...}", v->s, v->s);
        int k;
        if ((st = tsr_dget_enum(c, v, p, "profile", profile_names, &k)) != TSR_OK)
            return st;
        out->kind = (tsr_profile_kind)k;
        return TSR_OK;
    }
    if (v->kind != Y_MAP)
        return tsr_derr(c, v, p,
                        "expected linear, sphere, cosine, {gaussian: s} or {points: [...]}");
    if ((st = tsr_dcheck_keys(c, v, p, profile_map_keys, NULL, NULL)) != TSR_OK)
        return st;
    if (ymap_count(v) != 1)
        return tsr_derr(c, v, p, "needs exactly one of 'gaussian' or 'points'");
    kpath kp = KP_KEY(p, ymap_key(v, 0)->s);
    const ynode *val = ymap_val(v, 0);
    if (strcmp(ymap_key(v, 0)->s, "gaussian") == 0) {
        pr.kind = TSR_PROFILE_GAUSSIAN;
        if ((st = get_f64(c, val, &kp, &positive, &pr.s)) != TSR_OK)
            return st;
        *out = pr;
        return TSR_OK;
    }
    pr.kind = TSR_PROFILE_POINTS;
    if ((st = get_points(c, val, &kp, &any, &height, 1, &pr.pts)) != TSR_OK)
        return st;
    for (size_t i = 0; i < pr.pts.n; i++) {
        kpath ki = KP_INDEX(&kp, i), kd = KP_INDEX(&ki, 0);
        const ynode *d = val->kids[i]->kids[0];
        if (i == 0 && pr.pts.p[0][0] < 0) {
            st = tsr_derr(c, d, &kd, "the first distance must be >= 0, got %s", d->s);
            goto fail;
        }
        if (i > 0 && !(pr.pts.p[i][0] > pr.pts.p[i - 1][0])) {
            st = tsr_derr(c, d, &kd, "distances must be strictly increasing (%s after %s)", d->s,
                          val->kids[i - 1]->kids[0]->s);
            goto fail;
        }
    }
    *out = pr;
    return TSR_OK;
fail:
    free(pr.pts.p);
    return st;
}

#define KERNEL_MAX 63

/* Rows are y; every row the same length; both sizes odd and <= 63 (nodes/nodes.h). */
static tsr_status
get_kernel(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, tsr_kernel *out)
{
    float *k = NULL;
    tsr_status st = tsr_dwant_seq(c, v, p, (size_t)-1);
    if (st != TSR_OK)
        return st;
    if (v->n == 0)
        return tsr_derr(c, v, p, "a kernel needs at least one row");
    size_t w = 0;
    for (size_t j = 0; j < v->n; j++) {
        kpath kj = KP_INDEX(p, j);
        if ((st = tsr_dwant_seq(c, v->kids[j], &kj, (size_t)-1)) != TSR_OK)
            return st;
        if (j == 0)
            w = v->kids[0]->n;
        else if (v->kids[j]->n != w)
            return tsr_derr(c, v->kids[j], &kj,
                            "every kernel row must have the same length: row 0 has %zu, row %zu "
                            "has %zu",
                            w, j, v->kids[j]->n);
    }
    if (w % 2 == 0 || w > KERNEL_MAX)
        return tsr_derr(c, v, p, "the kernel width must be odd and <= %d, got %zu", KERNEL_MAX, w);
    if (v->n % 2 == 0 || v->n > KERNEL_MAX)
        return tsr_derr(c, v, p, "the kernel height must be odd and <= %d, got %zu", KERNEL_MAX,
                        v->n);
    if (!(k = malloc(w * v->n * sizeof *k)))
        return tsr_doom(c);
    for (size_t j = 0; j < v->n; j++) {
        kpath kj = KP_INDEX(p, j);
        for (size_t i = 0; i < w; i++) {
            kpath ki = KP_INDEX(&kj, i);
            if ((st = get_f32(c, v->kids[j]->kids[i], &ki, pm, &k[j * w + i])) != TSR_OK)
                goto fail;
        }
    }
    out->w = (int64_t)w;
    out->h = (int64_t)v->n;
    out->k = k;
    return TSR_OK;
fail:
    free(k);
    return st;
}

/* Relative paths start in the design's folder; the result is owned by the caller. */
static tsr_status
get_path(dctx *c, const ynode *v, const kpath *p, char **out)
{
    const char *s;
    tsr_status st = tsr_dget_str(c, v, p, &s);
    if (st != TSR_OK)
        return st;
    char *r;
    if (s[0] == '/' || !c->base_dir || !c->base_dir[0] || strcmp(c->base_dir, ".") == 0) {
        r = strdup(s);
    } else {
        size_t nb = strlen(c->base_dir), ns = strlen(s);
        bool slash = c->base_dir[nb - 1] == '/';
        r = malloc(nb + !slash + ns + 1);
        if (r) {
            memcpy(r, c->base_dir, nb);
            if (!slash)
                r[nb] = '/';
            memcpy(r + nb + !slash, s, ns + 1);
        }
    }
    if (!r)
        return tsr_doom(c);
    free(*out);
    *out = r;
    return TSR_OK;
}

/* A name kept as written (a layout's cell); the result is owned by the caller. */
static tsr_status
get_name(dctx *c, const ynode *v, const kpath *p, char **out)
{
    const char *s;
    tsr_status st = tsr_dget_str(c, v, p, &s);
    if (st != TSR_OK)
        return st;
    char *r = strdup(s);
    if (!r)
        return tsr_doom(c);
    free(*out);
    *out = r;
    return TSR_OK;
}

static void
layers_free(tsr_layer_map *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->e[i].name);
    free(m->e);
    m->e = NULL;
    m->n = 0;
}

/* [[layer, datatype, value], ...] or [[name, value], ...] mixed, at least one entry; layer and
 * datatype integers in 0..2^32-1 (GDSII and OASIS numbers), a name any non-empty string (DXF). */
static tsr_status
get_layers(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, tsr_layer_map *out)
{
    static const tsr_param num = {"", TSR_P_INT, 0, TSR_PF_RANGE, 0, 4294967295.0, 0, NULL, NULL};
    static const tsr_param any = {"", TSR_P_F32, 0, 0, 0, 0, 0, NULL, NULL};
    tsr_layer_map m = {0};
    tsr_status st = tsr_dwant_seq(c, v, p, (size_t)-1);
    if (st != TSR_OK)
        return st;
    if (v->n == 0)
        return tsr_derr(c, v, p, "needs at least one [layer, datatype, value] entry");
    if (!(m.e = calloc(v->n, sizeof *m.e)))
        return tsr_doom(c);
    m.n = v->n;
    for (size_t i = 0; i < v->n; i++) {
        kpath ki = KP_INDEX(p, i);
        const ynode *e = v->kids[i];
        tsr_layer_entry *le = &m.e[i];
        if (e->kind != Y_SEQ || (e->n != 2 && e->n != 3)) {
            st = tsr_derr(c, e, &ki, "expected [layer, datatype, value] or [name, value]");
            goto fail;
        }
        kpath k0 = KP_INDEX(&ki, 0), k1 = KP_INDEX(&ki, 1), kv = KP_INDEX(&ki, e->n - 1);
        if (e->n == 3) {
            if ((st = get_int(c, e->kids[0], &k0, &num, &le->layer)) != TSR_OK ||
                (st = get_int(c, e->kids[1], &k1, &num, &le->datatype)) != TSR_OK)
                goto fail;
        } else if ((st = get_name(c, e->kids[0], &k0, &le->name)) != TSR_OK) {
            goto fail;
        }
        if ((st = get_f32(c, e->kids[e->n - 1], &kv, pm->flags & TSR_PF_RANGE ? pm : &any,
                          &le->value)) != TSR_OK)
            goto fail;
    }
    layers_free(out);
    *out = m;
    return TSR_OK;
fail:
    layers_free(&m);
    return st;
}

/* A per-copy function (docs/variation.md): null (absent), a number or a string (an
 * expression; its errors point at the character, on a one-line scalar), {table: [[...], ...],
 * origin: [i0, j0], outside: v} or {ramp: [a, di, dj]}. */
static tsr_status
get_expr(dctx *c, const ynode *v, const kpath *p, tsr_expr *out);

/* The same into an owned program (NULL for null), replacing what *field held. */
static tsr_status
get_expr_owned(dctx *c, const ynode *v, const kpath *p, tsr_expr **field)
{
    tsr_expr *x = malloc(sizeof *x);
    if (!x)
        return tsr_doom(c);
    tsr_status st = get_expr(c, v, p, x);
    if (st != TSR_OK || x->nops == 0) {
        free(x);
        x = NULL;
    }
    if (st == TSR_OK) {
        free(*field);
        *field = x;
    }
    return st;
}

static tsr_status
get_expr(dctx *c, const ynode *v, const kpath *p, tsr_expr *out)
{
    static const char *const keys[] = {"table", "origin", "outside", "ramp", NULL};
    char msg[160];
    tsr_status st;
    if (tsr_ynull(v)) {
        memset(out, 0, sizeof *out);
        return TSR_OK;
    }
    if (v->kind == Y_SCALAR) {
        size_t at = 0;
        if (tsr_expr_parse(v->s, out, &at, msg, sizeof msg))
            return TSR_OK;
        ynode here = *v;
        if (!memchr(v->s, '\n', at < v->len ? at : v->len))
            here.col += at + (v->plain ? 0 : 1);
        return tsr_derr(c, &here, p, "%s (in the expression \"%.60s%s\")", msg, v->s,
                        v->len > 60 ? "..." : "");
    }
    if ((st = tsr_dwant_map(c, v, p)) != TSR_OK ||
        (st = tsr_dcheck_keys(c, v, p, keys, NULL, NULL)) != TSR_OK)
        return st;
    const ynode *ramp = tsr_ymap_get(v, "ramp"), *table = tsr_ymap_get(v, "table");
    if (!ramp == !table)
        return tsr_derr(c, v, p, "give exactly one of 'table: [[...], ...]' and "
                                 "'ramp: [a, di, dj]' (or a number or an expression string)");
    if (ramp) {
        if (tsr_ymap_get(v, "origin") || tsr_ymap_get(v, "outside"))
            return tsr_derr(c, v, p, "'origin' and 'outside' go with 'table', not 'ramp'");
        static const tsr_param any = {"ramp", TSR_P_F64, 0, 0, 0, 0, 0, NULL, NULL};
        double r[3];
        kpath kp = KP_KEY(p, "ramp");
        if ((st = get_f64_n(c, ramp, &kp, &any, r, 3)) != TSR_OK)
            return st;
        tsr_expr_ramp(out, r[0], r[1], r[2]);
        return TSR_OK;
    }
    static const tsr_param num = {"table", TSR_P_F64, 0, 0, 0, 0, 0, NULL, NULL};
    static const tsr_param idx = {"origin", TSR_P_INT, 0, 0, 0, 0, 0, NULL, NULL};
    kpath kt = KP_KEY(p, "table");
    if ((st = tsr_dwant_seq(c, table, &kt, (size_t)-1)) != TSR_OK)
        return st;
    size_t rows = table->n, cols = 0;
    if (rows == 0 || rows > TSR_EXPR_CONSTS)
        return tsr_derr(c, table, &kt, "needs 1..%d rows, got %zu", TSR_EXPR_CONSTS - 5, rows);
    double *vals = NULL;
    for (size_t r = 0; r < rows; r++) {
        kpath kr = KP_INDEX(&kt, r);
        const ynode *row = table->kids[r];
        if ((st = tsr_dwant_seq(c, row, &kr, r ? cols : (size_t)-1)) != TSR_OK)
            goto done;
        if (r == 0) {
            cols = row->n;
            if (cols == 0 || rows * cols + 5 > TSR_EXPR_CONSTS) {
                st = tsr_derr(c, table, &kt, "a table holds 1..%d values, got %zu x %zu",
                              TSR_EXPR_CONSTS - 5, rows, cols);
                goto done;
            }
            if (!(vals = malloc(rows * cols * sizeof *vals))) {
                st = tsr_doom(c);
                goto done;
            }
        }
        for (size_t k = 0; k < cols && st == TSR_OK; k++) {
            kpath kc = KP_INDEX(&kr, k);
            st = get_f64(c, row->kids[k], &kc, &num, vals + r * cols + k);
        }
        if (st != TSR_OK)
            goto done;
    }
    int64_t origin[2] = {0, 0};
    double outside = NAN;
    const ynode *o = tsr_ymap_get(v, "origin"), *u = tsr_ymap_get(v, "outside");
    kpath ko = KP_KEY(p, "origin"), ku = KP_KEY(p, "outside");
    if (o && (st = get_int_n(c, o, &ko, &idx, origin, 2)) != TSR_OK)
        goto done;
    if (u && (st = get_f64(c, u, &ku, &num, &outside)) != TSR_OK)
        goto done;
    if (!tsr_expr_table(out, rows, cols, vals, origin[0], origin[1], outside, msg, sizeof msg))
        st = tsr_derr(c, table, &kt, "%s", msg);
done:
    free(vals);
    return st;
}

static tsr_status
parse_one(dctx *c, const ynode *v, const kpath *p, const tsr_param *pm, void *field)
{
    switch (pm->type) {
    case TSR_P_INT:
        /* an integer, or one of the key's words (aa: exact), stored as -1 - its index */
        if (pm->names && v->kind == Y_SCALAR && !tsr_ynull(v))
            for (int k = 0; pm->names[k]; k++)
                if (strcmp(v->s, pm->names[k]) == 0) {
                    *(int64_t *)field = -1 - k;
                    return TSR_OK;
                }
        return get_int(c, v, p, pm, field);
    case TSR_P_INT2: return get_int_n(c, v, p, pm, field, 2);
    case TSR_P_INT4: {
        tsr_status st = get_int_n(c, v, p, pm, field, 4);
        const int64_t *r = field;
        if (st == TSR_OK && (pm->flags & TSR_PF_RECT) && (r[2] <= 0 || r[3] <= 0))
            return tsr_derr(c, v, p, "w and h must be > 0");
        return st;
    }
    case TSR_P_F32: return get_f32(c, v, p, pm, field);
    case TSR_P_F32_2: return get_f32_n(c, v, p, pm, field, 2);
    case TSR_P_F64: return get_f64(c, v, p, pm, field);
    case TSR_P_F64_2: return get_f64_n(c, v, p, pm, field, 2);
    case TSR_P_F64_4: return get_f64_n(c, v, p, pm, field, 4);
    case TSR_P_POINTS: {
        tsr_points pts;
        tsr_status st = get_points(c, v, p, pm, pm, pm->min_count, &pts);
        if (st == TSR_OK) {
            free(((tsr_points *)field)->p);
            *(tsr_points *)field = pts;
        }
        return st;
    }
    case TSR_P_ENUM: {
        int k;
        tsr_status st = tsr_dget_enum(c, v, p, pm->key, pm->names, &k);
        if (st == TSR_OK)
            *(int *)field = k;
        return st;
    }
    case TSR_P_BOOL: return tsr_dget_bool(c, v, p, field);
    case TSR_P_PROFILE: {
        tsr_profile pr = {0};
        tsr_status st = get_profile(c, v, p, &pr);
        if (st == TSR_OK) {
            free(((tsr_profile *)field)->pts.p);
            *(tsr_profile *)field = pr;
        }
        return st;
    }
    case TSR_P_KERNEL: {
        tsr_kernel k = {0};
        tsr_status st = get_kernel(c, v, p, pm, &k);
        if (st == TSR_OK) {
            free(((tsr_kernel *)field)->k);
            *(tsr_kernel *)field = k;
        }
        return st;
    }
    case TSR_P_PATH: return get_path(c, v, p, field);
    case TSR_P_NAME: return get_name(c, v, p, field);
    case TSR_P_LAYERS: return get_layers(c, v, p, pm, field);
    case TSR_P_EXPR: return get_expr_owned(c, v, p, field);
    }
    return tsr_fail(c->err, TSR_EINTERNAL, "%s: parameter '%s' has an unknown type %d", c->file,
                    pm->key, (int)pm->type);
}

tsr_status
tsr_dparse_params(dctx *c, const ynode *m, const kpath *p, const tsr_param *params, size_t n,
                  void *st)
{
    tsr_status s;
    /* in document order, so the first error reported is the first in the file */
    for (size_t i = 0; i < ymap_count(m); i++) {
        const char *key = ymap_key(m, i)->s;
        for (size_t j = 0; j < n; j++) {
            if (strcmp(params[j].key, key) != 0)
                continue;
            kpath kp = KP_KEY(p, key);
            if ((s = parse_one(c, ymap_val(m, i), &kp, &params[j],
                               (char *)st + params[j].offset)) != TSR_OK)
                return s;
            break;
        }
    }
    for (size_t j = 0; j < n; j++)
        if ((params[j].flags & TSR_PF_REQUIRED) && tsr_ymap_find(m, params[j].key) == (size_t)-1)
            return tsr_derr(c, m, p, "missing required key '%s'%s%s%s", params[j].key,
                            params[j].help ? " (" : "", params[j].help ? params[j].help : "",
                            params[j].help ? ")" : "");
    return TSR_OK;
}
