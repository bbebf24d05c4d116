/* controller: the reference controller (`tessera controller`), the receiving end of the
 * framed stream of docs/streaming.md, over stream/'s framing, crc, inflate and pacing. */
#ifndef TSR_CONTROLLER_H
#define TSR_CONTROLLER_H

#include "stream/stream.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tsr_controller_opts {
    const char *listen;          /* "127.0.0.1:PORT", "[::1]:PORT" or "localhost:PORT"; a
                                  * loopback address only; port 0 picks a free one */
    double rate;                 /* sample bytes per second it consumes, 0 = unpaced */
    const char *out;             /* output path, NULL = discard (state kept in memory); one
                                  * %d (and no other %) = one file per job, %d its number */
    int64_t jobs;                /* complete jobs before it returns, >= 1; > 1 with `out`
                                  * only when `out` holds the %d */
    double stall_s;              /* a sender silent this long mid-job, or this long over one
                                  * frame (from its first byte to its last), is dropped; the
                                  * whole header must come within it (at most 60 s); 0 =
                                  * 600 s */
    bool exit_on_abort;          /* an abort frame fails the run (TSR_EIO) instead of
                                  * holding the job for the sender's return */
    volatile sig_atomic_t *stop; /* borrowed, may be NULL: stop, keeping the state */
    FILE *log;                   /* messages ("tessera controller: ..."), e.g. stderr */
    const char *fault;           /* test hook, NULL = none: as tsr_sink_opts.fault, on the
                                  * output file (N = its size in bytes) */
} tsr_controller_opts;

/* Run the reference receiver of docs/streaming.md: accept one sender at a time, answer the
 * resume offset from its state (OUT.tsrstate, written durably: data fdatasync'd, then the
 * state to a temporary, fsync, rename, fsync of the folder), check every frame (offsets
 * contiguous, crc, inflate, trailer crc), write or discard, consume at `rate`, count
 * underruns, return after `jobs` complete jobs. A sender that disconnects mid-stream, or
 * aborts (unless exit_on_abort), is not an error: its progress is recorded and the next
 * connection resumes. A job is recorded complete only when its trailer's crc matched; one
 * that did not match is held only up to where that connection began. Before it answers a
 * held offset or the total, or counts a complete job found at start, it reads the held
 * bytes back and checks their crc32 against the state's: bytes cut or changed since start
 * the job over from 0 (logged). Once a job is complete, the next connection is the next job,
 * whatever its fingerprint; only an incomplete job is resumed. The output (each job's) is
 * locked while in use. Output and state must be regular files or absent. TSR_EINVAL for a
 * bad or non-loopback address, --jobs > 1 without a %d, an output or state that is not a
 * regular file, an output another controller holds; TSR_EIO for a crc, protocol or
 * fingerprint error, an abort frame with exit_on_abort, or an I/O failure; TSR_EINTR when
 * stopped. */
tsr_status
tsr_controller_run(const tsr_controller_opts *o, tsr_error *err);

/* The controller's reader (controller/controller.c) over bytes already received, for the fuzz
 * target and tests: each serve is one connection whose sender sent buf[0, n) and closed. The
 * state lives in memory (as `tessera controller` without -o keeps it); samples go to out_fd
 * (pwrite at their offsets) when it is >= 0, and are read back from it (their crc32 against
 * the state's) before a held offset or the total is answered. One job: a complete one stays
 * held, as a restarted `--jobs 1` controller's would (its sender is answered the total).
 * `o` (copied; NULL = defaults): exit_on_abort and log are used, the rest ignored. */
typedef struct tsr_ctl_mem tsr_ctl_mem;

tsr_ctl_mem *
tsr_ctl_mem_new(int out_fd, const tsr_controller_opts *o);

/* 0: a job completed (trailer checked); 1: the connection ended without one (a sender gone
 * or aborted, a bad header refused); 2: a failure (err: crc, protocol, I/O, an abort with
 * exit_on_abort). *answered: the resume
 * offset it answered (TSR_RESUME_REFUSED for a refusal; 0 when none). */
int
tsr_ctl_mem_serve(tsr_ctl_mem *m, const uint8_t *buf, size_t n, uint64_t *answered,
                  tsr_error *err);

/* Whether a job is known, and what of it is held: bytes [0, offset) of total, their crc32. */
bool
tsr_ctl_mem_state(const tsr_ctl_mem *m, uint64_t *offset, uint64_t *total, uint32_t *crc);

void
tsr_ctl_mem_free(tsr_ctl_mem *m);

#endif
