/* The wrappers behind failing_alloc.h. The linker's --wrap contract fixes the names
 * (__wrap_x is called instead of x, __real_x is the original): the one place this project
 * uses names with "__". */
#include "failing_alloc.h"

#include <errno.h>
#include <execinfo.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
char *__real_strdup(const char *s);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
char *__wrap_strdup(const char *s);

static atomic_bool armed;
static atomic_long calls;
static atomic_long target;
static atomic_bool fired;

void
fa_arm(long n)
{
    atomic_store(&calls, 0);
    atomic_store(&target, n);
    atomic_store(&fired, false);
    atomic_store(&armed, true);
}

void
fa_disarm(void)
{
    atomic_store(&armed, false);
}

long
fa_calls(void)
{
    return atomic_load(&calls);
}

bool
fa_fired(void)
{
    return atomic_load(&fired);
}

/* True when this call is the one to fail. */
static bool
fail_now(void)
{
    if (!atomic_load(&armed))
        return false;
    long c = atomic_fetch_add(&calls, 1) + 1;
    if (c != atomic_load(&target))
        return false;
    atomic_store(&fired, true);
    /* TSR_FA_TRACE=N: the call stack of failure N, on stderr (where a failure went unreported) */
    const char *tr = getenv("TSR_FA_TRACE");
    if (tr && atol(tr) == c) {
        void *frames[32];
        backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    }
    errno = ENOMEM;
    return true;
}

void *
__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *
__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *
__wrap_realloc(void *p, size_t n)
{
    /* realloc(p, 0) frees; failing it would make a free fail: never a failure point */
    if (p && n == 0)
        return __real_realloc(p, n);
    return fail_now() ? NULL : __real_realloc(p, n);
}

void *
__wrap_aligned_alloc(size_t align, size_t n)
{
    return fail_now() ? NULL : __real_aligned_alloc(align, n);
}

char *
__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : __real_strdup(s);
}
