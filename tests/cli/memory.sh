#!/usr/bin/env bash
# --memory is a hard budget: a 400000 px wide design in 4096 px serpentine swaths rendered with
# --memory 64M stays under 128 MB peak RSS and gives the same bytes as with --memory 4G; a
# budget below the plan is refused before anything is written.
set -uo pipefail
: "${TESSERA:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
cat >"$tmp/wide.yaml" <<'Y'
tessera: 1
output: {order: swath, swath: {width: 4096, serpentine: true}}
nodes:
  dot: {size: [100, 100], source: {shape: circle, center: [50, 50], radius: 40}}
  field:
    size: [400000, 700]
    fill: 0.1
    source: {shape: rect, rect: [1000, 100, 396000, 500]}
root:
  size: [400000, 700]
  children:
    - {trait: repeat, ref: dot}
    - {trait: blur, sigma: 2, ref: field, blend: max}
    - {trait: distance, ref: field, dmax: 20, threshold: 0.5, offset: [7, -3], blend: add}
Y
# Under ASan a 280 MB render takes minutes and RSS is shadow memory: keep only the refusal.
asan=0
ldd "$TESSERA" 2>/dev/null | grep -q libasan && asan=1
for m in 64M 4G; do
    [ "$asan" -eq 1 ] && { echo "skip renders under a sanitizer build"; break; }
    if /usr/bin/time -f "%M" -o "$tmp/rss.$m" "$TESSERA" render "$tmp/wide.yaml" --memory "$m" \
        --progress none -o "$tmp/out.$m" 2>"$tmp/err.$m"; then ok "render --memory $m"
    else bad "render --memory $m: $(cat "$tmp/err.$m")"; fi
done
if [ "$asan" -eq 0 ]; then
    rss=$(tail -1 "$tmp/rss.64M")
    if [ "$rss" -lt 128000 ]; then ok "peak RSS ${rss} KB < 128 MB with --memory 64M"
    else bad "peak RSS ${rss} KB with --memory 64M"; fi
    if cmp -s "$tmp/out.64M" "$tmp/out.4G" && [ "$(stat -c %s "$tmp/out.64M")" -eq $((400000 * 700)) ]; then
        ok "same bytes with --memory 64M and 4G"
    else bad "bytes differ between --memory 64M and 4G"; fi
fi
# The cache's churn of a big child's tiles (the wafer's 100000 px disc) left malloc's heap with
# free holes of more than the live tiles (peak RSS 1.6-1.9x --memory before the engine gave
# them back between bands): the process must stay within a quarter over the budget.
if [ "$asan" -eq 0 ]; then
    for t in 1 2; do
        if /usr/bin/time -f "%M" -o "$tmp/rss.w$t" "$TESSERA" render "$SRC/designs/examples/wafer-fields.yaml" \
            --rows 0:3000 --memory 160M --threads "$t" --progress none -o null 2>"$tmp/err.w"; then
            rss=$(tail -1 "$tmp/rss.w$t")
            if [ "$rss" -lt $((160000000 * 5 / 4 / 1024)) ]; then
                ok "wafer-fields --memory 160M, $t threads: peak RSS ${rss} KiB"
            else bad "wafer-fields --memory 160M, $t threads: peak RSS ${rss} KiB > 1.25 x 160 MB"; fi
        else bad "wafer-fields --memory 160M: $(cat "$tmp/err.w")"; fi
    done
fi
if "$TESSERA" render "$tmp/wide.yaml" --memory 8M -o "$tmp/none.raw" 2>"$tmp/err"; then
    bad "--memory 8M was not refused"
elif [ $? -eq 2 ] && grep -q "needs at least" "$tmp/err" && [ ! -s "$tmp/none.raw" ]; then
    ok "--memory 8M refused with the minimum, nothing written"
else bad "--memory 8M: $(cat "$tmp/err")"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
