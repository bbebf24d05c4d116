/* A periodic root, on the CPU's team (cpu/cpu.h).
 *
 * When the root itself repeats (engine/plan.c finds its period Px x Py: a motif repeated over
 * the whole root, or a lattice through distance and blur inside its border), every output
 * sample inside that interior is the converted value of one pixel of its period, and the
 * conversion is per pixel. So the period is computed and converted once, and the interior of
 * every band is filled by copying sample rows: no per-band tile computation, float copy or
 * conversion at all (the bits are the same: tsr_convert of a value does not depend on its
 * neighbours). Only the border, if any, is computed (cpu/backend.c; the GPU fills the interior on
 * the device from the same converted period). */
#include "cpu/cpu_int.h"

#include <stdlib.h>
#include <string.h>

tsr_status
tsr_cpu_root_period(tsr_cpu *cp, const uint8_t **out, tsr_error *err)
{
    if (cp->root_period) {
        *out = cp->root_period;
        return TSR_OK;
    }
    const tsr_node *root = cp->ctx->d->root;
    tsr_rect pr = tsr_period_rect(cp->ctx, root);
    int64_t pw = pr.w, ph = pr.h, bps = cp->ctx->d->out.depth / 8;
    tsr_tile *t = tsr_tile_new(pr);
    uint8_t *s = malloc((size_t)(pw * ph * bps));
    tsr_status st = TSR_OK;
    if (!t || !s)
        st = tsr_fail(err, TSR_ENOMEM, "out of memory (period of %s)", root->name);
    else
        st = tsr_cpu_compute_direct(cp, root, t->r, t->px, err);
    if (st == TSR_OK)
        for (int64_t y = 0; y < ph; y++)
            tsr_convert(&cp->ctx->d->out, t->px + y * pw, (size_t)pw, s + y * pw * bps);
    tsr_tile_free(t);
    if (st != TSR_OK) {
        free(s);
        return st;
    }
    cp->root_period = s;
    *out = s;
    return TSR_OK;
}

void
tsr_period_row(const uint8_t *src, size_t prow, size_t x0b, uint8_t *dst, size_t row)
{
    size_t first = prow - x0b, done;
    if (first > row)
        first = row;
    memcpy(dst, src + x0b, first);
    done = first;
    if (done < row) {
        size_t more = prow - first < row - done ? prow - first : row - done;
        memcpy(dst + done, src, more);
        done += more;
    }
    while (done < row) {
        size_t n = done < row - done ? done : row - done;
        memcpy(dst + done, dst, n);
        done += n;
    }
}

/* Rect r of band j0 (inside the root's interior), on all the engine's threads: its first Py
 * rows from the period, then every later row a copy of the row Py above it in root order (the
 * same bytes). Rows are independent within each pass, so one memory-bound core does not set
 * the rate. */
typedef struct periodic_fill {
    const tsr_band_job *j;
    int64_t b0, b1;     /* the band rows [b0, b1) that r covers */
    int64_t ph, py0, lead;
    size_t xoff, len;   /* r's bytes within a band row */
    size_t x0b, row, prow;
    const uint8_t *period;
} periodic_fill;

/* rows of a pass go to the team in blocks of this many, so claiming one costs little */
#define FILL_ROWS 16

/* band row b's bytes for r */
static uint8_t *
fill_at(const periodic_fill *f, int64_t b)
{
    const tsr_band_job *j0 = f->j;
    return j0->dst + (size_t)(j0->up ? j0->h - 1 - b : b) * f->row + f->xoff;
}

static void
fill_lead(void *ctx, int worker, size_t k)
{
    (void)worker;
    const periodic_fill *f = ctx;
    int64_t end = f->b0 + f->lead;
    for (int64_t b = f->b0 + (int64_t)k * FILL_ROWS; b < end && b < f->b0 + (int64_t)(k + 1) * FILL_ROWS; b++) {
        int64_t j = b - f->b0;
        int64_t py = f->py0 + j < f->ph ? f->py0 + j : f->py0 + j - f->ph;
        tsr_period_row(f->period + (size_t)py * f->prow, f->prow, f->x0b, fill_at(f, b), f->len);
    }
}

static void
fill_rest(void *ctx, int worker, size_t k)
{
    (void)worker;
    const periodic_fill *f = ctx;
    int64_t from = f->b0 + f->lead;
    for (int64_t b = from + (int64_t)k * FILL_ROWS; b < f->b1 && b < from + (int64_t)(k + 1) * FILL_ROWS; b++) {
        int64_t same = f->b0 + (b - f->b0) % f->ph; /* a row among the first Py, same phase */
        memcpy(fill_at(f, b), fill_at(f, same), f->len);
    }
}

static void
fill_periodic(tsr_cpu *cp, const uint8_t *period, const tsr_band_job *j0, tsr_rect r)
{
    int64_t bps = j0->bps;
    const tsr_inner *per = &cp->ctx->inner[cp->ctx->d->root->id];
    int64_t pw = per->p[0], ph = per->p[1], h = r.h;
    periodic_fill f = {j0,
                       r.y - j0->y,
                       r.y - j0->y + r.h,
                       ph,
                       tsr_floor_mod(r.y - per->in.y, ph),
                       h < ph ? h : ph,
                       (size_t)((r.x - j0->x) * bps),
                       (size_t)(r.w * bps),
                       (size_t)(tsr_floor_mod(r.x - per->in.x, pw) * bps),
                       (size_t)(j0->w * bps),
                       (size_t)(pw * bps),
                       period};
    tsr_pool_run(cp->pool, (size_t)((f.lead + FILL_ROWS - 1) / FILL_ROWS), fill_lead, &f);
    tsr_pool_run(cp->pool, (size_t)((h - f.lead + FILL_ROWS - 1) / FILL_ROWS), fill_rest, &f);
}

tsr_status
tsr_cpu_fill_inner(tsr_cpu *cp, const tsr_band_job *j, tsr_rect rest[4], size_t *nrest,
                      tsr_error *err)
{
    tsr_rect band = tsr_rect_make(j->x, j->y, j->w, j->h);
    const tsr_node *root = cp->ctx->d->root;
    tsr_rect in = tsr_repeats(cp->ctx, root) ? tsr_rect_intersect(band, cp->ctx->inner[root->id].in)
                                       : tsr_rect_make(0, 0, 0, 0);
    *nrest = tsr_rect_minus(band, in, rest);
    if (tsr_rect_empty(in))
        return TSR_OK;
    const uint8_t *period = NULL;
    tsr_status st = tsr_cpu_root_period(cp, &period, err); /* counts its own compute time */
    if (st == TSR_OK)
        st = tsr_cpu_team(cp, err);
    if (st != TSR_OK)
        return st;
    uint64_t t0 = tsr_now_ns();
    fill_periodic(cp, period, j, in);
    /* the row copies are the root's own time too (profile's per-node seconds) */
    atomic_fetch_add(&cp->node_ns[cp->ctx->d->root->id], tsr_now_ns() - t0);
    return TSR_OK;
}

tsr_status
tsr_cpu_fill_periodic(tsr_cpu *cp, const tsr_band_job *j, bool *done, tsr_error *err)
{
    *done = tsr_periodic_whole(cp->ctx, cp->ctx->d->root);
    if (!*done)
        return TSR_OK;
    tsr_rect rest[4];
    size_t n;
    return tsr_cpu_fill_inner(cp, j, rest, &n, err); /* a whole root leaves no rest */
}

