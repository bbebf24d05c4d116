/* stream: the framed stream's pieces (docs/streaming.md): header and frame encoding, crc32 and
 * deflate through libdeflate (inflate through zlib), SHA-256 through OpenSSL's EVP. See
 * stream.h and docs/streaming.md.
 *
 * Fields are written byte by byte in little-endian order, so the layout never depends on the
 * host's byte order or on struct padding. */
#include "stream/stream_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static void
put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void
tsr_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t
get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t
get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

uint64_t
tsr_get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void
tsr_header_encode(const tsr_header *h, uint8_t out[TSR_HEADER_SIZE])
{
    memcpy(out, "TSRA", 4);
    put16(out + 4, h->version);
    put16(out + 6, h->depth);
    tsr_put_le64(out + 8, h->width);
    tsr_put_le64(out + 16, h->height);
    out[24] = h->order;
    out[25] = h->serpentine;
    out[26] = h->start;
    tsr_put_le64(out + 27, h->swath_width);
    memcpy(out + 35, h->fingerprint, 32);
    tsr_put_le64(out + 67, h->total);
}

tsr_status
tsr_header_decode(const uint8_t in[TSR_HEADER_SIZE], tsr_header *h, tsr_error *err)
{
    tsr_header v;
    if (memcmp(in, "TSRA", 4) != 0)
        return tsr_fail(err, TSR_EINVAL, "header: bad magic (not a tessera stream)");
    v.version = get16(in + 4);
    v.depth = get16(in + 6);
    v.width = tsr_get_le64(in + 8);
    v.height = tsr_get_le64(in + 16);
    v.order = in[24];
    v.serpentine = in[25];
    v.start = in[26];
    v.swath_width = tsr_get_le64(in + 27);
    memcpy(v.fingerprint, in + 35, 32);
    v.total = tsr_get_le64(in + 67);
    v.dither = v.dither_log2 = v.flags = v.stage = 0; /* version 2: tsr_header_decode_ext */
    if (v.version != 1 && v.version != 2)
        return tsr_fail(err, TSR_EINVAL, "header: version %u: only versions 1 and 2 are known",
                        (unsigned)v.version);
    if (v.version == 1 && v.depth != 8 && v.depth != 16)
        return tsr_fail(err, TSR_EINVAL, "header: depth %u: must be 8 or 16", (unsigned)v.depth);
    if (v.depth != 1 && v.depth != 2 && v.depth != 4 && v.depth != 8 && v.depth != 16)
        return tsr_fail(err, TSR_EINVAL, "header: depth %u: must be 1, 2, 4, 8 or 16",
                        (unsigned)v.depth);
    if (v.order > 1)
        return tsr_fail(err, TSR_EINVAL, "header: order %u: must be 0 or 1", (unsigned)v.order);
    if (v.serpentine > 1)
        return tsr_fail(err, TSR_EINVAL, "header: serpentine %u: must be 0 or 1",
                        (unsigned)v.serpentine);
    if (v.start > 3)
        return tsr_fail(err, TSR_EINVAL, "header: start corner %u: must be 0..3",
                        (unsigned)v.start);
    if (v.width == 0 || v.height == 0)
        return tsr_fail(err, TSR_EINVAL, "header: empty stream (%llu x %llu)",
                        (unsigned long long)v.width, (unsigned long long)v.height);
    if (v.swath_width == 0 || v.swath_width > v.width)
        return tsr_fail(err, TSR_EINVAL, "header: swath width %llu: must be 1..%llu",
                        (unsigned long long)v.swath_width, (unsigned long long)v.width);
    v.feather = 0;
    v.overlap = v.overscan = v.planes = 0;
    v.overscan_value = 0;
    if (v.version == 2) { /* overlap, overscan and planes change it: tsr_header_decode_ext */
        *h = v;
        return TSR_OK;
    }
    /* height x (the full swaths' rows + the last one's), each row (w * depth + 7) / 8 bytes:
     * width * height * depth / 8 at 8 and 16 bits */
    uint64_t full = v.width / v.swath_width, rest = v.width % v.swath_width, rb, rrest, row,
             want;
    bool over = __builtin_mul_overflow(v.swath_width, (uint64_t)v.depth, &rb) ||
                __builtin_mul_overflow(rb / 8 + (rb % 8 != 0), full, &row) ||
                __builtin_add_overflow(row, (rest * v.depth + 7) / 8, &rrest) ||
                __builtin_mul_overflow(rrest, v.height, &want);
    if (over || want != v.total)
        return tsr_fail(err, TSR_EINVAL, "header: total %llu bytes does not match %llu x %llu "
                        "at %u bit", (unsigned long long)v.total, (unsigned long long)v.width,
                        (unsigned long long)v.height, (unsigned)v.depth);
    *h = v;
    return TSR_OK;
}

void
tsr_header_encode_ext(const tsr_header *h, uint8_t out[TSR_HEADER_EXT])
{
    memset(out, 0, TSR_HEADER_EXT);
    out[0] = h->dither;
    out[1] = h->dither_log2;
    out[2] = h->flags;
    out[3] = h->stage;
    out[4] = h->feather;
    put32(out + 8, h->overlap);
    put32(out + 12, h->overscan);
    put16(out + 16, h->overscan_value);
    put32(out + 20, h->planes);
}

tsr_status
tsr_header_decode_ext(const uint8_t in[TSR_HEADER_EXT], tsr_header *h, tsr_error *err)
{
    uint8_t kind = in[0], k = in[1], flags = in[2], stage = in[3];
    static const uint8_t lo[] = {0, 0, 1, 4}, hi[] = {0, 0, 8, 7};
    if (h->version != 2)
        return tsr_fail(err, TSR_EINVAL, "header: version %u has no extension",
                        (unsigned)h->version);
    if (kind > 3 || (h->depth < 8) != (kind != 0))
        return tsr_fail(err, TSR_EINVAL, "header: dither %u: must be %s at depth %u",
                        (unsigned)kind, h->depth < 8 ? "1..3" : "0", (unsigned)h->depth);
    if (k < lo[kind] || k > hi[kind])
        return tsr_fail(err, TSR_EINVAL, "header: dither size 2^%u: must be 2^%u .. 2^%u",
                        (unsigned)k, (unsigned)lo[kind], (unsigned)hi[kind]);
    if (flags & ~TSR_HEADER_PROFILE)
        return tsr_fail(err, TSR_EINVAL, "header: unknown flags 0x%x", (unsigned)flags);
    if ((stage & ~15u) || (stage & 3) == 3)
        return tsr_fail(err, TSR_EINVAL, "header: stage 0x%x: bits 0..3, not both 0 and 1",
                        (unsigned)stage);
    static const int reserved[] = {5, 6, 7, 18, 19, 24, 25, 26, 27, 28, 29, 30, 31};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (in[reserved[i]])
            return tsr_fail(err, TSR_EINVAL, "header: byte %d: reserved, must be 0",
                            TSR_HEADER_SIZE + reserved[i]);
    tsr_header v = *h;
    v.dither = kind;
    v.dither_log2 = k;
    v.flags = flags;
    v.stage = stage;
    v.feather = in[4];
    v.overlap = get32(in + 8);
    v.overscan = get32(in + 12);
    v.overscan_value = get16(in + 16);
    v.planes = get32(in + 20);
    /* docs/streaming.md §2: the stage's geometry */
    if (v.feather > 1 || (v.feather && !v.overlap))
        return tsr_fail(err, TSR_EINVAL, "header: feather %u: must be 0 (linear) or 1 (cosine), "
                        "and 0 without an overlap", (unsigned)v.feather);
    if (v.overlap && (!v.order || v.depth < 8))
        return tsr_fail(err, TSR_EINVAL, "header: overlap %u: only in swath order at depth 8 "
                        "or 16", (unsigned)v.overlap);
    uint32_t vmax = v.depth == 16 ? 65535u : v.depth == 8 ? 255u : (1u << v.depth) - 1u;
    if (v.overscan_value > vmax)
        return tsr_fail(err, TSR_EINVAL, "header: overscan value %u: must be 0..%u at %u bit",
                        (unsigned)v.overscan_value, (unsigned)vmax, (unsigned)v.depth);
    if (v.planes && v.depth < 8)
        return tsr_fail(err, TSR_EINVAL, "header: planes %u: only at depth 8 or 16",
                        (unsigned)v.planes);
    tsr_stream_geom g;
    tsr_geom_from_header(&v, &g);
    uint64_t want;
    if (!tsr_geom_total(&g, &want) || want != v.total)
        return tsr_fail(err, TSR_EINVAL, "header: total %llu bytes does not match %llu x %llu "
                        "at %u bit", (unsigned long long)v.total, (unsigned long long)v.width,
                        (unsigned long long)v.height, (unsigned)v.depth);
    *h = v;
    return TSR_OK;
}

void
tsr_frame_encode(const tsr_frame *f, uint8_t out[TSR_FRAME_HEAD])
{
    tsr_put_le64(out, f->offset);
    put32(out + 8, f->wire);
    put32(out + 12, f->raw);
    put32(out + 16, f->crc);
    put32(out + 20, f->flags);
}

void
tsr_frame_decode(const uint8_t in[TSR_FRAME_HEAD], tsr_frame *f)
{
    f->offset = tsr_get_le64(in);
    f->wire = get32(in + 8);
    f->raw = get32(in + 12);
    f->crc = get32(in + 16);
    f->flags = get32(in + 20);
}

/* ---- crc32 and deflate -------------------------------------------------------------------
 * libdeflate for the per-frame work of framed sinks (stream/team.c): its crc32 (the same CRC-32 as zlib's,
 * with carry-less multiplies) and its whole-buffer zlib compressor ran at 7.5 and 0.84 GB/s
 * where zlib's crc32_z and compress2 ran at 3.6 and 0.43 (one core of the 2-core box, 64 MiB,
 * level 1; docs/performance.md), and the compressor's output was smaller. Its payloads are
 * ordinary zlib streams: any inflater (zlib's, below) reads them. zlib keeps crc32_combine and
 * inflate. */

uint32_t
tsr_crc32(uint32_t crc, const void *buf, size_t n)
{
    if (n == 0)
        return crc;
    return libdeflate_crc32(crc, buf, n);
}

uint32_t
tsr_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    /* zlib takes the length as z_off_t (a signed long on LP64); every stream length fits. */
    return (uint32_t)crc32_combine(crc_a, crc_b, (z_off_t)len_b);
}

size_t
tsr_deflate_bound(size_t n)
{
    /* libdeflate's bound needs no compressor (NULL: the worst case of every level) */
    size_t a = libdeflate_zlib_compress_bound(NULL, n), b = (size_t)compressBound((uLong)n);
    return a > b ? a : b;
}

struct tsr_deflater {
    struct libdeflate_compressor *c;
};

tsr_deflater *
tsr_deflater_new(int level)
{
    tsr_deflater *d = malloc(sizeof *d);
    if (!d)
        return NULL;
    d->c = libdeflate_alloc_compressor(level < 1 ? 1 : level > 12 ? 12 : level);
    if (!d->c) {
        free(d);
        return NULL;
    }
    return d;
}

void
tsr_deflater_free(tsr_deflater *d)
{
    if (!d)
        return;
    libdeflate_free_compressor(d->c);
    free(d);
}

tsr_status
tsr_deflater_run(tsr_deflater *d, const void *in, size_t n, void *out, size_t cap,
                 size_t *outlen, tsr_error *err)
{
    /* one complete zlib stream (header, data, adler32), which is what a frame promises: each
     * payload inflates on its own. libdeflate resets its tables for every buffer, so one
     * compressor serves any number of frames with the same output as a fresh one. */
    size_t len = libdeflate_zlib_compress(d->c, in, n, out, cap);
    if (len == 0)
        return tsr_fail(err, TSR_EINTERNAL, "deflate: %zu bytes do not fit %zu", n, cap);
    *outlen = len;
    return TSR_OK;
}

tsr_status
tsr_deflate(const void *in, size_t n, int level, void *out, size_t cap, size_t *outlen,
            tsr_error *err)
{
    tsr_deflater *d = tsr_deflater_new(level);
    if (!d)
        return tsr_fail(err, TSR_ENOMEM, "deflate: out of memory");
    tsr_status st = tsr_deflater_run(d, in, n, out, cap, outlen, err);
    tsr_deflater_free(d);
    return st;
}

tsr_status
tsr_inflate(const void *in, size_t n, void *out, size_t raw, tsr_error *err)
{
    if (n > UINT_MAX || raw > UINT_MAX)
        return tsr_fail(err, TSR_EINVAL, "inflate: payload too large");
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK)
        return tsr_fail(err, TSR_ENOMEM, "inflate: out of memory");
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)raw;
    int rc = inflate(&z, Z_FINISH);
    size_t got = raw - z.avail_out, left = z.avail_in;
    inflateEnd(&z);
    if (rc == Z_MEM_ERROR)
        return tsr_fail(err, TSR_ENOMEM, "inflate: out of memory");
    /* Not at the stream's end: either the output filled up with input left over (too long)
     * or the input ran out (truncated) or was not zlib at all. */
    if ((rc == Z_BUF_ERROR || rc == Z_OK) && got == raw && left > 0)
        return tsr_fail(err, TSR_EINVAL, "inflate: payload expands beyond %zu bytes", raw);
    if (rc != Z_STREAM_END)
        return tsr_fail(err, TSR_EINVAL, "inflate: corrupt or truncated zlib stream");
    if (got != raw)
        return tsr_fail(err, TSR_EINVAL, "inflate: payload expands to %zu bytes, not %zu", got,
                        raw);
    if (left)
        return tsr_fail(err, TSR_EINVAL, "inflate: %zu bytes after the zlib stream", left);
    return TSR_OK;
}

/* ---- SHA-256 ---------------------------------------------------------------------------- */

struct tsr_sha256 {
    EVP_MD_CTX *ctx;
};

tsr_sha256 *
tsr_sha256_new(void)
{
    tsr_sha256 *h = malloc(sizeof *h);
    if (!h)
        return NULL;
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(h->ctx);
        free(h);
        return NULL;
    }
    return h;
}

void
tsr_sha256_update(tsr_sha256 *h, const void *buf, size_t n)
{
    if (h && n)
        EVP_DigestUpdate(h->ctx, buf, n);
}

void
tsr_sha256_final(tsr_sha256 *h, uint8_t out[32])
{
    if (!h)
        return;
    unsigned len = 32;
    EVP_DigestFinal_ex(h->ctx, out, &len);
    tsr_sha256_free(h);
}

void
tsr_sha256_free(tsr_sha256 *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

tsr_status
tsr_sha256_file(const char *path, uint8_t out[32], tsr_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(errno));
    tsr_sha256 *h = tsr_sha256_new();
    if (!h) {
        close(fd);
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (sha256)", path);
    }
    /* On the heap: a static thread-local buffer would sit in every thread's stack (glibc puts
     * static TLS there), 64 KiB less for deep node chains (docs/reliability.md). */
    enum { BUF = 1 << 16 };
    uint8_t *buf = malloc(BUF);
    if (!buf) {
        tsr_sha256_free(h);
        close(fd);
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (read buffer)", path);
    }
    for (;;) {
        ssize_t k = read(fd, buf, BUF);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            tsr_sha256_free(h);
            free(buf);
            close(fd);
            return tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(e));
        }
        if (k == 0)
            break;
        tsr_sha256_update(h, buf, (size_t)k);
    }
    free(buf);
    close(fd);
    tsr_sha256_final(h, out);
    return TSR_OK;
}
