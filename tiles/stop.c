/* Stop requests inside long loops (tiles.h). A tile's work is bounded per pixel but not in
 * total (a 4000-point polygon with aa 4 is ~30 ms a row of 512 px, a 16384 px tile of a
 * sigma-256 blur seconds), and neither is decoding an image or building a table, so the loops
 * that can run long poll a flag once per row or row block: reading it is a thread-local load
 * and one more, cheap next to the row it guards. */
#include "tiles/tiles.h"

static _Thread_local const volatile sig_atomic_t *bound;

void
tsr_stop_bind(const volatile sig_atomic_t *flag)
{
    bound = flag;
}

bool
tsr_stop_requested(void)
{
    return bound && *bound;
}
