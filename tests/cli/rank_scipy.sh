#!/usr/bin/env bash
# rank against scipy.ndimage: the minimum, maximum and median filters with the same footprint
# (a square, or a disc as a boolean `footprint` array) and the same edge (clamp = 'nearest',
# zero = 'constant' with cval 0, wrap = 'wrap') over a random 8-bit image. The child's values
# are k / 255, a rank picks one of them, and the output maps it back to k, so the engine's
# samples must equal scipy's filter of the image byte for byte. Rendered at --tile 16 and 512:
# a tile computes alone with its halo of r.
. "${SRC:?}/tests/cli/lib/common.sh"
. "$SRC/tests/cli/lib/python.sh"
find_python numpy scipy

"$PY" - "$tmp" "$SRC/tests/oracle" <<'EOF' || bad "writing the test image"
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from tinypng import write_png
rng = np.random.default_rng(24)
img = rng.integers(0, 256, size=(45, 61)).astype(np.uint8)
# a few flat patches and isolated specks, where erosion and the median do something visible
img[10:20, 5:25] = 200
img[14, 12] = 3
img[30:40, 40:58] = 17
write_png(sys.argv[1] + "/img.png", img, 0, 8)
np.save(sys.argv[1] + "/img.npy", img)
EOF

: >"$tmp/cases"
for op in min max median; do
    for fp in square disc; do
        for edge in clamp zero wrap; do
            for r in 1 3; do
                name="$op-$fp-$edge-r$r"
                cat >"$tmp/$name.yaml" <<EOF
tessera: 1
root:
  size: [61, 45]
  children:
    - {trait: rank, op: $op, radius: $r, footprint: $fp, edge: $edge,
       node: {source: {image: $tmp/img.png}}}
EOF
                for tile in 16 512; do
                    if "$TESSERA" render "$tmp/$name.yaml" --tile "$tile" -o "$tmp/$name.$tile.raw" \
                        --progress none 2>"$tmp/err"; then
                        echo "$name $tile $op $fp $edge $r" >>"$tmp/cases"
                    else
                        bad "$name: render: $(cat "$tmp/err")"
                    fi
                done
            done
        done
    done
done

# one python for every comparison: importing scipy costs more than the filters
"$PY" - "$tmp" >"$tmp/results" <<'EOF' || bad "the comparison did not run"
import sys
import numpy as np
from scipy import ndimage
tmp = sys.argv[1]
img = np.load(tmp + "/img.npy")
for line in open(tmp + "/cases"):
    name, tile, op, fp, edge, r = line.split()
    r = int(r)
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    foot = np.ones((2 * r + 1,) * 2, bool) if fp == "square" else (xx * xx + yy * yy <= r * r)
    mode = {"clamp": "nearest", "zero": "constant", "wrap": "wrap"}[edge]
    f = {"min": ndimage.minimum_filter, "max": ndimage.maximum_filter,
         "median": ndimage.median_filter}[op]
    want = f(img, footprint=foot, mode=mode, cval=0)
    got = np.fromfile(f"{tmp}/{name}.{tile}.raw", np.uint8).reshape(img.shape)
    diff = np.argwhere(got != want)
    if len(diff):
        y, x = diff[0]
        print(f"FAIL {name} at tile {tile}: {len(diff)} samples differ, first ({x}, {y}): "
              f"{got[y, x]} against scipy's {want[y, x]}")
    else:
        print(f"ok {name} at tile {tile} equals scipy.ndimage")
EOF
while read -r word rest; do
    if [ "$word" = ok ]; then ok "$rest"; else bad "$rest"; fi
done <"$tmp/results"
[ "$(wc -l <"$tmp/results")" -eq 72 ] && ok "72 cases compared" ||
    bad "$(wc -l <"$tmp/results") results for 72 cases"
finish
