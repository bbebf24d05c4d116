/* repeat and repeat-vector: copies of the child at offset + i*u + j*v for all integers i, j
 * (DESIGN.md §2.3). `repeat` is the same trait with u = [px, 0], v = [0, py].
 *
 * Work is per parent rect: only the copies that touch it are enumerated (a 2e6 px root with a
 * 50 px period has 1.6e9 copies; a 512 px tile meets a few dozen). Lattice coordinates are
 * found with exact 128-bit integer arithmetic, never floats. */
#include "nodes/nodes.h"
#include "nodes/params.h"

#include <stdlib.h>
#include <string.h>

const char *const tsr_overlap_names[] = {"average", "max", "add", "first", NULL};

#define OFF(f) offsetof(tsr_repeat_params, f)
#define COORD_RANGE TSR_PF_RANGE, -(double)TSR_COORD_MAX, (double)TSR_COORD_MAX
#define OVERLAP {"overlap", TSR_P_ENUM, OFF(overlap), 0, 0, 0, 0, tsr_overlap_names, \
                 "how overlapping copies combine: average | max | add | first"}
#define REGION {"region", TSR_P_INT4, OFF(region), COORD_RANGE, 0, NULL, \
                "[x, y, w, h] in parent px the layer is clipped to, default the whole parent"}

static const tsr_param repeat_params[] = {
    {"period", TSR_P_INT2, OFF(period), TSR_PF_RANGE, 1, (double)TSR_COORD_MAX, 0, NULL,
     "[px, py], default the child size"},
    OVERLAP,
    REGION,
};

static const tsr_param vector_params[] = {
    {"u", TSR_P_INT2, OFF(u), TSR_PF_REQUIRED | COORD_RANGE, 0, NULL, "lattice vector [ux, uy], px"},
    {"v", TSR_P_INT2, OFF(v), TSR_PF_REQUIRED | COORD_RANGE, 0, NULL, "lattice vector [vx, vy], px"},
    OVERLAP,
    REGION,
};

static void
repeat_defaults(void *p)
{
    tsr_repeat_params *r = p;
    memset(r, 0, sizeof *r);
    r->overlap = TSR_OVERLAP_FIRST;
}

static void
vector_defaults(void *p)
{
    tsr_repeat_params *r = p;
    memset(r, 0, sizeof *r);
    r->overlap = TSR_OVERLAP_AVERAGE;
}

static tsr_status
check_region(const tsr_repeat_params *r, tsr_check *c)
{
    bool given = r->region[0] || r->region[1] || r->region[2] || r->region[3];
    if (given && (r->region[2] <= 0 || r->region[3] <= 0))
        return tsr_check_failf(c, "region", "w and h must be > 0");
    return TSR_OK;
}

static tsr_status
repeat_check(const tsr_edge *e, tsr_check *c)
{
    return check_region(e->params, c);
}

static tsr_status
vector_check(const tsr_edge *e, tsr_check *c)
{
    const tsr_repeat_params *r = e->params;
    __int128 det = (__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0];
    if (det == 0)
        return tsr_check_failf(c, "v", "u and v are colinear (u = [%lld, %lld], v = [%lld, %lld])",
                               (long long)r->u[0], (long long)r->u[1], (long long)r->v[0],
                               (long long)r->v[1]);
    return check_region(r, c);
}

static bool copies_disjoint(const tsr_edge *e);

static tsr_status
repeat_prepare(tsr_edge *e, tsr_error *err)
{
    (void)err;
    tsr_repeat_params *r = e->params;
    if (r->period[0] == 0)
        r->period[0] = e->child->w;
    if (r->period[1] == 0)
        r->period[1] = e->child->h;
    r->u[0] = r->period[0];
    r->u[1] = 0;
    r->v[0] = 0;
    r->v[1] = r->period[1];
    r->disjoint = copies_disjoint(e);
    return TSR_OK;
}

/* floor(a / b) and ceil(a / b) for 128-bit a, b != 0 */
static __int128
fdiv128(__int128 a, __int128 b)
{
    __int128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static __int128
cdiv128(__int128 a, __int128 b)
{
    return -fdiv128(-a, b);
}

/* Iterates the copies whose rect meets `area` (parent coords), in copy order: ascending j,
 * then ascending i. Copy origins lie in B = [area.x - w + 1, area.x + area.w - 1] x (same in
 * y); the lattice coordinates of B's corners bound i and j, then each candidate is tested
 * exactly. */
typedef struct copy_iter {
    const tsr_repeat_params *r;
    int64_t ox, oy, cw, ch; /* lattice origin, child size */
    tsr_rect area;
    int64_t i0, i1, j0, j1, i, j; /* inclusive bounds, cursor */
} copy_iter;

static void
iter_init(copy_iter *it, const tsr_edge *e, tsr_rect area)
{
    const tsr_repeat_params *r = e->params;
    it->r = r;
    it->ox = e->offset[0];
    it->oy = e->offset[1];
    it->cw = e->child->w;
    it->ch = e->child->h;
    it->area = area;
    it->i0 = 1;
    it->i1 = 0;
    it->j0 = 1;
    it->j1 = 0;
    it->i = it->i0;
    it->j = it->j0;
    if (tsr_rect_empty(area))
        return;
    __int128 det = (__int128)r->u[0] * r->v[1] - (__int128)r->u[1] * r->v[0];
    __int128 bx[2] = {(__int128)area.x - it->cw + 1 - it->ox, (__int128)area.x + area.w - 1 - it->ox};
    __int128 by[2] = {(__int128)area.y - it->ch + 1 - it->oy, (__int128)area.y + area.h - 1 - it->oy};
    __int128 imin = 0, imax = 0, jmin = 0, jmax = 0;
    for (int k = 0; k < 4; k++) {
        __int128 px = bx[k & 1], py = by[k >> 1];
        /* solve p = i*u + j*v: i = (px*vy - py*vx)/det, j = (py*ux - px*uy)/det */
        __int128 ni = px * r->v[1] - py * r->v[0];
        __int128 nj = py * r->u[0] - px * r->u[1];
        __int128 lo_i = fdiv128(ni, det), hi_i = cdiv128(ni, det);
        __int128 lo_j = fdiv128(nj, det), hi_j = cdiv128(nj, det);
        if (k == 0 || lo_i < imin) imin = lo_i;
        if (k == 0 || hi_i > imax) imax = hi_i;
        if (k == 0 || lo_j < jmin) jmin = lo_j;
        if (k == 0 || hi_j > jmax) jmax = hi_j;
    }
    it->i0 = (int64_t)imin;
    it->i1 = (int64_t)imax;
    it->j0 = (int64_t)jmin;
    it->j1 = (int64_t)jmax;
    it->i = it->i0;
    it->j = it->j0;
}

/* Next copy meeting the area: its rect clipped to the area, in parent coords, and the child
 * coords of that clip's corner. False when done. */
static bool
iter_next(copy_iter *it, tsr_rect *clip, int64_t *cx, int64_t *cy)
{
    while (it->j <= it->j1) {
        while (it->i <= it->i1) {
            int64_t i = it->i++;
            int64_t px = it->ox + i * it->r->u[0] + it->j * it->r->v[0];
            int64_t py = it->oy + i * it->r->u[1] + it->j * it->r->v[1];
            tsr_rect c = tsr_rect_intersect(tsr_rect_make(px, py, it->cw, it->ch), it->area);
            if (tsr_rect_empty(c))
                continue;
            *clip = c;
            *cx = c.x - px;
            *cy = c.y - py;
            return true;
        }
        it->i = it->i0;
        it->j++;
    }
    return false;
}

/* True when no copy other than (0, 0) meets copy (0, 0): then at most one copy covers any
 * pixel. Found by iterating the copies that meet the child rect of a lattice at the origin. */
static bool
copies_disjoint(const tsr_edge *e)
{
    tsr_edge at0 = *e;
    at0.offset[0] = at0.offset[1] = 0;
    copy_iter it;
    iter_init(&it, &at0, tsr_rect_make(0, 0, e->child->w, e->child->h));
    tsr_rect clip;
    int64_t cx, cy;
    int n = 0;
    while (iter_next(&it, &clip, &cx, &cy))
        if (++n > 1)
            return false;
    return true;
}

/* The parent area the layer can cover within `pr`: pr ∩ region. */
static tsr_rect
active_area(const tsr_edge *e, tsr_rect pr)
{
    const tsr_repeat_params *r = e->params;
    if (r->region[2] > 0)
        pr = tsr_rect_intersect(pr, tsr_rect_make(r->region[0], r->region[1], r->region[2], r->region[3]));
    return pr;
}

static size_t
need(const tsr_edge *e, tsr_rect pr, tsr_rect *out)
{
    copy_iter it;
    iter_init(&it, e, active_area(e, pr));
    size_t n = 0;
    tsr_rect all = {0, 0, 0, 0}, clip;
    int64_t cx, cy;
    bool overflow = false;
    while (iter_next(&it, &clip, &cx, &cy)) {
        tsr_rect c = tsr_rect_make(cx, cy, clip.w, clip.h);
        all = tsr_rect_union(all, c);
        if (overflow)
            continue;
        /* keep only rects not already inside a kept one; grow a kept one that is inside c */
        bool kept = false;
        for (size_t k = 0; k < n && !kept; k++) {
            if (tsr_rect_contains(out[k], c))
                kept = true;
            else if (tsr_rect_contains(c, out[k])) {
                out[k] = c;
                kept = true;
            }
        }
        if (!kept) {
            if (n == TSR_NEED_MAX)
                overflow = true;
            else
                out[n++] = c;
        }
    }
    if (overflow) {
        out[0] = all;
        return 1;
    }
    /* growing one rect may have swallowed others: drop contained duplicates */
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        bool dup = false;
        for (size_t q = 0; q < m && !dup; q++)
            dup = tsr_rect_contains(out[q], out[k]);
        if (!dup)
            out[m++] = out[k];
    }
    return m;
}

static const tsr_view *
find_view(const tsr_view *views, size_t nviews, tsr_rect c)
{
    for (size_t k = 0; k < nviews; k++)
        if (tsr_rect_contains(views[k].r, c))
            return &views[k];
    return NULL;
}

static tsr_status
layer(const tsr_edge *e, tsr_rect pr, const tsr_view *views, size_t nviews, float *L,
      uint8_t *cov, tsr_error *err)
{
    const tsr_repeat_params *r = e->params;
    int ov = r->overlap;
    uint16_t *count = NULL;
    if (r->disjoint) /* one contribution per pixel: average s/1 = s, first/max/add = s */
        ov = TSR_OVERLAP_FIRST;
    if (ov == TSR_OVERLAP_AVERAGE) {
        count = calloc((size_t)pr.w * (size_t)pr.h, sizeof *count);
        if (!count)
            return tsr_fail(err, TSR_ENOMEM, "repeat: out of memory");
    }
    copy_iter it;
    iter_init(&it, e, active_area(e, pr));
    tsr_rect clip;
    int64_t cx, cy;
    tsr_status st = TSR_OK;
    while (iter_next(&it, &clip, &cx, &cy)) {
        const tsr_view *v = find_view(views, nviews, tsr_rect_make(cx, cy, clip.w, clip.h));
        if (!v) {
            st = tsr_fail(err, TSR_EINTERNAL, "repeat: child rect not fetched");
            break;
        }
        for (int64_t y = 0; y < clip.h; y++) {
            const float *restrict src = tsr_view_row(v, cx, cy + y);
            size_t at = (size_t)((clip.y - pr.y + y) * pr.w + (clip.x - pr.x));
            float *restrict l = L + at;
            uint8_t *restrict c = cov + at;
            int64_t w = clip.w;
            if (r->disjoint) {
                memcpy(l, src, (size_t)w * sizeof(float));
                memset(c, 1, (size_t)w);
                continue;
            }
            switch (ov) {
            case TSR_OVERLAP_FIRST:
                for (int64_t x = 0; x < w; x++) {
                    l[x] = c[x] ? l[x] : src[x];
                    c[x] = 1;
                }
                break;
            case TSR_OVERLAP_ADD:
                for (int64_t x = 0; x < w; x++) {
                    l[x] = c[x] ? l[x] + src[x] : src[x];
                    c[x] = 1;
                }
                break;
            case TSR_OVERLAP_MAX:
                for (int64_t x = 0; x < w; x++) {
                    l[x] = (c[x] && !(src[x] > l[x])) ? l[x] : src[x];
                    c[x] = 1;
                }
                break;
            default: { /* average: float32 sum of the non-zero values in copy order */
                /* Branch-free so it vectorises: a first touch starts the sum at +0, and 0 + s = s
                 * exactly; adding +0 for a zero value leaves the sum unchanged. Same bits as
                 * "first non-zero value, then add each later one". */
                uint16_t *restrict n = count + at;
                for (int64_t x = 0; x < w; x++) {
                    float s = src[x];
                    uint16_t nz = s != 0.0f;
                    l[x] = (c[x] ? l[x] : 0.0f) + (nz ? s : 0.0f);
                    n[x] = (uint16_t)(n[x] + nz);
                    c[x] = 1;
                }
                break;
            }
            }
        }
    }
    if (count) {
        if (st == TSR_OK) {
            size_t total = (size_t)pr.w * (size_t)pr.h;
            for (size_t i = 0; i < total; i++)
                if (cov[i]) /* covered with no non-zero value: the sum is +0 and stays 0 */
                    L[i] = count[i] ? L[i] / (float)count[i] : 0.0f;
        }
        free(count);
    }
    return st;
}

static size_t
scratch(const tsr_edge *e, int64_t tw, int64_t th)
{
    const tsr_repeat_params *r = e->params;
    return r->overlap == TSR_OVERLAP_AVERAGE && !r->disjoint ? (size_t)tw * (size_t)th * sizeof(uint16_t) : 0;
}

const tsr_trait tsr_trait_repeat = {
    .name = "repeat",
    .params = repeat_params,
    .nparams = sizeof repeat_params / sizeof repeat_params[0],
    .params_size = sizeof(tsr_repeat_params),
    .defaults = repeat_defaults,
    .check = repeat_check,
    .prepare = repeat_prepare,
    .need = need,
    .layer = layer,
    .scratch = scratch,
};

static tsr_status
vector_prepare(tsr_edge *e, tsr_error *err)
{
    (void)err;
    tsr_repeat_params *r = e->params;
    r->disjoint = copies_disjoint(e);
    return TSR_OK;
}

const tsr_trait tsr_trait_repeat_vector = {
    .name = "repeat-vector",
    .params = vector_params,
    .nparams = sizeof vector_params / sizeof vector_params[0],
    .params_size = sizeof(tsr_repeat_params),
    .defaults = vector_defaults,
    .check = vector_check,
    .prepare = vector_prepare,
    .need = need,
    .layer = layer,
    .scratch = scratch,
};
