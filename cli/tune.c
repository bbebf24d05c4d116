/* The environment variables of docs/tuning.md, into the library's knobs. */
#include "cli/tune.h"
#include "tiles/tune.h"

#include <stdlib.h>
#include <string.h>

/* A variable that is set and not "0" (flags: TSR_NOGPU=1, TSR_GPU_TRACE=1, ...). */
static bool
flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* A whole number in [lo, hi] from variable `name` (`what` it counts, for the message); *out
 * untouched when it is unset. */
static tsr_status
number(const char *name, const char *what, long long lo, long long hi, long long *out,
       tsr_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return TSR_OK;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || v[0] < '0' || v[0] > '9' || n < lo || n > hi)
        return tsr_fail(err, TSR_EINVAL, "%s=%s: expected %s, %lld..%lld", name, v, what, lo,
                        hi);
    *out = n;
    return TSR_OK;
}

tsr_status
tsr_cli_tune_from_env(tsr_error *err)
{
    tsr_tune t = tsr_tune_defaults();
    long long blocks = -1, fault = 0, threads = 0, cores = 0;
    tsr_status st =
        number("TSR_GPU_GRID_BLOCKS", "the blocks of a launch", 0, 1LL << 31, &blocks, err);
    if (st == TSR_OK)
        st = number("TSR_GPU_FAULT", "a band number", 0, 1LL << 62, &fault, err);
    if (st == TSR_OK)
        st = number("TSR_FRAME_THREADS", "the number of framing threads", 1, 64, &threads,
                    err);
    if (st == TSR_OK)
        st = number("TSR_CORES", "the number of cores", 1, 4096, &cores, err);
    if (st != TSR_OK)
        return st;
    t.cores = (int)cores;
    t.gpu_grid_blocks = blocks;
    t.gpu_fault_band = (uint64_t)fault;
    t.frame_threads = (int)threads;
    const char *cache = getenv("TSR_GPU_CACHE");
    if (cache && *cache) {
        if (strcmp(cache, "all") != 0 && strcmp(cache, "off") != 0)
            return tsr_fail(err, TSR_EINVAL, "TSR_GPU_CACHE=%s: expected all or off", cache);
        t.gpu_cache = strcmp(cache, "all") == 0 ? 1 : 2;
    }
    const char *tune = getenv("TSR_GPU_TUNE");
    if (tune && *tune) {
        long long c = 0, b = 0;
        char *end;
        c = strtoll(tune, &end, 10);
        if (*end == ',')
            b = strtoll(end + 1, &end, 10);
        if (*end || c < 1 || b < 1 || c > 4096 || b > 65536)
            return tsr_fail(err, TSR_EINVAL, "TSR_GPU_TUNE=%s: expected CHUNK_MPX,BAND_MIB",
                            tune);
        t.gpu_chunk_px = (int64_t)c << 20;
        t.gpu_band_bytes = (int64_t)b << 20;
    }
    const char *period = getenv("TSR_GPU_PERIOD");
    t.gpu_period_host = period && strcmp(period, "host") == 0;
    t.no_gpu = flag("TSR_NOGPU");
    t.gpu_trace = flag("TSR_GPU_TRACE");
    t.gpu_blur_unstaged = flag("TSR_GPU_BLUR_UNSTAGED");
    t.gpu_host_serial = flag("TSR_GPU_HOST_SERIAL");
    t.gpus_on_cpu = flag("TSR_MULTI_CPU");
    t.no_vmsplice = flag("TSR_NO_VMSPLICE");
    const char *f = getenv("TSR_FAULT");
    t.sink_fault = f && *f ? f : NULL;
    tsr_tune_set(&t);
    return TSR_OK;
}

bool
tsr_cli_direct_from_env(void)
{
    const char *v = getenv("TSR_DIRECT");
    return v && strcmp(v, "1") == 0;
}
