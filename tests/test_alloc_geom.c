/* Allocation failures in geom/: every allocation our code makes while building the edges of a
 * coverage, making a circle, and computing booleans and offsets is failed in turn (N = 1, 2,
 * ... until the call succeeds without reaching N). Each failure must come back as TSR_ENOMEM
 * with a "geom: " message and leave the outputs unchanged; a call that succeeds gives the same
 * result as without failures; under ASan nothing leaks. (Clipper's own allocations are made in
 * libpolyclipping and libstdc++, which keep the real allocator.) */
#include "alloc/failing_alloc.h"
#include "geom/geom.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define NO_LEAKS(what) \
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "%s: leaked (report above)", what)
#else
#define NO_LEAKS(what) ((void)(what))
#endif

/* Overlapping and lone shapes over several blocks, one far outside: both paths, the cut. */
static void
shapes(tsr_geom_polys *p)
{
    tsr_geom_polys_init(p);
    for (int k = 0; k < 40; k++) {
        double x = 7.3 * k, y = 3.1 * k;
        cr_assert_eq(tsr_geom_polys_add_rect(p, x, y, 9.5, 4.25, NULL), TSR_OK);
    }
    for (int k = 0; k < 30; k++)
        cr_assert_eq(tsr_geom_polys_add_rect(p, 20 + 11.0 * k, 150, 3, 2, NULL), TSR_OK);
    tsr_geom_pt big[4] = {{-5000, -4000}, {6000, -3900}, {5900, 5000}, {-4800, 5100}};
    cr_assert_eq(tsr_geom_polys_add(p, big, 4, NULL), TSR_OK);
    tsr_geom_pt hole[4] = {{100, 100}, {100, 140}, {160, 140}, {160, 100}};
    cr_assert_eq(tsr_geom_polys_add(p, hole, 4, NULL), TSR_OK);
}

static void
expect_nomem(tsr_status st, const tsr_error *err, long n)
{
    cr_assert_eq(st, TSR_ENOMEM, "failure %ld: status %d (%s)", n, st, err->msg);
    cr_assert(strncmp(err->msg, "geom: ", 6) == 0, "failure %ld: message '%s'", n, err->msg);
}

Test(alloc_geom, coverage_fails_cleanly_at_every_allocation)
{
    tsr_geom_polys p;
    shapes(&p);
    tsr_rect r = tsr_rect_make(-10, -20, 300, 190);
    size_t n = (size_t)(r.w * r.h);
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    tsr_error err = {0};
    cr_assert_eq(tsr_geom_coverage(&p, r, want, &err), TSR_OK, "%s", err.msg);
    long k = 1;
    for (;; k++) {
        memset(got, 0x55, n * sizeof *got);
        fa_arm(k);
        tsr_status st = tsr_geom_coverage(&p, r, got, &err);
        bool fired = fa_fired();
        fa_disarm();
        if (!fired) {
            cr_assert_eq(st, TSR_OK, "%s", err.msg);
            cr_assert(memcmp(got, want, n * sizeof *got) == 0);
            break;
        }
        expect_nomem(st, &err, k);
        for (size_t i = 0; i < n; i++)
            cr_assert(((const unsigned char *)got)[4 * i] == 0x55, "failure %ld wrote out", k);
        NO_LEAKS("coverage");
    }
    cr_assert(k > 5, "only %ld allocations", k);
    free(want), free(got);
    tsr_geom_polys_free(&p);
}

Test(alloc_geom, circles_booleans_and_offsets_fail_cleanly)
{
    tsr_geom_polys a, b, ref, out;
    shapes(&a);
    tsr_geom_polys_init(&b), tsr_geom_polys_init(&ref), tsr_geom_polys_init(&out);
    cr_assert_eq(tsr_geom_polys_add_circle(&b, 50, 60, 40, 0.01, NULL), TSR_OK);
    for (int op = 0; op < 6; op++) {
        tsr_error err = {0};
        tsr_status st;
        if (op < 4)
            st = tsr_geom_boolean((tsr_geom_op)op, &a, &b, &ref, &err);
        else
            st = tsr_geom_offset(&a, op == 4 ? 1.5 : -0.75, TSR_GEOM_JOIN_ROUND, 0.01, &ref,
                                 &err);
        cr_assert_eq(st, TSR_OK, "%s", err.msg);
        for (long k = 1;; k++) {
            /* out holds a ring before each try: it must still hold it after a failure */
            tsr_geom_polys_clear(&out);
            cr_assert_eq(tsr_geom_polys_add_rect(&out, 1, 2, 3, 4, NULL), TSR_OK);
            fa_arm(k);
            if (op < 4)
                st = tsr_geom_boolean((tsr_geom_op)op, &a, &b, &out, &err);
            else
                st = tsr_geom_offset(&a, op == 4 ? 1.5 : -0.75, TSR_GEOM_JOIN_ROUND, 0.01, &out,
                                     &err);
            bool fired = fa_fired();
            fa_disarm();
            if (!fired || st == TSR_OK) {
                /* none injected, or one absorbed (a shrink made again: geom/clip.cpp): the
                 * reference either way */
                cr_assert_eq(st, TSR_OK, "%s", err.msg);
                cr_assert(out.npt == ref.npt && out.nring == ref.nring, "op %d failure %ld", op, k);
                cr_assert(memcmp(out.pt, ref.pt, ref.npt * sizeof *ref.pt) == 0);
                if (!fired)
                    break;
                NO_LEAKS("boolean");
                continue;
            }
            expect_nomem(st, &err, k);
            cr_assert(out.nring == 1 && out.npt == 4 && out.pt[2].x == 4 && out.pt[2].y == 6,
                      "op %d failure %ld changed out", op, k);
            NO_LEAKS("boolean");
        }
    }
    /* a circle: the set keeps what it had */
    for (long k = 1;; k++) {
        tsr_error err = {0};
        size_t nring = b.nring, npt = b.npt;
        fa_arm(k);
        tsr_status st = tsr_geom_polys_add_circle(&b, 1, 2, 300, 0.001, &err);
        bool fired = fa_fired();
        fa_disarm();
        if (!fired) {
            cr_assert_eq(st, TSR_OK);
            break;
        }
        expect_nomem(st, &err, k);
        cr_assert(b.nring == nring && b.npt == npt);
    }
    tsr_geom_polys_free(&a), tsr_geom_polys_free(&b);
    tsr_geom_polys_free(&ref), tsr_geom_polys_free(&out);
}
