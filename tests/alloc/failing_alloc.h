/* An injectable allocator for tests: a test executable linked with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=strdup
 * (tests/CMakeLists.txt does this for tests/test_alloc*.c) sends those calls of its own
 * objects and of our static libraries here; shared libraries (libc, libyaml, libpng, libgomp)
 * keep the real allocator. Nothing in the engine sources changes.
 *
 * Armed with fa_arm(n), the n-th wrapped allocation call from then on returns NULL (errno
 * ENOMEM), once; every other call is passed through. Thread-safe (atomic counters); with one
 * worker thread the order of calls, and so what "the n-th" is, is deterministic. */
#ifndef TSR_TEST_FAILING_ALLOC_H
#define TSR_TEST_FAILING_ALLOC_H

#include <stdbool.h>

/* Count calls from zero and fail the n-th (n >= 1). */
void
fa_arm(long n);

/* Stop failing and counting. */
void
fa_disarm(void);

/* Wrapped calls since fa_arm. */
long
fa_calls(void);

/* Whether the armed failure happened (the n-th call came). */
bool
fa_fired(void);

#endif
