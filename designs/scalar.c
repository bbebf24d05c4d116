/* Key paths, error messages, scalar conversion and "did you mean" for the design loader.
 *
 * Scalars follow docs/format.md §2: integers are decimal with an optional '-', reals use strtod
 * syntax without inf/nan, booleans are true/false; numbers and booleans must be plain
 * (unquoted) scalars, so "5" in quotes is a string and never silently a number. */
#include "designs/designs_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- key paths ------------------------------------------------------------------------------- */

#define KP_HEAD 80
#define KP_TAIL (KPATH_SHOWN - KP_HEAD - 3)

/* Copy the part of `text` (at [start, start+len) of the full path of length total) that
 * lands in the shown head or tail into buf. */
static void
put(char *buf, size_t total, size_t start, const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        size_t at = start + i;
        if (total <= KPATH_SHOWN)
            buf[at] = text[i];
        else if (at < KP_HEAD)
            buf[at] = text[i];
        else if (at >= total - KP_TAIL)
            buf[KP_HEAD + 3 + (at - (total - KP_TAIL))] = text[i];
    }
}

static size_t
seg_text(const kpath *k, char *tmp, size_t size, const char **text)
{
    if (k->key) {
        *text = k->key;
        return strlen(k->key);
    }
    /* by hand: this runs for every segment of every path made, snprintf dominated */
    char digits[24];
    size_t nd = 0, v = k->index;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t n = 0;
    tmp[n++] = '[';
    while (nd && n + 2 < size)
        tmp[n++] = digits[--nd];
    tmp[n++] = ']';
    tmp[n] = 0;
    *text = tmp;
    return n;
}

/* Written backwards from the leaf so nothing is allocated: messages must work when out of
 * memory, and the segments only know their parent. */
void
tsr_kpath_format(const kpath *p, char *buf, size_t size)
{
    char tmp[32];
    const char *text;
    size_t total = 0;
    if (size < KPATH_SHOWN + 1) {
        if (size)
            buf[0] = 0;
        return;
    }
    for (const kpath *k = p; k; k = k->up) {
        total += seg_text(k, tmp, sizeof tmp, &text);
        if (k->key && k->up)
            total++;
    }
    size_t end = total;
    for (const kpath *k = p; k; k = k->up) {
        size_t len = seg_text(k, tmp, sizeof tmp, &text);
        end -= len;
        put(buf, total, end, text, len);
        if (k->key && k->up) {
            end--;
            put(buf, total, end, ".", 1);
        }
    }
    if (total <= KPATH_SHOWN) {
        buf[total] = 0;
    } else {
        memcpy(buf + KP_HEAD, "...", 3);
        buf[KPATH_SHOWN] = 0;
    }
}

char *
tsr_kpath_strdup(const kpath *p)
{
    char buf[KPATH_SHOWN + 1];
    tsr_kpath_format(p, buf, sizeof buf);
    return strdup(buf);
}

/* ---- errors ---------------------------------------------------------------------------------- */

tsr_status
tsr_derr(dctx *c, const ynode *at, const kpath *p, const char *fmt, ...)
{
    char path[KPATH_SHOWN + 1], what[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tsr_kpath_format(p, path, sizeof path);
    if (path[0])
        return tsr_fail(c->err, TSR_EINVAL, "%s:%zu:%zu: %s: %s", c->file, at->line, at->col, path,
                        what);
    return tsr_fail(c->err, TSR_EINVAL, "%s:%zu:%zu: %s", c->file, at->line, at->col, what);
}

tsr_status
tsr_doom(dctx *c)
{
    return tsr_fail(c->err, TSR_ENOMEM, "%s: out of memory while loading the design", c->file);
}

char *
tsr_dwhere(dctx *c, const ynode *at, const kpath *p)
{
    char path[KPATH_SHOWN + 1];
    tsr_kpath_format(p, path, sizeof path);
    int n = snprintf(NULL, 0, "%s:%zu:%zu: %s", c->file, at->line, at->col, path);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        snprintf(s, (size_t)n + 1, "%s:%zu:%zu: %s", c->file, at->line, at->col, path);
    return s;
}

/* ---- did you mean ---------------------------------------------------------------------------- */

#define DYM_MAX 64 /* longer words get no suggestion (and cost no quadratic work) */

size_t
tsr_edit_distance(const char *a, const char *b, size_t cap)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > DYM_MAX || m > DYM_MAX)
        return cap + 1;
    if ((n > m ? n - m : m - n) > cap)
        return cap + 1;
    size_t rows[3][DYM_MAX + 1];
    size_t *pp = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t d = prev[j - 1] + cost;
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < d)
                d = pp[j - 2] + 1;
            cur[j] = d;
        }
        size_t *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[m] > cap ? cap + 1 : prev[m];
}

/* Edit distance <= 2 first; failing that, a candidate the word is the unique prefix (>= 3
 * characters) of, since abbreviations ("gauss", "sig") are a common near miss too; failing
 * that, the one candidate sharing the longest stem (>= 4 characters) with the word, since a
 * longer form of a value ("spherical" for "sphere") is another. */
const char *
tsr_best_of(const char *word, const char *const *const *lists, size_t nlists)
{
    const char *best = NULL, *prefix = NULL;
    size_t bestd = 3, wl = strlen(word), nprefix = 0;
    for (size_t l = 0; l < nlists; l++)
        for (size_t i = 0; lists[l] && lists[l][i]; i++) {
            size_t d = tsr_edit_distance(word, lists[l][i], 2);
            if (d < bestd) {
                bestd = d;
                best = lists[l][i];
            }
            if (wl >= 3 && strncmp(word, lists[l][i], wl) == 0 &&
                (!prefix || strcmp(prefix, lists[l][i]) != 0)) {
                prefix = lists[l][i];
                nprefix++;
            }
        }
    if (best)
        return best;
    if (nprefix == 1)
        return prefix;
    const char *stem = NULL;
    size_t stemlen = 3, nstem = 0;
    for (size_t l = 0; l < nlists; l++)
        for (size_t i = 0; lists[l] && lists[l][i]; i++) {
            size_t k = 0;
            while (word[k] && word[k] == lists[l][i][k])
                k++;
            if (k > stemlen) {
                stemlen = k;
                stem = lists[l][i];
                nstem = 1;
            } else if (k == stemlen && stem && strcmp(stem, lists[l][i]) != 0) {
                nstem++;
            }
        }
    return nstem == 1 ? stem : NULL;
}

const char *
tsr_did_you_mean(const char *word, const char *const *cands)
{
    return tsr_best_of(word, &cands, 1);
}

/* ---- shapes of values ------------------------------------------------------------------------ */

static const char *
kind_name(const ynode *v)
{
    switch (v->kind) {
    case Y_MAP: return "a mapping";
    case Y_SEQ: return "a sequence";
    default: return v->plain ? "a scalar" : "a quoted string";
    }
}

tsr_status
tsr_dwant_map(dctx *c, const ynode *v, const kpath *p)
{
    if (v->kind == Y_MAP)
        return TSR_OK;
    if (tsr_ynull(v))
        return tsr_derr(c, v, p, "missing value (expected a mapping)");
    return tsr_derr(c, v, p, "expected a mapping, got %s", kind_name(v));
}

tsr_status
tsr_dwant_seq(dctx *c, const ynode *v, const kpath *p, size_t n)
{
    if (v->kind != Y_SEQ) {
        if (tsr_ynull(v))
            return tsr_derr(c, v, p, "missing value (expected a sequence)");
        return tsr_derr(c, v, p, "expected a sequence, got %s", kind_name(v));
    }
    if (n != (size_t)-1 && v->n != n)
        return tsr_derr(c, v, p, "expected %zu values, got %zu", n, v->n);
    return TSR_OK;
}

tsr_status
tsr_dcheck_keys(dctx *c, const ynode *m, const kpath *p, const char *const *k1,
                const char *const *k2, const char *const *k3)
{
    const char *const *lists[3] = {k1, k2, k3};
    for (size_t i = 0; i < ymap_count(m); i++) {
        const char *key = ymap_key(m, i)->s;
        bool known = false;
        for (size_t l = 0; l < 3 && !known; l++)
            for (size_t j = 0; lists[l] && lists[l][j] && !known; j++)
                known = strcmp(lists[l][j], key) == 0;
        if (known)
            continue;
        kpath kp = KP_KEY(p, key);
        const char *dym = tsr_best_of(key, lists, 3);
        if (dym)
            return tsr_derr(c, ymap_key(m, i), &kp, "unknown key '%.100s' (did you mean '%s'?)",
                            key, dym);
        return tsr_derr(c, ymap_key(m, i), &kp, "unknown key '%.100s'", key);
    }
    return TSR_OK;
}

/* ---- scalars --------------------------------------------------------------------------------- */

/* Common shape checks for a number or boolean: a plain, non-null scalar. */
static tsr_status
want_plain(dctx *c, const ynode *v, const kpath *p, const char *what)
{
    if (v->kind != Y_SCALAR)
        return tsr_derr(c, v, p, "expected %s, got %s", what, kind_name(v));
    if (tsr_ynull(v))
        return tsr_derr(c, v, p, "missing value (expected %s)", what);
    if (!v->plain)
        return tsr_derr(c, v, p, "expected %s, got a quoted string (write it unquoted)", what);
    return TSR_OK;
}

tsr_status
tsr_dget_int(dctx *c, const ynode *v, const kpath *p, int64_t *out)
{
    tsr_status st = want_plain(c, v, p, "an integer");
    if (st != TSR_OK)
        return st;
    const char *s = v->s;
    bool neg = *s == '-';
    if (neg)
        s++;
    if (!*s)
        goto syntax;
    for (const char *q = s; *q; q++)
        if (!isdigit((unsigned char)*q))
            goto syntax;
    if (s[0] == '0' && s[1])
        return tsr_derr(c, v, p, "'%.64s': leading zeros are not allowed (YAML 1.1 reads octal)",
                        v->s);
    /* accumulate negatively so INT64_MIN fits */
    int64_t acc = 0;
    for (const char *q = s; *q; q++) {
        int d = *q - '0';
        if (acc < (INT64_MIN + d) / 10)
            goto overflow;
        acc = acc * 10 - d;
    }
    if (!neg) {
        if (acc == INT64_MIN)
            goto overflow;
        acc = -acc;
    }
    *out = acc;
    return TSR_OK;
syntax:
    return tsr_derr(c, v, p, "expected a decimal integer, got '%.64s'", v->s);
overflow:
    return tsr_derr(c, v, p, "integer '%.64s' does not fit in int64", v->s);
}

tsr_status
tsr_dget_real(dctx *c, const ynode *v, const kpath *p, double *out)
{
    tsr_status st = want_plain(c, v, p, "a number");
    if (st != TSR_OK)
        return st;
    const char *s = v->s;
    const char *q = s + (*s == '-' || *s == '+');
    /* strtod would take "inf", "nan", "infinity": a number starts with a digit or '.' */
    if (!(isdigit((unsigned char)*q) || (*q == '.' && isdigit((unsigned char)q[1])))) {
        if (strncasecmp(q, "inf", 3) == 0 || strncasecmp(q, "nan", 3) == 0 ||
            strncasecmp(q, ".inf", 4) == 0 || strncasecmp(q, ".nan", 4) == 0)
            return tsr_derr(c, v, p, "'%.64s': infinity and NaN are not allowed", v->s);
        return tsr_derr(c, v, p, "expected a number, got '%.64s'", v->s);
    }
    char *end;
    errno = 0;
    double d = c->cloc ? strtod_l(s, &end, c->cloc) : strtod(s, &end);
    if (*end || end == s)
        return tsr_derr(c, v, p, "expected a number, got '%.64s'", v->s);
    if (!isfinite(d) || (errno == ERANGE && fabs(d) == HUGE_VAL))
        return tsr_derr(c, v, p, "'%.64s' is out of the range of a double", v->s);
    *out = d;
    return TSR_OK;
}

tsr_status
tsr_dget_bool(dctx *c, const ynode *v, const kpath *p, bool *out)
{
    tsr_status st = want_plain(c, v, p, "true or false");
    if (st != TSR_OK)
        return st;
    if (strcmp(v->s, "true") == 0)
        *out = true;
    else if (strcmp(v->s, "false") == 0)
        *out = false;
    else
        return tsr_derr(c, v, p, "expected true or false, got '%.64s'", v->s);
    return TSR_OK;
}

tsr_status
tsr_dget_str(dctx *c, const ynode *v, const kpath *p, const char **out)
{
    if (v->kind != Y_SCALAR)
        return tsr_derr(c, v, p, "expected a string, got %s", kind_name(v));
    if (tsr_ynull(v))
        return tsr_derr(c, v, p, "missing value (expected a string)");
    if (v->len == 0)
        return tsr_derr(c, v, p, "must not be empty");
    *out = v->s;
    return TSR_OK;
}

tsr_status
tsr_dget_enum(dctx *c, const ynode *v, const kpath *p, const char *what, const char *const *names,
              int *out)
{
    const char *s;
    tsr_status st = tsr_dget_str(c, v, p, &s);
    if (st != TSR_OK)
        return st;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return TSR_OK;
        }
    const char *dym = tsr_did_you_mean(s, names);
    if (dym)
        return tsr_derr(c, v, p, "unknown %s '%.64s' (did you mean '%s'?)", what, s, dym);
    char list[256] = "";
    size_t len = 0;
    for (int i = 0; names[i] && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    return tsr_derr(c, v, p, "unknown %s '%.64s' (expected one of: %s)", what, s, list);
}

/* ---- printing reals -------------------------------------------------------------------------- */

/* Integral values print as integers ("30", not "3e+01"); the rest with the fewest digits. */
void
tsr_fmt_double(char *buf, size_t size, double d)
{
    if (d == floor(d) && fabs(d) < 9007199254740992.0) {
        snprintf(buf, size, "%.0f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

void
tsr_fmt_float(char *buf, size_t size, float f)
{
    if (f == floorf(f) && fabsf(f) < 16777216.0f) {
        snprintf(buf, size, "%.0f", (double)f);
        return;
    }
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, size, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f)
            return;
    }
}
