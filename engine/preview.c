/* tessera preview and tessera check's printout, and size parsing. */
#include "designs/designs.h"
#include "engine/engine_int.h"
#include "gpu/gpu.h"
#include "image/image.h"
#include "nodes/params.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns one render call covers when blocks are at most this wide (as many whole blocks as
 * fit); wider blocks get a strip of at most PREVIEW_COLS x (root tile) values. */
#define PREVIEW_COLS 4096

/* One converted sample into the image. */
static void
put_sample(uint8_t *img, size_t at, size_t bps, uint32_t v)
{
    if (bps == 1)
        img[at] = (uint8_t)v;
    else
        ((uint16_t *)img)[at] = (uint16_t)v;
}

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
            put_sample(img, (size_t)by * (size_t)ow + (size_t)bx, bps, v);
            acc[bx] = 0.0;
        }
    }
}

/* The exact preview: every region pixel rendered, summed into its block (fold_chunk). */
static tsr_status
preview_exact(tsr_engine *e, tsr_rect r, int64_t kx, int64_t ky, int64_t ow,
              const tsr_output *o, uint8_t *img, size_t bps, _Atomic uint64_t *done,
              tsr_error *err)
{
    int64_t t = e->tile[e->d->root->id];
    /* One render call: whole blocks of at most PREVIEW_COLS columns, a root tile of rows;
     * wider blocks, one row of up to t * PREVIEW_COLS columns. */
    int64_t cols = kx <= PREVIEW_COLS ? kx * (PREVIEW_COLS / kx) : t * PREVIEW_COLS;
    int64_t scols = cols < r.w ? cols : r.w;
    int64_t srows = kx <= PREVIEW_COLS ? (t < r.h ? t : r.h) : 1;
    double *acc = calloc((size_t)ow, sizeof *acc);
    float *px = malloc((size_t)srows * (size_t)scols * sizeof(float));
    tsr_status st = TSR_OK;
    if (!acc || !px) {
        st = tsr_fail(err, TSR_ENOMEM, "out of memory (preview strip %lldx%lld)",
                      (long long)scols, (long long)srows);
        goto done;
    }
    for (int64_t sy = 0; sy < r.h && st == TSR_OK; sy += srows) {
        int64_t sh = (r.h - sy) < srows ? (r.h - sy) : srows;
        for (int64_t sx = 0; sx < r.w; sx += scols) {
            int64_t cw = (r.w - sx) < scols ? (r.w - sx) : scols;
            st = tsr_engine_render_rect(e, tsr_rect_make(r.x + sx, r.y + sy, cw, sh), px, err);
            if (st != TSR_OK)
                break;
            fold_chunk(o, r, kx, ky, ow, sx, cw, sy, sh, px, acc, img, bps);
            if (done)
                atomic_fetch_add_explicit(done, (uint64_t)(cw * sh), memory_order_relaxed);
        }
    }
done:
    free(acc);
    free(px);
    return st;
}

/* splitmix64 (Steele, Lea, Flood 2014): a fixed, documented scatter of the fast samples. */
static uint64_t
splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* --fast: sample s of block (bx, by), whose top-left region pixel is (x0, y0) and clipped size
 * bw x bh: h = splitmix64((by * ow + bx) * TSR_PREVIEW_FAST_SAMPLES + s), at region pixel
 * (x0 + h mod bw, y0 + (h >> 32) mod bh). Scattered, not on a lattice: a lattice of samples
 * shows a grating finer than K as one of its phases (the wafer's 10 px lines sampled every
 * 300 px at the block centres came out black), scattered ones show it grey. */
static tsr_rect
fast_sample(tsr_rect r, int64_t kx, int64_t ky, int64_t ow, int64_t bx, int64_t by, int s)
{
    int64_t x0 = bx * kx, y0 = by * ky;
    int64_t bw = r.w - x0 < kx ? r.w - x0 : kx, bh = r.h - y0 < ky ? r.h - y0 : ky;
    uint64_t h = splitmix64(((uint64_t)by * (uint64_t)ow + (uint64_t)bx) *
                                TSR_PREVIEW_FAST_SAMPLES + (uint64_t)s);
    return tsr_rect_make(r.x + x0 + (int64_t)(h % (uint64_t)bw),
                         r.y + y0 + (int64_t)((h >> 32) % (uint64_t)bh), 1, 1);
}

/* Samples one call of the fast preview computes at most (a 1 x 1 rect and a float each: 2.3 MB
 * whatever the image's shape). */
#define FAST_BATCH 65536

/* The tile edge of a fast preview's engine where no edge reads a neighbourhood: a sample
 * computes the child tiles under it, so small ones cost little (the 100 mm wafer at --scale
 * 300: 3.1 s of CPU at 16, 8.2 s at its own 512; 8 and 32 cost about what 16 does). A blur or
 * distance would read a halo of many small tiles for each sample (3 blurs of sigma 50: over
 * 60 s at 16 or 64, 18 s at the design's own). */
#define FAST_TILE 16

/* The fast overview: each output pixel is the mean (in double, in sample order) of the values
 * of TSR_PREVIEW_FAST_SAMPLES region pixels of its block (fast_sample), computed through the
 * engine's values path for those pixels alone. On the CPU a batch of rows of samples goes to
 * the workers as 1 x 1 root rects, so only the child tiles under the samples are computed. */
static tsr_status
preview_fast(tsr_engine *e, tsr_rect r, int64_t kx, int64_t ky, int64_t ow, int64_t oh,
             const tsr_output *o, uint8_t *img, size_t bps, _Atomic uint64_t *done,
             tsr_error *err)
{
    const int S = TSR_PREVIEW_FAST_SAMPLES;
    int64_t per = FAST_BATCH / S, npx = ow * oh; /* pixels a batch; ow * oh fit the image */
    tsr_rect *rects = malloc((size_t)FAST_BATCH * sizeof *rects);
    float *v = malloc((size_t)FAST_BATCH * sizeof *v);
    tsr_status st = TSR_OK;
    if (!rects || !v) {
        st = tsr_fail(err, TSR_ENOMEM, "out of memory (preview samples)");
        goto done;
    }
    for (int64_t p0 = 0; p0 < npx && st == TSR_OK; p0 += per) {
        int64_t np = npx - p0 < per ? npx - p0 : per;
        size_t n = 0;
        for (int64_t p = p0; p < p0 + np; p++)
            for (int s = 0; s < S; s++)
                rects[n++] = fast_sample(r, kx, ky, ow, p % ow, p / ow, s);
        if (e->ops->samples) {
            st = e->ops->samples(e->bk, rects, n, v, done, err);
        } else { /* another backend: its values path, one sample at a time */
            for (size_t k = 0; k < n && st == TSR_OK; k++) {
                st = tsr_engine_render_rect(e, rects[k], &v[k], err);
                if (st == TSR_OK && done)
                    atomic_fetch_add_explicit(done, 1, memory_order_relaxed);
            }
        }
        for (int64_t q = 0; q < np && st == TSR_OK; q++) {
            double sum = 0.0;
            for (int s = 0; s < S; s++)
                sum += (double)v[q * S + s];
            put_sample(img, (size_t)(p0 + q), bps, tsr_convert_one(o, sum / S));
        }
    }
done:
    free(rects);
    free(v);
    return st;
}

int64_t
tsr_preview_fast_tile(const tsr_design *d)
{
    for (size_t i = 0; i < d->nnodes; i++)
        for (size_t k = 0; k < d->nodes[i]->nedges; k++) {
            if (tsr_trait_has(d->nodes[i]->edges[k].trait, TSR_CAP_NEIGHBOURS))
                return 0;
        }
    return FAST_TILE;
}

tsr_status
tsr_engine_preview_ex(tsr_engine *e, tsr_rect r, const tsr_preview_opts *po, const char *path,
                      tsr_error *err)
{
    int64_t k = po->scale;
    int depth = po->depth;
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
    if (e->opts.plan_only) /* its images and tables were never made */
        return tsr_fail(err, TSR_EINVAL, "this engine was made to plan only (plan_only)");
    tsr_output o = e->d->out;
    o.depth = depth;
    uint8_t *img = malloc((size_t)nimg);
    if (!img)
        return tsr_fail(err, TSR_ENOMEM, "out of memory (preview %lldx%lld)", (long long)ow,
                        (long long)oh);
    tsr_status st;
    if (po->fast)
        st = preview_fast(e, r, kx, ky, ow, oh, &o, img, bps, po->done, err);
    else
        st = preview_exact(e, r, kx, ky, ow, &o, img, bps, po->done, err);
    if (st == TSR_OK)
        st = tsr_png_write(path, ow, oh, depth, img, err);
    free(img);
    return st;
}

tsr_status
tsr_engine_preview(tsr_engine *e, tsr_rect r, int64_t scale, int depth, const char *path,
                   tsr_error *err)
{
    tsr_preview_opts o = {.scale = scale, .depth = depth};
    return tsr_engine_preview_ex(e, r, &o, path, err);
}

void
tsr_human_bytes(char *buf, size_t n, double bytes)
{
    const char *u[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (bytes >= 1024.0 && i < 5) {
        bytes /= 1024.0;
        i++;
    }
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", bytes, u[i]);
}

void
tsr_node_label(const tsr_node *n, char *buf, size_t size)
{
    const char *name = n->name;
    size_t len = strlen(name);
    /* an inline node is named by its key path: drop the ".node" every placement has */
    bool inline_node = strchr(name, '.') || strchr(name, '[');
    if (inline_node && len > 5 && strcmp(name + len - 5, ".node") == 0)
        len -= 5;
    const tsr_source *s = n->source;
    if (!inline_node || !s) {
        snprintf(buf, size, "%.*s", (int)len, name);
        return;
    }
    const char *kind = tsr_source_descs[s->kind].disc_value;
    char what[96];
    if (s->kind == TSR_SRC_CIRCLE)
        snprintf(what, sizeof what, "circle r=%g", s->radius);
    else if (s->kind == TSR_SRC_RECT)
        snprintf(what, sizeof what, "rect %gx%g", s->rect[2], s->rect[3]);
    else if (s->kind == TSR_SRC_ELLIPSE)
        snprintf(what, sizeof what, "ellipse %gx%g", s->radii[0], s->radii[1]);
    else
        snprintf(what, sizeof what, "%s", kind ? kind : "image");
    snprintf(buf, size, "%.*s (%s)", (int)len, name, what);
}

/* Legal designs that are almost certainly not what was meant: one line each. */
static size_t
print_warnings(const tsr_engine *e, FILE *f)
{
    const tsr_design *d = e->d;
    size_t nw = 0;
    char a[192], b[192];
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        tsr_node_label(n, a, sizeof a);
        const tsr_source *s = n->source;
        if (s && s->kind <= TSR_SRC_POLYGON && s->value == n->fill) {
            fprintf(f, "  warning: %s: its %s's value %g equals the node's fill: the shape "
                    "draws nothing visible\n", a, tsr_source_descs[s->kind].disc_value,
                    (double)s->value);
            nw++;
        }
        for (size_t k = 0; k < n->nedges; k++) {
            const tsr_edge *ed = &n->edges[k];
            const tsr_node *c = ed->child;
            tsr_node_label(c, b, sizeof b);
            if (strcmp(ed->trait->name, "pattern") == 0 &&
                (ed->offset[0] >= n->w || ed->offset[1] >= n->h ||
                 ed->offset[0] <= -c->w || ed->offset[1] <= -c->h)) {
                fprintf(f, "  warning: %s: pattern of %s at %lld,%lld lies wholly outside "
                        "its %lld x %lld parent: it draws nothing\n", a, b,
                        (long long)ed->offset[0], (long long)ed->offset[1], (long long)n->w,
                        (long long)n->h);
                nw++;
            }
            /* a repeat that adds or averages copies of a distance profile whose table does
             * not reach 0 at dmax: the floor covers every copy's whole square */
            if (strncmp(ed->trait->name, "repeat", 6) != 0)
                continue;
            const tsr_repeat_params *rp = ed->params;
            if (rp->disjoint || (rp->overlap != TSR_OVERLAP_ADD &&
                                 rp->overlap != TSR_OVERLAP_AVERAGE))
                continue;
            for (size_t j = 0; j < c->nedges; j++) {
                if (tsr_trait_id_of(c->edges[j].trait) != TSR_TRAIT_distance)
                    continue;
                const tsr_distance_params *dp = c->edges[j].params;
                float floor_v = tsr_distance_value(dp, (double)dp->dmax);
                if (floor_v == 0.0f)
                    continue;
                fprintf(f, "  warning: %s: %s copies of %s overlap, and its distance profile "
                        "is %g (not 0) at dmax: the floor covers each copy's whole square\n",
                        a, tsr_overlap_names[rp->overlap], b, (double)floor_v);
                nw++;
            }
        }
    }
    return nw;
}

void
tsr_engine_print_check(tsr_engine *e, FILE *f, bool tree)
{
    const tsr_design *d = e->d;
    const tsr_plan *p = &e->plan;
    uint64_t bytes = tsr_engine_stream_bytes(e);
    char a[32], b[32], c[32], dd[32], m[32], bu[32], sb[32];
    tsr_human_bytes(sb, sizeof sb, (double)bytes);
    /* the summary first: a design of thousands of nodes must not push it off the screen */
    fprintf(f, "design: %s, %lld x %lld px, %zu nodes, depth %lld, %s order\n",
            d->name ? d->name : d->path, (long long)d->root->w, (long long)d->root->h,
            d->nnodes, (long long)tsr_output_bits(&d->out),
            d->out.order == TSR_ORDER_SWATH ? "swath" : "raster");
    if (d->pixel_nm > 0) { /* docs/units.md: sizes in physical units beside the pixels */
        char pp[48], pw[48], ph[48];
        tsr_design_length_text(d, 1.0, pp, sizeof pp);
        tsr_design_length_text(d, (double)d->root->w, pw, sizeof pw);
        tsr_design_length_text(d, (double)d->root->h, ph, sizeof ph);
        fprintf(f, "pixel: %s; root %s x %s\n", pp, pw, ph);
    }
    if (d->out.bits) { /* docs/outputs.md */
        char dn[32];
        fprintf(f, "output: %d bit%s a pixel, dithered from 8-bit samples against %s; rows "
                "packed MSB-first, padded to whole bytes (%llu bytes a row%s); header "
                "version 2\n", d->out.bits, d->out.bits > 1 ? "s" : "",
                tsr_output_dither_name(&d->out, dn, sizeof dn),
                (unsigned long long)tsr_output_row_bytes(&d->out, tsr_band_width(d)),
                d->out.order == TSR_ORDER_SWATH ? " of a full swath" : "");
    }
    if (d->out.bidir || d->out.mirror_x || d->out.y_up) { /* docs/outputs.md §7 */
        static const char *const corner[] = {"top-left", "top-right", "bottom-left",
                                             "bottom-right"};
        fprintf(f, "stage: %s%s%s; the stream starts at the %s corner\n",
                d->out.bidir == 1 ? "every other row right to left"
                : d->out.bidir == 2 ? "every other swath's rows right to left" : "rows as ordered",
                d->out.mirror_x ? ", x mirrored (every row right to left)" : "",
                d->out.y_up ? ", y up" : "", corner[tsr_output_start(&d->out) & 3]);
    }
    fprintf(f, "stream: %llu bytes (%s); `tessera profile` measures the compute rate\n",
            (unsigned long long)bytes, sb);
    tsr_human_bytes(a, sizeof a, (double)p->bands);
    tsr_human_bytes(b, sizeof b, (double)p->per_thread);
    tsr_human_bytes(c, sizeof c, (double)p->fixed);
    tsr_human_bytes(dd, sizeof dd, (double)p->cache);
    tsr_human_bytes(m, sizeof m, (double)p->minimum);
    tsr_human_bytes(bu, sizeof bu, (double)p->budget);
    fprintf(f, "memory plan (--memory %s):\n", bu);
    fprintf(f, "  bands        %s (3 in flight, %lld rows each)\n", a, (long long)p->band_rows);
    fprintf(f, "  per thread   %s x %lld threads\n", b, (long long)p->threads);
    fprintf(f, "  fixed        %s (tables, images, sink buffers)\n", c);
    fprintf(f, "  tile cache   %s\n", dd);
    fprintf(f, "  minimum      %s (the smallest --memory that runs)\n", m);
    fprintf(f, "warnings:\n");
    size_t nw = print_warnings(e, f) + tsr_plan_print_warnings(e, f);
    if (!nw)
        fprintf(f, "  none\n");
    if (!tree) {
        fprintf(f, "(--tree prints the nodes and the design with every default)\n");
        return;
    }
    fprintf(f, "\nnodes (children first):\n");
    for (size_t i = 0; i < d->nnodes; i++) {
        const tsr_node *n = d->nodes[i];
        const tsr_grid *g = &e->grid[n->id];
        char lb[192];
        tsr_node_label(n, lb, sizeof lb);
        tsr_human_bytes(b, sizeof b, (double)n->w * (double)n->h * 4.0);
        fprintf(f, "  %-32s %lld x %lld px, tile %lld, %lld x %lld tiles, %s as float32", lb,
                (long long)n->w, (long long)n->h, (long long)g->t, (long long)g->nx,
                (long long)g->ny, b);
        if (d->pixel_nm > 0) {
            char pw[48], ph[48];
            tsr_design_length_text(d, (double)n->w, pw, sizeof pw);
            tsr_design_length_text(d, (double)n->h, ph, sizeof ph);
            fprintf(f, "; %s x %s", pw, ph);
        }
        int64_t per[2];
        tsr_rect in;
        if (tsr_engine_period(e, n, per, &in) && in.w == n->w && in.h == n->h)
            fprintf(f, "; periodic %lld x %lld: one period computed, the rest copied%s",
                    (long long)per[0], (long long)per[1],
                    n == d->root ? " as output samples" : "");
        else if (tsr_engine_period(e, n, per, &in))
            fprintf(f, "; periodic %lld x %lld inside [%lld, %lld, %lld, %lld]: one period "
                    "computed, the inside copied, the border computed",
                    (long long)per[0], (long long)per[1], (long long)in.x, (long long)in.y,
                    (long long)in.w, (long long)in.h);
        if (tsr_engine_uncached(e, n))
            fprintf(f, "; uncached: computed where its one pattern parent reads it");
        const char *cls = tsr_engine_node_class(e, n);
        if (cls)
            fprintf(f, "; gpu: %s", cls);
        char why[160];
        if (!tsr_gpu_node_why(n, why, sizeof why)) /* any backend: what --backend gpu would do */
            fprintf(f, "; computed on the host under the GPU backend (%s)", why);
        fputc('\n', f);
    }
    fputc('\n', f);
    tsr_design_dump(d, f);
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
    size_t n = strlen(s);
    if (n >= 2 && strcmp(s + n - 2, "/s") == 0)
        return false; /* a rate is not a size: --memory 64MB/s is a typo */
    return tsr_parse_rate(s, out);
}

bool
tsr_parse_rate(const char *s, double *out)
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
