/* The CPU rate of geom's coverage rasterizer (docs/coverage.md): a dense field of small rotated
 * rectangles over a square, computed as one rect and as tiles, the three steps timed apart.
 *
 *   cmake --build build --target tsr_geom
 *   cc -O3 -I. -Iinclude scripts/bench/coverage.c build/geom/libtsr_geom.a \
 *      build/tiles/libtsr_tiles.a -lpolyclipping -lstdc++ -lm -o /tmp/bench_coverage
 *   /tmp/bench_coverage [SIDE [RECTS [TILE]]]     (defaults 2000 100000 256)
 *
 * Single-threaded; the best of 5 runs of each way, in the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID: the build machine is shared, and wall time there measures the
 * neighbours), wall time beside it. */
#include "geom/geom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double
now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double
wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng = 88172645463325252u;

static double
urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

/* Seconds for the rect r: edges, accumulate, resolve into t[3]; returns the summed coverage. */
static double
run(const tsr_geom_polys *p, tsr_rect r, double t[3], int64_t *acc, float *out)
{
    tsr_geom_edges e;
    tsr_geom_edges_init(&e);
    tsr_error err = {0};
    double a = now();
    if (tsr_geom_edges_build(p, r, &e, &err) != TSR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    double b = now();
    tsr_geom_accumulate(&e, acc);
    double c = now();
    tsr_geom_resolve(acc, r.w, r.h, out);
    double d = now();
    t[0] += b - a, t[1] += c - b, t[2] += d - c;
    double s = 0;
    for (int64_t i = 0; i < r.w * r.h; i++)
        s += out[i];
    tsr_geom_edges_free(&e);
    return s;
}

int
main(int argc, char **argv)
{
    int64_t side = argc > 1 ? atoll(argv[1]) : 2000, tile = argc > 3 ? atoll(argv[3]) : 256;
    long count = argc > 2 ? atol(argv[2]) : 100000;
    tsr_geom_polys p, sub;
    tsr_geom_polys_init(&p);
    tsr_geom_polys_init(&sub);
    double (*box)[4] = malloc((size_t)count * sizeof *box);
    for (long k = 0; k < count; k++) {
        double cx = urand() * (double)side, cy = urand() * (double)side;
        double a = urand() * M_PI, c = cos(a), s = sin(a);
        double hw = 0.5 + urand() * 3, hh = 0.5 + urand() * 3;
        tsr_geom_pt q[4] = {{cx - hw * c + hh * s, cy - hw * s - hh * c},
                            {cx + hw * c + hh * s, cy + hw * s - hh * c},
                            {cx + hw * c - hh * s, cy + hw * s + hh * c},
                            {cx - hw * c - hh * s, cy - hw * s + hh * c}};
        tsr_geom_polys_add(&p, q, 4, NULL);
        box[k][0] = box[k][2] = q[0].x, box[k][1] = box[k][3] = q[0].y;
        for (int i = 1; i < 4; i++) {
            box[k][0] = fmin(box[k][0], q[i].x), box[k][2] = fmax(box[k][2], q[i].x);
            box[k][1] = fmin(box[k][1], q[i].y), box[k][3] = fmax(box[k][3], q[i].y);
        }
    }
    int64_t *acc = malloc((size_t)(side * side) * sizeof *acc);
    float *out = malloc((size_t)(side * side) * sizeof *out);
    double px = (double)side * (double)side;
    for (int way = 0; way < 2; way++) {
        double best = 1e30, bt[3] = {0, 0, 0}, cov = 0, bw = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            double t[3] = {0, 0, 0}, w0 = wall();
            cov = 0;
            if (way == 0) {
                cov = run(&p, tsr_rect_make(0, 0, side, side), t, acc, out);
            } else {
                /* each tile gets the rects that meet its reach (tsr_geom_reach), as a caller
                 * with a spatial index would pick them: here a scan of the boxes, timed
                 * with the edges */
                for (int64_t y = 0; y < side; y += tile)
                    for (int64_t x = 0; x < side; x += tile) {
                        tsr_rect r = tsr_rect_intersect(tsr_rect_make(x, y, tile, tile),
                                                        tsr_rect_make(0, 0, side, side));
                        tsr_rect g = tsr_geom_reach(r);
                        double a = now();
                        tsr_geom_polys_clear(&sub);
                        for (long k = 0; k < count; k++)
                            if (box[k][2] >= (double)g.x && box[k][0] <= (double)(g.x + g.w) &&
                                box[k][3] >= (double)g.y && box[k][1] <= (double)(g.y + g.h))
                                tsr_geom_polys_add(&sub, p.pt + 4 * k, 4, NULL);
                        t[0] += now() - a;
                        cov += run(&sub, r, t, acc, out);
                    }
            }
            double all = t[0] + t[1] + t[2], w = wall() - w0;
            bw = w < bw ? w : bw;
            if (all < best)
                best = all, bt[0] = t[0], bt[1] = t[1], bt[2] = t[2];
        }
        printf("%s: %lldx%lld px, %ld rects, coverage %.1f%%: %.1f ms = edges %.1f + accumulate "
               "%.1f + resolve %.1f: %.2f Mpx/s (CPU time; best wall %.1f ms)\n",
               way ? "tiles" : "one rect", (long long)side, (long long)side, count,
               100.0 * cov / px, 1e3 * best, 1e3 * bt[0], 1e3 * bt[1], 1e3 * bt[2],
               px / best * 1e-6, 1e3 * bw);
        if (way == 1)
            printf("  (tiles of %lld px)\n", (long long)tile);
    }
    free(acc), free(out), free(box);
    tsr_geom_polys_free(&p);
    tsr_geom_polys_free(&sub);
    return 0;
}
