#!/usr/bin/env bash
# Each sink's own rate beside the renderer's ("the real sinks must not fall off a
# cliff behind a fast renderer"): one fast design (microlens-array, a periodic root the host
# fills by row copies, so the renderer is far faster than any medium) rendered to the null
# sink, a file, a stdout pipe, a framed file, framed into a pipe (the crc without a disk), a
# framed deflated file and tcp loopback into the reference controller. Prints a markdown table of MB/s (wall clock of the whole command,
# start-up included, best of RUNS); the null sink's row is the renderer's own rate. Usage:
#   scripts/bench-sinks.sh [build/tessera] [rows] [runs]
# TSR_SINK_DESIGN, TSR_SINK_WIDTH (its root's width) and TSR_SINK_ARGS (say --backend gpu) pick
# another design and engine: bench-gpu.sh measures the sinks behind the GPU with gpu-fill.yaml.
set -euo pipefail
tessera=${1:-build/tessera}
rows=${2:-8192}
runs=${3:-3}
design=${TSR_SINK_DESIGN:-designs/examples/microlens-array.yaml}
tmp=$(mktemp -d)
cpid=
cleanup() { [ -n "$cpid" ] && kill "$cpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
bytes=$((${TSR_SINK_WIDTH:-200000} * rows))
now() { date +%s.%N; }
# best SECONDS of `runs` runs of a command line (eval'd)
best() {
    local b=999999 s e
    for ((i = 0; i < runs; i++)); do
        s=$(now)
        eval "$1" >/dev/null 2>&1 || { echo "failed: $1" >&2; exit 1; }
        e=$(now)
        b=$(awk -v b="$b" -v d="$(awk -v s="$s" -v e="$e" 'BEGIN { print e - s }')" 'BEGIN { print (d < b) ? d : b }')
    done
    echo "$b"
}
row() { awk -v n="$1" -v t="$2" -v by="$bytes" 'BEGIN { printf "| %s | %.0f |\n", n, by / t / 1e6 }'; }
r="$tessera render $design --rows 0:$rows --progress none ${TSR_SINK_ARGS:-}"
echo "design: $design, rows 0:$rows ($bytes sample bytes), best of $runs, $(nproc) cores"
echo
printf '| sink | MB/s |\n| --- | ---: |\n'
row "null (the renderer's own rate)" "$(best "$r -o null")"
row "file" "$(best "$r -o $tmp/a.raw")"
row "stdout pipe to cat" "$(best "$r -o - | cat >/dev/null")"
row "framed file" "$(best "$r --framed -o $tmp/a.tsr")"
row "framed, stdout pipe to cat" "$(best "$r --framed -o - | cat >/dev/null")"
row "framed, deflated file" "$(best "$r --framed --deflate -o $tmp/a.tsr")"
# the framing team against one thread (TSR_FRAME_THREADS=1: how every frame was made before)
row "framed, stdout pipe, 1 framing thread" "$(best "TSR_FRAME_THREADS=1 $r --framed -o - | cat >/dev/null")"
row "framed, deflated file, 1 framing thread" "$(best "TSR_FRAME_THREADS=1 $r --framed --deflate -o $tmp/a.tsr")"
# tcp: a fresh controller for each run (one that completed this job answers `total` to it
# again, and the rerun would send nothing)
tcp_best=999999
for ((i = 0; i < runs; i++)); do
    port=$((20000 + RANDOM % 20000))
    rm -f "$tmp/ctl.raw" "$tmp/ctl.raw.state"
    "$tessera" controller --listen "127.0.0.1:$port" -o "$tmp/ctl.raw" >"$tmp/ctl.log" 2>&1 &
    cpid=$!
    sleep 0.5
    s=$(now)
    $r -o "tcp://127.0.0.1:$port" >/dev/null 2>&1 || { echo "tcp render failed" >&2; exit 1; }
    e=$(now)
    wait "$cpid" || true
    cpid=
    tcp_best=$(awk -v b="$tcp_best" -v d="$(awk -v s="$s" -v e="$e" 'BEGIN { print e - s }')" 'BEGIN { print (d < b) ? d : b }')
done
row "tcp loopback into the reference controller" "$tcp_best"
