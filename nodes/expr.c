/* The per-copy function language of nodes/expr.h: a recursive-descent parser into a stack
 * program, builders for tables and ramps, and the formatter the canonical dump prints.
 *
 * Written by hand because the language is ours: a dozen operators whose arithmetic must be
 * exactly what nodes/expr_eval.h does on both backends; no parser generator or expression
 * library in Debian gives programs a CUDA kernel can run and bounds their stack statically. */
#include "nodes/expr.h"
#include "nodes/expr_eval.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct xparse {
    const char *s;
    size_t pos;
    tsr_expr *e;
    int depth, maxdepth; /* evaluation stack now and at most */
    int nest;            /* parenthesis/recursion nesting */
    bool failed;
    size_t at;
    char *msg;
    size_t msgsize;
} xparse;

#define NEST_MAX (3 * TSR_EXPR_OPS) /* a formatted program (a parenthesis per operation) parses back */

static void __attribute__((format(printf, 3, 4)))
fail(xparse *p, size_t at, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    p->at = at;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, p->msgsize, fmt, ap);
    va_end(ap);
}

static void
skip(xparse *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
           p->s[p->pos] == '\r')
        p->pos++;
}

/* operands each op pops and whether it pushes one: the stack depth after it */
static int
pops(tsr_expr_op op)
{
    switch (op) {
    case TSR_XOP_CONST:
    case TSR_XOP_I:
    case TSR_XOP_J:
    case TSR_XOP_TABLE: return 0;
    case TSR_XOP_NEG:
    case TSR_XOP_SQRT:
    case TSR_XOP_ABS:
    case TSR_XOP_FLOOR:
    case TSR_XOP_CEIL: return 1;
    case TSR_XOP_SEL:
    case TSR_XOP_CLAMP: return 3;
    default: return 2;
    }
}

static void
emit(xparse *p, tsr_expr_op op, uint16_t arg)
{
    if (p->failed)
        return;
    tsr_expr *e = p->e;
    if (e->nops >= TSR_EXPR_OPS) {
        fail(p, p->pos, "too long: more than %d operations", TSR_EXPR_OPS);
        return;
    }
    e->op[e->nops] = (uint8_t)op;
    e->arg[e->nops] = arg;
    e->nops++;
    p->depth += 1 - pops(op);
    if (p->depth > p->maxdepth)
        p->maxdepth = p->depth;
    if (p->maxdepth > TSR_EXPR_STACK)
        fail(p, p->pos, "too deeply nested: more than %d values pending", TSR_EXPR_STACK);
}

static void
emit_const(xparse *p, double v)
{
    if (p->failed)
        return;
    tsr_expr *e = p->e;
    if (e->nk >= TSR_EXPR_CONSTS) {
        fail(p, p->pos, "too long: more than %d numbers", TSR_EXPR_CONSTS);
        return;
    }
    e->k[e->nk] = v;
    emit(p, TSR_XOP_CONST, e->nk++);
}

static void parse_expr(xparse *p);

static bool
accept(xparse *p, const char *tok)
{
    skip(p);
    size_t n = strlen(tok);
    if (strncmp(p->s + p->pos, tok, n) != 0)
        return false;
    p->pos += n;
    return true;
}

static void
expect(xparse *p, char c, const char *what)
{
    skip(p);
    if (p->s[p->pos] != c) {
        if (p->s[p->pos])
            fail(p, p->pos, "expected %s, got '%c'", what, p->s[p->pos]);
        else
            fail(p, p->pos, "expected %s, got the end", what);
        return;
    }
    p->pos++;
}

static const struct {
    const char *name;
    tsr_expr_op op;
    int args;
} funcs[] = {
    {"sqrt", TSR_XOP_SQRT, 1}, {"abs", TSR_XOP_ABS, 1}, {"floor", TSR_XOP_FLOOR, 1},
    {"ceil", TSR_XOP_CEIL, 1}, {"min", TSR_XOP_MIN, 2}, {"max", TSR_XOP_MAX, 2},
    {"clamp", TSR_XOP_CLAMP, 3},
};

static bool
is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The "C" numeric locale, made once: a program that set another locale still reads 0.5 */
static pthread_once_t c_once = PTHREAD_ONCE_INIT;
static locale_t c_numeric;

static void
c_make(void)
{
    c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static void
parse_number(xparse *p)
{
    /* the digits the grammar allows, then strtod on exactly them in the C locale */
    size_t start = p->pos, q = p->pos;
    while (is_digit(p->s[q]))
        q++;
    if (p->s[q] == '.') {
        q++;
        if (!is_digit(p->s[q])) {
            fail(p, q, "expected a digit after '.'");
            return;
        }
        while (is_digit(p->s[q]))
            q++;
    }
    if (p->s[q] == 'e' || p->s[q] == 'E') {
        q++;
        if (p->s[q] == '+' || p->s[q] == '-')
            q++;
        if (!is_digit(p->s[q])) {
            fail(p, q, "expected the exponent's digits");
            return;
        }
        while (is_digit(p->s[q]))
            q++;
    }
    char buf[64];
    if (q - start >= sizeof buf) {
        fail(p, start, "number too long (more than %zu characters)", sizeof buf - 1);
        return;
    }
    memcpy(buf, p->s + start, q - start);
    buf[q - start] = 0;
    pthread_once(&c_once, c_make);
    double v = c_numeric ? strtod_l(buf, NULL, c_numeric) : strtod(buf, NULL);
    if (!isfinite(v)) {
        fail(p, start, "number %s is out of the range of double", buf);
        return;
    }
    p->pos = q;
    emit_const(p, v);
}

static void
parse_primary(xparse *p)
{
    skip(p);
    char c = p->s[p->pos];
    size_t start = p->pos;
    if (is_digit(c) || (c == '.' && is_digit(p->s[p->pos + 1]))) {
        parse_number(p);
        return;
    }
    if (c == '(') {
        p->pos++;
        parse_expr(p);
        expect(p, ')', "')'");
        return;
    }
    if (is_alpha(c)) {
        size_t q = p->pos;
        while (is_alpha(p->s[q]) || is_digit(p->s[q]))
            q++;
        size_t n = q - p->pos;
        const char *w = p->s + p->pos;
        if (n == 1 && (w[0] == 'i' || w[0] == 'j')) {
            p->pos = q;
            emit(p, w[0] == 'i' ? TSR_XOP_I : TSR_XOP_J, 0);
            return;
        }
        if (n == 2 && strncmp(w, "pi", 2) == 0) {
            p->pos = q;
            emit_const(p, M_PI);
            return;
        }
        for (size_t f = 0; f < sizeof funcs / sizeof funcs[0]; f++) {
            if (strlen(funcs[f].name) != n || strncmp(funcs[f].name, w, n) != 0)
                continue;
            p->pos = q;
            expect(p, '(', "'(' after a function name");
            for (int a = 0; a < funcs[f].args && !p->failed; a++) {
                if (a)
                    expect(p, ',', funcs[f].args == 2 ? "',' (2 arguments)" : "',' (3 arguments)");
                parse_expr(p);
            }
            skip(p);
            if (!p->failed && p->s[p->pos] == ',')
                fail(p, p->pos, "%s takes %d argument%s", funcs[f].name, funcs[f].args,
                     funcs[f].args == 1 ? "" : "s");
            expect(p, ')', "')'");
            emit(p, funcs[f].op, 0);
            return;
        }
        fail(p, start, "unknown name '%.*s' (known: i, j, pi, sqrt, abs, floor, ceil, min, max, "
                       "clamp)",
             (int)(n > 32 ? 32 : n), w);
        return;
    }
    if (!c)
        fail(p, start, "expected a number, i, j, a function or '(', got the end");
    else
        fail(p, start, "expected a number, i, j, a function or '(', got '%c'", c);
}

static void
parse_unary(xparse *p)
{
    if (++p->nest > NEST_MAX) {
        fail(p, p->pos, "too deeply nested (more than %d levels)", NEST_MAX);
        return;
    }
    if (accept(p, "-")) {
        parse_unary(p);
        emit(p, TSR_XOP_NEG, 0);
    } else {
        parse_primary(p);
    }
    p->nest--;
}

static void
parse_product(xparse *p)
{
    parse_unary(p);
    while (!p->failed) {
        tsr_expr_op op;
        if (accept(p, "*"))
            op = TSR_XOP_MUL;
        else if (accept(p, "/"))
            op = TSR_XOP_DIV;
        else if (accept(p, "%"))
            op = TSR_XOP_MOD;
        else
            break;
        parse_unary(p);
        emit(p, op, 0);
    }
}

static void
parse_sum(xparse *p)
{
    parse_product(p);
    while (!p->failed) {
        tsr_expr_op op;
        if (accept(p, "+"))
            op = TSR_XOP_ADD;
        else if (accept(p, "-"))
            op = TSR_XOP_SUB;
        else
            break;
        parse_product(p);
        emit(p, op, 0);
    }
}

static void
parse_cmp(xparse *p)
{
    parse_sum(p);
    static const struct {
        const char *tok;
        tsr_expr_op op;
    } cmps[] = {{"<=", TSR_XOP_LE}, {">=", TSR_XOP_GE}, {"==", TSR_XOP_EQ},
                {"!=", TSR_XOP_NE}, {"<", TSR_XOP_LT},  {">", TSR_XOP_GT}};
    for (size_t k = 0; k < sizeof cmps / sizeof cmps[0] && !p->failed; k++)
        if (accept(p, cmps[k].tok)) {
            parse_sum(p);
            emit(p, cmps[k].op, 0);
            return;
        }
}

static void
parse_expr(xparse *p)
{
    if (++p->nest > NEST_MAX) {
        fail(p, p->pos, "too deeply nested (more than %d levels)", NEST_MAX);
        return;
    }
    parse_cmp(p);
    if (!p->failed && accept(p, "?")) {
        parse_expr(p);
        expect(p, ':', "':' of '? :'");
        parse_expr(p);
        emit(p, TSR_XOP_SEL, 0);
    }
    p->nest--;
}

bool
tsr_expr_parse(const char *text, tsr_expr *out, size_t *at, char *msg, size_t msgsize)
{
    /* compiled straight into *out (no allocation: nothing to fail but the text) */
    xparse p = {text, 0, out, 0, 0, 0, false, 0, msg, msgsize};
    if (msgsize)
        msg[0] = 0;
    memset(out, 0, sizeof *out);
    size_t len = strnlen(text, TSR_EXPR_TEXT + 1);
    if (len > TSR_EXPR_TEXT)
        fail(&p, TSR_EXPR_TEXT, "longer than %d characters", TSR_EXPR_TEXT);
    skip(&p);
    if (!p.failed && !text[p.pos])
        fail(&p, p.pos, "empty expression");
    if (!p.failed)
        parse_expr(&p);
    skip(&p);
    if (!p.failed && text[p.pos])
        fail(&p, p.pos, "unexpected '%c' after a complete expression", text[p.pos]);
    if (p.failed) {
        memset(out, 0, sizeof *out);
        *at = p.at;
        return false;
    }
    return true;
}

bool
tsr_expr_table(tsr_expr *out, size_t rows, size_t cols, const double *values, int64_t i0,
               int64_t j0, double outside, char *msg, size_t msgsize)
{
    if (rows == 0 || cols == 0) {
        snprintf(msg, msgsize, "a table needs at least one row and one column");
        return false;
    }
    if (rows > TSR_EXPR_CONSTS || cols > TSR_EXPR_CONSTS || rows * cols + 5 > TSR_EXPR_CONSTS) {
        snprintf(msg, msgsize, "a table holds at most %d values, got %zu x %zu",
                 TSR_EXPR_CONSTS - 5, rows, cols);
        return false;
    }
    memset(out, 0, sizeof *out);
    out->k[0] = (double)cols;
    out->k[1] = (double)rows;
    out->k[2] = (double)i0;
    out->k[3] = (double)j0;
    out->k[4] = outside;
    memcpy(out->k + 5, values, rows * cols * sizeof *values);
    out->nk = (uint16_t)(rows * cols + 5);
    out->op[0] = TSR_XOP_TABLE;
    out->arg[0] = 0;
    out->nops = 1;
    return true;
}

void
tsr_expr_ramp(tsr_expr *out, double a, double di, double dj)
{
    memset(out, 0, sizeof *out);
    out->k[0] = a, out->k[1] = di, out->k[2] = dj;
    out->nk = 3;
    static const uint8_t ops[] = {TSR_XOP_CONST, TSR_XOP_CONST, TSR_XOP_I,  TSR_XOP_MUL,
                                  TSR_XOP_ADD,   TSR_XOP_CONST, TSR_XOP_J,  TSR_XOP_MUL,
                                  TSR_XOP_ADD};
    static const uint16_t args[] = {0, 1, 0, 0, 0, 2, 0, 0, 0};
    memcpy(out->op, ops, sizeof ops);
    memcpy(out->arg, args, sizeof args);
    out->nops = sizeof ops;
}

void
tsr_expr_const(tsr_expr *out, double c)
{
    memset(out, 0, sizeof *out);
    out->k[0] = c;
    out->nk = 1;
    out->op[0] = TSR_XOP_CONST;
    out->nops = 1;
}

size_t
tsr_expr_size(void)
{
    return sizeof(tsr_expr);
}

bool
tsr_expr_is_const(const tsr_expr *e, double *c)
{
    for (int k = 0; k < e->nops; k++)
        if (e->op[k] == TSR_XOP_I || e->op[k] == TSR_XOP_J || e->op[k] == TSR_XOP_TABLE)
            return false;
    if (c)
        *c = tsr_expr_eval(e, 0, 0);
    return true;
}

/* ---- formatting -------------------------------------------------------------------------------- */

typedef struct xout {
    char *buf;
    size_t size, len;
} xout;

static void __attribute__((format(printf, 2, 3)))
put(xout *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *at = o->len < o->size ? o->buf + o->len : NULL;
    int n = vsnprintf(at, at ? o->size - o->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

/* The shortest %.{15,16,17}g that reads back to v (17 always does). */
static void
put_g(xout *o, double v)
{
    char b[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v)
            break;
    }
    put(o, "%s", b);
}

/* the parser's grammar has no sign, inf or nan, so negative constants print as (-x) */
static void
put_num(xout *o, double v)
{
    if (v < 0 || (v == 0 && signbit(v))) {
        put(o, "(-");
        put_g(o, -v);
        put(o, ")");
    } else {
        put_g(o, v);
    }
}

static const char *const op_text[TSR_XOP_COUNT] = {
    [TSR_XOP_ADD] = "+", [TSR_XOP_SUB] = "-", [TSR_XOP_MUL] = "*", [TSR_XOP_DIV] = "/",
    [TSR_XOP_MOD] = "%", [TSR_XOP_LT] = "<",  [TSR_XOP_LE] = "<=", [TSR_XOP_GT] = ">",
    [TSR_XOP_GE] = ">=", [TSR_XOP_EQ] = "==", [TSR_XOP_NE] = "!=", [TSR_XOP_SQRT] = "sqrt",
    [TSR_XOP_ABS] = "abs", [TSR_XOP_FLOOR] = "floor", [TSR_XOP_CEIL] = "ceil",
    [TSR_XOP_MIN] = "min", [TSR_XOP_MAX] = "max", [TSR_XOP_CLAMP] = "clamp"};

/* The op at k, whose operands end just before it; start[k] is where its subtree begins. */
static void
put_op(xout *o, const tsr_expr *e, const int *start, int k)
{
    tsr_expr_op op = (tsr_expr_op)e->op[k];
    int args[3], n = pops(op);
    for (int a = n - 1, at = k - 1; a >= 0; a--) {
        args[a] = at;
        at = start[at] - 1;
    }
    switch (op) {
    case TSR_XOP_CONST: put_num(o, e->k[e->arg[k]]); break;
    case TSR_XOP_I: put(o, "i"); break;
    case TSR_XOP_J: put(o, "j"); break;
    case TSR_XOP_TABLE: put(o, "0"); break; /* not reached: tables format as a mapping */
    case TSR_XOP_NEG:
        put(o, "(-");
        put_op(o, e, start, args[0]);
        put(o, ")");
        break;
    case TSR_XOP_SEL:
        put(o, "(");
        put_op(o, e, start, args[0]);
        put(o, " ? ");
        put_op(o, e, start, args[1]);
        put(o, " : ");
        put_op(o, e, start, args[2]);
        put(o, ")");
        break;
    default:
        if (op < TSR_XOP_SQRT || op > TSR_XOP_CLAMP) { /* binary operator */
            put(o, "(");
            put_op(o, e, start, args[0]);
            put(o, " %s ", op_text[op]);
            put_op(o, e, start, args[1]);
            put(o, ")");
            break;
        }
        put(o, "%s(", op_text[op]);
        for (int a = 0; a < n; a++) {
            if (a)
                put(o, ", ");
            put_op(o, e, start, args[a]);
        }
        put(o, ")");
        break;
    }
}

size_t
tsr_expr_format(const tsr_expr *e, char *buf, size_t size)
{
    xout o = {buf, size, 0};
    if (size)
        buf[0] = 0;
    if (e->nops == 0) {
        put(&o, "null");
    } else if (e->op[0] == TSR_XOP_TABLE) {
        const double *t = e->k;
        int64_t cols = (int64_t)t[0], rows = (int64_t)t[1];
        put(&o, "{table: [");
        for (int64_t r = 0; r < rows; r++) {
            put(&o, r ? ", [" : "[");
            for (int64_t c = 0; c < cols; c++) {
                if (c)
                    put(&o, ", ");
                put_g(&o, t[5 + r * cols + c]);
            }
            put(&o, "]");
        }
        put(&o, "], origin: [%lld, %lld], outside: ", (long long)t[2], (long long)t[3]);
        put_g(&o, t[4]);
        put(&o, "}");
    } else {
        int start[TSR_EXPR_OPS];
        for (int k = 0; k < e->nops; k++) {
            int at = k - 1;
            for (int a = 0; a < pops((tsr_expr_op)e->op[k]); a++) {
                start[k] = start[at];
                at = start[at] - 1;
            }
            if (pops((tsr_expr_op)e->op[k]) == 0)
                start[k] = k;
            else
                start[k] = at + 1;
        }
        put(&o, "\"");
        put_op(&o, e, start, e->nops - 1);
        put(&o, "\"");
    }
    if (size && o.len >= size)
        buf[size - 1] = 0;
    return o.len;
}
