// geom's wrapper of Clipper 6.4 (Debian libpolyclipping): the library is C++, the project C, so
// this file turns integer rings into Clipper paths and back, and exceptions into codes.
extern "C" {
#include "geom/clip.h"
}

#include "clipper.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

ClipperLib::Paths
to_paths(const tsr_clip_set *s)
{
    ClipperLib::Paths out;
    if (!s)
        return out;
    out.resize(s->nring);
    size_t at = 0;
    for (size_t k = 0; k < s->nring; k++) {
        ClipperLib::Path &p = out[k];
        p.reserve(s->end[k] - at);
        for (; at < s->end[k]; at++)
            p.push_back(ClipperLib::IntPoint(s->xy[2 * at], s->xy[2 * at + 1]));
    }
    return out;
}

int
from_paths(const ClipperLib::Paths &ps, tsr_clip_set *out)
{
    size_t npt = 0, nring = 0;
    for (const ClipperLib::Path &p : ps)
        if (p.size() >= 3)
            npt += p.size(), nring++;
    out->xy = (int64_t *)malloc((npt ? npt : 1) * 2 * sizeof *out->xy);
    out->end = (size_t *)malloc((nring ? nring : 1) * sizeof *out->end);
    if (!out->xy || !out->end) {
        tsr_clip_set_free(out);
        return TSR_CLIP_NOMEM;
    }
    size_t i = 0, k = 0;
    for (const ClipperLib::Path &p : ps) {
        if (p.size() < 3)
            continue;
        for (const ClipperLib::IntPoint &q : p) {
            out->xy[2 * i] = q.X;
            out->xy[2 * i + 1] = q.Y;
            i++;
        }
        out->end[k++] = i;
    }
    out->npt = npt;
    out->nring = nring;
    return TSR_CLIP_OK;
}

void
empty(tsr_clip_set *out)
{
    out->xy = NULL;
    out->end = NULL;
    out->npt = out->nring = 0;
}

// Clipper 6.4's Execute catches every exception inside it (std::bad_alloc included) and returns
// false; its only other failure, an intersection order it cannot fix, is not known to arise
// from the rings geom gives it. So false is reported as out of memory: seen on a GPU host,
// where test_alloc's injected allocation failures came back from Clipper as "execute failed"
// (an input error to the user) instead of ENOMEM; how they reached Clipper there (its vectors
// use libstdc++'s operator new, which the test's wrapper does not see here) was not found.
int
execute_failed(char *msg, size_t msgn)
{
    snprintf(msg, msgn, "clipper: out of memory");
    return TSR_CLIP_NOMEM;
}

} // namespace

extern "C" int
tsr_clip_execute(int op, const tsr_clip_set *a, const tsr_clip_set *b, tsr_clip_set *out,
                 char *msg, size_t msgn)
{
    static const ClipperLib::ClipType types[4] = {ClipperLib::ctUnion, ClipperLib::ctIntersection,
                                                  ClipperLib::ctDifference, ClipperLib::ctXor};
    empty(out);
    try {
        ClipperLib::Clipper c;
        c.AddPaths(to_paths(a), ClipperLib::ptSubject, true);
        if (b)
            c.AddPaths(to_paths(b), ClipperLib::ptClip, true);
        ClipperLib::Paths res;
        /* op 4: a union under the even-odd rule */
        ClipperLib::PolyFillType ft = (op & 4) ? ClipperLib::pftEvenOdd : ClipperLib::pftNonZero;
        if (!c.Execute(types[op & 3], res, ft, ft))
            return execute_failed(msg, msgn);
        return from_paths(res, out);
    } catch (const std::bad_alloc &) {
        return TSR_CLIP_NOMEM;
    } catch (const std::exception &x) {
        snprintf(msg, msgn, "clipper: %s", x.what());
        return TSR_CLIP_FAILED;
    } catch (...) {
        snprintf(msg, msgn, "clipper: failed");
        return TSR_CLIP_FAILED;
    }
}

extern "C" int
tsr_clip_offset(const tsr_clip_set *a, double delta, int join, double arc_tol,
                tsr_clip_set *out, char *msg, size_t msgn)
{
    static const ClipperLib::JoinType joins[3] = {ClipperLib::jtRound, ClipperLib::jtSquare,
                                                  ClipperLib::jtMiter};
    empty(out);
    try {
        // the union first: ClipperOffset offsets each path by its orientation, so overlapping
        // or self-intersecting input would come out wrong
        ClipperLib::Clipper c;
        c.AddPaths(to_paths(a), ClipperLib::ptSubject, true);
        ClipperLib::Paths u, res;
        if (!c.Execute(ClipperLib::ctUnion, u, ClipperLib::pftNonZero, ClipperLib::pftNonZero))
            return execute_failed(msg, msgn);
        ClipperLib::JoinType jt = joins[join < 0 || join > 2 ? 0 : join];
        ClipperLib::ClipperOffset o(2.0, arc_tol);
        o.AddPaths(u, jt, ClipperLib::etClosedPolygon);
        o.Execute(res, delta);
        // ClipperOffset ignores the failure of its own closing union (out of memory swallowed
        // inside it, as in Execute above) and returns an empty set. A grown set is never empty;
        // a shrunk one may be, so it is made once more, and only an empty second answer stands
        if (res.empty() && !u.empty()) {
            if (delta > 0)
                return execute_failed(msg, msgn);
            ClipperLib::ClipperOffset again(2.0, arc_tol);
            again.AddPaths(u, jt, ClipperLib::etClosedPolygon);
            again.Execute(res, delta);
        }
        return from_paths(res, out);
    } catch (const std::bad_alloc &) {
        return TSR_CLIP_NOMEM;
    } catch (const std::exception &x) {
        snprintf(msg, msgn, "clipper: %s", x.what());
        return TSR_CLIP_FAILED;
    } catch (...) {
        snprintf(msg, msgn, "clipper: failed");
        return TSR_CLIP_FAILED;
    }
}

extern "C" void
tsr_clip_set_free(tsr_clip_set *s)
{
    free(s->xy);
    free(s->end);
    empty(s);
}
