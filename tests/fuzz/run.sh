#!/usr/bin/env bash
# Run every libFuzzer target built in BUILD for SECONDS each (`make fuzz`). Corpus:
# BUILD/corpus/NAME (grows), seeded from tests/fuzz/regress/NAME and, for `design`, the design
# folders. Findings go to BUILD/findings/NAME-*; the script exits 1 if any target found one.
# Prints executions and corpus size per target (docs/reliability.md keeps the figures).
# FUZZ_TARGETS="design frame" runs only those targets (default: all).
set -uo pipefail
build=${1:?usage: run.sh BUILD SECONDS}
secs=${2:?usage: run.sh BUILD SECONDS}
src=$(cd "$(dirname "$0")/../.." && pwd)
seeds_design=("$src/designs/examples" "$src/tests/oracle/designs" "$src/tests/designs/good"
              "$src/tests/designs/bad")
status=0
mkdir -p "$build/findings"
for bin in "$build"/tests/fuzz/fuzz_*; do
    name=$(basename "$bin")
    case $name in *_replay|*.*) continue ;; esac
    [ -x "$bin" ] || continue
    short=${name#fuzz_}
    if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $short "* ]]; then continue; fi
    corpus="$build/corpus/$short"
    mkdir -p "$corpus" "$src/tests/fuzz/regress/$short"
    seeds=("$src/tests/fuzz/regress/$short")
    [ "$short" = design ] && seeds+=("${seeds_design[@]}")
    [ "$short" = png ] && seeds+=("$src/tests/oracle/designs/img")
    [ "$short" = controller ] && seeds+=("$src/tests/fuzz/regress/frame")
    [ "$short" = dxf ] && seeds+=("$src/tests/layouts")
    dict=()
    [ -f "$src/tests/fuzz/$short.dict" ] && dict=(-dict="$src/tests/fuzz/$short.dict")
    log="$build/fuzz-$short.log"
    echo "fuzz: $name for ${secs}s, corpus $corpus (log $log)"
    start=$(date +%s)
    # -timeout is wall-clock: one input may take a second of CPU (a distance table of dmax 4096
    # under ASan), many more at nice 19 on a busy machine; only a real hang should pass 120 s.
    "$bin" -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-120}" -rss_limit_mb=4096 \
        -print_final_stats=1 \
        "${dict[@]}" -artifact_prefix="$build/findings/$short-" "$corpus" "${seeds[@]}" \
        >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    echo "fuzz: $name exit $rc after $(( $(date +%s) - start ))s, ${execs:-?} executions," \
         "corpus $(ls "$corpus" | wc -l) files"
    if [ $rc -ne 0 ]; then
        status=1
        grep -E 'ERROR|SUMMARY|property violated|Test unit written' "$log" | head -20
    fi
done
exit $status
