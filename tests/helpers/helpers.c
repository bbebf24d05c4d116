#include "cli/tune.h"
#include "helpers.h"
#include "designs/designs.h"
#include "image/image.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

uint8_t *
th_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    size_t got = fread(b, 1, (size_t)len, f);
    fclose(f);
    *n = got;
    return b;
}

char *
th_src(const char *rel)
{
    size_t n = strlen(TSR_SRC_DIR) + strlen(rel) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", TSR_SRC_DIR, rel);
    return p;
}

tsr_design *
th_design(const char *yaml)
{
    tsr_error err = {0};
    tsr_design_opts o = {.read_image = tsr_png_read_gray, .read_size = tsr_png_read_info};
    tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), "test.yaml", TSR_SRC_DIR, &o, &err);
    cr_assert(d != NULL, "design failed to load: %s", err.msg);
    return d;
}

tsr_error
th_load_error(const char *yaml)
{
    tsr_error err = {0};
    tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), "t.yaml", TSR_SRC_DIR, NULL, &err);
    cr_assert_null(d, "loaded: %s", yaml);
    return err;
}

char *
th_fmt(const char *fmt, ...)
{
    static char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

tsr_design *
th_design_deferred(const char *yaml, const char *name)
{
    tsr_error err = {0};
    tsr_design_opts o = {.read_image = tsr_png_read_gray, .read_size = tsr_png_read_info,
                         .defer = true};
    tsr_design *d = tsr_design_load_string(yaml, strlen(yaml), name, TSR_SRC_DIR, &o, &err);
    cr_assert(d != NULL, "design failed to load: %s", err.msg);
    return d;
}

uint8_t *
th_stream(const tsr_design *d, int64_t tile, int threads, size_t *n)
{
    tsr_engine_opts o = {.backend = "cpu", .threads = threads, .tile = tile};
    return th_stream_opts(d, &o, n);
}

uint8_t *
th_stream_opts(const tsr_design *d, const tsr_engine_opts *o, size_t *n)
{
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, o, &err);
    cr_assert(e != NULL, "engine: %s", err.msg);
    uint8_t *b = th_stream_engine(e, 0, n);
    cr_assert(*n == tsr_engine_stream_bytes(e), "stream length %zu", *n);
    tsr_engine_free(e);
    return b;
}

uint8_t *
th_stream_engine(tsr_engine *e, uint64_t start, size_t *n)
{
    tsr_error err = {0};
    char path[] = "/tmp/tsr-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    tsr_sink *s = tsr_sink_open(path, &err);
    cr_assert(s != NULL, "sink: %s", err.msg);
    tsr_stream_opts o = {.start = start};
    cr_assert_eq(tsr_engine_stream_ex(e, s, &o, &err), TSR_OK, "stream: %s", err.msg);
    cr_assert(tsr_sink_close(s, &err) == TSR_OK, "close: %s", err.msg);
    uint8_t *b = th_read_file(path, n);
    unlink(path);
    cr_assert(b != NULL);
    return b;
}

float *
th_rect(const tsr_design *d, tsr_rect r, int64_t tile, int threads)
{
    tsr_error err = {0};
    tsr_engine_opts o = {.backend = "cpu", .threads = threads, .tile = tile};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e != NULL, "engine: %s", err.msg);
    float *px = malloc((size_t)r.w * (size_t)r.h * sizeof(float));
    tsr_status st = tsr_engine_render_rect(e, r, px, &err);
    cr_assert(st == TSR_OK, "render_rect: %s", err.msg);
    tsr_engine_free(e);
    return px;
}

char **
th_glob(const char *rel_pattern)
{
    char *pat = th_src(rel_pattern);
    glob_t g;
    char **v;
    if (glob(pat, 0, NULL, &g) != 0) {
        v = calloc(1, sizeof *v);
    } else {
        v = calloc(g.gl_pathc + 1, sizeof *v);
        for (size_t i = 0; i < g.gl_pathc; i++)
            v[i] = strdup(g.gl_pathv[i]);
        globfree(&g);
    }
    free(pat);
    return v;
}

size_t
th_sample_step(void)
{
    const char *v = getenv("TSR_TEST_SAMPLE");
    long k = v ? strtol(v, NULL, 10) : 1;
    return k > 1 ? (size_t)k : 1;
}

void
th_glob_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

th_transcript
th_parse_transcript(const uint8_t *f, size_t n, bool allow_cut)
{
    th_transcript p;
    memset(&p, 0, sizeof p);
    tsr_error err = {0};
    cr_assert_geq(n, TSR_HEADER_SIZE);
    cr_assert_eq(tsr_header_decode(f, &p.h, &err), TSR_OK, "%s", err.msg);
    size_t at = TSR_HEADER_SIZE;
    if (p.h.version == 2) {
        cr_assert_geq(n, TSR_HEADER_SIZE + TSR_HEADER_EXT);
        cr_assert_eq(tsr_header_decode_ext(f + at, &p.h, &err), TSR_OK, "%s", err.msg);
        at += TSR_HEADER_EXT;
    }
    p.data = malloc(p.h.total + 1);
    uint64_t pos = 0;
    bool first = true;
    while (at < n) {
        tsr_frame fr = {0};
        if (at + TSR_FRAME_HEAD <= n)
            tsr_frame_decode(f + at, &fr);
        if (at + TSR_FRAME_HEAD > n || at + TSR_FRAME_HEAD + fr.wire > n) {
            cr_assert(allow_cut, "half a frame at byte %zu of %zu", at, n);
            cr_assert(!p.trailer && !p.abort, "a frame after the end");
            p.cut = true;
            break;
        }
        at += TSR_FRAME_HEAD;
        cr_assert(!p.trailer && !p.abort, "a frame after the end");
        if (first) {
            pos = p.first = fr.offset;
            first = false;
        }
        if (fr.flags & TSR_FRAME_TRAILER) {
            cr_assert_eq(fr.wire, 0);
            cr_assert_eq(fr.raw, 0);
            cr_assert_eq(fr.offset, pos);
            p.trailer = true;
            p.trailer_crc = fr.crc;
        } else if (fr.flags & TSR_FRAME_ABORT) {
            cr_assert_eq(fr.raw, fr.wire);
            cr_assert_leq(fr.wire, TSR_ABORT_MAX);
            cr_assert_eq(fr.crc, tsr_crc32(0, f + at, fr.wire));
            cr_assert_eq(fr.offset, pos, "abort offset = the next undelivered byte");
            memcpy(p.reason, f + at, fr.wire);
            p.reason[fr.wire] = '\0';
            p.abort = true;
            p.abort_offset = fr.offset;
        } else {
            cr_assert_eq(fr.offset, pos, "frames contiguous");
            cr_assert_leq(pos + fr.raw, p.h.total);
            if (fr.flags & TSR_FRAME_DEFLATE) {
                cr_assert_eq(tsr_inflate(f + at, fr.wire, p.data + p.bytes, fr.raw, &err), TSR_OK,
                             "%s", err.msg);
                p.deflated++;
            } else {
                cr_assert_eq(fr.wire, fr.raw);
                memcpy(p.data + p.bytes, f + at, fr.raw);
            }
            cr_assert_eq(tsr_crc32(0, p.data + p.bytes, fr.raw), fr.crc, "frame crc");
            p.bytes += fr.raw;
            pos += fr.raw;
            p.frames++;
        }
        at += fr.wire;
    }
    return p;
}

tsr_header
th_header(uint64_t total)
{
    tsr_header h = {0};
    h.version = 1;
    h.depth = 8;
    h.width = total;
    h.height = 1;
    h.swath_width = total;
    h.total = total;
    for (int i = 0; i < 32; i++)
        h.fingerprint[i] = (uint8_t)i;
    return h;
}

uint64_t
th_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

th_transcript
th_parse_transcript_file(const char *path)
{
    size_t n = 0;
    uint8_t *f = th_read_file(path, &n);
    cr_assert_not_null(f, "%s unreadable", path);
    th_transcript p = th_parse_transcript(f, n, false);
    free(f);
    return p;
}

/* ---- scratch folder ------------------------------------------------------------------------ */

static char scratch[64];

void
th_dir_make(void)
{
    strcpy(scratch, "/tmp/tsr_test_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
}

static int
remove_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void
th_dir_remove(void)
{
    if (scratch[0])
        nftw(scratch, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *
th_dir(void)
{
    return scratch;
}

const char *
th_in_dir(const char *name)
{
    static char buf[4][256];
    static int slot;
    char *p = buf[slot++ % 4];
    snprintf(p, 256, "%s/%s", scratch, name);
    return p;
}

/* ---- stdout into a pipe -------------------------------------------------------------------- */

static void *
drain_main(void *arg)
{
    th_stdout_pipe *p = arg;
    ssize_t k;
    while (p->n < p->cap && (k = read(p->fd, p->got + p->n, p->cap - p->n)) > 0)
        p->n += (size_t)k;
    return NULL;
}

void
th_stdout_pipe_start(th_stdout_pipe *p, size_t cap)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    p->saved = dup(1);
    dup2(fds[1], 1);
    close(fds[1]);
    p->fd = fds[0];
    p->got = malloc(cap ? cap : 1);
    p->n = 0;
    p->cap = cap;
    cr_assert_not_null(p->got);
    cr_assert_eq(pthread_create(&p->t, NULL, drain_main, p), 0);
}

void
th_stdout_pipe_finish(th_stdout_pipe *p)
{
    dup2(p->saved, 1);
    close(p->saved);
    pthread_join(p->t, NULL);
    close(p->fd);
}

tsr_status
th_env_status(const char *name, const char *value, tsr_error *err)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    return tsr_cli_tune_from_env(err);
}

/* The knobs from the environment before any test runs (TSR_NOGPU=1 on a GPU host: the CPU
 * suite; TSR_GPU_CACHE=all: the device cache's paths), as the command reads them. */
__attribute__((constructor)) static void
th_env_at_start(void)
{
    (void)tsr_cli_tune_from_env(NULL);
}

const char *
th_python(const char *modules)
{
    const char *cands[] = {getenv("PYTHON"), "python3", "/usr/bin/python3"};
    for (size_t i = 0; i < 3; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        if (th_run("%s -c 'import %s' >/dev/null 2>&1", cands[i], modules) == 0)
            return cands[i];
    }
    return NULL;
}

int
th_run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int
th_threads_from(int64_t tile)
{
    return th_sample_step() > 1 && tile < 64 ? 2 : 1;
}
