/* tessera preview and tessera check's printout, and size parsing. */
#include "designs/designs.h"
#include "engine/engine_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    int64_t ow = (r.w + k - 1) / k, oh = (r.h + k - 1) / k;
    tsr_output o = e->d->out;
    o.depth = depth;
    int64_t t = e->tile[root->id];
    /* strips of whole block rows, chunks of whole block columns: memory stays bounded */
    int64_t srows = k * (t / k > 1 ? t / k : 1), scols = k * (4096 / k > 1 ? 4096 / k : 1);
    size_t bps = depth == 16 ? 2 : 1;
    uint8_t *img = malloc((size_t)ow * (size_t)oh * bps);
    float *px = malloc((size_t)srows * (size_t)scols * sizeof(float));
    tsr_status st = TSR_OK;
    if (!img || !px) {
        st = tsr_fail(err, TSR_ENOMEM, "out of memory (preview %lldx%lld)", (long long)ow, (long long)oh);
        goto done;
    }
    for (int64_t sy = 0; sy < r.h && st == TSR_OK; sy += srows) {
        int64_t sh = (r.h - sy) < srows ? (r.h - sy) : srows;
        /* block sums, row-major within each block: rows in order, each row left to right */
        for (int64_t sx = 0; sx < r.w && st == TSR_OK; sx += scols) {
            int64_t cw = (r.w - sx) < scols ? (r.w - sx) : scols;
            st = tsr_engine_render_rect(e, tsr_rect_make(r.x + sx, r.y + sy, cw, sh), px, err);
            if (st != TSR_OK)
                break;
            for (int64_t by = 0; by < sh; by += k) {
                int64_t bh = (sh - by) < k ? (sh - by) : k;
                for (int64_t bx = 0; bx < cw; bx += k) {
                    int64_t bw = (cw - bx) < k ? (cw - bx) : k;
                    double s = 0.0;
                    for (int64_t y = 0; y < bh; y++) {
                        const float *row = px + (by + y) * cw + bx;
                        for (int64_t x = 0; x < bw; x++)
                            s += (double)row[x];
                    }
                    uint32_t v = tsr_convert_one(&o, s / (double)(bw * bh));
                    size_t at = (size_t)((sy + by) / k) * (size_t)ow + (size_t)((sx + bx) / k);
                    if (bps == 1)
                        img[at] = (uint8_t)v;
                    else
                        ((uint16_t *)img)[at] = (uint16_t)v;
                }
            }
        }
    }
    if (st == TSR_OK)
        st = tsr_png_write(path, ow, oh, depth, img, err);
done:
    free(img);
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

bool
tsr_parse_size(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0)
        return false;
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
    if (*end)
        return false;
    *out = v * mul;
    return true;
}
