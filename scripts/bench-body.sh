#!/usr/bin/env bash
# The body of every example design on one thread and on two: `tessera profile` samples regions
# spread over the whole design in its stream order (not the top margin), --seconds S of them,
# and reports their rate and the worker team's busy thread-seconds. Prints a markdown table:
# MB/s at 1 and 2 threads, their ratio (the parallel efficiency, whose target is >= 1.8), the
# team's busy threads, and MB per CPU-second (user + system), which a loaded machine
# understates much less than the wall rate. Usage:
#   scripts/bench-body.sh [build/tessera] [seconds] [design.yaml ...]
set -euo pipefail
tessera=${1:-build/tessera}
secs=${2:-4}
shift 2 || true
designs=("$@")
[ ${#designs[@]} -gt 0 ] || designs=(designs/examples/*.yaml)
py=${PYTHON:-python3}
printf '| design | 1 thread MB/s | 2 threads MB/s | 2 / 1 | busy threads (of 2) | MB per CPU-s, 1 thread | MB per CPU-s, 2 threads |\n'
printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for d in "${designs[@]}"; do
    for t in 1 2; do
        "$tessera" profile "$d" --backend cpu --threads "$t" --seconds "$secs" --json >"/tmp/bench-body.$$.$t" ||
            { echo "profile failed: $d" >&2; exit 1; }
    done
    "$py" - "$d" "/tmp/bench-body.$$.1" "/tmp/bench-body.$$.2" <<'PY'
import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[2:4])
per_cpu = lambda p: "%.0f" % (p["bytes"] / p["cpu_seconds"] / 1e6) if p["cpu_seconds"] > 0 else "-"
print("| %s | %.0f | %.0f | %.2f | %.2f | %s | %s |" % (
    os.path.basename(sys.argv[1]), a["mb_per_s"], b["mb_per_s"], b["mb_per_s"] / a["mb_per_s"],
    b["busy_thread_seconds"] / b["seconds"], per_cpu(a), per_cpu(b)))
PY
    rm -f "/tmp/bench-body.$$.1" "/tmp/bench-body.$$.2"
done
