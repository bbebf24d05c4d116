/* framing: the framed stream's byte layout (docs/streaming.md), crc32 and its combination, the
 * per-frame zlib streams, SHA-256. Expected bytes are written out by hand from the spec's
 * table, not produced by the encoder under test. */
#include <criterion/criterion.h>

#include "stream/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static tsr_header
sample_header(void)
{
    tsr_header h = {0};
    h.version = 1;
    h.depth = 16;
    h.width = 3000;
    h.height = 0x10000000Full / 3000; /* a height that needs more than 4 bytes of total */
    h.order = 1;
    h.serpentine = 1;
    h.start = 3;
    h.swath_width = 700;
    for (int i = 0; i < 32; i++)
        h.fingerprint[i] = (uint8_t)(0xA0 + i);
    h.total = h.width * h.height * 2;
    return h;
}

static uint64_t
le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

Test(framing, header_is_75_packed_little_endian_bytes_in_the_table_order)
{
    tsr_header h = sample_header();
    uint8_t b[TSR_HEADER_SIZE + 1];
    memset(b, 0xEE, sizeof b);
    tsr_header_encode(&h, b);
    cr_assert_eq(TSR_HEADER_SIZE, 75);
    cr_assert_eq(b[75], 0xEE, "wrote past byte 75");
    cr_assert(memcmp(b, "TSRA", 4) == 0);
    cr_assert_eq(b[4], 1);
    cr_assert_eq(b[5], 0); /* u16 version = 1 */
    cr_assert_eq(b[6], 16);
    cr_assert_eq(b[7], 0); /* u16 depth */
    cr_assert_eq(le(b + 8, 8), 3000);
    cr_assert_eq(b[8], 3000 & 0xff);
    cr_assert_eq(b[9], 3000 >> 8);
    cr_assert_eq(le(b + 16, 8), h.height);
    cr_assert_eq(b[24], 1); /* order swath */
    cr_assert_eq(b[25], 1); /* serpentine */
    cr_assert_eq(b[26], 3); /* bottom-right */
    cr_assert_eq(le(b + 27, 8), 700);
    cr_assert_eq(b[27], 700 & 0xff);
    cr_assert_eq(b[28], 700 >> 8);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(b[35 + i], 0xA0 + i, "fingerprint byte %d", i);
    cr_assert_eq(le(b + 67, 8), h.total);
    cr_assert_gt(h.total, 0xFFFFFFFFull, "the total exercises the high bytes");
    cr_assert_neq(b[71], 0);
}

Test(framing, header_decodes_what_it_encodes)
{
    tsr_header h = sample_header(), g;
    uint8_t b[TSR_HEADER_SIZE];
    tsr_header_encode(&h, b);
    tsr_error err = {0};
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_OK, "%s", err.msg);
    cr_assert_eq(g.width, h.width);
    cr_assert_eq(g.height, h.height);
    cr_assert_eq(g.depth, 16);
    cr_assert_eq(g.order, 1);
    cr_assert_eq(g.serpentine, 1);
    cr_assert_eq(g.start, 3);
    cr_assert_eq(g.swath_width, 700);
    cr_assert_eq(g.total, h.total);
    cr_assert(memcmp(g.fingerprint, h.fingerprint, 32) == 0);
}

/* Decoding b after `patch` must fail with `msg`. */
static void
decode_fails(void (*patch)(tsr_header *h, uint8_t *b), const char *msg)
{
    tsr_header h = sample_header(), g;
    memset(&g, 0x77, sizeof g);
    tsr_header keep = g;
    uint8_t b[TSR_HEADER_SIZE];
    tsr_header_encode(&h, b);
    patch(&h, b);
    tsr_error err = {0};
    cr_assert_eq(tsr_header_decode(b, &g, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, msg);
    cr_assert(memcmp(&g, &keep, sizeof g) == 0, "output changed on failure");
}

static void p_magic(tsr_header *h, uint8_t *b) { (void)h; b[3] = 'B'; }
static void p_version(tsr_header *h, uint8_t *b) { (void)h; b[4] = 3; }
static void p_depth(tsr_header *h, uint8_t *b) { (void)h; b[6] = 12; }
static void p_order(tsr_header *h, uint8_t *b) { (void)h; b[24] = 2; }
static void p_serp(tsr_header *h, uint8_t *b) { (void)h; b[25] = 7; }
static void p_start(tsr_header *h, uint8_t *b) { (void)h; b[26] = 4; }
static void p_total(tsr_header *h, uint8_t *b) { (void)h; b[67] ^= 1; }
static void p_empty(tsr_header *h, uint8_t *b)
{
    h->width = 0;
    h->total = 0;
    tsr_header_encode(h, b);
}
static void p_swath(tsr_header *h, uint8_t *b)
{
    h->swath_width = h->width + 1;
    tsr_header_encode(h, b);
}
static void p_overflow(tsr_header *h, uint8_t *b)
{
    h->width = (uint64_t)1 << 40;
    h->height = (uint64_t)1 << 40;
    h->swath_width = 1;
    h->total = 0;
    tsr_header_encode(h, b);
}

Test(framing, header_decode_names_each_bad_field)
{
    decode_fails(p_magic, "header: bad magic (not a tessera stream)");
    decode_fails(p_version, "header: version 3: only versions 1 and 2 are known");
    decode_fails(p_depth, "header: depth 12: must be 8 or 16");
    decode_fails(p_order, "header: order 2: must be 0 or 1");
    decode_fails(p_serp, "header: serpentine 7: must be 0 or 1");
    decode_fails(p_start, "header: start corner 4: must be 0..3");
    decode_fails(p_empty, "header: empty stream (0 x 1431655)");
    decode_fails(p_swath, "header: swath width 3001: must be 1..3000");
    tsr_header h = sample_header();
    char msg[200];
    snprintf(msg, sizeof msg, "header: total %llu bytes does not match 3000 x %llu at 16 bit",
             (unsigned long long)(h.total ^ 1), (unsigned long long)h.height);
    decode_fails(p_total, msg);
    decode_fails(p_overflow, "header: total 0 bytes does not match 1099511627776 x "
                             "1099511627776 at 16 bit");
}

Test(framing, frame_head_is_24_bytes_offset_wire_raw_crc_flags)
{
    tsr_frame f = {0x1122334455667788ull, 0xA1A2A3A4u, 0xB1B2B3B4u, 0xC1C2C3C4u, 5u}, g;
    uint8_t b[TSR_FRAME_HEAD + 1];
    b[24] = 0xEE;
    tsr_frame_encode(&f, b);
    cr_assert_eq(TSR_FRAME_HEAD, 24);
    cr_assert_eq(b[24], 0xEE);
    const uint8_t want[24] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                              0xA4, 0xA3, 0xA2, 0xA1, 0xB4, 0xB3, 0xB2, 0xB1,
                              0xC4, 0xC3, 0xC2, 0xC1, 5,    0,    0,    0};
    cr_assert(memcmp(b, want, 24) == 0);
    tsr_frame_decode(b, &g);
    cr_assert(memcmp(&f, &g, sizeof f) == 0);
    cr_assert_eq(TSR_FRAME_DEFLATE, 1);
    cr_assert_eq(TSR_FRAME_ABORT, 2);
    cr_assert_eq(TSR_FRAME_TRAILER, 4);
    cr_assert_eq(TSR_RESUME_REFUSED, UINT64_MAX);
}

Test(framing, crc32_is_zlibs_and_combines)
{
    cr_assert_eq(tsr_crc32(0, "123456789", 9), 0xCBF43926u); /* the catalogue check value */
    cr_assert_eq(tsr_crc32(0, NULL, 0), 0);
    size_t n = 100003;
    uint8_t *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 2654435761u >> 13);
    uint32_t all = tsr_crc32(0, b, n);
    size_t cuts[] = {0, 1, 4096, 50000, n - 1, n};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        size_t c = cuts[k];
        uint32_t a = tsr_crc32(0, b, c), z = tsr_crc32(0, b + c, n - c);
        cr_assert_eq(tsr_crc32_combine(a, z, n - c), all, "cut at %zu", c);
        cr_assert_eq(tsr_crc32(a, b + c, n - c), all);
    }
    free(b);
}

Test(framing, trailer_crc_combines_with_what_the_receiver_held_before_the_resume)
{
    /* The receiver holds [0, r) with crc H; the sender's trailer carries crc T of [r, total)
     * frame by frame (combined as it goes); crc32_combine(H, T, total - r) is the job's crc. */
    size_t total = 300000, r = 123457, frame = 65536;
    uint8_t *b = malloc(total);
    for (size_t i = 0; i < total; i++)
        b[i] = (uint8_t)(i ^ (i >> 9));
    uint32_t held = tsr_crc32(0, b, r), t = 0;
    for (size_t off = r; off < total; off += frame) {
        size_t n = total - off < frame ? total - off : frame;
        t = tsr_crc32_combine(t, tsr_crc32(0, b + off, n), n);
    }
    cr_assert_eq(t, tsr_crc32(0, b + r, total - r));
    cr_assert_eq(tsr_crc32_combine(held, t, total - r), tsr_crc32(0, b, total));
    cr_assert_eq(tsr_crc32_combine(held, 0, 0), held, "resume at the end: empty trailer");
    free(b);
}

Test(framing, deflate_payload_is_one_zlib_stream_that_round_trips)
{
    size_t n = 1 << 20;
    uint8_t *in = malloc(n), *z = malloc(tsr_deflate_bound(n)), *out = malloc(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint8_t)((i / 60) % 7 * 30); /* lens-like runs */
    size_t zn = 0;
    tsr_error err = {0};
    cr_assert_eq(tsr_deflate(in, n, 1, z, tsr_deflate_bound(n), &zn, &err), TSR_OK, "%s", err.msg);
    cr_assert_lt(zn, n / 10);
    cr_assert_eq(z[0] & 0x0f, 8, "a zlib header (CM = deflate)");
    cr_assert_eq(((unsigned)z[0] << 8 | z[1]) % 31, 0, "zlib header check bits");
    cr_assert_eq(tsr_inflate(z, zn, out, n, &err), TSR_OK, "%s", err.msg);
    cr_assert(memcmp(in, out, n) == 0);
    /* independent: zlib's own uncompress reads it */
    uLongf un = (uLongf)n;
    cr_assert_eq(uncompress(out, &un, z, (uLong)zn), Z_OK);
    cr_assert_eq(un, n);
    free(in);
    free(z);
    free(out);
}

Test(framing, inflate_refuses_damaged_payloads)
{
    const char *text = "tessera tessera tessera tessera tessera tessera tessera";
    size_t n = strlen(text);
    uint8_t z[256], out[256], bad[300];
    size_t zn;
    tsr_error err = {0};
    cr_assert_eq(tsr_deflate(text, n, 9, z, sizeof z, &zn, &err), TSR_OK);
    cr_assert_eq(tsr_inflate(z, zn - 3, out, n, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "inflate: corrupt or truncated zlib stream");
    cr_assert_eq(tsr_inflate(z, zn, out, n - 1, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "inflate: payload expands beyond 54 bytes");
    cr_assert_eq(tsr_inflate(z, zn, out, n + 5, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "inflate: payload expands to 55 bytes, not 60");
    memcpy(bad, z, zn);
    bad[zn] = 0;
    cr_assert_eq(tsr_inflate(bad, zn + 1, out, n, &err), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "inflate: 1 bytes after the zlib stream");
    memcpy(bad, z, zn);
    bad[zn / 2] ^= 0xFF;
    cr_assert_eq(tsr_inflate(bad, zn, out, n, &err), TSR_EINVAL);
    cr_assert_eq(tsr_inflate("garbage!", 8, out, n, &err), TSR_EINVAL);
}

static void
hex(char *s, const uint8_t *d)
{
    for (int i = 0; i < 32; i++)
        sprintf(s + 2 * i, "%02x", d[i]);
}

Test(framing, sha256_matches_the_standard_vectors)
{
    uint8_t d[32];
    char s[65];
    tsr_sha256 *h = tsr_sha256_new();
    cr_assert_not_null(h);
    tsr_sha256_update(h, "ab", 2);
    tsr_sha256_update(h, "c", 1);
    tsr_sha256_final(h, d);
    hex(s, d);
    cr_assert_str_eq(s, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    h = tsr_sha256_new();
    tsr_sha256_final(h, d);
    hex(s, d);
    cr_assert_str_eq(s, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    tsr_sha256_free(tsr_sha256_new());
    tsr_sha256_free(NULL);
}

Test(framing, sha256_of_a_file_is_the_sha256_of_its_bytes)
{
    char path[] = "/tmp/tsr_framing_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    size_t n = 200000;
    uint8_t *b = malloc(n), d1[32], d2[32];
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 7);
    cr_assert_eq(write(fd, b, n), (ssize_t)n);
    close(fd);
    tsr_error err = {0};
    cr_assert_eq(tsr_sha256_file(path, d1, &err), TSR_OK, "%s", err.msg);
    tsr_sha256 *h = tsr_sha256_new();
    tsr_sha256_update(h, b, n);
    tsr_sha256_final(h, d2);
    cr_assert(memcmp(d1, d2, 32) == 0);
    unlink(path);
    free(b);
    memset(d1, 0x55, 32);
    cr_assert_eq(tsr_sha256_file(path, d1, &err), TSR_EIO);
    char want[128];
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(d1[0], 0x55, "output untouched on failure");
}
