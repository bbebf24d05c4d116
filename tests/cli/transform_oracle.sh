#!/usr/bin/env bash
# transform against an independent numpy resampler of the documented filters
# (tests/oracle/transform.py): a random 8-bit image turned, mirrored, scaled and shifted under
# every filter and `outside` mode, rendered at depth 16 and --tile 16 and 512; every sample
# within one 16-bit step of the oracle's (stricter than one 8-bit step), leaving out only the
# pixels whose point lies within 1e-6 px of an edge that decides coverage (or, for nearest, of
# a pixel edge). The oracle checks its own bilinear against scipy.ndimage.map_coordinates.
# Then the CLI's refusals: bad transform keys exit 2 naming the key.
. "${SRC:?}/tests/cli/lib/common.sh"
. "$SRC/tests/cli/lib/python.sh"
find_python numpy scipy

W=70 H=60
"$PY" - "$tmp" "$SRC/tests/oracle" <<'EOF' || bad "writing the test image"
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from tinypng import write_png
rng = np.random.default_rng(24)
img = rng.integers(0, 256, size=(29, 37)).astype(np.uint8)
img[5:12, 4:20] = 230  # flat patches and a bar, where the turn is easy to see
img[20:23, :] = 10
write_png(sys.argv[1] + "/img.png", img, 0, 8)
np.save(sys.argv[1] + "/img.npy", img)
EOF

# name|edge keys (a python dict literal of the same keys follows in the cases file)
cases='
r30|rotate: 30, offset: [5, 7]|{"rotate": 30, "offset": (5, 7)}
r-47|rotate: -47.5, mirror: true, filter: bicubic, outside: zero, offset: [20, 10]|{"rotate": -47.5, "mirror": True, "filter": "bicubic", "outside": "zero", "offset": (20, 10)}
r123|rotate: 123, scale: 1.6, outside: clamp, shift: [0.3, -0.2], offset: [12, 15]|{"rotate": 123, "scale": 1.6, "outside": "clamp", "shift": (0.3, -0.2), "offset": (12, 15)}
r10w|rotate: 10, scale: 0.75, filter: bicubic, outside: wrap, pivot: [3.5, 10.25]|{"rotate": 10, "scale": 0.75, "filter": "bicubic", "outside": "wrap", "pivot": (3.5, 10.25)}
r200n|rotate: 200, mirror: true, filter: nearest, offset: [18, 14]|{"rotate": 200, "mirror": True, "filter": "nearest", "offset": (18, 14)}
r90|rotate: 90, offset: [11, 9]|{"rotate": 90, "offset": (11, 9)}
sub|shift: [0.5, 0.25], outside: zero, offset: [3, 4]|{"shift": (0.5, 0.25), "outside": "zero", "offset": (3, 4)}
r300|rotate: 300, scale: 2.2, filter: bicubic, offset: [-10, -5]|{"rotate": 300, "scale": 2.2, "filter": "bicubic", "offset": (-10, -5)}
r77w|rotate: 77, mirror: true, scale: 0.5, outside: wrap|{"rotate": 77, "mirror": True, "scale": 0.5, "outside": "wrap"}
r45c|rotate: 45, scale: 3, filter: bicubic, outside: clamp, offset: [16, 16]|{"rotate": 45, "scale": 3, "filter": "bicubic", "outside": "clamp", "offset": (16, 16)}
r-33z|rotate: -33, scale: 1.3, outside: zero, shift: [0.7, 0.1], offset: [15, 12]|{"rotate": -33, "scale": 1.3, "outside": "zero", "shift": (0.7, 0.1), "offset": (15, 12)}
'
: >"$tmp/cases"
while IFS='|' read -r name keys py; do
    [ -n "$name" ] || continue
    cat >"$tmp/$name.yaml" <<EOF
tessera: 1
output: {depth: 16}
root:
  size: [$W, $H]
  fill: 0.5
  children:
    - {trait: transform, $keys, node: {source: {image: $tmp/img.png}}}
EOF
    for tile in 16 512; do
        if "$TESSERA" render "$tmp/$name.yaml" --tile "$tile" -o "$tmp/$name.$tile.raw" \
            --progress none 2>"$tmp/err"; then
            echo "$name|$tile|$py" >>"$tmp/cases"
        else
            bad "$name: render: $(cat "$tmp/err")"
        fi
    done
done <<<"$cases"

"$PY" - "$tmp" "$SRC/tests/oracle" "$W" "$H" >"$tmp/results" <<'EOF' || bad "the comparison did not run"
import ast, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
import transform as xf
tmp, W, H = sys.argv[1], int(sys.argv[3]), int(sys.argv[4])
img = np.load(tmp + "/img.npy")
child = (img.astype(np.float64) / 255.0).astype(np.float32).astype(np.float64)  # the source: sample / 255 in double, rounded once to float32
for line in open(tmp + "/cases"):
    name, tile, py = line.rstrip("\n").split("|")
    case = ast.literal_eval(py)
    want, near = xf.render(child, case, W, H, 0.5)
    if case.get("filter", "bilinear") == "bilinear":
        sp = xf.bilinear_scipy(child, case, W, H, 0.5)
        err = np.abs(np.where(near, 0, sp - want)).max()
        if err > 1e-9:
            print(f"FAIL {name}: the oracle's bilinear differs from scipy's by {err:g}")
            continue
    got = np.fromfile(f"{tmp}/{name}.{tile}.raw", "<u2").reshape(H, W).astype(np.int64)
    ws = xf.to_samples(want, 16)
    diff = np.abs(got - ws)
    diff[near] = 0
    bad = np.argwhere(diff > 1)
    covered = int((want != 0.5).sum())
    if len(bad):
        y, x = bad[0]
        print(f"FAIL {name} at tile {tile}: {len(bad)} samples off by more than 1, first "
              f"({x}, {y}): {got[y, x]} against the oracle's {ws[y, x]}")
    elif covered < W * H // 10:
        print(f"FAIL {name}: only {covered} pixels covered: the case tests little")
    else:
        print(f"ok {name} at tile {tile} within one 16-bit step of the oracle "
              f"({int(near.sum())} edge pixels left out, max diff {int(diff.max())})")
EOF
while read -r word rest; do
    if [ "$word" = ok ]; then ok "$rest"; else bad "$rest"; fi
done <"$tmp/results"
[ "$(wc -l <"$tmp/results")" -eq 22 ] && ok "22 renders compared" ||
    bad "$(wc -l <"$tmp/results") results for 22 renders"

# bad keys: exit 2, the file, line and key path in the message
for kv in "scale: 0|root.children[0].scale: must be in 0.001..1000" \
    "filter: lanczos|root.children[0].filter: unknown filter 'lanczos'" \
    "outside: mirror|root.children[0].outside: unknown outside 'mirror'" \
    "shift: [1]|root.children[0].shift: expected 2 values, got 1"; do
    key=${kv%%|*} want=${kv#*|}
    printf 'tessera: 1\nroot:\n  size: [8, 8]\n  children:\n    - {trait: transform, %s, node: {size: [4, 4]}}\n' \
        "$key" >"$tmp/bad.yaml"
    "$TESSERA" render "$tmp/bad.yaml" -o "$tmp/bad.raw" --progress none 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -qF "bad.yaml:5:" "$tmp/err" && grep -qF "$want" "$tmp/err" &&
        [ ! -e "$tmp/bad.raw" ]; then
        ok "'$key' refused with exit 2: $(cat "$tmp/err")"
    else
        bad "'$key': exit $rc, '$(cat "$tmp/err")' (wanted exit 2 and '$want', no output)"
    fi
done
finish
