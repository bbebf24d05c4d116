/* stream: image files as sinks (see sink_int.h): the stream's bytes cut into rows for
 * image/'s TIFF and BMP writers, and the JSON sidecar of a raw file (sidecar.c). */
#include "image/image.h"
#include "stream/sink_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct tsr_sink_img {
    int fmt;               /* SINK_IMG_* */
    tsr_sink_image im;     /* a copy of the caller's */
    tsr_tiff *tiff;
    tsr_bmp *bmp;
    size_t row_bytes;
    uint8_t *row;          /* a row cut by a write's end, row_bytes */
    size_t have;           /* ... its bytes so far */
    uint64_t total;        /* the stream's bytes */
    uint32_t crc;          /* raw: crc32 of the stream's bytes so far */
    bool have_crc;         /* false: the kept bytes of a resume could not be read */
    bool finished;
    /* one BMP per swath (a "%d" in the name): the swath being written, its rows so far, the
     * swaths there are, the geometry, and the name with the number's place */
    bool per_swath;
    uint64_t swath, rows, nswath;
    tsr_stream_geom geom;
    char *spec;
};

void
tsr_sink_image_geom(const tsr_sink_image *im, tsr_stream_geom *g)
{
    g->width = im->width;
    g->height = im->height;
    g->swath_width = im->order == 1 && im->swath_width > 0 ? im->swath_width : im->width;
    g->bits = im->depth;
    g->overlap = im->overlap;
    g->overscan = im->overscan;
    g->planes = im->planes;
}

/* Whether a .bmp name asks for one file per swath. */
static bool
per_swath_name(const char *spec)
{
    return strstr(spec, "%d") != NULL;
}

/* The name of swath k's BMP: the first "%d" of spec replaced by k. NULL when out of memory. */
static char *
swath_name(const char *spec, uint64_t k)
{
    const char *at = strstr(spec, "%d");
    size_t n = strlen(spec) + 24;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%.*s%llu%s", (int)(at - spec), spec, (unsigned long long)k, at + 2);
    return out;
}

int
tsr_sink_image_kind(const char *spec)
{
    if (!spec || strcmp(spec, "-") == 0 || strcmp(spec, "null") == 0 ||
        strncmp(spec, "tcp://", 6) == 0)
        return SINK_IMG_NONE;
    const char *base = strrchr(spec, '/');
    base = base ? base + 1 : spec;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return SINK_IMG_NONE;
    if (strcasecmp(dot, ".tif") == 0 || strcasecmp(dot, ".tiff") == 0)
        return SINK_IMG_TIFF;
    if (strcasecmp(dot, ".bmp") == 0)
        return SINK_IMG_BMP;
    if (strcasecmp(dot, ".raw") == 0)
        return SINK_IMG_RAW;
    return SINK_IMG_NONE;
}

bool
tsr_sink_wants_image(const char *spec)
{
    return tsr_sink_image_kind(spec) != SINK_IMG_NONE;
}

bool
tsr_sink_image_file(const char *spec)
{
    int k = tsr_sink_image_kind(spec);
    return k == SINK_IMG_TIFF || k == SINK_IMG_BMP;
}

static const char *
fmt_name(int fmt)
{
    return fmt == SINK_IMG_TIFF ? "TIFF" : fmt == SINK_IMG_BMP ? "BMP" : "raw";
}

tsr_status
tsr_sink_image_check(const char *spec, const tsr_sink_opts *o, bool framed, tsr_error *err)
{
    int fmt = tsr_sink_image_kind(spec);
    if (fmt == SINK_IMG_NONE || (fmt == SINK_IMG_RAW && (framed || !o->image)))
        return TSR_OK; /* a framed .raw is a transcript: no sidecar */
    const tsr_sink_image *im = o->image;
    const char *what = fmt_name(fmt);
    if (fmt != SINK_IMG_RAW) {
        if (!im)
            return tsr_fail(err, TSR_EINVAL, "%s: a %s output needs the image's size and depth "
                            "(tsr_sink_opts.image)", spec, what);
        if (framed)
            return tsr_fail(err, TSR_EINVAL, "%s: a %s file is not a framed stream (drop "
                            "--framed, or write the stream to another name)", spec, what);
        if (o->start > 0)
            return tsr_fail(err, TSR_EINVAL, "%s: a %s cannot be resumed (--resume-at %llu): "
                            "its strips and directory are written as it goes; render it whole, "
                            "or to a .raw file, which resumes", spec, what,
                            (unsigned long long)o->start);
        if (im && im->planes)
            return tsr_fail(err, TSR_EINVAL, "%s: a %s holds pixels, the design streams bit "
                            "planes (planes: %llu): write a .raw file", spec, what,
                            (unsigned long long)im->planes);
        if (fmt == SINK_IMG_BMP && per_swath_name(spec)) {
            if (strlen(spec) > 4000)
                return tsr_fail(err, TSR_EINVAL, "%.64s...: name too long", spec);
        } else if (im->order != 0 && im->swath_width < im->width) {
            return tsr_fail(err, TSR_EINVAL, "%s: a %s holds rows top to bottom, the design "
                            "streams swaths (order: swath): write a .raw file, or one BMP a "
                            "swath with %%d in its name (out-%%d.bmp)", spec, what);
        }
        if (im->order == 0 && im->start != 0)
            return tsr_fail(err, TSR_EINVAL, "%s: a %s starts at the top-left corner", spec,
                            what);
    }
    if (im->depth != 1 && im->depth != 2 && im->depth != 4 && im->depth != 8 && im->depth != 16)
        return tsr_fail(err, TSR_EINVAL, "%s: depth %d: a %s output takes 1, 2, 4, 8 or 16 bits",
                        spec, im->depth, what);
    if (im->width < 1 || im->height < 1 || im->width > INT64_MAX / 16 ||
        im->height > INT64_MAX / 16)
        return tsr_fail(err, TSR_EINVAL, "%s: size %llu x %llu: out of range", spec,
                        (unsigned long long)im->width, (unsigned long long)im->height);
    tsr_stream_geom g;
    uint64_t t;
    tsr_sink_image_geom(im, &g);
    if (!tsr_geom_total(&g, &t) || t > INT64_MAX || im->overscan > INT64_MAX / 4)
        return tsr_fail(err, TSR_EINVAL, "%s: %llu x %llu: too large", spec,
                        (unsigned long long)im->width, (unsigned long long)im->height);
    return TSR_OK;
}

/* The kept bytes of a raw file resumed at `start`, read back for the crc32 the sidecar
 * carries: false when they cannot be read (a FIFO, a device: no crc then). */
static bool
crc_prefix(const char *spec, uint64_t start, uint32_t *crc)
{
    int fd = open(spec, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return false;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= start;
    uint8_t *buf = ok ? malloc((size_t)1 << 20) : NULL;
    uint32_t c = 0;
    for (uint64_t done = 0; ok && buf && done < start;) {
        size_t want = start - done < ((size_t)1 << 20) ? (size_t)(start - done) : (size_t)1 << 20;
        ssize_t k = read(fd, buf, want);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            ok = false;
        else {
            c = tsr_crc32(c, buf, (size_t)k);
            done += (uint64_t)k;
        }
    }
    ok = ok && buf;
    free(buf);
    close(fd);
    *crc = c;
    return ok;
}

/* An image writer's failure as the sink's sticky one. */
static tsr_status
img_fail(tsr_sink *s, const tsr_error *e, tsr_error *err)
{
    if (s->first.status == TSR_OK)
        s->first = *e;
    s->broken = true;
    if (err)
        *err = s->first;
    return s->first.status;
}

/* One BMP a swath: open swath k's file, (base + overlap + 2 overscan) x height pixels, its
 * rows in stream order top down (docs/outputs.md §3). */
static tsr_status
open_swath(struct tsr_sink_img *g, uint64_t k, tsr_error *err)
{
    uint64_t base, lead, trail, rb = 0;
    tsr_geom_swath(&g->geom, k, &base, &lead, &trail);
    (void)tsr_geom_row_bytes(&g->geom, k, &rb);
    char *name = swath_name(g->spec, k);
    if (!name)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", g->spec);
    tsr_image_opts io = {.width = (int64_t)(base + trail + 2 * g->im.overscan),
                         .height = (int64_t)g->im.height, .bits = g->im.depth,
                         .pitch_um = {g->im.pitch_um[0], g->im.pitch_um[1]}};
    g->bmp = tsr_bmp_open(name, &io, err);
    free(name);
    g->swath = k;
    g->rows = 0;
    g->row_bytes = (size_t)rb;
    return g->bmp ? TSR_OK : err ? err->status : TSR_EIO;
}

tsr_status
tsr_sink_image_open(tsr_sink *s, const char *spec, const tsr_sink_opts *o, tsr_error *err)
{
    int fmt = tsr_sink_image_kind(spec);
    if (fmt == SINK_IMG_NONE ||
        (fmt == SINK_IMG_RAW && (s->framed || !o->image || s->kind != SINK_FILE)))
        return TSR_OK;
    struct tsr_sink_img *g = calloc(1, sizeof *g);
    if (!g)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", spec);
    s->img = g;
    g->fmt = fmt;
    g->im = *o->image;
    /* swaths, overlaps, overscan, planes: stream/geom.c (checked by tsr_sink_image_check) */
    tsr_sink_image_geom(&g->im, &g->geom);
    uint64_t rb = 0;
    (void)tsr_geom_total(&g->geom, &g->total);
    (void)tsr_geom_row_bytes(&g->geom, 0, &rb);
    g->row_bytes = (size_t)rb;
    g->nswath = tsr_geom_swaths(&g->geom);
    g->per_swath = fmt == SINK_IMG_BMP && per_swath_name(spec);
    if (fmt == SINK_IMG_RAW) {
        /* a sidecar says the file is whole: an older one goes before the first new byte */
        char *side = malloc(strlen(spec) + 6);
        if (!side)
            return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", spec);
        strcpy(side, spec);
        strcat(side, ".json");
        struct stat ls;
        if (lstat(side, &ls) == 0 && S_ISREG(ls.st_mode) && unlink(side) != 0) {
            tsr_status st = tsr_fail(err, TSR_EIO, "%s: %s (an older sidecar would describe "
                                     "an unfinished file)", side, strerror(errno));
            free(side);
            return st;
        }
        free(side);
        g->have_crc = o->start == 0 || crc_prefix(spec, o->start, &g->crc);
        return TSR_OK;
    }
    /* a row holds the overscan at both ends (the image is that much wider); one BMP a
     * swath: the widest swath's row (the first: its own columns and its overlap) */
    g->row = malloc(g->row_bytes ? g->row_bytes : 1);
    if (!g->row)
        return tsr_fail(err, TSR_ENOMEM, "%s: out of memory (a row)", spec);
    if (g->per_swath) {
        if (!(g->spec = strdup(spec)))
            return tsr_fail(err, TSR_ENOMEM, "%s: out of memory", spec);
        return open_swath(g, 0, err);
    }
    tsr_image_opts io = {.width = (int64_t)(g->im.width + 2 * g->im.overscan),
                         .height = (int64_t)g->im.height,
                         .bits = g->im.depth,
                         .pitch_um = {g->im.pitch_um[0], g->im.pitch_um[1]},
                         .compression = (tsr_tiff_compression)g->im.compression,
                         .bigtiff = g->im.bigtiff};
    if (fmt == SINK_IMG_TIFF)
        g->tiff = tsr_tiff_open(spec, &io, err);
    else
        g->bmp = tsr_bmp_open(spec, &io, err);
    if (!g->tiff && !g->bmp)
        return err ? err->status : TSR_EIO;
    return TSR_OK;
}

static tsr_status
put_rows(struct tsr_sink_img *g, const uint8_t *p, int64_t rows, tsr_error *err)
{
    return g->tiff ? tsr_tiff_write_rows(g->tiff, p, rows, err)
                   : tsr_bmp_write_rows(g->bmp, p, rows, err);
}

tsr_status
tsr_sink_image_put(tsr_sink *s, const uint8_t *p, size_t n, tsr_error *err)
{
    struct tsr_sink_img *g = s->img;
    tsr_error e = {0};
    if (n > g->total - tsr_sink_bytes(s)) {
        e.status = TSR_EINVAL;
        tsr_fail(&e, TSR_EINVAL, "%s: %zu more bytes: past the image's %llu", s->name, n,
                 (unsigned long long)g->total);
        return img_fail(s, &e, err);
    }
    size_t took = 0;
    while (took < n) {
        if (g->per_swath && g->rows == g->im.height) { /* the next swath's file */
            tsr_status st = tsr_bmp_finish(g->bmp, &e);
            g->bmp = NULL;
            if (st == TSR_OK)
                st = open_swath(g, g->swath + 1, &e);
            if (st != TSR_OK)
                return img_fail(s, &e, err);
        }
        /* rows left in this file (all of them but in one BMP a swath) */
        uint64_t left = g->per_swath ? g->im.height - g->rows : UINT64_MAX;
        if (g->have > 0 || n - took < g->row_bytes) { /* a row cut by a write's end */
            size_t k = g->row_bytes - g->have < n - took ? g->row_bytes - g->have : n - took;
            memcpy(g->row + g->have, p + took, k);
            g->have += k;
            took += k;
            if (g->have == g->row_bytes) {
                if (put_rows(g, g->row, 1, &e) != TSR_OK)
                    return img_fail(s, &e, err);
                g->have = 0;
                g->rows++;
            }
            continue;
        }
        uint64_t whole = (n - took) / g->row_bytes;
        whole = whole < left ? whole : left;
        if (put_rows(g, p + took, (int64_t)whole, &e) != TSR_OK)
            return img_fail(s, &e, err);
        took += (size_t)whole * g->row_bytes;
        g->rows += whole;
    }
    atomic_fetch_add(&s->bytes, (uint64_t)n);
    return TSR_OK;
}

void
tsr_sink_image_took(tsr_sink *s, const uint8_t *p, size_t n)
{
    if (s->img && s->img->fmt == SINK_IMG_RAW)
        s->img->crc = tsr_crc32(s->img->crc, p, n);
}

tsr_status
tsr_sink_image_finish(tsr_sink *s, tsr_error *err)
{
    struct tsr_sink_img *g = s->img;
    if (!g || g->finished)
        return TSR_OK;
    tsr_error e = {0};
    tsr_status st = TSR_OK;
    if (g->fmt == SINK_IMG_RAW) {
        if (tsr_sink_offset(s) != g->total) {
            tsr_fail(&e, TSR_EINVAL, "%s: %llu of %llu bytes written: no sidecar for an "
                     "unfinished file", s->name, (unsigned long long)tsr_sink_offset(s),
                     (unsigned long long)g->total);
            return img_fail(s, &e, err);
        }
        st = tsr_sidecar_write(s->name, &g->im, g->total, g->have_crc, g->crc, &e);
    } else if (g->tiff) {
        st = tsr_tiff_finish(g->tiff, &e);
        g->tiff = NULL;
    } else {
        st = tsr_bmp_finish(g->bmp, &e);
        g->bmp = NULL;
    }
    if (st != TSR_OK)
        return img_fail(s, &e, err);
    g->finished = true;
    return TSR_OK;
}

void
tsr_sink_image_free(tsr_sink *s)
{
    struct tsr_sink_img *g = s->img;
    if (!g)
        return;
    tsr_tiff_abandon(g->tiff);
    tsr_bmp_abandon(g->bmp);
    free(g->row);
    free(g->spec);
    free(g);
    s->img = NULL;
}
