/* stream: progress reports (DESIGN.md §4): a redrawn bar on a terminal, JSON lines otherwise.
 * See stream.h.
 *
 * A thread of its own samples the sink's delivered offset, so reports come at a steady pace
 * whatever the band size (a 100 MB band at 10 MB/s takes 10 s) and reflect what the machine
 * got, not what the renderer has run ahead to. */
#include "stream/stream.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#define BAR_PERIOD_S 0.2
#define JSON_PERIOD_S 0.5 /* at most 2 lines a second */
#define JSON_FIRST_S 1.0  /* "long work": a run shorter than this prints nothing */

struct tsr_progress {
    const tsr_sink *sink;  /* borrowed */
    tsr_progress_mode mode;
    uint64_t total, start; /* stream bytes, and where this run started */
    FILE *f;
    double t0;             /* monotonic start */
    bool printed;          /* at least one report went out */
    bool quit;             /* stop was called */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
};

static double
mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "1.23 GB": SI units, as sizes are spelled on the command line. */
static void
human(char *b, size_t n, double v)
{
    const char *u[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int i = 0;
    while (v >= 1000 && i < 5) {
        v /= 1000;
        i++;
    }
    snprintf(b, n, i ? "%.2f %s" : "%.0f %s", v, u[i]);
}

static void
hms(char *b, size_t n, double s)
{
    if (!(s >= 0) || s > 1e9) {
        snprintf(b, n, "--:--:--");
        return;
    }
    unsigned long long t = (unsigned long long)(s + 0.5);
    snprintf(b, n, "%llu:%02llu:%02llu", t / 3600, t / 60 % 60, t % 60);
}

static void
report(tsr_progress *p, bool final, bool done)
{
    double el = mono_s() - p->t0, us;
    uint64_t off = tsr_sink_offset(p->sink);
    uint64_t und = tsr_sink_underruns(p->sink, &us);
    double moved = (double)(off - p->start);
    double rate = el > 0 ? moved / el : 0;
    double eta = rate > 0 ? (double)(p->total - (off < p->total ? off : p->total)) / rate : -1;
    if (p->mode == TSR_PROGRESS_JSON) {
        fprintf(p->f,
                "{\"bytes\":%llu,\"total\":%llu,\"start\":%llu,\"elapsed_s\":%.3f,"
                "\"mb_per_s\":%.3f,\"eta_s\":%.1f,\"underruns\":%llu,\"underrun_s\":%.3f%s%s}\n",
                (unsigned long long)off, (unsigned long long)p->total,
                (unsigned long long)p->start, el, rate / 1e6, eta < 0 ? -1.0 : eta,
                (unsigned long long)und, us, final ? ",\"done\":" : "",
                final ? (done ? "true" : "false") : "");
    } else {
        char a[32], t[32], r[32], e[32];
        human(a, sizeof a, (double)off);
        human(t, sizeof t, (double)p->total);
        human(r, sizeof r, rate);
        hms(e, sizeof e, eta);
        double pct = p->total ? 100.0 * (double)off / (double)p->total : 100.0;
        fprintf(p->f, "\r%6.2f%%  %s / %s  %s/s  ETA %s  underruns %llu\033[K%s", pct, a, t, r,
                e, (unsigned long long)und, final ? "\n" : "");
    }
    fflush(p->f);
    p->printed = true;
}

static void *
progress_main(void *arg)
{
    tsr_progress *p = arg;
    double period = p->mode == TSR_PROGRESS_JSON ? JSON_PERIOD_S : BAR_PERIOD_S;
    double next = p->t0 + (p->mode == TSR_PROGRESS_JSON ? JSON_FIRST_S : BAR_PERIOD_S);
    pthread_mutex_lock(&p->mu);
    while (!p->quit) {
        double now = mono_s();
        if (now >= next) {
            report(p, false, false);
            next += period;
            if (next < now)
                next = now + period;
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double wait = next - now;
        ts.tv_sec += (time_t)wait;
        ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

tsr_progress *
tsr_progress_start(const tsr_sink *s, tsr_progress_mode mode, uint64_t total, FILE *f)
{
    if (mode == TSR_PROGRESS_NONE || !s || !f)
        return NULL;
    tsr_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->sink = s;
    p->mode = mode;
    p->total = total;
    p->start = tsr_sink_start(s);
    p->f = f;
    p->t0 = mono_s();
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    /* Signals stay with the main thread, which is the one that stops the render. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thread, NULL, progress_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

void
tsr_progress_stop(tsr_progress *p, bool done)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    if (p->printed)
        report(p, true, done);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
