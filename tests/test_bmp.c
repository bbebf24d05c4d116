/* bmp: the streaming BMP writer (image/bmp.c) behind the sink of a *.bmp output: read back by
 * python3-pil and compared with the stream's bytes (8 and 1 bit, widths that need row
 * padding, batches that split the rows); rows placed bottom-up in bounded memory; the "BM"
 * magic only once the file is whole; refusals that name the file and the reason. */
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

static uint8_t *
stream_bytes(uint64_t w, uint64_t h, int depth, uint64_t seed, size_t *n)
{
    size_t rb = (size_t)((w * (uint64_t)depth + 7) / 8);
    *n = rb * (size_t)h;
    uint8_t *p = malloc(*n ? *n : 1);
    for (size_t i = 0; i < *n; i++)
        p[i] = (uint8_t)th_rand(&seed);
    if (depth == 1 && w % 8)
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

static tsr_status
sink_stream(const char *path, const tsr_sink_image *im, const uint8_t *p, size_t n, bool finish,
            tsr_error *err)
{
    tsr_sink_opts o = {.image = im};
    tsr_sink *s = tsr_sink_open_ex(path, &o, err);
    if (!s)
        return err->status;
    uint64_t seed = 8;
    tsr_status st = TSR_OK;
    for (size_t at = 0; at < n && st == TSR_OK;) {
        size_t k = 1 + th_rand(&seed) % 70000;
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
py_pil(void)
{
    const char *py = th_python("numpy,PIL");
    cr_assert(py, "no python3 with numpy and PIL (install python3-numpy python3-pil)");
    return py;
}

/* Sizes: rows padded by 1..3 bytes, 1-bit rows with a partial byte, and an image taller than
 * one batch of rows (~1 MiB), so batches meet in the middle of the file. */
Test(bmp, eight_and_one_bit_read_back_as_the_stream, .init = th_dir_make, .fini = th_dir_remove,
     .timeout = 300)
{
    const char *py = py_pil();
    char *reader = th_src("tests/oracle/images.py");
    struct {
        uint64_t w, h;
        int depth;
    } cases[] = {{1, 1, 8}, {203, 57, 8}, {4, 3, 8}, {1001, 1300, 8}, {203, 57, 1},
                 {33, 9, 1}, {8000, 1100, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tsr_sink_image im = {.width = cases[i].w, .height = cases[i].h, .depth = cases[i].depth,
                             .swath_width = cases[i].w, .pitch_um = {2.0, 0.5}};
        size_t n;
        uint8_t *p = stream_bytes(im.width, im.height, im.depth, i, &n);
        save(th_in_dir("s.raw"), p, n);
        tsr_error err = {0};
        cr_assert(sink_stream(th_in_dir("o.bmp"), &im, p, n, true, &err) == TSR_OK, "%s",
                  err.msg);
        struct stat st;
        uint64_t stride = ((im.width * (uint64_t)im.depth + 31) / 32) * 4;
        cr_assert(stat(th_in_dir("o.bmp"), &st) == 0);
        cr_assert_eq((uint64_t)st.st_size,
                     14 + 40 + 4 * (im.depth == 1 ? 2 : 256) + stride * im.height);
        cr_assert(th_run("%s %s bmp %s %s %llu %llu %d ppm=500000,2000000", py, reader,
                         th_in_dir("o.bmp"), th_in_dir("s.raw"), (unsigned long long)im.width,
                         (unsigned long long)im.height, im.depth) == 0,
                  "case %zu", i);
        free(p);
    }
    free(reader);
}

Test(bmp, an_unfinished_bmp_has_no_magic_and_is_refused, .init = th_dir_make,
     .fini = th_dir_remove)
{
    const char *py = py_pil();
    char *reader = th_src("tests/oracle/images.py");
    tsr_sink_image im = {.width = 100, .height = 30, .depth = 8, .swath_width = 100};
    size_t n;
    uint8_t *p = stream_bytes(100, 30, 8, 1, &n);
    tsr_error err = {0};
    cr_assert(sink_stream(th_in_dir("half.bmp"), &im, p, n - 100, true, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "29 of 30 rows written: the BMP is incomplete"), "%s", err.msg);
    FILE *f = fopen(th_in_dir("half.bmp"), "rb");
    uint8_t h[2] = {1, 1};
    cr_assert(f && fread(h, 1, 2, f) == 2);
    fclose(f);
    cr_assert(h[0] == 0 && h[1] == 0, "no BM before the finish");
    cr_assert(th_run("%s %s invalid bmp %s", py, reader, th_in_dir("half.bmp")) == 0);
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

Test(bmp, bad_outputs_are_refused_naming_the_file_and_the_reason, .init = th_dir_make,
     .fini = th_dir_remove)
{
    tsr_sink_image im = {.width = 10, .height = 10, .depth = 16, .swath_width = 10};
    tsr_sink_opts o = {.image = &im};
    refused(th_in_dir("x.bmp"), &o, TSR_EINVAL, "x.bmp: depth 16: a BMP here holds 1, 4 or 8 bits");
    im.depth = 8;
    refused("/nonexistent-dir/x.bmp", &o, TSR_EIO, "/nonexistent-dir/x.bmp: No such file");
    cr_assert(mkfifo(th_in_dir("f.BMP"), 0600) == 0);
    refused(th_in_dir("f.BMP"), &o, TSR_EINVAL, "a BMP needs a regular file");
    tsr_sink_opts resume = {.image = &im, .start = 10};
    refused(th_in_dir("x.bmp"), &resume, TSR_EINVAL, "a BMP cannot be resumed");
    tsr_sink_image big = {.width = 70000, .height = 70000, .depth = 8, .swath_width = 70000};
    tsr_sink_opts ob = {.image = &big};
    refused(th_in_dir("x.bmp"), &ob, TSR_EINVAL, "over the 4 GiB a BMP can hold (write a .tif)");
    big = (tsr_sink_image){.width = (uint64_t)1 << 31, .height = 1, .depth = 1};
    big.swath_width = big.width;
    refused(th_in_dir("x.bmp"), &ob, TSR_EINVAL, "a BMP holds 1 .. 2147483647 pixels a side");
    struct stat st;
    cr_assert(stat(th_in_dir("x.bmp"), &st) != 0, "nothing was created by a refusal");
}

Test(bmp, a_failing_medium_is_reported_and_leaves_no_valid_bmp, .init = th_dir_make,
     .fini = th_dir_remove)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {.rlim_cur = 100000, .rlim_max = RLIM_INFINITY};
    cr_assert(setrlimit(RLIMIT_FSIZE, &rl) == 0);
    tsr_sink_image im = {.width = 1000, .height = 1000, .depth = 8, .swath_width = 1000};
    size_t n;
    uint8_t *p = stream_bytes(1000, 1000, 8, 4, &n);
    tsr_error err = {0};
    tsr_status st = sink_stream(th_in_dir("full.bmp"), &im, p, n, true, &err);
    cr_assert_eq(st, TSR_EIO, "%s", err.msg);
    cr_assert(strstr(err.msg, "full.bmp: File too large"), "%s", err.msg);
    free(p);
}
