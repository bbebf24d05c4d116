/* cli: progress reports (docs/semantics.md §1): a redrawn bar on a terminal, JSON lines otherwise.
 * See progress.h.
 *
 * A thread of its own samples the counters, so reports come at a steady pace whatever the
 * band size (a 100 MB band at 10 MB/s takes 10 s) and no worker ever waits for the terminal:
 * the sink's delivered offset (what the machine got) and, where the job has one, a counter of
 * what is computed, which the renderer bumps per finished rect (so the first band moves the
 * bar too, and a preview, which has no sink, has something to show). */
#include "cli/progress.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#define BAR_PERIOD_S 0.2
#define JSON_PERIOD_S 0.5 /* at most 2 lines a second */
#define JSON_FIRST_S 1.0  /* "long work": a run shorter than this prints nothing */
#define FIRST_POLL_S 0.02 /* the first delivered byte is looked for this often */

struct tsr_progress {
    tsr_progress_opts o;   /* sink and computed borrowed */
    uint64_t start;        /* where this run started (the sink's start, else 0) */
    FILE *f;
    double t0;             /* monotonic start */
    double first;          /* seconds to the first delivered byte; < 0 before it */
    bool first_said;       /* the bar said it */
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

/* "1.23 GB", "4.50 Mpx": SI prefixes, as sizes are spelled on the command line. */
static void
human(char *b, size_t n, double v, const char *unit)
{
    const char *pre[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (v >= 1000 && i < 5) {
        v /= 1000;
        i++;
    }
    snprintf(b, n, i ? "%.2f %s%s" : "%.0f %s%s", v, pre[i], unit);
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

/* Seconds left for `left` units at `done` units in `el` seconds; -1 when nothing is done. */
static double
eta_of(double left, double done, double el)
{
    return done > 0 && el > 0 ? left / (done / el) : -1;
}

/* Look for the first delivered byte; true when it was found now. */
static bool
see_first(tsr_progress *p)
{
    if (p->first >= 0 || !p->o.sink || tsr_sink_offset(p->o.sink) <= p->start)
        return false;
    p->first = mono_s() - p->t0;
    return true;
}

static void
report(tsr_progress *p, bool final, bool done)
{
    double el = mono_s() - p->t0, us = 0;
    uint64_t total = p->o.total, und = 0;
    uint64_t off = p->o.sink ? tsr_sink_offset(p->o.sink) : p->start;
    uint64_t comp = p->o.computed ? atomic_load(p->o.computed) : off;
    if (p->o.sink)
        und = tsr_sink_underruns(p->o.sink, &us);
    comp = comp < off ? off : comp > total ? total : comp; /* nothing is sent before it is made */
    /* ETA: what is left to compute at the compute rate, or to send at the delivery rate,
     * whichever takes longer (a paced job computes ahead, and its last bands still go out at
     * the rate after the renderer is done) */
    double made = (double)(comp - (comp > p->start ? p->start : comp));
    double eta = eta_of((double)(total - comp), made, el);
    if (p->o.sink && off > p->start && eta >= 0) {
        double sent = eta_of((double)(total - (off < total ? off : total)),
                             (double)(off - p->start), el);
        eta = sent > eta ? sent : eta;
    }
    double frac = total ? (double)comp / (double)total : 1.0;
    if (final && done)
        frac = 1.0, comp = total, eta = 0;
    if (p->o.mode == TSR_PROGRESS_JSON && p->o.sink) {
        double rate = el > 0 ? (double)(off - p->start) / el : 0;
        fprintf(p->f,
                "{\"bytes\":%llu,\"total\":%llu,\"start\":%llu,\"elapsed_s\":%.3f,"
                "\"mb_per_s\":%.3f,\"eta_s\":%.1f,\"underruns\":%llu,\"underrun_s\":%.3f,"
                "\"computed\":%llu,\"fraction\":%.6f,\"first_byte_s\":%.3f%s%s}\n",
                (unsigned long long)off, (unsigned long long)total,
                (unsigned long long)p->start, el, rate / 1e6, eta < 0 ? -1.0 : eta,
                (unsigned long long)und, us, (unsigned long long)comp, frac,
                p->first < 0 ? -1.0 : p->first, final ? ",\"done\":" : "",
                final ? (done ? "true" : "false") : "");
    } else if (p->o.mode == TSR_PROGRESS_JSON) {
        fprintf(p->f,
                "{\"computed\":%llu,\"total\":%llu,\"unit\":\"%s\",\"fraction\":%.6f,"
                "\"elapsed_s\":%.3f,\"per_s\":%.1f,\"eta_s\":%.1f%s%s}\n",
                (unsigned long long)comp, (unsigned long long)total, p->o.unit, frac, el,
                el > 0 ? made / el : 0.0, eta < 0 ? -1.0 : eta, final ? ",\"done\":" : "",
                final ? (done ? "true" : "false") : "");
    } else {
        char a[32], t[32], r[32], e[32];
        hms(e, sizeof e, eta);
        if (p->first >= 0 && !p->first_said) {
            fprintf(p->f, "\rfirst byte after %.1f s\033[K\n", p->first);
            p->first_said = true;
        }
        if (p->o.sink) {
            human(a, sizeof a, (double)off, "B");
            human(t, sizeof t, (double)total, "B");
            human(r, sizeof r, el > 0 ? (double)(off - p->start) / el : 0, "B");
            fprintf(p->f, "\r%6.2f%%  sent %s / %s  %s/s  ETA %s  underruns %llu\033[K%s",
                    100.0 * frac, a, t, r, e, (unsigned long long)und, final ? "\n" : "");
        } else {
            human(a, sizeof a, (double)comp, p->o.unit);
            human(t, sizeof t, (double)total, p->o.unit);
            human(r, sizeof r, el > 0 ? made / el : 0, p->o.unit);
            fprintf(p->f, "\r%6.2f%%  %s / %s  %s/s  ETA %s\033[K%s", 100.0 * frac, a, t, r,
                    e, final ? "\n" : "");
        }
    }
    fflush(p->f);
    p->printed = true;
}

static void *
progress_main(void *arg)
{
    tsr_progress *p = arg;
    bool json = p->o.mode == TSR_PROGRESS_JSON;
    double period = json ? JSON_PERIOD_S : BAR_PERIOD_S;
    double next = p->t0 + (json ? JSON_FIRST_S : BAR_PERIOD_S);
    pthread_mutex_lock(&p->mu);
    while (!p->quit) {
        double now = mono_s();
        see_first(p);
        if (now >= next) {
            report(p, false, false);
            next += period;
            if (next < now)
                next = now + period;
            continue;
        }
        /* until the first byte is out, wake often enough to time it */
        double wake = p->first < 0 && p->o.sink && now + FIRST_POLL_S < next ? now + FIRST_POLL_S
                                                                            : next;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double wait = wake - now;
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
tsr_progress_start_ex(const tsr_progress_opts *o, FILE *f)
{
    if (!o || o->mode == TSR_PROGRESS_NONE || (!o->sink && !o->computed) || !f)
        return NULL;
    tsr_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->o = *o;
    if (!p->o.unit)
        p->o.unit = "B";
    p->start = o->sink ? tsr_sink_start(o->sink) : 0;
    p->f = f;
    p->t0 = mono_s();
    p->first = -1;
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

tsr_progress *
tsr_progress_start(const tsr_sink *s, tsr_progress_mode mode, uint64_t total, FILE *f)
{
    tsr_progress_opts o = {.mode = mode, .total = total, .sink = s};
    return tsr_progress_start_ex(&o, f);
}

double
tsr_progress_stop(tsr_progress *p, bool done)
{
    if (!p)
        return -1;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    see_first(p); /* a job shorter than one poll */
    if (p->printed || p->o.always)
        report(p, true, done);
    double first = p->first;
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return first;
}
