#!/usr/bin/env bash
# --memory bounds preview as it bounds render: the image is written row by row as its blocks
# are finished (never held whole, --force included) and the strips are sized to the plan's
# band buffers, which a preview does not use; peak RSS stays within --memory plus the fixed
# cost of the binary (the peak RSS of a trivial render, measured here; libpng's row buffers
# and zlib's state, ~0.5 MB, are inside that margin). Before: 252 MB at --memory 20M, 797 MB
# with --force (a 12000 px square then). And `check`'s "smallest --memory that runs" is the real minimum: a render
# given exactly it runs, one byte less is refused (microlens-sphere said 243.5 MiB and ran at
# 20M). And `--gpus N` shares one --memory among its N engines (docs/semantics.md: it bounds
# the process's peak; each engine had its own: 1.8x at 3 engines), checked with CPU engines
# (TSR_MULTI_CPU=1) where there is no GPU. No timing is asserted.
. "${SRC:?}/tests/cli/lib/common.sh"
if ldd "$TESSERA" 2>/dev/null | grep libasan >/dev/null; then
    echo "skip: RSS under a sanitizer is shadow memory"; ok "skipped under ASan"; finish; exit
fi
printf 'tessera: 1\nroot: {size: [64, 48], source: {shape: circle, center: [32, 24], radius: 20}}\n' >"$tmp/small.yaml"
/usr/bin/time -f "%M" -o "$tmp/rss.fixed" "$TESSERA" render "$tmp/small.yaml" -o null 2>/dev/null
FIXED=$(tail -1 "$tmp/rss.fixed") # KiB
echo "# fixed cost of the binary: peak RSS $FIXED KiB rendering a 64 x 48 circle"
within() { # BUDGET_BYTES RSS_KIB WHAT
    local limit=$(( $1 / 1024 + FIXED ))
    if [ "$2" -le "$limit" ]; then ok "$3: peak RSS $2 KiB <= --memory + fixed cost = $limit KiB"
    else bad "$3: peak RSS $2 KiB > --memory + fixed cost = $limit KiB"; fi
}
# a gradient: every block differs, so the PNG does not shrink to nothing
printf 'tessera: 1\nroot: {size: [8000, 8000], source: {gradient: linear, from: [0, 0], to: [7999, 7999], values: [0.0, 1.0]}}\n' >"$tmp/grad.yaml"
prev() { # WHAT BUDGET ARGS...
    local what=$1 budget=$2
    shift 2
    if /usr/bin/time -f "%M" -o "$tmp/rss.p" "$TESSERA" preview "$tmp/grad.yaml" "$@" \
        --memory "$budget" -o "$tmp/p.png" 2>"$tmp/err.p"; then
        within "$budget" "$(tail -1 "$tmp/rss.p")" "$what"
    else bad "$what: $(head -c 300 "$tmp/err.p")"; fi
}
# images larger than the budget: 32 MB (--force) at --memory 20M, 16 MB and 14 MB at 12M (the
# plan's minimum here is 10.2 MiB)
prev "preview --force --scale 1 (32 MB image), --memory 20M" 20000000 --region 0,0,8000,4000 --scale 1 --force
cp "$tmp/p.png" "$tmp/k1.png"
prev "preview --scale 2 (16 MB image), --memory 12M" 12000000 --region 0,0,8000,8000 --scale 2
prev "preview --scale 50 --fast (sampled), --memory 20M" 20000000 --region 0,0,8000,8000 --scale 50 --fast
prev "preview --scale 3 16 bit (14 MB image), --memory 12M" 12000000 --region 7,3,7990,7990 --scale 3 --depth 16
# the rows written as they are finished are the image held whole: the --scale 1 preview is
# the render, sample for sample
"$TESSERA" render "$tmp/grad.yaml" --rows 0:41 -o "$tmp/g.raw" --progress none 2>/dev/null
if python3 - "$tmp/k1.png" "$tmp/g.raw" <<'PY'
import sys, zlib, struct
png = open(sys.argv[1], 'rb').read()
raw = open(sys.argv[2], 'rb').read()
pos, idat, w, h = 8, b'', 0, 0
while pos < len(png):
    n, t = struct.unpack('>I4s', png[pos:pos + 8])
    body = png[pos + 8:pos + 8 + n]
    if t == b'IHDR': w, h = struct.unpack('>II', body[:8])
    if t == b'IDAT': idat += body
    pos += 12 + n
data, out, prev = zlib.decompress(idat), bytearray(), bytearray(w)
for y in range(h):
    f, row = data[y * (w + 1)], bytearray(data[y * (w + 1) + 1:(y + 1) * (w + 1)])
    for x in range(w):
        a = row[x - 1] if x else 0; b = prev[x]; c = prev[x - 1] if x else 0
        if f == 1: row[x] = (row[x] + a) & 255
        elif f == 2: row[x] = (row[x] + b) & 255
        elif f == 3: row[x] = (row[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    out += row; prev = row
    if y == 40: break  # the first 41 rows suffice: later rows go the same way
sys.exit(0 if len(raw) == 41 * w and bytes(out) == raw else 1)
PY
then ok "preview --scale 1 rows are the render's samples"
else bad "preview --scale 1 rows differ from the render's samples"; fi

# check's minimum: exactly it runs, one byte less is refused (exit 2, naming the same figure)
lens="$SRC/designs/examples/microlens-sphere.yaml"
m=$("$TESSERA" check "$lens" --threads 1 | sed -n 's/^  minimum .*(--memory \([0-9]*\), the smallest that runs)$/\1/p')
if [ -z "$m" ]; then bad "check prints no minimum in bytes: $("$TESSERA" check "$lens" --threads 1 | grep minimum)"
else
    echo "# microlens-sphere, 1 thread: minimum $m bytes"
    if [ "$m" -lt 100000000 ]; then ok "microlens-sphere's minimum $m is under 100 MB (it runs at 20M)"
    else bad "microlens-sphere's minimum $m: it runs at 20M"; fi
    if /usr/bin/time -f "%M" -o "$tmp/rss.m" "$TESSERA" render "$lens" --threads 1 --memory "$m" \
        --rows 0:600 --progress none -o null 2>"$tmp/err.m"; then
        ok "render at check's minimum ($m) runs"
        within "$m" "$(tail -1 "$tmp/rss.m")" "render at check's minimum"
    else bad "render at check's minimum ($m): $(cat "$tmp/err.m")"; fi
    "$TESSERA" render "$lens" --threads 1 --memory $((m - 1)) --rows 0:2 --progress none -o null 2>"$tmp/err.m1"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "memory plan: needs at least .*(--memory $m)" "$tmp/err.m1"; then
        ok "one byte under check's minimum: refused, naming it"
    else bad "one byte under check's minimum: rc $rc: $(cat "$tmp/err.m1")"; fi
fi

# --gpus 3: the engines share the one --memory (wafer-fields' 100000 px disc churns its caches)
W="$SRC/designs/examples/wafer-fields.yaml"
if TSR_MULTI_CPU=1 /usr/bin/time -f "%M" -o "$tmp/rss.g" "$TESSERA" render "$W" --gpus 3 \
    --rows 0:800 --threads 1 --memory 160M --progress none -o null 2>"$tmp/err.g"; then
    within 160000000 "$(tail -1 "$tmp/rss.g")" "--gpus 3 (CPU engines), --memory 160M"
else bad "--gpus 3 --memory 160M: $(head -c 300 "$tmp/err.g")"; fi
# a share too small for an engine's plan names the share
TSR_MULTI_CPU=1 "$TESSERA" render "$W" --gpus 3 --rows 0:8 --threads 1 --memory 30M --progress none -o null 2>"$tmp/err.s"
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--gpus 3: each engine plans with .* of --memory .*: memory plan: needs at least" "$tmp/err.s"; then
    ok "--gpus 3 --memory 30M: refused, naming each engine's share"
else bad "--gpus 3 --memory 30M: rc $rc: $(cat "$tmp/err.s")"; fi
finish
