/* The canonical form of a loaded design: what the stream's fingerprint hashes (docs/streaming.md
 * §7). Made from the parsed values, never from printed text, so `tessera check`'s dump may
 * change its layout freely. Like the dump it walks the parameter tables of nodes/ (docs/architecture.md, house style:
 * one table drives parsing, validation and printing), so a new trait or key is in the form
 * without code here. Reals are their IEEE bit patterns, which neither printf nor the locale can
 * change. Whatever does not change a sample is left out: names, tiles, file paths, wheres, and
 * the pixel pitch (docs/units.md §4): lengths are here in pixels, however they were written. */
#include "designs/designs_int.h"
#include "nodes/vector.h"
#include "nodes/expr.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

/* Buffered: a polygon of 700 000 points is some 1.4 M tokens, not 1.4 M calls of put. */
typedef struct cform {
    tsr_canonical_put put;
    void *ctx;
    char buf[4096];
    size_t len;
    size_t nimg; /* image sources met so far */
} cform;

static void
flush(cform *w)
{
    if (w->len)
        w->put(w->ctx, w->buf, w->len);
    w->len = 0;
}

/* One token; every token here is far shorter than the buffer. */
static void __attribute__((format(printf, 2, 3)))
emit(cform *w, const char *fmt, ...)
{
    for (int pass = 0; pass < 2; pass++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(w->buf + w->len, sizeof w->buf - w->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof w->buf - w->len) {
            w->len += (size_t)n;
            return;
        }
        flush(w);
    }
}

static void
emit_f64(cform *w, double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    emit(w, " d%016" PRIx64, b);
}

static void
emit_f32(cform *w, float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    emit(w, " f%08" PRIx32, b);
}

static void
emit_points(cform *w, const tsr_points *p)
{
    emit(w, " %zu", p->n);
    for (size_t i = 0; i < p->n; i++) {
        emit_f64(w, p->p[i][0]);
        emit_f64(w, p->p[i][1]);
    }
}

/* An enum value by its name: reordering an enum must not change the form. */
static void
emit_name(cform *w, const char *const *names, int v)
{
    for (int i = 0; names && names[i]; i++)
        if (i == v) {
            emit(w, " %s", names[i]);
            return;
        }
    emit(w, " ?%d", v);
}

static void
emit_value(cform *w, const tsr_param *pm, const void *field)
{
    const int64_t *iv = field;
    const double *dv = field;
    const float *fv = field;
    switch (pm->type) {
    case TSR_P_INT:
        if (pm->names && iv[0] < 0) { /* a word (aa: exact) */
            emit_name(w, pm->names, (int)(-1 - iv[0]));
            break;
        }
        /* fall through */
    case TSR_P_INT2:
    case TSR_P_INT4:
        for (int i = 0; i < (pm->type == TSR_P_INT ? 1 : pm->type == TSR_P_INT2 ? 2 : 4); i++)
            emit(w, " %" PRId64, iv[i]);
        break;
    case TSR_P_F32:
    case TSR_P_F32_2:
        for (int i = 0; i < (pm->type == TSR_P_F32 ? 1 : 2); i++)
            emit_f32(w, fv[i]);
        break;
    case TSR_P_F64:
    case TSR_P_F64_2:
    case TSR_P_F64_4:
        for (int i = 0; i < (pm->type == TSR_P_F64 ? 1 : pm->type == TSR_P_F64_2 ? 2 : 4); i++)
            emit_f64(w, dv[i]);
        break;
    case TSR_P_POINTS: emit_points(w, field); break;
    case TSR_P_ENUM: emit_name(w, pm->names, *(const int *)field); break;
    case TSR_P_BOOL: emit(w, " %d", *(const bool *)field ? 1 : 0); break;
    case TSR_P_PROFILE: {
        const tsr_profile *pr = field;
        static const char *const kinds[] = {"linear", "sphere", "cosine", "gaussian", "points",
                                            NULL};
        emit_name(w, kinds, (int)pr->kind);
        if (pr->kind == TSR_PROFILE_GAUSSIAN)
            emit_f64(w, pr->s);
        else if (pr->kind == TSR_PROFILE_POINTS)
            emit_points(w, &pr->pts);
        break;
    }
    case TSR_P_KERNEL: {
        const tsr_kernel *k = field;
        emit(w, " %" PRId64 " %" PRId64, k->w, k->h);
        for (int64_t i = 0; i < k->w * k->h; i++)
            emit_f32(w, k->k[i]);
        break;
    }
    case TSR_P_PATH:
        /* No table has one today. A path is not a sample: whoever adds one hashes the file's
         * bytes beside the form, as the engine does for images. */
        emit(w, " %s", *(char *const *)field ? "path" : "null");
        break;
    case TSR_P_NAME: {
        /* a name picks what is drawn: its bytes, length first (any character may be in it) */
        const char *s = *(char *const *)field;
        if (!s) {
            emit(w, " null");
            break;
        }
        emit(w, " %zu:", strlen(s));
        flush(w);
        w->put(w->ctx, s, strlen(s));
        break;
    }
    case TSR_P_LAYERS: {
        const tsr_layer_map *m = field;
        emit(w, " %zu", m->n);
        for (size_t i = 0; i < m->n; i++) {
            static const tsr_param name = {"", TSR_P_NAME, 0, 0, 0, 0, 0, NULL, NULL};
            if (m->e[i].name)
                emit_value(w, &name, &m->e[i].name);
            else
                emit(w, " %" PRId64 "/%" PRId64, m->e[i].layer, m->e[i].datatype);
            emit_f32(w, m->e[i].value);
        }
        break;
    }
    case TSR_P_EXPR: { /* the program itself: ops, their arguments, constants */
        const tsr_expr *x = *(const tsr_expr *const *)field;
        if (!x) {
            emit(w, " null");
            break;
        }
        emit(w, " expr %d %d", (int)x->nops, (int)x->nk);
        for (int i = 0; i < x->nops; i++)
            emit(w, " %d:%d", (int)x->op[i], (int)x->arg[i]);
        for (int i = 0; i < x->nk; i++)
            emit_f64(w, x->k[i]);
        break;
    }
    }
}

/* Bytes of a value of the kinds a TSR_PF_FORM_IF_SET key may have; 0: always in the form. */
static size_t
plain_size(tsr_ptype t)
{
    switch (t) {
    case TSR_P_F64: return sizeof(double);
    case TSR_P_F64_2: return 2 * sizeof(double);
    case TSR_P_BOOL: return sizeof(bool);
    default: return 0;
    }
}

/* Every key of the table, in table order (not the file's), each value whatever its default;
 * but a TSR_PF_FORM_IF_SET key only where its bytes differ from dflt's (when given). */
static void
emit_params_d(cform *w, const tsr_param *params, size_t n, const void *st, const void *dflt)
{
    for (size_t i = 0; i < n; i++) {
        size_t sz = plain_size(params[i].type);
        if (dflt && (params[i].flags & TSR_PF_FORM_IF_SET) && sz &&
            memcmp((const char *)st + params[i].offset, (const char *)dflt + params[i].offset,
                   sz) == 0)
            continue;
        emit(w, " %s", params[i].key);
        emit_value(w, &params[i], (const char *)st + params[i].offset);
    }
}

static void
emit_params(cform *w, const tsr_param *params, size_t n, const void *st)
{
    emit_params_d(w, params, n, st, NULL);
}

static void
emit_source(cform *w, const tsr_source *s)
{
    const tsr_source_desc *desc = tsr_dsource_desc(s->kind);
    if (!desc) {
        emit(w, "source ?%d\n", (int)s->kind);
        return;
    }
    emit(w, "source %s", desc->disc_key);
    /* an image is its index among the design's images (in node order): the engine hashes
     * its bytes, in the same order, after the form */
    if (desc->disc_value)
        emit(w, " %s", desc->disc_value);
    else if (s->kind == TSR_SRC_TEXT) { /* the string, then its font as an input, if any */
        static const tsr_param str = {"", TSR_P_NAME, 0, 0, 0, 0, 0, NULL, NULL};
        emit_value(w, &str, &s->text);
        if (s->path)
            emit(w, " input %zu", w->nimg++);
    } else
        emit(w, " input %zu", w->nimg++);
    tsr_source dflt;
    tsr_source_defaults(&dflt, s->kind);
    emit_params_d(w, desc->params, desc->nparams, s, &dflt);
    if (s->kind >= TSR_SRC_BOOL_UNION && s->kind <= TSR_SRC_BOOL_XOR) {
        /* its operands are what they make: the outlines, point by point (exact: the same
         * operands give the same rings) */
        const tsr_geom_polys *q = s->vec ? tsr_vec_polys(s->vec) : NULL;
        emit(w, " outlines %zu", q ? q->nring : 0);
        for (size_t k = 0; q && k < q->nring; k++) {
            size_t a = k ? q->end[k - 1] : 0;
            emit(w, " %zu", q->end[k] - a);
            for (size_t i = a; i < q->end[k]; i++) {
                emit_f64(w, q->pt[i].x);
                emit_f64(w, q->pt[i].y);
            }
        }
    }
    emit(w, "\n");
}

static void
emit_edge(cform *w, const tsr_edge *e)
{
    static const tsr_param offset = {"offset", TSR_P_INT2, 0, 0, 0, 0, 0, NULL, NULL};
    emit(w, "edge %s child %zu blend", e->trait->name, e->child->id);
    emit_name(w, tsr_blend_names, (int)e->blend);
    emit(w, " offset");
    emit_value(w, &offset, e->offset);
    emit(w, " mask");
    emit_name(w, tsr_mask_names, e->mask);
    emit_params(w, e->trait->params, e->trait->nparams, e->params);
    emit(w, "\n");
}

void
tsr_design_canonical(const tsr_design *d, tsr_canonical_put put, void *ctx)
{
    cform w = {.put = put, .ctx = ctx};
    emit(&w, "tessera-canonical %d\noutput", TSR_CANONICAL_VERSION);
    emit_params(&w, tsr_dtab_output, tsr_dtab_noutput, &d->out);
    /* depth 1, 2, 4: the loader keeps depth 8 (the samples) and these; nothing for 8 and 16,
     * whose form (and fingerprint) stays as it was */
    if (d->out.bits)
        emit(&w, " bits %d dither %d %d", d->out.bits, d->out.dither, d->out.dither_size);
    if (d->out.bidir || d->out.mirror_x || d->out.y_up)
        emit(&w, " stage %d %d %d", d->out.bidir, d->out.mirror_x ? 1 : 0, d->out.y_up ? 1 : 0);
    /* overlap, overscan, planes: only when set, so older designs keep their form */
    if (d->out.overlap)
        emit(&w, " overlap %lld feather %d", (long long)d->out.overlap, d->out.feather);
    if (d->out.overscan)
        emit(&w, " overscan %lld %lld", (long long)d->out.overscan,
             (long long)d->out.overscan_value);
    if (d->out.planes)
        emit(&w, " planes %lld", (long long)d->out.planes);
    /* the loader refuses swath keys without order: swath, so raster has nothing more */
    if (d->out.order == TSR_ORDER_SWATH) {
        emit(&w, " swath");
        emit_params(&w, tsr_dtab_swath, tsr_dtab_nswath, &d->out);
    }
    emit(&w, "\nnodes %zu\n", d->nnodes);
    /* d->nodes is the loader's depth-first order from root, edges in order (children first):
     * a function of the graph alone, so neither the nodes: section's order nor ref against
     * inline changes an id */
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        emit(&w, "node %zu size %" PRId64 " %" PRId64 " fill", n->id, n->w, n->h);
        emit_f32(&w, n->fill);
        emit(&w, " edges %zu\n", n->nedges);
        if (n->source)
            emit_source(&w, n->source);
        for (size_t k = 0; k < n->nedges; k++)
            emit_edge(&w, &n->edges[k]);
    }
    emit(&w, "root %zu\n", d->root ? d->root->id : (size_t)0);
    flush(&w);
}
