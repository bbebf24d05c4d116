/* team_race: the frame team (stream/team.c) under ThreadSanitizer, which Criterion's runner
 * does not survive (it crashes at start-up under -fsanitize=thread). A team of 4 frames 6 MiB
 * writes, crc alone and deflated, into a file that is healthy, fails mid-write (EIO, ENOSPC
 * with short writes) or fails in the first frame, then into /dev/null while another thread
 * raises the stop request after 0-4.5 ms; each write's buffer is freed as soon as the write
 * returns. Expected: no report but one, the stop flag itself (a plain volatile
 * sig_atomic_t, which the CLI's signal handler writes and this driver writes from a thread).
 *
 * Build (not part of `make check`; docs/reliability.md §5 records its result):
 *     cmake -S . -B build-tsan -DCMAKE_C_FLAGS=-fsanitize=thread \
 *           -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DTSR_CUDA=OFF -DTSR_MPI=OFF
 *     cmake --build build-tsan --target tsr_stream
 *     cc -fsanitize=thread -g -O1 -D_GNU_SOURCE -I. -Iinclude tests/stream/team_race.c \
 *        build-tsan/stream/libtsr_stream.a build-tsan/tiles/libtsr_tiles.a -ldeflate -lz \
 *        -lcrypto -lpthread -o build-tsan/team_race && build-tsan/team_race */
#include "stream/stream.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void *
stopper(void *us)
{
    usleep((useconds_t)(uintptr_t)us);
    stop = 1;
    return NULL;
}

/* One write of a fresh copy of d, freed at once. */
static tsr_status
write_copy(tsr_sink *s, const uint8_t *d, size_t n, tsr_error *err)
{
    uint8_t *c = malloc(n);
    memcpy(c, d, n);
    tsr_status st = tsr_sink_write(s, c, n, err);
    free(c);
    return st;
}

int
main(void)
{
    size_t n = (size_t)6 << 20;
    uint8_t *d = malloc(n);
    uint64_t r = 1;
    for (size_t i = 0; i < n; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        d[i] = (i / 700000) % 3 == 1 ? (uint8_t)(r >> 56) : (uint8_t)(i / 53 % 7 * 30);
    }
    tsr_header h = {.version = 1, .depth = 8, .width = n, .height = 1, .swath_width = n,
                    .total = n};
    const char *faults[] = {NULL, "eio@2000000", "enospc@3000000,short:3", "eio@100"};
    int runs = 0;
    for (int rep = 0; rep < 5; rep++) {
        for (int z = 0; z < 8; z++) {
            tsr_sink_opts o = {.framed = true, .deflate = z & 1, .header = &h, .threads = 4,
                               .fault = faults[z / 2]};
            tsr_error err;
            tsr_sink *s = tsr_sink_open_ex("/tmp/team_race.tsr", &o, &err);
            if (!s) {
                fprintf(stderr, "team_race: %s\n", err.msg);
                return 1;
            }
            if (write_copy(s, d, n, &err) == TSR_OK)
                tsr_sink_finish(s, &err);
            else
                tsr_sink_abort(s, err.msg, NULL);
            tsr_sink_close(s, NULL);
            runs++;
        }
    }
    for (int rep = 0; rep < 10; rep++) {
        for (int z = 0; z < 2; z++) {
            stop = 0;
            tsr_sink_opts o = {.framed = true, .deflate = z, .header = &h, .threads = 4,
                               .stop = &stop};
            tsr_error err;
            tsr_sink *s = tsr_sink_open_ex("/dev/null", &o, &err);
            if (!s) {
                fprintf(stderr, "team_race: %s\n", err.msg);
                return 1;
            }
            pthread_t t;
            pthread_create(&t, NULL, stopper, (void *)(uintptr_t)(rep * 500));
            while (write_copy(s, d, n, &err) == TSR_OK)
                ;
            pthread_join(t, NULL);
            tsr_sink_abort(s, "stopped", NULL);
            tsr_sink_close(s, NULL);
            runs++;
        }
    }
    unlink("/tmp/team_race.tsr");
    free(d);
    printf("team_race: %d runs\n", runs);
    return 0;
}
