/* The design loader: YAML tree -> validated node DAG (docs/format.md §2).
 *
 * Walk order: the header (tessera, name, tile), output, every named node in document order
 * (each loads the named nodes it refs first, depth first, which is where cycles show up),
 * then root. Every node allocated goes on one list at once, so any failure frees everything
 * with one tsr_design_free. Afterwards the nodes reachable from root are put in topological
 * order (children first, root last) without recursion; named nodes never referenced were
 * validated like the rest and are dropped. */
#include "designs/designs_int.h"
#include "geom/geom.h"
#include "nodes/dither.h"
#include "nodes/layout_src.h"
#include "nodes/params.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct named {
    const char *name; /* the key under nodes: */
    const ynode *key;
    const ynode *val;
    tsr_node *node; /* once loaded */
    int state;      /* 0 not loaded, 1 loading (on the ref stack), 2 loaded */
};

/* The loader recurses once per node level (parse_node -> parse_children -> parse_edge ->
 * [resolve_ref -> load_named ->] parse_node). Everything off that path that holds buffers is
 * kept out of line, so a level costs a few hundred bytes of stack, not kilobytes (inlining
 * had made it ~1 KiB at -O3 and ~4 KiB under ASan). */
#define OUT_OF_LINE __attribute__((noinline))

/* ---- tables: the loader's own keys, walked by the same generic code as trait parameters ------ */

/* a tile is a unit of work, not a length of the design: never in physical units */
#define TILE_RANGE TSR_PF_RANGE | TSR_PF_UNITLESS, 1, TSR_TILE_MAX

typedef struct dtop {
    int64_t tessera;
    int64_t tile;
} dtop;

static const tsr_param top_params[] = {
    {"tessera", TSR_P_INT, offsetof(dtop, tessera), TSR_PF_REQUIRED | TSR_PF_UNITLESS, 0, 0, 0, NULL,
     "format version, 1"},
    {"tile", TSR_P_INT, offsetof(dtop, tile), TILE_RANGE, 0, NULL, "default tile edge, px"},
};
static const char *const top_keys[] = {"tessera", "name", "tile", "pixel", "output", "nodes", "root",
                                       NULL};

static const char *const order_names[] = {"raster", "swath", NULL};
static const char *const corner_names[] = {"top-left", "top-right", "bottom-left", "bottom-right",
                                           NULL};

const tsr_param tsr_dtab_output[] = {
    {"depth", TSR_P_INT, offsetof(tsr_output, depth), TSR_PF_UNITLESS, 0, 0, 0, NULL,
     "1 | 2 | 4 (dithered) | 8 | 16 bits a pixel"},
    {"range", TSR_P_F64_2, offsetof(tsr_output, range), TSR_PF_UNITLESS, 0, 0, 0, NULL,
     "[lo, hi]: values mapped to sample 0 .. max"},
    {"calibration", TSR_P_POINTS, offsetof(tsr_output, calibration), TSR_PF_UNITLESS, 0, 0, 2, NULL,
     "[[t, c], ...]: piecewise-linear map after range"},
    {"order", TSR_P_ENUM, offsetof(tsr_output, order), 0, 0, 0, 0, order_names, "raster | swath"},
};
const size_t tsr_dtab_noutput = sizeof tsr_dtab_output / sizeof tsr_dtab_output[0];

const tsr_param tsr_dtab_swath[] = {
    {"width", TSR_P_INT, offsetof(tsr_output, swath_width), TSR_PF_REQUIRED | TSR_PF_RANGE, 1,
     (double)TSR_COORD_MAX, 0, NULL, "swath width, px"},
    {"serpentine", TSR_P_BOOL, offsetof(tsr_output, serpentine), 0, 0, 0, 0, NULL,
     "every second swath runs backwards"},
    {"start", TSR_P_ENUM, offsetof(tsr_output, start), 0, 0, 0, 0, corner_names,
     "top-left | top-right | bottom-left | bottom-right"},
};
const size_t tsr_dtab_nswath = sizeof tsr_dtab_swath / sizeof tsr_dtab_swath[0];

typedef struct dnode {
    int64_t size[2];
    int64_t tile;
    float fill;
} dnode;

static const tsr_param node_params[] = {
    {"size", TSR_P_INT2, offsetof(dnode, size), TSR_PF_RANGE, 1, (double)TSR_COORD_MAX, 0, NULL,
     "[w, h], px"},
    {"tile", TSR_P_INT, offsetof(dnode, tile), TILE_RANGE, 0, NULL, "tile edge, px"},
    {"fill", TSR_P_F32, offsetof(dnode, fill), 0, 0, 0, 0, NULL, "background value"},
};
static const char *const node_keys[] = {"size", "fill", "source", "tile", "children", NULL};

typedef struct dedge {
    int blend;
    int64_t offset[2];
    int mask;
} dedge;

static const tsr_param edge_params[] = {
    {"blend", TSR_P_ENUM, offsetof(dedge, blend), 0, 0, 0, 0, tsr_blend_names, NULL},
    {"offset", TSR_P_INT2, offsetof(dedge, offset), 0, 0, 0, 0, NULL, NULL},
    {"mask", TSR_P_ENUM, offsetof(dedge, mask), 0, 0, 0, 0, tsr_mask_names, NULL},
};

/* ---- helpers --------------------------------------------------------------------------------- */

static tsr_node *
node_new(dctx *c)
{
    if (c->nall == c->capall) {
        size_t cap = c->capall ? c->capall * 2 : 16;
        tsr_node **a = realloc(c->all, cap * sizeof *a);
        if (!a)
            return NULL;
        c->all = a;
        c->capall = cap;
    }
    tsr_node *n = calloc(1, sizeof *n);
    if (n)
        c->all[c->nall++] = n;
    return n;
}

/* A NULL-terminated list of a table's keys, for unknown-key checks; NULL when out of memory. */
static const char **
table_keys(const tsr_param *params, size_t n)
{
    const char **k = malloc((n + 1) * sizeof *k);
    if (!k)
        return NULL;
    for (size_t i = 0; i < n; i++)
        k[i] = params[i].key;
    k[n] = NULL;
    return k;
}

/* tsr_check for trait and source checks: the key's own position when it is in the mapping,
 * else the mapping's. */
typedef struct dcheck {
    tsr_check base; /* first: the callback gets a tsr_check * */
    dctx *c;
    const ynode *m;
    const kpath *p;
    bool failed;
} dcheck;

static tsr_status
check_fail(tsr_check *ck, const char *key, const char *msg)
{
    dcheck *d = (dcheck *)ck;
    d->failed = true;
    if (!key)
        return tsr_derr(d->c, d->m, d->p, "%s", msg);
    kpath kp = KP_KEY(d->p, key);
    size_t i = tsr_ymap_find(d->m, key);
    return tsr_derr(d->c, i == (size_t)-1 ? d->m : ymap_key(d->m, i), &kp, "%s", msg);
}

/* A check that failed without calling fail() still gets a message. */
static tsr_status
check_result(dcheck *d, tsr_status st)
{
    if (st == TSR_OK || d->failed)
        return st;
    if (st == TSR_ENOMEM)
        return tsr_doom(d->c);
    tsr_derr(d->c, d->m, d->p, "invalid (%s)", tsr_status_name(st));
    if (d->c->err)
        d->c->err->status = st;
    return st;
}

/* ---- sources --------------------------------------------------------------------------------- */

/* The distinct discriminator keys of tsr_source_descs, NULL-terminated. */
static void
disc_keys(const char **out)
{
    size_t n = 0;
    for (size_t i = 0; i < TSR_SRC_COUNT; i++) {
        bool seen = false;
        for (size_t j = 0; j < n; j++)
            seen = seen || strcmp(out[j], tsr_source_descs[i].disc_key) == 0;
        if (!seen)
            out[n++] = tsr_source_descs[i].disc_key;
    }
    out[n] = NULL;
}

/* "'shape', 'gradient', ... or 'noise'": the discriminators, for messages. */
static void
disc_list(const char *const *discs, char *buf, size_t n)
{
    size_t k = 0, used = 0;
    while (discs[k])
        k++;
    buf[0] = 0;
    for (size_t i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s'%s'",
                                 i == 0 ? "" : i + 1 == k ? " or " : ", ", discs[i]);
}

/* Read the image's header with opts->read_size, or decode it with opts->read_image; the
 * reader's message gets our position. */
static tsr_status
read_image(dctx *c, tsr_source *s, const ynode *at, const kpath *p)
{
    tsr_error ierr = {TSR_OK, ""};
    int64_t w = 0, h = 0, scratch = 0;
    float *px = NULL;
    tsr_status st = c->opts->read_size
                        ? c->opts->read_size(s->path, &w, &h, &scratch, &ierr)
                        : c->opts->read_image(s->path, &w, &h, &px, &ierr);
    if (st != TSR_OK) {
        char path[KPATH_SHOWN + 1];
        tsr_kpath_format(p, path, sizeof path);
        free(px);
        return tsr_fail(c->err, st, "%s:%zu:%zu: %s: %s", c->file, at->line, at->col, path,
                        ierr.msg[0] ? ierr.msg : tsr_status_name(st));
    }
    if ((!px && !c->opts->read_size) || w < 1 || h < 1 || w > TSR_COORD_MAX ||
        h > TSR_COORD_MAX) {
        free(px);
        return tsr_derr(c, at, p, "image '%s' has an unusable size %lldx%lld", s->path,
                        (long long)w, (long long)h);
    }
    if (!px) { /* decoded later (tsr_design_build): its errors point at the image's path */
        char *where = tsr_dwhere(c, at, p);
        if (!where)
            return tsr_doom(c);
        free(s->where);
        s->where = where;
    }
    s->img = px;
    s->iw = w;
    s->ih = h;
    s->scratch = scratch;
    return TSR_OK;
}

/* A source's late failure st (its message msg) as the loader reports it: out of memory as
 * such, anything else bad input at `at` naming key path p (a file that cannot be read is bad
 * input here, as a design that cannot be opened is). */
static tsr_status
source_fail(dctx *c, tsr_status st, const char *msg, const ynode *at, const kpath *p)
{
    if (st == TSR_ENOMEM)
        return tsr_doom(c);
    char path[KPATH_SHOWN + 1];
    tsr_kpath_format(p, path, sizeof path);
    return tsr_fail(c->err, TSR_EINVAL, "%s:%zu:%zu: %s: %s", c->file, at->line, at->col, path,
                    msg[0] ? msg : tsr_status_name(st));
}

/* Open a layout source's file, once per design; the reader's message ("chip.gds: byte 1234:
 * ...", DXF: "line N") gets our position and key path. */
static tsr_status
open_layout(dctx *c, tsr_source *s, const ynode *at, const kpath *p)
{
    tsr_error lerr = {TSR_OK, ""};
    tsr_status st = tsr_src_layout_open(s, c->has_pitch ? tsr_dlen_nm(&c->pitch) : 0, &lerr);
    return st == TSR_OK ? TSR_OK : source_fail(c, st, lerr.msg, at, p);
}

/* Lay a text source out, once per design: a font or glyph error gets our position and the
 * key it is about (`font` for the file, `text` for a character). */
static tsr_status
open_text(dctx *c, tsr_source *s, const ynode *m, const kpath *p)
{
    tsr_error terr = {TSR_OK, ""};
    tsr_status st = tsr_src_text_open(s, &terr);
    if (st == TSR_OK)
        return TSR_OK;
    if (st == TSR_ENOMEM)
        return tsr_doom(c);
    const char *key = strstr(terr.msg, "of the text") || strstr(terr.msg, "UTF-8") ? "text"
                      : s->path                                                   ? "font"
                                                                                  : "text";
    size_t at = tsr_ymap_find(m, key);
    const ynode *where = at != (size_t)-1 ? ymap_val(m, at) : m;
    kpath kp = KP_KEY(p, key);
    const char *msg = terr.msg;
    if (strncmp(msg, "font: ", 6) == 0) /* text/ names the font "font": the key path says it */
        msg += 6;
    return source_fail(c, st, msg, where, &kp);
}

static tsr_status parse_source(dctx *c, const ynode *m, const kpath *p, tsr_node *node);

static bool
is_boolean(tsr_source_kind k)
{
    return strcmp(tsr_source_descs[k].disc_key, "boolean") == 0;
}

/* A boolean's operand list `key` (source mappings: shapes, text, booleans) as outlines into
 * out; `a` is required, `b` may be left out. */
/* Keep operand o (taken: its outlines dropped) on boolean s, for printing the design back
 * (`tessera check --pixels`); false when out of memory (o freed). */
static bool
keep_operand(tsr_source *s, tsr_source *o, bool is_a)
{
    size_t n = s->nop_a + s->nop_b;
    tsr_source *ops = realloc(s->operands, (n + 1) * sizeof *ops);
    if (!ops) {
        tsr_source_free(o);
        return false;
    }
    s->operands = ops;
    tsr_src_text_close(o); /* the outlines are in s's already */
    tsr_src_shape_release(o);
    ops[n] = *o;
    if (is_a)
        s->nop_a++;
    else
        s->nop_b++;
    return true;
}

static tsr_status
parse_operands(dctx *c, const ynode *m, const kpath *p, const char *key, tsr_source *s,
               tsr_geom_polys *out)
{
    size_t at = tsr_ymap_find(m, key);
    if (at == (size_t)-1)
        return strcmp(key, "a") == 0 ? tsr_derr(c, m, p, "a boolean needs its operands: 'a' "
                                                         "(and 'b'), lists of shapes and text")
                                     : TSR_OK;
    const ynode *v = ymap_val(m, at);
    kpath kp = KP_KEY(p, key);
    tsr_status st = tsr_dwant_seq(c, v, &kp, (size_t)-1);
    for (size_t i = 0; st == TSR_OK && i < v->n; i++) {
        kpath ki = KP_INDEX(&kp, i);
        tsr_node tmp;
        memset(&tmp, 0, sizeof tmp);
        st = parse_source(c, v->kids[i], &ki, &tmp);
        if (st == TSR_OK) {
            tsr_error oerr = {TSR_OK, ""};
            st = tsr_src_boolean_operand(tmp.source, s->tolerance, out, &oerr);
            if (st == TSR_ENOMEM)
                st = tsr_doom(c);
            else if (st != TSR_OK)
                st = tsr_derr(c, v->kids[i], &ki, "%s", oerr.msg);
        }
        if (tmp.source && st == TSR_OK) {
            if (!keep_operand(s, tmp.source, strcmp(key, "a") == 0))
                st = tsr_doom(c);
            free(tmp.source);
        } else if (tmp.source) {
            tsr_source_free(tmp.source);
            free(tmp.source);
        }
    }
    return st;
}

/* A boolean's outlines: its operands, the operation, the offset. */
static tsr_status
make_boolean(dctx *c, tsr_source *s, const ynode *m, const kpath *p)
{
    tsr_geom_polys a, b;
    tsr_geom_polys_init(&a);
    tsr_geom_polys_init(&b);
    tsr_status st = parse_operands(c, m, p, "a", s, &a);
    if (st == TSR_OK)
        st = parse_operands(c, m, p, "b", s, &b);
    if (st != TSR_OK) {
        tsr_geom_polys_free(&a);
        tsr_geom_polys_free(&b);
        return st;
    }
    tsr_error berr = {TSR_OK, ""};
    st = tsr_src_boolean_make(s, &a, &b, &berr); /* takes a and b */
    if (st == TSR_ENOMEM)
        return tsr_doom(c);
    return st == TSR_OK ? TSR_OK : tsr_derr(c, m, p, "%s", berr.msg);
}

/* A source mapping: exactly one discriminator key, then the kind's parameter table. */
static OUT_OF_LINE tsr_status
parse_source(dctx *c, const ynode *m, const kpath *p, tsr_node *node)
{
    const char *discs[TSR_SRC_COUNT + 1];
    const char **keys = NULL;
    tsr_status st = tsr_dwant_map(c, m, p);
    if (st != TSR_OK)
        return st;
    disc_keys(discs);
    size_t found = (size_t)-1;
    for (size_t i = 0; discs[i]; i++) {
        size_t at = tsr_ymap_find(m, discs[i]);
        if (at == (size_t)-1)
            continue;
        if (found != (size_t)-1) {
            size_t later = at > found ? at : found, earlier = at > found ? found : at;
            kpath kp = KP_KEY(p, ymap_key(m, later)->s);
            char list[256];
            disc_list(discs, list, sizeof list);
            return tsr_derr(c, ymap_key(m, later), &kp, "a source has one of %s; '%s' already "
                            "given", list, ymap_key(m, earlier)->s);
        }
        found = at;
    }
    if (found == (size_t)-1) {
        /* a near-miss key ("shap") is the likelier mistake than a missing one */
        for (size_t i = 0; i < ymap_count(m); i++) {
            const char *dym = tsr_did_you_mean(ymap_key(m, i)->s, discs);
            if (dym) {
                kpath kp = KP_KEY(p, ymap_key(m, i)->s);
                return tsr_derr(c, ymap_key(m, i), &kp, "unknown key '%s' (did you mean '%s'?)",
                                ymap_key(m, i)->s, dym);
            }
        }
        char list[256];
        disc_list(discs, list, sizeof list);
        return tsr_derr(c, m, p, "a source needs one of %s", list);
    }
    const char *disc = ymap_key(m, found)->s;
    const ynode *dv = ymap_val(m, found);
    kpath kd = KP_KEY(p, disc);
    const tsr_source_desc *desc = NULL;
    const char *values[TSR_SRC_COUNT + 1];
    size_t nv = 0;
    for (size_t i = 0; i < TSR_SRC_COUNT; i++) {
        if (strcmp(tsr_source_descs[i].disc_key, disc) != 0)
            continue;
        if (!tsr_source_descs[i].disc_value) { /* image: the value is the path */
            desc = &tsr_source_descs[i];
            break;
        }
        values[nv++] = tsr_source_descs[i].disc_value;
    }
    values[nv] = NULL;
    if (!desc) {
        int k;
        if ((st = tsr_dget_enum(c, dv, &kd, disc, values, &k)) != TSR_OK)
            return st;
        for (size_t i = 0; i < TSR_SRC_COUNT && !desc; i++)
            if (strcmp(tsr_source_descs[i].disc_key, disc) == 0 && tsr_source_descs[i].disc_value &&
                strcmp(tsr_source_descs[i].disc_value, values[k]) == 0)
                desc = &tsr_source_descs[i];
    }

    tsr_source *s = malloc(sizeof *s);
    if (!s)
        return tsr_doom(c);
    tsr_source_defaults(s, desc->kind);
    node->source = s; /* owned by the node from here on: freed with it on any failure */
    if (!(s->where = tsr_dwhere(c, m, p)))
        return tsr_doom(c);

    /* keys: the discriminator plus the kind's table */
    if (!(keys = table_keys(desc->params, desc->nparams)))
        return tsr_doom(c);
    const char *disc1[4] = {disc, NULL, NULL, NULL};
    if (is_boolean(desc->kind)) { /* the operand lists, read below */
        disc1[1] = "a";
        disc1[2] = "b";
    }
    st = tsr_dcheck_keys(c, m, p, disc1, keys, NULL);
    free(keys);
    if (st != TSR_OK)
        return st;
    if (desc->kind == TSR_SRC_TEXT) {
        /* `text: STRING`: the string itself, as written */
        tsr_param pm[1] = {{disc, TSR_P_NAME, offsetof(tsr_source, text), 0, 0, 0, 0, NULL, NULL}};
        if ((st = tsr_dparse_params(c, m, p, pm, 1, s)) != TSR_OK)
            return st;
    } else if (!desc->disc_value) {
        /* the generic PATH parser resolves against the design's folder */
        tsr_param pm[1] = {{disc, TSR_P_PATH, offsetof(tsr_source, path), 0, 0, 0, 0, NULL, NULL}};
        if ((st = tsr_dparse_params(c, m, p, pm, 1, s)) != TSR_OK)
            return st;
    }
    if ((st = tsr_dparse_params(c, m, p, desc->params, desc->nparams, s)) != TSR_OK)
        return st;
    dcheck chk = {{check_fail}, c, m, p, false};
    if ((st = check_result(&chk, tsr_source_check(s, &chk.base))) != TSR_OK)
        return st;
    if (s->kind == TSR_SRC_IMAGE && c->opts && (c->opts->read_image || c->opts->read_size))
        return read_image(c, s, dv, &kd);
    if (s->kind == TSR_SRC_LAYOUT)
        return open_layout(c, s, dv, &kd);
    if (s->kind == TSR_SRC_TEXT)
        return open_text(c, s, m, p);
    if (is_boolean(s->kind))
        return make_boolean(c, s, m, p);
    /* an exact shape's rings, once (its numbers are checked already) */
    tsr_error serr = {TSR_OK, ""};
    st = tsr_src_shape_prepare(s, &serr);
    return st == TSR_OK ? TSR_OK : source_fail(c, st, serr.msg, m, p);
}

/* ---- nodes and edges ------------------------------------------------------------------------- */

static tsr_status parse_node(dctx *c, const ynode *m, const kpath *p, const char *name,
                             tsr_node **out);

static int
named_cmp(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

static named *
named_find(dctx *c, const char *name)
{
    named key = {name, NULL, NULL, NULL, 0};
    return c->nnames ? bsearch(&key, c->names, c->nnames, sizeof key, named_cmp) : NULL;
}

static const kpath nodes_path = {NULL, "nodes", 0};

/* Load a named node (and, first, what it refs). */
static tsr_status
load_named(dctx *c, named *nm)
{
    nm->state = 1;
    c->stack[c->nstack++] = nm;
    kpath kp = KP_KEY(&nodes_path, nm->name);
    tsr_status st = parse_node(c, nm->val, &kp, nm->name, &nm->node);
    c->nstack--;
    nm->state = 2;
    return st;
}

static OUT_OF_LINE tsr_status
unknown_ref(dctx *c, const ynode *v, const kpath *p, const char *name)
{
    const char *best = NULL;
    size_t bestd = 3;
    for (size_t i = 0; i < c->nnames; i++) {
        size_t d = tsr_edit_distance(name, c->names[i].name, 2);
        if (d < bestd) { /* names are sorted: ties go to the first */
            bestd = d;
            best = c->names[i].name;
        }
    }
    if (best)
        return tsr_derr(c, v, p, "unknown node '%.100s' (did you mean '%.100s'?)", name, best);
    if (!c->nnames)
        return tsr_derr(c, v, p, "unknown node '%.100s' (the design has no nodes: section)", name);
    return tsr_derr(c, v, p, "unknown node '%.100s'", name);
}

/* The chain from nm's first appearance on the ref stack back to nm. */
static OUT_OF_LINE tsr_status
ref_cycle(dctx *c, const ynode *v, const kpath *p, const named *nm)
{
    char chain[512];
    size_t len = 0, from = 0;
    for (size_t i = 0; i < c->nstack; i++)
        if (c->stack[i] == nm)
            from = i;
    for (size_t i = from; i < c->nstack && len < sizeof chain; i++)
        len += (size_t)snprintf(chain + len, sizeof chain - len, "nodes.%s -> ", c->stack[i]->name);
    if (len < sizeof chain)
        snprintf(chain + len, sizeof chain - len, "nodes.%s", nm->name);
    return tsr_derr(c, v, p, "ref cycle: %s", chain);
}

/* `ref: name`: the shared node, loaded on first use; a ref back into the nodes being loaded
 * is a cycle, reported with the whole chain. */
static tsr_status
resolve_ref(dctx *c, const ynode *v, const kpath *p, tsr_node **out)
{
    const char *name;
    tsr_status st = tsr_dget_str(c, v, p, &name);
    if (st != TSR_OK)
        return st;
    named *nm = named_find(c, name);
    if (!nm)
        return unknown_ref(c, v, p, name);
    if (nm->state == 1)
        return ref_cycle(c, v, p, nm);
    if (nm->state == 0 && (st = load_named(c, nm)) != TSR_OK)
        return st;
    *out = nm->node;
    return TSR_OK;
}

static const char *const *
trait_names(const char **buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; tsr_traits[i] && n + 1 < cap; i++)
        buf[n++] = tsr_traits[i]->name;
    buf[n] = NULL;
    return buf;
}

/* An unknown edge key: a near miss, or a parameter of another trait. */
static OUT_OF_LINE tsr_status
edge_key_error(dctx *c, const ynode *key, const kpath *p, const tsr_trait *t,
               const char *const *tkeys)
{
    kpath kp = KP_KEY(p, key->s);
    const char *const *lists[2] = {tsr_edge_keys, tkeys};
    const char *dym = tsr_best_of(key->s, lists, 2);
    if (dym)
        return tsr_derr(c, key, &kp, "unknown key '%.100s' (did you mean '%s'?)", key->s, dym);
    for (size_t i = 0; tsr_traits[i]; i++)
        for (size_t j = 0; j < tsr_traits[i]->nparams; j++)
            if (strcmp(tsr_traits[i]->params[j].key, key->s) == 0)
                return tsr_derr(c, key, &kp,
                                "unknown key '%.100s' (a parameter of trait '%s', not '%s')",
                                key->s, tsr_traits[i]->name, t->name);
    return tsr_derr(c, key, &kp, "unknown key '%.100s'", key->s);
}

/* Everything of an edge but its child: where, trait, keys, common and trait parameters. */
static OUT_OF_LINE tsr_status
edge_head(dctx *c, const ynode *m, const kpath *p, tsr_edge *e)
{
    const char *tnames[32], **tkeys = NULL;
    const char *tname;
    tsr_status st = tsr_dwant_map(c, m, p);
    if (st != TSR_OK)
        return st;
    if (!(e->where = tsr_dwhere(c, m, p)))
        return tsr_doom(c);
    size_t ti = tsr_ymap_find(m, "trait");
    if (ti == (size_t)-1)
        return tsr_derr(c, m, p, "missing required key 'trait'");
    kpath kt = KP_KEY(p, "trait");
    const ynode *tv = ymap_val(m, ti);
    if ((st = tsr_dget_str(c, tv, &kt, &tname)) != TSR_OK)
        return st;
    const tsr_trait *t = tsr_trait_find(tname);
    if (!t) {
        const char *dym = tsr_did_you_mean(tname, trait_names(tnames, 32));
        if (dym)
            return tsr_derr(c, tv, &kt, "unknown trait '%.100s' (did you mean '%s'?)", tname, dym);
        return tsr_derr(c, tv, &kt, "unknown trait '%.100s'", tname);
    }
    e->trait = t;
    if (!(e->params = calloc(1, t->params_size ? t->params_size : 1)))
        return tsr_doom(c);
    if (t->defaults)
        t->defaults(e->params);

    if (!(tkeys = table_keys(t->params, t->nparams)))
        return tsr_doom(c);
    for (size_t i = 0; i < ymap_count(m); i++) {
        const char *k = ymap_key(m, i)->s;
        bool known = false;
        for (size_t j = 0; tsr_edge_keys[j] && !known; j++)
            known = strcmp(tsr_edge_keys[j], k) == 0;
        for (size_t j = 0; tkeys[j] && !known; j++)
            known = strcmp(tkeys[j], k) == 0;
        if (!known) {
            st = edge_key_error(c, ymap_key(m, i), p, t, tkeys);
            free(tkeys);
            return st;
        }
    }
    free(tkeys);

    dedge de = {TSR_BLEND_OVER, {0, 0}, 0};
    if ((st = tsr_dparse_params(c, m, p, edge_params, 3, &de)) != TSR_OK)
        return st;
    e->blend = (tsr_blend)de.blend;
    e->offset[0] = de.offset[0];
    e->offset[1] = de.offset[1];
    e->mask = de.mask;
    return tsr_dparse_params(c, m, p, t->params, t->nparams, e->params);
}

static OUT_OF_LINE tsr_status
edge_check(dctx *c, const ynode *m, const kpath *p, tsr_edge *e)
{
    if (!e->trait->check)
        return TSR_OK;
    dcheck chk = {{check_fail}, c, m, p, false};
    return check_result(&chk, e->trait->check(e, &chk.base));
}

static OUT_OF_LINE tsr_status
child_count_error(dctx *c, const ynode *m, const kpath *p, size_t ni, size_t ri)
{
    if (ni != (size_t)-1) {
        size_t later = ni > ri ? ni : ri;
        kpath kp = KP_KEY(p, ymap_key(m, later)->s);
        return tsr_derr(c, ymap_key(m, later), &kp, "give either 'node' or 'ref', not both");
    }
    return tsr_derr(c, m, p, "missing the child: give 'node' (inline) or 'ref' (a named node)");
}

static tsr_status
parse_edge(dctx *c, const ynode *m, const kpath *p, tsr_edge *e)
{
    tsr_status st = edge_head(c, m, p, e);
    if (st != TSR_OK)
        return st;
    size_t ni = tsr_ymap_find(m, "node"), ri = tsr_ymap_find(m, "ref");
    if ((ni == (size_t)-1) == (ri == (size_t)-1))
        return child_count_error(c, m, p, ni, ri);
    if (ni != (size_t)-1) {
        kpath kn = KP_KEY(p, "node");
        char *name = tsr_kpath_strdup(&kn);
        if (!name)
            return tsr_doom(c);
        st = parse_node(c, ymap_val(m, ni), &kn, name, &e->child);
        free(name);
    } else {
        kpath kr = KP_KEY(p, "ref");
        st = resolve_ref(c, ymap_val(m, ri), &kr, &e->child);
    }
    if (st != TSR_OK)
        return st;
    return edge_check(c, m, p, e);
}

static tsr_status
parse_children(dctx *c, const ynode *v, const kpath *p, tsr_node *n)
{
    tsr_status st = tsr_dwant_seq(c, v, p, (size_t)-1);
    if (st != TSR_OK || v->n == 0)
        return st;
    if (!(n->edges = calloc(v->n, sizeof *n->edges)))
        return tsr_doom(c);
    for (size_t i = 0; i < v->n; i++) {
        /* counted before parsing: a half-built edge is freed with the node */
        n->nedges = i + 1;
        kpath ki = KP_INDEX(p, i);
        if ((st = parse_edge(c, v->kids[i], &ki, &n->edges[i])) != TSR_OK)
            return st;
    }
    return TSR_OK;
}

/* Everything of a node but its children. The node is on c->all before anything can fail. */
static OUT_OF_LINE tsr_status
node_head(dctx *c, const ynode *m, const kpath *p, const char *name, tsr_node **out)
{
    tsr_status st = TSR_OK;
    tsr_node *n;
    if ((st = tsr_dwant_map(c, m, p)) != TSR_OK)
        return st;
    if (c->depth >= TSR_DESIGN_MAX_DEPTH)
        return tsr_derr(c, m, p, "nodes nested deeper than %d (inline nodes and ref: chains count)",
                        TSR_DESIGN_MAX_DEPTH);
    if (!(n = node_new(c)))
        return tsr_doom(c);
    *out = n;
    if (!(n->name = strdup(name)) || !(n->where = tsr_dwhere(c, m, p)))
        return tsr_doom(c);
    if ((st = tsr_dcheck_keys(c, m, p, node_keys, NULL, NULL)) != TSR_OK)
        return st;
    dnode dn = {{0, 0}, c->tile, 0.0f};
    if ((st = tsr_dparse_params(c, m, p, node_params, 3, &dn)) != TSR_OK)
        return st;
    n->tile = dn.tile;
    n->fill = dn.fill;

    const ynode *src = tsr_ymap_get(m, "source");
    if (src) {
        kpath ks = KP_KEY(p, "source");
        if ((st = parse_source(c, src, &ks, n)) != TSR_OK)
            return st;
    }

    size_t si = tsr_ymap_find(m, "size");
    const tsr_source *s = n->source;
    if (si != (size_t)-1) {
        const ynode *sv = ymap_val(m, si);
        kpath kp = KP_KEY(p, "size");
        if (s && s->iw && (dn.size[0] != s->iw || dn.size[1] != s->ih))
            return tsr_derr(c, sv, &kp, "[%lld, %lld] differs from the image size [%lld, %lld]",
                            (long long)dn.size[0], (long long)dn.size[1], (long long)s->iw,
                            (long long)s->ih);
        int64_t a, bytes;
        if (!tsr_mul_checked(dn.size[0], dn.size[1], &a) || !tsr_mul_checked(a, 4, &bytes) ||
            bytes > ((int64_t)1 << 62))
            return tsr_derr(c, sv, &kp, "w*h*4 bytes must be <= 2^62 (w = %lld, h = %lld)",
                            (long long)dn.size[0], (long long)dn.size[1]);
        n->w = dn.size[0];
        n->h = dn.size[1];
    } else if (s && s->iw) {
        n->w = s->iw;
        n->h = s->ih;
    } else if (s && s->kind == TSR_SRC_LAYOUT && s->lay) {
        /* a layout's node defaults to its window, in pixels rounded up */
        int64_t w, h, a, bytes;
        tsr_src_layout_size(s, &w, &h);
        if (!tsr_mul_checked(w, h, &a) || !tsr_mul_checked(a, 4, &bytes) ||
            bytes > ((int64_t)1 << 62))
            return tsr_derr(c, m, p, "the layout's window is %lldx%lld px: w*h*4 bytes must be "
                            "<= 2^62 (give 'size')", (long long)w, (long long)h);
        n->w = w;
        n->h = h;
    } else if (s && s->kind == TSR_SRC_IMAGE) {
        return tsr_derr(c, m, p,
                        "missing required key 'size' (images are not decoded by this loader, so "
                        "the size cannot come from the image)");
    } else {
        return tsr_derr(c, m, p, "missing required key 'size'");
    }
    return TSR_OK;
}

/* A node mapping. `name` is copied. */
static tsr_status
parse_node(dctx *c, const ynode *m, const kpath *p, const char *name, tsr_node **out)
{
    tsr_status st = node_head(c, m, p, name, out);
    if (st != TSR_OK)
        return st;
    c->depth++;
    const ynode *ch = tsr_ymap_get(m, "children");
    if (ch) {
        kpath kc = KP_KEY(p, "children");
        st = parse_children(c, ch, &kc, *out);
    }
    c->depth--;
    return st;
}

/* ---- the whole design ------------------------------------------------------------------------ */

static tsr_status
parse_output(dctx *c, const ynode *m, tsr_output *out)
{
    static const char *const out_keys[] = {"depth", "range", "calibration", "order", "swath",
                                           "dither", "stage", "planes", NULL};
    const char **keys = NULL;
    kpath p = KP_KEY(NULL, "output");
    tsr_status st;
    if ((st = tsr_dwant_map(c, m, &p)) != TSR_OK)
        return st;
    if ((st = tsr_dcheck_keys(c, m, &p, out_keys, NULL, NULL)) != TSR_OK)
        return st;
    if ((st = tsr_dparse_params(c, m, &p, tsr_dtab_output, tsr_dtab_noutput, out)) != TSR_OK)
        return st;
    const ynode *v;
    if ((v = tsr_ymap_get(m, "depth")) && (out->depth == 1 || out->depth == 2 ||
                                           out->depth == 4)) {
        /* dithered from 8-bit samples (docs/outputs.md) */
        out->bits = (int)out->depth;
        out->depth = 8;
        out->dither = TSR_DITHER_BAYER;
        out->dither_size = 8;
    }
    if ((v = tsr_ymap_get(m, "depth")) && out->depth != 8 && out->depth != 16) {
        kpath kp = KP_KEY(&p, "depth");
        return tsr_derr(c, v, &kp, "must be 1, 2, 4, 8 or 16, got %s", v->s);
    }
    if ((v = tsr_ymap_get(m, "dither"))) {
        kpath kp = KP_KEY(&p, "dither");
        tsr_dither_kind kind = TSR_DITHER_BAYER;
        tsr_error de;
        if (!out->bits)
            return tsr_derr(c, v, &kp, "only with depth 1, 2 or 4");
        if (v->kind != Y_SCALAR)
            return tsr_derr(c, v, &kp, "expected threshold, bayerN or blueN");
        if (tsr_dither_spec(v->s, &kind, &out->dither_size, &de) != TSR_OK)
            return tsr_derr(c, v, &kp, "%s",
                            strncmp(de.msg, "dither: ", 8) == 0 ? de.msg + 8 : de.msg);
        out->dither = (int)kind;
    }
    if ((v = tsr_ymap_get(m, "range")) && out->range[0] == out->range[1]) {
        kpath kp = KP_KEY(&p, "range");
        return tsr_derr(c, v, &kp, "lo and hi must differ");
    }
    if ((v = tsr_ymap_get(m, "calibration"))) {
        kpath kp = KP_KEY(&p, "calibration");
        const tsr_points *cal = &out->calibration;
        for (size_t i = 0; i < cal->n; i++) {
            kpath ki = KP_INDEX(&kp, i), kt = KP_INDEX(&ki, 0), kc = KP_INDEX(&ki, 1);
            const ynode *pt = v->kids[i];
            double t = cal->p[i][0], cv = cal->p[i][1];
            if (i == 0 && t != 0)
                return tsr_derr(c, pt->kids[0], &kt, "the first t must be 0, got %s",
                                pt->kids[0]->s);
            if (i > 0 && !(t > cal->p[i - 1][0]))
                return tsr_derr(c, pt->kids[0], &kt, "t must be strictly increasing (%s after %s)",
                                pt->kids[0]->s, v->kids[i - 1]->kids[0]->s);
            if (i == cal->n - 1 && t != 1)
                return tsr_derr(c, pt->kids[0], &kt, "the last t must be 1, got %s",
                                pt->kids[0]->s);
            if (!(cv >= 0 && cv <= 1))
                return tsr_derr(c, pt->kids[1], &kc, "c must be in 0..1, got %s", pt->kids[1]->s);
        }
    }
    const ynode *stg = tsr_ymap_get(m, "stage");
    if (stg) { /* the machine's scan (docs/outputs.md §7) */
        static const char *const bidir_names[] = {"none", "rows", "swaths", NULL};
        static const char *const feather_names[] = {"linear", "cosine", NULL};
        static const tsr_param stage_params[] = {
            {"bidirectional", TSR_P_ENUM, offsetof(tsr_output, bidir), 0, 0, 0, 0, bidir_names,
             "none | rows | swaths: every other row, or swath, right to left"},
            {"mirror-x", TSR_P_BOOL, offsetof(tsr_output, mirror_x), 0, 0, 0, 0, NULL,
             "the machine's x runs the other way"},
            {"y-up", TSR_P_BOOL, offsetof(tsr_output, y_up), 0, 0, 0, 0, NULL,
             "the machine's y runs upwards"},
            {"overlap", TSR_P_INT, offsetof(tsr_output, overlap), TSR_PF_RANGE, 0,
             (double)UINT32_MAX, 0, NULL, "columns each swath shares with the next, px"},
            {"feather", TSR_P_ENUM, offsetof(tsr_output, feather), 0, 0, 0, 0, feather_names,
             "linear | cosine: the dose's weights across an overlap"},
            {"overscan", TSR_P_INT, offsetof(tsr_output, overscan), TSR_PF_RANGE, 0,
             (double)UINT32_MAX, 0, NULL, "samples padded at both ends of every row, px"},
            {"overscan-value", TSR_P_INT, offsetof(tsr_output, overscan_value),
             TSR_PF_RANGE | TSR_PF_UNITLESS, 0, 65535, 0, NULL,
             "the padding's sample (a level at depth 1, 2, 4), default 0: laser off"},
        };
        const size_t nstage = sizeof stage_params / sizeof stage_params[0];
        kpath kg = KP_KEY(&p, "stage");
        if ((st = tsr_dwant_map(c, stg, &kg)) != TSR_OK)
            return st;
        if (!(keys = table_keys(stage_params, nstage)))
            return tsr_doom(c);
        st = tsr_dcheck_keys(c, stg, &kg, keys, NULL, NULL);
        free(keys);
        keys = NULL;
        if (st != TSR_OK)
            return st;
        if ((st = tsr_dparse_params(c, stg, &kg, stage_params, nstage, out)) != TSR_OK)
            return st;
        const ynode *bv = tsr_ymap_get(stg, "bidirectional");
        if (bv && out->bidir == 2 && out->order != TSR_ORDER_SWATH) {
            kpath kb = KP_KEY(&kg, "bidirectional");
            return tsr_derr(c, bv, &kb, "swaths: only with order: swath (use rows)");
        }
        /* docs/outputs.md §8: an overlap is between swaths, and its feathered dose needs
         * gray samples (two dithered passes would not add up to the pixel's level) */
        const ynode *ov = tsr_ymap_get(stg, "overlap");
        kpath ko = KP_KEY(&kg, "overlap");
        if (ov && out->overlap > 0 && out->order != TSR_ORDER_SWATH)
            return tsr_derr(c, ov, &ko, "only with order: swath");
        if (ov && out->overlap > 0 && out->bits)
            return tsr_derr(c, ov, &ko, "a feathered overlap needs depth 8 or 16, not %d",
                            out->bits);
        const ynode *fv = tsr_ymap_get(stg, "feather");
        if (fv && out->overlap == 0) {
            kpath kf = KP_KEY(&kg, "feather");
            return tsr_derr(c, fv, &kf, "only with an overlap");
        }
        const ynode *vv = tsr_ymap_get(stg, "overscan-value");
        int64_t vmax = out->bits ? (1 << out->bits) - 1 : out->depth == 16 ? 65535 : 255;
        if (vv && out->overscan_value > vmax) {
            kpath kv = KP_KEY(&kg, "overscan-value");
            return tsr_derr(c, vv, &kv, "must be 0..%lld at %d bit", (long long)vmax,
                            out->bits ? out->bits : (int)out->depth);
        }
    }
    if ((v = tsr_ymap_get(m, "planes"))) { /* docs/outputs.md §2 */
        static const tsr_param planes_param[] = {
            {"planes", TSR_P_INT, offsetof(tsr_output, planes), TSR_PF_RANGE | TSR_PF_UNITLESS,
             1, (double)UINT32_MAX, 0, NULL, "rows of a swath sent as bit planes together"},
        };
        kpath kp = KP_KEY(&p, "planes");
        if ((st = tsr_dparse_params(c, m, &p, planes_param, 1, out)) != TSR_OK)
            return st;
        if (out->bits)
            return tsr_derr(c, v, &kp, "bit planes are of depth 8 or 16 samples, not depth %d",
                            out->bits);
    }
    const ynode *sw = tsr_ymap_get(m, "swath");
    if (out->order == TSR_ORDER_SWATH && !sw)
        return tsr_derr(c, m, &p, "missing required key 'swath' (order is swath)");
    if (sw) {
        kpath ks = KP_KEY(&p, "swath");
        if (out->order != TSR_ORDER_SWATH) {
            kpath kk = KP_KEY(&p, "swath");
            return tsr_derr(c, ymap_key(m, tsr_ymap_find(m, "swath")), &kk,
                            "only allowed with order: swath");
        }
        if ((st = tsr_dwant_map(c, sw, &ks)) != TSR_OK)
            return st;
        if (!(keys = table_keys(tsr_dtab_swath, tsr_dtab_nswath)))
            return tsr_doom(c);
        st = tsr_dcheck_keys(c, sw, &ks, keys, NULL, NULL);
        free(keys);
        if (st != TSR_OK)
            return st;
        if ((st = tsr_dparse_params(c, sw, &ks, tsr_dtab_swath, tsr_dtab_nswath, out)) != TSR_OK)
            return st;
    }
    return TSR_OK;
}

/* The `nodes:` section: names sorted for lookup, a ref stack as deep as there are names. */
static tsr_status
index_names(dctx *c, const ynode *m)
{
    kpath p = nodes_path;
    tsr_status st = tsr_dwant_map(c, m, &p);
    if (st != TSR_OK)
        return st;
    size_t n = ymap_count(m);
    if (!n)
        return TSR_OK;
    if (!(c->names = calloc(n, sizeof *c->names)) || !(c->stack = calloc(n, sizeof *c->stack)))
        return tsr_doom(c);
    for (size_t i = 0; i < n; i++) {
        const ynode *k = ymap_key(m, i);
        if (k->len == 0) {
            kpath kp = KP_KEY(&p, "");
            return tsr_derr(c, k, &kp, "a node name must not be empty");
        }
        c->names[i] = (named){k->s, k, ymap_val(m, i), NULL, 0};
    }
    c->nnames = n;
    qsort(c->names, n, sizeof *c->names, named_cmp);
    return TSR_OK;
}

/* Topological order of what root reaches, children first, root last; iterative so a deep
 * design costs heap, not stack. Sets every reached node's id; the others keep SIZE_MAX. */
static tsr_status
order_nodes(dctx *c, tsr_node *root, tsr_node ***order, size_t *norder)
{
    const size_t unseen = SIZE_MAX, open = SIZE_MAX - 1;
    struct frame {
        tsr_node *n;
        size_t next;
    } *stack = NULL;
    tsr_node **out = NULL;
    size_t nout = 0, depth = 0;
    for (size_t i = 0; i < c->nall; i++)
        c->all[i]->id = unseen;
    if (!(stack = malloc(c->nall * sizeof *stack)) || !(out = malloc(c->nall * sizeof *out)))
        goto oom;
    stack[depth++] = (struct frame){root, 0};
    root->id = open;
    while (depth) {
        struct frame *f = &stack[depth - 1];
        if (f->next < f->n->nedges) {
            tsr_node *ch = f->n->edges[f->next++].child;
            if (ch->id == unseen) {
                ch->id = open;
                stack[depth++] = (struct frame){ch, 0};
            }
            continue;
        }
        f->n->id = nout;
        out[nout++] = f->n;
        depth--;
    }
    free(stack);
    *order = out;
    *norder = nout;
    return TSR_OK;
oom:
    free(stack);
    free(out);
    return tsr_doom(c);
}

/* The longest chain of nodes below root, whatever the order the loader met them in: a ref:
 * chain written leaves first never recurses in the loader, but the engine recurses once per
 * level when it renders, so TSR_DESIGN_MAX_DEPTH bounds the chain itself. `order` is
 * children first; ids are positions in it. */
static tsr_status
check_depth(dctx *c, tsr_node **order, size_t n)
{
    size_t *level = malloc(n * sizeof *level);
    if (!level)
        return tsr_doom(c);
    tsr_status st = TSR_OK;
    for (size_t i = 0; i < n && st == TSR_OK; i++) {
        const tsr_node *x = order[i];
        size_t l = 1;
        for (size_t k = 0; k < x->nedges; k++)
            if (level[x->edges[k].child->id] + 1 > l)
                l = level[x->edges[k].child->id] + 1;
        level[i] = l;
        if (l > TSR_DESIGN_MAX_DEPTH)
            st = tsr_fail(c->err, TSR_EINVAL,
                          "%s: nodes nested deeper than %d (inline nodes and ref: chains count)",
                          x->where, TSR_DESIGN_MAX_DEPTH);
    }
    free(level);
    return st;
}

/* `pixel: 0.5um`: the pitch every length with a unit is divided by (docs/units.md). Read
 * before anything that holds a length. */
static tsr_status
parse_pitch(dctx *c, const ynode *v, tsr_design *d)
{
    kpath kp = KP_KEY(NULL, "pixel");
    const char *s;
    tsr_status st = tsr_dget_str(c, v, &kp, &s);
    if (st != TSR_OK)
        return st;
    int k = v->plain ? tsr_dlen_parse(s, &c->pitch) : -1;
    if (k == 0 || k < 0)
        return tsr_derr(c, v, &kp,
                        "expected a length with a unit (nm, um or mm), e.g. 0.5um, got '%.64s'", s);
    if (c->pitch.neg || c->pitch.m == 0)
        return tsr_derr(c, v, &kp, "must be > 0, got %.64s", s);
    c->has_pitch = true;
    c->pitch_text = s;
    d->pixel_nm = tsr_dlen_nm(&c->pitch);
    return TSR_OK;
}

static tsr_status
load_tree(dctx *c, const ynode *top, tsr_design *d, tsr_node **root)
{
    tsr_status st;
    if (!top)
        return tsr_fail(c->err, TSR_EINVAL,
                        "%s:1:1: empty design (expected a mapping with "
                        "'tessera: 1' and 'root')",
                        c->file);
    if (top->kind != Y_MAP)
        return tsr_derr(c, top, NULL, "a design is a mapping (tessera, output, nodes, root)");
    if ((st = tsr_dcheck_keys(c, top, NULL, top_keys, NULL, NULL)) != TSR_OK)
        return st;
    dtop t = {0, 512};
    if ((st = tsr_dparse_params(c, top, NULL, top_params, 2, &t)) != TSR_OK)
        return st;
    if (t.tessera != 1) {
        kpath kp = KP_KEY(NULL, "tessera");
        return tsr_derr(c, tsr_ymap_get(top, "tessera"), &kp,
                        "unsupported format version %lld (this tessera reads 1)",
                        (long long)t.tessera);
    }
    c->tile = d->tile = t.tile;
    const ynode *v;
    if ((v = tsr_ymap_get(top, "pixel")) && (st = parse_pitch(c, v, d)) != TSR_OK)
        return st;
    if ((v = tsr_ymap_get(top, "name"))) {
        kpath kp = KP_KEY(NULL, "name");
        const char *name;
        if ((st = tsr_dget_str(c, v, &kp, &name)) != TSR_OK)
            return st;
        if (!(d->name = strdup(name)))
            return tsr_doom(c);
    }
    if ((v = tsr_ymap_get(top, "output")) && (st = parse_output(c, v, &d->out)) != TSR_OK)
        return st;
    const ynode *nodes = tsr_ymap_get(top, "nodes");
    if (nodes) {
        if ((st = index_names(c, nodes)) != TSR_OK)
            return st;
        for (size_t i = 0; i < ymap_count(nodes); i++) {
            named *nm = named_find(c, ymap_key(nodes, i)->s);
            if (nm->state == 0 && (st = load_named(c, nm)) != TSR_OK)
                return st;
        }
    }
    size_t ri = tsr_ymap_find(top, "root");
    if (ri == (size_t)-1)
        return tsr_derr(c, top, NULL, "missing required key 'root'");
    kpath kr = KP_KEY(NULL, "root");
    return parse_node(c, ymap_val(top, ri), &kr, "root", root);
}

/* Frees every node in c->all that is not in `keep` (ids in range and matching). */
static tsr_status
drop_unreachable(dctx *c, tsr_node **keep, size_t nkeep)
{
    tsr_design *tmp = calloc(1, sizeof *tmp);
    if (!tmp)
        return tsr_doom(c);
    size_t n = 0;
    for (size_t i = 0; i < c->nall; i++) {
        tsr_node *x = c->all[i];
        if (x->id < nkeep && keep[x->id] == x)
            continue;
        c->all[n++] = x;
    }
    tmp->nodes = c->all;
    tmp->nnodes = n;
    c->all = NULL;
    c->nall = c->capall = 0;
    tsr_design_free(tmp);
    return TSR_OK;
}

static tsr_design *
too_big(const char *file, tsr_error *err)
{
    tsr_fail(err, TSR_EINVAL, "%s: larger than %zu MiB, the most a design file may hold", file,
             TSR_DESIGN_MAX_BYTES >> 20);
    return NULL;
}

tsr_design *
tsr_design_load_string(const char *text, size_t len, const char *name, const char *base_dir,
                       const tsr_design_opts *opts, tsr_error *err)
{
    dctx c = {0};
    ytree tree = {NULL, NULL};
    tsr_design *d = NULL;
    tsr_node **order = NULL, *root = NULL;
    size_t norder = 0;
    tsr_status st;

    c.file = name ? name : "<string>";
    if (len > TSR_DESIGN_MAX_BYTES)
        return too_big(c.file, err);
    c.base_dir = base_dir;
    c.opts = opts;
    c.err = err;
    c.cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!(d = calloc(1, sizeof *d)) || !(d->path = strdup(c.file))) {
        tsr_doom(&c);
        goto fail;
    }
    d->tile = 512;
    d->out.depth = 8;
    d->out.range[0] = 0.0;
    d->out.range[1] = 1.0;
    d->out.order = TSR_ORDER_RASTER;
    d->out.start = TSR_TOP_LEFT;
    if (tsr_ytree_parse(c.file, text, len, &tree, err) != TSR_OK)
        goto fail;
    if (load_tree(&c, tree.root, d, &root) != TSR_OK)
        goto fail;
    if (order_nodes(&c, root, &order, &norder) != TSR_OK)
        goto fail;
    if (check_depth(&c, order, norder) != TSR_OK)
        goto fail;
    if (drop_unreachable(&c, order, norder) != TSR_OK)
        goto fail;
    d->nodes = order;
    d->nnodes = norder;
    d->root = order[norder - 1];
    order = NULL;
    if ((st = tsr_design_prepare(d, err)) != TSR_OK)
        goto fail;
    if (!(opts && opts->defer) &&
        (st = tsr_design_build(d, opts ? opts->read_image : NULL, err)) != TSR_OK)
        goto fail;
    tsr_ytree_free(&tree);
    free(c.names);
    free(c.stack);
    if (c.cloc)
        freelocale(c.cloc);
    return d;
fail:
    free(order);
    if (d && c.all) {
        /* every node allocated so far, whatever state it is in */
        free(d->nodes);
        d->nodes = c.all;
        d->nnodes = c.nall;
        c.all = NULL;
    }
    tsr_design_free(d);
    free(c.all);
    tsr_ytree_free(&tree);
    free(c.names);
    free(c.stack);
    if (c.cloc)
        freelocale(c.cloc);
    return NULL;
}

tsr_design *
tsr_design_load(const char *path, const tsr_design_opts *opts, tsr_error *err)
{
    char *text = NULL, *dir = NULL;
    size_t len = 0, cap = 0;
    tsr_design *d = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        /* A design that is not there (or not readable) is bad input like a bad key: exit 2,
         * before anything is written. A read failing half-way is an I/O error (1). */
        tsr_fail(err, TSR_EINVAL, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    /* One byte past the bound tells a file of exactly the bound from a longer one. */
    const size_t most = TSR_DESIGN_MAX_BYTES + 1;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= most) {
        too_big(path, err);
        goto fail;
    }
    for (;;) {
        if (len == most) {
            too_big(path, err);
            goto fail;
        }
        if (len == cap) {
            size_t ncap = cap ? (cap * 2 < most ? cap * 2 : most) : 65536;
            char *t = ncap > cap ? realloc(text, ncap) : NULL;
            if (!t) {
                tsr_fail(err, TSR_ENOMEM, "%s: out of memory reading the file", path);
                goto fail;
            }
            text = t;
            cap = ncap;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno;
                tsr_fail(err, e == EISDIR ? TSR_EINVAL : TSR_EIO, "%s: read error: %s", path,
                         strerror(e));
                goto fail;
            }
            break;
        }
    }
    /* images are relative to the design file's folder */
    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t n = (size_t)(slash - path);
        if (!(dir = malloc(n + 2))) {
            tsr_fail(err, TSR_ENOMEM, "%s: out of memory", path);
            goto fail;
        }
        memcpy(dir, path, n ? n : 1); /* "/x.yaml" lives in "/" */
        dir[n ? n : 1] = 0;
    }
    d = tsr_design_load_string(text, len, path, dir, opts, err);
fail:
    fclose(f);
    free(text);
    free(dir);
    return d;
}
