#!/usr/bin/env bash
# Image file outputs (docs/outputs.md, "Files"): -o *.tif / *.tiff / *.bmp are neither framed
# nor resumable (usage errors, before the design is read); a render to them is read back by
# tifffile and PIL and compared with the raw render of the same design (the engine hands the
# sink its geometry: engine/render.c).
. "${SRC:?}/tests/cli/lib/common.sh"
. "$SRC/tests/cli/lib/python.sh"
find_python numpy tifffile PIL

cat >"$tmp/d.yaml" <<'Y'
tessera: 1
root:
  size: [67, 41]
  source: {shape: circle, center: [30, 20], radius: 15}
Y
"$TESSERA" render "$tmp/d.yaml" -o "$tmp/ref.raw" --progress none || bad "reference render"

usage() { # what, expected message, args...
    local what=$1 msg=$2
    shift 2
    "$TESSERA" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq 2 ] && grep -qF -- "$msg" "$tmp/err"; then ok "$what"; else
        bad "$what: exit $rc, $(head -c 300 "$tmp/err")"; fi
}
usage "--framed with a .tif is a usage error" "--framed: $tmp/x.tif is written as an image file" \
    render "$tmp/d.yaml" -o "$tmp/x.tif" --framed
usage "--resume-at with a .BMP is a usage error" "an image file cannot be resumed" \
    render "$tmp/d.yaml" -o "$tmp/x.BMP" --resume-at 10
[ ! -e "$tmp/x.tif" ] && [ ! -e "$tmp/x.BMP" ] && ok "nothing created by a usage error" ||
    bad "a usage error created a file"

for ext in tif tiff bmp; do
    rm -f "$tmp/o.$ext"
    "$TESSERA" render "$tmp/d.yaml" -o "$tmp/o.$ext" --progress none 2>"$tmp/err"
    rc=$?
    kind=$([ "$ext" = bmp ] && echo bmp || echo tiff)
    if [ "$rc" -eq 0 ] &&
        "$PY" "$SRC/tests/oracle/images.py" "$kind" "$tmp/o.$ext" "$tmp/ref.raw" 67 41 8; then
        ok "render -o o.$ext reads back as the raw render"
    else
        bad "render -o o.$ext: exit $rc, $(head -c 300 "$tmp/err")"
    fi
done

# depth 1, 2, 4 (dithered, packed): a TIFF of each and a BMP of 1 and 4 bits read back as the
# raw render's levels
for spec in "1 blue16 tif" "2 bayer4 tif" "4 bayer8 tif" "1 bayer8 bmp" "4 blue16 bmp"; do
    set -- $spec
    printf 'tessera: 1\noutput: {depth: %s, dither: %s}\nroot:\n  size: [67, 41]\n  source: {gradient: radial, center: [30, 20], radius: 25, values: [1.0, 0.0]}\n' \
        "$1" "$2" >"$tmp/p.yaml"
    "$TESSERA" render "$tmp/p.yaml" -o "$tmp/p.raw" --progress none || bad "depth $1 raw render"
    "$TESSERA" render "$tmp/p.yaml" -o "$tmp/p.$3" --progress none 2>"$tmp/err"
    rc=$?
    kind=$([ "$3" = bmp ] && echo bmp || echo tiff)
    if [ "$rc" -eq 0 ] && "$PY" "$SRC/tests/oracle/images.py" "$kind" "$tmp/p.$3" "$tmp/p.raw" 67 41 "$1"; then
        ok "depth $1 ($2) -o p.$3 reads back as the packed raw render"
    else
        bad "depth $1 ($2) -o p.$3: exit $rc, $(head -c 300 "$tmp/err")"
    fi
done
finish
