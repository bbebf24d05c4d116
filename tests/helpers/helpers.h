/* Shared helpers for the Criterion suites. */
#ifndef TSR_TEST_HELPERS_H
#define TSR_TEST_HELPERS_H

#include "engine/engine.h"

#include <stddef.h>
#include <stdint.h>

/* Read a whole file; NULL if unreadable. *n gets the size. Caller frees. */
uint8_t *th_read_file(const char *path, size_t *n);

/* Path under the source tree (static buffer per call site is not needed: returns malloc'd). */
char *th_src(const char *rel);

/* Load a design from a YAML string (images relative to the source tree); aborts the test on
 * failure with the loader's message. */
tsr_design *th_design(const char *yaml);

/* Stream the whole design to memory with the given tile size and threads; returns malloc'd
 * bytes, *n the count. Aborts the test on failure. */
uint8_t *th_stream(const tsr_design *d, int64_t tile, int threads, size_t *n);

/* Root floats of rect r with the given tile size and threads. malloc'd. */
float *th_rect(const tsr_design *d, tsr_rect r, int64_t tile, int threads);

/* The files matching a glob pattern under the source tree, NULL-terminated, malloc'd. */
char **th_glob(const char *rel_pattern);
void th_glob_free(char **v);

#endif
