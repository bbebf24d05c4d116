/* tiles: rects, grids with ragged edges, checked arithmetic, floor division. */
#include "tiles/tiles.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

Test(tiles, intersect_of_disjoint_rects_is_empty)
{
    tsr_rect a = {0, 0, 10, 10}, b = {10, 0, 5, 5};
    cr_assert(tsr_rect_empty(tsr_rect_intersect(a, b)));
    tsr_rect c = tsr_rect_intersect(a, tsr_rect_make(-5, 3, 8, 100));
    cr_assert(tsr_rect_equal(c, tsr_rect_make(0, 3, 3, 7)));
}

Test(tiles, union_ignores_empty_rects_and_grow_adds_a_margin)
{
    tsr_rect e = {5, 5, 0, 3}, a = {1, 2, 3, 4};
    cr_assert(tsr_rect_equal(tsr_rect_union(e, a), a));
    cr_assert(tsr_rect_equal(tsr_rect_union(a, tsr_rect_make(10, -1, 1, 1)), tsr_rect_make(1, -1, 10, 7)));
    cr_assert(tsr_rect_equal(tsr_rect_grow(a, 2), tsr_rect_make(-1, 0, 7, 8)));
    cr_assert(tsr_rect_contains(tsr_rect_grow(a, 2), a));
    cr_assert(!tsr_rect_contains(a, tsr_rect_grow(a, 1)));
}

/* A --region such as 9223372036854775807,0,1,1 once wrapped x + w and passed as inside the
 * root. Every combination of edge values against the same test in 128-bit integers. */
Test(tiles, contains_is_exact_at_the_int64_extremes)
{
    static const int64_t v[] = {INT64_MIN, INT64_MIN + 1, -(INT64_C(1) << 40), -100, -1, 0, 1,
                                48, 64, INT64_C(1) << 40, INT64_MAX - 100, INT64_MAX - 1,
                                INT64_MAX};
    const size_t n = sizeof v / sizeof v[0];
    cr_assert(!tsr_rect_contains(tsr_rect_make(0, 0, 64, 48), tsr_rect_make(INT64_MAX, 0, 1, 1)));
    cr_assert(!tsr_rect_contains(tsr_rect_make(0, 0, 64, 48),
                                 tsr_rect_make(0, INT64_MAX - 7, 1, 100)));
    for (size_t a = 0; a < n; a++)
        for (size_t aw = 0; aw < n; aw++)
            for (size_t b = 0; b < n; b++)
                for (size_t bw = 0; bw < n; bw++) {
                    __int128 ea = (__int128)v[a] + v[aw], eb = (__int128)v[b] + v[bw];
                    bool want = v[a] >= v[b] && ea <= eb;
                    tsr_rect in = tsr_rect_make(v[a], 0, v[aw], 1);
                    tsr_rect out = tsr_rect_make(v[b], 0, v[bw], 1);
                    cr_assert_eq(tsr_rect_contains(out, in), want, "[%lld +%lld) in [%lld +%lld)",
                                 (long long)v[a], (long long)v[aw], (long long)v[b],
                                 (long long)v[bw]);
                    /* the same along y */
                    cr_assert_eq(tsr_rect_contains(tsr_rect_make(0, v[b], 1, v[bw]),
                                                   tsr_rect_make(0, v[a], 1, v[aw])), want);
                }
}

Test(tiles, grid_edges_are_ragged_and_tiles_cover_the_node_once)
{
    tsr_grid g = tsr_grid_make(1000, 7, 512);
    cr_assert_eq(g.nx, 2);
    cr_assert_eq(g.ny, 1);
    cr_assert(tsr_rect_equal(tsr_grid_tile_rect(&g, 1, 0), tsr_rect_make(512, 0, 488, 7)));
    int64_t area = 0;
    for (int64_t ty = 0; ty < g.ny; ty++)
        for (int64_t tx = 0; tx < g.nx; tx++) {
            tsr_rect r = tsr_grid_tile_rect(&g, tx, ty);
            area += r.w * r.h;
        }
    cr_assert_eq(area, 7000);
}

Test(tiles, tiles_of_a_rect_are_clipped_to_the_node)
{
    tsr_grid g = tsr_grid_make(100, 50, 7);
    int64_t x0, y0, x1, y1;
    tsr_grid_tiles_of(&g, tsr_rect_make(6, 13, 2, 2), &x0, &y0, &x1, &y1);
    cr_assert(x0 == 0 && x1 == 2 && y0 == 1 && y1 == 3, "%lld %lld %lld %lld", (long long)x0,
              (long long)x1, (long long)y0, (long long)y1);
    tsr_grid_tiles_of(&g, tsr_rect_make(-50, -50, 10, 10), &x0, &y0, &x1, &y1);
    cr_assert(x0 == x1, "a rect outside the node meets no tile");
    tsr_grid_tiles_of(&g, tsr_rect_make(-5, 45, 500, 500), &x0, &y0, &x1, &y1);
    cr_assert(x0 == 0 && x1 == 15 && y0 == 6 && y1 == 8);
}

Test(tiles, checked_arithmetic_refuses_overflow_and_leaves_the_output)
{
    int64_t out = 42;
    cr_assert(!tsr_mul_checked(INT64_MAX / 2 + 1, 2, &out));
    cr_assert(!tsr_add_checked(INT64_MAX, 1, &out));
    cr_assert_eq(out, 42);
    cr_assert(tsr_mul_checked((int64_t)1 << 40, (int64_t)1 << 22, &out));
    cr_assert_eq(out, (int64_t)1 << 62);
    cr_assert_eq(tsr_tile_bytes(tsr_rect_make(0, 0, INT64_MAX / 2, 4)), 0, "overflow gives 0 bytes");
    cr_assert_null(tsr_tile_new(tsr_rect_make(0, 0, INT64_MAX / 2, 4)));
}

Test(tiles, floor_division_and_modulo_round_toward_minus_infinity)
{
    cr_assert_eq(tsr_floor_div(-1, 4), -1);
    cr_assert_eq(tsr_floor_mod(-1, 4), 3);
    cr_assert_eq(tsr_floor_div(-8, 4), -2);
    cr_assert_eq(tsr_floor_mod(-8, 4), 0);
    cr_assert_eq(tsr_floor_div(7, 4), 1);
    cr_assert_eq(tsr_floor_mod(-1099511627776, 7), ((-1099511627776 % 7) + 7) % 7);
}

Test(tiles, errors_format_where_and_what_and_map_to_exit_codes)
{
    tsr_error err;
    cr_assert_eq(tsr_fail(&err, TSR_EINVAL, "%s:%d: bad", "a.yaml", 3), TSR_EINVAL);
    cr_assert_str_eq(err.msg, "a.yaml:3: bad");
    cr_assert_eq(tsr_status_exit_code(TSR_EINVAL), 2);
    cr_assert_eq(tsr_status_exit_code(TSR_EPLAN), 2);
    cr_assert_eq(tsr_status_exit_code(TSR_EIO), 1);
    cr_assert_eq(tsr_status_exit_code(TSR_OK), 0);
    cr_assert_eq(tsr_fail(NULL, TSR_ENOMEM, "x"), TSR_ENOMEM, "a NULL error is allowed");
}

Test(tiles, tile_pixels_are_cache_line_aligned)
{
    tsr_tile *t = tsr_tile_new(tsr_rect_make(3, 4, 5, 6));
    cr_assert_not_null(t);
    cr_assert_eq((uintptr_t)t->px % 64, 0);
    tsr_view v = tsr_tile_view(t);
    t->px[1 * 5 + 2] = 7.0f;
    cr_assert_eq(*tsr_view_row(&v, 5, 5), 7.0f);
    tsr_tile_free(t);
}

/* A message longer than tsr_error holds keeps its reason, which comes last: the middle (a long
 * path, a long key path) is elided, not the end. */
Test(tiles, a_long_message_keeps_its_reason)
{
    tsr_error err;
    char path[3000];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    tsr_fail(&err, TSR_EINVAL, "%s:12:5: root.children[0].sigma: must be in 0.3..256", path);
    size_t n = strlen(err.msg);
    cr_assert(n < sizeof err.msg);
    cr_assert(strstr(err.msg, "root.children[0].sigma: must be in 0.3..256"), "%s", err.msg);
    cr_assert(strstr(err.msg, "...") && strncmp(err.msg, "ppp", 3) == 0, "%s", err.msg);
    tsr_fail(&err, TSR_EIO, "short: %d", 7);
    cr_assert_str_eq(err.msg, "short: 7");
}
