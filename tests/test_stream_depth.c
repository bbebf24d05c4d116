/* depth 1, 2, 4 through the engine (docs/outputs.md): a packed stream is the 8-bit stream of
 * the same design dithered row by row by tsr_dither_row (itself checked against numpy in
 * test_dither), whatever the tile size, threads, backend (the GPU skipped without a device),
 * order and resume offset; header version 2 and its extension (the stage's bits included); a
 * job refuses what it cannot read; tsr_dither_piece against tsr_dither_row. */
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "nodes/dither.h"
#include "stream/stream.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 203
#define H 77

/* A small lattice of lenses of `depth`, `dither` and output `extra` lines. */
static tsr_design *
lenses(int depth, const char *dither, const char *extra)
{
    char y[2048];
    snprintf(y, sizeof y,
             "tessera: 1\ntile: 32\noutput:\n  depth: %d\n%s%s%s%s"
             "root:\n  size: [%d, %d]\n  children:\n"
             "    - trait: repeat-vector\n      u: [23, 0]\n      v: [11, 19]\n"
             "      node:\n        size: [22, 22]\n"
             "        source: {gradient: radial, center: [11, 11], radius: 10, values: [1.0, "
             "0.0]}\n",
             depth, dither ? "  dither: " : "", dither ? dither : "", dither ? "\n" : "",
             extra ? extra : "", W, H);
    return th_design(y);
}

static int
level_at(const uint8_t *row, int64_t x, int bits)
{
    int per = 8 / bits;
    return row[x / per] >> (8 - bits * (int)(x % per + 1)) & ((1 << bits) - 1);
}

/* The packed raster stream from the 8-bit one: each row dithered whole at its root row. */
static uint8_t *
expect_raster(const uint8_t *s8, const char *dither, int bits, int64_t y0, int64_t rows)
{
    tsr_error err = {0};
    tsr_dither *d = tsr_dither_parse(dither, &err);
    cr_assert(d, "%s", err.msg);
    size_t rb = tsr_dither_row_bytes(W, bits);
    uint8_t *out = calloc((size_t)rows, rb);
    for (int64_t y = 0; y < rows; y++)
        cr_assert_eq(tsr_dither_row(d, s8 + y * W, 8, 0, W, y0 + y, bits, out + y * rb, &err),
                     TSR_OK, "%s", err.msg);
    tsr_dither_free(d);
    return out;
}

Test(depth, raster_stream_is_each_row_dithered_at_every_tile_size_and_thread_count)
{
    tsr_design *d8 = lenses(8, NULL, NULL);
    size_t n8;
    uint8_t *s8 = th_stream(d8, 32, 1, &n8);
    cr_assert_eq(n8, (size_t)W * H);
    const char *arrays[] = {"blue16", "bayer4", "threshold"};
    const int depths[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        tsr_design *d = lenses(depths[k], arrays[k], NULL);
        uint8_t *want = expect_raster(s8, arrays[k], depths[k], 0, H);
        size_t wn = tsr_dither_row_bytes(W, depths[k]) * H;
        const int64_t tiles[] = {1, 7, 64, 512};
        for (int t = 0; t < 4; t++)
            for (int th = 1; th <= 2; th++) {
                size_t n;
                uint8_t *got = th_stream(d, tiles[t], th, &n);
                cr_assert_eq(n, wn, "depth %d: %zu bytes, want %zu", depths[k], n, wn);
                cr_assert(memcmp(got, want, wn) == 0, "depth %d %s tile %lld threads %d",
                          depths[k], arrays[k], (long long)tiles[t], th);
                free(got);
            }
        free(want);
        tsr_design_free(d);
    }
    free(s8);
    tsr_design_free(d8);
}

Test(depth, swath_stream_packs_each_swath_row_from_its_first_column)
{
    tsr_design *d8 = lenses(8, NULL, NULL);
    size_t n8;
    uint8_t *s8 = th_stream(d8, 32, 1, &n8);
    uint8_t *full = expect_raster(s8, "bayer8", 1, 0, H);
    size_t frb = tsr_dither_row_bytes(W, 1);
    /* swaths of 45 from the top-right, serpentine: 45 = 5 bytes and 5 pixels a row */
    tsr_design *d = lenses(1, "bayer8", "  order: swath\n  swath: {width: 45, serpentine: true, "
                                        "start: top-right}\n");
    size_t n;
    uint8_t *got = th_stream(d, 7, 2, &n);
    size_t at = 0;
    for (int64_t k = 0; k * 45 < W; k++) {
        int64_t b = (k + 1) * 45 < W ? (k + 1) * 45 : W, a = k * 45, x0 = W - b, w = b - a;
        size_t rb = tsr_dither_row_bytes(w, 1);
        for (int64_t i = 0; i < H; i++) {
            int64_t y = (k & 1) ? H - 1 - i : i;
            cr_assert_leq(at + rb, n);
            for (int64_t x = 0; x < w; x++)
                cr_assert_eq(level_at(got + at, x, 1), level_at(full + y * frb, x0 + x, 1),
                             "swath %lld row %lld pixel %lld", (long long)k, (long long)y,
                             (long long)x);
            for (int64_t x = w; x < (int64_t)rb * 8; x++)
                cr_assert_eq(level_at(got + at, x, 1), 0, "padding bit %lld", (long long)x);
            at += rb;
        }
    }
    cr_assert_eq(at, n, "the stream has %zu bytes, the swaths %zu", n, at);
    free(got);
    free(full);
    free(s8);
    tsr_design_free(d);
    tsr_design_free(d8);
}

Test(depth, a_crop_and_every_resume_offset_give_the_same_bytes)
{
    tsr_design *d = lenses(2, "blue16", NULL);
    tsr_engine_opts o = {.threads = 2, .tile = 16, .rows = {5, 70}};
    size_t n;
    uint8_t *whole = th_stream_opts(d, &o, &n);
    tsr_design *d8 = lenses(8, NULL, NULL);
    size_t n8;
    uint8_t *s8 = th_stream(d8, 32, 1, &n8);
    uint8_t *want = expect_raster(s8 + 5 * W, "blue16", 2, 5, 65);
    cr_assert_eq(n, tsr_dither_row_bytes(W, 2) * 65);
    cr_assert(memcmp(whole, want, n) == 0, "the crop's thresholds follow the root's rows");
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e, "%s", err.msg);
    cr_assert_eq(tsr_engine_stream_bytes(e), n);
    const uint64_t starts[] = {1, 50, 51, 1000, n / 2 + 1, n - 1, n};
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        size_t m;
        uint8_t *tail = th_stream_engine(e, starts[i], &m);
        cr_assert_eq(m, n - starts[i]);
        cr_assert(m == 0 || memcmp(tail, whole + starts[i], m) == 0, "resumed at %llu",
                  (unsigned long long)starts[i]);
        free(tail);
    }
    tsr_engine_free(e);
    free(want);
    free(s8);
    free(whole);
    tsr_design_free(d8);
    tsr_design_free(d);
}

Test(depth, the_gpu_gives_the_cpus_bits)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    /* swaths and raster rows packed on the device (each piece from its first pixel, a swath
     * of odd width, bottom-up rows: y-up, serpentine swaths), and the host's way where the
     * rows need more than the dither (bidirectional rows) */
    static const struct {
        int depth;
        const char *dither, *extra;
    } cases[] = {
        {1, "blue64", "  order: swath\n  swath: {width: 61}\n"},
        {2, "bayer8", NULL},
        {4, "threshold", "  order: swath\n  swath: {width: 37}\n"},
        {1, "bayer4", "  stage: {y-up: true}\n"},
        {2, "blue16", "  order: swath\n  swath: {width: 40, serpentine: true}\n"},
        {1, "blue16", "  stage: {bidirectional: rows}\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsr_design *d = lenses(cases[i].depth, cases[i].dither, cases[i].extra);
        tsr_engine_opts c = {.backend = "cpu", .threads = 2}, g = {.backend = "gpu"};
        size_t nc, ng;
        uint8_t *a = th_stream_opts(d, &c, &nc), *b = th_stream_opts(d, &g, &ng);
        cr_assert_eq(nc, ng, "case %zu", i);
        cr_assert(memcmp(a, b, nc) == 0, "case %zu: the GPU's bytes differ", i);
        free(a);
        free(b);
        tsr_design_free(d);
    }
}

Test(depth, header_version_2_carries_depth_array_and_packed_total)
{
    tsr_design *d = lenses(1, "blue16", "  order: swath\n  swath: {width: 45}\n");
    tsr_header h;
    tsr_error err = {0};
    cr_assert_eq(tsr_design_header(d, 0, H, &h, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(h.version, 2);
    cr_assert_eq(h.depth, 1);
    cr_assert_eq(h.dither, 3);
    cr_assert_eq(h.dither_log2, 4);
    cr_assert_eq(h.swath_width, 45);
    /* four swaths of 45 (6 bytes a row) and one of 23 (3 bytes) */
    cr_assert_eq(h.total, (uint64_t)H * (4 * 6 + 3));
    uint8_t b[TSR_HEADER_SIZE + TSR_HEADER_EXT];
    tsr_header_encode(&h, b);
    tsr_header_encode_ext(&h, b + TSR_HEADER_SIZE);
    tsr_header g;
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_header_decode_ext(b + TSR_HEADER_SIZE, &g, &err), TSR_OK, "%s", err.msg);
    /* the round trip compared as bytes: the structs' padding is nobody's */
    uint8_t b2[TSR_HEADER_SIZE + TSR_HEADER_EXT];
    tsr_header_encode(&g, b2);
    tsr_header_encode_ext(&g, b2 + TSR_HEADER_SIZE);
    cr_assert(memcmp(b, b2, sizeof b) == 0 && g.total == h.total && g.dither == h.dither &&
                  g.stage == h.stage && g.flags == h.flags,
              "the header round-trips");
    /* an 8-bit design keeps version 1, byte for byte the header it had */
    tsr_design *d8 = lenses(8, NULL, NULL);
    cr_assert_eq(tsr_design_header(d8, 0, H, &g, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(g.version, 1);
    cr_assert_eq(g.dither, 0);
    cr_assert_eq(g.total, (uint64_t)W * H);
    cr_assert(memcmp(g.fingerprint, h.fingerprint, 32) != 0, "depth is in the fingerprint");
    tsr_design *d2 = lenses(1, "blue32", "  order: swath\n  swath: {width: 45}\n");
    tsr_header h2;
    cr_assert_eq(tsr_design_header(d2, 0, H, &h2, &err), TSR_OK, "%s", err.msg);
    cr_assert(memcmp(h2.fingerprint, h.fingerprint, 32) != 0, "the array is in the fingerprint");
    /* the stage: version 2 at 8 bits too, its bits and the corner it starts from */
    tsr_design *ds = lenses(8, NULL, "  stage: {bidirectional: rows, mirror-x: true}\n");
    tsr_header hs;
    cr_assert_eq(tsr_design_header(ds, 0, H, &hs, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(hs.version, 2);
    cr_assert_eq(hs.stage, 1 | 4);
    cr_assert_eq(hs.dither, 0);
    cr_assert(memcmp(hs.fingerprint, g.fingerprint, 32) != 0, "the stage is in the fingerprint");
    tsr_design_free(ds);
    tsr_design_free(d2);
    tsr_design_free(d8);
    tsr_design_free(d);
}

static void
ext_fails(const tsr_header *base, int at, uint8_t v, const char *msg)
{
    uint8_t e[TSR_HEADER_EXT];
    tsr_header h = *base;
    tsr_header_encode_ext(&h, e);
    e[at] = v;
    tsr_error err = {0};
    cr_assert_eq(tsr_header_decode_ext(e, &h, &err), TSR_EINVAL, "byte %d = %u passed", at, v);
    cr_assert(strstr(err.msg, msg), "'%s' lacks '%s'", err.msg, msg);
}

Test(depth, header_decode_names_each_bad_field_of_version_2)
{
    tsr_header h = th_header(1000);
    h.version = 2;
    h.depth = 1;
    h.width = 8000;
    h.swath_width = 8000;
    h.dither = 2;
    h.dither_log2 = 3;
    uint8_t b[TSR_HEADER_SIZE];
    tsr_header_encode(&h, b);
    tsr_header g;
    tsr_error err = {0};
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_OK, "%s", err.msg);
    g.dither = 2; /* what tsr_header_decode_ext would take from good bytes */
    g.dither_log2 = 3;
    ext_fails(&g, 0, 0, "header: dither 0: must be 1..3 at depth 1");
    ext_fails(&g, 0, 4, "header: dither 4: must be 1..3");
    ext_fails(&g, 1, 9, "header: dither size 2^9: must be 2^1 .. 2^8");
    ext_fails(&g, 2, 2, "header: unknown flags 0x2");
    ext_fails(&g, 3, 3, "header: stage 0x3: bits 0..3, not both 0 and 1");
    ext_fails(&g, 3, 16, "header: stage 0x10");
    ext_fails(&g, 5, 1, "header: byte 80: reserved, must be 0");
    ext_fails(&g, 31, 1, "header: byte 106: reserved, must be 0");
    /* depth 2 at version 1 is refused; a total that is not the packed rows' is too */
    h.version = 1;
    tsr_header_encode(&h, b);
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "header: depth 1: must be 8 or 16");
    /* at version 2 the total is checked with the extension (overlap, overscan and planes
     * change it) */
    h.version = 2;
    h.total = 1001;
    tsr_header_encode(&h, b);
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_OK, "%s", err.msg);
    uint8_t e[TSR_HEADER_EXT];
    tsr_header_encode_ext(&h, e);
    cr_assert_eq(tsr_header_decode_ext(e, &g, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "total 1001 bytes does not match 8000 x 1 at 1 bit"), "%s",
              err.msg);
    /* an 8-bit version 2 header (a profile's) has no array */
    h = th_header(1000);
    h.version = 2;
    h.flags = TSR_HEADER_PROFILE;
    tsr_header_encode(&h, b);
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_OK, "%s", err.msg);
    ext_fails(&g, 0, 2, "header: dither 2: must be 0 at depth 8");
    g.version = 1;
    ext_fails(&g, 0, 0, "header: version 1 has no extension");
}

Test(depth, a_job_refuses_a_packed_design_with_a_reason)
{
    const char *y = "tessera: 1\noutput: {depth: 1, dither: bayer4}\nroot: {size: [16, 16]}\n";
    tsr_error err = {0};
    tsr_job *j = tsr_job_open_yaml(y, strlen(y), "p.yaml", NULL, &err);
    cr_assert(j == NULL);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "depth 1 (dithered) is not read through a job yet"), "%s",
              err.msg);
    const char *y2 = "tessera: 1\noutput: {stage: {mirror-x: true}}\nroot: {size: [16, 16]}\n";
    j = tsr_job_open_yaml(y2, strlen(y2), "m.yaml", NULL, &err);
    cr_assert(j == NULL);
    cr_assert_eq(err.status, TSR_EINVAL);
    cr_assert(strstr(err.msg, "stage options is not read through a job yet"), "%s", err.msg);
}

Test(depth, a_piece_is_the_rows_bits_from_its_first_pixel)
{
    uint64_t r = 7;
    tsr_error err = {0};
    const char *arrays[] = {"bayer2", "blue16", "bayer8"};
    for (int k = 0; k < 3; k++) {
        tsr_dither *d = tsr_dither_parse(arrays[k], &err);
        cr_assert(d, "%s", err.msg);
        for (int bits = 1; bits <= 4; bits *= 2)
            for (int depth = 8; depth <= 16; depth += 8)
                for (int rep = 0; rep < 40; rep++) {
                    size_t n = 1 + th_rand(&r) % 300, bps = (size_t)depth / 8;
                    int64_t x = (int64_t)(th_rand(&r) % 500), y = (int64_t)(th_rand(&r) % 99);
                    uint8_t s[600], row[512] = {0}, piece[160];
                    for (size_t i = 0; i < n * bps; i++)
                        s[i] = (uint8_t)th_rand(&r);
                    memset(piece, 0xa5, sizeof piece);
                    cr_assert_eq(tsr_dither_row(d, s, depth, x, n, y, bits, row, &err), TSR_OK);
                    cr_assert_eq(tsr_dither_piece(d, s, depth, x, n, y, bits, piece, &err),
                                 TSR_OK);
                    for (size_t i = 0; i < n; i++)
                        cr_assert_eq(level_at(piece, (int64_t)i, bits),
                                     level_at(row, x + (int64_t)i, bits));
                    size_t pb = tsr_dither_row_bytes((int64_t)n, bits);
                    for (size_t i = n; i < pb * 8 / (size_t)bits; i++)
                        cr_assert_eq(level_at(piece, (int64_t)i, bits), 0, "padding");
                    cr_assert_eq(piece[pb], 0xa5, "wrote past its bytes");
                }
        uint8_t s[4] = {0}, o[4];
        cr_assert_eq(tsr_dither_piece(d, s, 12, 0, 1, 0, 1, o, &err), TSR_EINVAL);
        cr_assert(strstr(err.msg, "sample depth 12"), "%s", err.msg);
        cr_assert_eq(tsr_dither_piece(d, s, 8, 0, 1, 0, 3, o, &err), TSR_EINVAL);
        cr_assert(strstr(err.msg, "output depth 3"), "%s", err.msg);
        cr_assert_eq(tsr_dither_piece(d, s, 8, -1, 1, 0, 1, o, &err), TSR_EINVAL);
        cr_assert(strstr(err.msg, "out of range"), "%s", err.msg);
        tsr_dither_free(d);
    }
}
