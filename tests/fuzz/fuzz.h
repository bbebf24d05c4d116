/* What every fuzz target (tests/fuzz/fuzz_*.c) and the replay driver share: the entry point
 * libFuzzer calls, and PROPERTY, which turns a violated property into a finding (an abort,
 * which libFuzzer and ctest's replays both report). A target defines FUZZ_TARGET, its name for
 * the message, before including this. */
#ifndef TSR_FUZZ_H
#define TSR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROPERTY(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, FUZZ_TARGET ": property violated: " __VA_ARGS__); \
            fputc('\n', stderr); \
            abort(); \
        } \
    } while (0)

#endif
