/* Sources on the device (docs/format.md §4): fill, then the shape, gradient or image, one
 * launcher per source family (nodes/sources.def), one thread per pixel, with nodes/pointwise.h's expressions in double. Shapes test exactly the pixels of
 * tsr_source_box (the CPU's bounding box), so both backends write the same pixels. */
#include "gpu/gpu_int.cuh"
#include "gpu/shape.cuh"

extern "C" {
#include "gpu/coverage.h"
#include "nodes/layout_src.h"
#include "nodes/vector.h"
}

/* One kernel instance per kind of base (gpu/shape.cuh says why). */
template <int M>
static __global__ void
base_kernel(base_args s)
{
    TSR_FOR_PIXELS(s.r.w, s.r.h, lx, ly) {
        int64_t x = s.r.x + lx, y = s.r.y + ly;
        float v = tsr_gpu_base_px<M>(s, x, y);
        if (s.to.dst)
            tsr_gpu_put(s.to, x, y, v);
        else
            s.out[ly * s.r.w + lx] = v;
    }
}

/* The args every base kernel takes: out's rect and buffer, the samples' target, the fill. */
static tsr_status
base_common(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
            base_args *a, tsr_error *err)
{
    memset(a, 0, sizeof *a);
    tsr_status cs = tsr_gpu_conv_make(g, to, &a->to, err);
    a->r = out.r;
    a->out = out.px;
    a->fill = n->fill;
    a->kind = n->source ? (int)n->source->kind : -1;
    return cs;
}

template <int M>
static tsr_status
launch(tsr_gpu *g, const base_args &a, tsr_error *err)
{
    dim3 grid = tsr_grid2(a.r.w, a.r.h);
    base_kernel<M><<<grid, 256, 0, g->compute>>>(a);
    TSR_LAUNCHED("base", err);
    return TSR_OK;
}

/* ---- the source families (nodes/sources.def's gpu column) ----------------------------------- */

/* A polygon with more points than this is drawn by the CPU: the device tests every edge at
 * every sub-sample (a 16000-point comb with aa 4 kept one chunk's kernel busy for more than
 * 20 s, and kernels do not see a stop), where the CPU's scanline fill touches only the edges a
 * row crosses and polls the stop. */
#define DEVICE_POLYGON_MAX 256

extern "C" bool
tsr_gpu_src_shape_can(const tsr_source *s)
{
    /* exact coverage: the device only accumulates what the host's union gives */
    return tsr_shape_exact(s) || s->kind != TSR_SRC_POLYGON ||
           s->points.n <= DEVICE_POLYGON_MAX;
}

typedef tsr_status (*sets_fn)(const tsr_source *s, tsr_rect r, tsr_geom_polys *sets,
                              tsr_error *err);
static tsr_status draw_sets(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out,
                            const tsr_gpu_out *to, size_t nsets, sets_fn make,
                            const float *values, tsr_error *err);
static tsr_status shape_sets(const tsr_source *s, tsr_rect r, tsr_geom_polys *sets,
                             tsr_error *err);

extern "C" tsr_status
tsr_gpu_src_shape(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
                  tsr_error *err)
{
    base_args a;
    const tsr_source *s = n->source;
    if (tsr_shape_exact(s)) /* aa: exact, or a transformed shape (nodes/vector.h) */
        return draw_sets(g, n, out, to, 1, shape_sets, &s->value, err);
    tsr_status st = base_common(g, n, out, to, &a, err);
    if (st != TSR_OK)
        return st;
    tsr_gpu_source_args(&a, s);
    if (s->kind == TSR_SRC_POLYGON) {
        a.pts = (const double (*)[2])tsr_gpu_resident(g, s->points.p,
                                                      s->points.n * sizeof(double[2]), err);
        if (!a.pts)
            return TSR_ENOMEM;
        a.npts = (int64_t)s->points.n;
    }
    a.box = tsr_source_box(s, out.r);
    return a.aa > 0 ? launch<B_SHAPE_AA>(g, a, err) : launch<B_SHAPE>(g, a, err);
}

extern "C" bool
tsr_gpu_src_gradient_can(const tsr_source *s)
{
    (void)s;
    return true;
}

extern "C" tsr_status
tsr_gpu_src_gradient(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
                     tsr_error *err)
{
    base_args a;
    const tsr_source *s = n->source;
    tsr_status st = base_common(g, n, out, to, &a, err);
    if (st != TSR_OK)
        return st;
    tsr_gpu_source_args(&a, s);
    return s->kind == TSR_SRC_LINEAR ? launch<B_LINEAR>(g, a, err) : launch<B_RADIAL>(g, a, err);
}

extern "C" bool
tsr_gpu_src_image_can(const tsr_source *s)
{
    (void)s;
    return true;
}

extern "C" tsr_status
tsr_gpu_src_image(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
                  tsr_error *err)
{
    base_args a;
    const tsr_source *s = n->source;
    tsr_status st = base_common(g, n, out, to, &a, err);
    if (st != TSR_OK)
        return st;
    if (s->img) {
        a.img = (const float *)tsr_gpu_resident(g, s->img,
                                                (size_t)s->iw * (size_t)s->ih * sizeof(float), err);
        if (!a.img)
            return TSR_ENOMEM;
        a.iw = s->iw;
    }
    return launch<B_IMAGE>(g, a, err);
}

/* ---- layouts (nodes/layout_src.c): the host picks each table entry's shapes and unites them
 * per block (geom/), the device accumulates their coverage (gpu/coverage.cu) and blends it in
 * with the CPU's expression (tsr_src_layout_mix): the same bits. ------------------------------ */

static __global__ void
lsrc_mix_k(float *out, const float *cov, size_t n, float v)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = tsr_src_layout_mix(out[i], cov[i], v);
}

static __global__ void
lsrc_put_k(base_args s)
{
    TSR_FOR_PIXELS(s.r.w, s.r.h, lx, ly) {
        tsr_gpu_put(s.to, s.r.x + lx, s.r.y + ly, s.out[ly * s.r.w + lx]);
    }
}

extern "C" bool
tsr_gpu_src_layout_can(const tsr_source *s)
{
    return s->lay != NULL;
}

/* One set's coverage over e.r into cov (device), from its edges made on the host. */
static tsr_status
lsrc_coverage(tsr_gpu *g, const tsr_geom_edges &e, int64_t *acc, float *cov, tsr_error *err)
{
    tsr_rect r = e.r;
    tsr_status st = TSR_OK;
    size_t mark = tsr_gpu_mark(g);
    if (st == TSR_OK) {
        size_t be = (e.n ? e.n : 1) * sizeof *e.e, bf = (e.n + 1) * sizeof *e.first;
        tsr_geom_edge *de = (tsr_geom_edge *)tsr_gpu_alloc(g, be, err);
        uint64_t *df = de ? (uint64_t *)tsr_gpu_alloc(g, bf, err) : NULL;
        cudaError_t ce = cudaSuccess;
        if (!df)
            st = TSR_ENOMEM;
        if (st == TSR_OK && e.n)
            ce = cudaMemcpyAsync(de, e.e, e.n * sizeof *e.e, cudaMemcpyHostToDevice, g->compute);
        if (st == TSR_OK && ce == cudaSuccess)
            ce = cudaMemcpyAsync(df, e.first, bf, cudaMemcpyHostToDevice, g->compute);
        /* the host lists are freed below: the copies must be done with them first */
        if (st == TSR_OK && ce == cudaSuccess)
            ce = cudaStreamSynchronize(g->compute);
        if (st == TSR_OK && ce != cudaSuccess)
            st = tsr_fail(err, TSR_EIO, "gpu: layout edges upload: %s", cudaGetErrorString(ce));
        if (st == TSR_OK)
            st = tsr_gpu_coverage(g, de, df, e.n, e.first[e.n], r, acc, cov, err);
    }
    tsr_gpu_reset(g, mark);
    return st;
}

/* tsr_geom_make_fn over a source's sets_fn */
typedef struct make_ctx {
    const tsr_source *s;
    sets_fn make;
} make_ctx;

static tsr_status
make_piece(void *mctx, tsr_rect r, tsr_geom_polys *sets, tsr_error *err)
{
    const make_ctx *m = (const make_ctx *)mctx;
    return m->make(m->s, r, sets, err);
}

/* The node's fill, then each of the nsets polygon sets made by make() (host) drawn over it with
 * its exact coverage and value; samples to `to` at the end when given. */

static tsr_status
draw_sets(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to, size_t nsets,
          sets_fn make, const float *values, tsr_error *err)
{
    base_args a;
    const tsr_source *s = n->source;
    tsr_status st = base_common(g, n, out, to, &a, err);
    if (st != TSR_OK)
        return st;
    size_t npx = (size_t)out.r.w * (size_t)out.r.h;
    size_t mark = tsr_gpu_mark(g);
    /* a root chunk's node without edges has no float buffer (samples only): one of our own */
    float *px = out.px ? out.px : (float *)tsr_gpu_alloc(g, npx * sizeof *px, err);
    tsr_geom_edges *edges = (tsr_geom_edges *)calloc(nsets ? nsets : 1, sizeof *edges);
    int64_t *acc = px && edges ? (int64_t *)tsr_gpu_alloc(g, npx * sizeof *acc, err) : NULL;
    float *cov = acc ? (float *)tsr_gpu_alloc(g, npx * sizeof *cov, err) : NULL;
    if (!edges)
        st = tsr_fail(err, TSR_ENOMEM, "gpu: out of host memory for edges");
    else if (!cov)
        st = TSR_ENOMEM;
    a.out = px;
    base_args fill = a;
    fill.to.dst = NULL; /* the fill into px; the samples go out after the sets */
    if (st == TSR_OK)
        st = launch<B_FILL>(g, fill, err);
    /* the sets' polygons made and united in pieces on the host's team (one thread held layouts
     * at 0.3-5 % of the link: docs/performance.md) */
    make_ctx mc = {s, make};
    if (st == TSR_OK)
        st = tsr_geom_edges_pieces(out.r, nsets, make_piece, &mc,
                                   g->team.run ? &g->team : NULL, edges, err);
    for (size_t e = 0; e < nsets && st == TSR_OK; e++) {
        if (edges[e].n == 0)
            continue;
        if ((st = lsrc_coverage(g, edges[e], acc, cov, err)) != TSR_OK)
            break;
        lsrc_mix_k<<<tsr_blocks(npx, 256), 256, 0, g->compute>>>(px, cov, npx, values[e]);
        TSR_LAUNCHED("lsrc_mix_k", err);
    }
    if (st == TSR_OK && a.to.dst) {
        lsrc_put_k<<<tsr_grid2(a.r.w, a.r.h), 256, 0, g->compute>>>(a);
        TSR_LAUNCHED("lsrc_put_k", err);
    }
    tsr_gpu_reset(g, mark);
    for (size_t e = 0; edges && e < nsets; e++)
        tsr_geom_edges_free(&edges[e]);
    free(edges);
    return st;
}

static tsr_status
layout_sets(const tsr_source *s, tsr_rect r, tsr_geom_polys *sets, tsr_error *err)
{
    return tsr_src_layout_polys(s, r, sets, err);
}

/* An exact shape's one set: the whole shape (its coverage outside the shape's box is 0, so the
 * pixels the CPU leaves alone stay the fill here too). */
static tsr_status
shape_sets(const tsr_source *s, tsr_rect r, tsr_geom_polys *sets, tsr_error *err)
{
    (void)r;
    return tsr_src_shape_polys(s, &sets[0], err);
}

extern "C" tsr_status
tsr_gpu_src_layout(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
                   tsr_error *err)
{
    const tsr_source *s = n->source;
    float *values = (float *)malloc((s->layers.n ? s->layers.n : 1) * sizeof *values);
    if (!values)
        return tsr_fail(err, TSR_ENOMEM, "gpu: layout: out of host memory");
    for (size_t i = 0; i < s->layers.n; i++)
        values[i] = s->layers.e[i].value;
    tsr_status st = draw_sets(g, n, out, to, s->layers.n, layout_sets, values, err);
    free(values);
    return st;
}

/* ---- vector sources (text, booleans: nodes/vector.h): their outlines for the chunk, one set,
 * drawn as a layout's layer is. -------------------------------------------------------------- */

static tsr_status
vector_sets(const tsr_source *s, tsr_rect r, tsr_geom_polys *sets, tsr_error *err)
{
    return tsr_vec_select((const tsr_vec *)s->vec, r, &sets[0], err);
}

extern "C" bool
tsr_gpu_src_vector_can(const tsr_source *s)
{
    return s->vec != NULL;
}

extern "C" tsr_status
tsr_gpu_src_vector(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
                   tsr_error *err)
{
    return draw_sets(g, n, out, to, 1, vector_sets, &n->source->value, err);
}

/* The node's base: its fill alone, or its source's family launcher (the table's gpu column,
 * gpu/traits.c). */
extern "C" tsr_status
tsr_gpu_base(tsr_gpu *g, const tsr_node *n, tsr_gpu_buf out, const tsr_gpu_out *to,
             tsr_error *err)
{
    if (n->source) {
        tsr_gpu_base_fn f = tsr_gpu_sources[n->source->kind].launch;
        if (!f)
            return tsr_fail(err, TSR_EINTERNAL, "gpu: source %d has no kernel",
                            (int)n->source->kind);
        return f(g, n, out, to, err);
    }
    base_args a;
    tsr_status st = base_common(g, n, out, to, &a, err);
    return st == TSR_OK ? launch<B_FILL>(g, a, err) : st;
}
