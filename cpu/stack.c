/* Thread stacks. The CPU backend recurses once per node level (compute.c: compute ->
 * edge_layer -> fetch -> get_tile -> compute) on the engine's worker threads (cpu/pool.c)
 * and the caller's thread, and a design may nest 2000 levels (docs/reliability.md, "Deep chains and thread
 * stacks"). Three defences: the workers get a stack sized from the design's depth (their
 * own attributes: the process's default is the program's to set, never the library's), a run
 * whose threads' stacks do not fit an address-space limit is refused before any thread starts
 * (tsr_stack_check), and the recursion checks, once per level, that the stack it
 * runs on still has room (tsr_stack_low), so a stack that is too small anyway (a small
 * `ulimit -s` on the main thread, an application's own thread) fails the render cleanly
 * instead of with SIGSEGV. The engine's workers are created with the design's size itself. */
#include "cpu/cpu.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* The kernel keeps a growing main-thread stack this far from the mapping below it
 * (stack_guard_gap, 256 pages by default). */
#define KERNEL_STACK_GAP ((uintptr_t)1 << 20)

/* Stack one node level of the recursion takes, with room to spare: measured 1.14 KiB in the
 * Release build and 2.78 KiB under ASan (docs/reliability.md, "Deep chains and thread
 * stacks"). The floor covers what else runs on tessera's threads (the writer's deflate, the
 * sinks) with a build's usual frames. */
#ifdef __SANITIZE_ADDRESS__
#define STACK_PER_LEVEL ((size_t)4 << 10)
#define STACK_FLOOR ((size_t)4 << 20)
#else
#define STACK_PER_LEVEL ((size_t)2 << 10)
#define STACK_FLOOR ((size_t)1 << 20)
#endif
/* Beyond the levels: the guard's margin, and glibc's static TLS and the team's own frames. */
#define STACK_BASE (TSR_STACK_MARGIN + ((size_t)256 << 10))
#define MIB ((size_t)1 << 20)

/* The largest default any engine or the host (tsr_engine_thread_stacks) asked for: an engine
 * sets the default to it, never below, since threads an application started for an earlier
 * engine may call a later one. */
static pthread_mutex_t floor_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t asked;

/* Set glibc's default thread stack to `bytes` (raise_only: unless it is larger already). */
static tsr_status
set_default(size_t bytes, bool raise_only, tsr_error *err)
{
    pthread_attr_t a;
    size_t now = 0;
    int rc = pthread_getattr_default_np(&a);
    if (rc != 0)
        return tsr_fail(err, TSR_ENOMEM, "thread stacks: cannot read the default (error %d)", rc);
    rc = pthread_attr_getstacksize(&a, &now);
    if (rc == 0 && (raise_only ? now < bytes : now != bytes)) {
        rc = pthread_attr_setstacksize(&a, bytes);
        if (rc == 0)
            rc = pthread_setattr_default_np(&a);
    }
    pthread_attr_destroy(&a);
    if (rc != 0)
        return tsr_fail(err, rc == ENOMEM ? TSR_ENOMEM : TSR_EINVAL,
                        "thread stacks: cannot set the default to %zu bytes (error %d)", bytes,
                        rc);
    return TSR_OK;
}

tsr_status
tsr_engine_thread_stacks(size_t bytes, tsr_error *err)
{
    pthread_mutex_lock(&floor_mu);
    if (bytes > asked)
        asked = bytes;
    tsr_status st = set_default(bytes, true, err);
    pthread_mutex_unlock(&floor_mu);
    return st;
}

size_t
tsr_stack_for_depth(int64_t depth)
{
    size_t b = (size_t)depth * STACK_PER_LEVEL + STACK_BASE;
    b = (b + MIB - 1) & ~(MIB - 1);
    return b < STACK_FLOOR ? STACK_FLOOR : b;
}

int64_t
tsr_stack_touched(int64_t depth)
{
    return depth * (int64_t)STACK_PER_LEVEL + ((int64_t)64 << 10);
}

int64_t
tsr_design_depth(const tsr_design *d)
{
    int64_t *levels = calloc(d->nnodes, sizeof *levels);
    if (!levels)
        return -1;
    for (size_t i = 0; i < d->nnodes; i++) { /* children come before parents */
        const tsr_node *m = d->nodes[i];
        int64_t deepest = 0;
        for (size_t k = 0; k < m->nedges; k++)
            if (levels[m->edges[k].child->id] > deepest)
                deepest = levels[m->edges[k].child->id];
        levels[m->id] = deepest + 1;
    }
    int64_t root = levels[d->root->id];
    free(levels);
    return root;
}

/* Whether `bytes` of address space can still be mapped: under RLIMIT_AS (ulimit -v) a
 * reservation that is given back at once, counting as the threads' stacks would. */
static bool
address_space_left(size_t bytes)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return true;
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return false;
    munmap(p, bytes);
    return true;
}

tsr_status
tsr_stack_check(int threads, size_t stack, int64_t nest, int64_t minimum, tsr_error *err)
{
    /* The threads - 1 workers (cpu/pool.c) and the stream's writer thread each get a stack,
     * and the plan's minimum must be mappable too: refuse here, naming the remedy, a run whose
     * threads would not fit, rather than when the first band starts them. */
    size_t per = stack + (64 << 10); /* glibc's guard page and static TLS */
    double want = (double)per * threads + (double)minimum;
    if (want > 9e18 || !address_space_left((size_t)want)) {
        struct rlimit rl;
        getrlimit(RLIMIT_AS, &rl);
        return tsr_fail(err, TSR_EPLAN,
                        "thread stacks: %d threads x %zu MiB (a chain of %lld nested nodes) and "
                        "the memory plan's minimum %.1f MiB do not fit the address space "
                        "ulimit -v leaves (%llu MiB in all): use fewer threads (--threads N) "
                        "or raise ulimit -v",
                        threads, stack >> 20, (long long)nest, (double)minimum / 1048576.0,
                        (unsigned long long)(rl.rlim_cur >> 20));
    }
    return TSR_OK;
}

/* What the calling thread knows of its own stack, learned on first use. */
typedef struct stack_info {
    bool known;      /* learned (or found unknowable: then floor is 0 and nothing is low) */
    bool main;       /* the process's initial thread, whose stack is RLIMIT_STACK */
    uintptr_t floor; /* lowest frame address that still leaves TSR_STACK_MARGIN below */
    size_t size;     /* its size, as the guard counts it (margin included) */
} stack_info;

static _Thread_local stack_info here;

static void
learn(stack_info *s)
{
    pthread_attr_t a;
    void *lo = NULL;
    size_t size = 0;
    s->known = true;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return; /* no /proc, say: no guard on this thread, as before */
    int rc = pthread_attr_getstack(&a, &lo, &size);
    pthread_attr_destroy(&a);
    if (rc != 0)
        return;
    uintptr_t low = (uintptr_t)lo;
    s->main = getpid() == gettid();
    if (s->main) {
        /* glibc reports min(RLIMIT_STACK, the distance down to the next mapping), less what
         * lies above __libc_stack_end. Under `ulimit -s unlimited` that distance is the figure
         * (tens of TiB with the legacy mmap layout): the stack may grow that far but not into
         * the kernel's guard gap above the next mapping. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY) {
            low += KERNEL_STACK_GAP;
            size = size > KERNEL_STACK_GAP ? size - KERNEL_STACK_GAP : 0;
        }
    }
    /* a stack smaller than the margin is always low: every level fails, none overflows */
    s->floor = low + TSR_STACK_MARGIN;
    s->size = size;
}

bool
tsr_stack_low(void)
{
    if (!here.known)
        learn(&here);
    return (uintptr_t)__builtin_frame_address(0) < here.floor;
}

size_t
tsr_stack_size(bool *main_thread)
{
    if (!here.known)
        learn(&here);
    if (main_thread)
        *main_thread = here.main;
    return here.size;
}
