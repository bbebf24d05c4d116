/* pipe_bench: the stdout sink alone, without a renderer in front of it.
 *
 * Pushes BYTES (default 4e9) through the writer thread and the stdout sink in band-sized
 * buffers (default 100 MB, what microlens-array's 512-row bands are), refilling each buffer
 * before it is submitted as the renderer does, so the page faults that vmsplice's dropped
 * pages cost on the refill are counted. Measure with
 *
 *     pipe_bench [BYTES [BAND]] | cat >/dev/null                      # vmsplice
 *     TSR_NO_VMSPLICE=1 pipe_bench [BYTES [BAND]] | cat >/dev/null     # write(2)
 *
 * Build (not part of `make check`; docs/performance.md "stdout pipe" records its figures):
 *     cc -O2 -D_GNU_SOURCE -I. tests/stream/pipe_bench.c BUILD/stream/libtsr_stream.a \
 *        BUILD/tiles/libtsr_tiles.a -lpng -lz -lcrypto -lpthread -o BUILD/pipe_bench */
#include "stream/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int
main(int argc, char **argv)
{
    double total = argc > 1 ? atof(argv[1]) : 4e9;
    size_t band = argc > 2 ? (size_t)atof(argv[2]) : 100000000;
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("-", &err);
    if (!s) {
        fprintf(stderr, "pipe_bench: %s\n", err.msg);
        return 1;
    }
    tsr_writer *w = tsr_writer_new(s, 3, band);
    if (!w) {
        fprintf(stderr, "pipe_bench: no writer\n");
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t done = 0;
    for (unsigned k = 0; done < (uint64_t)total; k++) {
        uint8_t *b = tsr_writer_acquire(w);
        if (!b)
            break;
        size_t n = (uint64_t)total - done < band ? (size_t)((uint64_t)total - done) : band;
        memset(b, (int)(k & 0xff), n); /* the renderer writes every byte of a band */
        tsr_writer_submit(w, b, n);
        done += n;
    }
    tsr_status st = tsr_writer_finish(w, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    tsr_sink_close(s, NULL);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (st != TSR_OK) {
        fprintf(stderr, "pipe_bench: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "pipe_bench: %.0f bytes in %.3f s = %.0f MB/s (%s)\n", (double)done, secs,
            (double)done / secs / 1e6, getenv("TSR_NO_VMSPLICE") && strcmp(getenv("TSR_NO_VMSPLICE"), "0") ? "write" : "vmsplice");
    return 0;
}
