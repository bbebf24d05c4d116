#!/usr/bin/env bash
# The body of every example design on one thread and on two: `tessera profile` samples regions
# spread over the whole design in its stream order (not the top margin), --seconds S of them,
# and reports their rate and the worker team's busy thread-seconds. Prints a markdown table:
# MB/s at 1 and 2 threads, their ratio (the parallel efficiency issue 13 asks >= 1.8 of), and
# MB per busy CPU-second, which a loaded machine understates less than the wall rate. Usage:
#   scripts/bench-body.sh [build/tessera] [seconds] [design.yaml ...]
set -euo pipefail
tessera=${1:-build/tessera}
secs=${2:-4}
shift 2 || true
designs=("$@")
[ ${#designs[@]} -gt 0 ] || designs=(designs/examples/*.yaml)
py=${PYTHON:-python3}
printf '| design | 1 thread MB/s | 2 threads MB/s | 2 / 1 | busy threads (of 2) | MB per busy CPU-s (2 threads) |\n'
printf '| --- | ---: | ---: | ---: | ---: | ---: |\n'
for d in "${designs[@]}"; do
    for t in 1 2; do
        "$tessera" profile "$d" --backend cpu --threads "$t" --seconds "$secs" --json >"/tmp/bench-body.$$.$t" ||
            { echo "profile failed: $d" >&2; exit 1; }
    done
    "$py" - "$d" "/tmp/bench-body.$$.1" "/tmp/bench-body.$$.2" <<'PY'
import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[2:4])
busy = b["busy_thread_seconds"]
print("| %s | %.0f | %.0f | %.2f | %.2f | %.0f |" % (
    os.path.basename(sys.argv[1]), a["mb_per_s"], b["mb_per_s"], b["mb_per_s"] / a["mb_per_s"],
    busy / b["seconds"], b["bytes"] / busy / 1e6 if busy > 0 else 0))
PY
    rm -f "/tmp/bench-body.$$.1" "/tmp/bench-body.$$.2"
done
