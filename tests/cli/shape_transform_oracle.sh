#!/usr/bin/env bash
# Transformed shapes (docs/shape-transforms.md) against shapely: each shape built from its
# definition in docs/format.md §4.2 (curves as polygons of 1024 segments on the curve), then
# mirrored, scaled, turned and moved by shapely.affinity as the page defines it (about the
# shape's centre; counterclockwise as seen is clockwise in shapely's y-up sense: -angle), its
# exact coverage by tests/oracle/coverage.py, blended over the fill; tessera's 8-bit samples
# within one step of it. Skips where python3-shapely or numpy is missing.
set -euo pipefail
: "${TESSERA:?}" "${SRC:?}"
PY=/usr/bin/python3
"$PY" -c 'import shapely, numpy' 2>/dev/null || { echo "skip: python3-shapely or numpy missing"; exit 0; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
check() { # NAME SOURCE-JSON
  local name=$1 src=$2
  printf 'tessera: 1\nroot:\n  size: [80, 60]\n  fill: 0.2\n  source: %s\n' "$src" >"$t/$name.yaml"
  "$TESSERA" render "$t/$name.yaml" -o "$t/$name.raw" --progress none
  "$PY" - "$src" >"$t/$name.cases" <<'PY'
import json, sys
from shapely import affinity
from shapely.geometry import Point, Polygon, box
from shapely.geometry.polygon import orient
from shapely.ops import unary_union
s = json.loads(sys.argv[1])
SEG = 256  # quarter segments: 1024 per curve
def disc(c, r):
    return Point(c).buffer(r, SEG)
def operand(s):
    k = s.get("shape")
    if k == "rect":
        x, y, w, h = s["rect"]
        g, pivot = box(x, y, x + w, y + h), (x + w / 2, y + h / 2)
    elif k == "polygon":
        g = Polygon(s["points"])
        b = g.bounds
        pivot = ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
    elif k == "circle":
        g, pivot = disc(s["center"], s["radius"]), tuple(s["center"])
    elif k == "ellipse":
        c = s["center"]
        g, pivot = affinity.scale(disc(c, 1), s["radii"][0], s["radii"][1], origin=tuple(c)), tuple(c)
    elif k == "ring":
        c, (r0, r1) = s["center"], s["radii"]
        g, pivot = disc(c, r1).difference(disc(c, r0)) if r0 > 0 else disc(c, r1), tuple(c)
    else:
        a = unary_union([operand(o) for o in s["a"]])
        b = unary_union([operand(o) for o in s.get("b", [])])
        return {"union": a.union(b), "difference": a.difference(b),
                "intersection": a.intersection(b), "xor": a.symmetric_difference(b)}[s["boolean"]]
    if s.get("mirror"):
        g = affinity.scale(g, -1, 1, origin=pivot)
    k = s.get("scale", 1)
    g = affinity.scale(g, k, k, origin=pivot)
    g = affinity.rotate(g, -s.get("rotate", 0), origin=pivot)
    dx, dy = s.get("translate", [0, 0])
    return affinity.translate(g, dx, dy)
r = operand(s)
print("case 0 0 80 60")
for g in getattr(r, "geoms", [r]):
    if g.is_empty:
        continue
    g = orient(g, 1.0)
    for ring in [g.exterior] + list(g.interiors):
        pts = list(ring.coords)[:-1]
        print("ring %d" % len(pts))
        for x, y in pts:
            print("%.17g %.17g" % (x, y))
PY
  "$PY" "$SRC/tests/oracle/coverage.py" "$t/$name.cases" "$t/$name.cov"
  "$PY" - "$t/$name.raw" "$t/$name.cov" "$name" "$src" <<'PY'
import json, sys
import numpy as np
v = np.float32(json.loads(sys.argv[4]).get("value", 1))
got = np.fromfile(sys.argv[1], dtype=np.uint8).reshape(60, 80).astype(int)
c = np.loadtxt(sys.argv[2]).reshape(60, 80)
p = np.float32(0.2) * (1 - c) + v * c
want = np.floor(p * 255 + 0.5).astype(int)
d = np.abs(got - want)
edge = int(((c > 0) & (c < 1)).sum())
print("%s: %d px covered, %d on edges, largest difference %d" % (sys.argv[3], int((c > 0).sum()), edge, d.max()))
if edge < 20 or d.max() > 1:
    y, x = np.unravel_index(np.argmax(d), d.shape)
    sys.exit("%s: pixel %d,%d: tessera %d, oracle %d (coverage %.6f)" % (sys.argv[3], x, y, got[y, x], want[y, x], c[y, x]))
PY
}
check rect '{"shape": "rect", "rect": [20.5, 22.25, 36.5, 13.75], "rotate": 30, "scale": 1.25, "translate": [0.3, -0.45], "value": 0.9}'
check polygon '{"shape": "polygon", "points": [[8.5, 6.25], [62.75, 12], [40, 24.5], [55, 50], [12, 41]], "mirror": true, "rotate": -47.5, "value": 0.85}'
check ellipse '{"shape": "ellipse", "center": [40.2, 29.7], "radii": [31.5, 11.25], "rotate": 61, "scale": 0.8, "translate": [1.125, -0.375]}'
check ring '{"shape": "ring", "center": [39.5, 30.25], "radii": [8.2, 17.6], "mirror": true, "scale": 1.5, "translate": [0.4, 0.1], "value": 0.7}'
check circle '{"shape": "circle", "center": [38.3, 31.9], "radius": 21.7, "scale": 0.75, "translate": [0.25, 0.125]}'
check boolean '{"boolean": "difference", "a": [{"shape": "rect", "rect": [12, 10, 56, 40], "rotate": 17.5}], "b": [{"shape": "polygon", "points": [[30, 20], [55, 25], [35, 42]], "rotate": 100, "mirror": true, "scale": 0.9}], "value": 0.8}'
