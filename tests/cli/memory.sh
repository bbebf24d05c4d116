#!/usr/bin/env bash
# --memory is a hard budget: peak RSS stays within --memory plus the fixed
# cost of the binary (the peak RSS of a trivial render, measured here) on wide designs, small
# tiles and big children; a budget below the plan is refused before anything is written, and
# before any image is decoded or table built; images of nodes nobody refs are never decoded.
. "${SRC:?}/tests/cli/lib/common.sh"
# wide W H [OUTPUT]: a W x H root of repeated dots, with a blur and a distance of a W x H
# field: every band reads whole rows of big child tiles
wide() {
    echo "tessera: 1"
    [ -n "${3:-}" ] && echo "output: $3"
    echo "nodes:"
    echo "  dot: {size: [100, 100], source: {shape: circle, center: [50, 50], radius: 40}}"
    echo "  field: {size: [$1, $2], fill: 0.1, source: {shape: rect, rect: [1000, 100, $(($1 - 4000)), $(($2 - 200))]}}"
    echo "root:"
    echo "  size: [$1, $2]"
    echo "  children:"
    echo "    - {trait: repeat, ref: dot}"
    echo "    - {trait: blur, sigma: 2, ref: field, blend: max}"
    echo "    - {trait: distance, ref: field, dmax: 20, threshold: 0.5, offset: [7, -3], blend: add}"
}
wide 400000 700 "{order: swath, swath: {width: 4096, serpentine: true}}" >"$tmp/wide.yaml"
# Under ASan a 280 MB render takes minutes and RSS is shadow memory: keep only the refusal.
asan=0
ldd "$TESSERA" 2>/dev/null | grep libasan >/dev/null && asan=1  # no -q: no SIGPIPE for ldd
printf 'tessera: 1\nroot: {size: [64, 48], source: {shape: circle, center: [32, 24], radius: 20}}\n' >"$tmp/small.yaml"
/usr/bin/time -f "%M" -o "$tmp/rss.fixed" "$TESSERA" render "$tmp/small.yaml" -o null 2>/dev/null
FIXED=$(tail -1 "$tmp/rss.fixed") # KiB
echo "# fixed cost of the binary: peak RSS $FIXED KiB rendering a 64 x 48 circle"
# within BUDGET_BYTES RSS_KIB WHAT: the bound every run here is held to
within() {
    local limit=$(( $1 / 1024 + FIXED ))
    if [ "$2" -le "$limit" ]; then ok "$3: peak RSS $2 KiB <= --memory + fixed cost = $limit KiB"
    else bad "$3: peak RSS $2 KiB > --memory + fixed cost = $limit KiB"; fi
}
for m in 64M 4G; do
    [ "$asan" -eq 1 ] && { echo "skip renders under a sanitizer build"; break; }
    if /usr/bin/time -f "%M" -o "$tmp/rss.$m" "$TESSERA" render "$tmp/wide.yaml" --memory "$m" \
        --progress none -o "$tmp/out.$m" 2>"$tmp/err.$m"; then ok "render --memory $m"
    else bad "render --memory $m: $(cat "$tmp/err.$m")"; fi
done
if [ "$asan" -eq 0 ]; then
    within 64000000 "$(tail -1 "$tmp/rss.64M")" "400000 px swaths, --memory 64M"
    if cmp -s "$tmp/out.64M" "$tmp/out.4G" && [ "$(stat -c %s "$tmp/out.64M")" -eq $((400000 * 700)) ]; then
        ok "same bytes with --memory 64M and 4G"
    else bad "bytes differ between --memory 64M and 4G"; fi
fi
# peak RUN_NAME BUDGET ARGS...: render ARGS to the null sink under --memory BUDGET (bytes),
# held to the bound
peak() {
    local what=$1 budget=$2
    shift 2
    if /usr/bin/time -f "%M" -o "$tmp/rss.p" "$TESSERA" render "$@" --memory "$budget" \
        --progress none -o null 2>"$tmp/err.p"; then
        within "$budget" "$(tail -1 "$tmp/rss.p")" "$what"
    else bad "$what: $(head -c 300 "$tmp/err.p")"; fi
}
if [ "$asan" -eq 0 ]; then
    W="$SRC/designs/examples/wafer-fields.yaml"
    # The cache's churn of a big child's tiles (the wafer's 100000 px disc) left malloc's heap
    # with free holes of more than the live tiles (1.6-1.9x --memory before the engine gave
    # them back between bands, and before tiles had mappings of their own).
    for t in 1 2; do
        peak "wafer-fields rows 0:3000, --memory 160M, $t threads" 160000000 "$W" --rows 0:3000 --threads "$t"
    done
    # 1 x 1 tiles: the cache counted 104 bytes a tile and held ~330 (2.45x --memory).
    peak "wafer-fields tile 1, --memory 64M" 64000000 "$W" --tile 1 --rows 0:4
    # 200000 px raster bands: 1 MB child tiles churned through the heap (2.1x --memory).
    wide 200000 3000 >"$tmp/w200k.yaml"
    peak "200000 px raster, --memory 64M" 64000000 "$tmp/w200k.yaml" --rows 0:600
fi

# Refused before anything is made: a PNG that decodes to 576 MB of floats (it was decoded,
# then refused: 567 MB peak), ten distance tables of 67 MB (659 MB), and 150 named image
# nodes nobody refs (605 MB, check exited 0 after decoding them all).
printf 'tessera: 1\nroot: {size: [12000, 12000], fill: 0.5}\n' >"$tmp/flat.yaml"
"$TESSERA" preview "$tmp/flat.yaml" --region 0,0,12000,12000 -o "$tmp/big.png" 2>/dev/null ||
    bad "preview could not write the 12000 x 12000 PNG"
printf 'tessera: 1\nroot:\n  source: {image: big.png}\n' >"$tmp/img.yaml"
{
    printf 'tessera: 1\nnodes:\n  dot: {size: [64, 64], source: {shape: circle, center: [32, 32], radius: 20}}\n'
    printf 'root:\n  size: [512, 512]\n  children:\n'
    for i in 0 1 2 3 4 5 6 7 8 9; do
        printf '    - {trait: distance, ref: dot, dmax: 4096, offset: [%d, 0], blend: max}\n' $((i * 8))
    done
} >"$tmp/dist.yaml"
# refused WHAT FILE: check --memory 64M exits 2 naming the minimum, and made nothing big
refused() {
    /usr/bin/time -f "%M" -o "$tmp/rss.r" "$TESSERA" check "$2" --memory 64M >/dev/null 2>"$tmp/err.r"
    local rc=$? rss
    rss=$(tail -1 "$tmp/rss.r")
    if [ $rc -eq 2 ] && grep -q "memory plan: needs at least" "$tmp/err.r"; then
        ok "$1: check --memory 64M refuses it ($(grep -o 'needs at least [0-9.]* MiB' "$tmp/err.r"))"
    else bad "$1: check --memory 64M: exit $rc: $(head -c 300 "$tmp/err.r")"; fi
    if [ "$asan" -eq 0 ]; then
        within 16000000 "$rss" "$1: nothing decoded or built before the refusal (one would take 67 MB or more)"
    fi
}
refused "a 165 KB PNG of 12000 x 12000 px" "$tmp/img.yaml"
refused "ten distance tables of dmax 4096" "$tmp/dist.yaml"
printf 'tessera: 1\nroot: {size: [1000, 1000], source: {shape: circle, center: [500, 500], radius: 400}}\n' >"$tmp/c.yaml"
"$TESSERA" preview "$tmp/c.yaml" --region 0,0,1000,1000 -o "$tmp/c.png" 2>/dev/null || bad "no c.png"
{
    printf 'tessera: 1\nnodes:\n'
    for i in $(seq 1 150); do printf '  img%d: {source: {image: c.png}}\n' "$i"; done
    printf 'root: {size: [64, 48], source: {shape: circle, center: [32, 24], radius: 20}}\n'
} >"$tmp/unref.yaml"
/usr/bin/time -f "%M" -o "$tmp/rss.u" "$TESSERA" render "$tmp/unref.yaml" -o "$tmp/u.raw" 2>"$tmp/err.u"
rc=$?
"$TESSERA" render "$tmp/small.yaml" -o "$tmp/s.raw" 2>/dev/null
if [ $rc -eq 0 ] && cmp -s "$tmp/u.raw" "$tmp/s.raw"; then
    ok "150 unreferenced image nodes: the design renders"
    [ "$asan" -eq 0 ] && within 3000000 "$(tail -1 "$tmp/rss.u")" "150 unreferenced image nodes: none decoded (one would take 4 MB)"
else bad "150 unreferenced image nodes: exit $rc: $(head -c 300 "$tmp/err.u")"; fi
sed -i 's/c.png/missing.png/' "$tmp/unref.yaml"
"$TESSERA" check "$tmp/unref.yaml" >/dev/null 2>"$tmp/err.u"
rc=$?
[ $rc -eq 2 ] && grep -q "unref.yaml:3:.*nodes.img1.source.image: .*missing.png" "$tmp/err.u" &&
    ok "an unreferenced image that is missing is still an error (its header is read)" ||
    bad "an unreferenced missing image: exit $rc: $(head -c 300 "$tmp/err.u")"
if "$TESSERA" render "$tmp/wide.yaml" --memory 8M -o "$tmp/none.raw" 2>"$tmp/err"; then
    bad "--memory 8M was not refused"
elif [ $? -eq 2 ] && grep -q "needs at least" "$tmp/err" && [ ! -s "$tmp/none.raw" ]; then
    ok "--memory 8M refused with the minimum, nothing written"
else bad "--memory 8M: $(cat "$tmp/err")"; fi
finish
