#!/usr/bin/env python3
"""Exact-area coverage oracle for geom/ (tests/test_coverage.c), written from the conventions
alone, with shapely (Debian python3-shapely) doing the geometry:

    python3 tests/oracle/coverage.py CASES OUT

Pixel (i, j) is the square [i, i+1) x [j, j+1); its coverage is the area of its intersection
with the union of the rings under the nonzero winding rule. The nonzero region is found the
long way, independently of Clipper: the rings' lines are noded (unary_union), cut into faces
(polygonize), and a face is kept when the winding number of the rings around a point inside it
is not zero; the kept faces are united, cut to each pixel row, and intersected with every
pixel's square.

CASES holds cases one after another:
    case X Y W H          the rect (pixels [X, X+W) x [Y, Y+H))
    ring N                then N lines "x y": a closed ring
OUT gets, per case, W*H lines: the coverage of each pixel, row by row (%.17g).
Coordinates are moved by (-X, -Y) first (exact for the tests' dyadic coordinates)."""
import sys

from shapely.geometry import LineString, box
from shapely.ops import polygonize, unary_union
from shapely.prepared import prep


def winding(rings, px, py):
    wn = 0
    for r in rings:
        n = len(r)
        for i in range(n):
            x0, y0 = r[i]
            x1, y1 = r[(i + 1) % n]
            side = (x1 - x0) * (py - y0) - (px - x0) * (y1 - y0)
            if y0 <= py < y1 and side > 0:
                wn += 1
            elif y1 <= py < y0 and side < 0:
                wn -= 1
    return wn


def coverage(rect, rings):
    X, Y, W, H = rect
    rings = [[(x - X, y - Y) for x, y in r] for r in rings if len(r) >= 3]
    lines = [LineString(r + [r[0]]) for r in rings]
    region = None
    if lines:
        noded = unary_union(lines)
        kept = []
        for face in polygonize(noded):
            if face.area <= 0:
                continue
            p = face.representative_point()
            if winding(rings, p.x, p.y) != 0:
                kept.append(face)
        if kept:
            region = unary_union(kept)
    out = []
    for j in range(H):
        # the region cut to the pixel row first (each pixel's intersection is then with a
        # few vertices, not the whole region's); a square the row's part holds is covered
        # whole, one it misses not at all: the same areas, found faster
        row = None if region is None else region.intersection(box(0, j, W, j + 1))
        if row is None or row.is_empty:
            out.extend([0.0] * W)
            continue
        inside = prep(row)
        for i in range(W):
            sq = box(i, j, i + 1, j + 1)
            if not inside.intersects(sq):
                out.append(0.0)
            elif inside.contains(sq):
                out.append(1.0)
            else:
                out.append(row.intersection(sq).area)
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    cases = []
    with open(src) as f:
        toks = f.read().split()
    k = 0
    while k < len(toks):
        t = toks[k]
        if t == "case":
            cases.append(([int(v) for v in toks[k + 1:k + 5]], []))
            k += 5
        elif t == "ring":
            n = int(toks[k + 1])
            k += 2
            pts = [(float(toks[k + 2 * i]), float(toks[k + 2 * i + 1])) for i in range(n)]
            cases[-1][1].append(pts)
            k += 2 * n
        else:
            sys.exit("coverage.py: %s: unexpected %r" % (src, t))
    with open(dst, "w") as f:
        for rect, rings in cases:
            for v in coverage(rect, rings):
                f.write("%.17g\n" % v)


if __name__ == "__main__":
    main()
