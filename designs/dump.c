/* The canonical dump of a loaded design: YAML-shaped, every parameter with its default
 * filled in, printed by walking the same tables the loader parsed with (docs/architecture.md, house style: one table
 * drives parsing, validation and printing). Reals get the fewest digits that read back to
 * the same value, so two dumps are equal exactly when the designs are. */
#include "designs/designs_int.h"
#include "nodes/expr.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names and paths print bare when that cannot be misread, else double-quoted with escapes. */
static void
put_str(FILE *f, const char *s)
{
    bool bare = s[0] && (isalpha((unsigned char)s[0]) || strchr("_./", s[0])) &&
                strcmp(s, "null") != 0 && strcmp(s, "true") != 0 && strcmp(s, "false") != 0;
    for (const char *q = s; *q && bare; q++)
        bare = isalnum((unsigned char)*q) || strchr("_.-/[]", *q);
    if (bare) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (*q == '"' || *q == '\\')
            fprintf(f, "\\%c", *q);
        else if (*q < 0x20 || *q == 0x7f)
            fprintf(f, "\\x%02x", *q);
        else
            fputc(*q, f);
    }
    fputc('"', f);
}

static void
put_f64(FILE *f, double d)
{
    char b[40];
    tsr_fmt_double(b, sizeof b, d);
    fputs(b, f);
}

static void
put_f32(FILE *f, float x)
{
    char b[40];
    tsr_fmt_float(b, sizeof b, x);
    fputs(b, f);
}

static void
put_points(FILE *f, const tsr_points *p)
{
    fputc('[', f);
    for (size_t i = 0; i < p->n; i++) {
        fputs(i ? ", [" : "[", f);
        put_f64(f, p->p[i][0]);
        fputs(", ", f);
        put_f64(f, p->p[i][1]);
        fputc(']', f);
    }
    fputc(']', f);
}

static const char *
name_of(const char *const *names, int v)
{
    for (int i = 0; names && names[i]; i++)
        if (i == v)
            return names[i];
    return "?";
}

static void
put_value(FILE *f, const tsr_param *pm, const void *field)
{
    const int64_t *iv = field;
    const double *dv = field;
    const float *fv = field;
    switch (pm->type) {
    case TSR_P_INT:
        if (pm->names && iv[0] < 0) /* a word (aa: exact) */
            fputs(name_of(pm->names, (int)(-1 - iv[0])), f);
        else
            fprintf(f, "%" PRId64, iv[0]);
        break;
    case TSR_P_INT2: fprintf(f, "[%" PRId64 ", %" PRId64 "]", iv[0], iv[1]); break;
    case TSR_P_INT4:
        fprintf(f, "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]", iv[0], iv[1], iv[2],
                iv[3]);
        break;
    case TSR_P_F32: put_f32(f, fv[0]); break;
    case TSR_P_F32_2:
        fputc('[', f);
        put_f32(f, fv[0]);
        fputs(", ", f);
        put_f32(f, fv[1]);
        fputc(']', f);
        break;
    case TSR_P_F64: put_f64(f, dv[0]); break;
    case TSR_P_F64_2:
    case TSR_P_F64_4:
        fputc('[', f);
        for (int i = 0; i < (pm->type == TSR_P_F64_2 ? 2 : 4); i++) {
            if (i)
                fputs(", ", f);
            put_f64(f, dv[i]);
        }
        fputc(']', f);
        break;
    case TSR_P_POINTS: put_points(f, field); break;
    case TSR_P_ENUM: fputs(name_of(pm->names, *(const int *)field), f); break;
    case TSR_P_BOOL: fputs(*(const bool *)field ? "true" : "false", f); break;
    case TSR_P_PROFILE: {
        const tsr_profile *pr = field;
        static const char *const kinds[] = {"linear", "sphere", "cosine", NULL};
        if (pr->kind == TSR_PROFILE_GAUSSIAN) {
            fputs("{gaussian: ", f);
            put_f64(f, pr->s);
            fputc('}', f);
        } else if (pr->kind == TSR_PROFILE_POINTS) {
            fputs("{points: ", f);
            put_points(f, &pr->pts);
            fputc('}', f);
        } else {
            fputs(name_of(kinds, (int)pr->kind), f);
        }
        break;
    }
    case TSR_P_KERNEL: {
        const tsr_kernel *k = field;
        fputc('[', f);
        for (int64_t j = 0; j < k->h; j++) {
            fputs(j ? ", [" : "[", f);
            for (int64_t i = 0; i < k->w; i++) {
                if (i)
                    fputs(", ", f);
                put_f32(f, k->k[j * k->w + i]);
            }
            fputc(']', f);
        }
        fputc(']', f);
        break;
    }
    case TSR_P_PATH:
    case TSR_P_NAME: {
        const char *s = *(char *const *)field;
        if (s)
            put_str(f, s);
        else
            fputs("null", f);
        break;
    }
    case TSR_P_LAYERS: {
        const tsr_layer_map *m = field;
        fputc('[', f);
        for (size_t i = 0; i < m->n; i++) {
            fputs(i ? ", [" : "[", f);
            if (m->e[i].name)
                put_str(f, m->e[i].name);
            else
                fprintf(f, "%" PRId64 ", %" PRId64, m->e[i].layer, m->e[i].datatype);
            fputs(", ", f);
            put_f32(f, m->e[i].value);
            fputc(']', f);
        }
        fputc(']', f);
        break;
    }
    case TSR_P_EXPR: {
        char buf[8192];
        const tsr_expr *x = *(const tsr_expr *const *)field;
        static const tsr_expr absent;
        size_t n = tsr_expr_format(x ? x : &absent, buf, sizeof buf);
        fputs(n < sizeof buf ? buf : "null # too long to print", f);
        break;
    }
    }
}

static void
put_params(FILE *f, int indent, const tsr_param *params, size_t n, const void *st)
{
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%*s%s: ", indent, "", params[i].key);
        put_value(f, &params[i], (const char *)st + params[i].offset);
        fputc('\n', f);
    }
}

static void
put_source(FILE *f, const tsr_source *s)
{
    const tsr_source_desc *desc = tsr_dsource_desc(s->kind);
    if (!desc) {
        fprintf(f, "    source: {kind: %d}\n", (int)s->kind);
        return;
    }
    fputs("    source:\n", f);
    fprintf(f, "      %s: ", desc->disc_key);
    if (desc->disc_value)
        fputs(desc->disc_value, f);
    else if (s->kind == TSR_SRC_TEXT)
        put_str(f, s->text ? s->text : "");
    else if (s->path)
        put_str(f, s->path);
    else
        fputs("null", f);
    fputc('\n', f);
    put_params(f, 6, desc->params, desc->nparams, s);
    if (s->img)
        fprintf(f, "      decoded: [%" PRId64 ", %" PRId64 "]\n", s->iw, s->ih);
    if (s->kind == TSR_SRC_LAYOUT)
        tsr_src_layout_describe(s, f, 6);
}

static void
put_edge(FILE *f, const tsr_edge *e)
{
    static const tsr_param offset = {"offset", TSR_P_INT2, 0, 0, 0, 0, 0, NULL, NULL};
    fprintf(f, "      - trait: %s\n", e->trait->name);
    fprintf(f, "        child: %zu  # ", e->child->id);
    put_str(f, e->child->name);
    fputc('\n', f);
    fprintf(f, "        blend: %s\n", name_of(tsr_blend_names, (int)e->blend));
    fputs("        offset: ", f);
    put_value(f, &offset, e->offset);
    fprintf(f, "\n        mask: %s\n", name_of(tsr_mask_names, e->mask));
    put_params(f, 8, e->trait->params, e->trait->nparams, e->params);
}

void
tsr_design_dump(const tsr_design *d, FILE *f)
{
    fputs("tessera: 1\n", f);
    fputs("name: ", f);
    if (d->name)
        put_str(f, d->name);
    else
        fputs("null", f);
    fputc('\n', f);
    fprintf(f, "tile: %" PRId64 "\n", d->tile);
    fputs("output:\n", f);
    put_params(f, 2, tsr_dtab_output, tsr_dtab_noutput, &d->out);
    if (d->out.order == TSR_ORDER_SWATH) {
        fputs("  swath:\n", f);
        put_params(f, 4, tsr_dtab_swath, tsr_dtab_nswath, &d->out);
    }
    fputs("nodes:\n", f);
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        fprintf(f, "  - id: %zu\n", n->id);
        fputs("    name: ", f);
        put_str(f, n->name);
        fputc('\n', f);
        fprintf(f, "    size: [%" PRId64 ", %" PRId64 "]\n", n->w, n->h);
        fprintf(f, "    tile: %" PRId64 "\n", n->tile);
        fputs("    fill: ", f);
        put_f32(f, n->fill);
        fputc('\n', f);
        if (n->source)
            put_source(f, n->source);
        fputs(n->nedges ? "    children:\n" : "    children: []\n", f);
        for (size_t k = 0; k < n->nedges; k++)
            put_edge(f, &n->edges[k]);
    }
    fprintf(f, "root: %zu\n", d->root ? d->root->id : (size_t)0);
}

/* ---- the design back as a design, every length in pixels ------------------------------------ */

/* Whether a parameter differs from its default: only those are written, so a key whose
 * default means "absent" (blur's sigma 0, an empty kernel) is left out as the author left it
 * out. */
static bool
differs(const tsr_param *pm, const void *field, const void *dflt)
{
    size_t n = 0;
    switch (pm->type) {
    case TSR_P_INT: n = sizeof(int64_t); break;
    case TSR_P_INT2: n = 2 * sizeof(int64_t); break;
    case TSR_P_INT4: n = 4 * sizeof(int64_t); break;
    case TSR_P_F32: n = sizeof(float); break;
    case TSR_P_F32_2: n = 2 * sizeof(float); break;
    case TSR_P_F64: n = sizeof(double); break;
    case TSR_P_F64_2: n = 2 * sizeof(double); break;
    case TSR_P_F64_4: n = 4 * sizeof(double); break;
    case TSR_P_ENUM: n = sizeof(int); break;
    case TSR_P_BOOL: n = sizeof(bool); break;
    case TSR_P_POINTS: return ((const tsr_points *)field)->n != 0;
    case TSR_P_KERNEL: return ((const tsr_kernel *)field)->w != 0;
    case TSR_P_PROFILE: {
        const tsr_profile *a = field, *b = dflt;
        return a->kind != b->kind || a->kind == TSR_PROFILE_GAUSSIAN ||
               a->kind == TSR_PROFILE_POINTS;
    }
    case TSR_P_PATH: /* a text's font; else the source's own path, its discriminator's value */
    case TSR_P_NAME: return *(char *const *)field != NULL;
    case TSR_P_LAYERS: return ((const tsr_layer_map *)field)->n != 0;
    case TSR_P_EXPR: return *(void *const *)field != NULL;
    }
    return memcmp(field, dflt, n) != 0;
}

static void
put_changed(FILE *f, int indent, const tsr_param *params, size_t n, const void *st,
            const void *dflt)
{
    for (size_t i = 0; i < n; i++) {
        const char *a = (const char *)st + params[i].offset;
        const char *b = (const char *)dflt + params[i].offset;
        if (!(params[i].flags & TSR_PF_REQUIRED) && !differs(&params[i], a, b))
            continue;
        fprintf(f, "%*s%s: ", indent, "", params[i].key);
        put_value(f, &params[i], a);
        fputc('\n', f);
    }
}

/* A name that reads back as itself as a plain YAML key. */
static bool
simple_name(const char *s)
{
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (const char *q = s; *q; q++)
        if (!(isalnum((unsigned char)*q) || *q == '_' || *q == '-'))
            return false;
    return strcmp(s, "true") != 0 && strcmp(s, "false") != 0 && strcmp(s, "null") != 0 &&
           strcmp(s, "Null") != 0 && strcmp(s, "NULL") != 0;
}

/* The key node n is written under: its own name when that is simple, else prefix + id. */
static void
node_key(FILE *f, const tsr_node *n, const char *prefix)
{
    if (simple_name(n->name))
        fputs(n->name, f);
    else
        fprintf(f, "%s%zu", prefix, n->id);
}

/* Source s's keys at indent ind, its first line after `lead` ("" or "- " of a list item): the
 * discriminator, the keys that differ from their defaults, and a boolean's operand lists (the
 * operands as parsed, which the loader keeps for this). */
static void
put_source_yaml(FILE *f, int ind, const char *lead, const tsr_source *s)
{
    const tsr_source_desc *desc = tsr_dsource_desc(s->kind);
    if (!desc)
        return;
    tsr_source dflt;
    tsr_source_defaults(&dflt, s->kind);
    fprintf(f, "%*s%s%s: ", ind, "", lead, desc->disc_key);
    ind += (int)strlen(lead);
    if (desc->disc_value) {
        fputs(desc->disc_value, f);
    } else if (s->kind == TSR_SRC_TEXT) {
        put_str(f, s->text ? s->text : "");
    } else {
        /* the loader resolved it against the design's folder: absolute, so the printed
         * design reads the same file wherever it is saved */
        char *abs = s->path ? realpath(s->path, NULL) : NULL;
        put_str(f, abs ? abs : s->path ? s->path : "");
        free(abs);
    }
    fputc('\n', f);
    put_changed(f, ind, desc->params, desc->nparams, s, &dflt);
    tsr_source_free(&dflt);
    for (int list = 0; list < 2; list++) {
        size_t from = list ? s->nop_a : 0, n = list ? s->nop_b : s->nop_a;
        if (n)
            fprintf(f, "%*s%s:\n", ind, "", list ? "b" : "a");
        for (size_t i = 0; i < n; i++)
            put_source_yaml(f, ind + 2, "- ", &s->operands[from + i]);
    }
}

static void
put_node_body(FILE *f, const tsr_design *d, const tsr_node *n, int ind, const char *prefix)
{
    fprintf(f, "%*ssize: [%" PRId64 ", %" PRId64 "]\n", ind, "", n->w, n->h);
    if (n->tile != d->tile)
        fprintf(f, "%*stile: %" PRId64 "\n", ind, "", n->tile);
    if (n->fill != 0.0f || signbit(n->fill)) {
        fprintf(f, "%*sfill: ", ind, "");
        put_f32(f, n->fill);
        fputc('\n', f);
    }
    if (n->source && tsr_dsource_desc(n->source->kind)) {
        fprintf(f, "%*ssource:\n", ind, "");
        put_source_yaml(f, ind + 2, "", n->source);
    }
    if (!n->nedges)
        return;
    fprintf(f, "%*schildren:\n", ind, "");
    for (size_t k = 0; k < n->nedges; k++) {
        const tsr_edge *e = &n->edges[k];
        const tsr_trait *t = e->trait;
        fprintf(f, "%*s- trait: %s\n%*sref: ", ind + 2, "", t->name, ind + 4, "");
        node_key(f, e->child, prefix);
        fputc('\n', f);
        if (e->blend != TSR_BLEND_OVER)
            fprintf(f, "%*sblend: %s\n", ind + 4, "", name_of(tsr_blend_names, (int)e->blend));
        if (e->offset[0] || e->offset[1])
            fprintf(f, "%*soffset: [%" PRId64 ", %" PRId64 "]\n", ind + 4, "", e->offset[0],
                    e->offset[1]);
        if (e->mask)
            fprintf(f, "%*smask: %s\n", ind + 4, "", name_of(tsr_mask_names, e->mask));
        void *dflt = calloc(1, t->params_size ? t->params_size : 1);
        if (dflt && t->defaults)
            t->defaults(dflt);
        if (dflt) {
            put_changed(f, ind + 4, t->params, t->nparams, e->params, dflt);
            tsr_params_free(t->params, t->nparams, dflt);
        } else {
            put_params(f, ind + 4, t->params, t->nparams, e->params); /* out of memory: all */
        }
        free(dflt);
    }
}

void
tsr_design_write_pixels(const tsr_design *d, FILE *f)
{
    /* generated keys for nodes without a simple name: a prefix no simple name starts with */
    char prefix[64] = "node";
    for (bool clash = true; clash && strlen(prefix) + 2 < sizeof prefix;) {
        clash = false;
        for (size_t i = 0; i < d->nnodes && !clash; i++)
            clash = simple_name(d->nodes[i]->name) &&
                    strncmp(d->nodes[i]->name, prefix, strlen(prefix)) == 0;
        if (clash)
            strcat(prefix, "_");
    }
    fprintf(f, "# %s with every length in pixels (tessera check --pixels)\n", d->path);
    fputs("tessera: 1\n", f);
    if (d->name) {
        fputs("name: ", f);
        put_str(f, d->name);
        fputc('\n', f);
    }
    fprintf(f, "tile: %" PRId64 "\n", d->tile);
    if (d->pixel_nm > 0) {
        fputs("pixel: ", f);
        put_f64(f, d->pixel_nm);
        fputs("nm\n", f);
    }
    tsr_output dout = {8, {0.0, 1.0}, {NULL, 0}, TSR_ORDER_RASTER, 0, false, TSR_TOP_LEFT,
                       0, 0, 0, 0, false, false, 0, 0, 0, 0, 0};
    fputs("output:\n", f);
    if (d->out.bits) { /* a packed output: its bits and its dither (docs/outputs.md) */
        char dn[32];
        fprintf(f, "  depth: %d\n  dither: %s\n", d->out.bits,
                tsr_output_dither_name(&d->out, dn, sizeof dn));
    } else {
        fprintf(f, "  depth: %" PRId64 "\n", d->out.depth);
    }
    if (d->out.bidir || d->out.mirror_x || d->out.y_up || d->out.overlap || d->out.overscan) {
        fprintf(f, "  stage: {bidirectional: %s, mirror-x: %s, y-up: %s",
                d->out.bidir == 1 ? "rows" : d->out.bidir == 2 ? "swaths" : "none",
                d->out.mirror_x ? "true" : "false", d->out.y_up ? "true" : "false");
        if (d->out.overlap) /* the stage's geometry (docs/outputs.md §8) */
            fprintf(f, ", overlap: %lld, feather: %s", (long long)d->out.overlap,
                    d->out.feather ? "cosine" : "linear");
        if (d->out.overscan)
            fprintf(f, ", overscan: %lld, overscan-value: %lld", (long long)d->out.overscan,
                    (long long)d->out.overscan_value);
        fputs("}\n", f);
    }
    if (d->out.planes)
        fprintf(f, "  planes: %lld\n", (long long)d->out.planes);
    put_changed(f, 2, tsr_dtab_output + 1, tsr_dtab_noutput - 1, &d->out, &dout);
    if (d->out.order == TSR_ORDER_SWATH) {
        fputs("  swath:\n", f);
        put_params(f, 4, tsr_dtab_swath, tsr_dtab_nswath, &d->out);
    }
    if (d->nnodes > 1)
        fputs("nodes:\n", f);
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        if (n == d->root)
            continue;
        fputs("  ", f);
        node_key(f, n, prefix);
        fputs(":\n", f);
        put_node_body(f, d, n, 4, prefix);
    }
    fputs("root:\n", f);
    if (d->root)
        put_node_body(f, d, d->root, 2, prefix);
}
