/* The trait table, the common edge keys, blending, and design lifetime. */
#include "nodes/nodes.h"
#include "nodes/expr.h"
#include "nodes/layout_src.h"
#include "nodes/params.h"
#include "nodes/pointwise.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define X(id, gpu, caps) extern const tsr_trait tsr_trait_##id;
#include "nodes/traits.def"
#undef X

const tsr_trait *const tsr_traits[] = {
#define X(id, gpu, caps) &tsr_trait_##id,
#include "nodes/traits.def"
#undef X
    NULL};

static const unsigned trait_caps[TSR_TRAIT_COUNT] = {
#define X(id, gpu, caps) (caps),
#include "nodes/traits.def"
#undef X
};

const char *const tsr_blend_names[] = {"over", "add", "max", "min", "multiply", NULL};
const char *const tsr_mask_names[] = {"none", "nonzero", NULL};
const char *const tsr_edge_keys[] = {"trait", "node", "ref", "blend", "offset", "mask", NULL};

tsr_trait_id
tsr_trait_id_of(const tsr_trait *t)
{
    size_t i = 0;
    while (tsr_traits[i] && tsr_traits[i] != t)
        i++;
    return (tsr_trait_id)i;
}

bool
tsr_trait_has(const tsr_trait *t, unsigned caps)
{
    tsr_trait_id id = tsr_trait_id_of(t);
    return id < TSR_TRAIT_COUNT && (trait_caps[id] & caps) == caps;
}

const tsr_trait *
tsr_trait_find(const char *name)
{
    for (size_t i = 0; tsr_traits[i]; i++)
        if (strcmp(tsr_traits[i]->name, name) == 0)
            return tsr_traits[i];
    return NULL;
}

tsr_status
tsr_check_failf(tsr_check *c, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return c->fail(c, key, msg);
}

void
tsr_params_free(const tsr_param *params, size_t n, void *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < n; i++) {
        char *field = (char *)st + params[i].offset;
        switch (params[i].type) {
        case TSR_P_POINTS: {
            tsr_points *p = (tsr_points *)field;
            free(p->p);
            p->p = NULL;
            p->n = 0;
            break;
        }
        case TSR_P_PROFILE: {
            tsr_profile *p = (tsr_profile *)field;
            free(p->pts.p);
            p->pts.p = NULL;
            p->pts.n = 0;
            break;
        }
        case TSR_P_KERNEL: {
            tsr_kernel *k = (tsr_kernel *)field;
            free(k->k);
            k->k = NULL;
            break;
        }
        case TSR_P_PATH:
        case TSR_P_NAME: {
            char **s = (char **)field;
            free(*s);
            *s = NULL;
            break;
        }
        case TSR_P_LAYERS: {
            tsr_layer_map *m = (tsr_layer_map *)field;
            for (size_t k = 0; k < m->n; k++)
                free(m->e[k].name);
            free(m->e);
            m->e = NULL;
            m->n = 0;
            break;
        }
        case TSR_P_EXPR: {
            void **x = (void **)field;
            free(*x);
            *x = NULL;
            break;
        }
        default: break;
        }
    }
}

static void
edge_free(tsr_edge *e)
{
    if (e->trait) {
        if (e->state && e->trait->release)
            e->trait->release(e);
        tsr_params_free(e->trait->params, e->trait->nparams, e->params);
    }
    free(e->params);
    free(e->where);
}

static void
node_free(tsr_node *n)
{
    for (size_t i = 0; i < n->nedges; i++)
        edge_free(&n->edges[i]);
    free(n->edges);
    if (n->source) {
        tsr_source_free(n->source);
        free(n->source);
    }
    free(n->name);
    free(n->where);
    free(n);
}

void
tsr_design_free(tsr_design *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nnodes; i++)
        node_free(d->nodes[i]);
    free(d->nodes);
    free(d->out.calibration.p);
    free(d->path);
    free(d->name);
    free(d);
}

tsr_status
tsr_design_prepare(tsr_design *d, tsr_error *err)
{
    for (size_t i = 0; i < d->nnodes; i++) {
        tsr_node *n = d->nodes[i];
        for (size_t k = 0; k < n->nedges; k++) {
            tsr_edge *e = &n->edges[k];
            if (e->state || !e->trait->prepare)
                continue;
            tsr_status st = e->trait->prepare(e, err);
            if (st != TSR_OK)
                return st;
        }
    }
    return TSR_OK;
}

tsr_rect
tsr_edge_covered(const tsr_edge *e, tsr_rect pr)
{
    tsr_rect c = tsr_rect_shift(pr, -e->offset[0], -e->offset[1]);
    return tsr_rect_intersect(c, tsr_rect_make(0, 0, e->child->w, e->child->h));
}

/* Each mode in its own loop so the compiler vectorises it (the mode is a constant in each, so
 * tsr_pw_blend folds to one operation); float32 arithmetic as written, the same expressions the
 * GPU's kernels evaluate (nodes/pointwise.h). */
#define BLEND_LOOP(mode)                                                                       \
    for (size_t i = 0; i < n; i++)                                                             \
        P[i] = cov[i] ? tsr_pw_blend((mode), P[i], L[i]) : P[i];
#define BLEND_ALL(mode)                                                                        \
    for (size_t i = 0; i < n; i++)                                                             \
        P[i] = tsr_pw_blend((mode), P[i], L[i]);
/* one loop per mode, each with the mode a constant */
#define BLEND_SWITCH(LOOP)                                                                     \
    switch (b) {                                                                               \
    case TSR_BLEND_OVER: LOOP(TSR_BLEND_OVER) break;                                           \
    case TSR_BLEND_ADD: LOOP(TSR_BLEND_ADD) break;                                             \
    case TSR_BLEND_MAX: LOOP(TSR_BLEND_MAX) break;                                             \
    case TSR_BLEND_MIN: LOOP(TSR_BLEND_MIN) break;                                             \
    case TSR_BLEND_MULTIPLY: LOOP(TSR_BLEND_MULTIPLY) break;                                   \
    }

void
tsr_blend_apply(tsr_blend b, int mask_nonzero, float *restrict P, const float *restrict L,
                const uint8_t *restrict cov, size_t n)
{
    if (mask_nonzero) {
        for (size_t i = 0; i < n; i++)
            P[i] = tsr_pw_apply((int)b, 1, P[i], L[i], cov[i]);
        return;
    }
    if (!memchr(cov, 0, n)) {
        /* covered everywhere (most layers: a pattern, distance or blur over its whole child):
         * the same loops without the select, which keeps them from vectorising well */
        BLEND_SWITCH(BLEND_ALL)
        return;
    }
    BLEND_SWITCH(BLEND_LOOP)
}

void
tsr_node_base(const tsr_node *n, tsr_rect r, float *px)
{
    size_t count = (size_t)r.w * (size_t)r.h;
    const tsr_source *s = n->source;
    /* gradients and decoded images set every pixel: the fill under them is never seen */
    bool covers = s && tsr_source_has(s, TSR_SRC_CAP_COVERS) &&
                  (!tsr_source_has(s, TSR_SRC_CAP_FILE) || s->img);
    float f = n->fill;
    for (size_t i = 0; i < count && !covers; i++)
        px[i] = f;
    if (n->source)
        tsr_source_render(n->source, r, px);
}

tsr_status
tsr_node_base_draw(const tsr_node *n, tsr_rect r, float *px, tsr_error *err)
{
    size_t count = (size_t)r.w * (size_t)r.h;
    const tsr_source *s = n->source;
    bool covers = s && tsr_source_has(s, TSR_SRC_CAP_COVERS) &&
                  (!tsr_source_has(s, TSR_SRC_CAP_FILE) || s->img);
    float f = n->fill;
    for (size_t i = 0; i < count && !covers; i++)
        px[i] = f;
    return s ? tsr_source_draw(s, r, px, err) : TSR_OK;
}

tsr_status
tsr_design_images(tsr_design *d,
                  tsr_status (*read_image)(const char *path, int64_t *w, int64_t *h, float **px,
                                           tsr_error *err),
                  tsr_error *err)
{
    for (size_t i = 0; i < d->nnodes && read_image; i++) {
        tsr_node *n = d->nodes[i];
        tsr_source *s = n->source;
        if (s && s->kind == TSR_SRC_IMAGE && !s->img && s->path) {
            tsr_error ierr = {TSR_OK, ""};
            int64_t w = 0, h = 0;
            float *px = NULL;
            tsr_status st = read_image(s->path, &w, &h, &px, &ierr);
            if (st == TSR_OK && (w != s->iw || h != s->ih)) {
                /* the file changed since its header was read: the plan counted another size */
                free(px);
                return tsr_fail(err, TSR_EINVAL, "%s: %s is %lldx%lld now, %lldx%lld when the "
                                "design was loaded", s->where ? s->where : n->name, s->path,
                                (long long)w, (long long)h, (long long)s->iw, (long long)s->ih);
            }
            if (st != TSR_OK) {
                free(px);
                return tsr_fail(err, st, "%s: %s", s->where ? s->where : n->name,
                                ierr.msg[0] ? ierr.msg : tsr_status_name(st));
            }
            s->img = px;
        }
    }
    return TSR_OK;
}

tsr_status
tsr_design_build(tsr_design *d,
                 tsr_status (*read_image)(const char *path, int64_t *w, int64_t *h, float **px,
                                          tsr_error *err),
                 tsr_error *err)
{
    tsr_status st = tsr_design_images(d, read_image, err);
    for (size_t i = 0; i < d->nnodes && st == TSR_OK; i++) {
        tsr_node *n = d->nodes[i];
        for (size_t k = 0; k < n->nedges; k++) {
            tsr_edge *e = &n->edges[k];
            if (e->state || !e->trait->build)
                continue;
            if ((st = e->trait->build(e, err)) != TSR_OK)
                return st;
        }
    }
    return st;
}

/* A malloc'd block of n bytes as glibc holds it: an 8-byte header, 16-byte granules. */
static int64_t
chunk(size_t n)
{
    return (int64_t)((n + 8 + 15) & ~(size_t)15);
}

static int64_t
str_bytes(const char *s)
{
    return s ? chunk(strlen(s) + 1) : 0;
}

/* What a parameter struct owns beyond itself, walking its table as tsr_params_free does. */
static int64_t
params_bytes(const tsr_param *params, size_t n, const void *st)
{
    int64_t b = 0;
    for (size_t i = 0; st && i < n; i++) {
        const char *field = (const char *)st + params[i].offset;
        switch (params[i].type) {
        case TSR_P_POINTS: b += chunk(((const tsr_points *)field)->n * 2 * sizeof(double)); break;
        case TSR_P_PROFILE:
            b += chunk(((const tsr_profile *)field)->pts.n * 2 * sizeof(double));
            break;
        case TSR_P_KERNEL: {
            const tsr_kernel *k = (const tsr_kernel *)field;
            b += chunk((size_t)(k->w * k->h) * sizeof(float));
            break;
        }
        case TSR_P_PATH:
        case TSR_P_NAME: b += str_bytes(*(char *const *)field); break;
        case TSR_P_LAYERS: {
            const tsr_layer_map *m = (const tsr_layer_map *)field;
            b += chunk(m->n * sizeof *m->e);
            for (size_t k = 0; k < m->n; k++)
                b += str_bytes(m->e[k].name);
            break;
        }
        case TSR_P_EXPR: b += *(void *const *)field ? chunk(tsr_expr_size()) : 0; break;
        default: break;
        }
    }
    return b;
}

/* Small state prepare() may keep per edge (a blur's fitted coefficients: ~250 bytes). */
#define EDGE_STATE_BYTES 512

int64_t
tsr_design_bytes(const tsr_design *d)
{
    int64_t b = chunk(sizeof *d) + chunk(d->nnodes * sizeof *d->nodes) + str_bytes(d->path) +
                str_bytes(d->name) + chunk(d->out.calibration.n * 2 * sizeof(double));
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        b += chunk(sizeof *n) + str_bytes(n->name) + str_bytes(n->where) +
             chunk(n->nedges * sizeof *n->edges);
        if (n->source) {
            const tsr_source *s = n->source;
            b += chunk(sizeof *s) + chunk(s->points.n * 2 * sizeof(double)) + str_bytes(s->path) +
                 str_bytes(s->where);
            b += tsr_src_shape_bytes(s); /* an exact shape's rings, made at load */
            if (s->kind == TSR_SRC_LAYOUT) /* the layout model, held while rendering */
                b += params_bytes(tsr_source_descs[s->kind].params,
                                  tsr_source_descs[s->kind].nparams, s) +
                     tsr_src_layout_bytes(s);
        }
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_edge *e = &n->edges[k];
            b += chunk(e->trait->params_size) + str_bytes(e->where) + EDGE_STATE_BYTES +
                 params_bytes(e->trait->params, e->trait->nparams, e->params);
        }
    }
    return b;
}
