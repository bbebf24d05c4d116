/* tiff: the streaming TIFF writer (image/tiff.c) behind the sink of a *.tif / *.tiff output
 * (stream/sink_image.c): read back by python3-tifffile, an independent reader, and compared
 * with the stream's bytes; BigTIFF when the file could pass 4 GB; an unfinished file is never a
 * valid TIFF; every refusal names the file and what is wrong. */
#include "helpers/helpers.h"
#include "image/image.h"
#include "stream/stream.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* A stream's bytes: rows of w pixels at `depth` (1: packed), random with flat runs. */
static uint8_t *
stream_bytes(uint64_t w, uint64_t h, int depth, uint64_t seed, size_t *n)
{
    size_t rb = (size_t)((w * (uint64_t)depth + 7) / 8);
    *n = rb * (size_t)h;
    uint8_t *p = malloc(*n ? *n : 1);
    for (size_t i = 0; i < *n; i++)
        p[i] = (i / 13) % 3 == 0 ? (uint8_t)(i / 40) : (uint8_t)th_rand(&seed);
    if (depth == 1 && w % 8) /* padding bits are 0 in a packed stream */
        for (size_t y = 0; y < h; y++)
            p[y * rb + rb - 1] &= (uint8_t)(0xff00 >> (w % 8));
    return p;
}

static void
save(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "%s", path);
}

/* Write the stream through the sink in pieces that cut rows anywhere. */
static tsr_status
sink_stream(const char *path, const tsr_sink_image *im, const uint8_t *p, size_t n, bool finish,
            tsr_error *err)
{
    tsr_sink_opts o = {.image = im};
    tsr_sink *s = tsr_sink_open_ex(path, &o, err);
    if (!s)
        return err->status;
    uint64_t seed = 5;
    tsr_status st = TSR_OK;
    for (size_t at = 0; at < n && st == TSR_OK;) {
        size_t k = 1 + th_rand(&seed) % 5000;
        k = k > n - at ? n - at : k;
        st = tsr_sink_write(s, p + at, k, err);
        at += k;
    }
    if (st == TSR_OK && finish)
        st = tsr_sink_finish(s, err);
    tsr_status cst = tsr_sink_close(s, st == TSR_OK ? err : NULL);
    return st != TSR_OK ? st : cst;
}

static const char *
py_tiff(void)
{
    const char *py = th_python("numpy,tifffile");
    cr_assert(py, "no python3 with numpy and tifffile (install python3-numpy python3-tifffile)");
    return py;
}

Test(tiff, every_depth_and_compression_reads_back_as_the_stream, .init = th_dir_make,
     .fini = th_dir_remove, .timeout = 300)
{
    const char *py = py_tiff();
    char *reader = th_src("tests/oracle/images.py");
    static const int depths[] = {1, 8, 16};
    static const int codes[] = {1, 32773, 8}; /* none, packbits, adobe deflate */
    for (int d = 0; d < 3; d++)
        for (int c = 0; c < 3; c++) {
            tsr_sink_image im = {.width = 203, .height = 57, .depth = depths[d],
                                 .pitch_um = {2.5, 4.0}, .compression = c,
                                 .swath_width = 203};
            size_t n;
            uint8_t *p = stream_bytes(im.width, im.height, im.depth, 11 + (uint64_t)c, &n);
            save(th_in_dir("s.raw"), p, n);
            tsr_error err = {0};
            const char *path = th_in_dir(c == 1 ? "out.TIFF" : "out.tif");
            cr_assert(sink_stream(path, &im, p, n, true, &err) == TSR_OK, "%s", err.msg);
            cr_assert(th_run("%s %s tiff %s %s/s.raw 203 57 %d bigtiff=0 compression=%d "
                             "xres=4000 yres=2500", py, reader, path, th_dir(), depths[d],
                             codes[c]) == 0, "depth %d compression %d", depths[d], c);
            free(p);
        }
    free(reader);
}

/* Strips of a few rows: the writer keeps one strip, never the image. */
Test(tiff, strips_hold_the_rows_asked_for, .init = th_dir_make, .fini = th_dir_remove)
{
    const char *py = py_tiff();
    char *reader = th_src("tests/oracle/images.py");
    tsr_image_opts o = {.width = 100, .height = 31, .bits = 8, .strip_rows = 4};
    tsr_error err = {0};
    tsr_tiff *t = tsr_tiff_open(th_in_dir("a.tif"), &o, &err);
    cr_assert(t, "%s", err.msg);
    size_t n;
    uint8_t *p = stream_bytes(100, 31, 8, 3, &n);
    for (int64_t y = 0; y < 31; y += 3) /* 3 rows a call against strips of 4 */
        cr_assert(tsr_tiff_write_rows(t, p + y * 100, y + 3 > 31 ? 31 - y : 3, &err) == TSR_OK,
                  "%s", err.msg);
    cr_assert(tsr_tiff_finish(t, &err) == TSR_OK, "%s", err.msg);
    save(th_in_dir("a.raw"), p, n);
    cr_assert(th_run("%s %s tiff %s %s 100 31 8 strip_rows=4", py, reader, th_in_dir("a.tif"),
                     th_in_dir("a.raw")) == 0);
    free(p);
    free(reader);
}

static void
magic_of(const char *path, uint8_t head[8])
{
    FILE *f = fopen(path, "rb");
    cr_assert(f && fread(head, 1, 8, f) == 8, "%s", path);
    fclose(f);
}

/* The choice is made at open from the size: a file that could pass 4 GB (the samples, the
 * worst case of compression, the strip table) is BigTIFF from its first byte. Abandoned
 * before a row is written, nothing near that size is ever put on disk. */
Test(tiff, bigtiff_when_the_file_could_pass_4_gb_or_when_asked, .init = th_dir_make,
     .fini = th_dir_remove)
{
    struct {
        int64_t w, h;
        int bits;
        bool ask;
        int magic;
    } cases[] = {{60000, 60000, 8, false, 42},  /* 3.6 GB */
                 {70000, 70000, 8, false, 43},  /* 4.9 GB */
                 {46341, 46341, 16, false, 43}, /* 4.29 GB */
                 {200000, 160000, 1, false, 42}, /* 4.0 GB of pixels, 1 bit: 4 GB / 8 */
                 {10, 10, 8, true, 43}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tsr_image_opts o = {.width = cases[i].w, .height = cases[i].h, .bits = cases[i].bits,
                            .bigtiff = cases[i].ask};
        tsr_error err = {0};
        tsr_tiff *t = tsr_tiff_open(th_in_dir("big.tif"), &o, &err);
        cr_assert(t, "%s", err.msg);
        tsr_tiff_abandon(t);
        uint8_t h[8];
        magic_of(th_in_dir("big.tif"), h);
        cr_assert(h[0] == 'I' && h[1] == 'I', "little-endian");
        cr_assert_eq(h[2] | h[3] << 8, cases[i].magic, "case %zu", i);
    }
}

/* Stopped half way, closed without finish: the header points at no directory, and a reader
 * refuses the file. */
Test(tiff, an_unfinished_tiff_is_not_a_tiff, .init = th_dir_make, .fini = th_dir_remove)
{
    const char *py = py_tiff();
    char *reader = th_src("tests/oracle/images.py");
    tsr_sink_image im = {.width = 64, .height = 40, .depth = 8, .swath_width = 64};
    size_t n;
    uint8_t *p = stream_bytes(64, 40, 8, 1, &n);
    tsr_error err = {0};
    cr_assert(sink_stream(th_in_dir("half.tif"), &im, p, n / 2, false, &err) == TSR_OK, "%s",
              err.msg);
    uint8_t h[8];
    magic_of(th_in_dir("half.tif"), h);
    cr_assert_eq(h[4] | h[5] | h[6] | h[7], 0, "the first directory's offset is 0");
    cr_assert(th_run("%s %s invalid tiff %s", py, reader, th_in_dir("half.tif")) == 0);
    /* finishing early is refused and leaves it just as invalid */
    tsr_sink_opts o = {.image = &im};
    tsr_sink *s = tsr_sink_open_ex(th_in_dir("half2.tif"), &o, &err);
    cr_assert(s, "%s", err.msg);
    cr_assert(tsr_sink_write(s, p, n - 64, &err) == TSR_OK, "%s", err.msg);
    cr_assert(tsr_sink_finish(s, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "39 of 40 rows written: the TIFF is incomplete"), "%s", err.msg);
    tsr_sink_close(s, NULL);
    cr_assert(th_run("%s %s invalid tiff %s", py, reader, th_in_dir("half2.tif")) == 0);
    free(p);
    free(reader);
}

/* A symlink stays a symlink: the TIFF goes to its target. */
Test(tiff, a_symlink_is_written_through, .init = th_dir_make, .fini = th_dir_remove)
{
    const char *py = py_tiff();
    char *reader = th_src("tests/oracle/images.py");
    char target[512];
    snprintf(target, sizeof target, "%s", th_in_dir("target.tif"));
    cr_assert(symlink(target, th_in_dir("link.tif")) == 0);
    tsr_sink_image im = {.width = 9, .height = 5, .depth = 16, .swath_width = 9};
    size_t n;
    uint8_t *p = stream_bytes(9, 5, 16, 2, &n);
    tsr_error err = {0};
    cr_assert(sink_stream(th_in_dir("link.tif"), &im, p, n, true, &err) == TSR_OK, "%s",
              err.msg);
    struct stat st;
    cr_assert(lstat(th_in_dir("link.tif"), &st) == 0 && S_ISLNK(st.st_mode));
    save(th_in_dir("s.raw"), p, n);
    cr_assert(th_run("%s %s tiff %s %s 9 5 16", py, reader, target, th_in_dir("s.raw")) == 0);
    free(p);
    free(reader);
}

static void
refused(const char *path, const tsr_sink_opts *o, tsr_status want, const char *msg)
{
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open_ex(path, o, &err);
    cr_assert(s == NULL, "%s opened", path);
    cr_assert_eq(err.status, want, "%s: %s", path, err.msg);
    cr_assert(strstr(err.msg, msg) != NULL, "%s: '%s' lacks '%s'", path, err.msg, msg);
}

Test(tiff, bad_outputs_are_refused_naming_the_file_and_the_reason, .init = th_dir_make,
     .fini = th_dir_remove)
{
    tsr_sink_image im = {.width = 10, .height = 10, .depth = 8, .swath_width = 10};
    tsr_sink_opts o = {.image = &im};
    refused("/nonexistent-dir/x.tif", &o, TSR_EIO, "/nonexistent-dir/x.tif: No such file");
    tsr_sink_opts none = {0};
    refused(th_in_dir("x.tif"), &none, TSR_EINVAL, "needs the image's size and depth");
    tsr_sink_image bad = im;
    bad.depth = 3;
    tsr_sink_opts ob = {.image = &bad};
    refused(th_in_dir("x.tif"), &ob, TSR_EINVAL,
            "x.tif: depth 3: a TIFF output takes 1, 2, 4, 8 or 16");
    bad = im;
    bad.order = 1;
    bad.swath_width = 4;
    refused(th_in_dir("x.tiff"), &ob, TSR_EINVAL, "the design streams swaths");
    bad = im;
    bad.start = 1;
    refused(th_in_dir("x.tif"), &ob, TSR_EINVAL, "a TIFF starts at the top-left corner");
    bad = im;
    bad.width = 0;
    refused(th_in_dir("x.tif"), &ob, TSR_EINVAL, "x.tif: size 0 x 10: out of range");
    bad = im;
    bad.width = bad.height = (uint64_t)1 << 40;
    bad.swath_width = bad.width;
    refused(th_in_dir("x.tif"), &ob, TSR_EINVAL, "too large");
    tsr_sink_opts resume = {.image = &im, .start = 100};
    refused(th_in_dir("x.tif"), &resume, TSR_EINVAL, "a TIFF cannot be resumed (--resume-at 100)");
    tsr_header h = th_header(100);
    tsr_sink_opts framed = {.image = &im, .framed = true, .header = &h};
    refused(th_in_dir("x.tif"), &framed, TSR_EINVAL, "is not a framed stream");
    cr_assert(mkfifo(th_in_dir("fifo.tif"), 0600) == 0);
    refused(th_in_dir("fifo.tif"), &o, TSR_EINVAL, "a TIFF needs a regular file");
    /* too many bytes: refused, and the file stays invalid */
    tsr_error err = {0};
    tsr_sink *s = tsr_sink_open_ex(th_in_dir("x.tif"), &o, &err);
    cr_assert(s, "%s", err.msg);
    uint8_t buf[101] = {0};
    cr_assert(tsr_sink_write(s, buf, 101, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "past the image's 100"), "%s", err.msg);
    cr_assert(tsr_sink_finish(s, &err) == TSR_EINVAL, "sticky");
    tsr_sink_close(s, NULL);
    /* the writer's own checks */
    tsr_image_opts io = {.width = 0, .height = 5, .bits = 8};
    cr_assert(tsr_tiff_open(th_in_dir("y.tif"), &io, &err) == NULL);
    cr_assert(strstr(err.msg, "size 0 x 5"), "%s", err.msg);
    io = (tsr_image_opts){.width = 5, .height = 5, .bits = 8, .pitch_um = {-1, 1}};
    cr_assert(tsr_tiff_open(th_in_dir("y.tif"), &io, &err) == NULL);
    cr_assert(strstr(err.msg, "pitch -1 um"), "%s", err.msg);
    io = (tsr_image_opts){.width = (int64_t)1 << 32, .height = 5, .bits = 8};
    cr_assert(tsr_tiff_open(th_in_dir("y.tif"), &io, &err) == NULL);
    cr_assert(strstr(err.msg, "a TIFF holds 1 .. 4294967295 pixels a side"), "%s", err.msg);
}

/* The medium refuses (a file size limit: EFBIG, as a full disk would ENOSPC): the failure
 * names the file and the reason, sticks, and the file is no TIFF. */
Test(tiff, a_failing_medium_is_reported_and_leaves_no_valid_tiff, .init = th_dir_make,
     .fini = th_dir_remove)
{
    const char *py = py_tiff();
    char *reader = th_src("tests/oracle/images.py");
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {.rlim_cur = 200000, .rlim_max = RLIM_INFINITY};
    cr_assert(setrlimit(RLIMIT_FSIZE, &rl) == 0);
    tsr_sink_image im = {.width = 1000, .height = 1000, .depth = 8, .swath_width = 1000};
    size_t n;
    uint8_t *p = stream_bytes(1000, 1000, 8, 4, &n);
    tsr_error err = {0};
    tsr_status st = sink_stream(th_in_dir("full.tif"), &im, p, n, true, &err);
    cr_assert_eq(st, TSR_EIO, "%s", err.msg);
    cr_assert(strstr(err.msg, "full.tif: File too large"), "%s", err.msg);
    rl.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &rl);
    cr_assert(th_run("%s %s invalid tiff %s", py, reader, th_in_dir("full.tif")) == 0);
    free(p);
    free(reader);
}
