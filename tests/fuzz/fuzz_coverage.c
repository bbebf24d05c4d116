/* Fuzz target: geom's coverage of polygons made from the input (geom/geom.h). Layout: 4 bytes
 * of rect (x, y as int8 * 16, w, h in 1..64), then points of 5 bytes: a tag and 4 bytes. Tag
 * 0xff starts a new ring (the 4 bytes unused); tag bit 7 set: x and y are read from the next
 * 16 bytes as raw doubles (NaN, inf, huge: the refusals); else x, y = int16 / 64 around the
 * rect. Properties: building the edges succeeds or fails with TSR_EINVAL and a "geom: "
 * message; every coverage is in [0, 1]; the rect computed as four quarters gives the same
 * bits (a pixel's coverage does not depend on the rect it is computed in). */
#include "geom/geom.h"

#define FUZZ_TARGET "fuzz_coverage"
#include "tests/fuzz/fuzz.h"

#include <string.h>

static void
cover(const tsr_geom_polys *p, tsr_rect r, float *out, tsr_status *st, tsr_error *err)
{
    *st = tsr_geom_coverage(p, r, out, err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    tsr_rect r = tsr_rect_make((int8_t)data[0] * 16, (int8_t)data[1] * 16, 1 + data[2] % 64,
                               1 + data[3] % 64);
    tsr_geom_polys p;
    tsr_geom_polys_init(&p);
    tsr_geom_pt ring[256];
    size_t n = 0;
    for (size_t at = 4; at + 5 <= size;) {
        uint8_t tag = data[at];
        tsr_geom_pt q;
        if (tag == 0xff || n == 256) {
            tsr_geom_polys_add(&p, ring, n, NULL);
            n = 0;
            at += 5;
            continue;
        }
        if (tag & 0x80) {
            if (at + 17 > size)
                break;
            memcpy(&q.x, data + at + 1, 8);
            memcpy(&q.y, data + at + 9, 8);
            at += 17;
        } else {
            int16_t x, y;
            memcpy(&x, data + at + 1, 2);
            memcpy(&y, data + at + 3, 2);
            q.x = (double)r.x + x / 64.0;
            q.y = (double)r.y + y / 64.0;
            at += 5;
        }
        ring[n++] = q;
    }
    tsr_geom_polys_add(&p, ring, n, NULL);

    float whole[64 * 64], part[64 * 64];
    tsr_error err = {TSR_OK, ""};
    tsr_status st;
    cover(&p, r, whole, &st, &err);
    PROPERTY(st == TSR_OK || (st == TSR_EINVAL && strncmp(err.msg, "geom: ", 6) == 0),
             "status %d: %s", (int)st, err.msg);
    if (st == TSR_OK) {
        for (int64_t i = 0; i < r.w * r.h; i++)
            PROPERTY(whole[i] >= 0.0f && whole[i] <= 1.0f, "pixel %lld: %g", (long long)i,
                     whole[i]);
        int64_t mx = r.w / 2, my = r.h / 2;
        tsr_rect qs[4] = {tsr_rect_make(r.x, r.y, mx, my),
                          tsr_rect_make(r.x + mx, r.y, r.w - mx, my),
                          tsr_rect_make(r.x, r.y + my, mx, r.h - my),
                          tsr_rect_make(r.x + mx, r.y + my, r.w - mx, r.h - my)};
        for (int k = 0; k < 4; k++) {
            tsr_rect t = qs[k];
            if (tsr_rect_empty(t))
                continue;
            cover(&p, t, part, &st, &err);
            PROPERTY(st == TSR_OK, "quarter %d: %s", k, err.msg);
            for (int64_t j = 0; j < t.h; j++)
                PROPERTY(memcmp(part + j * t.w, whole + (t.y - r.y + j) * r.w + (t.x - r.x),
                                (size_t)t.w * sizeof *part) == 0,
                         "quarter %d row %lld: other bits", k, (long long)j);
        }
    }
    tsr_geom_polys_free(&p);
    return 0;
}
