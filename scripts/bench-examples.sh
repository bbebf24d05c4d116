#!/usr/bin/env bash
# `tessera render -o null` throughput of every example design (a crop of whole rows, about
# 256 MB of samples, or the whole design when smaller) and of the per-trait bench designs,
# against the 10 MB/s baseline (docs/targets.md). Prints a markdown table. Usage:
#   scripts/bench-examples.sh [build/tessera] [threads]
set -euo pipefail
tessera=${1:-build/tessera}
threads=${2:-$(nproc)}
now() { date +%s.%N; }
# CPU seconds (user + sys) are printed beside the wall time: on a shared, loaded machine the
# wall figure understates what the cores deliver, MB per CPU-second does not.
printf '| design | rows rendered | bytes | wall s | MB/s | x 10 MB/s | CPU s | MB per CPU-s |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- |\n'
for d in designs/examples/*.yaml designs/bench/*.yaml; do
    [ -e "$d" ] || continue
    # size and sample depth from `tessera check` ("stream: N bytes") and the root line
    total=$("$tessera" check "$d" | sed -n 's/^stream: \([0-9]*\) bytes.*/\1/p')
    w=$("$tessera" check "$d" | awk '$1 == "root" && $3 == "x" {print $2}' | tail -1)
    h=$("$tessera" check "$d" | awk '$1 == "root" && $3 == "x" {print $4}' | tail -1)
    bpr=$((total / h))                       # bytes per row
    rows=$((256000000 / bpr)); [ "$rows" -lt 1 ] && rows=1; [ "$rows" -gt "$h" ] && rows=$h
    t0=$(now)
    cpu=$( { /usr/bin/time -f "%U %S" "$tessera" render "$d" --rows "0:$rows" --threads "$threads" \
             -o null --progress none 2>&1 >/dev/null; } | tail -1) || { echo "render failed: $d" >&2; exit 1; }
    t1=$(now)
    bytes=$((bpr * rows))
    awk -v d="$(basename "$d")" -v r="$rows" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v cpu="$cpu" 'BEGIN {
        split(cpu, c, " "); u = c[1] + c[2]; s = t1 - t0
        printf "| %s | 0:%d | %d | %.3f | %.1f | %.1f | %.2f | %.1f |\n", d, r, b, s, b / s / 1e6, b / s / 1e7, u, b / u / 1e6 }'
done
