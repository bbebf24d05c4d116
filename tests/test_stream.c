/* stream: sinks, the writer thread, PNG write/read (docs/format.md §4 image sources, §3 sinks).
 *
 * The PNG inputs of every colour type are made here with libpng directly, so the reader is
 * checked against files it did not write itself, and the expected values are computed from
 * the spec's formula, not from the reader. */
#include <criterion/criterion.h>

#include "helpers/helpers.h"
#include "image/image.h"
#include "stream/stream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* ---- helpers ---------------------------------------------------------------------------- */

static uint8_t *
slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void
spit(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* Entries in the test directory (to prove no temporary was left behind). */
static int
count_entries(void)
{
    DIR *d = opendir(th_dir());
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static mode_t
current_umask(void)
{
    mode_t m = umask(0);
    umask(m);
    return m;
}

/* A deterministic byte pattern that differs per buffer and per offset. */
static uint8_t
pattern(size_t buf, size_t i)
{
    return (uint8_t)(buf * 131u + i * 7u + (i >> 8));
}

/* Bit-exact float comparison (== would call -0.0 and 0.0 equal). */
static void
assert_same_floats(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        cr_assert_eq(a, b, "pixel %zu: got %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    }
}

/* The spec's formulas (docs/format.md §4), written out independently of image/png.c. */
static float
spec_gray(unsigned s, int bd)
{
    double max = (double)((1u << bd) - 1);
    return (float)((double)s / max);
}

static float
spec_rgb(unsigned r, unsigned g, unsigned b, int bd)
{
    double max = (double)((1u << bd) - 1);
    double s = 0.299 * (double)r + 0.587 * (double)g + 0.114 * (double)b;
    return (float)(s / max);
}

/* PNG's chunk CRC (ISO 3309), bitwise: only to forge a valid CRC over a corrupted header. */
static uint32_t
chunk_crc(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

/* Optional chunks for write_png_file. */
struct extras {
    png_colorp pal; /* palette (PNG_COLOR_TYPE_PALETTE) */
    int npal;
    const png_byte *trns; /* tRNS alphas for the palette, or NULL */
    int ntrns;
    bool trns_gray;       /* a gray tRNS colour key */
    bool gamma_sbit;      /* gAMA and sBIT chunks, which must both be ignored */
    bool interlace;       /* Adam7 */
};

/* Write a PNG with libpng directly; rows are already in PNG's packed, big-endian layout. */
static void
write_png_file(const char *path, png_uint_32 w, png_uint_32 h, int bd, int ct, uint8_t **rows,
               const struct extras *x)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    cr_assert(png && info);
    if (setjmp(png_jmpbuf(png)))
        cr_assert_fail("libpng failed writing the test image");
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, bd, ct, x && x->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (x && x->pal)
        png_set_PLTE(png, info, x->pal, x->npal);
    if (x && x->trns)
        png_set_tRNS(png, info, x->trns, x->ntrns, NULL);
    if (x && x->trns_gray) {
        png_color_16 key = {0};
        key.gray = 1;
        png_set_tRNS(png, info, NULL, 0, &key);
    }
    if (x && x->gamma_sbit) {
        png_set_gAMA(png, info, 1.0 / 3.0);
        png_color_8 sbit = {0};
        sbit.gray = (png_byte)(bd > 2 ? bd - 2 : 1);
        sbit.red = sbit.green = sbit.blue = sbit.gray;
        png_set_sBIT(png, info, &sbit);
    }
    png_write_info(png, info);
    png_write_image(png, rows); /* handles Adam7 passes itself */
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    cr_assert_eq(fclose(f), 0);
}

/* A row-pointer table over one contiguous buffer. */
static uint8_t **
row_table(uint8_t *data, png_uint_32 h, size_t rowbytes)
{
    uint8_t **rows = malloc(h * sizeof *rows);
    cr_assert_not_null(rows);
    for (png_uint_32 y = 0; y < h; y++)
        rows[y] = data + y * rowbytes;
    return rows;
}

static void
read_ok(const char *path, int64_t ew, int64_t eh, float **px)
{
    int64_t w = -1, h = -1;
    tsr_error err = {0};
    tsr_status st = tsr_png_read_gray(path, &w, &h, px, &err);
    cr_assert_eq(st, TSR_OK, "%s", err.msg);
    cr_assert_eq(w, ew);
    cr_assert_eq(h, eh);
}

/* Every failure path: status, a message that names the file and says what, outputs as they
 * were. */
static void
read_fails(const char *path, tsr_status want, const char *what)
{
    int64_t w = -7, h = -7;
    float *px = (float *)&w;
    tsr_error err = {0};
    tsr_status st = tsr_png_read_gray(path, &w, &h, &px, &err);
    cr_assert_eq(st, want, "status %d: %s", st, err.msg);
    cr_assert_eq(err.status, want);
    char expect[512];
    snprintf(expect, sizeof expect, "%s: %s", path, what);
    cr_assert(strncmp(err.msg, expect, strlen(expect)) == 0, "message '%s', want '%s...'", err.msg,
              expect);
    cr_assert_eq(w, -7);
    cr_assert_eq(h, -7);
    cr_assert_eq(px, (float *)&w);
}

/* ---- sinks ------------------------------------------------------------------------------ */

TestSuite(sink, .init = th_dir_make, .fini = th_dir_remove);

Test(sink, null_sink_discards_and_counts_bytes)
{
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("null", &err);
    cr_assert_not_null(s, "%s", err.msg);
    static uint8_t big[1 << 20];
    for (int i = 0; i < 5; i++)
        cr_assert_eq(tsr_sink_write(s, big, sizeof big, &err), TSR_OK);
    cr_assert_eq(tsr_sink_write(s, big, 3, &err), TSR_OK);
    cr_assert_eq(tsr_sink_write(s, big, 0, &err), TSR_OK);
    cr_assert_eq(tsr_sink_bytes(s), 5u * (1u << 20) + 3u);
    cr_assert_eq(tsr_sink_close(s, &err), TSR_OK);
}

Test(sink, file_sink_writes_exact_bytes_and_truncates)
{
    const char *path = th_in_dir("out.raw");
    spit(path, "an older, longer file that must disappear entirely", 51);

    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open(path, &err);
    cr_assert_not_null(s, "%s", err.msg);
    size_t total = 0;
    size_t lens[] = {1, 0, 4095, 3 << 20, 17, 65536};
    uint8_t *want = malloc((3 << 20) + 70000);
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        uint8_t *b = malloc(lens[k] + 1);
        for (size_t i = 0; i < lens[k]; i++)
            b[i] = want[total + i] = pattern(k, i);
        cr_assert_eq(tsr_sink_write(s, b, lens[k], &err), TSR_OK, "%s", err.msg);
        total += lens[k];
        free(b);
    }
    cr_assert_eq(tsr_sink_bytes(s), total);
    cr_assert_eq(tsr_sink_close(s, &err), TSR_OK, "%s", err.msg);

    size_t n;
    uint8_t *got = slurp(path, &n);
    cr_assert_eq(n, total);
    cr_assert(memcmp(got, want, n) == 0);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644 & ~current_umask());
    free(got);
    free(want);
}

Test(sink, file_sink_failure_to_open_names_the_path)
{
    const char *path = th_in_dir("no/such/dir/out.raw");
    tsr_error err = {0};
    cr_assert_null(tsr_sink_open(path, &err));
    cr_assert_eq(err.status, TSR_EIO);
    char want[512];
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    cr_assert_str_eq(err.msg, want);
}

Test(sink, full_device_gives_enospc_and_the_error_is_sticky)
{
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("/dev/full", &err);
    cr_assert_not_null(s, "%s", err.msg);
    uint8_t b[4096] = {1};
    cr_assert_eq(tsr_sink_write(s, b, sizeof b, &err), TSR_EIO);
    cr_assert_str_eq(err.msg, "/dev/full: No space left on device");
    cr_assert_eq(tsr_sink_bytes(s), 0);

    /* Later writes, even empty ones, and the close all repeat the first error. */
    tsr_error again = {0};
    cr_assert_eq(tsr_sink_write(s, b, 0, &again), TSR_EIO);
    cr_assert_str_eq(again.msg, "/dev/full: No space left on device");
    tsr_error at_close = {0};
    cr_assert_eq(tsr_sink_close(s, &at_close), TSR_EIO);
    cr_assert_str_eq(at_close.msg, "/dev/full: No space left on device");
}

Test(sink, tcp_spec_is_not_a_raw_sink)
{
    tsr_error err = {0};
    cr_assert_null(tsr_sink_open("tcp://127.0.0.1:9", &err));
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strncmp(err.msg, "tcp://127.0.0.1:9: ", 19) == 0, "%s", err.msg);
    cr_assert_null(tsr_sink_open("", &err));
    cr_assert_eq(err.status, TSR_EINVAL);
}

Test(sink, close_of_null_pointer_is_ok)
{
    cr_assert_eq(tsr_sink_close(NULL, NULL), TSR_OK);
    cr_assert_eq(tsr_sink_bytes(NULL), 0);
}

Test(sink, stdout_that_is_a_terminal_is_refused)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0)
        cr_skip_test("no pseudo-terminals here");
    int t = open(ptsname(m), O_RDWR | O_NOCTTY);
    if (t < 0)
        cr_skip_test("cannot open the pseudo-terminal");
    int saved = dup(1);
    cr_assert_geq(saved, 0);
    cr_assert_geq(dup2(t, 1), 0);

    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("-", &err);

    dup2(saved, 1);
    close(saved);
    close(t);
    close(m);
    cr_assert_null(s);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert_str_eq(err.msg, "stdout is a terminal: use -o FILE or a pipe");
}

Test(sink, stdout_pipe_gets_the_bytes_and_a_larger_pipe)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    int saved = dup(1);
    cr_assert_geq(dup2(p[1], 1), 0);
    close(p[1]);

    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("-", &err);
    int pipe_size = fcntl(p[0], F_GETPIPE_SZ);
    uint8_t b[10000];
    for (size_t i = 0; i < sizeof b; i++)
        b[i] = pattern(1, i);
    tsr_status w = s ? tsr_sink_write(s, b, sizeof b, &err) : TSR_EINTERNAL;
    tsr_status c = tsr_sink_close(s, &err);
    uint64_t bytes = sizeof b;

    /* Restore stdout before asserting, so Criterion's own output is not lost in the pipe. */
    dup2(saved, 1);
    close(saved);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(w, TSR_OK, "%s", err.msg);
    cr_assert_eq(c, TSR_OK, "%s", err.msg);

    uint8_t got[sizeof b + 1];
    size_t n = 0;
    ssize_t k;
    while ((k = read(p[0], got + n, sizeof got - n)) > 0)
        n += (size_t)k;
    close(p[0]);
    cr_assert_eq(n, bytes);
    cr_assert(memcmp(got, b, n) == 0);

    long max = 0;
    FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 0;
        fclose(f);
    }
    if (max >= (1 << 20))
        cr_assert_eq(pipe_size, 1 << 20);
}

/* ---- writer thread ---------------------------------------------------------------------- */

TestSuite(writer, .init = th_dir_make, .fini = th_dir_remove);

Test(writer, many_buffers_are_written_in_submission_order)
{
    const char *path = th_in_dir("band.raw");
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open(path, &err);
    cr_assert_not_null(s);
    const size_t cap = 5000, nsub = 700;
    tsr_writer *w = tsr_writer_new(s, 3, cap);
    cr_assert_not_null(w);

    size_t total = 0;
    for (size_t k = 0; k < nsub; k++) {
        uint8_t *b = tsr_writer_acquire(w);
        cr_assert_not_null(b);
        cr_assert_eq((uintptr_t)b % 64, 0);
        size_t len = (k * 977) % (cap + 1); /* includes 0 and cap */
        for (size_t i = 0; i < len; i++)
            b[i] = pattern(k, i);
        tsr_writer_submit(w, b, len);
        total += len;
    }
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_sink_bytes(s), total);
    cr_assert_eq(tsr_sink_close(s, &err), TSR_OK);

    size_t n;
    uint8_t *got = slurp(path, &n);
    cr_assert_eq(n, total);
    size_t off = 0;
    for (size_t k = 0; k < nsub; k++) {
        size_t len = (k * 977) % (cap + 1);
        for (size_t i = 0; i < len; i++)
            cr_assert_eq(got[off + i], pattern(k, i), "buffer %zu byte %zu", k, i);
        off += len;
    }
    free(got);
}

/* A writer over memory it borrows (tsr_writer_mem: what a pinning backend keeps for the
 * engine's life): its buffers lie in that memory, it writes them in order, and it leaves the
 * memory (mapped, contents kept) for the next writer. */
Test(writer, a_borrowed_pool_serves_one_writer_after_another_and_outlives_them)
{
    tsr_writer_mem m;
    cr_assert(tsr_writer_mem_new(&m, 3, 5000));
    cr_assert(m.mem && m.memlen >= 3 * 5000 && m.nbuf == 3 && m.cap == 5000);
    const char *path = th_in_dir("borrowed.raw");
    tsr_error err = {0};
    for (int round = 0; round < 2; round++) {
        tsr_sink *s = tsr_sink_open(path, &err);
        cr_assert_not_null(s, "%s", err.msg);
        tsr_writer *w = tsr_writer_new_in(s, &m, 4000 + (size_t)round);
        cr_assert_not_null(w);
        uint8_t *mine[5];
        for (size_t k = 0; k < 5; k++) {
            uint8_t *b = mine[k] = tsr_writer_acquire(w);
            cr_assert(b >= m.mem && b + 4000 <= m.mem + m.memlen, "buffer %zu outside the pool", k);
            for (size_t i = 0; i < 4000; i++)
                b[i] = pattern(k + (size_t)round, i);
            tsr_writer_submit(w, b, 4000);
        }
        cr_assert_eq(tsr_writer_finish(w, &err), TSR_OK, "%s", err.msg);
        cr_assert_eq(tsr_sink_close(s, &err), TSR_OK);
        size_t n;
        uint8_t *got = slurp(path, &n);
        cr_assert_eq(n, 5 * 4000);
        for (size_t k = 0; k < 5; k++)
            for (size_t i = 0; i < 4000; i++)
                cr_assert_eq(got[k * 4000 + i], pattern(k + (size_t)round, i));
        free(got);
        /* the last buffer's bytes are still there: written by copy, never donated away */
        cr_assert_eq(mine[4][3999], pattern(4 + (size_t)round, 3999));
    }
    tsr_writer_mem_free(&m);
    cr_assert_null(m.mem);
    tsr_writer_mem_free(&m); /* zeroed memory is fine */
}

Test(writer, a_borrowed_pool_refuses_what_it_cannot_hold)
{
    tsr_writer_mem m;
    cr_assert_not(tsr_writer_mem_new(&m, 0, 100));
    cr_assert_null(m.mem);
    cr_assert_not(tsr_writer_mem_new(&m, 2, 0));
    cr_assert_not(tsr_writer_mem_new(&m, (size_t)1 << 40, (size_t)1 << 40)); /* overflow */
    cr_assert(tsr_writer_mem_new(&m, 2, 100));
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("null", &err);
    cr_assert_null(tsr_writer_new_in(s, &m, 101), "buffers bigger than the pool's");
    cr_assert_null(tsr_writer_new_in(s, &m, 0));
    cr_assert_null(tsr_writer_new_in(s, NULL, 10));
    cr_assert_null(tsr_writer_new_in(NULL, &m, 10));
    tsr_sink_close(s, NULL);
    tsr_writer_mem_free(&m);
}

Test(writer, producer_may_stop_early_without_deadlock)
{
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("null", &err);
    tsr_writer *w = tsr_writer_new(s, 2, 100);
    cr_assert_not_null(w);
    uint8_t *a = tsr_writer_acquire(w);
    uint8_t *b = tsr_writer_acquire(w);
    cr_assert(a && b && a != b);
    tsr_writer_submit(w, a, 60);
    /* b is still held: finish must neither wait for it nor write it. */
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_OK);
    cr_assert_eq(tsr_sink_bytes(s), 60);
    tsr_sink_close(s, NULL);

    /* A writer that never got a buffer finishes too. */
    s = tsr_sink_open("null", &err);
    w = tsr_writer_new(s, 1, 1);
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_OK);
    cr_assert_eq(tsr_writer_finish(NULL, &err), TSR_OK);
    tsr_sink_close(s, NULL);
}

Test(writer, write_error_stops_acquire_and_finish_reports_it, .timeout = 30)
{
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("/dev/full", &err);
    cr_assert_not_null(s);
    tsr_writer *w = tsr_writer_new(s, 4, 4096);
    cr_assert_not_null(w);
    int k = 0;
    uint8_t *b;
    while ((b = tsr_writer_acquire(w)) != NULL && k < 100000) {
        memset(b, 0xab, 4096);
        tsr_writer_submit(w, b, 4096);
        k++;
    }
    cr_assert_null(b, "acquire never reported the failed sink");
    cr_assert_eq(tsr_writer_acquire(w), NULL); /* and keeps reporting it */
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_EIO);
    cr_assert_eq(err.status, TSR_EIO);
    cr_assert_str_eq(err.msg, "/dev/full: No space left on device");
    cr_assert_eq(tsr_sink_close(s, NULL), TSR_EIO);
}

Test(writer, foreign_or_oversized_buffer_is_reported_by_finish)
{
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open("null", &err);
    tsr_writer *w = tsr_writer_new(s, 2, 64);
    uint8_t mine[64];
    tsr_writer_submit(w, mine, 10);
    cr_assert_null(tsr_writer_acquire(w));
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_EINTERNAL);
    cr_assert(strstr(err.msg, "tsr_writer_acquire"), "%s", err.msg);

    w = tsr_writer_new(s, 2, 64);
    uint8_t *b = tsr_writer_acquire(w);
    tsr_writer_submit(w, b, 65);
    tsr_writer_submit(w, b, 1); /* no longer held */
    cr_assert_eq(tsr_writer_finish(w, &err), TSR_EINTERNAL);
    cr_assert(strstr(err.msg, "65 bytes"), "%s", err.msg);
    cr_assert_eq(tsr_sink_bytes(s), 0);
    tsr_sink_close(s, NULL);
}

Test(writer, new_refuses_empty_pools)
{
    tsr_sink *s = tsr_sink_open("null", NULL);
    cr_assert_null(tsr_writer_new(s, 0, 100));
    cr_assert_null(tsr_writer_new(s, 2, 0));
    cr_assert_null(tsr_writer_new(NULL, 2, 100));
    cr_assert_null(tsr_writer_new(s, SIZE_MAX / 2, SIZE_MAX / 4));
    tsr_sink_close(s, NULL);
}

/* ---- PNG write ------------------------------------------------------------------------- */

TestSuite(png, .init = th_dir_make, .fini = th_dir_remove);

Test(png, round_trip_8bit_is_exact)
{
    const char *path = th_in_dir("p8.png");
    const int64_t w = 37, h = 23;
    uint8_t *s = malloc(w * h);
    float *want = malloc(w * h * sizeof(float));
    for (int64_t i = 0; i < w * h; i++) {
        s[i] = (uint8_t)(i * 11 + i / 37);
        want[i] = spec_gray(s[i], 8);
    }
    s[0] = 0;
    want[0] = 0.0f;
    s[1] = 255;
    want[1] = 1.0f;
    tsr_error err = {0};
    cr_assert_eq(tsr_png_write(path, w, h, 8, s, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(count_entries(), 1); /* the temporary is gone */
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644);

    float *px = NULL;
    read_ok(path, w, h, &px);
    assert_same_floats(px, want, (size_t)(w * h));
    free(px);
    free(want);
    free(s);
}

Test(png, round_trip_16bit_host_order_is_exact)
{
    const char *path = th_in_dir("p16.png");
    const int64_t w = 300, h = 5;
    uint16_t *s = malloc(w * h * 2);
    float *want = malloc(w * h * sizeof(float));
    for (int64_t i = 0; i < w * h; i++) {
        /* Distinct high and low bytes catch a missing or doubled byte swap. */
        s[i] = (uint16_t)(i * 257 + 0x0102 + (i & 1) * 0x7f00);
        want[i] = spec_gray(s[i], 16);
    }
    s[2] = 65535;
    want[2] = 1.0f;
    tsr_error err = {0};
    cr_assert_eq(tsr_png_write(path, w, h, 16, s, &err), TSR_OK, "%s", err.msg);

    /* The file itself holds big-endian samples: check one with libpng's plain reader. */
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    cr_assert(png_image_begin_read_from_file(&img, path));
    cr_assert_eq(img.width, 300);
    cr_assert(img.format & PNG_FORMAT_FLAG_LINEAR);
    png_image_free(&img);

    float *px = NULL;
    read_ok(path, w, h, &px);
    assert_same_floats(px, want, (size_t)(w * h));
    free(px);
    free(want);
    free(s);
}

Test(png, write_replaces_an_existing_file)
{
    const char *path = th_in_dir("p.png");
    spit(path, "old", 3);
    uint8_t s[4] = {1, 2, 3, 4};
    cr_assert_eq(tsr_png_write(path, 2, 2, 8, s, NULL), TSR_OK);
    float *px = NULL;
    read_ok(path, 2, 2, &px);
    cr_assert_eq(px[3], spec_gray(4, 8));
    free(px);
    cr_assert_eq(count_entries(), 1);
}

/* A rename over PATH would turn a symlink into a regular file: the PNG goes through the link
 * into its target, and the link stays. */
Test(png, write_through_a_symlink_keeps_the_link)
{
    const char *target = th_in_dir("target.png");
    spit(target, "old", 3);
    const char *link = th_in_dir("link.png");
    cr_assert_eq(symlink("target.png", link), 0);
    uint8_t s[6] = {0, 50, 100, 150, 200, 255};
    tsr_error err = {0};
    cr_assert_eq(tsr_png_write(link, 3, 2, 8, s, &err), TSR_OK, "%s", err.msg);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the symlink was replaced (mode %o)", (unsigned)st.st_mode);
    float *px = NULL;
    read_ok(target, 3, 2, &px);
    cr_assert_eq(px[5], 1.0f);
    free(px);
    cr_assert_eq(count_entries(), 2); /* no temporary */
}

/* Made with mknod where the tests run as root (a private copy of /dev/full and /dev/null in
 * the scratch folder, never the system's own); skipped otherwise. */
static bool
private_device(const char *path, unsigned minor)
{
    if (mknod(path, S_IFCHR | 0666, makedev(1, minor)) != 0)
        return false;
    int fd = open(path, O_WRONLY); /* fails on a nodev mount */
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

Test(png, write_into_a_device_keeps_the_node_and_reports_a_full_one)
{
    const char *full = th_in_dir("full"), *null = th_in_dir("null");
    if (!private_device(full, 7) || !private_device(null, 3))
        cr_skip_test("mknod of a character device needs root and a dev mount");
    uint8_t s[4] = {1, 2, 3, 4};
    tsr_error err = {0};
    cr_assert_eq(tsr_png_write(null, 2, 2, 8, s, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_png_write(full, 2, 2, 8, s, &err), TSR_EIO);
    char want[512];
    snprintf(want, sizeof want, "%s: No space left on device", full);
    cr_assert_str_eq(err.msg, want);
    struct stat st;
    cr_assert(stat(null, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
    cr_assert(stat(full, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 7));
    cr_assert_eq(count_entries(), 2); /* no temporary */
}

/* "-" is stdout (it used to make a file named "-"); the bytes are those of a file write. */
Test(png, dash_writes_to_stdout)
{
    uint8_t s[6] = {9, 8, 7, 6, 5, 4};
    const char *path = th_in_dir("ref.png");
    cr_assert_eq(tsr_png_write(path, 3, 2, 8, s, NULL), TSR_OK);
    size_t n;
    uint8_t *want = slurp(path, &n);
    cr_assert_eq(chdir(th_dir()), 0);
    th_stdout_pipe p;
    th_stdout_pipe_start(&p, n + 1);
    tsr_error err = {0};
    tsr_status st = tsr_png_write("-", 3, 2, 8, s, &err);
    th_stdout_pipe_finish(&p);
    cr_assert_eq(st, TSR_OK, "%s", err.msg);
    cr_assert_eq(p.n, n);
    cr_assert(memcmp(p.got, want, n) == 0);
    cr_assert_eq(access("-", F_OK), -1, "a file named '-' was made");
    free(p.got);
    free(want);
}

Test(png, failed_write_leaves_no_file_and_keeps_the_old_one)
{
    const char *path = th_in_dir("big.png");
    spit(path, "old", 3);
    const char *fresh = th_in_dir("fresh.png");

    /* Incompressible samples and a 4 KiB file size limit: the write fails part way. */
    const int64_t w = 512, h = 512;
    uint8_t *s = malloc(w * h);
    uint32_t x = 12345;
    for (int64_t i = 0; i < w * h; i++) {
        x = x * 1103515245u + 12345u;
        s[i] = (uint8_t)(x >> 23);
    }
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);

    tsr_error err = {0};
    cr_assert_eq(tsr_png_write(path, w, h, 8, s, &err), TSR_EIO);
    char want[512];
    snprintf(want, sizeof want, "%s: File too large", path);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(tsr_png_write(fresh, w, h, 8, s, &err), TSR_EIO);

    size_t n;
    uint8_t *old = slurp(path, &n);
    cr_assert_eq(n, 3);
    cr_assert(memcmp(old, "old", 3) == 0);
    cr_assert_eq(access(fresh, F_OK), -1);
    cr_assert_eq(count_entries(), 1); /* no temporaries */
    free(old);
    free(s);
}

Test(png, write_errors_name_the_path)
{
    uint8_t s[4] = {0};
    tsr_error err = {0};
    const char *missing = th_in_dir("nodir/x.png");
    cr_assert_eq(tsr_png_write(missing, 2, 2, 8, s, &err), TSR_EIO);
    char want[512];
    snprintf(want, sizeof want, "%s: No such file or directory", missing);
    cr_assert_str_eq(err.msg, want);

    cr_assert_eq(tsr_png_write(th_in_dir("x.png"), 2, 2, 12, s, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "depth must be 8 or 16"), "%s", err.msg);
    cr_assert_eq(tsr_png_write(th_in_dir("x.png"), 0, 2, 8, s, &err), TSR_EINVAL);
    cr_assert_eq(tsr_png_write(th_in_dir("x.png"), (int64_t)1 << 31, 1, 8, s, &err), TSR_EINVAL);

    /* A directory in the way of the rename: the temporary is removed again. */
    cr_assert_eq(mkdir(th_in_dir("adir"), 0755), 0);
    cr_assert_eq(tsr_png_write(th_in_dir("adir"), 2, 2, 8, s, &err), TSR_EIO);
    cr_assert(strstr(err.msg, "Is a directory"), "%s", err.msg);
    cr_assert_eq(count_entries(), 1);
}

/* ---- PNG read: colour types (docs/format.md §4) ------------------------------------------- */

/* Gray at 1, 2 and 4 bits: value = sample / (2^bd - 1), not the bit-replicated 8-bit one. */
Test(png, gray_1_2_4_bit_values_are_sample_over_max)
{
    const int bds[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        int bd = bds[k];
        const png_uint_32 w = 13, h = 3; /* odd width: last byte of each row is partial */
        size_t rowbytes = (w * (size_t)bd + 7) / 8;
        uint8_t *data = calloc(h, rowbytes);
        float want[13 * 3];
        for (png_uint_32 y = 0; y < h; y++) {
            for (png_uint_32 x = 0; x < w; x++) {
                unsigned v = (x * 5 + y) % (1u << bd);
                size_t bit = (size_t)x * (size_t)bd;
                data[y * rowbytes + bit / 8] |= (uint8_t)(v << (8 - bd - bit % 8));
                want[y * w + x] = spec_gray(v, bd);
            }
        }
        char name[32];
        snprintf(name, sizeof name, "g%d.png", bd);
        uint8_t **rows = row_table(data, h, rowbytes);
        write_png_file(th_in_dir(name), w, h, bd, PNG_COLOR_TYPE_GRAY, rows, NULL);
        float *px = NULL;
        read_ok(th_in_dir(name), w, h, &px);
        assert_same_floats(px, want, w * h);
        if (bd == 2)
            cr_assert_eq(px[1], (float)(1.0 / 3.0)); /* x=1: sample 5 % 4 = 1 */
        free(px);
        free(rows);
        free(data);
    }
}

Test(png, palette_is_expanded_to_luma_and_trns_is_ignored)
{
    png_color pal[5] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {12, 200, 77}};
    png_byte alphas[5] = {0, 10, 128, 255, 3};
    const png_uint_32 w = 7, h = 2;
    uint8_t data[14];
    float want[14];
    for (int i = 0; i < 14; i++) {
        data[i] = (uint8_t)(i % 5);
        want[i] = spec_rgb(pal[i % 5].red, pal[i % 5].green, pal[i % 5].blue, 8);
    }
    uint8_t **rows = row_table(data, h, w);
    struct extras x = {.pal = pal, .npal = 5, .trns = alphas, .ntrns = 5};
    write_png_file(th_in_dir("pal8.png"), w, h, 8, PNG_COLOR_TYPE_PALETTE, rows, &x);
    float *px = NULL;
    read_ok(th_in_dir("pal8.png"), w, h, &px);
    assert_same_floats(px, want, 14);
    cr_assert_eq(px[1], (float)(0.299 * 255.0 / 255.0));
    free(px);
    free(rows);

    /* A 2-bit palette: indices unpacked, not scaled. */
    uint8_t packed[2] = {0x1b, 0xe4}; /* 0,1,2,3 | 3,2,1,0 */
    float want2[8];
    const int idx[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    for (int i = 0; i < 8; i++)
        want2[i] = spec_rgb(pal[idx[i]].red, pal[idx[i]].green, pal[idx[i]].blue, 8);
    uint8_t *prow[2] = {packed, packed + 1};
    struct extras x2 = {.pal = pal, .npal = 4};
    write_png_file(th_in_dir("pal2.png"), 4, 2, 2, PNG_COLOR_TYPE_PALETTE, prow, &x2);
    read_ok(th_in_dir("pal2.png"), 4, 2, &px);
    assert_same_floats(px, want2, 8);
    free(px);
}

Test(png, rgb_8_and_16_bit_use_luma_weights_in_double)
{
    for (int bd = 8; bd <= 16; bd += 8) {
        const png_uint_32 w = 50, h = 4;
        size_t bps = (size_t)bd / 8, rowbytes = w * 3 * bps;
        uint8_t *data = malloc(h * rowbytes);
        float want[200];
        for (png_uint_32 i = 0; i < w * h; i++) {
            unsigned max = (1u << bd) - 1;
            unsigned r = (i * 37) % (max + 1), g = (i * 101 + 7) % (max + 1),
                     b = (i * 13 + 200) % (max + 1);
            if (i == 0)
                r = g = b = max;
            unsigned c[3] = {r, g, b};
            for (int ch = 0; ch < 3; ch++) {
                uint8_t *p = data + (size_t)i * 3 * bps + (size_t)ch * bps;
                if (bd == 16) {
                    p[0] = (uint8_t)(c[ch] >> 8);
                    p[1] = (uint8_t)c[ch];
                } else {
                    p[0] = (uint8_t)c[ch];
                }
            }
            want[i] = spec_rgb(r, g, b, bd);
        }
        char name[32];
        snprintf(name, sizeof name, "rgb%d.png", bd);
        uint8_t **rows = row_table(data, h, rowbytes);
        write_png_file(th_in_dir(name), w, h, bd, PNG_COLOR_TYPE_RGB, rows, NULL);
        float *px = NULL;
        read_ok(th_in_dir(name), w, h, &px);
        assert_same_floats(px, want, w * h);
        /* White: 0.299 + 0.587 + 0.114 in double is not exactly 1, but rounds to 1.0f. */
        cr_assert_eq(px[0], 1.0f);
        free(px);
        free(rows);
        free(data);
    }
}

Test(png, rgba_and_gray_alpha_ignore_alpha)
{
    /* RGBA 8-bit with alpha 0 everywhere: the colour still counts. */
    const png_uint_32 w = 9, h = 2;
    uint8_t rgba[9 * 2 * 4];
    float want[18];
    for (int i = 0; i < 18; i++) {
        uint8_t r = (uint8_t)(i * 14), g = (uint8_t)(255 - i * 9), b = (uint8_t)(i * i);
        rgba[i * 4 + 0] = r;
        rgba[i * 4 + 1] = g;
        rgba[i * 4 + 2] = b;
        rgba[i * 4 + 3] = (uint8_t)(i % 2 ? 0 : 99);
        want[i] = spec_rgb(r, g, b, 8);
    }
    uint8_t **rows = row_table(rgba, h, w * 4);
    write_png_file(th_in_dir("rgba.png"), w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, rows, NULL);
    float *px = NULL;
    read_ok(th_in_dir("rgba.png"), w, h, &px);
    assert_same_floats(px, want, 18);
    free(px);
    free(rows);

    /* Gray+alpha 16-bit: the gray sample alone. */
    uint8_t ga[9 * 2 * 4];
    for (int i = 0; i < 18; i++) {
        unsigned g = (unsigned)(i * 3001 + 5), a = (unsigned)(i % 3) * 30000;
        ga[i * 4 + 0] = (uint8_t)(g >> 8);
        ga[i * 4 + 1] = (uint8_t)g;
        ga[i * 4 + 2] = (uint8_t)(a >> 8);
        ga[i * 4 + 3] = (uint8_t)a;
        want[i] = spec_gray(g, 16);
    }
    rows = row_table(ga, h, w * 4);
    write_png_file(th_in_dir("ga16.png"), w, h, 16, PNG_COLOR_TYPE_GRAY_ALPHA, rows, NULL);
    read_ok(th_in_dir("ga16.png"), w, h, &px);
    assert_same_floats(px, want, 18);
    free(px);
    free(rows);

    /* Gray+alpha 8-bit. */
    uint8_t ga8[18 * 2];
    for (int i = 0; i < 18; i++) {
        ga8[i * 2] = (uint8_t)(i * 15);
        ga8[i * 2 + 1] = (uint8_t)(i * 7);
        want[i] = spec_gray((unsigned)i * 15, 8);
    }
    rows = row_table(ga8, h, w * 2);
    write_png_file(th_in_dir("ga8.png"), w, h, 8, PNG_COLOR_TYPE_GRAY_ALPHA, rows, NULL);
    read_ok(th_in_dir("ga8.png"), w, h, &px);
    assert_same_floats(px, want, 18);
    free(px);
    free(rows);
}

Test(png, gamma_sbit_and_gray_trns_are_ignored)
{
    const png_uint_32 w = 16, h = 16;
    uint8_t data[256];
    float want[256];
    for (int i = 0; i < 256; i++) {
        data[i] = (uint8_t)i;
        want[i] = spec_gray((unsigned)i, 8);
    }
    uint8_t **rows = row_table(data, h, w);
    struct extras x = {.gamma_sbit = true, .trns_gray = true};
    write_png_file(th_in_dir("gamma.png"), w, h, 8, PNG_COLOR_TYPE_GRAY, rows, &x);
    float *px = NULL;
    read_ok(th_in_dir("gamma.png"), w, h, &px);
    assert_same_floats(px, want, 256);
    free(px);
    free(rows);
}

Test(png, interlaced_images_read_like_progressive_ones)
{
    const png_uint_32 w = 19, h = 11; /* not multiples of 8: partial Adam7 blocks */
    uint16_t host[19 * 11];
    uint8_t be[19 * 11 * 2];
    float want[19 * 11];
    for (png_uint_32 i = 0; i < w * h; i++) {
        host[i] = (uint16_t)(i * 313 + 1);
        be[2 * i] = (uint8_t)(host[i] >> 8);
        be[2 * i + 1] = (uint8_t)host[i];
        want[i] = spec_gray(host[i], 16);
    }
    uint8_t **rows = row_table(be, h, w * 2);
    struct extras x = {.interlace = true};
    write_png_file(th_in_dir("adam7.png"), w, h, 16, PNG_COLOR_TYPE_GRAY, rows, &x);
    float *px = NULL;
    read_ok(th_in_dir("adam7.png"), w, h, &px);
    assert_same_floats(px, want, w * h);
    free(px);
    free(rows);
}

/* ---- PNG read: bad input --------------------------------------------------------------- */

Test(png, missing_file_is_einval)
{
    read_fails(th_in_dir("nope.png"), TSR_EINVAL, "No such file or directory");
    read_fails(th_dir(), TSR_EINVAL, "Is a directory");
}

Test(png, non_png_and_empty_files_are_einval)
{
    spit(th_in_dir("text.png"), "hello, this is not an image\n", 28);
    read_fails(th_in_dir("text.png"), TSR_EINVAL, "not a PNG file");
    spit(th_in_dir("empty.png"), "", 0);
    read_fails(th_in_dir("empty.png"), TSR_EINVAL, "not a PNG file");
}

Test(png, truncated_files_are_einval_at_every_cut)
{
    const char *full = th_in_dir("full.png");
    uint8_t s[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        s[i] = (uint8_t)(i * 31 + i / 64);
    cr_assert_eq(tsr_png_write(full, 64, 64, 8, s, NULL), TSR_OK);
    size_t n;
    uint8_t *b = slurp(full, &n);
    cr_assert_gt(n, 100);
    /* Inside the signature, inside IHDR, right after it, inside IDAT, and missing IEND. */
    size_t cuts[] = {4, 7, 8, 20, 33, 40, n / 2, n - 13, n - 12, n - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        const char *cut = th_in_dir("cut.png");
        spit(cut, b, cuts[k]);
        read_fails(cut, TSR_EINVAL, "truncated PNG");
    }
    free(b);
}

Test(png, corrupt_data_is_einval_with_a_reason)
{
    const char *full = th_in_dir("ok.png");
    uint8_t s[32 * 32];
    for (int i = 0; i < 32 * 32; i++)
        s[i] = (uint8_t)(i * 7);
    cr_assert_eq(tsr_png_write(full, 32, 32, 8, s, NULL), TSR_OK);
    size_t n;
    uint8_t *b = slurp(full, &n);

    /* A flipped bit in IHDR's data breaks its CRC. */
    b[20] ^= 0x10;
    spit(th_in_dir("crc.png"), b, n);
    read_fails(th_in_dir("crc.png"), TSR_EINVAL, "corrupt PNG (");
    b[20] ^= 0x10;

    /* A bad colour type with a recomputed, valid CRC: libpng's own validation. */
    b[25] = 5;
    uint32_t crc = chunk_crc(b + 12, 17);
    b[29] = (uint8_t)(crc >> 24);
    b[30] = (uint8_t)(crc >> 16);
    b[31] = (uint8_t)(crc >> 8);
    b[32] = (uint8_t)crc;
    spit(th_in_dir("ct.png"), b, n);
    read_fails(th_in_dir("ct.png"), TSR_EINVAL, "corrupt PNG (");
    free(b);
}

Test(png, read_size_reads_only_the_header)
{
    const char *path = th_in_dir("sz.png");
    uint8_t s[6 * 4] = {0};
    cr_assert_eq(tsr_png_write(path, 6, 4, 8, s, NULL), TSR_OK);
    size_t n;
    uint8_t *b = slurp(path, &n);
    spit(path, b, 45); /* cut inside IDAT data: the header is still whole */
    free(b);
    int64_t w = 0, h = 0;
    tsr_error err = {0};
    cr_assert_eq(tsr_png_read_size(path, &w, &h, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(w, 6);
    cr_assert_eq(h, 4);
    read_fails(path, TSR_EINVAL, "truncated PNG");

    spit(path, "GIF89a....", 10);
    cr_assert_eq(tsr_png_read_size(path, &w, &h, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "not a PNG file"), "%s", err.msg);
}

Test(png, absurd_header_size_is_refused_before_allocating)
{
    const char *path = th_in_dir("huge.png");
    uint8_t s[4] = {0};
    cr_assert_eq(tsr_png_write(path, 2, 2, 8, s, NULL), TSR_OK);
    size_t n;
    uint8_t *b = slurp(path, &n);
    /* IHDR width and height (offsets 16 and 20) set to 2^31 - 1, CRC forged to match. */
    for (int k = 0; k < 2; k++) {
        b[16 + 4 * k] = 0x7f;
        b[17 + 4 * k] = b[18 + 4 * k] = b[19 + 4 * k] = 0xff;
    }
    uint32_t crc = chunk_crc(b + 12, 17);
    b[29] = (uint8_t)(crc >> 24);
    b[30] = (uint8_t)(crc >> 16);
    b[31] = (uint8_t)(crc >> 8);
    b[32] = (uint8_t)crc;
    spit(path, b, n);
    free(b);

    /* a header that claims more pixels than its file could hold at deflate's best ratio is a
     * corrupt file, refused from the header alone (image/png.c), before any plan or buffer */
    int64_t w = 0, h = 0;
    tsr_error err = {0};
    cr_assert_eq(tsr_png_read_size(path, &w, &h, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "corrupt PNG") && strstr(err.msg, "2147483647 x 2147483647"), "%s",
              err.msg);
    read_fails(path, TSR_EINVAL, "image of 2147483647 x 2147483647 pixels is too large");
}

Test(png, read_rejects_missing_outputs)
{
    tsr_error err = {0};
    int64_t w, h;
    cr_assert_eq(tsr_png_read_gray(th_in_dir("x.png"), &w, &h, NULL, &err), TSR_EINTERNAL);
}
