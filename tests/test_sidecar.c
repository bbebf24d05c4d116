/* sidecar: a raw *.raw output with tsr_sink_opts.image gets *.raw.json when its stream
 * finishes (stream/sidecar.c, docs/outputs.md): checked by python's json and zlib against the
 * file itself; never there for an unfinished file (an older one goes at open); a resumed
 * stream's crc covers the kept bytes too. */
#include "helpers/helpers.h"
#include "stream/stream.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool
exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static tsr_sink_image
image(void)
{
    tsr_sink_image im = {.width = 300, .height = 200, .depth = 16, .pitch_um = {0.5, 0.25},
                         .origin_um = {-100.5, 7}, .order = 1, .serpentine = 1, .start = 2,
                         .swath_width = 128};
    for (int i = 0; i < 32; i++)
        im.fingerprint[i] = (uint8_t)(0xa0 + i);
    return im;
}

static uint8_t *
samples(size_t n)
{
    uint64_t seed = 77;
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)th_rand(&seed);
    return p;
}

/* Every key python reads back, and the crc32 it computes over the file. */
static void
check_json(const char *raw)
{
    const char *py = th_python("json,zlib");
    cr_assert(py, "no python3");
    cr_assert(th_run("%s -c '\n"
                     "import json, sys, zlib\n"
                     "raw = sys.argv[1]\n"
                     "j = json.load(open(raw + \".json\"))\n"
                     "data = open(raw, \"rb\").read()\n"
                     "want = dict(format=\"tessera raw\", version=1, file=raw.split(\"/\")[-1],\n"
                     "  width=300, height=200, depth=16, byte_order=\"little-endian\",\n"
                     "  row_bytes=600, pitch_um=[0.5, 0.25], origin_um=[-100.5, 7],\n"
                     "  order=\"swath\",\n"
                     "  swath=dict(width=128, serpentine=True, start=\"bottom-left\"),\n"
                     "  fingerprint=bytes(range(0xa0, 0xc0)).hex(), bytes=len(data),\n"
                     "  crc32=\"%%08x\" %% zlib.crc32(data))\n"
                     "assert len(data) == 300 * 200 * 2, len(data)\n"
                     "bad = {k: (j.get(k), v) for k, v in want.items() if j.get(k) != v}\n"
                     "assert not bad and set(j) == set(want), (bad, set(j) ^ set(want))\n"
                     "' %s",
                     py, raw) == 0,
              "%s.json", raw);
}

Test(sidecar, a_finished_raw_file_gets_its_sidecar, .init = th_dir_make, .fini = th_dir_remove)
{
    tsr_sink_image im = image();
    tsr_sink_opts o = {.image = &im};
    size_t n = 300 * 200 * 2;
    uint8_t *p = samples(n);
    tsr_error err = {0};
    const char *raw = th_in_dir("plate.raw");
    char side[600];
    snprintf(side, sizeof side, "%s.json", raw);
    tsr_sink *s = tsr_sink_open_ex(raw, &o, &err);
    cr_assert(s, "%s", err.msg);
    cr_assert(tsr_sink_write(s, p, 12345, &err) == TSR_OK, "%s", err.msg);
    cr_assert(tsr_sink_write(s, p + 12345, n - 12345, &err) == TSR_OK, "%s", err.msg);
    cr_assert(!exists(side), "no sidecar before the finish");
    cr_assert(tsr_sink_finish(s, &err) == TSR_OK, "%s", err.msg);
    cr_assert(tsr_sink_close(s, &err) == TSR_OK, "%s", err.msg);
    check_json(raw);
    free(p);
}

/* Stopped part way: no sidecar, and the older one (of the last complete run) is gone from the
 * moment the file is opened again. Resumed at the file's length, the sidecar's crc covers the
 * whole file. */
Test(sidecar, an_unfinished_file_has_none_and_a_resume_completes_it, .init = th_dir_make,
     .fini = th_dir_remove)
{
    tsr_sink_image im = image();
    tsr_sink_opts o = {.image = &im};
    size_t n = 300 * 200 * 2, cut = 50001;
    uint8_t *p = samples(n);
    tsr_error err = {0};
    const char *raw = th_in_dir("plate.raw");
    char side[600];
    snprintf(side, sizeof side, "%s.json", raw);
    FILE *f = fopen(side, "w"); /* a complete run's sidecar from before */
    cr_assert(f && fputs("{}", f) >= 0 && fclose(f) == 0);
    tsr_sink *s = tsr_sink_open_ex(raw, &o, &err);
    cr_assert(s, "%s", err.msg);
    cr_assert(!exists(side), "an older sidecar is removed at open");
    cr_assert(tsr_sink_write(s, p, cut, &err) == TSR_OK, "%s", err.msg);
    tsr_sink_close(s, NULL); /* stopped: no finish */
    cr_assert(!exists(side));
    /* finishing short is refused */
    s = tsr_sink_open_ex(raw, &o, &err);
    cr_assert(s, "%s", err.msg);
    cr_assert(tsr_sink_write(s, p, 10, &err) == TSR_OK);
    cr_assert(tsr_sink_finish(s, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "10 of 120000 bytes written: no sidecar for an unfinished file"),
              "%s", err.msg);
    tsr_sink_close(s, NULL);
    cr_assert(!exists(side));
    /* write the first part again, then resume after it */
    s = tsr_sink_open_ex(raw, &o, &err);
    cr_assert(tsr_sink_write(s, p, cut, &err) == TSR_OK);
    tsr_sink_close(s, NULL);
    tsr_sink_opts r = {.image = &im, .start = cut};
    s = tsr_sink_open_ex(raw, &r, &err);
    cr_assert(s, "%s", err.msg);
    cr_assert(tsr_sink_write(s, p + cut, n - cut, &err) == TSR_OK, "%s", err.msg);
    cr_assert(tsr_sink_finish(s, &err) == TSR_OK, "%s", err.msg);
    cr_assert(tsr_sink_close(s, &err) == TSR_OK, "%s", err.msg);
    check_json(raw);
    free(p);
}

/* Without image options, and for a framed .raw (a transcript, with its own header), nothing
 * is written beside the file; other extensions never get one. */
Test(sidecar, only_a_raw_file_with_image_options_gets_one, .init = th_dir_make,
     .fini = th_dir_remove)
{
    tsr_sink_image im = image();
    uint8_t buf[64] = {0};
    tsr_error err = {0};
    tsr_header h = th_header(64);
    struct {
        const char *name;
        tsr_sink_opts o;
    } cases[] = {{"a.raw", {0}},
                 {"b.raw", {.image = &im, .framed = true, .header = &h}},
                 {"c.bin", {.image = &im}}};
    for (size_t i = 0; i < 3; i++) {
        const char *path = th_in_dir(cases[i].name);
        tsr_sink *s = tsr_sink_open_ex(path, &cases[i].o, &err);
        cr_assert(s, "%s", err.msg);
        cr_assert(tsr_sink_write(s, buf, sizeof buf, &err) == TSR_OK, "%s", err.msg);
        cr_assert(tsr_sink_finish(s, &err) == TSR_OK, "%s", err.msg);
        cr_assert(tsr_sink_close(s, &err) == TSR_OK, "%s", err.msg);
        char side[600];
        snprintf(side, sizeof side, "%s.json", path);
        cr_assert(!exists(side), "%s", side);
    }
    cr_assert(tsr_sink_wants_image("x.TIF") && tsr_sink_wants_image("d/x.tiff") &&
              tsr_sink_wants_image("x.Bmp") && tsr_sink_wants_image("x.raw"));
    cr_assert(!tsr_sink_wants_image("x.tif/y") && !tsr_sink_wants_image(".tif") &&
              !tsr_sink_wants_image("-") && !tsr_sink_wants_image("null") &&
              !tsr_sink_wants_image("tcp://h.tif:1") && !tsr_sink_wants_image("x.png"));
}

Test(sidecar, an_unwritable_sidecar_fails_the_finish_naming_it, .init = th_dir_make,
     .fini = th_dir_remove)
{
    tsr_sink_image im = {.width = 4, .height = 1, .depth = 8, .swath_width = 4};
    tsr_sink_opts o = {.image = &im};
    tsr_error err = {0};
    const char *raw = th_in_dir("d.raw");
    char side[600];
    snprintf(side, sizeof side, "%s.json", raw);
    cr_assert(mkdir(side, 0700) == 0); /* a folder where the sidecar should go */
    tsr_sink *s = tsr_sink_open_ex(raw, &o, &err);
    cr_assert(s, "%s", err.msg);
    cr_assert(tsr_sink_write(s, "abcd", 4, &err) == TSR_OK);
    cr_assert(tsr_sink_finish(s, &err) == TSR_EIO);
    cr_assert(strstr(err.msg, "d.raw.json: Is a directory"), "%s", err.msg);
    tsr_sink_close(s, NULL);
}

Test(sidecar, a_stream_header_gives_the_geometry)
{
    tsr_header h = th_header(1000);
    h.width = 40;
    h.height = 25;
    h.order = 1;
    h.serpentine = 1;
    h.start = 3;
    h.swath_width = 16;
    tsr_sink_image im;
    memset(&im, 0x7f, sizeof im);
    tsr_sink_image_from_header(&h, &im);
    cr_assert(im.width == 40 && im.height == 25 && im.depth == h.depth);
    cr_assert(im.order == 1 && im.serpentine == 1 && im.start == 3 && im.swath_width == 16);
    cr_assert(memcmp(im.fingerprint, h.fingerprint, 32) == 0);
    cr_assert(im.pitch_um[0] == 0 && im.pitch_um[1] == 0 && im.origin_um[0] == 0 &&
              im.compression == 0 && !im.bigtiff, "the rest zeroed");
}
