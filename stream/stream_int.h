/* stream internals shared by its files and by controller/ (the receiving end of the same
 * framing): clocks, the token bucket, host:port parsing, the fault hook. */
#ifndef TSR_STREAM_INT_H
#define TSR_STREAM_INT_H

#include "stream/stream.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

/* A u64 on the wire: 8 bytes, little-endian (header fields, frame offsets, the resume answer). */
void
tsr_put_le64(uint8_t *p, uint64_t v);

uint64_t
tsr_get_le64(const uint8_t *p);

/* Monotonic seconds. */
double
tsr_mono_s(void);

/* Sleep about s seconds (an early wake-up is harmless to every caller). */
void
tsr_sleep_s(double s);

/* A token bucket of `rate` bytes/s holding at most `cap` bytes; starts full. */
typedef struct tsr_bucket {
    double rate, tokens, cap, last;
} tsr_bucket;

void
tsr_bucket_init(tsr_bucket *b, double rate, double cap);

/* Take n bytes (n <= cap), sleeping in slices of at most 50 ms until the rate allows them.
 * False, having taken nothing, when *stop became non-zero while waiting. rate <= 0: no-op. */
bool
tsr_bucket_take(tsr_bucket *b, size_t n, volatile sig_atomic_t *stop);

/* Split "host:port" or "[v6]:port" into host and port (digits, min_port..65535). */
bool
tsr_split_hostport(const char *hp, char *host, size_t hcap, char *port, size_t pcap,
                   int min_port);

/* The sink fault hook (stream/fault.c, docs/reliability.md). Off when zeroed. */
typedef struct tsr_fault {
    bool on;       /* anything configured */
    int err;       /* errno of the failure, 0 = none */
    uint64_t at;   /* the medium byte it happens at (ENOSPC: the medium's capacity) */
    bool failed;   /* it happened (errors other than ENOSPC stay) */
    bool shorts;   /* every call takes a random 1..n bytes */
    uint64_t rng;  /* their sequence */
    uint64_t pos;  /* the medium byte the next call starts at */
} tsr_fault;

/* Parse "KIND@BYTE" (enospc, epipe, eio, reset) and "short[:SEED]", comma-separated; NULL or
 * "" is no fault. TSR_EINVAL for anything else. */
tsr_status
tsr_fault_parse(const char *spec, tsr_fault *f, tsr_error *err);

/* Before a call that would hand n bytes to the kernel: how many it may hand (1..n), or 0 with
 * errno set when it must fail instead. */
size_t
tsr_fault_allow(tsr_fault *f, size_t n);

/* After a call took k bytes. */
void
tsr_fault_took(tsr_fault *f, size_t k);

/* The medium was cut back to byte pos (a framed file dropping half a frame). */
void
tsr_fault_seek(tsr_fault *f, uint64_t pos);

#endif
