/* tessera: the command line. Argument parsing and nothing else; the work is in engine/. */
#include "engine/engine.h"
#include "gpu/gpu.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage:\n"
    "  tessera render  DESIGN [-o OUT] [--rate R] [--backend cpu|gpu|auto] [--memory M]\n"
    "                         [--threads N] [--framed] [--deflate] [--resume-at B]\n"
    "                         [--rows Y0:Y1] [--progress auto|bar|json|none] [--tile T]\n"
    "                         [--stall-timeout S] [--gpu-memory M]\n"
    "  tessera preview DESIGN --region X,Y,W,H [--scale K] [-o out.png|-] [--depth 8|16]\n"
    "                         [--memory M] [--threads N] [--tile T]\n"
    "  tessera profile DESIGN [--region X,Y,W,H] [--backend ...] [--target 10MB/s] [--json]\n"
    "                         [--memory M] [--threads N] [--tile T] [--gpu-memory M]\n"
    "  tessera check   DESIGN [--memory M] [--threads N] [--tile T]\n"
    "  tessera controller --listen 127.0.0.1:PORT [--rate R] [-o FILE] [--jobs N]\n"
    "                         [--stall-timeout S] [--exit-on-abort]\n"
    "OUT is a path, - (stdout), null or tcp://HOST:PORT (framed). Sizes: 64M = 64e6 bytes,\n"
    "64MiB = 64*2^20; rates: 10MB/s. SIGINT/SIGTERM stop cleanly and print the resume offset.\n"
    "Exit status: 0 ok, 1 render or I/O failure, 2 usage, design or memory-plan error.\n";

typedef struct args {
    const char *cmd, *design, *out, *backend;
    tsr_engine_opts eo;
    tsr_rect region;
    bool have_region, json;
    int64_t scale;
    int depth;
    double target; /* bytes/s */
    double rate;   /* --rate, bytes/s; 0 = unpaced */
    double stall;  /* --stall-timeout, seconds; 0 = the sink's default */
    bool framed, deflate, have_resume;
    uint64_t resume_at;
    const char *progress; /* auto|bar|json|none */
    const char *listen;   /* controller */
    int64_t jobs;         /* controller */
    bool exit_on_abort;   /* controller */
} args;

/* Set by the first SIGINT/SIGTERM: the engine's workers (each tile, and long loops row by
 * row), the band loop and the sink read it and stop cleanly. */
static volatile sig_atomic_t g_stop;

/* The render's sink once open, for the second signal's resume offset; its offset is an atomic
 * read (tsr_sink_offset), safe in a handler. */
static tsr_sink *volatile g_sink;
static volatile sig_atomic_t g_sink_tcp;

/* write(2) of a NUL-terminated string: what a handler may call. */
static void
say(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t k = write(STDERR_FILENO, s, n);
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

/* Decimal digits of v into the end of buf[24]; returns the first. */
static char *
u64_text(uint64_t v, char buf[24])
{
    char *p = buf + 23;
    *p = '\0';
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    return p;
}

/* The first signal asks for a clean stop and says so at once; the second ends the process
 * now, with the resume offset of what the sink has confirmed (the bytes it delivered: a raw
 * file may hold more, which --resume-at cuts back). Async-signal-safe: write(2), _exit. */
static void
on_stop(int sig)
{
    if (!g_stop) {
        g_stop = sig;
        say("tessera: stopping...\n");
        return;
    }
    tsr_sink *s = g_sink;
    if (s) {
        char b[24], *off = u64_text(tsr_sink_offset(s), b);
        say("tessera: interrupted again at byte ");
        say(off);
        if (g_sink_tcp) {
            say("; run it again to resume (the controller answers the offset)\n");
        } else {
            say("; resume with --resume-at ");
            say(off);
            say("\n");
        }
    } else {
        say("tessera: interrupted again: exiting now\n");
    }
    _exit(1);
}

/* SIGINT/SIGTERM request a clean stop; a second one exits at once (on_stop). No SA_RESTART:
 * a blocked call returns and sees the flag. */
static void
install_stop(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time: the first signal is counted */
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* What a command printed to stdout must have arrived: flush it and look at the stream's error
 * flag (a full disk, a closed pipe, a closed stdout), so `check > /dev/full` fails. Returns
 * rc, or 1 when the output was lost. */
static int
stdout_done(int rc)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    fprintf(stderr, "tessera: stdout: %s\n", errno ? strerror(errno) : "write error");
    return rc ? rc : 1;
}

/* A descriptor 0-2 closed at exec would be handed to the first file tessera opens, and what
 * goes to stderr (progress JSON, the log) or stdout would land in the output. Each closed one
 * is taken by an O_PATH descriptor of /dev/null: the number is used, and reading or writing
 * through it still fails (EBADF) as on a closed descriptor, so `check >&-` still reports its
 * lost output instead of printing into /dev/null. False if that could not be done. */
static bool
hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int got = open("/dev/null", O_PATH); /* the lowest free number: fd itself */
        if (got != fd) {
            if (got >= 0)
                close(got);
            return false;
        }
    }
    return true;
}

static int
usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tessera: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return 2;
}

/* An int64 in decimal digits with an optional '-', ending at `stop` (or the string's end):
 * nothing else. strtoll would also take blanks, a '+' and, wrapped, out-of-range values; a
 * lenient parse turns a typo into a different number. Sets *end past the digits. */
static bool
parse_i64_to(const char *s, char stop, int64_t *out, const char **end)
{
    bool neg = *s == '-';
    const char *p = s + neg;
    int64_t v = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++)
        if (!tsr_mul_checked(v, 10, &v) || !tsr_add_checked(v, neg ? '0' - *p : *p - '0', &v))
            return false;
    if (*p != stop && *p != '\0')
        return false;
    *out = v;
    *end = p;
    return true;
}

static bool
parse_i64(const char *s, int64_t *out)
{
    const char *end;
    return parse_i64_to(s, '\0', out, &end);
}

/* "X,Y,W,H", each strict (parse_i64), W and H > 0. Whether it lies inside the root is the
 * engine's exact test (tsr_rect_contains), whatever X + W would be. */
static bool
parse_region(const char *s, tsr_rect *r)
{
    int64_t v[4];
    for (int i = 0; i < 4; i++) {
        const char *end;
        if (!parse_i64_to(s, i < 3 ? ',' : '\0', &v[i], &end) || (i < 3) != (*end == ','))
            return false;
        s = end + (i < 3);
    }
    *r = tsr_rect_make(v[0], v[1], v[2], v[3]);
    return r->w > 0 && r->h > 0;
}

static int
parse_args(int argc, char **argv, args *a)
{
    enum { O_BACKEND = 256, O_MEMORY, O_THREADS, O_ROWS, O_TILE, O_REGION, O_SCALE, O_DEPTH,
           O_TARGET, O_JSON, O_RATE, O_FRAMED, O_DEFLATE, O_RESUME, O_PROGRESS, O_LISTEN,
           O_JOBS, O_STALL, O_GPU_MEMORY, O_EXIT_ON_ABORT };
    static const struct option longs[] = {
        {"backend", required_argument, 0, O_BACKEND}, {"memory", required_argument, 0, O_MEMORY},
        {"threads", required_argument, 0, O_THREADS}, {"rows", required_argument, 0, O_ROWS},
        {"tile", required_argument, 0, O_TILE},       {"region", required_argument, 0, O_REGION},
        {"scale", required_argument, 0, O_SCALE},     {"depth", required_argument, 0, O_DEPTH},
        {"target", required_argument, 0, O_TARGET},   {"json", no_argument, 0, O_JSON},
        {"rate", required_argument, 0, O_RATE},       {"framed", no_argument, 0, O_FRAMED},
        {"deflate", no_argument, 0, O_DEFLATE},       {"resume-at", required_argument, 0, O_RESUME},
        {"progress", required_argument, 0, O_PROGRESS}, {"listen", required_argument, 0, O_LISTEN},
        {"jobs", required_argument, 0, O_JOBS}, {"stall-timeout", required_argument, 0, O_STALL},
        {"gpu-memory", required_argument, 0, O_GPU_MEMORY},
        {"exit-on-abort", no_argument, 0, O_EXIT_ON_ABORT},
        {"help", no_argument, 0, 'h'},                {0, 0, 0, 0}};
    a->cmd = argv[1];
    a->scale = 1;
    a->depth = 8;
    a->target = 1e7;
    a->progress = "auto";
    a->jobs = 1;
    optind = 2;
    opterr = 0;
    int c;
    double v;
    int64_t i;
    while ((c = getopt_long(argc, argv, ":o:h", longs, NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case O_BACKEND: a->eo.backend = optarg; break;
        case O_MEMORY:
            if (!tsr_parse_size(optarg, &v) || v < 1)
                return usage_error("--memory %s: expected a size like 512M or 4GiB", optarg);
            a->eo.memory = v > 9e18 ? INT64_MAX : (int64_t)v;
            break;
        case O_GPU_MEMORY:
            if (!tsr_parse_size(optarg, &v) || v < 1)
                return usage_error("--gpu-memory %s: expected a size like 8G or 40GiB", optarg);
            a->eo.gpu_memory = v > 9e18 ? INT64_MAX : (int64_t)v;
            break;
        case O_THREADS:
            if (!parse_i64(optarg, &i) || i < 1 || i > 1024)
                return usage_error("--threads %s: expected 1..1024", optarg);
            a->eo.threads = (int)i;
            break;
        case O_ROWS: {
            int64_t y0, y1;
            const char *end;
            if (!parse_i64_to(optarg, ':', &y0, &end) || *end != ':' ||
                !parse_i64(end + 1, &y1) || y0 < 0 || y1 <= y0)
                return usage_error("--rows %s: expected Y0:Y1 with 0 <= Y0 < Y1", optarg);
            a->eo.rows[0] = y0;
            a->eo.rows[1] = y1;
            break;
        }
        case O_TILE:
            if (!parse_i64(optarg, &i) || i < 1 || i > TSR_TILE_MAX)
                return usage_error("--tile %s: expected 1..16384", optarg);
            a->eo.tile = i;
            break;
        case O_REGION:
            if (!parse_region(optarg, &a->region))
                return usage_error("--region %s: expected X,Y,W,H (decimal integers) with "
                                   "W, H > 0", optarg);
            a->have_region = true;
            break;
        case O_SCALE:
            if (!parse_i64(optarg, &a->scale) || a->scale < 1)
                return usage_error("--scale %s: expected an integer >= 1", optarg);
            break;
        case O_DEPTH:
            if (strcmp(optarg, "8") && strcmp(optarg, "16"))
                return usage_error("--depth %s: expected 8 or 16", optarg);
            a->depth = atoi(optarg);
            break;
        case O_TARGET:
            if (!tsr_parse_size(optarg, &a->target) || a->target <= 0)
                return usage_error("--target %s: expected a rate like 10MB/s", optarg);
            break;
        case O_JSON: a->json = true; break;
        case O_RATE:
            if (!tsr_parse_size(optarg, &a->rate) || !(a->rate > 0) || a->rate > 1e15)
                return usage_error("--rate %s: expected a rate like 10MB/s", optarg);
            break;
        case O_STALL:
            if (!tsr_parse_decimal(optarg, &a->stall) || !(a->stall > 0) || a->stall > 1e9)
                return usage_error("--stall-timeout %s: expected seconds > 0", optarg);
            break;
        case O_FRAMED: a->framed = true; break;
        case O_DEFLATE: a->deflate = true; break;
        case O_RESUME:
            /* int64 is enough: a stream holds at most 2^62 sample bytes (DESIGN.md §2) */
            if (!parse_i64(optarg, &i) || i < 0)
                return usage_error("--resume-at %s: expected a byte offset", optarg);
            a->resume_at = (uint64_t)i;
            a->have_resume = true;
            break;
        case O_PROGRESS:
            if (strcmp(optarg, "auto") && strcmp(optarg, "bar") && strcmp(optarg, "json") &&
                strcmp(optarg, "none"))
                return usage_error("--progress %s: expected auto, bar, json or none", optarg);
            a->progress = optarg;
            break;
        case O_LISTEN: a->listen = optarg; break;
        case O_JOBS:
            if (!parse_i64(optarg, &a->jobs) || a->jobs < 1)
                return usage_error("--jobs %s: expected an integer >= 1", optarg);
            break;
        case O_EXIT_ON_ABORT: a->exit_on_abort = true; break;
        case 'h': fputs(usage, stdout); exit(stdout_done(0));
        case ':': return usage_error("%s: missing value", argv[optind - 1]);
        default: return usage_error("%s: unknown option", argv[optind - 1]);
        }
    }
    if (strcmp(a->cmd, "controller") == 0) {
        if (optind != argc)
            return usage_error("%s: controller takes no DESIGN", argv[optind]);
        if (!a->listen)
            return usage_error("%s: controller needs --listen 127.0.0.1:PORT", a->cmd);
        return 0;
    }
    if (a->listen || a->jobs != 1 || a->exit_on_abort)
        return usage_error("%s: --listen, --jobs and --exit-on-abort are controller options",
                           a->cmd);
    if (optind != argc - 1)
        return usage_error("%s: expected exactly one DESIGN", optind < argc ? argv[optind] : a->cmd);
    a->design = argv[optind];
    bool streaming = a->rate > 0 || a->framed || a->deflate || a->have_resume ||
                     strcmp(a->progress, "auto") != 0 || a->stall > 0;
    if (streaming && strcmp(a->cmd, "render") != 0)
        return usage_error("%s: --rate, --framed, --deflate, --resume-at, --progress and "
                           "--stall-timeout are render options", a->cmd);
    bool tcp = a->out && strncmp(a->out, "tcp://", 6) == 0;
    if (a->stall > 0 && !tcp)
        return usage_error("--stall-timeout%s: only for a tcp:// output (files and pipes block "
                           "as long as their reader does)", "");
    if (a->deflate && !a->framed && !tcp)
        return usage_error("--deflate%s: needs --framed or a tcp:// output", "");
    if (a->have_resume && tcp)
        return usage_error("--resume-at%s: not with tcp:// (the controller answers the resume "
                           "offset)", "");
    return 0;
}

static void
peak_rss(long long *bytes)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *bytes = (long long)ru.ru_maxrss * 1024;
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
fail(const tsr_error *err)
{
    fprintf(stderr, "tessera: %s\n", err->msg);
    return tsr_status_exit_code(err->status);
}

static tsr_progress_mode
progress_mode(const char *m)
{
    if (strcmp(m, "none") == 0)
        return TSR_PROGRESS_NONE;
    if (strcmp(m, "bar") == 0)
        return TSR_PROGRESS_BAR;
    if (strcmp(m, "json") == 0)
        return TSR_PROGRESS_JSON;
    return isatty(STDERR_FILENO) ? TSR_PROGRESS_BAR : TSR_PROGRESS_JSON;
}

static int
cmd_render(args *a, tsr_engine *e)
{
    tsr_error err = {0};
    const char *out = a->out ? a->out : "-";
    bool tcp = strncmp(out, "tcp://", 6) == 0;
    uint64_t total = tsr_engine_stream_bytes(e);
    if (a->have_resume && a->resume_at > total) {
        fprintf(stderr, "tessera: --resume-at %llu: past the end of the stream (%llu bytes)\n",
                (unsigned long long)a->resume_at, (unsigned long long)total);
        return 2;
    }
    tsr_header hdr;
    /* TSR_FAULT: the sink fault hook the reliability tests use (docs/reliability.md). */
    tsr_sink_opts so = {.start = a->resume_at, .framed = a->framed || tcp,
                        .deflate = a->deflate, .rate = a->rate, .stop = &g_stop,
                        .stall_s = a->stall, .fault = getenv("TSR_FAULT")};
    if (so.framed) {
        if (tsr_engine_header(e, &hdr, &err) != TSR_OK)
            return fail(&err);
        so.header = &hdr;
    }
    tsr_sink *s = tsr_sink_open_ex(out, &so, &err);
    if (!s) {
        if (g_stop)
            fprintf(stderr, "tessera: interrupted before the stream started\n");
        return g_stop ? 1 : fail(&err);
    }
    g_sink_tcp = tcp;
    g_sink = s;
    uint64_t start = tsr_sink_start(s);
    tsr_progress_mode pm = progress_mode(a->progress);
    double t0 = now_s();
    tsr_progress *pr = tsr_progress_start(s, pm, total, stderr);
    tsr_stream_opts o = {.start = start, .stop = &g_stop};
    tsr_status st = tsr_engine_stream_ex(e, s, &o, &err);
    if (st == TSR_OK)
        st = tsr_sink_finish(s, &err);
    tsr_progress_stop(pr, st == TSR_OK);
    double secs = now_s() - t0, starved;
    uint64_t under = tsr_sink_underruns(s, &starved), off = tsr_sink_offset(s);
    if (st != TSR_OK) {
        /* Never a trailer: the receiver learns why, where the link still allows it. */
        const char *why = g_stop == SIGTERM ? "interrupted by SIGTERM"
                          : g_stop          ? "interrupted by SIGINT"
                                            : err.msg;
        tsr_sink_abort(s, why, NULL);
        g_sink = NULL;
        tsr_sink_close(s, NULL);
        if (g_stop) {
            if (tcp)
                fprintf(stderr, "tessera: interrupted at byte %llu; run it again to resume "
                        "(the controller answers the offset)\n", (unsigned long long)off);
            else
                fprintf(stderr, "tessera: interrupted at byte %llu; resume with --resume-at "
                        "%llu\n", (unsigned long long)off, (unsigned long long)off);
            return 1;
        }
        int rc = fail(&err);
        if (tcp)
            fprintf(stderr, "tessera: stopped at byte %llu; run it again to resume (the "
                    "controller answers the offset)\n", (unsigned long long)off);
        else if (off > start)
            fprintf(stderr, "tessera: stopped at byte %llu; resume with --resume-at %llu\n",
                    (unsigned long long)off, (unsigned long long)off);
        return rc;
    }
    tsr_error cerr = {0};
    g_sink = NULL;
    if (tsr_sink_close(s, &cerr) != TSR_OK)
        return fail(&cerr);
    if (a->rate > 0 && pm != TSR_PROGRESS_NONE)
        fprintf(stderr, "tessera: %llu bytes in %.1f s (%.2f MB/s, paced at %.2f MB/s), "
                "%llu underruns (%.3f s starved)\n", (unsigned long long)(off - start), secs,
                secs > 0 ? (double)(off - start) / secs / 1e6 : 0.0, a->rate / 1e6,
                (unsigned long long)under, starved);
    return 0;
}

static int
cmd_controller(args *a)
{
    tsr_error err = {0};
    tsr_controller_opts o = {.listen = a->listen, .rate = a->rate, .out = a->out,
                             .jobs = a->jobs, .stall_s = a->stall,
                             .exit_on_abort = a->exit_on_abort, .stop = &g_stop, .log = stderr,
                             .fault = getenv("TSR_FAULT")}; /* docs/reliability.md */
    if (tsr_controller_run(&o, &err) != TSR_OK)
        return fail(&err);
    return 0;
}

static int
cmd_preview(args *a, tsr_engine *e)
{
    tsr_error err = {0};
    if (!a->have_region)
        return usage_error("%s: preview needs --region X,Y,W,H", a->design);
    const char *out = a->out ? a->out : "preview.png";
    if (tsr_engine_preview(e, a->region, a->scale, a->depth, out, &err) != TSR_OK)
        return fail(&err);
    int64_t k = a->scale, w = a->region.w, h = a->region.h; /* ceil(w / k), no w + k */
    fprintf(stderr, "tessera: wrote %s (%lldx%lld)\n", strcmp(out, "-") ? out : "stdout",
            (long long)(w / k + (w % k != 0)), (long long)(h / k + (h % k != 0)));
    return 0;
}

static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static int
cmd_profile(args *a, tsr_engine *e, const tsr_design *d)
{
    tsr_error err = {0};
    tsr_rect r = a->region;
    if (!a->have_region) {
        /* default: whole rows from the top, up to 256 MB of samples (the whole design if less) */
        int64_t bps = d->out.depth / 8, rows = 256000000 / (d->root->w * bps);
        rows = rows < 1 ? 1 : (rows > d->root->h ? d->root->h : rows);
        r = tsr_rect_make(0, 0, d->root->w, rows);
    }
    uint64_t bytes = 0;
    double t0 = now_s();
    if (tsr_engine_drain(e, r, &bytes, &err) != TSR_OK)
        return fail(&err);
    double secs = now_s() - t0;
    double rate = (double)bytes / secs, total = (double)d->root->w * (double)d->root->h * (d->out.depth / 8);
    tsr_engine_stats st = tsr_engine_get_stats(e);
    long long rss;
    peak_rss(&rss);
    FILE *f = stdout;
    if (a->json) {
        fprintf(f, "{\"design\":");
        json_str(f, a->design);
        fprintf(f, ",\"region\":[%lld,%lld,%lld,%lld],\"bytes\":%llu,\"seconds\":%.6f,"
                   "\"mb_per_s\":%.6f,\"target_mb_per_s\":%.6f,\"headroom\":%.6f,"
                   "\"projected_seconds\":%.3f,\"backend\":\"%s\",\"threads\":%d,"
                   "\"peak_rss_bytes\":%lld,\"cache\":{\"hits\":%llu,\"misses\":%llu,"
                   "\"evictions\":%llu,\"waits\":%llu,\"overflow\":%llu,\"bytes\":%lld,"
                   "\"peak_bytes\":%lld},\"nodes\":[",
                (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                (unsigned long long)bytes, secs, rate / 1e6, a->target / 1e6, rate / a->target,
                total / rate, tsr_engine_backend(e), tsr_engine_threads(e), rss,
                (unsigned long long)st.hits, (unsigned long long)st.misses,
                (unsigned long long)st.evictions, (unsigned long long)st.waits,
                (unsigned long long)st.overflow, (long long)st.cache_bytes,
                (long long)st.cache_peak);
        for (size_t i = 0; i < d->nnodes; i++) {
            const tsr_node *n = d->nodes[i];
            fprintf(f, "%s{\"name\":", i ? "," : "");
            json_str(f, n->name);
            fprintf(f, ",\"trait\":\"%s\",\"seconds\":%.6f}",
                    n->nedges ? n->edges[0].trait->name : "none", st.node_seconds[i]);
        }
        fprintf(f, "],\"traits\":{");
        int first = 1;
        for (size_t i = 0; tsr_traits[i]; i++) {
            if (st.trait_seconds[i] <= 0)
                continue;
            fprintf(f, "%s\"%s\":%.6f", first ? "" : ",", tsr_traits[i]->name, st.trait_seconds[i]);
            first = 0;
        }
        fprintf(f, "}}\n");
        return 0;
    }
    fprintf(f, "design      %s\n", a->design);
    fprintf(f, "region      %lld,%lld,%lld,%lld (%llu sample bytes)\n", (long long)r.x,
            (long long)r.y, (long long)r.w, (long long)r.h, (unsigned long long)bytes);
    fprintf(f, "backend     %s, %d threads\n", tsr_engine_backend(e), tsr_engine_threads(e));
    fprintf(f, "throughput  %.1f MB/s in %.3f s = %.1fx the %.0f MB/s target\n", rate / 1e6,
            secs, rate / a->target, a->target / 1e6);
    fprintf(f, "projected   whole design (%.3g bytes): %.1f s at this rate, %.1f s at the target\n",
            total, total / rate, total / a->target);
    fprintf(f, "cache       %llu hits, %llu misses, %llu evictions, %llu waits, %llu uncached; "
               "%.1f MiB held, %.1f MiB peak\n",
            (unsigned long long)st.hits, (unsigned long long)st.misses,
            (unsigned long long)st.evictions, (unsigned long long)st.waits,
            (unsigned long long)st.overflow, (double)st.cache_bytes / 1048576.0,
            (double)st.cache_peak / 1048576.0);
    fprintf(f, "peak RSS    %.1f MiB\n", (double)rss / 1048576.0);
    fprintf(f, "time per node (own pixels, summed over threads):\n");
    for (size_t i = 0; i < d->nnodes; i++)
        fprintf(f, "  %-40s %9.3f s\n", d->nodes[i]->name, st.node_seconds[i]);
    fprintf(f, "time per trait (layer + blend, summed over threads):\n");
    for (size_t i = 0; tsr_traits[i]; i++)
        if (st.trait_seconds[i] > 0)
            fprintf(f, "  %-40s %9.3f s\n", tsr_traits[i]->name, st.trait_seconds[i]);
    return 0;
}

int
main(int argc, char **argv)
{
    /* first of all: before tessera opens a design, an output or a log */
    if (!hold_std_fds()) {
        fprintf(stderr, "tessera: cannot open /dev/null for a closed descriptor 0-2: %s\n",
                strerror(errno));
        return 1;
    }
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : stdout_done(0);
    }
    const char *cmds[] = {"render", "preview", "profile", "check", "controller", NULL};
    int known = 0;
    for (int i = 0; cmds[i]; i++)
        known |= strcmp(argv[1], cmds[i]) == 0;
    if (!known)
        return usage_error("%s: unknown command", argv[1]);
    /* A closed pipe or connection must be an error we report (EPIPE), not a silent kill. */
    signal(SIGPIPE, SIG_IGN);
    args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    /* From here on SIGINT/SIGTERM stop cleanly (a stop during loading ends the render
     * before its first byte, still with the resume message). */
    install_stop();
    a.eo.stop = &g_stop;
    if (strcmp(a.cmd, "controller") == 0)
        return cmd_controller(&a);
    tsr_error err = {0};
    a.eo.plan_only = strcmp(a.cmd, "check") == 0; /* no image decoded, no table built */
    tsr_design *d = tsr_engine_load(a.design, &err);
    if (!d)
        return fail(&err);
    tsr_engine *e = tsr_engine_new(d, &a.eo, &err);
    if (!e) {
        tsr_design_free(d);
        return fail(&err);
    }
    if (strcmp(a.cmd, "render") == 0)
        rc = cmd_render(&a, e);
    else if (strcmp(a.cmd, "preview") == 0)
        rc = cmd_preview(&a, e);
    else if (strcmp(a.cmd, "profile") == 0)
        rc = stdout_done(cmd_profile(&a, e, d));
    else if (g_stop) { /* a stop while loading or planning */
        fprintf(stderr, "tessera: interrupted\n");
        rc = 1;
    } else {
        tsr_engine_print_check(e, stdout);
        rc = stdout_done(0);
    }
    tsr_engine_free(e);
    tsr_design_free(d);
    return rc;
}
