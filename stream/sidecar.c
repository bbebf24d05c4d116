/* stream: the JSON sidecar of a raw file (stream.h, docs/outputs.md). Written by hand: a dozen
 * fixed keys of numbers and fixed words, no string from outside but the file's own name,
 * which is escaped. */
#include "stream/stream_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void
tsr_sink_image_from_header(const tsr_header *h, tsr_sink_image *im)
{
    memset(im, 0, sizeof *im);
    im->width = h->width;
    im->height = h->height;
    im->depth = h->depth;
    im->order = h->order;
    im->serpentine = h->serpentine;
    im->start = h->start;
    im->swath_width = h->swath_width;
    memcpy(im->fingerprint, h->fingerprint, sizeof im->fingerprint);
    im->stage = h->stage;
    im->feather = h->feather;
    im->overlap = h->overlap;
    im->overscan = h->overscan;
    im->overscan_value = h->overscan_value;
    im->planes = h->planes;
    if (h->dither == 1)
        snprintf(im->dither, sizeof im->dither, "threshold");
    else if (h->dither == 2 || h->dither == 3)
        snprintf(im->dither, sizeof im->dither, "%s%u", h->dither == 2 ? "bayer" : "blue",
                 1u << (h->dither_log2 & 15));
}

/* s as a JSON string body into out (cap bytes, NUL-terminated, cut if it must be). */
static void
json_escape(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    for (; *s && k + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            k += (size_t)snprintf(out + k, cap - k, "\\%c", c);
        else if (c < 0x20)
            k += (size_t)snprintf(out + k, cap - k, "\\u%04x", c);
        else
            out[k++] = (char)c;
    }
    out[k] = '\0';
}

static const char *
corner(int start)
{
    static const char *names[] = {"top-left", "top-right", "bottom-left", "bottom-right"};
    return start >= 0 && start < 4 ? names[start] : "top-left";
}

/* The sidecar's text; malloc'd, NULL when out of memory. */
static char *
sidecar_text(const char *raw_path, const tsr_sink_image *im, uint64_t bytes, bool have_crc,
             uint32_t crc)
{
    char *copy = strdup(raw_path);
    if (!copy)
        return NULL;
    char name[1024], fp[65], crcs[16], pitch[64];
    json_escape(basename(copy), name, sizeof name);
    free(copy);
    for (int i = 0; i < 32; i++)
        snprintf(fp + 2 * i, 3, "%02x", im->fingerprint[i]);
    if (have_crc)
        snprintf(crcs, sizeof crcs, "\"%08x\"", crc);
    else
        snprintf(crcs, sizeof crcs, "null");
    if (im->pitch_um[0] > 0 && im->pitch_um[1] > 0)
        snprintf(pitch, sizeof pitch, "[%.17g, %.17g]", im->pitch_um[0], im->pitch_um[1]);
    else
        snprintf(pitch, sizeof pitch, "null");
    uint64_t row_bytes = (im->width * (uint64_t)im->depth + 7) / 8;
    char swath[200];
    if (im->order == 1)
        snprintf(swath, sizeof swath,
                 "{\"width\": %llu, \"serpentine\": %s, \"start\": \"%s\"}",
                 (unsigned long long)im->swath_width, im->serpentine ? "true" : "false",
                 corner(im->start));
    else
        snprintf(swath, sizeof swath, "null");
    const char *fmt = "{\n"
                      "  \"format\": \"tessera raw\",\n"
                      "  \"version\": 1,\n"
                      "  \"file\": \"%s\",\n"
                      "  \"width\": %llu,\n"
                      "  \"height\": %llu,\n"
                      "  \"depth\": %d,\n"
                      "%s"
                      "  \"byte_order\": \"little-endian\",\n"
                      "  \"row_bytes\": %llu,\n"
                      "  \"pitch_um\": %s,\n"
                      "  \"origin_um\": [%.17g, %.17g],\n"
                      "  \"order\": \"%s\",\n"
                      "  \"swath\": %s,\n"
                      "  \"fingerprint\": \"%s\",\n"
                      "  \"bytes\": %llu,\n"
                      "  \"crc32\": %s\n"
                      "}\n";
    char dither[512] = ""; /* lines for packed outputs and stages only: the plain 8/16-bit
                            * sidecar as it was */
    size_t dl = 0;
    if (im->dither[0])
        dl += (size_t)snprintf(dither, sizeof dither, "  \"dither\": \"%.16s\",\n", im->dither);
    if (im->stage || im->overlap || im->overscan)
        dl += (size_t)snprintf(dither + dl, sizeof dither - dl,
                               "  \"stage\": {\"bidirectional\": \"%s\", \"mirror_x\": %s, "
                               "\"y_up\": %s, \"overlap\": %llu, \"feather\": \"%s\", "
                               "\"overscan\": %llu, \"overscan_value\": %u},\n",
                               im->stage & 1 ? "rows" : im->stage & 2 ? "swaths" : "none",
                               im->stage & 4 ? "true" : "false", im->stage & 8 ? "true" : "false",
                               (unsigned long long)im->overlap,
                               im->feather ? "cosine" : "linear",
                               (unsigned long long)im->overscan, (unsigned)im->overscan_value);
    if (im->planes)
        snprintf(dither + dl, sizeof dither - dl, "  \"planes\": %llu,\n",
                 (unsigned long long)im->planes);
    int n = snprintf(NULL, 0, fmt, name, (unsigned long long)im->width,
                     (unsigned long long)im->height, im->depth, dither,
                     (unsigned long long)row_bytes,
                     pitch, im->origin_um[0], im->origin_um[1],
                     im->order == 1 ? "swath" : "raster", swath, fp, (unsigned long long)bytes,
                     crcs);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text)
        snprintf(text, (size_t)n + 1, fmt, name, (unsigned long long)im->width,
                 (unsigned long long)im->height, im->depth, dither, (unsigned long long)row_bytes,
                 pitch,
                 im->origin_um[0], im->origin_um[1], im->order == 1 ? "swath" : "raster", swath,
                 fp, (unsigned long long)bytes, crcs);
    return text;
}

static bool
put_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return false;
        }
        p += k;
        n -= (size_t)k;
    }
    return true;
}

tsr_status
tsr_sidecar_write(const char *raw_path, const tsr_sink_image *im, uint64_t bytes, bool have_crc,
                  uint32_t crc, tsr_error *err)
{
    size_t len = strlen(raw_path);
    char *path = malloc(len + 6), *tmp = malloc(len + 16);
    char *text = sidecar_text(raw_path, im, bytes, have_crc, crc);
    tsr_status st = TSR_OK;
    int fd = -1;
    if (!path || !tmp || !text) {
        st = tsr_fail(err, TSR_ENOMEM, "%s.json: out of memory", raw_path);
        goto done;
    }
    snprintf(path, len + 6, "%s.json", raw_path);
    struct stat ls;
    bool replace = lstat(path, &ls) != 0 || S_ISREG(ls.st_mode);
    if (replace) {
        snprintf(tmp, len + 16, "%s.json.XXXXXX", raw_path);
        fd = mkstemp(tmp);
        if (fd >= 0)
            fchmod(fd, 0644);
    } else {
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    }
    if (fd < 0) {
        st = tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(errno));
        goto done;
    }
    bool ok = put_all(fd, text, strlen(text));
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && replace && rename(tmp, path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        if (replace)
            unlink(tmp);
        st = tsr_fail(err, TSR_EIO, "%s: %s", path, strerror(e));
    }
done:
    free(path);
    free(tmp);
    free(text);
    return st;
}
