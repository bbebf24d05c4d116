/* image: the streaming TIFF writer (image.h), over libtiff through our own I/O procedures:
 * they give the file's errors (ENOSPC) their real reason, and they let an abandoned writer
 * refuse every further byte, so libtiff's cleanup can never write the directory that would
 * make an unfinished file look whole. */
#include "image/image_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

/* A strip is about this many bytes (at least one row): small enough to stream, large enough
 * that the strip table stays small (2 x 8 bytes a strip) and compression has a run. */
#define STRIP_BYTES ((size_t)1 << 20)

struct tsr_tiff {
    TIFF *tif;
    int fd;
    char *path;
    bool dead;          /* abandoned: the I/O procedures refuse everything */
    int io_errno;       /* the first failed write's errno */
    char lib_msg[200];  /* libtiff's first error message */
    size_t row_bytes;
    int bits;
    int64_t height, rows;      /* rows written so far */
    int64_t strip_rows;
    uint8_t *strip;            /* the strip being filled */
    int64_t in_strip;          /* rows in it */
    uint32_t next_strip;
    tsr_status failed;         /* sticky */
};

static tmsize_t
io_read(thandle_t h, void *buf, tmsize_t n)
{
    tsr_tiff *t = h;
    if (t->dead)
        return -1;
    size_t done = 0;
    while (done < (size_t)n) {
        ssize_t k = read(t->fd, (char *)buf + done, (size_t)n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        done += (size_t)k;
    }
    return (tmsize_t)done;
}

static tmsize_t
io_write(thandle_t h, void *buf, tmsize_t n)
{
    tsr_tiff *t = h;
    if (t->dead)
        return -1;
    size_t done = 0;
    while (done < (size_t)n) {
        ssize_t k = write(t->fd, (const char *)buf + done, (size_t)n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (!t->io_errno)
                t->io_errno = k < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)k;
    }
    return n;
}

static toff_t
io_seek(thandle_t h, toff_t off, int whence)
{
    tsr_tiff *t = h;
    off_t r = lseek(t->fd, (off_t)off, whence);
    if (r < 0 && !t->io_errno)
        t->io_errno = errno;
    return r < 0 ? (toff_t)-1 : (toff_t)r;
}

static int
io_close(thandle_t h)
{
    (void)h;
    return 0; /* the descriptor is closed by us, where its error can be reported */
}

static toff_t
io_size(thandle_t h)
{
    tsr_tiff *t = h;
    struct stat st;
    return fstat(t->fd, &st) == 0 ? (toff_t)st.st_size : 0;
}

static int
io_map(thandle_t h, void **base, toff_t *size)
{
    (void)h, (void)base, (void)size;
    return 0;
}

static void
io_unmap(thandle_t h, void *base, toff_t size)
{
    (void)h, (void)base, (void)size;
}

static int
on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    tsr_tiff *t = user;
    if (!t->lib_msg[0] && !t->dead) {
        char m[160];
        vsnprintf(m, sizeof m, fmt, ap);
        snprintf(t->lib_msg, sizeof t->lib_msg, "libtiff: %s: %s", module ? module : "", m);
    }
    return 1; /* handled: nothing on the process-wide handler */
}

static int
on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif, (void)user, (void)module, (void)fmt, (void)ap;
    return 1;
}

/* The failure just met, with the best reason we have: the medium's, else libtiff's. */
static tsr_status
fail(tsr_tiff *t, tsr_error *err)
{
    if (t->io_errno)
        tsr_fail(err, TSR_EIO, "%s: %s", t->path, strerror(t->io_errno));
    else
        tsr_fail(err, TSR_EIO, "%s: %s", t->path, t->lib_msg[0] ? t->lib_msg : "write failed");
    t->failed = TSR_EIO;
    return TSR_EIO;
}

static void
free_tiff(tsr_tiff *t)
{
    if (!t)
        return;
    if (t->tif) {
        t->dead = true;
        TIFFClose(t->tif);
    }
    if (t->fd >= 0)
        close(t->fd);
    free(t->strip);
    free(t->path);
    free(t);
}

tsr_tiff *
tsr_tiff_open(const char *path, const tsr_image_opts *o, tsr_error *err)
{
    TIFFOpenOptions *opts = NULL;
    tsr_tiff *t = NULL;
    if (tsr_image_check_opts(path, "TIFF", o, 1u << 1 | 1u << 2 | 1u << 4 | 1u << 8 | 1u << 16, UINT32_MAX, err) !=
        TSR_OK)
        return NULL;
    size_t rb = tsr_image_row_bytes(o->width, o->bits);
    int64_t data, strip_rows = o->strip_rows;
    if (!tsr_mul_checked((int64_t)rb, o->height, &data))
        goto too_big;
    if (strip_rows == 0)
        strip_rows = (int64_t)(STRIP_BYTES / rb) > 0 ? (int64_t)(STRIP_BYTES / rb) : 1;
    if (strip_rows > o->height)
        strip_rows = o->height;
    int64_t strips = (o->height + strip_rows - 1) / strip_rows, bound;
    if (!tsr_add_checked(data, data / 64, &bound) || !tsr_add_checked(bound, strips * 16, &bound) ||
        !tsr_add_checked(bound, 1 << 16, &bound) || strip_rows > INT64_MAX / (int64_t)rb)
        goto too_big;
    bool big = o->bigtiff || bound > (int64_t)UINT32_MAX;

    t = calloc(1, sizeof *t);
    if (t)
        t->fd = -1;
    if (!t || !(t->path = strdup(path)) ||
        !(t->strip = malloc((size_t)strip_rows * rb)) || !(opts = TIFFOpenOptionsAlloc())) {
        tsr_fail(err, TSR_ENOMEM, "%s: out of memory (TIFF strip of %lld rows)", path,
                 (long long)strip_rows);
        goto fail;
    }
    t->row_bytes = rb;
    t->bits = o->bits;
    t->height = o->height;
    t->strip_rows = strip_rows;
    if ((t->fd = tsr_image_open_seekable(path, "TIFF", err)) < 0)
        goto fail;
    TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, t);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, t);
    t->tif = TIFFClientOpenExt(path, big ? "w8" : "w", (thandle_t)t, io_read, io_write, io_seek,
                               io_close, io_size, io_map, io_unmap, opts);
    TIFFOpenOptionsFree(opts);
    opts = NULL;
    if (!t->tif) {
        fail(t, err);
        goto fail;
    }
    uint16_t comp = o->compression == TSR_TIFF_PACKBITS  ? COMPRESSION_PACKBITS
                    : o->compression == TSR_TIFF_DEFLATE ? COMPRESSION_ADOBE_DEFLATE
                                                         : COMPRESSION_NONE;
    int ok = TIFFSetField(t->tif, TIFFTAG_IMAGEWIDTH, (uint32_t)o->width) &&
             TIFFSetField(t->tif, TIFFTAG_IMAGELENGTH, (uint32_t)o->height) &&
             TIFFSetField(t->tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)o->bits) &&
             TIFFSetField(t->tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)1) &&
             TIFFSetField(t->tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK) &&
             TIFFSetField(t->tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
             TIFFSetField(t->tif, TIFFTAG_ROWSPERSTRIP, (uint32_t)strip_rows) &&
             TIFFSetField(t->tif, TIFFTAG_COMPRESSION, comp) &&
             TIFFSetField(t->tif, TIFFTAG_SOFTWARE, "tessera");
    if (ok && comp == COMPRESSION_ADOBE_DEFLATE)
        ok = TIFFSetField(t->tif, TIFFTAG_ZIPQUALITY, 1);
    if (ok && o->pitch_um[0] > 0 && o->pitch_um[1] > 0) {
        /* pixels per centimetre: 1 cm = 10^4 um */
        ok = TIFFSetField(t->tif, TIFFTAG_RESOLUTIONUNIT, RESUNIT_CENTIMETER) &&
             TIFFSetField(t->tif, TIFFTAG_XRESOLUTION, (float)(1e4 / o->pitch_um[0])) &&
             TIFFSetField(t->tif, TIFFTAG_YRESOLUTION, (float)(1e4 / o->pitch_um[1]));
    }
    if (!ok) {
        fail(t, err);
        goto fail;
    }
    return t;
too_big:
    tsr_fail(err, TSR_EINVAL, "%s: %lld x %lld at %d bits: too large", path,
             (long long)o->width, (long long)o->height, o->bits);
fail:
    if (opts)
        TIFFOpenOptionsFree(opts);
    free_tiff(t);
    return NULL;
}

/* Our rows are the stream's: 16-bit samples little-endian; libtiff wants host order. */
static void
to_host16(uint8_t *p, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t i = 0; i + 1 < n; i += 2) {
        uint8_t c = p[i];
        p[i] = p[i + 1];
        p[i + 1] = c;
    }
#else
    (void)p, (void)n;
#endif
}

static tsr_status
put_strip(tsr_tiff *t, tsr_error *err)
{
    size_t n = (size_t)t->in_strip * t->row_bytes;
    if (TIFFWriteEncodedStrip(t->tif, t->next_strip, t->strip, (tmsize_t)n) < 0)
        return fail(t, err);
    t->next_strip++;
    t->in_strip = 0;
    return TSR_OK;
}

tsr_status
tsr_tiff_write_rows(tsr_tiff *t, const void *rows, int64_t n, tsr_error *err)
{
    if (t->failed != TSR_OK)
        return tsr_fail(err, t->failed, "%s: the TIFF failed before", t->path);
    if (n < 0 || n > t->height - t->rows)
        return tsr_fail(err, TSR_EINVAL, "%s: %lld more rows: the TIFF has %lld, %lld written",
                        t->path, (long long)n, (long long)t->height, (long long)t->rows);
    const uint8_t *p = rows;
    while (n > 0) {
        int64_t k = t->strip_rows - t->in_strip < n ? t->strip_rows - t->in_strip : n;
        uint8_t *dst = t->strip + (size_t)t->in_strip * t->row_bytes;
        memcpy(dst, p, (size_t)k * t->row_bytes);
        if (t->bits == 16)
            to_host16(dst, (size_t)k * t->row_bytes);
        t->in_strip += k;
        t->rows += k;
        p += (size_t)k * t->row_bytes;
        n -= k;
        if (t->in_strip == t->strip_rows && put_strip(t, err) != TSR_OK)
            return TSR_EIO;
    }
    return TSR_OK;
}

tsr_status
tsr_tiff_finish(tsr_tiff *t, tsr_error *err)
{
    if (!t)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_tiff_finish: no writer");
    tsr_status st = t->failed;
    if (st != TSR_OK)
        tsr_fail(err, st, "%s: the TIFF failed before", t->path);
    else if (t->rows != t->height)
        st = tsr_fail(err, TSR_EINVAL, "%s: %lld of %lld rows written: the TIFF is incomplete",
                      t->path, (long long)t->rows, (long long)t->height);
    else if (t->in_strip > 0)
        st = put_strip(t, err);
    /* the directory and the header's pointer to it: from here on the file is a TIFF */
    if (st == TSR_OK && !TIFFWriteDirectory(t->tif))
        st = fail(t, err);
    if (st == TSR_OK) {
        TIFFClose(t->tif); /* nothing left to write: it only frees */
        t->tif = NULL;
        int fd = t->fd;
        t->fd = -1;
        if (close(fd) != 0 && errno != EINTR)
            st = tsr_fail(err, TSR_EIO, "%s: %s", t->path, strerror(errno));
    }
    free_tiff(t);
    return st;
}

void
tsr_tiff_abandon(tsr_tiff *t)
{
    free_tiff(t);
}
