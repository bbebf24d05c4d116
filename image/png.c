/* image: PNG writing (previews) and reading (image sources, docs/format.md §4). See image.h.
 *
 * The only libpng user. libpng reports errors by longjmp: each entry point keeps its setjmp
 * in a small helper whose locals are either set before setjmp and never changed, or volatile,
 * so the cleanup after a longjmp sees their current values. libpng's own colour transforms
 * are deliberately not used on read: the spec fixes the arithmetic (sample / max, luma in
 * double), and libpng's gamma/tRNS/rgb_to_gray handling would change values. */
#include "image/image.h"

#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_LITTLE_ENDIAN 1
#else
#define HOST_LITTLE_ENDIAN 0
#endif

/* PNG's own limit on width and height (2^31 - 1); libpng's default user limit is 1e6, far
 * below the previews and masks tessera handles. */
#define PNG_DIM_MAX 0x7fffffffu

/* Decoded images live in memory as float32; beyond 2^38 pixels (1 TiB) a header is a forgery
 * or a mistake, and saying so beats an out-of-memory failure (or an allocator abort). */
#define DECODE_MAX_PX ((uint64_t)1 << 38)

/* State shared with the libpng callbacks through the error/io pointers. */
struct pngio {
    const char *path;  /* for messages */
    int fd;            /* write: the temporary file */
    FILE *fp;          /* read: the input */
    int sys;           /* errno of a failed read/write, 0 if none */
    bool truncated;    /* read: the file ended early */
    tsr_status status; /* read: set by our own checks inside the jmp region */
    char msg[512];     /* libpng's error message, or ours */
    size_t n;          /* write: bytes pending in buf */
    bool rows_failed;  /* write: the caller's row source failed (its error is in err) */
    uint8_t buf[1 << 16]; /* write: batches libpng's many small chunk pieces into few syscalls */
};

static void
on_error(png_structp png, png_const_charp msg)
{
    struct pngio *io = png_get_error_ptr(png);
    snprintf(io->msg, sizeof io->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* A library does not print: warnings (bad ancillary CRCs, odd ICC profiles) concern chunks
 * tessera ignores anyway. */
static void
on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static bool
mentions_oom(const char *msg)
{
    return strstr(msg, "ut of memory") || strstr(msg, "ut of Memory");
}

/* ---- write ------------------------------------------------------------------------- */

/* 0, or the errno of the failure. */
static int
write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (k == 0)
            return EIO;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static bool
flush_io(struct pngio *io)
{
    if (io->n > 0 && io->sys == 0)
        io->sys = write_all(io->fd, io->buf, io->n);
    io->n = 0;
    return io->sys == 0;
}

static void
on_write(png_structp png, png_bytep data, size_t len)
{
    struct pngio *io = png_get_io_ptr(png);
    if (io->n + len > sizeof io->buf && !flush_io(io))
        png_error(png, "write failed");
    if (len >= sizeof io->buf) {
        io->sys = write_all(io->fd, data, len);
        if (io->sys != 0)
            png_error(png, "write failed");
        return;
    }
    memcpy(io->buf + io->n, data, len);
    io->n += len;
}

static void
on_flush(png_structp png)
{
    struct pngio *io = png_get_io_ptr(png);
    if (!flush_io(io))
        png_error(png, "write failed");
}

/* Encode into io->fd. png and info are assigned before setjmp and never after, and the row
 * loop's locals are dead after a longjmp, so nothing here needs volatile. */
static tsr_status
write_body(struct pngio *io, png_uint_32 w, png_uint_32 h, int depth, tsr_png_row_fn row,
           void *ctx, tsr_error *err)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, io, on_error, on_warning);
    if (!png)
        return TSR_ENOMEM;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return TSR_ENOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        if (io->sys != 0)
            return TSR_EIO;
        return mentions_oom(io->msg) ? TSR_ENOMEM : TSR_EINTERNAL;
    }
    png_set_write_fn(png, io, on_write, on_flush);
    png_set_user_limits(png, PNG_DIM_MAX, PNG_DIM_MAX);
    png_set_IHDR(png, info, w, h, depth, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    /* PNG stores 16-bit samples big-endian; ours are in host order. libpng swaps a private
     * copy of each row, so the caller's const samples are untouched. */
    if (depth == 16 && HOST_LITTLE_ENDIAN)
        png_set_swap(png);
    for (png_uint_32 y = 0; y < h; y++) {
        const void *r = NULL;
        tsr_status st = row(ctx, (int64_t)y, &r, err);
        if (st != TSR_OK) { /* no longjmp: its error stands, the half PNG is dropped */
            io->rows_failed = true;
            png_destroy_write_struct(&png, &info);
            return st;
        }
        png_write_row(png, r);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return flush_io(io) ? TSR_OK : TSR_EIO;
}

/* Open where the PNG goes, into *fd. A regular file (or nothing yet) gets a temporary beside
 * it, renamed over it when complete (*tmp, owned), so a failure keeps the old file. Anything
 * else is written in place (*tmp NULL): a rename would replace a device node, a FIFO or a
 * symlink with a regular file (`-o /dev/null` would destroy /dev/null). "-" is stdout. */
static tsr_status
open_target(const char *path, int *fd, char **tmp, tsr_error *err)
{
    *tmp = NULL;
    if (strcmp(path, "-") == 0) {
        if (isatty(STDOUT_FILENO))
            return tsr_fail(err, TSR_EINVAL, "stdout is a terminal: use -o FILE or a pipe");
        /* A private descriptor, so that close() reports delayed errors; fd 1 stays open. */
        *fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        return *fd >= 0 ? TSR_OK : tsr_fail(err, TSR_EIO, "stdout: %s", strerror(errno));
    }
    struct stat st;
    if (lstat(path, &st) == 0 ? !S_ISREG(st.st_mode) : errno != ENOENT) {
        /* Through a symlink to its target, into a device or a FIFO; a directory, or a path
         * lstat could not look at, fails here with open's own reason. */
        *fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (*fd < 0)
            return tsr_fail(err, errno == ENOMEM ? TSR_ENOMEM : TSR_EIO, "%s: %s", path,
                            strerror(errno));
        return TSR_OK;
    }
    size_t plen = strlen(path);
    char *t = malloc(plen + sizeof ".tmp.XXXXXX");
    if (!t)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", path);
    memcpy(t, path, plen);
    memcpy(t + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    /* Beside the target, so the final rename stays within one file system and is atomic. */
    *fd = mkstemp(t);
    if (*fd < 0) {
        tsr_status st = tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(errno));
        free(t);
        return st;
    }
    /* mkstemp makes 0600; a preview is an ordinary file like the raw sink's outputs. */
    (void)fchmod(*fd, 0644);
    *tmp = t;
    return TSR_OK;
}

struct whole {
    const uint8_t *samples;
    size_t rowbytes;
};

static tsr_status
whole_row(void *ctx, int64_t y, const void **row, tsr_error *err)
{
    (void)err;
    const struct whole *wh = ctx;
    *row = wh->samples + (size_t)y * wh->rowbytes;
    return TSR_OK;
}

tsr_status
tsr_png_write(const char *path, int64_t w, int64_t h, int depth, const void *samples,
              tsr_error *err)
{
    if (!path || !samples)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_png_write: no path or samples");
    struct whole wh = {samples, (size_t)(w > 0 ? w : 0) * (size_t)(depth / 8)};
    return tsr_png_write_rows(path, w, h, depth, whole_row, &wh, err);
}

tsr_status
tsr_png_write_rows(const char *path, int64_t w, int64_t h, int depth, tsr_png_row_fn row,
                   void *ctx, tsr_error *err)
{
    if (!path || !row)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_png_write_rows: no path or rows");
    if (depth != 8 && depth != 16)
        return tsr_fail(err, TSR_EINVAL, "%s: PNG depth must be 8 or 16, not %d", path, depth);
    if (w < 1 || h < 1 || w > (int64_t)PNG_DIM_MAX || h > (int64_t)PNG_DIM_MAX)
        return tsr_fail(err, TSR_EINVAL,
                        "%s: a PNG of %lld x %lld pixels is impossible (1..2^31-1 each)", path,
                        (long long)w, (long long)h);

    struct pngio *io = calloc(1, sizeof *io);
    if (!io)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", path);
    char *tmp = NULL;
    int fd = -1;
    tsr_status st = open_target(path, &fd, &tmp, err);
    if (st != TSR_OK) {
        free(io);
        return st;
    }
    const char *name = strcmp(path, "-") == 0 ? "stdout" : path;
    io->path = name;
    io->fd = fd;
    st = write_body(io, (png_uint_32)w, (png_uint_32)h, depth, row, ctx, err);
    struct stat fs;
    /* a file reached through a symlink: no half PNG left in it (if even that fails, the
     * error already reported stands; glibc's warn_unused_result wants the result looked at) */
    if (st != TSR_OK && !tmp && fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) && ftruncate(fd, 0) != 0)
        io->sys = io->sys ? io->sys : errno;
    if (close(fd) != 0 && st == TSR_OK && errno != EINTR) {
        io->sys = errno;
        st = TSR_EIO;
    }
    if (st == TSR_OK && tmp && rename(tmp, path) != 0) {
        io->sys = errno;
        st = TSR_EIO;
    }
    if (st != TSR_OK) {
        if (tmp)
            unlink(tmp);
        if (io->rows_failed) {
            /* the row source's own error stands */
        } else if (io->sys != 0)
            tsr_fail(err, st, "%s: %s", name, strerror(io->sys));
        else if (st == TSR_ENOMEM)
            tsr_fail(err, st, "%s: out of memory", name);
        else
            tsr_fail(err, st, "%s: libpng: %s", name, io->msg);
    }
    free(tmp);
    free(io);
    return st;
}

/* ---- read -------------------------------------------------------------------------- */

static void
on_read(png_structp png, png_bytep data, size_t len)
{
    struct pngio *io = png_get_io_ptr(png);
    size_t k = fread(data, 1, len, io->fp);
    if (k != len) {
        if (ferror(io->fp)) {
            io->sys = errno ? errno : EIO;
            png_error(png, "read failed");
        }
        io->truncated = true;
        png_error(png, "unexpected end of file");
    }
}

/* Per docs/format.md §4: sample / max in double, luma weights applied in double in the written
 * order (compiled without contraction), one rounding to float32 at the end. */
static void
convert_row(const uint8_t *row, float *dst, png_uint_32 w, int ct, int bd, png_const_colorp pal,
            int npal)
{
    if (ct == PNG_COLOR_TYPE_PALETTE) {
        for (png_uint_32 x = 0; x < w; x++) {
            /* An index past the palette reads as black, as libpng's own expansion does. */
            double r = 0, g = 0, b = 0;
            if (row[x] < npal) {
                r = pal[row[x]].red;
                g = pal[row[x]].green;
                b = pal[row[x]].blue;
            }
            dst[x] = (float)((0.299 * r + 0.587 * g + 0.114 * b) / 255.0);
        }
        return;
    }
    int nch = ct == PNG_COLOR_TYPE_GRAY         ? 1
              : ct == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
              : ct == PNG_COLOR_TYPE_RGB        ? 3
                                                : 4;
    double max = (double)((1u << bd) - 1);
    if (bd == 16) {
        /* Assembled from the file's big-endian bytes: no swap transform needed. */
        for (png_uint_32 x = 0; x < w; x++) {
            const uint8_t *p = row + (size_t)x * (size_t)nch * 2;
            double s;
            if (nch <= 2) {
                s = (double)((unsigned)p[0] << 8 | p[1]);
            } else {
                double r = (double)((unsigned)p[0] << 8 | p[1]);
                double g = (double)((unsigned)p[2] << 8 | p[3]);
                double b = (double)((unsigned)p[4] << 8 | p[5]);
                s = 0.299 * r + 0.587 * g + 0.114 * b;
            }
            dst[x] = (float)(s / max);
        }
    } else {
        /* bd <= 8: png_set_packing gave one byte per sample, still unscaled. */
        for (png_uint_32 x = 0; x < w; x++) {
            const uint8_t *p = row + (size_t)x * (size_t)nch;
            double s;
            if (nch <= 2)
                s = (double)p[0];
            else
                s = 0.299 * (double)p[0] + 0.587 * (double)p[1] + 0.114 * (double)p[2];
            dst[x] = (float)(s / max);
        }
    }
}

/* A stop request (tiles.h) while decoding: the image is dropped, TSR_EINTR. */
static void
stopped(struct pngio *io, png_structp png)
{
    io->status = TSR_EINTR;
    snprintf(io->msg, sizeof io->msg, "interrupted");
    png_longjmp(png, 1);
}

/* How much of a PNG read_body reads. */
typedef enum read_mode {
    READ_HEADER, /* the size (and the decoding scratch) only */
    READ_CHECK,  /* every row, through one row buffer, nothing kept: the file is whole */
    READ_DECODE  /* the floats */
} read_mode;

/* The image's rows as libpng hands them out, once its transforms are set. */
typedef struct png_geom {
    png_uint_32 w, h;
    int bd, ct;       /* bit depth, color type */
    int passes;       /* interlace passes (1: progressive) */
    png_colorp pal;   /* a palette image's PLTE */
    int npal;
    size_t rowbytes;  /* bytes of a native row */
} png_geom;

/* libpng reads through io, past the signature; every ancillary chunk is skipped. */
static void
reader_setup(png_structp png, struct pngio *io)
{
    png_set_read_fn(png, io, on_read);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, PNG_DIM_MAX, PNG_DIM_MAX);
    /* The spec ignores every ancillary chunk (gamma, ICC, sBIT, tRNS, ...): skipping them
     * unparsed also means a malformed one cannot fail the read. -1 covers all known chunks
     * but tRNS, which is named on its own. */
    static const png_byte trns[] = {'t', 'R', 'N', 'S', '\0'};
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, trns, 1);
}

/* What the full read allocates beside the floats: native rows (all of them when interlaced),
 * libpng's two row buffers, zlib's window and state; so a plan can count it from the header. */
static uint64_t
decode_scratch(png_structp png, png_infop info, const png_geom *g)
{
    uint64_t rowbytes = (uint64_t)g->w * png_get_channels(png, info) * (g->bd == 16 ? 2 : 1);
    uint64_t nrows = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE ? g->h : 1;
    return rowbytes * (nrows + 2) + ((uint64_t)64 << 10);
}

/* The most deflate can shrink data: a 258-byte match in two 1-bit codes, 1032:1 (RFC 1951;
 * zlib's best is below it). */
#define DEFLATE_MAX_RATIO 1032

/* A header that claims more pixels than the file could hold, read from the header alone: its
 * samples (w x h x bits, not even the rows' filter bytes) deflated at the best ratio there is
 * still need more bytes than the whole file has. A header of 1 x 1e9 pixels in a 60-byte file
 * was otherwise taken at its word, and the memory plan for a 3.7 GiB image refused the run
 * before the decoder could say the file is not that image. Fails by longjmp, as libpng's own
 * errors; a file that is not regular (its size unknown) is left to the decoder. */
static void
too_few_bytes(struct pngio *io, png_structp png, png_infop info, const png_geom *g)
{
    struct stat st;
    if (fstat(fileno(io->fp), &st) != 0 || !S_ISREG(st.st_mode))
        return;
    uint64_t bits = (uint64_t)png_get_channels(png, info) * (uint64_t)g->bd;
    /* w, h < 2^31 and bits <= 64: w * h < 2^62, times bits may pass 2^64: divide first */
    uint64_t px = (uint64_t)g->w * (uint64_t)g->h;
    uint64_t need = px / 8 / DEFLATE_MAX_RATIO * bits;
    if (need <= (uint64_t)st.st_size)
        return;
    io->status = TSR_EINVAL;
    snprintf(io->msg, sizeof io->msg, "corrupt PNG: its header's %lu x %lu pixels need at "
             "least %llu bytes of compressed data, the file has %lld",
             (unsigned long)g->w, (unsigned long)g->h, (unsigned long long)need,
             (long long)st.st_size);
    png_longjmp(png, 1);
}

/* Refuse what cannot be decoded (too large, a palette image without its palette) and set
 * the transforms: 8 or 16 bits a sample, interlace handled by libpng. Fails by longjmp with
 * io's status and message, like libpng's own errors. */
static void
decode_setup(struct pngio *io, png_structp png, png_infop info, png_geom *g)
{
    if ((size_t)g->w > SIZE_MAX / sizeof(float) / (size_t)g->h ||
        (uint64_t)g->w * (uint64_t)g->h > DECODE_MAX_PX) {
        io->status = TSR_EINVAL;
        snprintf(io->msg, sizeof io->msg, "image of %lu x %lu pixels is too large to decode",
                 (unsigned long)g->w, (unsigned long)g->h);
        png_longjmp(png, 1);
    }
    if (g->ct == PNG_COLOR_TYPE_PALETTE && png_get_PLTE(png, info, &g->pal, &g->npal) == 0) {
        io->status = TSR_EINVAL;
        snprintf(io->msg, sizeof io->msg, "corrupt PNG (palette image without PLTE)");
        png_longjmp(png, 1);
    }
    if (g->bd < 8)
        png_set_packing(png);
    g->passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    g->rowbytes = png_get_rowbytes(png, info);
    size_t nch = png_get_channels(png, info);
    if (g->rowbytes != (size_t)g->w * nch * (g->bd == 16 ? 2 : 1)) {
        io->status = TSR_EINTERNAL;
        snprintf(io->msg, sizeof io->msg, "unexpected libpng row layout");
        png_longjmp(png, 1);
    }
}

/* Every row of every pass, a stop request checked before each; converted into px when it is
 * not NULL. Interlaced images fill every row over several passes, so they need the whole
 * native image in rows (h of them when px is wanted); progressive ones are converted a row at
 * a time through one. */
static void
read_rows(struct pngio *io, png_structp png, const png_geom *g, uint8_t *rows, float *px)
{
    png_uint_32 w = g->w, h = g->h;
    if (g->passes > 1) {
        for (int p = 0; p < g->passes; p++)
            for (png_uint_32 y = 0; y < h; y++) {
                if (tsr_stop_requested())
                    stopped(io, png);
                png_read_row(png, rows + (px ? (size_t)y * g->rowbytes : 0), NULL);
            }
        for (png_uint_32 y = 0; px && y < h; y++)
            convert_row(rows + (size_t)y * g->rowbytes, px + (size_t)y * w, w, g->ct, g->bd,
                        g->pal, g->npal);
    } else {
        for (png_uint_32 y = 0; y < h; y++) {
            if (tsr_stop_requested())
                stopped(io, png);
            png_read_row(png, rows, NULL);
            if (px)
                convert_row(rows, px + (size_t)y * w, w, g->ct, g->bd, g->pal, g->npal);
        }
    }
}

/* Decode io->fp (signature already consumed). On success *out holds w*h floats (READ_DECODE),
 * or only the size is read (READ_HEADER), or every row is read and dropped (READ_CHECK). */
static tsr_status
read_body(struct pngio *io, read_mode mode, png_uint_32 *pw, png_uint_32 *ph, float **out,
          uint64_t *scratch)
{
    bool keep = mode == READ_DECODE;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, io, on_error, on_warning);
    if (!png)
        return TSR_ENOMEM;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return TSR_ENOMEM;
    }
    /* Assigned after setjmp and freed after a longjmp: volatile, so the values seen there are
     * the current ones, not stale register copies. */
    uint8_t *volatile rows = NULL;
    float *volatile px = NULL;
    if (setjmp(png_jmpbuf(png))) {
        free(rows);
        free(px);
        png_destroy_read_struct(&png, &info, NULL);
        if (io->status != TSR_OK)
            return io->status;
        if (io->sys != 0)
            return io->sys == EISDIR ? TSR_EINVAL : TSR_EIO;
        return mentions_oom(io->msg) ? TSR_ENOMEM : TSR_EINVAL;
    }
    reader_setup(png, io);
    png_read_info(png, info);
    png_geom g = {.w = png_get_image_width(png, info), .h = png_get_image_height(png, info),
                  .bd = png_get_bit_depth(png, info), .ct = png_get_color_type(png, info)};
    if (mode == READ_HEADER) {
        too_few_bytes(io, png, info, &g);
        if (scratch)
            *scratch = decode_scratch(png, info, &g);
        png_destroy_read_struct(&png, &info, NULL);
        *pw = g.w;
        *ph = g.h;
        return TSR_OK;
    }
    decode_setup(io, png, info, &g);
    /* A check needs no image: every pass's rows go through one buffer. */
    size_t nrows = g.passes > 1 && keep ? (size_t)g.h : 1;
    if (g.rowbytes > SIZE_MAX / nrows) {
        io->status = TSR_EINVAL;
        snprintf(io->msg, sizeof io->msg, "image of %lu x %lu pixels is too large",
                 (unsigned long)g.w, (unsigned long)g.h);
        png_longjmp(png, 1);
    }
    px = keep ? malloc((size_t)g.w * (size_t)g.h * sizeof(float)) : NULL;
    rows = malloc(g.rowbytes * nrows);
    if ((keep && !px) || !rows) {
        io->status = TSR_ENOMEM;
        snprintf(io->msg, sizeof io->msg, "out of memory for %lu x %lu pixels",
                 (unsigned long)g.w, (unsigned long)g.h);
        png_longjmp(png, 1);
    }
    read_rows(io, png, &g, rows, px);
    /* Reading to IEND catches a file cut after its image data. */
    png_read_end(png, NULL);

    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    *pw = g.w;
    *ph = g.h;
    *out = px;
    return TSR_OK;
}

/* Open `path` and check its signature; on success *fp is positioned after it. */
static tsr_status
open_png(const char *path, FILE **fp_out, tsr_error *err)
{
    /* O_NONBLOCK: opening a FIFO nobody writes would block for ever (`check` hung on a
     * design whose image was one); it is refused below, as every file that is not regular:
     * an image is read more than once (its header when the design loads, then decoded), and a
     * FIFO, a device or a socket would give other bytes the second time. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return tsr_fail(err, errno == ENOMEM ? TSR_ENOMEM : TSR_EINVAL, "%s: %s", path,
                        strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) { /* a directory: EISDIR below */
        close(fd);
        return tsr_fail(err, TSR_EINVAL, "%s: not a regular file (%s): an image must be a file",
                        path, S_ISFIFO(sb.st_mode) ? "a FIFO"
                              : S_ISSOCK(sb.st_mode) ? "a socket" : "a device");
    }
    FILE *fp = NULL;
    if (fcntl(fd, F_SETFL, 0) != 0 || !(fp = fdopen(fd, "rb"))) {
        int e = errno;
        close(fd);
        return tsr_fail(err, e == ENOMEM ? TSR_ENOMEM : TSR_EIO, "%s: %s", path, strerror(e));
    }
    tsr_status st;
    png_byte sig[8];
    errno = 0;
    size_t n = fread(sig, 1, sizeof sig, fp);
    if (n < sizeof sig && ferror(fp)) {
        int e = errno ? errno : EIO;
        st = tsr_fail(err, e == EISDIR ? TSR_EINVAL : TSR_EIO, "%s: %s", path, strerror(e));
        fclose(fp);
        return st;
    }
    if (n == 0 || png_sig_cmp(sig, 0, n) != 0) {
        fclose(fp);
        return tsr_fail(err, TSR_EINVAL, "%s: not a PNG file", path);
    }
    if (n < sizeof sig) {
        fclose(fp);
        return tsr_fail(err, TSR_EINVAL, "%s: truncated PNG", path);
    }
    *fp_out = fp;
    return TSR_OK;
}

static tsr_status
read_png(const char *path, read_mode mode, int64_t *w, int64_t *h, float **px,
         int64_t *scratch, tsr_error *err)
{
    FILE *fp = NULL;
    tsr_status st = open_png(path, &fp, err);
    if (st != TSR_OK)
        return st;
    struct pngio *io = calloc(1, sizeof *io);
    if (!io) {
        fclose(fp);
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", path);
    }
    io->path = path;
    io->fp = fp;
    io->fd = -1;
    io->status = TSR_OK;
    png_uint_32 pw = 0, ph = 0;
    float *out = NULL;
    uint64_t sc = 0;
    st = read_body(io, mode, &pw, &ph, &out, &sc);
    fclose(fp);
    if (st == TSR_OK) {
        *w = pw;
        *h = ph;
        if (px)
            *px = out;
        if (scratch)
            *scratch = sc > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)sc;
    } else if (io->truncated) {
        tsr_fail(err, st, "%s: truncated PNG", path);
    } else if (io->sys != 0) {
        tsr_fail(err, st, "%s: %s", path, strerror(io->sys));
    } else if (io->status != TSR_OK) {
        tsr_fail(err, st, "%s: %s", path, io->msg);
    } else if (st == TSR_ENOMEM) {
        tsr_fail(err, st, "%s: out of memory", path);
    } else {
        tsr_fail(err, st, "%s: corrupt PNG (%s)", path, io->msg);
    }
    free(io);
    return st;
}

tsr_status
tsr_png_read_gray(const char *path, int64_t *w, int64_t *h, float **px, tsr_error *err)
{
    if (!path || !w || !h || !px)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_png_read_gray: missing argument");
    return read_png(path, READ_DECODE, w, h, px, NULL, err);
}

tsr_status
tsr_png_read_size(const char *path, int64_t *w, int64_t *h, tsr_error *err)
{
    if (!path || !w || !h)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_png_read_size: missing argument");
    return read_png(path, READ_HEADER, w, h, NULL, NULL, err);
}

tsr_status
tsr_png_read_info(const char *path, int64_t *w, int64_t *h, int64_t *scratch, tsr_error *err)
{
    if (!path || !w || !h || !scratch)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_png_read_info: missing argument");
    return read_png(path, READ_HEADER, w, h, NULL, scratch, err);
}

tsr_status
tsr_png_check(const char *path, int64_t *w, int64_t *h, float **px, tsr_error *err)
{
    if (!path || !w || !h || !px)
        return tsr_fail(err, TSR_EINTERNAL, "tsr_png_check: missing argument");
    *px = NULL;
    return read_png(path, READ_CHECK, w, h, NULL, NULL, err);
}
