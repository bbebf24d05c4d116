/* frame_bench: a framed sink's own cost (crc32, deflate, frame heads), without a renderer or
 * a medium in front of it: BYTES of rendered samples (a band of them, repeated) framed into
 * /dev/null (or OUT: "-" for a pipe), in writes of BAND bytes (default 64 MiB) as the writer
 * thread hands them over, with a team of THREADS framing threads (1: the writing thread frames
 * alone; stream/team.c). Prints MB/s of sample bytes. Measure with
 *
 *     tessera render designs/examples/microlens-array.yaml --rows 0:512 -o band.raw
 *     frame_bench band.raw THREADS [deflate] [BYTES [BAND [OUT]]]
 *     frame_bench band.raw THREADS 1e9 67108864 - | cat >/dev/null
 *
 * Build (not part of `make check`; docs/streaming.md "Framing threads" records its figures):
 *     cc -O2 -D_GNU_SOURCE -I. -Iinclude tests/stream/frame_bench.c BUILD/stream/libtsr_stream.a \
 *        BUILD/tiles/libtsr_tiles.a -ldeflate -lz -lcrypto -lpthread -o BUILD/frame_bench */
#include "stream/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: frame_bench SAMPLES.raw THREADS [deflate] [BYTES [BAND [OUT]]]\n");
        return 2;
    }
    unsigned threads = (unsigned)atoi(argv[2]);
    int a = 3;
    bool deflate = argc > a && strcmp(argv[a], "deflate") == 0;
    a += deflate;
    size_t total = argc > a ? (size_t)atof(argv[a]) : (size_t)256 << 20;
    size_t band = argc > a + 1 ? (size_t)atof(argv[a + 1]) : (size_t)64 << 20;
    const char *out = argc > a + 2 ? argv[a + 2] : "/dev/null";
    FILE *f = fopen(argv[1], "rb");
    uint8_t *buf = malloc(band);
    if (!f || !buf || threads < 1) {
        fprintf(stderr, "frame_bench: %s: cannot read\n", argv[1]);
        return 1;
    }
    /* the band: the file's samples, repeated to fill it */
    size_t got = fread(buf, 1, band, f);
    fclose(f);
    if (got == 0) {
        fprintf(stderr, "frame_bench: %s: empty\n", argv[1]);
        return 1;
    }
    for (size_t k = got; k < band; k += got)
        memcpy(buf + k, buf, band - k < got ? band - k : got);
    tsr_header h = {.version = 1, .depth = 8, .width = total, .height = 1,
                    .swath_width = total, .total = total};
    tsr_sink_opts o = {.framed = true, .deflate = deflate, .header = &h, .threads = threads};
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open_ex(out, &o, &err);
    if (!s) {
        fprintf(stderr, "frame_bench: %s\n", err.msg);
        return 1;
    }
    double t0 = now();
    for (size_t left = total; left > 0;) {
        size_t n = left < band ? left : band;
        if (tsr_sink_write(s, buf, n, &err) != TSR_OK) {
            fprintf(stderr, "frame_bench: %s\n", err.msg);
            return 1;
        }
        left -= n;
    }
    double t = now() - t0;
    if (tsr_sink_finish(s, &err) != TSR_OK || tsr_sink_close(s, &err) != TSR_OK) {
        fprintf(stderr, "frame_bench: %s\n", err.msg);
        return 1;
    }
    fprintf(stderr, "%zu bytes in %zu-byte writes, %s, %u thread%s: %.3f s, %.0f MB/s\n", total,
            band, deflate ? "deflated" : "crc only", threads, threads > 1 ? "s" : "", t,
            (double)total / t / 1e6);
    free(buf);
    return 0;
}
