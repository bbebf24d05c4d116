/* image: the streaming BMP writer (image.h). Written by hand: the format is two fixed headers
 * and a palette, and no Debian library writes BMP row by row.
 *
 * A BMP with a positive height stores its rows bottom-up; every reader takes that. (A negative
 * height means top-down, which PIL and Windows accept but many machine tools and older
 * readers do not.) So rows arriving top-down are placed from the end of the file: the file has
 * its final size from the start (ftruncate), rows are gathered in a buffer filled from its end
 * (so consecutive rows are already in file order) and written with pwrite(2) at their place.
 * The 14-byte file header with its "BM" magic goes in last: until then the file starts with
 * zeros and no reader takes it for a bitmap. */
#include "image/image_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH_BYTES ((size_t)1 << 20)
#define FILE_HEAD 14
#define INFO_HEAD 40

struct tsr_bmp {
    int fd;
    char *path;
    int bits;
    size_t row_bytes;        /* a row as it comes in */
    size_t stride;           /* a row in the file: padded to 4 bytes */
    uint64_t data;           /* file offset of the pixel array */
    uint64_t size;           /* the whole file */
    int64_t height, rows;    /* rows written so far */
    uint8_t *buf;            /* cap bytes: the batch, filled from its end */
    size_t cap, in_buf;      /* in rows */
    int64_t buf_first;       /* the batch's first (topmost) row */
    tsr_status failed;
};

static void
le16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void
le32(uint8_t *p, uint32_t v)
{
    le16(p, v);
    le16(p + 2, v >> 16);
}

static tsr_status
put_at(tsr_bmp *b, const uint8_t *p, size_t n, uint64_t off, tsr_error *err)
{
    while (n > 0) {
        ssize_t k = pwrite(b->fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            b->failed = TSR_EIO;
            return tsr_fail(err, TSR_EIO, "%s: %s", b->path, strerror(k < 0 ? errno : EIO));
        }
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return TSR_OK;
}

static int32_t
per_metre(double pitch_um)
{
    double v = pitch_um > 0 ? 1e6 / pitch_um + 0.5 : 0;
    return v > 2147483647.0 ? 2147483647 : (int32_t)v;
}

static void
free_bmp(tsr_bmp *b)
{
    if (!b)
        return;
    if (b->fd >= 0)
        close(b->fd);
    free(b->buf);
    free(b->path);
    free(b);
}

tsr_bmp *
tsr_bmp_open(const char *path, const tsr_image_opts *o, tsr_error *err)
{
    if (tsr_image_check_opts(path, "BMP", o, 1u << 1 | 1u << 4 | 1u << 8, INT32_MAX, err) != TSR_OK)
        return NULL;
    size_t rb = tsr_image_row_bytes(o->width, o->bits);
    uint64_t stride = (rb + 3) / 4 * 4, colors = (uint64_t)1 << o->bits; /* a gray palette */
    uint64_t data = FILE_HEAD + INFO_HEAD + 4 * colors;
    int64_t pix;
    if (!tsr_mul_checked((int64_t)stride, o->height, &pix) || (uint64_t)pix > UINT32_MAX - data) {
        tsr_fail(err, TSR_EINVAL, "%s: %lld x %lld at %d bits: over the 4 GiB a BMP can hold "
                 "(write a .tif)", path, (long long)o->width, (long long)o->height, o->bits);
        return NULL;
    }
    tsr_bmp *b = calloc(1, sizeof *b);
    size_t cap = BATCH_BYTES / stride > 0 ? BATCH_BYTES / stride * stride : stride;
    if (!b || !(b->path = strdup(path)) || !(b->buf = calloc(1, cap))) {
        tsr_fail(err, TSR_ENOMEM, "%s: out of memory (BMP rows)", path);
        if (b)
            b->fd = -1;
        free_bmp(b);
        return NULL;
    }
    b->bits = o->bits;
    b->row_bytes = rb;
    b->stride = stride;
    b->data = data;
    b->size = data + (uint64_t)pix;
    b->height = o->height;
    b->cap = cap / stride;
    if ((b->fd = tsr_image_open_seekable(path, "BMP", err)) < 0) {
        free_bmp(b);
        return NULL;
    }
    struct stat st;
    if (fstat(b->fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(b->fd, (off_t)b->size) != 0) {
        tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(errno));
        free_bmp(b);
        return NULL;
    }
    /* the info header and the palette now; the file header (the magic) at the finish */
    uint8_t head[INFO_HEAD + 4 * 256];
    memset(head, 0, sizeof head);
    le32(head, INFO_HEAD);
    le32(head + 4, (uint32_t)o->width);
    le32(head + 8, (uint32_t)o->height); /* positive: bottom-up */
    le16(head + 12, 1);
    le16(head + 14, (uint32_t)o->bits);
    le32(head + 16, 0); /* BI_RGB */
    le32(head + 20, (uint32_t)pix);
    le32(head + 24, (uint32_t)per_metre(o->pitch_um[0]));
    le32(head + 28, (uint32_t)per_metre(o->pitch_um[1]));
    le32(head + 32, (uint32_t)colors);
    for (uint32_t i = 0; i < colors; i++) {
        uint8_t g = (uint8_t)(i * 255 / (colors - 1)); /* level i of colors - 1 */
        uint8_t *e = head + INFO_HEAD + 4 * i;
        e[0] = e[1] = e[2] = g;
    }
    if (put_at(b, head, INFO_HEAD + 4 * colors, FILE_HEAD, err) != TSR_OK) {
        free_bmp(b);
        return NULL;
    }
    return b;
}

/* The batch to its place: its rows are buf_first .. buf_first + in_buf - 1, the last of them
 * lowest in the file and first in the buffer's filled end. */
static tsr_status
flush(tsr_bmp *b, tsr_error *err)
{
    if (b->in_buf == 0)
        return TSR_OK;
    size_t n = b->in_buf * b->stride;
    uint64_t off = b->data + (uint64_t)(b->height - b->buf_first - (int64_t)b->in_buf) * b->stride;
    tsr_status st = put_at(b, b->buf + b->cap * b->stride - n, n, off, err);
    b->in_buf = 0;
    return st;
}

tsr_status
tsr_bmp_write_rows(tsr_bmp *b, const void *rows, int64_t n, tsr_error *err)
{
    if (b->failed != TSR_OK)
        return tsr_fail(err, b->failed, "%s: the BMP failed before", b->path);
    if (n < 0 || n > b->height - b->rows)
        return tsr_fail(err, TSR_EINVAL, "%s: %lld more rows: the BMP has %lld, %lld written",
                        b->path, (long long)n, (long long)b->height, (long long)b->rows);
    const uint8_t *p = rows;
    for (int64_t i = 0; i < n; i++) {
        if (b->in_buf == 0)
            b->buf_first = b->rows;
        uint8_t *dst = b->buf + (b->cap - b->in_buf - 1) * b->stride;
        memcpy(dst, p, b->row_bytes);
        memset(dst + b->row_bytes, 0, b->stride - b->row_bytes);
        p += b->row_bytes;
        b->rows++;
        if (++b->in_buf == b->cap && flush(b, err) != TSR_OK)
            return TSR_EIO;
    }
    return TSR_OK;
}

tsr_status
tsr_bmp_finish(tsr_bmp *b, tsr_error *err)
{
    if (!b)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_bmp_finish: no writer");
    tsr_status st = b->failed;
    if (st != TSR_OK)
        tsr_fail(err, st, "%s: the BMP failed before", b->path);
    else if (b->rows != b->height)
        st = tsr_fail(err, TSR_EINVAL, "%s: %lld of %lld rows written: the BMP is incomplete",
                      b->path, (long long)b->rows, (long long)b->height);
    else
        st = flush(b, err);
    if (st == TSR_OK) {
        uint8_t head[FILE_HEAD] = {'B', 'M'};
        le32(head + 2, (uint32_t)b->size);
        le32(head + 10, (uint32_t)b->data);
        st = put_at(b, head, sizeof head, 0, err);
    }
    if (st == TSR_OK) {
        int fd = b->fd;
        b->fd = -1;
        if (close(fd) != 0 && errno != EINTR)
            st = tsr_fail(err, TSR_EIO, "%s: %s", b->path, strerror(errno));
    }
    free_bmp(b);
    return st;
}

void
tsr_bmp_abandon(tsr_bmp *b)
{
    free_bmp(b);
}
