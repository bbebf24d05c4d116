/* tessera: the command line. Argument parsing and nothing else; the work is in engine/. */
#include "cli/progress.h"
#include "cli/tune.h"
#include "controller/controller.h"
#include "designs/designs.h"
#include "dist/dist.h"
#include "engine/engine.h"
#include "engine/version.h"
#include "gpu/gpu.h"
#include "tiles/tune.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The subcommands. An option belongs to the ones its bits name (options[] below): any other
 * command refuses it, naming it, rather than silently ignoring it. */
enum { C_RENDER = 1, C_PREVIEW = 2, C_PROFILE = 4, C_CHECK = 8, C_CONTROLLER = 16 };

typedef struct command {
    const char *name;
    int bit;     /* 0: takes no option but --help */
    bool takes_o;
    const char *usage; /* its lines of the usage text */
    const char *o_help; /* what its -o OUT is, with the default (NULL: takes no -o) */
} command;

static const command commands[] = {
    {"render", C_RENDER, true,
     "  tessera render  DESIGN [-o OUT] [--rate R] [--backend cpu|gpu|auto] [--memory M]\n"
     "                         [--threads N] [--framed] [--deflate] [--resume-at B]\n"
     "                         [--rows Y0:Y1] [--progress auto|bar|json|none] [--tile T]\n"
     "                         [--stall-timeout S] [--gpu-memory M] [--gpus all|N]\n",
     "where the samples go: a path, - (stdout; refused on a terminal), null (discarded, "
     "counted) or tcp://HOST:PORT (framed); default: -"},
    {"preview", C_PREVIEW, true,
     "  tessera preview DESIGN --region X,Y,W,H [--scale K] [-o out.png|-] [--depth 8|16]\n"
     "                         [--fast] [--force] [--progress auto|bar|json|none]\n"
     "                         [--backend cpu|gpu|auto] [--memory M] [--threads N]\n"
     "                         [--tile T] [--gpu-memory M]\n",
     "the PNG written, named *.png or with no extension, or - (stdout); default: preview.png"},
    {"profile", C_PROFILE, true,
     "  tessera profile DESIGN [--region X,Y,W,H | --seconds S] [--backend cpu|gpu|auto]\n"
     "                         [--target 10MB/s] [--json] [--memory M] [--threads N]\n"
     "                         [--tile T] [--gpu-memory M] [--gpus all|N]\n"
     "                         [-o OUT [--framed] [--deflate]]\n",
     "also stream as many rows as the samples into OUT (a new path, null, a device or "
     "tcp://HOST:PORT) and print that stream's rate; an existing file is refused; default: none"},
    {"check", C_CHECK, false,
     "  tessera check   DESIGN [--tree | --pixels] [--memory M] [--threads N] [--tile T]\n", NULL},
    {"controller", C_CONTROLLER, true,
     "  tessera controller --listen 127.0.0.1:PORT [--rate R] [-o FILE] [--jobs N]\n"
     "                         [--stall-timeout S] [--exit-on-abort]\n",
     "the output file (a %d in it with --jobs N), the resume state kept beside it; default: "
     "none (samples discarded, the state held in memory)"},
    {"help", 0, false, "  tessera help [COMMAND]   (or: tessera COMMAND --help)\n", NULL},
    {"version", 0, false, "  tessera --version\n", NULL},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const char usage_notes[] =
    "OUT is a path, - (stdout), null or tcp://HOST:PORT (framed). Sizes: 64M = 64e6 bytes,\n"
    "64MiB = 64*2^20; rates: 10MB/s. SIGINT/SIGTERM stop cleanly and print the resume offset.\n"
    "Exit status: 0 ok, 1 render or I/O failure, 2 usage, design or memory-plan error.\n";

static void
print_options(FILE *f, const command *c);

/* The usage of one command (NULL: all of them), with the notes; a command's own usage then
 * lists its options, each with what it does and its default. */
static void
print_usage(FILE *f, const command *c)
{
    fputs("usage:\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!c || c == &commands[i])
            fputs(commands[i].usage, f);
    fputs(usage_notes, f);
    if ((!c || c->bit) && f == stdout) /* help asked for; a bare `tessera` gets the lines */
        print_options(f, c);
}

static const command *
find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0)
            return &commands[i];
    return NULL;
}

/* The largest preview image (samples) written without --force: 256 MiB, a 16k x 16k 8-bit
 * thumbnail and more than any screen shows. */
#define PREVIEW_MAX_BYTES 268435456.0

typedef struct args {
    const command *c; /* the subcommand */
    const char *cmd, *design, *out, *backend;
    tsr_engine_opts eo;
    tsr_rect region;
    bool have_region, json, tree, force, fast;
    bool pixels; /* check --pixels: the design back with every length in pixels */
    int64_t scale;
    int depth;
    double target; /* bytes/s */
    double rate;   /* --rate, bytes/s; 0 = unpaced */
    double stall;  /* --stall-timeout, seconds; 0 = the sink's default */
    double seconds; /* profile --seconds: sampling time; 0 = the default */
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
/* What profile's engine polls instead: set by a signal (with g_stop) and by the end of
 * --seconds (profile_deadline), which is no user's stop. */
static volatile sig_atomic_t g_halt;
static atomic_int g_signals; /* SIGINT/SIGTERM handled so far (lock-free: signal-safe) */

/* The render's sink once open, for the second signal's resume offset; its offset is an atomic
 * read (tsr_sink_offset), safe in a handler. */
static tsr_sink *volatile g_sink;
static volatile sig_atomic_t g_sink_tcp;
/* Rank 0 of an mpirun job, until its sink opens: where to resume, said at the first signal
 * (a rank that dies while MPI starts leaves the others in MPI_Init, or in the handshake, until
 * mpirun kills them a second after its warning: the line must not wait for them). */
static char g_early[160];
static volatile sig_atomic_t g_early_on;

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
    /* Counted atomically: a process-directed signal may run this on any thread that does not
     * block it (the CUDA runtime starts threads of its own), so two signals can be handled at
     * once on two threads, where a test of g_stop would call both the first. */
    if (sig == SIGCONT && atomic_load(&g_signals) > 0)
        return; /* under mpirun: its warning (install_stop) comes again; only SIGINT and
                 * SIGTERM escalate */
    if (atomic_fetch_add(&g_signals, 1) == 0) {
        g_stop = sig;
        g_halt = 1;
        say("tessera: stopping...\n");
        if (g_early_on)
            say(g_early);
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

/* SIGINT/SIGTERM, and `also` when non-zero, request a clean stop; a second one exits at once
 * (on_stop). No SA_RESTART: a blocked call returns and sees the flag. */
static void
install_stop(int also)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time: the first signal is counted */
    sigaddset(&sa.sa_mask, SIGTERM);
    if (also)
        sigaddset(&sa.sa_mask, also);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (also)
        sigaction(also, &sa, NULL);
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

/* A usage error: the message, the command's own usage lines (not the whole usage) and where
 * to read more. Exit status 2. */
static int
usage_error(const command *c, const char *fmt, const char *arg)
{
    fprintf(stderr, "tessera %s: ", c->name);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see tessera %s --help)\nusage:\n%s", c->name, c->usage);
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

/* The URL scheme `out` starts with ("udp" for "udp://..."), or false when it is a plain path:
 * a path that happens to hold "://" further on is still a path. */
static bool
url_scheme(const char *out, char *scheme, size_t n)
{
    size_t k = strspn(out, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
    if (k == 0 || strncmp(out + k, "://", 3) != 0)
        return false;
    snprintf(scheme, n, "%.*s", (int)k, out);
    return true;
}

/* What -o names must be something the command writes: render knows paths, -, null and
 * tcp://; preview writes PNG, so a name with another extension ("x.jpg") would silently get a
 * PNG. A name with no extension (a device, a FIFO) is taken as it is. 0, or the usage exit. */
static int
check_out(const args *a)
{
    char scheme[32];
    if (!a->out)
        return 0;
    bool preview = strcmp(a->cmd, "preview") == 0;
    if (url_scheme(a->out, scheme, sizeof scheme) && (preview || strcmp(scheme, "tcp") != 0)) {
        fprintf(stderr, "tessera: %s: unknown output scheme '%s' (%s)\n", a->out, scheme,
                preview ? "preview writes a PNG file or -"
                        : "render writes to a path, -, null or tcp://HOST:PORT");
        return 2;
    }
    if (strcmp(a->cmd, "profile") == 0 && strcmp(a->out, "-") == 0)
        return usage_error(a->c, "%s: profile prints its report on stdout; measure a pipe "
                                 "with render -o - | CONSUMER", "-o -");
    if (!preview || strcmp(a->out, "-") == 0)
        return 0;
    const char *base = strrchr(a->out, '/');
    const char *dot = strrchr(base ? base + 1 : a->out, '.');
    if (dot && dot != (base ? base + 1 : a->out) && strcasecmp(dot, ".png") != 0)
        return usage_error(a->c, "%s: preview writes PNG only; name the output *.png", a->out);
    return 0;
}

enum { O_BACKEND = 256, O_MEMORY, O_THREADS, O_ROWS, O_TILE, O_REGION, O_SCALE, O_DEPTH,
       O_TARGET, O_JSON, O_RATE, O_FRAMED, O_DEFLATE, O_RESUME, O_PROGRESS, O_LISTEN, O_JOBS,
       O_STALL, O_GPU_MEMORY, O_EXIT_ON_ABORT, O_SECONDS, O_TREE, O_FORCE, O_FAST, O_GPUS,
       O_PIXELS };

/* Every long option: the commands it belongs to, its value's name, what it does and its
 * default. The one place they are written: --help prints them (print_options) and tessera.1's
 * OPTIONS say the same words (tests/cli/options.sh compares them); the commands' usage lines,
 * the README's command block, tessera.1's synopsis and tessera.bash list the same options. */
#define C_ENGINE (C_RENDER | C_PREVIEW | C_PROFILE | C_CHECK) /* tsr_engine_opts */
static const struct {
    struct option o;
    int cmds;
    const char *arg;   /* its value's name in the help; NULL: a flag */
    const char *help;  /* what it does (one sentence or two, plain text) */
    const char *deflt; /* its default, or NULL where it has none (a flag is off) */
} options[] = {
    {{"backend", required_argument, 0, O_BACKEND}, C_RENDER | C_PREVIEW | C_PROFILE,
     "cpu|gpu|auto", "compute on the CPU, the GPU, or (auto) the GPU when a usable one is "
     "present", "auto"},
    {{"memory", required_argument, 0, O_MEMORY}, C_ENGINE, "M",
     "host memory budget: cache, bands in flight, scratch, tables and decoded images; without "
     "--threads it runs as many threads as fit; a run one thread cannot fit is refused before "
     "it starts, naming the smallest budget that would",
     "a quarter of the host's available memory, at least 2GiB"},
    {{"gpu-memory", required_argument, 0, O_GPU_MEMORY}, C_RENDER | C_PREVIEW | C_PROFILE, "M",
     "device memory budget of the GPU backend",
     "4 x the plan's minimum and at least 2 GiB, plus the device tile cache's share, never "
     "more than 90% of what is free"},
    {{"gpus", required_argument, 0, O_GPUS}, C_RENDER | C_PROFILE, "all|N",
     "bands on N GPU engines (every device with all), one per device, round robin over the "
     "devices there are, handed to the output in order", "one backend"},
    {{"threads", required_argument, 0, O_THREADS}, C_ENGINE, "N",
     "worker threads, 1..1024; a plan refused because of --threads names how many fit",
     "one per core, fewer when --memory fits fewer"},
    {{"tile", required_argument, 0, O_TILE}, C_ENGINE, "T",
     "force one tile edge on every node (tuning, invariance tests); results never depend on it",
     "each node's own"},
    {{"rows", required_argument, 0, O_ROWS}, C_RENDER, "Y0:Y1",
     "stream only root rows [Y0, Y1): a job of its own, offsets from 0, swath order applied to "
     "the crop", "every row"},
    {{"region", required_argument, 0, O_REGION}, C_PREVIEW | C_PROFILE, "X,Y,W,H",
     "the root rectangle to preview (required) or to profile whole (else samples are taken); "
     "it must lie inside the root", NULL},
    {{"scale", required_argument, 0, O_SCALE}, C_PREVIEW, "K",
     "average K x K blocks: the image is ceil(W/K) x ceil(H/K)", "1"},
    {{"depth", required_argument, 0, O_DEPTH}, C_PREVIEW, "8|16", "bits per sample of the PNG",
     "8"},
    {{"fast", no_argument, 0, O_FAST}, C_PREVIEW, NULL,
     "an approximate overview: each pixel is the mean of 4 pixels of its K x K block, placed "
     "by a fixed hash, and only those are computed; without it, the block's exact average",
     NULL},
    {{"force", no_argument, 0, O_FORCE}, C_PREVIEW, NULL,
     "write an image over 256 MiB of samples (else refused, naming the --scale that fits)",
     NULL},
    {{"progress", required_argument, 0, O_PROGRESS}, C_RENDER | C_PREVIEW,
     "auto|bar|json|none", "progress on stderr: a bar, JSON lines or nothing; auto: a bar on a "
     "terminal, else JSON lines (render) or nothing (preview)", "auto"},
    {{"target", required_argument, 0, O_TARGET}, C_PROFILE, "R", "the rate to compare with",
     "10MB/s"},
    {{"json", no_argument, 0, O_JSON}, C_PROFILE, NULL, "print the report as one JSON object",
     NULL},
    {{"seconds", required_argument, 0, O_SECONDS}, C_PROFILE, "S",
     "time to spend sampling (without --region): then the chunk being rendered stops as a "
     "Ctrl-C would (well under a second) and the finished chunks are reported; a design of "
     "which no chunk finished gets a bound; -o OUT's stream comes after", "4"},
    {{"tree", no_argument, 0, O_TREE}, C_CHECK, NULL,
     "add the node table and the full canonical design", NULL},
    {{"pixels", no_argument, 0, O_PIXELS}, C_CHECK, NULL,
     "print the design back, loadable, with every length in pixels", NULL},
    {{"rate", required_argument, 0, O_RATE}, C_RENDER | C_CONTROLLER, "R",
     "pace the stream at R bytes per second (like 10MB/s); underruns are counted and reported",
     "unpaced"},
    {{"stall-timeout", required_argument, 0, O_STALL}, C_RENDER | C_CONTROLLER, "S",
     "give up on a tcp receiver (the controller: a sender) silent for S seconds; the "
     "controller also drops a sender whose frame takes longer than S", "600"},
    {{"framed", no_argument, 0, O_FRAMED}, C_RENDER | C_PROFILE, NULL,
     "write the framed stream (header, crc'd frames, trailer) to a file or a pipe; tcp:// is "
     "always framed", NULL},
    {{"deflate", no_argument, 0, O_DEFLATE}, C_RENDER | C_PROFILE, NULL,
     "compress frames (zlib, level 1) where that is smaller; needs the framed stream", NULL},
    {{"resume-at", required_argument, 0, O_RESUME}, C_RENDER, "B",
     "start at stream byte B: a raw output file keeps its bytes before B, is cut to B and "
     "written from B; not with tcp://, where the receiver answers the offset", "0"},
    {{"listen", required_argument, 0, O_LISTEN}, C_CONTROLLER, "127.0.0.1:PORT",
     "the address to listen on (required)", NULL},
    {{"jobs", required_argument, 0, O_JOBS}, C_CONTROLLER, "N",
     "serve N jobs, one output file each (needs a %d in -o); once a job is complete the next "
     "sender is the next job, whatever its design; only an incomplete job is resumed", "1"},
    {{"exit-on-abort", no_argument, 0, O_EXIT_ON_ABORT}, C_CONTROLLER, NULL,
     "end when a sender aborts instead of holding the job", NULL},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

/* One option's entry of --help: "  --name ARG" then its text, words wrapped at 79 columns
 * under a hanging indent, and "(default: X)". */
static void
print_option(FILE *f, const char *name, const char *arg, const char *help, const char *deflt)
{
    char head[64], text[768];
    snprintf(head, sizeof head, "  %s%s%s", name, arg ? " " : "", arg ? arg : "");
    snprintf(text, sizeof text, "%s%s%s%s", help, deflt ? " (default: " : "",
             deflt ? deflt : "", deflt ? ")" : "");
    fputs(head, f);
    int col = (int)strlen(head);
    if (col > 22) {
        fputs("\n", f);
        col = 0;
    }
    for (const char *w = text; *w;) {
        size_t n = strcspn(w, " ");
        if (col + 1 + (int)n > 79 && col > 24) {
            fputc('\n', f);
            col = 0;
        }
        if (col < 24) {
            fprintf(f, "%*s", 24 - col, "");
            col = 24;
        } else {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", (int)n, w);
        col += (int)n;
        w += n;
        w += *w == ' ';
    }
    fputc('\n', f);
}

/* The options of command c, -o first, in the table's order; c NULL: every long option, each
 * with the commands that take it (-o is each command's own: COMMAND --help). */
static void
print_options(FILE *f, const command *c)
{
    fputs(c ? "options:\n" : "options (tessera COMMAND --help: a command's own, and its -o):\n",
          f);
    if (c && c->o_help)
        print_option(f, "-o", "OUT", c->o_help, NULL);
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (!c || (options[i].cmds & c->bit)) {
            char name[64], help[640] = "";
            snprintf(name, sizeof name, "--%s", options[i].o.name);
            for (size_t k = 0; !c && k < N_COMMANDS; k++)
                if (commands[k].bit & options[i].cmds)
                    snprintf(help + strlen(help), sizeof help - strlen(help), "%s%s",
                             help[0] ? ", " : "[", commands[k].name);
            snprintf(help + strlen(help), sizeof help - strlen(help), "%s%s", c ? "" : "] ",
                     options[i].help);
            print_option(f, name, options[i].arg, help, options[i].deflt);
        }
    print_option(f, "-h, --help", NULL, "print this help and exit", NULL);
}

/* The option getopt refused (`--json`, `--json=1`, `-x`), and whose it is when it is another
 * command's: "tessera check: --json is not an option of check, but of profile". */
static int
not_an_option(const args *a, const char *given, int short_opt)
{
    char name[64], whose[128] = "";
    if (short_opt > 0 && short_opt < 256)
        snprintf(name, sizeof name, "-%c", short_opt);
    else
        snprintf(name, sizeof name, "%.*s", (int)strcspn(given, "="), given);
    int cmds = strcmp(name, "-o") == 0 ? C_RENDER | C_PREVIEW | C_PROFILE | C_CONTROLLER : 0;
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strncmp(name, "--", 2) == 0 && strcmp(name + 2, options[i].o.name) == 0)
            cmds = options[i].cmds;
    char like[128] = ""; /* an abbreviation of two of c's options: "--t" in check */
    for (size_t i = 0; i < N_OPTIONS && !cmds && strncmp(name, "--", 2) == 0; i++)
        if ((options[i].cmds & a->c->bit) &&
            strncmp(options[i].o.name, name + 2, strlen(name + 2)) == 0)
            snprintf(like + strlen(like), sizeof like - strlen(like), "%s--%s",
                     like[0] ? ", " : "", options[i].o.name);
    char msg[256];
    if (like[0]) {
        snprintf(msg, sizeof msg, "%s: ambiguous, one of %s", name, like);
        return usage_error(a->c, "%s", msg);
    }
    if (cmds & a->c->bit) /* its own option, with a value it takes none of: --json=1 */
        return usage_error(a->c, "%s: takes no value", given);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (commands[i].bit & cmds)
            snprintf(whose + strlen(whose), sizeof whose - strlen(whose), "%s%s",
                     whose[0] ? ", " : ", but of ", commands[i].name);
    snprintf(msg, sizeof msg, "%s is not an option of %s%s", name, a->c->name, whose);
    return usage_error(a->c, "%s", msg);
}

/* The options parse_option leaves: streaming, progress and the controller's. */
static int
parse_option_more(args *a, int opt, const char *val)
{
    int64_t i;
    switch (opt) {
    case O_STALL:
        if (!tsr_parse_decimal(val, &a->stall) || !(a->stall > 0) || a->stall > 1e9)
            return usage_error(a->c, "--stall-timeout %s: expected seconds > 0", val);
        break;
    case O_SECONDS:
        if (!tsr_parse_decimal(val, &a->seconds) || !(a->seconds > 0) || a->seconds > 1e6)
            return usage_error(a->c, "--seconds %s: expected seconds > 0", val);
        break;
    case O_FRAMED: a->framed = true; break;
    case O_DEFLATE: a->deflate = true; break;
    case O_RESUME:
        /* int64 is enough: a stream holds at most 2^62 sample bytes (docs/format.md §2) */
        if (!parse_i64(val, &i) || i < 0)
            return usage_error(a->c, "--resume-at %s: expected a byte offset", val);
        a->resume_at = (uint64_t)i;
        a->have_resume = true;
        break;
    case O_PROGRESS:
        if (strcmp(val, "auto") && strcmp(val, "bar") && strcmp(val, "json") &&
            strcmp(val, "none"))
            return usage_error(a->c, "--progress %s: expected auto, bar, json or none", val);
        a->progress = val;
        break;
    case O_LISTEN: a->listen = val; break;
    case O_JOBS:
        if (!parse_i64(val, &a->jobs) || a->jobs < 1)
            return usage_error(a->c, "--jobs %s: expected an integer >= 1", val);
        break;
    case O_EXIT_ON_ABORT: a->exit_on_abort = true; break;
    }
    return 0;
}

/* One option's value into *a; 0, or the usage exit. */
static int
parse_option(args *a, int opt, const char *val)
{
    double v;
    int64_t i;
    switch (opt) {
    case 'o': a->out = val; break;
    case O_BACKEND: a->eo.backend = val; break;
    case O_MEMORY:
    case O_GPU_MEMORY:
        if (!tsr_parse_size(val, &v) || v < 1)
            return usage_error(a->c, opt == O_MEMORY
                                         ? "--memory %s: expected a size like 512M or 4GiB"
                                         : "--gpu-memory %s: expected a size like 8G or 40GiB",
                               val);
        *(opt == O_MEMORY ? &a->eo.memory : &a->eo.gpu_memory) = v > 9e18 ? INT64_MAX
                                                                          : (int64_t)v;
        break;
    case O_GPUS:
        if (strcmp(val, "all") == 0)
            i = -1;
        else if (!parse_i64(val, &i) || i < 1 || i > 64)
            return usage_error(a->c, "--gpus %s: expected all or 1..64", val);
        a->eo.gpus = (int)i;
        break;
    case O_THREADS:
        if (!parse_i64(val, &i) || i < 1 || i > 1024)
            return usage_error(a->c, "--threads %s: expected 1..1024", val);
        a->eo.threads = (int)i;
        break;
    case O_ROWS: {
        int64_t y0, y1;
        const char *end;
        if (!parse_i64_to(val, ':', &y0, &end) || *end != ':' || !parse_i64(end + 1, &y1) ||
            y0 < 0 || y1 <= y0)
            return usage_error(a->c, "--rows %s: expected Y0:Y1 with 0 <= Y0 < Y1", val);
        a->eo.rows[0] = y0;
        a->eo.rows[1] = y1;
        break;
    }
    case O_TILE:
        if (!parse_i64(val, &i) || i < 1 || i > TSR_TILE_MAX)
            return usage_error(a->c, "--tile %s: expected 1..16384", val);
        a->eo.tile = i;
        break;
    case O_REGION:
        if (!parse_region(val, &a->region))
            return usage_error(a->c, "--region %s: expected X,Y,W,H (decimal integers) with "
                                     "W, H > 0", val);
        a->have_region = true;
        break;
    case O_SCALE:
        if (!parse_i64(val, &a->scale) || a->scale < 1)
            return usage_error(a->c, "--scale %s: expected an integer >= 1", val);
        break;
    case O_DEPTH:
        if (strcmp(val, "8") && strcmp(val, "16"))
            return usage_error(a->c, "--depth %s: expected 8 or 16", val);
        a->depth = atoi(val);
        break;
    case O_TARGET:
        if (!tsr_parse_rate(val, &a->target) || a->target <= 0)
            return usage_error(a->c, "--target %s: expected a rate like 10MB/s", val);
        break;
    case O_JSON: a->json = true; break;
    case O_TREE: a->tree = true; break;
    case O_PIXELS: a->pixels = true; break;
    case O_FORCE: a->force = true; break;
    case O_FAST: a->fast = true; break;
    case O_RATE:
        if (!tsr_parse_rate(val, &a->rate) || !(a->rate > 0) || a->rate > 1e15)
            return usage_error(a->c, "--rate %s: expected a rate like 10MB/s", val);
        break;
    default: return parse_option_more(a, opt, val);
    }
    return 0;
}

/* What the options say together, once all are read: the operands (one DESIGN; none for the
 * controller) and the combinations an option's own table cannot refuse. 0, or the usage
 * exit. */
static int
check_operands(args *a, int argc, char **argv, int first)
{
    const command *c = a->c;
    if (c->bit == C_CONTROLLER) {
        if (first != argc)
            return usage_error(c, "%s: controller takes no DESIGN", argv[first]);
        if (!a->listen)
            return usage_error(c, "%s: controller needs --listen 127.0.0.1:PORT", c->name);
        return 0;
    }
    if (first >= argc)
        return usage_error(c, "expected exactly one DESIGN%s", ", got none");
    if (first != argc - 1)
        return usage_error(c, "%s: expected exactly one DESIGN", argv[first + 1]);
    a->design = argv[first];
    int bad = check_out(a);
    if (bad)
        return bad;
    if (a->seconds > 0 && a->have_region)
        return usage_error(c, "--seconds%s: only without --region (a region is rendered "
                              "whole)", "");
    bool tcp = a->out && strncmp(a->out, "tcp://", 6) == 0;
    if (a->stall > 0 && !tcp)
        return usage_error(c, "--stall-timeout%s: only for a tcp:// output (files and pipes "
                              "block as long as their reader does)", "");
    if (a->deflate && !a->framed && !tcp)
        return usage_error(c, "--deflate%s: needs --framed or a tcp:// output", "");
    if (a->have_resume && tcp)
        return usage_error(c, "--resume-at%s: not with tcp:// (the controller answers the "
                              "resume offset)", "");
    /* image files (stream/sink_image.c, docs/outputs.md) are neither framed nor resumable:
     * said here, before a design is loaded */
    if (a->out && tsr_sink_image_file(a->out) && a->framed)
        return usage_error(c, "--framed: %s is written as an image file, not a framed stream",
                           a->out);
    if (a->out && tsr_sink_image_file(a->out) && a->have_resume)
        return usage_error(c, "--resume-at: %s: an image file cannot be resumed; render it "
                              "whole, or to a .raw file", a->out);
    return 0;
}

/* argv[1] is the command `c`; its options into *a, each checked against c's own table.
 * --help prints c's usage and exits 0. 0, or the usage exit. */
static int
parse_args(int argc, char **argv, const command *c, args *a)
{
    struct option longs[N_OPTIONS + 2];
    size_t n = 0;
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (options[i].cmds & c->bit)
            longs[n++] = options[i].o;
    longs[n++] = (struct option){"help", no_argument, 0, 'h'};
    longs[n] = (struct option){0, 0, 0, 0};
    a->c = c;
    a->cmd = c->name;
    a->scale = 1;
    a->depth = 8;
    a->target = 1e7;
    a->progress = "auto";
    a->jobs = 1;
    optind = 2;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, c->takes_o ? ":o:h" : ":h", longs, NULL)) != -1) {
        int bad = 0;
        if (opt == 'h') {
            print_usage(stdout, c);
            exit(stdout_done(0));
        } else if (opt == ':')
            bad = usage_error(c, "%s: missing value", argv[optind - 1]);
        else if (opt == '?')
            bad = not_an_option(a, argv[optind - 1], optopt);
        else
            bad = parse_option(a, opt, optarg);
        if (bad)
            return bad;
    }
    if (c->bit == 0) /* help [COMMAND], version: main reads the operands */
        return 0;
    return check_operands(a, argc, argv, optind);
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

/* What cmd_render's hooks share: the progress display over the open sink. */
typedef struct render_view {
    tsr_progress_mode pm;
    uint64_t total;
    _Atomic uint64_t computed;
    tsr_progress *pr;
    double first; /* seconds to the first byte, from tsr_progress_stop; < 0: none */
} render_view;

/* The sink is open: the second signal may now name its offset, and progress starts. */
static void
render_opened(void *ctx, tsr_sink *s)
{
    render_view *v = ctx;
    g_sink = s;
    g_early_on = 0; /* the stream's own lines from here on */
    tsr_progress_opts po = {.mode = v->pm, .total = v->total, .sink = s,
                            .computed = &v->computed};
    v->pr = tsr_progress_start_ex(&po, stderr);
}

/* The stream ended (trailer or abort frame sent): the sink is about to be closed, so the
 * handler must not read it any more. */
static void
render_ending(void *ctx, tsr_sink *s, bool ok)
{
    render_view *v = ctx;
    (void)s;
    v->first = tsr_progress_stop(v->pr, ok);
    g_sink = NULL;
}

/* A render that did not finish, in the CLI's words: the engine decided where it ended and
 * how to resume (tsr_engine_render_to); exit 1 for a stop, the error's status otherwise. */
static int
render_failed(const args *a, const tsr_render_result *r, const tsr_error *err)
{
    unsigned long long off = r->offset;
    switch (r->step) {
    case TSR_RENDER_RESUME:
        fprintf(stderr, "tessera: --resume-at %llu: past the end of the stream (%llu bytes)\n",
                (unsigned long long)a->resume_at, (unsigned long long)r->total);
        return 2;
    case TSR_RENDER_OPEN:
        if (!r->stopped)
            return fail(err);
        fprintf(stderr, "tessera: interrupted before the stream started\n");
        return 1;
    case TSR_RENDER_STREAM:
        break;
    default:
        return fail(err);
    }
    int rc = r->stopped ? 1 : fail(err);
    const char *what = r->stopped ? "interrupted" : "stopped";
    if (r->resume == TSR_RESUME_RECEIVER)
        fprintf(stderr, "tessera: %s at byte %llu; run it again to resume (the controller "
                "answers the offset)\n", what, off);
    else if (r->resume == TSR_RESUME_AT)
        fprintf(stderr, "tessera: %s at byte %llu; resume with --resume-at %llu\n", what, off,
                off);
    return rc;
}

static int
cmd_render(args *a, tsr_engine *e)
{
    tsr_error err = {0};
    render_view v = {.pm = progress_mode(a->progress), .total = tsr_engine_stream_bytes(e),
                     .first = -1};
    tsr_render_opts o = {.out = a->out, .have_resume = a->have_resume,
                         .resume_at = a->resume_at, .framed = a->framed, .deflate = a->deflate,
                         .rate = a->rate, .stall_s = a->stall,
                         .stop = &g_stop, .computed = &v.computed, .opened = render_opened,
                         .ending = render_ending, .ctx = &v};
    tsr_render_result r;
    g_sink_tcp = a->out && strncmp(a->out, "tcp://", 6) == 0;
    if (tsr_engine_render_to(e, &o, &r, &err) != TSR_OK)
        return render_failed(a, &r, &err);
    if (v.pm == TSR_PROGRESS_NONE)
        return 0;
    /* the summary of every run: what went out, how fast, how long the first byte took */
    char fb[48] = "";
    if (v.first >= 0)
        snprintf(fb, sizeof fb, ", first byte after %.1f s", v.first);
    uint64_t sent = r.offset - r.start;
    double mbs = r.seconds > 0 ? (double)sent / r.seconds / 1e6 : 0.0;
    if (a->rate > 0)
        fprintf(stderr, "tessera: %llu bytes in %.1f s (%.2f MB/s, paced at %.2f MB/s)%s, "
                "%llu underruns (%.3f s starved)\n", (unsigned long long)sent, r.seconds,
                mbs, a->rate / 1e6, fb, (unsigned long long)r.underruns, r.starved_s);
    else
        fprintf(stderr, "tessera: %llu bytes in %.1f s (%.2f MB/s)%s\n",
                (unsigned long long)sent, r.seconds, mbs, fb);
    return 0;
}

static int
cmd_controller(args *a)
{
    tsr_error err = {0};
    tsr_controller_opts o = {.listen = a->listen, .rate = a->rate, .out = a->out,
                             .jobs = a->jobs, .stall_s = a->stall,
                             .exit_on_abort = a->exit_on_abort, .stop = &g_stop, .log = stderr,
                             .fault = tsr_tune_get()->sink_fault}; /* docs/tuning.md */
    if (tsr_controller_run(&o, &err) != TSR_OK)
        return fail(&err);
    return 0;
}

static int
cmd_preview(args *a, tsr_engine *e, const tsr_design *d)
{
    tsr_error err = {0};
    if (!a->have_region)
        return usage_error(a->c, "%s: preview needs --region X,Y,W,H", a->design);
    const char *out = a->out ? a->out : "preview.png";
    /* A forgotten --scale on a big region silently started a 22.5 GB PNG: above the bound
     * it takes --force, and the message names the --scale that fits. */
    int64_t bps = a->depth / 8;
    double px = ceil((double)a->region.w / (double)a->scale) *
                ceil((double)a->region.h / (double)a->scale) * (double)bps;
    tsr_rect root = tsr_rect_make(0, 0, d->root->w, d->root->h);
    if (px > PREVIEW_MAX_BYTES && !a->force && tsr_rect_contains(root, a->region)) {
        int64_t k = (int64_t)ceil(sqrt((double)a->region.w * (double)a->region.h *
                                       (double)bps / PREVIEW_MAX_BYTES));
        while (ceil((double)a->region.w / (double)k) * ceil((double)a->region.h / (double)k) *
                   (double)bps > PREVIEW_MAX_BYTES)
            k++;
        char have[32], lim[32];
        tsr_human_bytes(have, sizeof have, px);
        tsr_human_bytes(lim, sizeof lim, PREVIEW_MAX_BYTES);
        fprintf(stderr, "tessera: preview: a %s image is over the %s bound; --scale %lld "
                "fits (or --force)\n", have, lim, (long long)k);
        return 2;
    }
    int64_t k = a->scale, w = a->region.w, h = a->region.h; /* ceil(w / k), no w + k */
    int64_t ow = w / k + (w % k != 0), oh = h / k + (h % k != 0);
    /* progress as render's, but `auto` off a terminal is silent: a preview's output is a
     * file, and its caller asked for no log */
    tsr_progress_mode pm = strcmp(a->progress, "auto") == 0 && !isatty(STDERR_FILENO)
                               ? TSR_PROGRESS_NONE
                               : progress_mode(a->progress);
    _Atomic uint64_t done = 0;
    bool sampled = a->fast && tsr_preview_samples(e, a->region, a->scale);
    tsr_progress_opts po = {.mode = pm, .computed = &done, .unit = "px",
                            .always = pm == TSR_PROGRESS_JSON,
                            .total = sampled ? (uint64_t)ow * (uint64_t)oh *
                                                   TSR_PREVIEW_FAST_SAMPLES
                                             : (uint64_t)w * (uint64_t)h};
    tsr_progress *pr = tsr_progress_start_ex(&po, stderr);
    tsr_preview_opts o = {.scale = a->scale, .depth = a->depth, .fast = a->fast, .done = &done};
    tsr_status st = tsr_engine_preview_ex(e, a->region, &o, out, &err);
    tsr_progress_stop(pr, st == TSR_OK);
    if (st != TSR_OK)
        return fail(&err);
    fprintf(stderr, "tessera: wrote %s (%lldx%lld%s)\n", strcmp(out, "-") ? out : "stdout",
            (long long)ow, (long long)oh,
            sampled ? ", --fast: sampled"
                    : a->fast && a->scale > 1 ? ", --fast: exact, estimated cheaper" : "");
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

/* A figure with three significant digits and no exponent above 1: "0.0123", "4.56", "789",
 * "14200", so a slow rate never prints as "0.0". */
static void
fmt_sig(char *b, size_t n, double v)
{
    if (!(v < 1e15))
        snprintf(b, n, "%g", v);
    else if (v >= 100)
        snprintf(b, n, "%.0f", v);
    else if (v >= 10)
        snprintf(b, n, "%.1f", v);
    else if (v >= 1)
        snprintf(b, n, "%.2f", v);
    else if (v > 0)
        snprintf(b, n, "%.*f", 2 - (int)floor(log10(v)), v); /* 0.0123, 1.30e-05 as 0.0000130 */
    else
        snprintf(b, n, "0");
}

/* A rate (bytes per `per`) with its SI unit and three significant digits: "950 B", "12.3 kB",
 * "4.56 GB", then " per CPU-second" or "/s"; so a slow one never prints as "0 MB". */
static void
fmt_si(char *b, size_t n, double v, const char *unit)
{
    static const char *pre[] = {"", "k", "M", "G", "T", "P"};
    int k = 0;
    while (k < 5 && v >= 1000) {
        v /= 1000;
        k++;
    }
    char d[20]; /* v < 1000 here, or v >= 1e15 P: "%g" */
    fmt_sig(d, sizeof d, v);
    snprintf(b, n, "%s %s%s", d, pre[k], unit);
}

static void
fmt_rate(char *b, size_t n, double bytes_per_s)
{
    fmt_si(b, n, bytes_per_s, "B/s");
}

#define PROFILE_SAMPLES 8

typedef struct sample {
    tsr_rect r; /* what was rendered */
    uint64_t bytes;
    double secs;
    double cut_secs;     /* a chunk the end of --seconds stopped: its time so far ... */
    uint64_t cut_bytes;  /* ... and its bytes, had it finished */
} sample;

/* Where sample i of k starts, in the job's own order: raster samples split the rows into k
 * equal parts and start each; a swath design's samples go through the swaths from the start
 * side, each at its stream fraction (i + 0.5) / k of the way, then that far down its swath.
 * So the samples cover the design as the stream visits it instead of the top margin. *rows
 * gets the rows it may take (samples never overlap). */
static tsr_rect
sample_at(const tsr_design *d, int i, int k, int64_t *rows)
{
    int64_t W = d->root->w, H = d->root->h, x = 0, w = W, y;
    const tsr_output *o = &d->out;
    if (o->order == TSR_ORDER_SWATH && o->swath_width < W) {
        int64_t sw = o->swath_width, nsw = W / sw + (W % sw != 0);
        double f = (i + 0.5) / k * (double)nsw;
        int64_t s = (int64_t)f < nsw ? (int64_t)f : nsw - 1;
        f -= (double)s; /* how far down that swath */
        int corner = tsr_output_start(o); /* the stage's mirror-x and y-up applied */
        bool right = corner == TSR_TOP_RIGHT || corner == TSR_BOTTOM_RIGHT;
        x = right ? W - (s + 1) * sw : s * sw;
        if (x < 0) {
            w = sw + x; /* the narrow last swath */
            x = 0;
        } else {
            w = W - x < sw ? W - x : sw;
        }
        int64_t per = k / nsw > 4 ? k / nsw : 4; /* samples that could share a swath */
        *rows = H / per > 0 ? H / per : 1;
        y = (int64_t)(f * (double)(H - *rows));
    } else {
        *rows = H / k > 0 ? H / k : 1;
        y = (int64_t)i * H / k;
        y = y + *rows > H ? H - *rows : y;
    }
    int from = tsr_output_start(o); /* raster too: y-up streams from the bottom row */
    if (from == TSR_BOTTOM_LEFT || from == TSR_BOTTOM_RIGHT)
        y = H - y - *rows; /* rows run upwards from the bottom */
    return tsr_rect_make(x, y, w, 0);
}

/* Render one sample from `at` until its share of the time is spent or its rows are done:
 * first its band of rows (a band tall: what the stream computes at a time; fewer rows pay a
 * band's tile work for part of them and read slow) in column chunks that double from a
 * band-square, then more rows of the full width in growing chunks. Narrow chunks first: a band
 * of a 150000 px root is 73 MB, longer than --seconds on its own, so whole-band chunks made
 * --seconds 4 run for 15.9 s. At least one chunk, so every sample says something; the end of
 * --seconds (profile_deadline) stops a chunk with TSR_EINTR, leaving its time and bytes in
 * cut_secs and cut_bytes. sm->r is the rect the finished chunks cover. */
static tsr_status
run_sample(tsr_engine *e, const tsr_design *d, tsr_rect at, int64_t rows, double share,
           sample *sm, int idx, int of, double t_all, double budget, tsr_error *err)
{
    /* the stream's bytes a pixel (packed depths, overscan, planes: tsr_design_stream_bytes),
     * not depth / 8: what the chunks' sizes and a cut chunk's bytes are reckoned in */
    double bps = (double)tsr_design_stream_bytes(d, 1) / (double)d->root->w;
    int64_t band = tsr_engine_plan(e)->band_rows;
    band = band < 1 ? 1 : band;
    int64_t n = rows < band ? rows : band, cw = band;
    bool tty = isatty(STDERR_FILENO);
    sm->r = tsr_rect_make(at.x, at.y, 0, n);
    sm->bytes = 0;
    sm->secs = 0;
    int64_t chunk = 0;
    while (sm->r.h < rows || sm->r.w < at.w) {
        bool widen = sm->r.w < at.w; /* still in the first band */
        tsr_rect c = widen ? tsr_rect_make(at.x + sm->r.w, at.y,
                                           at.w - sm->r.w < cw ? at.w - sm->r.w : cw, n)
                           : tsr_rect_make(at.x, at.y + sm->r.h, at.w,
                                           rows - sm->r.h < chunk ? rows - sm->r.h : chunk);
        uint64_t b = 0;
        double t0 = now_s();
        if (tsr_engine_drain(e, c, &b, err) != TSR_OK) {
            sm->cut_secs = now_s() - t0; /* the chunk's time, for a rate bound */
            sm->cut_bytes = (uint64_t)((double)(c.w * c.h) * bps);
            return err->status;
        }
        sm->secs += now_s() - t0;
        sm->bytes += b;
        if (widen)
            sm->r.w += c.w;
        else
            sm->r.h += c.h;
        if (tty)
            fprintf(stderr, "\rprofile: sample %d/%d, %.1f s of %.0f s\033[K", idx + 1, of,
                    now_s() - t_all, budget);
        if (sm->secs >= share)
            break;
        /* the next chunk: twice this one, but no more than the time left at this rate */
        double left = (share - sm->secs) * (double)sm->bytes / sm->secs; /* bytes */
        if (widen) {
            double fit = left / ((double)n * bps);
            cw = fit < (double)(2 * c.w) ? (int64_t)fit : 2 * c.w;
            cw = cw < band ? band : cw;
            chunk = band;
        } else {
            double fit = left / ((double)at.w * bps);
            chunk = fit < (double)(2 * c.h) ? (int64_t)fit : 2 * c.h;
            chunk = chunk < band ? band : chunk;
        }
    }
    return TSR_OK;
}

/* The process's CPU seconds so far (user + system, every thread). */
static double
cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* What cmd_profile measured, summed over its samples. */
typedef struct profile_sum {
    sample sm[PROFILE_SAMPLES];
    int ns;                /* samples taken */
    double budget;         /* --seconds (4 by default) */
    bool cut;              /* the deadline stopped a chunk (profile_deadline) */
    double cut_secs;       /* ... which had run this long */
    uint64_t cut_bytes;    /* ... for this many bytes */
    double startup;        /* seconds of the untimed first row (take_samples); 0 with --region */
    double cpu;            /* CPU seconds over the samples */
    double total;          /* sample bytes of the whole design */
    double rate;           /* projected bytes/s: the mean of the samples' seconds per byte */
    double slow, fast;     /* the slowest and fastest sample's bytes/s */
    int slowest;
    double secs;           /* seconds in the samples */
    uint64_t bytes;        /* bytes in the samples */
    tsr_rect r;            /* the region profiled: --region or the whole root */
    tsr_engine_stats st;
    long long rss;
    double d2h;            /* the GPU's device-to-host GB/s (0: not measured) */
    struct {               /* -o OUT: the stream into it behind this renderer */
        int64_t rows;      /* --rows 0:rows */
        uint64_t bytes;
        double seconds;
    } sink;
} profile_sum;

/* Render the samples (or the --region whole) into p->sm; a progress line on a terminal. */
static tsr_status
take_samples(const args *a, tsr_engine *e, const tsr_design *d, profile_sum *p, double t_all,
             tsr_error *err)
{
    sample *sm = p->sm;
    double budget = p->budget;
    int ns = 0;
    if (a->have_region) {
        /* a region the user names is rendered whole, as before */
        if (tsr_engine_drain(e, a->region, &sm[0].bytes, err) != TSR_OK)
            return err->status;
        sm[0].r = a->region;
        sm[0].secs = now_s() - t_all;
        ns = 1;
    } else {
        /* On a GPU, one row first, untimed: what a stream pays once there (the device's
         * kernels loaded, its band buffers pinned, resident uploads, period tiles) was read as
         * the first sample's rate: 55-65 ms of the first band against 2-3 ms for each later
         * one made small plates profile at a quarter of the rate they run at
         * (docs/performance.md). Its seconds are reported as the start-up and added to the
         * projection, not to the rate. The row is the stream's last (the first sample's band
         * would find its tiles made by it); the CPU backend's start-up is a team's threads,
         * and gets none. */
        int64_t rows0, band = tsr_engine_plan(e)->band_rows;
        tsr_rect at0 = sample_at(d, 0, PROFILE_SAMPLES, &rows0);
        int64_t last = at0.y == 0 ? d->root->h - 1 : 0; /* the side opposite the first sample */
        tsr_rect warm = tsr_rect_make(at0.x, last, band > 0 && at0.w > band ? band : at0.w, 1);
        uint64_t wb = 0;
        bool device = strcmp(tsr_engine_backend(e), "cpu") != 0;
        double t0 = now_s();
        if (device && tsr_engine_drain(e, warm, &wb, err) != TSR_OK) {
            if (err->status != TSR_EINTR || g_stop)
                return err->status;
            /* --seconds ran out in the start-up: nothing measured but a bound, as for a cut
             * first chunk (print_unfinished) */
            p->cut = true;
            p->cut_secs = now_s() - t0;
            p->cut_bytes = (uint64_t)((double)warm.w * (double)tsr_design_stream_bytes(d, 1) /
                                      (double)d->root->w);
            p->ns = 0;
            return TSR_OK;
        }
        p->startup = device ? now_s() - t0 : 0;
        for (; ns < PROFILE_SAMPLES; ns++) {
            int64_t rows;
            tsr_rect at = sample_at(d, ns, PROFILE_SAMPLES, &rows);
            if (run_sample(e, d, at, rows, budget / PROFILE_SAMPLES, &sm[ns], ns,
                           PROFILE_SAMPLES, t_all, budget, err) != TSR_OK) {
                if (isatty(STDERR_FILENO))
                    fprintf(stderr, "\r\033[K");
                if (err->status != TSR_EINTR || g_stop)
                    return err->status;
                /* --seconds ran out inside a chunk: that chunk is dropped, the chunks this
                 * sample finished count */
                p->cut = true;
                p->cut_secs = sm[ns].cut_secs;
                p->cut_bytes = sm[ns].cut_bytes;
                ns += sm[ns].bytes > 0;
                break;
            }
        }
        if (isatty(STDERR_FILENO))
            fprintf(stderr, "\r\033[K");
    }
    p->ns = ns;
    return TSR_OK;
}

/* The figures over the samples. Each sample stands for an equal share of the design: the
 * projection is the mean of the samples' seconds per byte, which a slow body dominates as it
 * would the real run. */
static void
summarize(const args *a, tsr_engine *e, const tsr_design *d, profile_sum *p)
{
    const sample *sm = p->sm;
    int ns = p->ns;
    p->total = (double)tsr_design_stream_bytes(d, d->root->h); /* packed, padded */
    double spb = 0;
    p->slow = HUGE_VAL;
    for (int i = 0; i < ns; i++) {
        double r = sm[i].secs > 0 ? (double)sm[i].bytes / sm[i].secs : HUGE_VAL;
        spb += (r > 0 ? 1.0 / r : 0) / ns;
        if (r < p->slow) {
            p->slow = r;
            p->slowest = i;
        }
        p->fast = r > p->fast ? r : p->fast;
        p->bytes += sm[i].bytes;
        p->secs += sm[i].secs;
    }
    p->rate = spb > 0 ? 1.0 / spb : HUGE_VAL;
    p->r = a->have_region ? a->region : tsr_rect_make(0, 0, d->root->w, d->root->h);
    p->st = tsr_engine_get_stats(e);
    peak_rss(&p->rss);
}

/* `profile --json`: one object, every figure machine-readable (docs/performance.md). */
static void
print_json(const args *a, tsr_engine *e, const tsr_design *d, const profile_sum *p, FILE *f)
{
    const sample *sm = p->sm;
    const tsr_engine_stats st = p->st;
    tsr_rect r = p->r;
    int ns = p->ns;
    double rate = p->rate, slow = p->slow, fast = p->fast, secs = p->secs, total = p->total;
    double cpu = p->cpu;
    uint64_t bytes = p->bytes;
    long long rss = p->rss;
    fprintf(f, "{\"design\":");
    json_str(f, a->design);
    fprintf(f, ",\"region\":[%lld,%lld,%lld,%lld],\"bytes\":%llu,\"seconds\":%.6f,"
               "\"mb_per_s\":%.6f,\"target_mb_per_s\":%.6f,\"headroom\":%.6f,"
               "\"projected_seconds\":%.3f,\"backend\":\"%s\",\"threads\":%d,"
               "\"peak_rss_bytes\":%lld,\"cache\":{\"hits\":%llu,\"misses\":%llu,"
               "\"evictions\":%llu,\"waits\":%llu,\"overflow\":%llu,\"bytes\":%lld,"
               "\"peak_bytes\":%lld},\"busy_thread_seconds\":%.6f,\"cpu_seconds\":%.6f,",
            (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
            (unsigned long long)bytes, secs, rate / 1e6, a->target / 1e6, rate / a->target,
            p->startup + total / rate, tsr_engine_backend(e), tsr_engine_threads(e), rss,
            (unsigned long long)st.hits, (unsigned long long)st.misses,
            (unsigned long long)st.evictions, (unsigned long long)st.waits,
            (unsigned long long)st.overflow, (long long)st.cache_bytes,
            (long long)st.cache_peak, st.busy_seconds, cpu);
    if (st.dev_arena > 0) { /* the GPU backend */
        fprintf(f, "\"device\":{\"bands_in_flight\":%d,\"arena_bytes\":%lld,"
                   "\"arena_peak_bytes\":%lld,\"cache\":{"
                   "\"hits\":%llu,\"misses\":%llu,\"evictions\":%llu,\"bytes\":%lld,"
                   "\"budget\":%lld},\"stage_seconds\":{",
                st.dev_bands, (long long)st.dev_arena, (long long)st.dev_arena_peak,
                (unsigned long long)st.dev_hits, (unsigned long long)st.dev_misses,
                (unsigned long long)st.dev_evictions, (long long)st.dev_cache_bytes,
                (long long)st.dev_cache_budget);
        for (int k = 0; k < TSR_GPU_STAGES; k++)
            fprintf(f, "%s\"%s\":%.6f", k ? "," : "", tsr_gpu_stage_name(k),
                    st.gpu_stage_seconds[k]);
        fprintf(f, "},\"host_node_seconds\":%.6f},", st.gpu_host_seconds);
    } else {
        fprintf(f, "\"device\":null,");
    }
    if (p->d2h > 0)
        fprintf(f, "\"link\":{\"d2h_gb_per_s\":%.3f,\"share\":%.6f,\"bytes\":%d},", p->d2h,
                rate / 1e9 / p->d2h, 256 << 20);
    else
        fprintf(f, "\"link\":null,");
    if (a->out) {
        fprintf(f, "\"sink\":{\"out\":");
        json_str(f, a->out);
        fprintf(f, ",\"framed\":%s,\"deflate\":%s,\"rows\":[0,%lld],\"bytes\":%llu,"
                   "\"seconds\":%.6f,\"mb_per_s\":%.6f},",
                a->framed || strncmp(a->out, "tcp://", 6) == 0 ? "true" : "false",
                a->deflate ? "true" : "false", (long long)p->sink.rows,
                (unsigned long long)p->sink.bytes, p->sink.seconds,
                p->sink.seconds > 0 ? (double)p->sink.bytes / p->sink.seconds / 1e6 : 0.0);
    } else {
        fprintf(f, "\"sink\":null,");
    }
    fprintf(f, "\"engines\":[");
    for (int i = 0; i < st.nengines; i++)
        fprintf(f, "%s{\"device\":%d,\"bytes\":%llu,\"busy_seconds\":%.6f}", i ? "," : "",
                st.engines[i].device, (unsigned long long)st.engines[i].bytes,
                st.engines[i].busy_seconds);
    fprintf(f, "],");
    fprintf(f, "\"slowest_mb_per_s\":%.6f,\"fastest_mb_per_s\":%.6f,"
               "\"projected_seconds_slowest\":%.3f,\"startup_seconds\":%.6f,\"samples\":[",
            slow / 1e6, fast / 1e6, p->startup + total / slow, p->startup);
    for (int i = 0; i < ns; i++)
        fprintf(f, "%s{\"region\":[%lld,%lld,%lld,%lld],\"bytes\":%llu,\"seconds\":%.6f,"
                   "\"mb_per_s\":%.6f}", i ? "," : "", (long long)sm[i].r.x,
                (long long)sm[i].r.y, (long long)sm[i].r.w, (long long)sm[i].r.h,
                (unsigned long long)sm[i].bytes, sm[i].secs,
                sm[i].secs > 0 ? (double)sm[i].bytes / sm[i].secs / 1e6 : 0.0);
    fprintf(f, "],\"nodes\":[");
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
}

/* The per-node and per-trait times: where the CPU went, for people. */
static void
print_times(const tsr_design *d, const tsr_engine_stats *st, FILE *f)
{
    fprintf(f, "time per node (own pixels, summed over threads):\n");
    for (size_t i = 0; i < d->nnodes; i++) {
        char lb[192];
        tsr_node_label(d->nodes[i], lb, sizeof lb);
        char why[160];
        bool dev = tsr_gpu_node_why(d->nodes[i], why, sizeof why);
        fprintf(f, "  %-40s %9.3f s%s%s%s\n", lb, st->node_seconds[i],
                dev ? "" : " (computed on the host under the GPU backend: ", dev ? "" : why,
                dev ? "" : ")");
    }
    fprintf(f, "time per trait (layer + blend, summed over threads):\n");
    for (size_t i = 0; tsr_traits[i]; i++)
        if (st->trait_seconds[i] > 0)
            fprintf(f, "  %-40s %9.3f s\n", tsr_traits[i]->name, st->trait_seconds[i]);
}

/* `profile`: the figures for people. */
static void
print_text(const args *a, tsr_engine *e, const profile_sum *p, FILE *f)
{
    const sample *sm = p->sm;
    const tsr_engine_stats st = p->st;
    tsr_rect r = p->r;
    int ns = p->ns, slowest = p->slowest;
    double rate = p->rate, slow = p->slow, fast = p->fast, secs = p->secs, total = p->total;
    double cpu = p->cpu, budget = p->budget;
    uint64_t bytes = p->bytes;
    long long rss = p->rss;
    char rs[48], ss[48], fs[48], hs[32];
    fmt_rate(rs, sizeof rs, rate);
    fmt_rate(ss, sizeof ss, slow);
    fmt_rate(fs, sizeof fs, fast);
    fmt_sig(hs, sizeof hs, rate / a->target);
    fprintf(f, "design      %s\n", a->design);
    if (a->have_region)
        fprintf(f, "region      %lld,%lld,%lld,%lld (%llu sample bytes)\n", (long long)r.x,
                (long long)r.y, (long long)r.w, (long long)r.h, (unsigned long long)bytes);
    else
        fprintf(f, "samples     %d regions spread over the design in stream order, %llu sample "
                "bytes in %.3f s (--seconds %g)\n", ns, (unsigned long long)bytes, secs, budget);
    if (p->startup > 0)
        fprintf(f, "start-up    %.3f s before the samples (one row, untimed: what the stream pays "
                "once on the device)\n", p->startup);
    fprintf(f, "backend     %s, %d threads\n", tsr_engine_backend(e), tsr_engine_threads(e));
    fprintf(f, "throughput  %s in %.3f s = %sx the %.0f MB/s target\n", rs, secs, hs,
            a->target / 1e6);
    if (cpu > 0) {
        char pc[48];
        fmt_si(pc, sizeof pc, (double)bytes / cpu, "B");
        fprintf(f, "cpu         %.2f s (user + system, all threads) over the samples: %s per "
                "CPU-second\n", cpu, pc);
    }
    if (st.dev_arena > 0) { /* the GPU backend */
        fprintf(f, "device      %d bands in flight, arena %.1f MiB (at most %.1f MiB in use); tile "
                "cache %llu hits, %llu misses, %llu evictions, %.1f of %.1f MiB\n", st.dev_bands,
                (double)st.dev_arena / 1048576.0, (double)st.dev_arena_peak / 1048576.0,
                (unsigned long long)st.dev_hits, (unsigned long long)st.dev_misses,
                (unsigned long long)st.dev_evictions, (double)st.dev_cache_bytes / 1048576.0,
                (double)st.dev_cache_budget / 1048576.0);
        fprintf(f, "gpu time   ");
        for (int k = 0; k < TSR_GPU_STAGES; k++)
            if (st.gpu_stage_seconds[k] > 0)
                fprintf(f, " %s %.3f s", tsr_gpu_stage_name(k), st.gpu_stage_seconds[k]);
        if (st.gpu_host_seconds > 0)
            fprintf(f, "; host nodes %.3f s on the CPU", st.gpu_host_seconds);
        fputc('\n', f);
    }
    if (p->d2h > 0)
        fprintf(f, "link        device to host %.1f GB/s (256 MiB pinned, contiguous, best of 5): "
                "the renderer runs at %.0f %% of it\n", p->d2h, 100.0 * rate / 1e9 / p->d2h);
    if (a->out) {
        char sr[32];
        fmt_sig(sr, sizeof sr, p->sink.seconds > 0 ? (double)p->sink.bytes / p->sink.seconds / 1e6
                                                   : 0.0);
        fprintf(f, "sink        -o %s%s%s: %s MB/s, %llu bytes (render --rows 0:%lld) in %.3f s: "
                "a stream's rate into it behind this renderer\n", a->out,
                a->framed ? " --framed" : "", a->deflate ? " --deflate" : "", sr,
                (unsigned long long)p->sink.bytes, (long long)p->sink.rows, p->sink.seconds);
    }
    for (int i = 0; i < st.nengines; i++) /* --gpus */
        fprintf(f, "engine %-4d device %d: %.1f MB of bands in %.3f s computing them = %.0f MB/s\n",
                i, st.engines[i].device, (double)st.engines[i].bytes / 1e6,
                st.engines[i].busy_seconds,
                st.engines[i].busy_seconds > 0
                    ? (double)st.engines[i].bytes / st.engines[i].busy_seconds / 1e6
                    : 0.0);
    if (st.busy_seconds > 0 && secs > 0) /* the CPU backend's team */
        fprintf(f, "busy        %.2f thread-s in %.3f s: %.2f of %d threads busy on average "
                "(%.0f %%)\n", st.busy_seconds, secs, st.busy_seconds / secs,
                tsr_engine_threads(e), 100.0 * st.busy_seconds / secs / tsr_engine_threads(e));
    if (!a->have_region) {
        fprintf(f, "spread      slowest %s (region %lld,%lld,%lld,%lld), fastest %s\n",
                ss, (long long)sm[slowest].r.x, (long long)sm[slowest].r.y,
                (long long)sm[slowest].r.w, (long long)sm[slowest].r.h, fs);
        for (int i = 0; i < ns; i++) {
            char b[48];
            fmt_rate(b, sizeof b, sm[i].secs > 0 ? (double)sm[i].bytes / sm[i].secs : 0);
            fprintf(f, "  %lld,%lld,%lld,%lld  %s\n", (long long)sm[i].r.x,
                    (long long)sm[i].r.y, (long long)sm[i].r.w, (long long)sm[i].r.h, b);
        }
        char p1[32], p2[32], p3[32], tb[32];
        fmt_sig(p1, sizeof p1, p->startup + total / rate);
        fmt_sig(p2, sizeof p2, p->startup + total / slow);
        fmt_sig(p3, sizeof p3, total / a->target);
        tsr_human_bytes(tb, sizeof tb, total);
        fprintf(f, "projected   whole design (%s): %s s from the samples%s, %s s at the "
                "slowest, %s s at the target%s\n", tb, p1, p->startup > 0 ? " and the start-up" : "",
                p2, p3,
                p->cut ? " (--seconds ended inside a sample: its last chunk is not counted)"
                       : "");
    } else {
        char tb[32];
        tsr_human_bytes(tb, sizeof tb, total);
        fprintf(f, "projected   whole design (%s): %.1f s at this rate, %.1f s at the "
                "target\n", tb, total / rate, total / a->target);
    }
    char held[32], peak[32];
    tsr_human_bytes(held, sizeof held, (double)st.cache_bytes);
    tsr_human_bytes(peak, sizeof peak, (double)st.cache_peak);
    fprintf(f, "cache       %llu hits, %llu misses, %llu evictions, %llu waits, %llu uncached; "
               "%s held, %s peak\n",
            (unsigned long long)st.hits, (unsigned long long)st.misses,
            (unsigned long long)st.evictions, (unsigned long long)st.waits,
            (unsigned long long)st.overflow, held, peak);
    fprintf(f, "peak RSS    %.1f MiB\n", (double)rss / 1048576.0);
}

/* profile -o OUT: what a stream into OUT gets behind this renderer, so that nobody reads the
 * renderer's rate into null as a stream rate: `render -o OUT --rows 0:K` (K full rows, as many
 * bytes as the profile rendered, at least one row) on an engine of its own, with --framed and
 * --deflate as given; its bytes over the seconds from the open sink to the stream's end. */
static tsr_status
sink_rate(const args *a, const tsr_design *d, profile_sum *p, tsr_error *err)
{
    /* a stream row's bytes: packed depths (1, 2, 4) have fewer than w * depth / 8 */
    int64_t rowb = (int64_t)tsr_design_stream_bytes(d, 1), h = d->root->h;
    int64_t k = (int64_t)(p->bytes / (uint64_t)rowb) + (p->bytes % (uint64_t)rowb != 0);
    k = k < 1 ? 1 : k > h ? h : k;
    tsr_engine_opts o = a->eo;
    o.rows[0] = 0;
    o.rows[1] = k;
    tsr_engine *e = tsr_engine_new(d, &o, err);
    if (!e)
        return err->status;
    tsr_render_opts ro = {.out = a->out, .framed = a->framed, .deflate = a->deflate,
                          .stop = &g_stop, .profile = true};
    tsr_render_result r;
    tsr_status st = tsr_engine_render_to(e, &ro, &r, err);
    tsr_engine_free(e);
    p->sink.rows = k;
    p->sink.bytes = r.offset - r.start;
    p->sink.seconds = r.seconds;
    return st;
}

/* The end of profile --seconds: a thread that sets g_halt when the time is up, so the chunk
 * being rendered stops as a Ctrl-C stops a render (within about a tile's row: docs/
 * reliability.md), however slow one chunk of the design is. A band of a naive design took
 * minutes, and --seconds 4 ran 15.9 s on an ordinary one, 120 s and more on that. */
typedef struct deadline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;       /* the samples ended first */
    struct timespec at; /* CLOCK_MONOTONIC */
    pthread_t th;
    bool started;
} deadline;

static void *
deadline_main(void *arg)
{
    deadline *dl = arg;
    pthread_mutex_lock(&dl->mu);
    int rc = 0;
    while (!dl->done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&dl->cv, &dl->mu, &dl->at);
    if (!dl->done)
        g_halt = 1;
    pthread_mutex_unlock(&dl->mu);
    return NULL;
}

/* Arm g_halt `secs` from now (best effort: without the thread, chunks end the sampling as
 * before). */
static void
deadline_start(deadline *dl, double secs)
{
    pthread_condattr_t ca;
    pthread_mutex_init(&dl->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&dl->cv, &ca);
    pthread_condattr_destroy(&ca);
    clock_gettime(CLOCK_MONOTONIC, &dl->at);
    double end = (double)dl->at.tv_nsec * 1e-9 + secs;
    dl->at.tv_sec += (time_t)end;
    dl->at.tv_nsec = (long)((end - floor(end)) * 1e9);
    sigset_t all, old; /* signals stay with the threads that handle them */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    dl->started = pthread_create(&dl->th, NULL, deadline_main, dl) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Disarm it; g_halt is clear again unless a signal set it (g_stop). */
static void
deadline_end(deadline *dl)
{
    pthread_mutex_lock(&dl->mu);
    dl->done = true;
    pthread_cond_signal(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    if (dl->started)
        pthread_join(dl->th, NULL);
    pthread_cond_destroy(&dl->cv);
    pthread_mutex_destroy(&dl->mu);
    g_halt = g_stop != 0;
}

/* No chunk of rows finished before --seconds ran out: what can be said is a bound. */
static int
print_unfinished(const args *a, const tsr_design *d, const profile_sum *p, FILE *f)
{
    double bound = p->cut_secs > 0 ? (double)p->cut_bytes / p->cut_secs : 0;
    double total = (double)tsr_design_stream_bytes(d, d->root->h);
    char rb[48], tb[32], pb[32];
    fmt_rate(rb, sizeof rb, bound);
    tsr_human_bytes(tb, sizeof tb, (double)p->cut_bytes);
    fmt_sig(pb, sizeof pb, bound > 0 ? total / bound : 0);
    if (a->json) {
        fprintf(f, "{\"design\":");
        json_str(f, a->design);
        fprintf(f, ",\"finished\":false,\"bytes\":0,\"seconds\":%.6f,"
                   "\"mb_per_s_below\":%.6f,\"projected_seconds_above\":%.3f}\n",
                p->cut_secs, bound / 1e6, bound > 0 ? total / bound : 0.0);
        return 0;
    }
    fprintf(f, "design      %s\n", a->design);
    char all[32];
    tsr_human_bytes(all, sizeof all, total);
    fprintf(f, "unfinished  no chunk of rows (%s) finished in --seconds %g: the design renders "
            "slower than %s; the whole of it (%s) would take more than %s s\n", tb, p->budget,
            rb, all, pb);
    return 0;
}

static int
cmd_profile(args *a, tsr_engine *e, const tsr_design *d)
{
    tsr_error err = {0};
    profile_sum p = {.budget = a->seconds > 0 ? a->seconds : 4.0};
    /* what the cores gave, beside the wall clock: on a shared, loaded machine the wall rate
     * understates the renderer, MB per CPU-second much less */
    double cpu0 = cpu_s();
    deadline dl = {0};
    if (!a->have_region) /* a region is rendered whole, as the user asked */
        deadline_start(&dl, p.budget);
    tsr_status st = take_samples(a, e, d, &p, now_s(), &err);
    if (!a->have_region)
        deadline_end(&dl);
    if (st != TSR_OK)
        return fail(&err);
    p.cpu = cpu_s() - cpu0;
    if (p.ns == 0)
        return print_unfinished(a, d, &p, stdout);
    summarize(a, e, d, &p);
    if (p.st.dev_arena > 0) { /* the link the GPU's samples cross: the ceiling they sit under */
        int dev = a->eo.gpu_device;
        if (tsr_gpu_d2h_rate(dev, (size_t)256 << 20, &p.d2h, &err) != TSR_OK)
            return fail(&err);
    }
    if (a->out && sink_rate(a, d, &p, &err) != TSR_OK)
        return fail(&err);
    if (a->json) {
        print_json(a, e, d, &p, stdout);
        return 0;
    }
    print_text(a, e, &p, stdout);
    print_times(d, &p.st, stdout);
    return 0;
}

/* tessera help [COMMAND] (the whole usage, or COMMAND's) and tessera --version. */
static int
cmd_help_version(const command *c, int n, char **operands)
{
    if (strcmp(c->name, "version") == 0) {
        if (n > 0)
            return usage_error(c, "%s: takes no arguments", operands[0]);
        printf("tessera %s\n", TSR_VERSION);
        return stdout_done(0);
    }
    if (n > 1)
        return usage_error(c, "%s: at most one COMMAND", operands[1]);
    const command *of = n == 1 ? find_command(operands[0]) : NULL;
    if (n == 1 && !of)
        return usage_error(c, "%s: unknown command", operands[0]);
    print_usage(stdout, of);
    return stdout_done(0);
}

/* Whether path `p` names the same file as `st` (a file that exists). */
static bool
same_file(const char *p, const struct stat *st)
{
    struct stat o;
    return p && stat(p, &o) == 0 && o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

/* An output that is the design or one of its input files (an image) would destroy what the
 * render reads, and a profile's crop would replace a finished output: refuse both, naming the
 * file, before anything is opened for writing. Outputs that are not paths (-, null, tcp://)
 * and paths that do not exist yet pass. 0, or exit status 2 after the message. */
static int
check_out_inputs(const args *a, const tsr_design *d)
{
    struct stat st;
    const char *out = a->out;
    if (!out || strcmp(out, "-") == 0 || strcmp(out, "null") == 0 ||
        strncmp(out, "tcp://", 6) == 0 || stat(out, &st) != 0)
        return 0;
    if (same_file(a->design, &st)) {
        fprintf(stderr, "tessera: -o %s: is the design itself (%s); name another output\n", out,
                a->design);
        return 2;
    }
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_source *src = d->nodes[i]->source;
        if (src && tsr_source_has(src, TSR_SRC_CAP_FILE) && same_file(src->path, &st)) {
            fprintf(stderr, "tessera: -o %s: is an input of the design (%s, read by %s); name "
                    "another output\n", out, src->path, d->nodes[i]->name);
            return 2;
        }
    }
    if (strcmp(a->cmd, "profile") == 0 && S_ISREG(st.st_mode)) {
        fprintf(stderr, "tessera: profile -o %s: the file exists; a profile writes a crop of the "
                "stream, never over a file: name a new path, null or a device\n", out);
        return 2;
    }
    return 0;
}

/* The command's own process-wide choices, which the library leaves alone (docs/library.md).
 * Tiles, layers and scratch are a few hundred KiB to a few MiB, allocated and freed for every
 * tile: glibc would serve those with mmap and give them back with munmap, so every tile paid
 * for fresh zeroed pages (page faults were ~10% of a profile); keep them in the heap instead.
 * And one heap for all threads: a tile freed by another thread than made it went back to that
 * thread's arena, where nothing else reused it (peak RSS 56-67 MB at --memory 64M, 57-60 MB with
 * one arena, tests/cli/memory.sh). The heap's free pages go back between bands (trim_heap). */
static void
own_process(void)
{
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    /* TSR_MALLOC_ARENAS=N (measurement, docs/tuning.md): N heaps, to see what the one heap's
     * lock costs many threads */
    const char *arenas = getenv("TSR_MALLOC_ARENAS");
    int na = arenas ? atoi(arenas) : 0;
    mallopt(M_ARENA_MAX, na >= 1 && na <= 1024 ? na : 1);
    tsr_tune t = *tsr_tune_get();
    t.trim_heap = true;
    tsr_tune_set(&t);
}

/* Threads the command starts from now on (the writer, framing teams, --gpus workers) get the
 * stack the design needs, as the engine's workers do: exactly that, lowered from glibc's
 * 8 MiB too, so many threads under an address-space limit (ulimit -v) fit. Best effort: a
 * stack that stays too small still fails the render cleanly (cpu/stack.c). */
static void
own_thread_stacks(size_t bytes)
{
    pthread_attr_t at;
    if (pthread_getattr_default_np(&at) != 0)
        return;
    if (pthread_attr_setstacksize(&at, bytes) == 0)
        (void)pthread_setattr_default_np(&at);
    pthread_attr_destroy(&at);
}

/* An engine and design a stopped command leaves to the exit (run). Volatile: nothing reads
 * them, and GCC drops stores to a static that nothing reads, which left LeakSanitizer nothing
 * to find them by. */
static struct {
    tsr_engine *volatile e;
    tsr_design *volatile d;
} g_left;

/* Load, plan and run a command on the engine (render, preview, profile, check). */
static int
run(args *a)
{
    tsr_error err = {0};
    int rc;
    a->eo.plan_only = strcmp(a->cmd, "check") == 0; /* no image decoded, no table built */
    tsr_design *d = tsr_engine_load(a->design, &err);
    if (!d)
        return fail(&err);
    if ((rc = check_out_inputs(a, d)) != 0) {
        tsr_design_free(d);
        return rc;
    }
    if (a->fast && a->eo.tile == 0) /* the samples' own tiles cost less when small */
        a->eo.tile = tsr_preview_fast_tile_for(d, &a->eo, a->region, a->scale);
    tsr_engine *e = tsr_engine_new(d, &a->eo, &err);
    if (!e) {
        tsr_design_free(d);
        return fail(&err);
    }
    own_thread_stacks(tsr_engine_thread_stack(e));
    const tsr_plan *pl = tsr_engine_plan(e);
    if (pl->threads < pl->cores && strcmp(a->cmd, "check") != 0) { /* check prints the plan */
        char have[32];
        tsr_human_bytes(have, sizeof have, (double)pl->budget);
        fprintf(stderr, "tessera: --memory %s fits %lld threads, not one per core (%lld): "
                "running %lld\n", have, (long long)pl->threads, (long long)pl->cores,
                (long long)pl->threads);
    }
    if (strcmp(a->cmd, "render") == 0)
        rc = cmd_render(a, e);
    else if (strcmp(a->cmd, "preview") == 0)
        rc = cmd_preview(a, e, d);
    else if (strcmp(a->cmd, "profile") == 0)
        rc = stdout_done(cmd_profile(a, e, d));
    else if (g_stop) { /* a stop while loading or planning */
        fprintf(stderr, "tessera: interrupted\n");
        rc = 1;
    } else if (a->pixels) {
        tsr_design_write_pixels(d, stdout);
        rc = stdout_done(0);
    } else {
        tsr_engine_print_check(e, stdout, a->tree);
        rc = stdout_done(0);
    }
    if (g_stop && tsr_dist_ranks() <= 1) {
        /* A stop ends the process now: what the engine holds (its tile cache may be millions
         * of tiny tiles, each its own block: freeing them one by one kept a stopped process
         * 2.7-26.6 s after its resume line) is given back by the exit, all at once. Kept
         * reachable, so a leak checker does not call it lost. The library frees everything
         * (tsr_engine_free, tsr_job_close): only the command, which exits next, skips it.
         * Under mpirun the ranks' shutdown goes through the backend's close, as before. */
        g_left.e = e;
        g_left.d = d;
        return rc;
    }
    tsr_engine_free(e);
    tsr_design_free(d);
    return rc;
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
    tsr_error terr = {0};
    if (tsr_cli_tune_from_env(&terr) != TSR_OK) /* docs/tuning.md */
        return fail(&terr);
    own_process();
    if (argc < 2) {
        print_usage(stderr, NULL);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0)
        name = "help";
    else if (strcmp(name, "--version") == 0)
        name = "version";
    const command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "tessera: %s: unknown command (see tessera --help)\n", argv[1]);
        return 2;
    }
    args a = {0};
    int rc = parse_args(argc, argv, c, &a);
    if (rc)
        return rc;
    if (c->bit == 0)
        return cmd_help_version(c, argc - optind, argv + optind);
    /* A closed pipe or connection must be an error we report (EPIPE), not a silent kill. */
    signal(SIGPIPE, SIG_IGN);
    /* From here on SIGINT/SIGTERM stop cleanly (a stop during loading ends the render
     * before its first byte, still with the resume message). */
    install_stop(0);
    a.eo.stop = strcmp(a.cmd, "profile") == 0 ? &g_halt : &g_stop;
    if (strcmp(a.cmd, "controller") == 0)
        return cmd_controller(&a);
    /* kernel benchmarks (scripts/bench-cpu.sh): no period copied, every pixel computed */
    a.eo.direct = tsr_cli_direct_from_env();
    /* --gpus: the several-GPU backend, injected (dist/gpus.c; it refuses --backend cpu) */
    int gpus = a.eo.gpus < 0 ? tsr_gpu_count() : a.eo.gpus;
    bool on_cpu = a.eo.backend && strcmp(a.eo.backend, "cpu") == 0;
    if (a.eo.gpus != 0 && (gpus > 1 || on_cpu || tsr_tune_get()->gpus_on_cpu)) {
        a.eo.ops = &tsr_backend_gpus;
    } else if (a.eo.gpus != 0) { /* one GPU (or none: refused, saying why) */
        char why[256];
        if (!tsr_gpu_available()) {
            tsr_gpu_describe(why, sizeof why);
            fprintf(stderr, "tessera: --gpus: no usable GPU (%s); use --backend cpu\n", why);
            return 2;
        }
        a.eo.backend = "gpu";
    }
    tsr_error err = {0};
    if (strcmp(a.cmd, "render") == 0 && tsr_dist_launched_rank() == 0) {
        unsigned long long at = a.have_resume ? (unsigned long long)a.resume_at : 0;
        if (a.out && strncmp(a.out, "tcp://", 6) == 0)
            snprintf(g_early, sizeof g_early, "tessera: interrupted before the stream started; "
                     "run it again to resume (the controller answers the offset)\n");
        else
            snprintf(g_early, sizeof g_early, "tessera: interrupted at byte %llu; resume with "
                     "--resume-at %llu\n", at, at);
        g_early_on = 1;
        install_stop(SIGCONT); /* mpirun's warning may come while MPI starts */
    }
    /* mpirun -n K tessera render: rank 0 streams, the other ranks compute its bands (dist/) */
    int rank = strcmp(a.cmd, "render") == 0 ? tsr_dist_start(&g_stop, &err) : 0;
    if (rank < 0)
        return fail(&err);
    if (tsr_dist_ranks() > 1) {
        /* Open MPI ends a job (a rank died, mpirun got SIGINT) with SIGCONT to every rank, then
         * SIGTERM and SIGKILL a second later: the SIGCONT is the warning that leaves rank 0
         * the time for its abort frame and resume offset (docs/scale-out.md) */
        install_stop(SIGCONT);
    }
    if (rank > 0)
        return tsr_dist_end(tsr_dist_worker(a.design, &a.eo));
    if (tsr_dist_ranks() > 1)
        a.eo.ops = tsr_dist_backend;
    return tsr_dist_end(run(&a));
}
