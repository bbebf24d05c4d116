#!/usr/bin/env bash
# The rank trait against scipy.ndimage on the same field, in one run on one machine
# (docs/performance.md, "The rank trait on the CPU"):
#
#   scripts/bench-rank.sh [BUILD]     # BUILD: the tessera build folder (default build)
#
# The field is a random 8-bit 4096 x 4096 image (seeded). Each case renders
# `root = rank(image)` with `tessera render -o null --threads 2`, timed around the whole process
# (start-up, PNG decode and the output conversion included) in wall and CPU seconds (user +
# system, /usr/bin/time), and the same design without the rank edge (`none`: what the image
# alone costs); net = the difference, as Mpx per wall second and per CPU second (the latter
# moves much less when other jobs load the machine). scipy.ndimage's minimum_filter,
# maximum_filter and median_filter run on the same values as float32 (what tessera filters),
# one thread (they have none), timed around the call only (perf_counter, process_time).
# Rates are Mpx/s (1e6 output pixels per second), best of BENCH_RUNS (default 3).
set -euo pipefail
BUILD=${1:-build}
T="$BUILD/tessera"
RUNS=${BENCH_RUNS:-3}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
N=4096

"$PY" - "$tmp" "$N" <<'EOF'
import sys
import numpy as np
from PIL import Image
n = int(sys.argv[2])
img = np.random.default_rng(24).integers(0, 256, size=(n, n)).astype(np.uint8)
Image.fromarray(img).save(sys.argv[1] + "/field.png")
np.save(sys.argv[1] + "/field.npy", img)
EOF

cases="none min:square:2 max:disc:3 median:square:1 median:disc:2"
now() { date +%s.%N; }
best_render() { # design -> "wall cpu" seconds of the run with the least CPU of RUNS
    local best="" bw="" w c
    for _ in $(seq "$RUNS"); do
        read -r w c < <(/usr/bin/time -f "%e %U %S" "$T" render "$1" -o null --threads 2 \
            --progress none 2>&1 >/dev/null | tail -1 | awk '{print $1, $2 + $3}')
        if [ -z "$best" ] || [ "$(echo "$c < $best" | bc -l)" = 1 ]; then best=$c bw=$w; fi
    done
    echo "$bw $best"
}
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $N x $N"
printf "%-16s %10s %10s %11s %11s %11s %11s\n" case "wall s" "CPU s" "net Mpx/s" \
    "net/CPU-s" "scipy Mpx/s" "scipy/CPU-s"
bw="" bc_=""
for c in $cases; do
    IFS=: read -r op fp r <<<"$c"
    {
        echo "tessera: 1"
        echo "root:"
        if [ "$op" = none ]; then
            echo "  source: {image: $tmp/field.png}"
        else
            echo "  size: [$N, $N]"
            echo "  children:"
            echo "    - {trait: rank, op: $op, radius: $r, footprint: $fp,"
            echo "       node: {source: {image: $tmp/field.png}}}"
        fi
    } >"$tmp/d.yaml"
    read -r w cpu < <(best_render "$tmp/d.yaml")
    if [ "$op" = none ]; then
        bw=$w bc_=$cpu
        printf "%-16s %10.2f %10.2f %11s %11s %11s %11s\n" none "$w" "$cpu" - - - -
        continue
    fi
    netw=$(echo "$N * $N / ($w - $bw) / 1000000" | bc -l)
    netc=$(echo "$N * $N / ($cpu - $bc_) / 1000000" | bc -l)
    read -r sw sc < <("$PY" - "$tmp" "$op" "$fp" "$r" "$RUNS" <<'EOF'
import sys, time
import numpy as np
from scipy import ndimage
tmp, op, fp, r, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
img = (np.load(tmp + "/field.npy") / np.float32(255)).astype(np.float32)
yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
foot = np.ones((2 * r + 1,) * 2, bool) if fp == "square" else (xx * xx + yy * yy <= r * r)
f = {"min": ndimage.minimum_filter, "max": ndimage.maximum_filter,
     "median": ndimage.median_filter}[op]
bw = bc = None
for _ in range(runs):
    t0, c0 = time.perf_counter(), time.process_time()
    f(img, footprint=foot, mode="nearest")
    w, c = time.perf_counter() - t0, time.process_time() - c0
    if bc is None or c < bc:
        bw, bc = w, c
print(f"{img.size / bw / 1e6:.1f} {img.size / bc / 1e6:.1f}")
EOF
    )
    printf "%-16s %10.2f %10.2f %11.1f %11.1f %11s %11s\n" "$c" "$w" "$cpu" "$netw" "$netc" "$sw" "$sc"
done
