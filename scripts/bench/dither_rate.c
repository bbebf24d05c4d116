/* The packing rate of nodes/dither.c on one core: rows of samples dithered into packed 1/2/4
 * -bit rows (tsr_dither_row), MB/s of packed output (MB = 1e6 bytes), best of 5 passes over
 * ROWS distinct rows of WIDTH samples (128 MiB of 8-bit samples, 256 MiB of 16-bit: read from
 * memory, not cache, as a converted band is), CPU time of the calling thread.
 * docs/outputs.md quotes it. Build and run:
 *
 *   cmake --build build --target tsr_nodes
 *   gcc -O3 -I. -Iinclude scripts/bench/dither_rate.c build/nodes/libtsr_nodes.a \
 *       build/tiles/libtsr_tiles.a -lm -lpthread -o /tmp/dither_rate && /tmp/dither_rate
 */
#include "nodes/dither.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WIDTH 65536
#define ROWS 2048

static double
now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int
main(void)
{
    const char *arrays[] = {"threshold", "bayer8", "bayer256", "blue64"};
    uint8_t *smp = malloc((size_t)WIDTH * ROWS * 2), *row = malloc(WIDTH);
    uint64_t s = 1;
    for (size_t i = 0; i < (size_t)WIDTH * ROWS * 2; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        smp[i] = (uint8_t)(s >> 56);
    }
    printf("%-10s %5s %4s %12s %12s\n", "array", "depth", "bits", "MB/s packed", "Msamples/s");
    for (size_t a = 0; a < 4; a++) {
        tsr_dither *d = tsr_dither_parse(arrays[a], NULL);
        for (int depth = 8; depth <= 16; depth += 8)
            for (int bits = 1; bits <= 4; bits *= 2) {
                double best = 1e30;
                for (int pass = 0; pass < 5; pass++) {
                    double t0 = now(CLOCK_THREAD_CPUTIME_ID);
                    for (int64_t y = 0; y < ROWS; y++)
                        tsr_dither_row(d, smp + (size_t)y * WIDTH * (size_t)(depth / 8), depth, 0,
                                       WIDTH, y, bits, row, NULL);
                    double t = now(CLOCK_THREAD_CPUTIME_ID) - t0;
                    best = t < best ? t : best;
                }
                double out = (double)WIDTH * bits / 8 * ROWS;
                printf("%-10s %5d %4d %12.0f %12.0f\n", arrays[a], depth, bits, out / best / 1e6,
                       (double)WIDTH * ROWS / best / 1e6);
            }
        tsr_dither_free(d);
    }
    free(smp);
    free(row);
    return 0;
}
