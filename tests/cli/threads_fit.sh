#!/usr/bin/env bash
# With no --threads the engine starts a thread per core, and a --memory that fits fewer runs
# with fewer (the plan says how many) instead of being refused: on a 64-core host `render
# --memory 64M` was refused ("64 threads x 2275252") where 2 cores ran it. TSR_CORES=N
# (docs/tuning.md) gives the engine N cores on this machine. Only a budget that one thread
# does not fit is refused, naming one thread's minimum; an explicit --threads is refused as it
# is, naming how many fit.
. "${SRC:?}/tests/cli/lib/common.sh"
cat >"$tmp/wide.yaml" <<'Y'
tessera: 1
output: {order: swath, swath: {width: 4096, serpentine: true}}
nodes:
  dot: {size: [100, 100], source: {shape: circle, center: [50, 50], radius: 40}}
  field: {size: [20000, 700], fill: 0.1, source: {shape: rect, rect: [1000, 100, 16000, 500]}}
root:
  size: [20000, 700]
  children:
    - {trait: repeat, ref: dot}
    - {trait: blur, sigma: 2, ref: field, blend: max}
    - {trait: distance, ref: field, dmax: 20, threshold: 0.5, offset: [7, -3], blend: add}
Y
# the plan of 64 cores at --memory 64M: fewer threads, said by check
if TSR_CORES=64 "$TESSERA" check "$tmp/wide.yaml" --memory 64M >"$tmp/check" 2>"$tmp/err"; then
    n=$(sed -n 's/^  per thread .* x \([0-9]*\) threads$/\1/p' "$tmp/check")
    if [ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -lt 64 ]; then ok "check, 64 cores, --memory 64M: plans $n threads"
    else bad "check, 64 cores, --memory 64M: $(grep 'per thread' "$tmp/check")"; fi
else bad "check, 64 cores, --memory 64M: refused: $(cat "$tmp/err")"; fi
# ... and renders, saying so, the bytes of one thread
"$TESSERA" render "$tmp/wide.yaml" --threads 1 --progress none -o "$tmp/one.raw" 2>"$tmp/err" ||
    bad "render --threads 1: $(cat "$tmp/err")"
if TSR_CORES=64 "$TESSERA" render "$tmp/wide.yaml" --memory 64M --progress none -o "$tmp/fit.raw" 2>"$tmp/err"; then
    ok "render, 64 cores, --memory 64M runs"
    grep -q "^tessera: --memory .* fits $n threads, not one per core (64): running $n$" "$tmp/err" &&
        ok "  ... and says it runs $n threads" || bad "  ... the note: $(cat "$tmp/err")"
    cmp -s "$tmp/one.raw" "$tmp/fit.raw" && ok "  ... the bytes of --threads 1" ||
        bad "  ... other bytes than --threads 1"
else bad "render, 64 cores, --memory 64M: $(cat "$tmp/err")"; fi
# cores that fit say nothing
TSR_CORES=2 "$TESSERA" render "$tmp/wide.yaml" --memory 64M --progress none -o null 2>"$tmp/err"
[ ! -s "$tmp/err" ] && ok "2 cores at --memory 64M: no note" || bad "2 cores: $(cat "$tmp/err")"
# one thread that does not fit: refused with one thread's minimum
TSR_CORES=64 "$TESSERA" check "$tmp/wide.yaml" --memory 11M >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "^tessera: memory plan: needs at least .*, have .*: bands [0-9]*, 1 threads x" "$tmp/err"; then
    ok "--memory 11M: refused, naming one thread's minimum"
else bad "--memory 11M: exit $rc: $(cat "$tmp/err")"; fi
# the minimum it names starts (its first rows: one-row bands and no cache take minutes whole)
min=$(sed -n 's/.*(--memory \([0-9]*\)).*/\1/p' "$tmp/err")
TSR_CORES=64 "$TESSERA" render "$tmp/wide.yaml" --memory "$min" --rows 0:2 --progress none -o null 2>"$tmp/err" &&
    ok "--memory $min (that minimum) runs on one thread" || bad "--memory $min: $(cat "$tmp/err")"
# an explicit --threads is the user's: refused, naming how many fit
TSR_CORES=64 "$TESSERA" check "$tmp/wide.yaml" --memory 64M --threads 64 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "^tessera: --threads 64: at most [0-9]* threads fit in --memory" "$tmp/err" &&
    ok "--threads 64 --memory 64M: refused" || bad "--threads 64: exit $rc: $(cat "$tmp/err")"
# the hook itself
for v in 0 x 5000 -1; do
    TSR_CORES=$v "$TESSERA" check "$tmp/wide.yaml" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "^tessera: TSR_CORES=$v: expected the number of cores, 1..4096$" "$tmp/err" &&
        ok "TSR_CORES=$v refused" || bad "TSR_CORES=$v: exit $rc: $(cat "$tmp/err")"
done
finish
