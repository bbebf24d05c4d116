/* cpu/ internals shared by its files. */
#ifndef TSR_CPU_INT_H
#define TSR_CPU_INT_H

#include "cpu/cpu.h"
#include "cpu/pool.h"
#include "nodes/nodes.h"

#include <stdatomic.h>

struct tsr_cpu {
    const tsr_backend_ctx *ctx;
    tsr_cache *cache;              /* the host tile cache */
    tsr_pool *pool;                /* the worker team, started on first use */
    _Atomic uint64_t *node_ns;     /* per node id: nanoseconds computing its pixels (self) */
    _Atomic uint64_t trait_ns[TSR_TRAIT_COUNT]; /* per trait id: in layer() + blend */
    uint8_t *root_period;          /* a periodic root's period as samples, once made */
    pthread_mutex_t period_mu;     /* making it */
};

#endif
