/* stream internals shared by its files: clocks, the token bucket, host:port parsing. */
#ifndef TSR_STREAM_INT_H
#define TSR_STREAM_INT_H

#include "stream/stream.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

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

#endif
