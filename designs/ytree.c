/* libyaml events -> a small tree with positions (the only libyaml user in tessera).
 *
 * The event API rather than yaml_document_t because we need to refuse what the document API
 * silently resolves (anchors, aliases, merge keys) and to keep the position of every key.
 * The tree is built with an explicit stack and freed through an allocation chain, so a deep
 * file costs heap, never C stack. */
#include "designs/designs_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct builder {
    const char *file;
    const char *text; /* the whole input, for positions libyaml gives as offsets */
    size_t len;
    tsr_error *err;
    ytree *t;
    ynode **stack; /* open collections */
    size_t depth, cap;
    int docs;
} builder;

/* The key path of the position the parser is at: for every open collection, the key whose
 * value is open (maps) or the index (sequences); `last` (may be NULL) is appended as a key.
 * Written into buf; empty when out of memory (messages must still come out). */
static void
stack_path(const builder *b, const char *last, char *buf, size_t size)
{
    size_t n = b->depth + 1;
    kpath *kp = malloc(n * sizeof *kp);
    const kpath *up = NULL;
    buf[0] = 0;
    if (!kp)
        return;
    for (size_t i = 0; i < b->depth; i++) {
        const ynode *c = b->stack[i];
        bool top = i + 1 == b->depth;
        if (c->kind == Y_MAP) {
            /* below the top the open value is attached already; at the top a pending key
             * names the value to come, none means we are at a key */
            size_t k = top ? (c->n % 2 ? c->n - 1 : (size_t)-1) : c->n - 2;
            if (k == (size_t)-1)
                continue;
            kp[i] = KP_KEY(up, c->kids[k]->s);
        } else {
            kp[i] = KP_INDEX(up, top ? c->n : c->n - 1);
        }
        up = &kp[i];
    }
    if (last) {
        kp[b->depth] = KP_KEY(up, last);
        up = &kp[b->depth];
    }
    tsr_kpath_format(up, buf, size);
    free(kp);
}

static tsr_status
vperr(builder *b, const yaml_mark_t *m, const char *last, const char *fmt, va_list ap)
{
    char what[512], path[KPATH_SHOWN + 1];
    vsnprintf(what, sizeof what, fmt, ap);
    stack_path(b, last, path, sizeof path);
    if (path[0])
        return tsr_fail(b->err, TSR_EINVAL, "%s:%zu:%zu: %s: %s", b->file, m->line + 1,
                        m->column + 1, path, what);
    return tsr_fail(b->err, TSR_EINVAL, "%s:%zu:%zu: %s", b->file, m->line + 1, m->column + 1,
                    what);
}

/* "FILE:LINE:COL: path: what" for the position the parser is at. */
static tsr_status __attribute__((format(printf, 3, 4)))
perr(builder *b, const yaml_mark_t *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tsr_status st = vperr(b, m, NULL, fmt, ap);
    va_end(ap);
    return st;
}

static tsr_status
poom(builder *b)
{
    return tsr_fail(b->err, TSR_ENOMEM, "%s: out of memory while reading the design", b->file);
}

/* A new node on the allocation chain, or NULL. */
static ynode *
ynew(builder *b, ykind kind, const yaml_mark_t *m)
{
    ynode *y = calloc(1, sizeof *y);
    if (!y)
        return NULL;
    y->kind = kind;
    y->line = m->line + 1;
    y->col = m->column + 1;
    y->next = b->t->all;
    b->t->all = y;
    return y;
}

static bool
kids_push(ynode *parent, ynode *kid)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 4;
        ynode **k = realloc(parent->kids, cap * sizeof *k);
        if (!k)
            return false;
        parent->kids = k;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return true;
}

static int
key_cmp(const void *pa, const void *pb)
{
    const ynode *a = *(ynode *const *)pa, *b = *(ynode *const *)pb;
    int c = strcmp(a->s, b->s);
    if (c)
        return c;
    /* keys of one map have distinct positions: order equal keys by position */
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->col < b->col ? -1 : a->col > b->col;
}

static bool
before(const ynode *a, const ynode *b)
{
    return a->line < b->line || (a->line == b->line && a->col < b->col);
}

static tsr_status __attribute__((format(printf, 4, 5)))
perr_key(builder *b, const yaml_mark_t *m, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tsr_status st = vperr(b, m, key, fmt, ap);
    va_end(ap);
    return st;
}

/* Sorting the keys makes this O(n log n): `nodes:` may hold thousands of names. */
static tsr_status
check_duplicates(builder *b, const ynode *m)
{
    size_t n = ymap_count(m);
    if (n < 2)
        return TSR_OK;
    if (n <= 8) {
        for (size_t j = 1; j < n; j++)
            for (size_t i = 0; i < j; i++)
                if (strcmp(ymap_key(m, i)->s, ymap_key(m, j)->s) == 0)
                    goto found_small;
        return TSR_OK;
    found_small:;
    }
    ynode **keys = malloc(n * sizeof *keys);
    if (!keys)
        return poom(b);
    for (size_t i = 0; i < n; i++)
        keys[i] = m->kids[2 * i];
    qsort(keys, n, sizeof *keys, key_cmp);
    const ynode *dup = NULL, *first = NULL;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(keys[i - 1]->s, keys[i]->s) != 0)
            continue;
        /* report the duplicate that comes first in the document */
        if (!dup || before(keys[i], dup)) {
            dup = keys[i];
            size_t j = i - 1;
            while (j > 0 && strcmp(keys[j - 1]->s, keys[i]->s) == 0)
                j--;
            first = keys[j];
        }
    }
    free(keys);
    if (!dup)
        return TSR_OK;
    yaml_mark_t at = {.line = dup->line - 1, .column = dup->col - 1};
    return perr_key(b, &at, dup->s, "duplicate key (first at %zu:%zu)", first->line, first->col);
}

/* Refuse what YAML resolves behind the reader's back: anchors (and so aliases) and tags. */
static tsr_status
check_props(builder *b, const yaml_event_t *ev, const yaml_char_t *anchor, const yaml_char_t *tag)
{
    if (anchor)
        return perr(b, &ev->start_mark, "anchor '&%.200s' not allowed (reuse a node with ref:)",
                    (const char *)anchor);
    if (tag)
        return perr(b, &ev->start_mark, "tag '%.200s' not allowed", (const char *)tag);
    return TSR_OK;
}

/* Attach `y` to the open collection (or make it the document root). */
static tsr_status
attach(builder *b, ynode *y, const yaml_event_t *ev)
{
    if (b->depth == 0) {
        b->t->root = y;
        return TSR_OK;
    }
    ynode *parent = b->stack[b->depth - 1];
    if (parent->kind == Y_MAP && parent->n % 2 == 0) {
        if (y->kind != Y_SCALAR)
            return perr(b, &ev->start_mark, "mapping keys must be scalars");
        if (y->plain && strcmp(y->s, "<<") == 0)
            return perr(b, &ev->start_mark, "merge key '<<' not allowed (reuse a node with ref:)");
    }
    if (!kids_push(parent, y))
        return poom(b);
    return TSR_OK;
}

static tsr_status
on_event(builder *b, yaml_event_t *ev)
{
    tsr_status st;
    ynode *y;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->docs > 1)
            return perr(b, &ev->start_mark, "only one YAML document per design file");
        return TSR_OK;
    case YAML_ALIAS_EVENT:
        return perr(b, &ev->start_mark, "alias '*%.200s' not allowed (reuse a node with ref:)",
                    (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT:
        if ((st = check_props(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag)) != TSR_OK)
            return st;
        if (memchr(ev->data.scalar.value, 0, ev->data.scalar.length))
            return perr(b, &ev->start_mark, "NUL character in a scalar");
        if (!(y = ynew(b, Y_SCALAR, &ev->start_mark)))
            return poom(b);
        if (!(y->s = malloc(ev->data.scalar.length + 1)))
            return poom(b);
        memcpy(y->s, ev->data.scalar.value, ev->data.scalar.length);
        y->s[ev->data.scalar.length] = 0;
        y->len = ev->data.scalar.length;
        y->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        return attach(b, y, ev);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool map = ev->type == YAML_MAPPING_START_EVENT;
        st = map ? check_props(b, ev, ev->data.mapping_start.anchor, ev->data.mapping_start.tag)
                 : check_props(b, ev, ev->data.sequence_start.anchor, ev->data.sequence_start.tag);
        if (st != TSR_OK)
            return st;
        if (b->depth >= TSR_DESIGN_MAX_YAML_DEPTH)
            return perr(b, &ev->start_mark, "nesting deeper than %d levels",
                        TSR_DESIGN_MAX_YAML_DEPTH);
        if (!(y = ynew(b, map ? Y_MAP : Y_SEQ, &ev->start_mark)))
            return poom(b);
        if ((st = attach(b, y, ev)) != TSR_OK)
            return st;
        if (b->depth == b->cap) {
            size_t cap = b->cap ? b->cap * 2 : 32;
            ynode **s = realloc(b->stack, cap * sizeof *s);
            if (!s)
                return poom(b);
            b->stack = s;
            b->cap = cap;
        }
        b->stack[b->depth++] = y;
        return TSR_OK;
    }
    case YAML_SEQUENCE_END_EVENT: b->depth--; return TSR_OK;
    case YAML_MAPPING_END_EVENT:
        /* checked while the map is still open, so messages get its path */
        st = check_duplicates(b, b->stack[b->depth - 1]);
        b->depth--;
        return st;
    default: return TSR_OK;
    }
}

/* Line and column (1-based) of byte `off` of the input, counted as libyaml's marks count:
 * "\r\n", "\r" and "\n" end a line, a column is a character (a UTF-8 sequence is one), a
 * leading byte order mark is not. */
static void
offset_position(const builder *b, size_t off, size_t *line, size_t *col)
{
    const unsigned char *t = (const unsigned char *)b->text;
    size_t i = b->len >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    *line = 1;
    *col = 1;
    for (off = off < b->len ? off : b->len; i < off; i++) {
        if (t[i] == '\n' || (t[i] == '\r' && (i + 1 >= b->len || t[i + 1] != '\n'))) {
            ++*line;
            *col = 1;
        } else if (t[i] != '\r' && (t[i] & 0xC0) != 0x80) {
            ++*col;
        }
    }
}

static tsr_status
syntax_error(builder *b, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return poom(b);
    const char *problem = p->problem ? p->problem : "malformed YAML";
    /* Reader errors (bad UTF-8, a control character) carry only a byte offset: libyaml
     * leaves their mark at the start of the file. */
    if (p->error == YAML_READER_ERROR) {
        size_t line, col;
        offset_position(b, p->problem_offset, &line, &col);
        return tsr_fail(b->err, TSR_EINVAL, "%s:%zu:%zu: YAML syntax error: %s (byte %zu)",
                        b->file, line, col, problem, p->problem_offset);
    }
    if (p->context)
        return tsr_fail(b->err, TSR_EINVAL,
                        "%s:%zu:%zu: YAML syntax error: %s (%s, which starts at %zu:%zu)", b->file,
                        p->problem_mark.line + 1, p->problem_mark.column + 1, problem, p->context,
                        p->context_mark.line + 1, p->context_mark.column + 1);
    return tsr_fail(b->err, TSR_EINVAL, "%s:%zu:%zu: YAML syntax error: %s", b->file,
                    p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
}

tsr_status
tsr_ytree_parse(const char *file, const char *text, size_t len, ytree *t, tsr_error *err)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    builder b = {file, text, len, err, t, NULL, 0, 0, 0};
    tsr_status st = TSR_OK;
    bool done = false;

    t->root = NULL;
    t->all = NULL;
    if (!yaml_parser_initialize(&parser))
        return poom(&b);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            st = syntax_error(&b, &parser);
            goto fail;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        st = on_event(&b, &ev);
        yaml_event_delete(&ev);
        if (st != TSR_OK)
            goto fail;
    }
    yaml_parser_delete(&parser);
    free(b.stack);
    return TSR_OK;
fail:
    yaml_parser_delete(&parser);
    free(b.stack);
    tsr_ytree_free(t);
    return st;
}

void
tsr_ytree_free(ytree *t)
{
    ynode *y = t->all;
    while (y) {
        ynode *next = y->next;
        free(y->s);
        free(y->kids);
        free(y);
        y = next;
    }
    t->all = NULL;
    t->root = NULL;
}

const ynode *
tsr_ymap_get(const ynode *m, const char *key)
{
    size_t i = tsr_ymap_find(m, key);
    return i == (size_t)-1 ? NULL : ymap_val(m, i);
}

size_t
tsr_ymap_find(const ynode *m, const char *key)
{
    for (size_t i = 0; i < ymap_count(m); i++)
        if (strcmp(ymap_key(m, i)->s, key) == 0)
            return i;
    return (size_t)-1;
}

bool
tsr_ynull(const ynode *v)
{
    return v->kind == Y_SCALAR && v->plain &&
           (v->len == 0 || strcmp(v->s, "~") == 0 || strcmp(v->s, "null") == 0 ||
            strcmp(v->s, "Null") == 0 || strcmp(v->s, "NULL") == 0);
}
