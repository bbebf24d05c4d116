/* tessera preview and tessera check's printout, and size parsing. */
#include "designs/designs.h"
#include "engine/engine_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns one render call covers when blocks are at most this wide (as many whole blocks as
 * fit); wider blocks get a strip of at most PREVIEW_COLS x (root tile) values. */
#define PREVIEW_COLS 4096

/* Add the values of `px` (rows y0.. of region r, columns [sx, sx + cw) of it, sh rows) to the
 * running sums of their blocks, row by row; after the last row of a block row, convert every
 * block whose last column lies in this chunk into `img` and clear its sum. A block's values
 * thus reach its sum in row-major order whatever the chunks, as long as a block split across
 * chunks is fed one row at a time (the caller's strips are 1 row tall then). */
static void
fold_chunk(const tsr_output *o, tsr_rect r, int64_t kx, int64_t ky, int64_t ow, int64_t sx,
           int64_t cw, int64_t y0, int64_t sh, const float *px, double *acc, uint8_t *img,
           size_t bps)
{
    for (int64_t y = 0; y < sh; y++) {
        const float *row = px + y * cw;
        for (int64_t x = 0; x < cw; x++)
            acc[(sx + x) / kx] += (double)row[x];
        int64_t ry = y0 + y; /* region row */
        if ((ry + 1) % ky != 0 && ry + 1 != r.h)
            continue;
        int64_t by = ry / ky, bh = ry + 1 - by * ky;
        for (int64_t bx = sx / kx; bx <= (sx + cw - 1) / kx; bx++) {
            int64_t end = (bx + 1) * kx < r.w ? (bx + 1) * kx : r.w;
            if (end > sx + cw)
                continue; /* ends in a later chunk: its sum goes on */
            int64_t bw = end - bx * kx;
            uint32_t v = tsr_convert_one(o, acc[bx] / ((double)bw * (double)bh));
            size_t at = (size_t)by * (size_t)ow + (size_t)bx;
            if (bps == 1)
                img[at] = (uint8_t)v;
            else
                ((uint16_t *)img)[at] = (uint16_t)v;
            acc[bx] = 0.0;
        }
    }
}

tsr_status
tsr_engine_preview(tsr_engine *e, tsr_rect r, int64_t k, int depth, const char *path,
                   tsr_error *err)
{
    if (k < 1)
        return tsr_fail(err, TSR_EINVAL, "--scale %lld: must be >= 1", (long long)k);
    const tsr_node *root = e->d->root;
    if (tsr_rect_empty(r) || !tsr_rect_contains(tsr_rect_make(0, 0, root->w, root->h), r))
        return tsr_fail(err, TSR_EINVAL,
                        "--region %lld,%lld,%lld,%lld: must lie inside the root (%lldx%lld)",
                        (long long)r.x, (long long)r.y, (long long)r.w, (long long)r.h,
                        (long long)root->w, (long long)root->h);
    /* Blocks are clipped to the region, so a K past the region's size is the region's size:
     * the same image, and nothing below is ever sized by K itself. */
    int64_t kx = k < r.w ? k : r.w, ky = k < r.h ? k : r.h;
    int64_t ow = r.w / kx + (r.w % kx != 0), oh = r.h / ky + (r.h % ky != 0);
    size_t bps = depth == 16 ? 2 : 1;
    int64_t nimg;
    if (ow > INT32_MAX || oh > INT32_MAX || !tsr_mul_checked(ow, oh, &nimg) ||
        !tsr_mul_checked(nimg, (int64_t)bps, &nimg) || (uint64_t)nimg > SIZE_MAX)
        return tsr_fail(err, TSR_EINVAL,
                        "--scale %lld: a preview of %lldx%lld px is more than a PNG holds "
                        "(2^31-1 a side); use a larger --scale",
                        (long long)k, (long long)ow, (long long)oh);
    tsr_output o = e->d->out;
    o.depth = depth;
    int64_t t = e->tile[root->id];
    /* One render call: whole blocks of at most PREVIEW_COLS columns, a root tile of rows;
     * wider blocks, one row of up to t * PREVIEW_COLS columns. */
    int64_t cols = kx <= PREVIEW_COLS ? kx * (PREVIEW_COLS / kx) : t * PREVIEW_COLS;
    int64_t scols = cols < r.w ? cols : r.w;
    int64_t srows = kx <= PREVIEW_COLS ? (t < r.h ? t : r.h) : 1;
    uint8_t *img = malloc((size_t)nimg);
    double *acc = calloc((size_t)ow, sizeof *acc);
    float *px = malloc((size_t)srows * (size_t)scols * sizeof(float));
    tsr_status st = TSR_OK;
    if (!img || !acc || !px) {
        st = tsr_fail(err, TSR_ENOMEM, "out of memory (preview %lldx%lld)", (long long)ow,
                      (long long)oh);
        goto done;
    }
    for (int64_t sy = 0; sy < r.h && st == TSR_OK; sy += srows) {
        int64_t sh = (r.h - sy) < srows ? (r.h - sy) : srows;
        for (int64_t sx = 0; sx < r.w; sx += scols) {
            int64_t cw = (r.w - sx) < scols ? (r.w - sx) : scols;
            st = tsr_engine_render_rect(e, tsr_rect_make(r.x + sx, r.y + sy, cw, sh), px, err);
            if (st != TSR_OK)
                break;
            fold_chunk(&o, r, kx, ky, ow, sx, cw, sy, sh, px, acc, img, bps);
        }
    }
    if (st == TSR_OK)
        st = tsr_png_write(path, ow, oh, depth, img, err);
done:
    free(img);
    free(acc);
    free(px);
    return st;
}

static void
human(char *buf, size_t n, double bytes)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (bytes >= 1024.0 && i < 5) {
        bytes /= 1024.0;
        i++;
    }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

void
tsr_engine_print_check(tsr_engine *e, FILE *f)
{
    const tsr_design *d = e->d;
    tsr_design_dump(d, f);
    fprintf(f, "\nnodes (children first):\n");
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        const tsr_grid *g = &e->grid[n->id];
        char b[32];
        human(b, sizeof b, (double)n->w * (double)n->h * 4.0);
        fprintf(f, "  %-32s %lld x %lld px, tile %lld, %lld x %lld tiles, %s as float32", n->name,
                (long long)n->w, (long long)n->h, (long long)g->t, (long long)g->nx,
                (long long)g->ny, b);
        int64_t per[2];
        if (tsr_engine_period(e, n, per))
            fprintf(f, "; periodic %lld x %lld: one period computed, the rest copied%s",
                    (long long)per[0], (long long)per[1],
                    n == d->root ? " as output samples" : "");
        const char *cls = tsr_engine_gpu_class(e, n);
        if (cls)
            fprintf(f, "; gpu: %s", cls);
        fputc('\n', f);
    }
    const tsr_plan *p = &e->plan;
    char a[32], b[32], c[32], dd[32], m[32], bu[32];
    human(a, sizeof a, (double)p->bands);
    human(b, sizeof b, (double)p->per_thread);
    human(c, sizeof c, (double)p->fixed);
    human(dd, sizeof dd, (double)p->cache);
    human(m, sizeof m, (double)p->minimum);
    human(bu, sizeof bu, (double)p->budget);
    fprintf(f, "\nmemory plan (--memory %s):\n", bu);
    fprintf(f, "  bands        %s (3 in flight, %lld rows each)\n", a, (long long)p->band_rows);
    fprintf(f, "  per thread   %s x %lld threads\n", b, (long long)p->threads);
    fprintf(f, "  fixed        %s (tables, images, sink buffers)\n", c);
    fprintf(f, "  tile cache   %s\n", dd);
    fprintf(f, "  minimum      %s (the smallest --memory that runs)\n", m);
    uint64_t bytes = tsr_engine_stream_bytes(e);
    char sb[32];
    human(sb, sizeof sb, (double)bytes);
    double secs = (double)bytes / 1e7;
    fprintf(f, "\nstream: %llu bytes (%s); at the 10 MB/s target: %.0f s (%.1f h)\n",
            (unsigned long long)bytes, sb, secs, secs / 3600.0);
}

/* Length of the decimal number `s` starts with: digits with an optional fraction and an
 * optional exponent ("64", "1.5", ".5", "1e9"); 0 if there is none. No sign, blanks, hex,
 * inf or nan, all of which strtod takes. */
static size_t
decimal_len(const char *s)
{
    size_t n = strspn(s, "0123456789"), m = n;
    if (s[n] == '.') {
        m = strspn(s + n + 1, "0123456789");
        n += 1 + m;
    }
    if (n == 0 || (m == 0 && n == 1))
        return 0; /* no digit at all */
    if (s[n] == 'e' || s[n] == 'E') {
        size_t sign = s[n + 1] == '+' || s[n + 1] == '-';
        size_t d = strspn(s + n + 1 + sign, "0123456789");
        if (d > 0)
            n += 1 + sign + d;
    }
    return n;
}

/* The value of the decimal `s` starts with, *len its length (0: none, or not finite). */
static double
decimal(const char *s, size_t *len)
{
    *len = decimal_len(s);
    if (*len == 0)
        return 0;
    char buf[64];
    if (*len >= sizeof buf) {
        *len = 0; /* 63 characters of digits are no size anyone means */
        return 0;
    }
    memcpy(buf, s, *len);
    buf[*len] = 0;
    double v = strtod(buf, NULL);
    if (!isfinite(v))
        *len = 0;
    return v;
}

bool
tsr_parse_decimal(const char *s, double *out)
{
    size_t n;
    double v = decimal(s, &n);
    if (n == 0 || s[n])
        return false;
    *out = v;
    return true;
}

bool
tsr_parse_size(const char *s, double *out)
{
    size_t n;
    double v = decimal(s, &n);
    if (n == 0)
        return false;
    const char *end = s + n;
    double mul = 1;
    if (strncmp(end, "KiB", 3) == 0) { mul = 1024.0; end += 3; }
    else if (strncmp(end, "MiB", 3) == 0) { mul = 1048576.0; end += 3; }
    else if (strncmp(end, "GiB", 3) == 0) { mul = 1073741824.0; end += 3; }
    else if (strncmp(end, "TiB", 3) == 0) { mul = 1099511627776.0; end += 3; }
    else if (*end == 'K' || *end == 'k') { mul = 1e3; end++; }
    else if (*end == 'M') { mul = 1e6; end++; }
    else if (*end == 'G') { mul = 1e9; end++; }
    else if (*end == 'T') { mul = 1e12; end++; }
    if (*end == 'B')
        end++;
    if (strcmp(end, "/s") == 0)
        end += 2;
    if (*end || !isfinite(v * mul))
        return false;
    *out = v * mul;
    return true;
}
