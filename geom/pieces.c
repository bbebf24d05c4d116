/* geom: the edges of a large rect made in pieces on a team. Why: the GPU draws a chunk's
 * coverage in one launch, but the union per block before it is the host's, and on one thread it
 * held layouts and vector sources at 0.3-5 % of the link (docs/performance.md). Pieces are
 * aligned to the plane's blocks, so each block is built by exactly one piece with the polygons
 * that reach it, and the joined lists are those of one build over the whole rect. */
#include "geom/geom_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define B TSR_GEOM_BLOCK

typedef struct pieces {
    tsr_rect r;
    int64_t px0, py0;   /* the plane's block column and row of the first piece */
    size_t ncol;        /* pieces across */
    size_t nsets;
    tsr_geom_make_fn make;
    void *mctx;
    tsr_geom_edges *e;  /* [piece * nsets + set] */
    tsr_geom_scratch **ws; /* [threads] each worker's build buffers, made on its first piece */
    tsr_geom_polys *sets;  /* [threads * nsets] each worker's polygon sets, emptied per piece */
    tsr_error *errs;    /* [threads] each worker's first failure */
    size_t *errk;       /* [threads] the piece it failed on (SIZE_MAX: none) */
    _Atomic int failed; /* once set, the pieces not yet begun are skipped: a worker fails once */
} pieces;

/* Piece k's rect: r cut to its block row and its TSR_GEOM_PIECE_BLOCKS blocks. */
static tsr_rect
piece_rect(const pieces *p, size_t k)
{
    int64_t gy = p->py0 + (int64_t)(k / p->ncol);
    int64_t gx = p->px0 + (int64_t)(k % p->ncol) * TSR_GEOM_PIECE_BLOCKS;
    tsr_rect cell = tsr_rect_make(gx * B, gy * B, TSR_GEOM_PIECE_BLOCKS * B, B);
    return tsr_rect_intersect(cell, p->r);
}

static void
one_piece(void *ctx, int w, size_t k)
{
    pieces *p = ctx;
    if (atomic_load(&p->failed))
        return;
    tsr_error *err = &p->errs[w];
    tsr_rect pr = piece_rect(p, k);
    /* the worker's own sets and build buffers, reused from piece to piece: many threads
     * allocating per piece waited on malloc's one heap (docs/performance.md) */
    tsr_geom_polys *sets = p->sets + (size_t)w * p->nsets;
    for (size_t s = 0; s < p->nsets; s++)
        tsr_geom_polys_clear(&sets[s]);
    if (!p->ws[w])
        p->ws[w] = tsr_geom_scratch_new();
    tsr_status st = p->ws[w] ? p->make(p->mctx, pr, sets, err)
                             : tsr_fail(err, TSR_ENOMEM, "geom: no memory for a piece's buffers");
    /* the piece's blocks over the rect from the piece's corner to r's right and bottom sides:
     * an edge on the piece's right side adds to the columns beyond it */
    tsr_rect target = tsr_rect_make(pr.x, pr.y, p->r.x + p->r.w - pr.x, pr.h);
    for (size_t s = 0; s < p->nsets && st == TSR_OK; s++)
        st = tsr_geom_edges_build_in(&sets[s], target, pr, &p->e[k * p->nsets + s], p->ws[w],
                                     err);
    if (st != TSR_OK) {
        p->errk[w] = k;
        atomic_store(&p->failed, 1);
    }
}

/* Join the pieces' lists of set s into out, moved from piece to rect coordinates. */
static tsr_status
join(const pieces *p, size_t npieces, size_t s, tsr_geom_edges *out, tsr_error *err)
{
    size_t n = 0;
    for (size_t k = 0; k < npieces; k++)
        n += p->e[k * p->nsets + s].n;
    tsr_geom_edges_free(out);
    out->r = p->r;
    out->e = malloc((n ? n : 1) * sizeof *out->e);
    out->first = malloc((n + 1) * sizeof *out->first);
    if (!out->e || !out->first) {
        tsr_geom_edges_free(out);
        return tsr_fail(err, TSR_ENOMEM, "geom: no memory for %zu edges", n);
    }
    out->cap = n ? n : 1;
    out->first[0] = 0;
    for (size_t k = 0; k < npieces; k++) {
        const tsr_geom_edges *e = &p->e[k * p->nsets + s];
        tsr_rect pr = piece_rect(p, k);
        int64_t dx = pr.x - p->r.x, dy = pr.y - p->r.y;
        uint64_t base = out->first[out->n];
        for (size_t i = 0; i < e->n; i++) {
            tsr_geom_edge g = e->e[i];
            g.bx += dx, g.by += dy;
            out->e[out->n + i] = g;
            out->first[out->n + i + 1] = base + e->first[i + 1];
        }
        out->n += e->n;
    }
    return TSR_OK;
}

static tsr_status
run_inline(void *team, size_t n, tsr_geom_item_fn fn, void *fctx, tsr_error *err)
{
    (void)team, (void)err;
    for (size_t k = 0; k < n; k++)
        fn(fctx, 0, k);
    return TSR_OK;
}

tsr_status
tsr_geom_edges_pieces(tsr_rect r, size_t nsets, tsr_geom_make_fn make, void *mctx,
                      const tsr_geom_team *team, tsr_geom_edges *out, tsr_error *err)
{
    for (size_t s = 0; s < nsets; s++) {
        tsr_geom_edges_free(&out[s]);
        out[s].r = r;
        if (!(out[s].first = calloc(1, sizeof *out[s].first)))
            return tsr_fail(err, TSR_ENOMEM, "geom: no memory for an edge list");
    }
    if (nsets == 0 || tsr_rect_empty(r))
        return TSR_OK;
    /* the plane's blocks that r meets (tsr_geom_edges_build checks r's range itself: a rect
     * beyond +-2^37 px fails in the first piece's build) */
    int64_t gx0 = tsr_floor_div(r.x, B), gx1 = tsr_floor_div(r.x + r.w - 1, B);
    int64_t gy0 = tsr_floor_div(r.y, B), gy1 = tsr_floor_div(r.y + r.h - 1, B);
    uint64_t ncol = (uint64_t)(gx1 - gx0) / TSR_GEOM_PIECE_BLOCKS + 1;
    uint64_t nrow = (uint64_t)(gy1 - gy0) + 1, np;
    if (__builtin_mul_overflow(ncol, nrow, &np) || np > SIZE_MAX / (nsets * sizeof *out))
        return tsr_fail(err, TSR_ENOMEM, "geom: %llu x %llu pieces are too many",
                        (unsigned long long)ncol, (unsigned long long)nrow);
    int threads = team && team->threads > 0 ? team->threads : 1;
    pieces p = {r, gx0, gy0, (size_t)ncol, nsets, make, mctx,
                calloc((size_t)np * nsets, sizeof *p.e),
                calloc((size_t)threads, sizeof *p.ws),
                calloc((size_t)threads * nsets, sizeof *p.sets),
                calloc((size_t)threads, sizeof *p.errs),
                malloc((size_t)threads * sizeof *p.errk), 0};
    tsr_status st = TSR_OK;
    if (!p.e || !p.ws || !p.sets || !p.errs || !p.errk)
        st = tsr_fail(err, TSR_ENOMEM, "geom: no memory for %llu pieces", (unsigned long long)np);
    for (int w = 0; st == TSR_OK && w < threads; w++)
        p.errk[w] = SIZE_MAX;
    if (st == TSR_OK)
        st = team ? team->run(team->team, (size_t)np, one_piece, &p, err)
                  : run_inline(NULL, (size_t)np, one_piece, &p, err);
    if (st == TSR_OK && atomic_load(&p.failed)) {
        /* the error of the lowest failed piece among the workers' first failures */
        int best = -1;
        for (int w = 0; w < threads; w++)
            if (p.errk[w] != SIZE_MAX && (best < 0 || p.errk[w] < p.errk[best]))
                best = w;
        if (err)
            *err = p.errs[best];
        st = p.errs[best].status;
    }
    for (size_t s = 0; s < nsets && st == TSR_OK; s++)
        st = join(&p, (size_t)np, s, &out[s], err);
    for (size_t i = 0; p.e && i < (size_t)np * nsets; i++)
        tsr_geom_edges_free(&p.e[i]);
    free(p.e);
    for (int w = 0; p.ws && w < threads; w++)
        tsr_geom_scratch_free(p.ws[w]);
    for (size_t i = 0; p.sets && i < (size_t)threads * nsets; i++)
        tsr_geom_polys_free(&p.sets[i]);
    free(p.ws);
    free(p.sets);
    free(p.errs);
    free(p.errk);
    if (st != TSR_OK)
        for (size_t s = 0; s < nsets; s++) {
            tsr_geom_edges_free(&out[s]);
            out[s].r = r;
        }
    return st;
}
