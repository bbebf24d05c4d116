#!/usr/bin/env bash
# Limits through the command line: roots beyond 2^31 per side, the 2^40 bounds, deep chains,
# 10000 children, broken PNGs, YAML bombs. Each is a correct run (exit 0, the bytes it should
# write) or a clear error (exit 2, file:line:col and key path). Pixel values are checked in
# tests/test_limits.c; here the commands, exit codes, messages and sizes.
. "${SRC:?}/tests/cli/lib/common.sh"
L="$SRC/tests/designs/limits"

# expect RC PATTERN -- ARGS...: exit status and a substring of stderr (stdout for rc 0)
expect() {
    local rc=$1 pat=$2
    shift 3
    "$TESSERA" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local got=$?
    local where="$tmp/err"
    [ "$rc" -eq 0 ] && where="$tmp/out"
    if [ "$got" -eq "$rc" ] && { [ -z "$pat" ] || grep -qF -- "$pat" "$where"; }; then
        ok "$rc $*"
    else
        bad "$* -> exit $got (want $rc, '$pat'): $(head -c 300 "$tmp/err")"
    fi
}

# beyond 2^31 per side
expect 2 "needs at least" -- check "$L/wide_3e9.yaml" --memory 2G  # the default grows with the host
expect 0 "root                             3000000000 x 10 px" -- check "$L/wide_3e9.yaml" --memory 10G --tree
expect 0 "stream: 30000000000 bytes" -- check "$L/wide_3e9.yaml" --memory 10G
expect 0 "stream: 60000000000 bytes" -- check "$L/tall_3e9.yaml"
expect 0 "" -- preview "$L/wide_3e9.yaml" --region 2999999480,0,40,10 --memory 10G -o "$tmp/w.png"
[ -s "$tmp/w.png" ] && ok "preview at x = 2999999480 wrote a PNG" || bad "no PNG at x = 2999999480"
"$TESSERA" render "$L/tall_3e9.yaml" --rows 2999999993:3000000000 -o "$tmp/t.raw" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(stat -c %s "$tmp/t.raw")" -eq 140 ]; then ok "render --rows at y = 3e9 - 7: 140 bytes"
else bad "render --rows at y = 3e9 - 7: exit $rc, $(stat -c %s "$tmp/t.raw" 2>/dev/null) bytes: $(head -c 200 "$tmp/err")"; fi

# the 2^40 bounds
expect 0 "stream: 4398046511104 bytes" -- check "$L/offsets_2_40.yaml" --memory 4T
expect 0 "" -- preview "$L/offsets_2_40.yaml" --region 1099511627767,0,9,4 --memory 4T -o "$tmp/o.png"
expect 2 "offset_over.yaml:5:33: root.children[0].offset[0]: |1099511627777| must be <= 2^40" -- check "$L/offset_over.yaml"
expect 2 "size_over.yaml:3:10: root.size[0]: |1099511627777| must be <= 2^40" -- check "$L/size_over.yaml"
expect 2 "area_over.yaml:3:9: root.size: w*h*4 bytes must be <= 2^62" -- check "$L/area_over.yaml"

# YAML and ref bombs
expect 2 "yaml_bomb.yaml:4:6: lol: anchor '&a' not allowed" -- check "$L/yaml_bomb.yaml"
expect 0 "n20 " -- check "$L/ref_bomb.yaml" --tree
expect 0 "" -- render "$L/ref_bomb.yaml" -o "$tmp/rb.raw"

# a chain of 1000 nodes (ref: written leaves first), and one past the limit
chain() { # N: n0 <- n1 <- ... <- n(N-1) <- root, 3000 x 2 px each, root repeats the last
    echo "tessera: 1"
    echo "nodes:"
    echo "  n0: {size: [3000, 2], fill: 0.5}"
    for ((i = 1; i < $1; i++)); do
        echo "  n$i: {size: [3000, 2], fill: 0.0009765625, children: [{trait: pattern, ref: n$((i - 1)), blend: add}]}"
    done
    echo "root: {size: [3000, 2], tile: 256, children: [{trait: repeat, ref: n$(($1 - 1))}]}"
}
chain 1000 >"$tmp/c1000.yaml"
chain 2001 >"$tmp/c2001.yaml"
expect 0 "" -- render "$tmp/c1000.yaml" --threads 2 --memory 100G -o "$tmp/c.raw"
[ "$(stat -c %s "$tmp/c.raw" 2>/dev/null)" = 6000 ] && ok "1000-deep chain: 6000 bytes" || bad "1000-deep chain: wrong size"
expect 2 "nodes.n2000: nodes nested deeper than 2000" -- check "$tmp/c2001.yaml"

# a node with 10000 children
{
    echo "tessera: 1"
    echo "root:"
    echo "  size: [100, 100]"
    echo "  children:"
    for ((k = 0; k < 10000; k++)); do
        echo "    - {trait: pattern, offset: [$((k % 100)), $((k / 100))], node: {size: [1, 1], fill: 1}}"
    done
} >"$tmp/wide.yaml"
expect 0 "stream: 10000 bytes" -- check "$tmp/wide.yaml"
"$TESSERA" render "$tmp/wide.yaml" -o "$tmp/wide.raw" 2>"$tmp/err"
if [ $? -eq 0 ] && [ "$(tr -d '\377' <"$tmp/wide.raw" | wc -c)" -eq 0 ] && [ "$(stat -c %s "$tmp/wide.raw")" -eq 10000 ]; then
    ok "10000 children: every sample 255"
else bad "10000 children: $(head -c 200 "$tmp/err")"; fi

# PNGs cut short: every prefix of a real image is an exit-2 error naming the design position
png="$SRC/tests/oracle/designs/img/g8.png"
size=$(stat -c %s "$png")
bad_cuts=0
for cut in 0 7 8 20 33 40 60 $((size / 2)) $((size - 13)) $((size - 1)); do
    head -c "$cut" "$png" >"$tmp/cut.png"
    printf 'tessera: 1\nroot:\n  source: {image: cut.png}\n' >"$tmp/cut.yaml"
    "$TESSERA" check "$tmp/cut.yaml" >/dev/null 2>"$tmp/err"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -qE "cut.yaml:3:19: root.source.image: .*cut.png: (truncated PNG|not a PNG file|corrupt PNG)" "$tmp/err"; then
        bad_cuts=$((bad_cuts + 1))
        echo "     cut at $cut: exit $rc: $(head -c 200 "$tmp/err")"
    fi
done
[ $bad_cuts -eq 0 ] && ok "truncated PNGs: exit 2 with the position" || bad "$bad_cuts truncated PNGs"

finish
