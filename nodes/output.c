/* nodes: the output conversion as a threshold table (nodes.h, tsr_sample_table). */
#include "nodes/nodes.h"
#include "nodes/pointwise.h"
#include "nodes/dither.h"
#include "nodes/dither_math.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The conversion of one value, as every backend does it. */
static uint32_t
sample_of(const tsr_output *o, int dir, float w)
{
    float v = dir < 0 ? -w : w; /* negation is exact */
    return tsr_pw_sample(tsr_pw_to_unit(o->range[0], o->range[1],
                                        (const double (*)[2])o->calibration.p,
                                        (int64_t)o->calibration.n, (double)v),
                         o->depth == 16 ? 65535.0 : 255.0);
}

/* Floats in value order as unsigned keys (-inf lowest, +inf highest, NaNs outside). */
static uint32_t
key_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b & 0x80000000u ? ~b : b | 0x80000000u;
}

static float
float_of(uint32_t k)
{
    uint32_t b = k & 0x80000000u ? k & 0x7fffffffu : ~k;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* The calibration's direction in t: +1 non-decreasing, -1 non-increasing, 0 neither (or a
 * seam where rounding steps back). Within a segment c_i + (c_{i+1} - c_i) * ((t - t_i) /
 * (t_{i+1} - t_i)) is monotone (every operation is, the factor has one sign); across a seam
 * the segment's value at the last double below t_{i+1} must not pass the next one's start
 * (c_{i+1} exactly, or c_n at t = 1). */
static int
calibration_dir(const tsr_output *o)
{
    const double (*c)[2] = (const double (*)[2])o->calibration.p;
    size_t n = o->calibration.n;
    if (n < 2)
        return 1;
    bool up = true, down = true;
    for (size_t i = 0; i + 1 < n; i++) {
        up = up && c[i + 1][1] >= c[i][1];
        down = down && c[i + 1][1] <= c[i][1];
    }
    if (!up && !down)
        return 0;
    for (size_t i = 0; i + 1 < n; i++) {
        double t0 = c[i][0], t1 = c[i + 1][0], tb = nextafter(t1, t0);
        double last = c[i][1] + (c[i + 1][1] - c[i][1]) * ((tb - t0) / (t1 - t0));
        if (up ? last > c[i + 1][1] : last < c[i + 1][1])
            return 0;
    }
    return up ? 1 : -1;
}

tsr_status
tsr_sample_table_make(const tsr_output *o, tsr_sample_table *t, tsr_error *err)
{
    memset(t, 0, sizeof *t);
    int cd = calibration_dir(o);
    if (cd == 0)
        return TSR_OK;
    t->dir = (o->range[1] > o->range[0] ? 1 : -1) * cd;
    t->smin = sample_of(o, t->dir, -INFINITY);
    t->smax = sample_of(o, t->dir, INFINITY);
    if (t->smax < t->smin) { /* cannot be, given the checks above; no table then */
        t->dir = 0;
        return TSR_OK;
    }
    size_t n = t->smax - t->smin;
    t->thr = malloc((n ? n : 1) * sizeof *t->thr);
    if (!t->thr) {
        t->dir = 0;
        return tsr_fail(err, TSR_ENOMEM, "out of memory (sample table)");
    }
    /* the least key whose sample reaches s, searched above the last one found */
    uint32_t lo = key_of(-INFINITY), top = key_of(INFINITY);
    for (uint32_t s = t->smin + 1; s <= t->smax; s++) {
        uint32_t a = lo, b = top; /* sample(float_of(b)) >= s */
        while (a < b) {
            uint32_t m = a + (b - a) / 2;
            if (sample_of(o, t->dir, float_of(m)) >= s)
                b = m;
            else
                a = m + 1;
        }
        t->thr[s - t->smin - 1] = float_of(a);
        lo = a;
    }
    return TSR_OK;
}

void
tsr_sample_table_free(tsr_sample_table *t)
{
    free(t->thr);
    memset(t, 0, sizeof *t);
}

int
tsr_output_bits(const tsr_output *o)
{
    return o->bits ? o->bits : (int)o->depth;
}

uint64_t
tsr_output_row_bytes(const tsr_output *o, int64_t w)
{
    return ((uint64_t)w * (uint64_t)tsr_output_bits(o) + 7u) / 8u;
}

const char *
tsr_output_dither_name(const tsr_output *o, char *buf, size_t n)
{
    if (!o->bits)
        snprintf(buf, n, "%s", "");
    else if (o->dither == TSR_DITHER_THRESHOLD)
        snprintf(buf, n, "threshold");
    else
        snprintf(buf, n, "%s%d", o->dither == TSR_DITHER_BAYER ? "bayer" : "blue",
                 o->dither_size);
    return buf;
}

int
tsr_output_start(const tsr_output *o)
{
    /* tsr_corner: bit 0 right, bit 1 bottom */
    return o->start ^ (o->mirror_x ? 1 : 0) ^ (o->y_up ? 2 : 0);
}

bool
tsr_output_reversed(const tsr_output *o, int64_t k, int64_t i)
{
    bool r = o->mirror_x;
    if (o->bidir == 1 && (i & 1))
        r = !r;
    if (o->bidir == 2 && (k & 1))
        r = !r;
    return r;
}

/* A packed byte's pixels in the other order (bits 1, 2 or 4 a pixel). */
static uint8_t
reverse_pixels(uint8_t b, int bits)
{
    if (bits == 4)
        return (uint8_t)(b >> 4 | b << 4);
    b = (uint8_t)((b & 0xf0) >> 4 | (b & 0x0f) << 4);
    b = (uint8_t)((b & 0xcc) >> 2 | (b & 0x33) << 2);
    if (bits == 1)
        b = (uint8_t)((b & 0xaa) >> 1 | (b & 0x55) << 1);
    return b;
}

/* One row of a band: its samples reversed in place when `rev` (so the row runs right to left),
 * then, at depth 1, 2, 4, dithered at its pixels' own root columns and packed at `out`. A
 * reversed packed row is dithered forward (the fast path) and its packed pixels then reversed:
 * the bytes in the other order, each byte's pixels too, and the row shifted back by its
 * padding, so pixel i is column x + w - 1 - i with that column's threshold. (Dithering it pixel
 * by pixel ran at 16-20 MB/s of packed output on this machine; docs/performance.md.) */
tsr_status
tsr_output_row(const tsr_output *o, const tsr_dither *d, uint8_t *samples, int64_t x, int64_t w,
               int64_t y, bool rev, uint8_t *out, tsr_error *err)
{
    size_t bps = o->depth == 16 ? 2 : 1;
    if (!o->bits) {
        if (rev)
            for (int64_t a = 0, b = w - 1; a < b; a++, b--)
                for (size_t j = 0; j < bps; j++) {
                    uint8_t t = samples[(size_t)a * bps + j];
                    samples[(size_t)a * bps + j] = samples[(size_t)b * bps + j];
                    samples[(size_t)b * bps + j] = t;
                }
        return TSR_OK;
    }
    tsr_status st = tsr_dither_piece(d, samples, (int)o->depth, x, (size_t)w, y, o->bits, out, err);
    if (st != TSR_OK || !rev)
        return st;
    size_t nb = (size_t)tsr_output_row_bytes(o, w);
    int pad = (int)(nb * 8 - (uint64_t)w * (uint64_t)o->bits); /* 0 .. 7 padding bits */
    for (size_t a = 0, b = nb - 1; a < b; a++, b--) {
        uint8_t t = reverse_pixels(out[a], o->bits);
        out[a] = reverse_pixels(out[b], o->bits);
        out[b] = t;
    }
    if (nb % 2)
        out[nb / 2] = reverse_pixels(out[nb / 2], o->bits);
    if (pad)
        for (size_t i = 0; i < nb; i++)
            out[i] = (uint8_t)(out[i] << pad | (i + 1 < nb ? out[i + 1] >> (8 - pad) : 0));
    return TSR_OK;
}

/* ---- the stage's overlap and overscan (docs/outputs.md §8) ------------------------------ */

uint32_t
tsr_feather_weight(int feather, int64_t len, int64_t j)
{
    /* f(t) at the overlap column's centre, t = (j + 1/2) / len: linear t, cosine
     * (1 - cos(pi t)) / 2; both have f(1 - t) = 1 - f(t), so the two swaths' weights of a column
     * mirror each other. Rounded once to 1/65536: the weights are a table, the samples are then
     * split in integers (tsr_feather_row), so their sum is the sample exactly. */
    double t = ((double)j + 0.5) / (double)len;
    double f = feather == 1 ? 0.5 - 0.5 * cos(3.14159265358979323846 * t) : t;
    double w = floor(f * 65536.0 + 0.5);
    return w < 0 ? 0u : w > 65536.0 ? 65536u : (uint32_t)w;
}

/* The later swath's share of sample s at weight w: round(s w / 65536). */
static uint32_t
share(uint32_t s, uint32_t w)
{
    return (uint32_t)(((uint64_t)s * w + 32768u) >> 16);
}

void
tsr_feather_row(uint8_t *samples, int bps, int64_t w, int64_t lead, int64_t trail,
                bool lead_left, const uint32_t *wt_lead, const uint32_t *wt_trail)
{
    /* column c of the row, overlap index j counted from the earlier swath's side */
    for (int pass = 0; pass < 2; pass++) {
        int64_t len = pass == 0 ? lead : trail;
        const uint32_t *wt = pass == 0 ? wt_lead : wt_trail;
        for (int64_t j = 0; j < len; j++) {
            int64_t c;
            if (pass == 0) /* this swath is the later one: its first columns */
                c = lead_left ? j : w - 1 - j;
            else           /* the earlier one: the columns after its own */
                c = lead_left ? w - len + j : len - 1 - j;
            uint8_t *p = samples + (size_t)c * (size_t)bps;
            uint32_t s = bps == 1 ? p[0] : (uint32_t)p[0] | (uint32_t)p[1] << 8;
            uint32_t v = pass == 0 ? share(s, wt[j]) : s - share(s, wt[j]);
            p[0] = (uint8_t)v;
            if (bps == 2)
                p[1] = (uint8_t)(v >> 8);
        }
    }
}

void
tsr_output_pad(const tsr_output *o, const uint8_t *data, int64_t w, uint8_t *dst)
{
    int64_t n = o->overscan;
    uint32_t v = (uint32_t)o->overscan_value;
    if (!o->bits) {
        size_t bps = o->depth == 16 ? 2 : 1;
        memmove(dst + (size_t)n * bps, data, (size_t)w * bps);
        for (int64_t side = 0; side < 2; side++) {
            uint8_t *p = dst + (size_t)(side ? n + w : 0) * bps;
            if (bps == 1) {
                memset(p, (int)v, (size_t)n);
            } else {
                for (int64_t i = 0; i < n; i++) {
                    p[2 * i] = (uint8_t)v;
                    p[2 * i + 1] = (uint8_t)(v >> 8);
                }
            }
        }
        return;
    }
    /* packed: the data's bits shifted by the padding's, whose pixels hold level v */
    int bits = o->bits;
    uint64_t px = (uint64_t)(w + 2 * n);
    size_t nb = (size_t)((px * (uint64_t)bits + 7) / 8), db = (size_t)tsr_output_row_bytes(o, w);
    uint64_t off = (uint64_t)n * (uint64_t)bits;
    size_t bs = (size_t)(off / 8);
    int sh = (int)(off % 8);
    memset(dst, 0, nb);
    for (size_t i = 0; i < db; i++) {
        dst[bs + i] |= (uint8_t)(data[i] >> sh);
        if (sh && bs + i + 1 < nb)
            dst[bs + i + 1] |= (uint8_t)(data[i] << (8 - sh));
    }
    if (v)
        for (int64_t i = 0; i < n; i++)
            for (int side = 0; side < 2; side++) {
                int64_t q = side ? n + w + i : i;
                dst[(size_t)((uint64_t)q * (uint64_t)bits / 8)] |=
                    (uint8_t)(v << tsr_dm_shift(q, bits));
            }
}
