/* stream: clocks, the token bucket and host:port parsing shared by sinks and the controller. */
#include "stream/stream_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double
tsr_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
tsr_sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

void
tsr_bucket_init(tsr_bucket *b, double rate, double cap)
{
    b->rate = rate;
    b->cap = cap;
    b->tokens = cap;
    b->last = tsr_mono_s();
}

bool
tsr_bucket_take(tsr_bucket *b, size_t n, volatile sig_atomic_t *stop)
{
    if (b->rate <= 0)
        return true;
    for (;;) {
        double t = tsr_mono_s();
        b->tokens += (t - b->last) * b->rate;
        if (b->tokens > b->cap)
            b->tokens = b->cap; /* an idle spell does not buy a burst later */
        b->last = t;
        if (b->tokens >= (double)n) {
            b->tokens -= (double)n;
            return true;
        }
        if (stop && *stop)
            return false;
        double wait = ((double)n - b->tokens) / b->rate;
        tsr_sleep_s(wait < 0.05 ? wait : 0.05);
    }
}

bool
tsr_split_hostport(const char *hp, char *host, size_t hcap, char *port, size_t pcap,
                   int min_port)
{
    const char *colon;
    if (hp[0] == '[') {
        const char *end = strchr(hp, ']');
        if (!end || end[1] != ':' || (size_t)(end - hp - 1) >= hcap || end == hp + 1)
            return false;
        memcpy(host, hp + 1, (size_t)(end - hp - 1));
        host[end - hp - 1] = '\0';
        colon = end + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon || colon == hp || (size_t)(colon - hp) >= hcap)
            return false;
        memcpy(host, hp, (size_t)(colon - hp));
        host[colon - hp] = '\0';
        if (strchr(host, ':'))
            return false; /* a bare IPv6 address needs brackets */
    }
    size_t n = strlen(colon + 1);
    if (n == 0 || n > 5 || n >= pcap)
        return false;
    for (const char *q = colon + 1; *q; q++)
        if (*q < '0' || *q > '9')
            return false;
    strcpy(port, colon + 1);
    int v = atoi(port);
    return v >= min_port && v <= 65535;
}
