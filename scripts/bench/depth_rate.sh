#!/usr/bin/env bash
# Packed 1-bit output rate (docs/performance.md, "Depth 1"): a design rendered to null as 8-bit
# samples and as depth 1 (blue64), alternately, 3 times each; then numpy thresholding the same
# 8-bit raster (a tiled bayer8 compare and np.packbits, one thread) as an outside peer (496 rows, best of 3).
# Usage: scripts/bench/depth_rate.sh TESSERA DESIGN ROWS
set -euo pipefail
T=${1:?tessera binary} D=${2:?design} R=${3:-4000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^  depth: 8$/  depth: 1\n  dither: blue64/' "$D" >"$tmp/d1.yaml"
grep -q 'dither: blue64' "$tmp/d1.yaml" || { echo "no 'depth: 8' line in $D"; exit 2; }
for i in 1 2 3; do
  echo "8-bit : $("$T" render "$D" -o null --rows 0:"$R" 2>&1 | tail -n 1)"
  echo "1-bit : $("$T" render "$tmp/d1.yaml" -o null --rows 0:"$R" 2>&1 | tail -n 1)"
done
"$T" render "$D" -o "$tmp/s.raw" --rows 0:500 --progress none
W=$(( $(stat -c %s "$tmp/s.raw") / 500 ))
/usr/bin/python3 - "$tmp/s.raw" "$W" <<'P'
import sys, time
import numpy as np
w = int(sys.argv[2])
s = np.fromfile(sys.argv[1], dtype=np.uint8).reshape(500, w)
b = np.array([[0, 32, 8, 40, 2, 34, 10, 42], [48, 16, 56, 24, 50, 18, 58, 26],
              [12, 44, 4, 36, 14, 46, 6, 38], [60, 28, 52, 20, 62, 30, 54, 22],
              [3, 35, 11, 43, 1, 33, 9, 41], [51, 19, 59, 27, 49, 17, 57, 25],
              [15, 47, 7, 39, 13, 45, 5, 37], [63, 31, 55, 23, 61, 29, 53, 21]])
t = (((2 * b + 1) * 255) // 128).astype(np.uint8)
s = s[:496].reshape(62, 8, w)  # whole periods of the array's rows
best = 1e9
for _ in range(3):
    t0 = time.perf_counter()
    tt = np.tile(t, (1, w // 8 + 1))[:, :w]  # 8 rows of thresholds, broadcast over the rest
    out = np.packbits((s > tt[None]).reshape(496, w), axis=1)
    best = min(best, time.perf_counter() - t0)
print("numpy : %d bytes in %.2f s (%.1f MB/s of packed output, bayer8, one thread)"
      % (out.size, best, out.size / best / 1e6))
P
