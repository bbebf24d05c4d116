/* The trait and source tables' GPU columns: nodes/traits.def's gpu names, turned into launchers. Plain C,
 * built with or without CUDA (without, the launchers are gpu_none.c's stubs and no device is
 * ever usable). */
#include "gpu/gpu.h"

#include <stddef.h>
#include <stdio.h>

/* a trait whose gpu column says none has no launcher */
#define tsr_gpu_none NULL
#define tsr_gpu_none_can NULL

const tsr_gpu_trait tsr_gpu_traits[TSR_TRAIT_COUNT] = {
#define X(id, gpu, caps) [TSR_TRAIT_##id] = {tsr_gpu_##gpu, tsr_gpu_##gpu##_can},
#include "nodes/traits.def"
#undef X
};

#define tsr_gpu_src_none NULL
#define tsr_gpu_src_none_can NULL

const tsr_gpu_source tsr_gpu_sources[TSR_SRC_COUNT] = {
#define X(ID, params, key, value, family, gpu, caps)                                             \
    [TSR_SRC_##ID] = {tsr_gpu_src_##gpu, tsr_gpu_src_##gpu##_can},
#include "nodes/sources.def"
#undef X
};

bool
tsr_gpu_source_can(const tsr_source *s)
{
    const tsr_gpu_source *t = &tsr_gpu_sources[s->kind];
    return t->launch && t->can && t->can(s);
}

bool
tsr_gpu_edge_can(const tsr_edge *e)
{
    const tsr_gpu_trait *t = &tsr_gpu_traits[tsr_trait_id_of(e->trait)];
    return t->launch && t->can && t->can(e);
}

bool
tsr_gpu_node_why(const tsr_node *n, char *why, size_t len)
{
    const tsr_source *s = n->source;
    if (s && !tsr_gpu_source_can(s)) {
        if (why)
            snprintf(why, len, tsr_gpu_sources[s->kind].launch
                                   ? "its %s source is drawn by the host's scanline fill"
                                   : "source %s has no GPU kernel",
                     tsr_source_descs[s->kind].disc_value ? tsr_source_descs[s->kind].disc_value
                                                          : tsr_source_descs[s->kind].disc_key);
        return false;
    }
    for (size_t k = 0; k < n->nedges; k++) {
        const tsr_edge *e = &n->edges[k];
        if (tsr_gpu_edge_can(e))
            continue;
        if (why)
            snprintf(why, len, tsr_gpu_traits[tsr_trait_id_of(e->trait)].launch
                                   ? "its %s edge's lattice is walked on the host"
                                   : "trait %s has no GPU kernel",
                     e->trait->name);
        return false;
    }
    return true;
}
