#!/usr/bin/env bash
# Boolean sources against shapely: the same operands (rects and polygons, so both sides start
# from the same exact rings, self-intersecting and overlapping ones included) combined by
# shapely's own union, intersection, difference and symmetric difference, the result's exact
# coverage by tests/oracle/coverage.py, blended over the fill; tessera's 8-bit samples within
# one step of it. Skips where python3-shapely or numpy is missing.
set -euo pipefail
: "${TESSERA:?}" "${SRC:?}"
PY=/usr/bin/python3
"$PY" -c 'import shapely, numpy' 2>/dev/null || { echo "skip: python3-shapely or numpy missing"; exit 0; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
A='[[5.5, 4.25], [60.75, 10], [52, 47.5], [9, 38]]'
B='[[30, -3], [78.5, 20], [41.25, 55.5], [70, 52], [18.5, 22.75]]'   # self-intersecting
R='[40.25, 30.5, 30, 12.125]'
for op in union intersection difference xor; do
  cat >"$t/$op.yaml" <<YAML
tessera: 1
root:
  size: [80, 60]
  fill: 0.2
  source:
    boolean: $op
    a: [{shape: polygon, points: $A}, {shape: rect, rect: $R}]
    b: [{shape: polygon, points: $B}]
    value: 0.95
YAML
  "$TESSERA" render "$t/$op.yaml" -o "$t/$op.raw" --progress none
  "$PY" - "$op" "$A" "$B" "$R" >"$t/$op.cases" <<'PY'
import json, sys
from shapely.geometry import Polygon, box
from shapely.geometry.polygon import orient
from shapely.ops import unary_union
op, A, B, R = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
def nonzero(pts):
    # a polygon operand under the nonzero rule (tessera's operands): its self-intersections
    # resolved by shapely's own noding (unary_union of the ring's faces with winding != 0 is
    # the same for these rings: none winds twice)
    from shapely.ops import polygonize
    from shapely.geometry import LineString
    faces = list(polygonize(unary_union(LineString(pts + [pts[0]]))))
    return unary_union(faces)
a = unary_union([nonzero(A), box(R[0], R[1], R[0] + R[2], R[1] + R[3])])
b = nonzero(B)
r = {"union": a.union(b), "intersection": a.intersection(b), "difference": a.difference(b),
     "xor": a.symmetric_difference(b)}[op]
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
  "$PY" "$SRC/tests/oracle/coverage.py" "$t/$op.cases" "$t/$op.cov"
  "$PY" - "$t/$op.raw" "$t/$op.cov" "$op" <<'PY'
import sys
import numpy as np
got = np.fromfile(sys.argv[1], dtype=np.uint8).reshape(60, 80).astype(int)
c = np.loadtxt(sys.argv[2]).reshape(60, 80)
p = np.float32(0.2) * (1 - c) + np.float32(0.95) * c
want = np.floor(p * 255 + 0.5).astype(int)
d = np.abs(got - want)
print("%s: %d px covered, largest difference %d" % (sys.argv[3], int((c > 0).sum()), d.max()))
if (c > 0).sum() < 50 or d.max() > 1:
    y, x = np.unravel_index(np.argmax(d), d.shape)
    sys.exit("%s: pixel %d,%d: tessera %d, oracle %d" % (sys.argv[3], x, y, got[y, x], want[y, x]))
PY
done
