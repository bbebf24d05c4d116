/* The stage's geometry (docs/outputs.md §2, §8): stream/geom.c's totals against a plain sum
 * over swaths; the feather weights mirror and the split of a sample sums to it exactly; the
 * overscan's padding against a pixel-by-pixel packing; the header's extension round trip and
 * its refusals; every resume offset of a bit-plane stream with overlap and overscan gives the
 * tail of the whole stream; the stream is the same on every tile size and thread count, and on
 * the GPU (skipped without a device). tests/cli/stage.sh checks the bytes against numpy. */
#include "engine/engine.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "nodes/dither.h"
#include "stream/stream.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 203
#define H 41

static tsr_design *
lenses(int depth, const char *extra)
{
    char y[2048];
    snprintf(y, sizeof y,
             "tessera: 1\ntile: 32\noutput:\n  depth: %d\n%s"
             "root:\n  size: [%d, %d]\n  children:\n"
             "    - trait: repeat-vector\n      u: [23, 0]\n      v: [11, 19]\n"
             "      node:\n        size: [22, 22]\n"
             "        source: {gradient: radial, center: [11, 11], radius: 10, values: [1.0, "
             "0.0]}\n",
             depth, extra ? extra : "", W, H);
    return th_design(y);
}

Test(stage, geometry_totals_are_the_sum_over_swaths)
{
    const uint64_t widths[] = {1, 7, 64, 301, 1000};
    const int bits[] = {1, 2, 4, 8, 16};
    for (size_t a = 0; a < 5; a++)
        for (uint64_t sw = 1; sw <= widths[a] + 1; sw += 1 + sw / 3)
            for (uint64_t ov = 0; ov < 12; ov += 5)
                for (int b = 0; b < 5; b++)
                    for (uint64_t planes = 0; planes < 2; planes++) {
                        if (planes && bits[b] < 8)
                            continue;
                        tsr_stream_geom g = {widths[a], 3, sw, bits[b], ov, ov / 2, planes};
                        uint64_t n = tsr_geom_swaths(&g), sum = 0, cols = 0, total;
                        for (uint64_t k = 0; k < n; k++) {
                            uint64_t base, lead, trail, px;
                            tsr_geom_swath(&g, k, &base, &lead, &trail);
                            cols += base;
                            cr_assert(trail <= ov && lead <= ov);
                            px = base + trail + 2 * g.overscan;
                            sum += planes ? (uint64_t)bits[b] * ((px + 7) / 8)
                                          : (px * (uint64_t)bits[b] + 7) / 8;
                            if (k > 0) { /* a swath's lead is the one before's trail */
                                uint64_t b0, l0, t0;
                                tsr_geom_swath(&g, k - 1, &b0, &l0, &t0);
                                cr_assert_eq(t0, lead);
                            }
                        }
                        cr_assert_eq(cols, widths[a], "the swaths cover the width");
                        cr_assert(tsr_geom_total(&g, &total));
                        cr_assert_eq(total, 3 * sum, "w %llu sw %llu ov %llu bits %d",
                                     (unsigned long long)widths[a], (unsigned long long)sw,
                                     (unsigned long long)ov, bits[b]);
                    }
    tsr_stream_geom big = {UINT64_MAX / 2, UINT64_MAX / 2, 1, 16, 0, 0, 0};
    uint64_t t;
    cr_assert(!tsr_geom_total(&big, &t), "an overflow is said");
}

Test(stage, feather_weights_mirror_and_the_split_sums_to_the_sample)
{
    for (int f = 0; f < 2; f++)
        for (int64_t len = 1; len < 70; len++)
            for (int64_t j = 0; j < len; j++) {
                uint32_t a = tsr_feather_weight(f, len, j), b = tsr_feather_weight(f, len, len - 1 - j);
                cr_assert(a + b >= 65535 && a + b <= 65537, "len %lld j %lld: %u + %u",
                          (long long)len, (long long)j, a, b);
                if (j > 0)
                    cr_assert(a >= tsr_feather_weight(f, len, j - 1), "rising");
            }
    /* two swaths' shares of one row add up to it, at 8 and 16 bits, either side */
    for (int bps = 1; bps <= 2; bps++)
        for (int left = 0; left < 2; left++) {
            enum { N = 40, L = 13 };
            uint8_t orig[N * 2], a[N * 2], b[N * 2];
            uint32_t wt[L];
            for (int j = 0; j < L; j++)
                wt[j] = tsr_feather_weight(1, L, j);
            for (int i = 0; i < N * bps; i++)
                orig[i] = (uint8_t)(i * 37 + 11);
            memcpy(a, orig, sizeof a);
            memcpy(b, orig, sizeof b);
            /* a: the earlier swath, its trail at the far side; b: the later, its lead */
            tsr_feather_row(a, bps, N, 0, L, left, wt, wt);
            tsr_feather_row(b, bps, N, L, 0, left, wt, wt);
            for (int j = 0; j < L; j++) {
                int ca = left ? N - L + j : L - 1 - j, cb = left ? j : N - 1 - j;
                uint32_t sa = bps == 1 ? a[ca] : (uint32_t)(a[2 * ca] | a[2 * ca + 1] << 8);
                uint32_t sb = bps == 1 ? b[cb] : (uint32_t)(b[2 * cb] | b[2 * cb + 1] << 8);
                uint32_t so = bps == 1 ? orig[ca] : (uint32_t)(orig[2 * ca] | orig[2 * ca + 1] << 8);
                uint32_t s2 = bps == 1 ? orig[cb] : (uint32_t)(orig[2 * cb] | orig[2 * cb + 1] << 8);
                /* each share against its formula: the later swath's round(s w / 65536),
                 * the earlier's the rest of its sample */
                uint32_t want_b = (uint32_t)(((uint64_t)s2 * wt[j] + 32768) >> 16);
                cr_assert_eq(sb, want_b);
                cr_assert_eq(sa, so - (uint32_t)(((uint64_t)so * wt[j] + 32768) >> 16));
            }
            /* columns outside the overlaps are untouched */
            int mid = N / 2;
            cr_assert(memcmp(a + mid * bps, orig + mid * bps, (size_t)bps) == 0);
        }
}

Test(stage, overscan_pads_packed_rows_pixel_by_pixel)
{
    for (int bits = 1; bits <= 4; bits *= 2)
        for (int64_t n = 0; n < 11; n += 3)
            for (int64_t w = 1; w < 30; w += 7) {
                tsr_output o = {0};
                o.depth = 8;
                o.bits = bits;
                o.overscan = n;
                o.overscan_value = (1 << bits) - 1;
                uint8_t data[16] = {0}, dst[32], want[32] = {0};
                int per = 8 / bits, mask = (1 << bits) - 1;
                for (int64_t x = 0; x < w; x++) /* level x mod 2^bits at pixel x */
                    data[x / per] |= (uint8_t)((x & mask) << (8 - bits * (x % per + 1)));
                memset(dst, 0xa5, sizeof dst);
                tsr_output_pad(&o, data, w, dst);
                for (int64_t q = 0; q < w + 2 * n; q++) {
                    int v = q < n || q >= n + w ? mask : (int)((q - n) & mask);
                    want[q / per] |= (uint8_t)(v << (8 - bits * (q % per + 1)));
                }
                size_t nb = (size_t)(((w + 2 * n) * bits + 7) / 8);
                cr_assert(memcmp(dst, want, nb) == 0, "bits %d n %lld w %lld", bits,
                          (long long)n, (long long)w);
            }
}

Test(stage, header_extension_round_trips_and_refuses_bad_geometry)
{
    tsr_design *d = lenses(8, "  order: swath\n  swath: {width: 50}\n  planes: 4\n"
                              "  stage: {overlap: 7, feather: cosine, overscan: 3, "
                              "overscan-value: 9}\n");
    tsr_header h;
    tsr_error err = {0};
    cr_assert_eq(tsr_design_header(d, 0, H, &h, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(h.version, 2);
    cr_assert(h.overlap == 7 && h.feather == 1 && h.overscan == 3 && h.overscan_value == 9 &&
              h.planes == 4);
    uint8_t b[TSR_HEADER_SIZE + TSR_HEADER_EXT], b2[sizeof b];
    tsr_header_encode(&h, b);
    tsr_header_encode_ext(&h, b + TSR_HEADER_SIZE);
    tsr_header g;
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(tsr_header_decode_ext(b + TSR_HEADER_SIZE, &g, &err), TSR_OK, "%s", err.msg);
    tsr_header_encode(&g, b2);
    tsr_header_encode_ext(&g, b2 + TSR_HEADER_SIZE);
    cr_assert(memcmp(b, b2, sizeof b) == 0, "the header round-trips");
    struct {
        int at;
        uint8_t v;
        const char *msg;
    } bad[] = {
        {4, 2, "header: feather 2: must be 0 (linear) or 1 (cosine)"},
        {8, 20, "header: total"},                    /* another overlap: another total */
        {12, 4, "header: total"},                    /* another overscan */
        {16, 0, "header: overscan value 256: must be 0..255 at 8 bit"},
        {20, 5, "header: total"},                    /* planes 5: the same total (bits x rows) */
        {6, 1, "header: byte 81: reserved, must be 0"},
        {18, 1, "header: byte 93: reserved, must be 0"},
        {24, 1, "header: byte 99: reserved, must be 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t e[TSR_HEADER_EXT];
        memcpy(e, b + TSR_HEADER_SIZE, sizeof e);
        e[bad[i].at] = bad[i].v;
        if (bad[i].at == 16)
            e[17] = 1; /* 256 */
        tsr_header x;
        cr_assert_eq(tsr_header_decode(b, &x, &err), TSR_OK);
        tsr_status st = tsr_header_decode_ext(e, &x, &err);
        if (bad[i].at == 20) { /* planes do not change the total: taken */
            cr_assert_eq(st, TSR_OK, "%s", err.msg);
            continue;
        }
        cr_assert_eq(st, TSR_EINVAL, "byte %d = %u passed", bad[i].at, bad[i].v);
        cr_assert(strstr(err.msg, bad[i].msg), "'%s' lacks '%s'", err.msg, bad[i].msg);
    }
    /* an overlap in raster order, or planes below depth 8 */
    tsr_header r = th_header(1000);
    r.version = 2;
    r.overlap = 3;
    uint8_t e[TSR_HEADER_EXT];
    tsr_header_encode_ext(&r, e);
    cr_assert_eq(tsr_header_decode_ext(e, &r, &err), TSR_EINVAL);
    cr_assert(strstr(err.msg, "overlap 3: only in swath order at depth 8 or 16"), "%s", err.msg);
    tsr_design_free(d);
}

Test(stage, every_tile_thread_and_resume_gives_the_same_bytes)
{
    tsr_design *d = lenses(16, "  order: swath\n  swath: {width: 60, serpentine: true}\n"
                               "  planes: 5\n  stage: {overlap: 17, overscan: 2, "
                               "overscan-value: 1000, bidirectional: rows}\n");
    size_t n;
    uint8_t *whole = th_stream(d, 32, 2, &n);
    const int64_t tiles[] = {1, 7, 64, 512};
    for (size_t t = 0; t < 4; t++)
        for (int th = 1; th <= 2; th++) {
            size_t m;
            uint8_t *s = th_stream(d, tiles[t], th, &m);
            cr_assert(m == n && memcmp(s, whole, n) == 0, "tile %lld threads %d",
                      (long long)tiles[t], th);
            free(s);
        }
    tsr_engine_opts o = {.threads = 2, .tile = 16};
    tsr_error err = {0};
    tsr_engine *e = tsr_engine_new(d, &o, &err);
    cr_assert(e, "%s", err.msg);
    for (uint64_t start = 1; start < n; start += 1 + start / 2) {
        size_t m;
        uint8_t *tail = th_stream_engine(e, start, &m);
        cr_assert_eq(m, n - start);
        cr_assert(memcmp(tail, whole + start, m) == 0, "resumed at %llu",
                  (unsigned long long)start);
        free(tail);
    }
    tsr_engine_free(e);
    if (tsr_gpu_available()) { /* the stage is the host's: the GPU's samples, the same bytes */
        tsr_engine_opts g = {.backend = "gpu"};
        size_t m;
        uint8_t *s = th_stream_opts(d, &g, &m);
        cr_assert(m == n && memcmp(s, whole, n) == 0, "the GPU gives the CPU's bytes");
        free(s);
    }
    free(whole);
    tsr_design_free(d);
}

Test(stage, the_gpu_gives_the_cpus_stream)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    tsr_design *d = lenses(8, "  order: swath\n  swath: {width: 50}\n"
                              "  stage: {overlap: 9, feather: cosine, overscan: 4}\n");
    tsr_engine_opts c = {.backend = "cpu", .threads = 2}, g = {.backend = "gpu"};
    size_t nc, ng;
    uint8_t *a = th_stream_opts(d, &c, &nc), *b = th_stream_opts(d, &g, &ng);
    cr_assert_eq(nc, ng);
    cr_assert(memcmp(a, b, nc) == 0);
    free(a);
    free(b);
    tsr_design_free(d);
}

Test(stage, a_job_refuses_planes_overlap_and_overscan_with_a_reason)
{
    const char *ys[] = {
        "tessera: 1\noutput: {planes: 4}\nroot: {size: [16, 16]}\n",
        "tessera: 1\noutput: {stage: {overscan: 2}}\nroot: {size: [16, 16]}\n",
        "tessera: 1\noutput: {order: swath, swath: {width: 8}, stage: {overlap: 2}}\n"
        "root: {size: [16, 16]}\n",
    };
    for (size_t i = 0; i < 3; i++) {
        tsr_error err = {0};
        tsr_job *j = tsr_job_open_yaml(ys[i], strlen(ys[i]), "s.yaml", NULL, &err);
        cr_assert(j == NULL, "design %zu", i);
        cr_assert_eq(err.status, TSR_EINVAL);
        cr_assert(strstr(err.msg, "is not read through a job yet"), "%s", err.msg);
    }
}
