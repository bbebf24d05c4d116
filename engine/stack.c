/* Thread stacks. The CPU backend recurses once per node level (compute.c: compute ->
 * edge_layer -> fetch -> get_tile -> compute) on OpenMP worker threads and the caller's
 * thread, and a design may nest 2000 levels (docs/reliability.md, "Deep chains and thread
 * stacks"). Two defences: threads created later get a stack that holds such a chain
 * (tsr_engine_thread_stacks), and the recursion checks, once per level, that the stack it
 * runs on still has room (tsr_stack_low), so a stack that is too small anyway (OMP_STACKSIZE,
 * a small `ulimit -s` on the main thread, a pool started earlier) fails the render cleanly
 * instead of with SIGSEGV. */
#include "engine/engine_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

/* The kernel keeps a growing main-thread stack this far from the mapping below it
 * (stack_guard_gap, 256 pages by default). */
#define KERNEL_STACK_GAP ((uintptr_t)1 << 20)

tsr_status
tsr_engine_thread_stacks(size_t bytes, tsr_error *err)
{
    pthread_attr_t a;
    size_t now = 0;
    int rc = pthread_getattr_default_np(&a);
    if (rc != 0)
        return tsr_fail(err, TSR_ENOMEM, "thread stacks: cannot read the default (error %d)", rc);
    rc = pthread_attr_getstacksize(&a, &now);
    if (rc == 0 && now < bytes) {
        rc = pthread_attr_setstacksize(&a, bytes);
        if (rc == 0)
            rc = pthread_setattr_default_np(&a);
    }
    pthread_attr_destroy(&a);
    if (rc != 0)
        return tsr_fail(err, rc == ENOMEM ? TSR_ENOMEM : TSR_EINVAL,
                        "thread stacks: cannot raise the default to %zu bytes (error %d)", bytes,
                        rc);
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
