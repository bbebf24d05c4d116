/* dither: threshold arrays, dithered rows and bit planes (nodes/dither.h, docs/outputs.md):
 * against the numpy reference of the definition (tests/oracle/dither.py), the density bound
 * over flat regions for every gray level, invariance under any split of a row, the GPU against
 * the CPU (skipped without a device), and the error paths. */
#include "gpu/dither.h"
#include "gpu/gpu.h"
#include "helpers/helpers.h"
#include "nodes/dither.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tsr_dither *
make(const char *spec)
{
    tsr_error err = {0};
    tsr_dither *d = tsr_dither_parse(spec, &err);
    cr_assert(d != NULL, "%s: %s", spec, err.msg);
    return d;
}

static const char *all_arrays[] = {"threshold", "bayer2", "bayer4", "bayer8", "bayer16",
                                   "bayer32", "bayer64", "bayer128", "bayer256", "blue16",
                                   "blue32", "blue64", "blue128"};
#define NARRAYS (sizeof all_arrays / sizeof *all_arrays)

/* the level of pixel (x, y) in a packed row */
static unsigned
level_at(const uint8_t *row, int64_t x, int bits)
{
    int per = 8 / bits;
    return (row[x / per] >> (8 - bits * (1 + (int)(x % per)))) & ((1u << bits) - 1u);
}

Test(dither, every_array_is_a_permutation_of_its_ranks)
{
    for (size_t a = 0; a < NARRAYS; a++) {
        tsr_dither *d = make(all_arrays[a]);
        size_t n = (size_t)tsr_dither_size(d), cells = n * n;
        uint8_t *seen = calloc(cells, 1);
        const uint32_t *r = tsr_dither_ranks(d);
        for (size_t i = 0; i < cells; i++) {
            cr_assert(r[i] < cells, "%s: rank %u", all_arrays[a], r[i]);
            cr_assert(!seen[r[i]], "%s: rank %u twice", all_arrays[a], r[i]);
            seen[r[i]] = 1;
        }
        cr_assert_str_eq(tsr_dither_name(d), all_arrays[a]);
        free(seen);
        tsr_dither_free(d);
    }
}

/* The recursion written out: M_2n = [[4M, 4M+2], [4M+3, 4M+1]], built as a whole matrix. */
Test(dither, bayer_arrays_follow_the_block_recursion)
{
    uint32_t *m = malloc(sizeof *m), *next;
    m[0] = 0;
    for (uint32_t n = 1; n < 256; n *= 2) {
        next = malloc(sizeof *next * 4 * n * n);
        static const uint32_t add[2][2] = {{0, 2}, {3, 1}};
        for (uint32_t y = 0; y < 2 * n; y++)
            for (uint32_t x = 0; x < 2 * n; x++)
                next[y * 2 * n + x] = 4 * m[(y % n) * n + x % n] + add[y / n][x / n];
        free(m);
        m = next;
        char spec[16];
        snprintf(spec, sizeof spec, "bayer%u", 2 * n);
        tsr_dither *d = make(spec);
        cr_assert(memcmp(tsr_dither_ranks(d), m, sizeof *m * 4 * n * n) == 0, "%s", spec);
        tsr_dither_free(d);
    }
    free(m);
}

/* Blue noise keeps its minority pixels apart: at 1/16 of the cells (mean spacing 4) no two are
 * closer than 2 on the torus, where white noise of that density has neighbours by the dozen. */
Test(dither, blue_noise_minority_pixels_keep_apart)
{
    for (int n = 16; n <= 128; n *= 2) {
        char spec[16];
        snprintf(spec, sizeof spec, "blue%d", n);
        tsr_dither *d = make(spec);
        const uint32_t *r = tsr_dither_ranks(d);
        uint32_t lim = (uint32_t)(n * n / 16);
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                if (r[y * n + x] >= lim)
                    continue;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        if (!dx && !dy)
                            continue;
                        int q = ((y + dy + n) % n) * n + (x + dx + n) % n;
                        cr_assert(r[q] >= lim, "%s: (%d, %d) and its neighbour both on", spec,
                                  x, y);
                    }
            }
        tsr_dither_free(d);
    }
}

/* docs/outputs.md's bound: over any N x N window a flat sample s gives a mean level within
 * 1 / (2 N^2) of s L / M; checked for every 8-bit level and every 16-bit level on a stride
 * (all of them for arrays up to 16), at a window that is not aligned with the array. */
Test(dither, flat_regions_keep_their_density_within_the_stated_bound, .timeout = 120)
{
    const char *arrays[] = {"threshold", "bayer2", "bayer4", "bayer16", "bayer64", "bayer256",
                            "blue16", "blue64", "blue128"};
    for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) {
        tsr_dither *d = make(arrays[a]);
        int64_t n = tsr_dither_size(d);
        for (int depth = 8; depth <= 16; depth += 8) {
            uint32_t max = depth == 8 ? 255 : 65535;
            uint32_t step = depth == 8 || n <= 16 ? 1 : n == 256 ? 4099 : 257;
            /* the row from pixel 0 holds pixels 3 .. 3 + n - 1: up to n / 2 + 2 bytes */
            uint8_t *smp = malloc((size_t)n * 2), *row = malloc((size_t)n + 8);
            for (int bits = 1; bits <= 4; bits *= 2) {
                double levels = (double)((1 << bits) - 1);
                for (uint32_t s = 0; s <= max; s = s + step > max && s < max ? max : s + step) {
                    for (int64_t i = 0; i < n; i++) {
                        if (depth == 8) {
                            smp[i] = (uint8_t)s;
                        } else {
                            smp[2 * i] = (uint8_t)s;
                            smp[2 * i + 1] = (uint8_t)(s >> 8);
                        }
                    }
                    uint64_t sum = 0;
                    for (int64_t y = 5; y < 5 + n; y++) {
                        memset(row, 0, (size_t)n + 8);
                        cr_assert(tsr_dither_row(d, smp, depth, 3, (size_t)n, y, bits, row,
                                                 NULL) == TSR_OK);
                        for (int64_t x = 3; x < 3 + n; x++)
                            sum += level_at(row, x, bits);
                    }
                    double mean = (double)sum / (double)(n * n);
                    double want = (double)s * levels / (double)max;
                    cr_assert(fabs(mean - want) <= 1.0 / (2.0 * (double)(n * n)) + 1e-12,
                              "%s depth %d bits %d s %u: mean %.9f, gray %.9f", arrays[a],
                              depth, bits, s, mean, want);
                    if (s == max)
                        break;
                }
            }
            free(smp);
            free(row);
        }
        tsr_dither_free(d);
    }
}

/* Any split of a row into pieces, dithered in any order, gives the bytes of the whole row; the
 * bits outside a piece are left as they were. */
Test(dither, any_split_of_a_row_gives_the_same_bits)
{
    uint64_t seed = 42;
    const char *arrays[] = {"threshold", "bayer8", "bayer256", "blue64"};
    size_t w = 1500;
    uint8_t *smp = malloc(w * 2), *whole = malloc(w), *split = malloc(w), *ones = malloc(w);
    for (size_t i = 0; i < w * 2; i++)
        smp[i] = (uint8_t)th_rand(&seed);
    for (size_t a = 0; a < 4; a++) {
        tsr_dither *d = make(arrays[a]);
        for (int depth = 8; depth <= 16; depth += 8)
            for (int bits = 1; bits <= 4; bits *= 2)
                for (int trial = 0; trial < 20; trial++) {
                    int64_t y = (int64_t)(th_rand(&seed) % 100000);
                    size_t rb = tsr_dither_row_bytes((int64_t)w, bits);
                    memset(whole, 0, rb);
                    memset(ones, 0xff, rb);
                    cr_assert(tsr_dither_row(d, smp, depth, 0, w, y, bits, whole, NULL) ==
                              TSR_OK);
                    cr_assert(tsr_dither_row(d, smp, depth, 0, w, y, bits, ones, NULL) ==
                              TSR_OK);
                    /* every pixel's bits written; the padding bits kept */
                    cr_assert(memcmp(whole, ones, rb - 1) == 0);
                    int per = 8 / bits, pad = (int)((size_t)per * rb - w);
                    uint8_t padmask = (uint8_t)((1u << (pad * bits)) - 1u);
                    cr_assert_eq(whole[rb - 1] & padmask, 0);
                    cr_assert_eq(ones[rb - 1] & padmask, padmask);
                    /* cuts at random places, pieces written last to first */
                    size_t cut[12];
                    int nc = 1 + (int)(th_rand(&seed) % 10);
                    cut[0] = 0;
                    for (int c = 1; c < nc; c++)
                        cut[c] = cut[c - 1] + th_rand(&seed) % (w / (size_t)nc);
                    cut[nc] = w;
                    memset(split, 0, rb);
                    for (int c = nc - 1; c >= 0; c--)
                        cr_assert(tsr_dither_row(d, smp + cut[c] * (size_t)(depth / 8), depth,
                                                 (int64_t)cut[c], cut[c + 1] - cut[c], y,
                                                 bits, split, NULL) == TSR_OK);
                    cr_assert(memcmp(whole, split, rb) == 0, "%s depth %d bits %d", arrays[a],
                              depth, bits);
                }
        tsr_dither_free(d);
    }
    free(smp);
    free(whole);
    free(split);
    free(ones);
}

static void
write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f && fwrite(p, 1, n, f) == n && fclose(f) == 0, "%s", path);
}

/* Bit for bit the numpy reference, for every array kind, sample depth and output depth, over
 * an image placed at an offset (the coordinates are the image's, modulo the array). */
Test(dither, rows_equal_the_numpy_reference, .init = th_dir_make, .fini = th_dir_remove,
     .timeout = 300)
{
    const char *py = th_python("numpy");
    cr_assert(py, "no python3 with numpy (install python3-numpy)");
    char *oracle = th_src("tests/oracle/dither.py");
    const char *arrays[] = {"threshold", "bayer2", "bayer8", "bayer256", "blue16", "blue64"};
    uint64_t seed = 7;
    int64_t w = 203, h = 37, x0 = 1016, y0 = 999;
    uint8_t *smp = malloc((size_t)(w * h * 2)), *out = malloc((size_t)(w * h));
    /* a Python run per case: the sanitizer build checks a sample of the arrays (th_sample_step) */
    for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a += th_sample_step()) {
        tsr_dither *d = make(arrays[a]);
        for (int depth = 8; depth <= 16; depth += 8)
            for (int bits = 1; bits <= 4; bits *= 2) {
                size_t bps = (size_t)depth / 8, rb = tsr_dither_row_bytes(w, bits);
                for (int64_t i = 0; i < w * h * (int64_t)bps; i++) /* flat runs and noise */
                    smp[i] = i % 97 < 40 ? (uint8_t)(i / 97 * 13) : (uint8_t)th_rand(&seed);
                /* rows are dithered from pixel x0 (a multiple of 8) into a row that starts at
                 * pixel 0: the reference's rows start at x0 */
                size_t full = tsr_dither_row_bytes(x0 + w, bits), skip = (size_t)x0 * bits / 8;
                uint8_t *row = malloc(full);
                for (int64_t j = 0; j < h; j++) {
                    memset(row, 0, full);
                    cr_assert(tsr_dither_row(d, smp + (size_t)(j * w) * bps, depth, x0,
                                             (size_t)w, y0 + j, bits, row, NULL) == TSR_OK);
                    memcpy(out + (size_t)j * rb, row + skip, rb);
                }
                free(row);
                write_file(th_in_dir("s.bin"), smp, (size_t)(w * h) * bps);
                write_file(th_in_dir("o.bin"), out, rb * (size_t)h);
                char cmd[2048];
                snprintf(cmd, sizeof cmd,
                         "TSR_DITHER_CACHE=%s %s %s check %s --depth %d --bits %d --width %lld "
                         "--height %lld --x0 %lld --y0 %lld %s/s.bin %s/o.bin",
                         th_dir(), py, oracle, arrays[a], depth, bits, (long long)w, (long long)h,
                         (long long)x0, (long long)y0, th_dir(), th_dir());
                cr_assert(system(cmd) == 0, "%s", cmd);
            }
        tsr_dither_free(d);
    }
    free(smp);
    free(out);
    free(oracle);
}

/* The blue-noise arrays are generated the same way by the numpy reference. */
Test(dither, blue_noise_equals_the_numpy_generator, .init = th_dir_make, .fini = th_dir_remove,
     .timeout = 300)
{
    const char *py = th_python("numpy");
    cr_assert(py, "no python3 with numpy (install python3-numpy)");
    char *oracle = th_src("tests/oracle/dither.py");
    const char *arrays[] = {"blue16", "blue32", "blue64"};
    for (size_t a = 0; a < 3; a++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s %s ranks %s %s/r.bin", py, oracle, arrays[a], th_dir());
        cr_assert(system(cmd) == 0, "%s", cmd);
        size_t n;
        uint8_t *got = th_read_file(th_in_dir("r.bin"), &n);
        tsr_dither *d = make(arrays[a]);
        size_t cells = (size_t)tsr_dither_size(d) * (size_t)tsr_dither_size(d);
        cr_assert_eq(n, cells * 4);
        const uint32_t *r = tsr_dither_ranks(d);
        for (size_t i = 0; i < cells; i++) {
            uint32_t v = (uint32_t)got[4 * i] | (uint32_t)got[4 * i + 1] << 8 |
                         (uint32_t)got[4 * i + 2] << 16 | (uint32_t)got[4 * i + 3] << 24;
            cr_assert_eq(v, r[i], "%s cell %zu", arrays[a], i);
        }
        free(got);
        tsr_dither_free(d);
    }
    free(oracle);
}

Test(dither, the_gpu_gives_the_cpu_bits)
{
    if (!tsr_gpu_available())
        cr_skip_test("no GPU");
    uint64_t seed = 9;
    size_t w = 4099;
    uint8_t *smp = malloc(w * 2), *cpu = malloc(w), *gpu = malloc(w);
    for (size_t i = 0; i < w * 2; i++)
        smp[i] = (uint8_t)th_rand(&seed);
    const char *arrays[] = {"threshold", "bayer8", "bayer256", "blue64", "blue128"};
    for (size_t a = 0; a < 5; a++) {
        tsr_dither *d = make(arrays[a]);
        for (int depth = 8; depth <= 16; depth += 8)
            for (int bits = 1; bits <= 4; bits *= 2)
                for (int64_t x0 = 0; x0 < 20; x0 += 7) {
                    size_t n = w - (size_t)x0 - 5, rb = tsr_dither_row_bytes((int64_t)w, bits);
                    memset(cpu, 0x5a, rb);
                    memset(gpu, 0x5a, rb);
                    tsr_error err = {0};
                    cr_assert(tsr_dither_row(d, smp, depth, x0, n, 12345, bits, cpu, NULL) ==
                              TSR_OK);
                    cr_assert(tsr_gpu_dither_row_host(d, smp, depth, x0, n, 12345, bits, gpu,
                                                      &err) == TSR_OK, "%s", err.msg);
                    cr_assert(memcmp(cpu, gpu, rb) == 0, "%s depth %d bits %d x0 %lld",
                              arrays[a], depth, bits, (long long)x0);
                }
        tsr_dither_free(d);
    }
    free(smp);
    free(cpu);
    free(gpu);
}

Test(dither, without_a_device_the_gpu_path_says_so)
{
    if (tsr_gpu_available())
        cr_skip_test("a GPU is present");
    tsr_dither *d = make("bayer4");
    uint8_t s[8] = {0}, row[1] = {0};
    tsr_error err = {0};
    cr_assert(tsr_gpu_dither_row_host(d, s, 8, 0, 8, 0, 1, row, &err) != TSR_OK);
    cr_assert(strstr(err.msg, "gpu") != NULL, "%s", err.msg);
    tsr_dither_free(d);
}

Test(dither, bad_arrays_and_depths_are_refused_naming_them)
{
    struct {
        const char *spec, *msg;
    } bad[] = {{"bayer12", "bayer size 12: must be a power of two in 2..256"},
               {"bayer1", "bayer size 1"},
               {"bayer512", "bayer size 512"},
               {"blue8", "blue size 8: must be 16, 32, 64 or 128"},
               {"blue256", "blue size 256"},
               {"blue", "dither 'blue': expected a size after 'blue'"},
               {"bayer8x", "dither 'bayer8x': expected a size"},
               {"floyd", "dither 'floyd': expected threshold, bayerN"},
               {"", "dither '': expected"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tsr_error err = {0};
        cr_assert(tsr_dither_parse(bad[i].spec, &err) == NULL, "%s", bad[i].spec);
        cr_assert_eq(err.status, TSR_EINVAL);
        cr_assert(strstr(err.msg, bad[i].msg) != NULL, "%s: %s", bad[i].spec, err.msg);
    }
    tsr_error err = {0};
    cr_assert(tsr_dither_new(TSR_DITHER_THRESHOLD, 2, &err) == NULL);
    cr_assert(strstr(err.msg, "threshold size 2: must be 1") != NULL, "%s", err.msg);

    tsr_dither *d = make("bayer4");
    uint8_t s[16] = {0}, row[4] = {0};
    cr_assert(tsr_dither_row(d, s, 12, 0, 8, 0, 1, row, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "sample depth 12: must be 8 or 16") != NULL, "%s", err.msg);
    cr_assert(tsr_dither_row(d, s, 8, 0, 8, 0, 3, row, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "output depth 3: must be 1, 2 or 4") != NULL, "%s", err.msg);
    cr_assert(tsr_dither_row(d, s, 8, -1, 8, 0, 1, row, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "out of range") != NULL, "%s", err.msg);
    cr_assert(tsr_dither_row(d, s, 8, INT64_MAX - 2, 8, 0, 1, row, &err) == TSR_EINVAL);
    cr_assert(tsr_dither_thresholds(d, 12) == NULL);
    cr_assert_eq(tsr_dither_row_bytes(10, 3), 0);
    cr_assert_eq(tsr_dither_row_bytes(INT64_MAX, 4), 0);
    cr_assert_eq(tsr_dither_row_bytes(9, 1), 2);
    cr_assert_eq(tsr_dither_row_bytes(9, 4), 5);
    tsr_dither_free(d);
}

/* ---- bit planes ------------------------------------------------------------------------ */

Test(planes, a_row_is_its_samples_bits)
{
    uint64_t seed = 3;
    for (int depth = 8; depth <= 16; depth += 8) {
        size_t n = 77, bps = (size_t)depth / 8;
        uint8_t smp[77 * 2], planes[16][10];
        for (size_t i = 0; i < n * bps; i++)
            smp[i] = (uint8_t)th_rand(&seed);
        for (int b = 0; b < depth; b++) {
            memset(planes[b], 0xee, sizeof planes[b]);
            cr_assert(tsr_planes_row(smp, depth, n, b, planes[b], NULL) == TSR_OK);
            cr_assert_eq(planes[b][9] & 0x07, 0, "padding bits are 0");
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t s = depth == 8 ? smp[i] : (uint32_t)smp[2 * i] | (uint32_t)smp[2 * i + 1] << 8;
            uint32_t back = 0;
            for (int b = 0; b < depth; b++)
                back |= (uint32_t)((planes[b][i / 8] >> (7 - i % 8)) & 1) << b;
            cr_assert_eq(back, s, "pixel %zu", i);
        }
    }
    tsr_error err = {0};
    uint8_t s[2] = {0}, o[1];
    cr_assert(tsr_planes_row(s, 8, 1, 8, o, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "plane 8: must be in 0..7") != NULL, "%s", err.msg);
    cr_assert(tsr_planes_row(s, 4, 1, 0, o, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "sample depth 4") != NULL, "%s", err.msg);
}

/* Every order's plane rows tile [0, total) exactly, in the order docs/outputs.md lays out: a
 * reference walk writes them one after the other in that order and must meet each offset. */
Test(planes, every_order_lays_its_rows_end_to_end)
{
    int64_t w = 21, h = 11;
    for (int depth = 8; depth <= 16; depth += 8)
        for (int ord = 0; ord < 3; ord++)
            for (int lsb = 0; lsb < 2; lsb++) {
                tsr_planes p = {.depth = depth, .width = w, .height = h,
                                .order = (tsr_planes_order)ord, .band_rows = 4,
                                .swath_width = 8, .lsb_first = lsb};
                uint64_t total, at = 0;
                cr_assert(tsr_planes_total(&p, &total, NULL) == TSR_OK);
                /* units in stream order, planes within, rows within */
                int64_t ux = ord == TSR_PLANES_SWATH ? 8 : w, uy = ord == TSR_PLANES_BAND ? 4 : h;
                for (int64_t x = 0; x < w; x += ux)
                    for (int64_t y = 0; y < h; y += uy)
                        for (int k = 0; k < depth; k++) {
                            int plane = lsb ? k : depth - 1 - k;
                            for (int64_t r = y; r < y + uy && r < h; r++) {
                                size_t rb;
                                uint64_t off = tsr_planes_offset(&p, plane, r, x, &rb);
                                cr_assert_eq(off, at, "order %d lsb %d plane %d row %lld", ord,
                                             lsb, plane, (long long)r);
                                int64_t uw = x + ux > w ? w - x : ux;
                                cr_assert_eq(rb, (size_t)(uw + 7) / 8);
                                at += rb;
                            }
                        }
                cr_assert_eq(at, total);
            }
    tsr_error err = {0};
    uint64_t t;
    tsr_planes bad = {.depth = 8, .width = 4, .height = 4, .order = TSR_PLANES_BAND};
    cr_assert(tsr_planes_total(&bad, &t, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "band_rows 0") != NULL, "%s", err.msg);
    bad = (tsr_planes){.depth = 8, .width = INT64_MAX, .height = INT64_MAX,
                       .order = TSR_PLANES_WHOLE};
    cr_assert(tsr_planes_total(&bad, &t, &err) == TSR_EINVAL);
    cr_assert(strstr(err.msg, "too large") != NULL, "%s", err.msg);
}
