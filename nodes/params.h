/* Parameter structs of the traits, shared by the CPU reference (nodes/<trait>.c), the GPU
 * launchers (gpu/) and the tests. Each is filled by the loader through the trait's
 * parameter table, then completed by the trait's prepare(). */
#ifndef TSR_NODES_PARAMS_H
#define TSR_NODES_PARAMS_H

#include "nodes/nodes.h"
#include "nodes/expr.h"

typedef enum tsr_overlap {
    TSR_OVERLAP_AVERAGE, /* mean of the non-zero copies (0 if none), float32, copy order */
    TSR_OVERLAP_MAX,
    TSR_OVERLAP_ADD,
    TSR_OVERLAP_FIRST
} tsr_overlap;

extern const char *const tsr_overlap_names[]; /* "average", "max", "add", "first", NULL */

/* repeat and repeat-vector (repeat is repeat-vector with u = [px, 0], v = [0, py]). */
typedef struct tsr_repeat_params {
    int64_t period[2];  /* repeat: [0, 0] until prepare() puts the child size there */
    int64_t u[2], v[2]; /* repeat-vector: lattice vectors; repeat: set by prepare() */
    int overlap;        /* tsr_overlap */
    int64_t region[4];  /* x, y, w, h in parent coords; w == 0: the whole parent */
    bool disjoint;      /* set by prepare(): no two copies overlap, so every overlap mode is a
                         * plain copy (one contribution per pixel) */
    /* per-copy variation (docs/variation.md); NULL: not given, else owned */
    tsr_expr *scale, *bias;   /* copy value = (float)(bias + scale * (double)child) */
    tsr_expr *src_radius;     /* the leaf child's source `radius` per copy */
    tsr_expr *src_value;      /* the leaf child's source `value` per copy */
    int64_t jitter[2];        /* copy (i, j) moves by tsr_jitter(seed, jitter, i, j): |d| <= */
    int64_t seed;             /* the jitter's seed */
    bool values;              /* set by prepare(): scale or bias given */
    bool sources;             /* set by prepare(): a source parameter varies */
    bool varies;              /* set by prepare(): some copy differs from another (a function of
                               * i or j, or jitter): the lattice is not periodic */
} tsr_repeat_params;

/* Whether edge e (any trait) is periodic by its lattice: a TSR_CAP_LATTICE edge whose copies
 * are all alike. The planners' one test before they take a periodic shortcut. */
static inline bool
tsr_lattice_periodic(const tsr_edge *e)
{
    return tsr_trait_has(e->trait, TSR_CAP_LATTICE) &&
           !((const tsr_repeat_params *)e->params)->varies;
}

/* distance: L = table[min(a, dmax^2)], a the squared distance to the nearest mask pixel. */
typedef struct tsr_distance_params {
    float threshold;     /* mask = child > threshold, default 0.5 */
    int64_t dmax;        /* 1..4194304 */
    tsr_profile profile; /* default linear */
    double scale, bias;  /* f' = bias + scale * f, defaults 1, 0 */
} tsr_distance_params;

/* The layer value at distance d, as the table holds it for d = sqrt(a): (float)(bias + scale *
 * f(d)). Needs no prepared state (`check` lints designs whose tables are never built). */
float
tsr_distance_value(const tsr_distance_params *p, double d);

/* The prepared state of a distance edge. */
typedef struct tsr_distance_state {
    float *table;   /* min(dmax^2, 4096^2) + 1 entries: table[a] = (float)(bias + scale *
                     * f(sqrt(a))); larger a (dmax > 4096) are computed by the same expression */
    int64_t ntable;
} tsr_distance_state;

typedef enum tsr_edge_mode { TSR_EDGE_ZERO, TSR_EDGE_CLAMP, TSR_EDGE_WRAP } tsr_edge_mode;
extern const char *const tsr_edge_mode_names[]; /* "zero", "clamp", "wrap", NULL */

/* blur: exactly one of sigma (> 0) or kernel (w > 0). */
typedef struct tsr_blur_params {
    double sigma;      /* 0 when a kernel is given; else 0.3..256 */
    tsr_kernel kernel; /* w == 0 when sigma is given */
    int edge;          /* tsr_edge_mode, default zero */
} tsr_blur_params;

/* rank: the minimum, maximum or median of the child over a square or disc of radius r around
 * each pixel (nodes/rank.c, docs/format.md §5.6). */
typedef enum tsr_rank_op { TSR_RANK_MIN, TSR_RANK_MAX, TSR_RANK_MEDIAN } tsr_rank_op;
extern const char *const tsr_rank_op_names[];   /* "min", "max", "median", NULL */
typedef enum tsr_rank_shape { TSR_RANK_SQUARE, TSR_RANK_DISC } tsr_rank_shape;
extern const char *const tsr_rank_shape_names[]; /* "square", "disc", NULL */

typedef struct tsr_rank_params {
    int op;         /* tsr_rank_op, required */
    int64_t radius; /* r, 1..64 px: the footprint and the tile halo */
    int footprint;  /* tsr_rank_shape, default square */
    int edge;       /* tsr_edge_mode, default clamp */
} tsr_rank_params;

#endif
