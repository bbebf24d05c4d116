#!/usr/bin/env bash
# The optics examples' bodies (docs/optics.md) on the CPU beside a numpy peer in the same run:
# `tessera profile --backend cpu --threads T --seconds S` over each design, then numpy computing
# the same surface (the same formulas, wrap and levels; the lens arrays from each pixel's
# position in its cell, as a numpy script would; no exact-area edges) over a 4096 x 1024 block
# of the same design and converting it to the same samples. Prints a markdown table: MB/s and
# MB per CPU-second of each, and their ratio. Usage:
#   scripts/bench-optics.sh [build/tessera] [seconds] [threads]
set -euo pipefail
tessera=${1:-build/tessera}
secs=${2:-4}
threads=${3:-2}
py=${PYTHON:-/usr/bin/python3}
printf '| design | tessera MB/s | tessera MB per CPU-s | numpy MB/s (1 thread) | ratio (wall) |\n'
printf '| --- | ---: | ---: | ---: | ---: |\n'
for d in diffractive-lens-array spiral-phase-plate aspheric-lens-array noisy-diffuser; do
    "$tessera" profile "designs/examples/$d.yaml" --backend cpu --threads "$threads" \
        --seconds "$secs" --json >"/tmp/bench-optics.$$" || { echo "profile failed: $d" >&2; exit 1; }
    "$py" - "$d" "/tmp/bench-optics.$$" <<'PY'
import json, sys, time
import numpy as np
name, prof = sys.argv[1], json.load(open(sys.argv[2]))
W, H = 4096, 1024
y, x = np.mgrid[0:H, 0:W].astype(np.float64) + 0.5
def conic(c, k, r2):
    return c * r2 / (1 + np.sqrt(np.maximum(1 - (1 + k) * c * c * r2, 0)))
def peer():
    if name == "diffractive-lens-array":
        dx, dy = np.mod(x, 500) - 250, np.mod(y, 500) - 250
        r2 = dx * dx + dy * dy
        w = np.mod(conic(1 / 1562.5, -1.0, r2), 1.0)
        v = np.where(r2 <= 249.5 ** 2, np.minimum(np.floor(w * 8), 7) / 8, 0.0)
        return np.floor(np.clip(v, 0, 1) * 255 + 0.5).astype(np.uint8)
    if name == "spiral-phase-plate":
        dx, dy = x + 5000 - 10000, y + 5000 - 10000
        t = np.mod(np.arctan2(dy, dx), 2 * np.pi) / (2 * np.pi) * 4
        v = np.minimum(np.floor((t - np.floor(t)) * 16), 15) / 16
        v = np.where(dx * dx + dy * dy <= 9990.0 ** 2, v, 0.0)
        return np.floor(np.clip(v, 0, 1) * 255 + 0.5).astype(np.uint8)
    if name == "aspheric-lens-array":
        row = np.floor(y / 156)
        dx = np.mod(x - 90 * row, 180) - 90
        dy = y - 156 * row - 90
        r2 = dx * dx + dy * dy
        z = lambda r2: conic(1 / 150, -0.8, r2) - 1e-8 * r2 * r2
        v = np.where(r2 <= 88.0 ** 2, z(88.0 ** 2) - z(r2), 0.0)
        return np.floor(np.clip(v / 40, 0, 1) * 65535 + 0.5).astype(np.uint16)
    # noisy-diffuser: value noise, 3 octaves, plus Gaussian blocks (numpy's own generator)
    def h(i, j, s):
        z = (i * np.uint64(0x9E3779B97F4A7C15) ^ j * np.uint64(0xBF58476D1CE4E5B9)) + np.uint64(s)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return ((z ^ (z >> np.uint64(31))) >> np.uint64(11)).astype(np.float64) / 2.0 ** 53
    acc, wsum, wt, cell = 0.0, 0.0, 1.0, 40.0
    for o in range(3):
        fx, fy = x / cell, y / cell
        i, j = np.floor(fx), np.floor(fy)
        tx, ty = fx - i, fy - j
        ux, uy = tx ** 3 * (tx * (tx * 6 - 15) + 10), ty ** 3 * (ty * (ty * 6 - 15) + 10)
        i, j = i.astype(np.uint64), j.astype(np.uint64)
        one = np.uint64(1)
        a = h(i, j, o) + ux * (h(i + one, j, o) - h(i, j, o))
        b = h(i, j + one, o) + ux * (h(i + one, j + one, o) - h(i, j + one, o))
        acc = acc + wt * (a + uy * (b - a))
        wsum += wt; wt *= 0.5; cell *= 0.5
    g = np.random.default_rng(7).standard_normal((H // 2, W // 2)).repeat(2, 0).repeat(2, 1)
    v = 0.1 + 0.8 * acc / wsum + 0.03 * g
    return np.floor(np.clip(v, 0, 1) * 255 + 0.5).astype(np.uint8)
t0 = time.perf_counter(); c0 = time.process_time()
s = peer()
t = time.perf_counter() - t0
mb = s.nbytes / t / 1e6
ours = prof["mb_per_s"]
cpu = prof["bytes"] / prof["cpu_seconds"] / 1e6 if prof.get("cpu_seconds") else float("nan")
print("| %s | %.0f | %.0f | %.0f | %.1fx |" % (name, ours, cpu, mb, ours / mb))
PY
    rm -f "/tmp/bench-optics.$$"
done
