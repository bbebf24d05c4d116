/* cli: progress reports of a job (docs/semantics.md §1), a redrawn bar on a terminal or JSON lines,
 * from a thread of their own. Only the command uses them (engine/ and libtessera do not). */
#ifndef TSR_CLI_PROGRESS_H
#define TSR_CLI_PROGRESS_H

#include "stream/stream.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum tsr_progress_mode {
    TSR_PROGRESS_NONE, /* silent */
    TSR_PROGRESS_BAR,  /* one redrawn line: bytes, MB/s, ETA, underruns (terminals) */
    TSR_PROGRESS_JSON  /* JSON lines, at most 2 per second, from 1 s on ("long work") */
} tsr_progress_mode;

typedef struct tsr_progress tsr_progress;

/* What a progress thread reports. */
typedef struct tsr_progress_opts {
    tsr_progress_mode mode;
    uint64_t total;                   /* units of the whole job: stream bytes, or pixels */
    const tsr_sink *sink;             /* borrowed, may be NULL: delivery (its offset, start and
                                       * underrun counters are read); a job without a sink (a
                                       * preview) is measured by `computed` alone */
    const _Atomic uint64_t *computed; /* borrowed, may be NULL: units computed so far (stream
                                       * bytes count from 0, like the sink's offset), bumped by
                                       * the renderer per finished rect, read by the thread */
    const char *unit;                 /* of `computed` without a sink: "px"; NULL = "B" */
    bool always;                      /* the final line even for a job too short for any
                                       * other (one a user asked --progress json of) */
} tsr_progress_opts;

/* Start a thread that reports a job's progress to `f` (stderr). NULL for TSR_PROGRESS_NONE,
 * with neither a sink nor a counter, or when the thread cannot start (progress is never worth
 * failing a job). The fraction (bar percentage, JSON "fraction") is of `computed` (at least
 * what was delivered); the ETA is the longer of what is left to compute at the compute rate
 * and to deliver at the delivery rate. With a sink it times the first delivered byte (polled
 * every 20 ms): the bar says "first byte after S s" once, JSON lines carry it.
 * JSON line with a sink: {"bytes":N,"total":T,"start":S,"elapsed_s":E,"mb_per_s":R,"eta_s":X,
 * "underruns":U,"underrun_s":W,"computed":C,"fraction":F,"first_byte_s":B} (bytes delivered;
 * B = -1 until the first byte); without: {"computed":C,"total":T,"unit":"px","fraction":F,
 * "elapsed_s":E,"per_s":R,"eta_s":X}; a final one carries "done":true|false. */
tsr_progress *
tsr_progress_start_ex(const tsr_progress_opts *o, FILE *f);

/* tsr_progress_start_ex of a sink's delivery alone. */
tsr_progress *
tsr_progress_start(const tsr_sink *s, tsr_progress_mode mode, uint64_t total, FILE *f);

/* Stop the thread; print a final line (bar: a newline) if anything was printed (or `always`).
 * Returns the seconds from the start to the first delivered byte, -1 if none was seen (or p
 * is NULL). NULL ok. */
double
tsr_progress_stop(tsr_progress *p, bool done);

#endif
