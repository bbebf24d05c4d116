/* Shared helpers for the Criterion suites. */
#ifndef TSR_TEST_HELPERS_H
#define TSR_TEST_HELPERS_H

#include "engine/engine.h"
#include "stream/stream.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read a whole file; NULL if unreadable. *n gets the size. Caller frees. */
/* Set (value) or unset (NULL) environment variable `name` and read the TSR_* variables into
 * the library's knobs again (cli/tune.c), as the command does at start; the knobs are read
 * from the environment once when a test binary starts too. Returns what the reading said
 * (err may be NULL). */
tsr_status th_env_status(const char *name, const char *value, tsr_error *err);
#define th_env(name, value) ((void)th_env_status((name), (value), NULL))

uint8_t *th_read_file(const char *path, size_t *n);

/* Path under the source tree (static buffer per call site is not needed: returns malloc'd). */
char *th_src(const char *rel);

/* Load a design from a YAML string (images relative to the source tree); aborts the test on
 * failure with the loader's message. */
tsr_design *th_design(const char *yaml);

/* The loader's error for a design text that must not load (named "t.yaml", files relative to
 * the source tree); fails the test when it loads. */
tsr_error th_load_error(const char *yaml);

/* printf into a static buffer (4 KiB; the next call overwrites it): a design text made from a
 * template in a test. */
char *th_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same as tsr_engine_load loads a design: image headers only, decoding and tables left to
 * tsr_engine_new (tsr_design_opts.defer). `name` stands for the file in messages. */
tsr_design *th_design_deferred(const char *yaml, const char *name);

/* Stream the whole design to memory with the given tile size and threads; returns malloc'd
 * bytes, *n the count. Aborts the test on failure. */
uint8_t *th_stream(const tsr_design *d, int64_t tile, int threads, size_t *n);

/* The same with any engine options (a crop, TSR_DIRECT's `direct`, ...). */
uint8_t *th_stream_opts(const tsr_design *d, const tsr_engine_opts *o, size_t *n);

/* Engine e's stream from byte `start` to its end, through a file sink; malloc'd bytes. */
uint8_t *th_stream_engine(tsr_engine *e, uint64_t start, size_t *n);

/* Root floats of rect r with the given tile size and threads. malloc'd. */
float *th_rect(const tsr_design *d, tsr_rect r, int64_t tile, int threads);

/* The files matching a glob pattern under the source tree, NULL-terminated, malloc'd. */
char **th_glob(const char *rel_pattern);
void th_glob_free(char **v);

/* Every how many files of a long list (every example, every design) a test that renders each
 * one takes: $TSR_TEST_SAMPLE, which the sanitizer build sets (tests/CMakeLists.txt: there the
 * same renders cost several times as much, and every file is still rendered by the normal
 * build); 1 elsewhere. The files kept are the 0th, kth, 2kth, ... of the sorted list. */
size_t th_sample_step(void);

/* The first thread count a tile-invariance pass takes at tile size `tile`: 1, or 2 under the
 * sanitizers (th_sample_step() > 1) for tiles below 64 px, whose passes rebuild each shape per
 * tile and cost most there; the normal build runs 1 and 2 threads at every size. */
int th_threads_from(int64_t tile);

/* A scratch folder for a suite's tests (Criterion `.init = th_dir_make, .fini =
 * th_dir_remove`; each test runs in its own process, so each gets a fresh one): th_dir() is its
 * path, th_in_dir(name) a path inside it (static storage, 4 slots in turn). */
void th_dir_make(void);
void th_dir_remove(void);
const char *th_dir(void);
const char *th_in_dir(const char *name);

/* stdout redirected into a pipe that a thread reads to its end, for sinks opened as "-". */
typedef struct th_stdout_pipe {
    int saved, fd;   /* the real stdout; the pipe's read end */
    uint8_t *got;    /* what came through (malloc'd, cap bytes; the caller frees it) */
    size_t n, cap;
    pthread_t t;
} th_stdout_pipe;

/* Redirect; the reader keeps at most cap bytes. */
void th_stdout_pipe_start(th_stdout_pipe *p, size_t cap);

/* Restore stdout (the pipe's last writer, once the sink closed its own copy) and wait for the
 * reader: p->got and p->n then hold everything written. */
void th_stdout_pipe_finish(th_stdout_pipe *p);

/* A framed transcript (docs/streaming.md) parsed back and checked: header, frames contiguous with
 * good crcs (payloads inflated), then a trailer or an abort frame or nothing. */
typedef struct th_transcript {
    tsr_header h;
    uint8_t *data;     /* samples from the first frame's offset (malloc'd, h.total + 1) */
    uint64_t first;    /* the first frame's offset */
    uint64_t bytes;    /* samples */
    size_t frames, deflated;
    bool trailer, abort;
    bool cut;          /* ended inside a frame (only with allow_cut) */
    uint32_t trailer_crc;
    char reason[TSR_ABORT_MAX + 1];
    uint64_t abort_offset;
} th_transcript;

/* The header of a one-row 8-bit stream of `total` samples (fingerprint bytes 0, 1, ... 31), for
 * sinks fed by hand. */
tsr_header th_header(uint64_t total);

/* The python3 that imports `modules` (comma-separated: "numpy,tifffile"): $PYTHON, python3 or
 * Debian's /usr/bin/python3 (where a pyenv one shadows it); NULL when none does. */
const char *th_python(const char *modules);

/* Run a shell command line (printf-formatted); its exit status, -1 when it could not run. */
int th_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* splitmix64: a fixed, seedable sequence (*state advances), so a failing test replays. */
uint64_t th_rand(uint64_t *state);

/* Parse n bytes; asserts (fails the test) on anything malformed, and on a cut frame unless
 * allow_cut (a stream whose pipe broke may end inside one). */
th_transcript th_parse_transcript(const uint8_t *f, size_t n, bool allow_cut);

/* The same over a whole file, no cut allowed. */
th_transcript th_parse_transcript_file(const char *path);

#endif
