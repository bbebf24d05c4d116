#!/usr/bin/env bash
# preview --fast (issue 14, item 3): an image of the exact preview's size whose every pixel is
# the region pixel at its block's centre, (b*K + (w-1)//2) on each axis for block b of clipped
# width w (docs/semantics.md). Checked against a --scale 1 preview of the same region sampled
# with numpy at those points: K dividing the region or not, 8 and 16 bit, a design whose fast
# engine gets small tiles (the wafer) and one that keeps its own (a distance). K = 1 is the
# exact preview byte for byte. No timing is asserted.
set -uo pipefail
: "${TESSERA:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
PY=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy' 2>/dev/null; then
    PY=$cand
    break
  fi
done
[ -n "$PY" ] || { echo "FAIL: no python3 with numpy"; exit 1; }

# sampled REF FAST K: FAST is REF (a --scale 1 PNG) at the block centres
sampled() {
  "$PY" - "$SRC/tests/oracle" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from oracle import read_png
ref, _, rd, _ = read_png(sys.argv[2])
got, _, gd, _ = read_png(sys.argv[3])
k = int(sys.argv[4])
ref, got = ref[:, :, 0], got[:, :, 0]
h, w = ref.shape
def centres(n):
    kk = min(k, n)
    return [b * kk + (min(kk, n - b * kk) - 1) // 2 for b in range(-(-n // kk))]
want = ref[np.ix_(centres(h), centres(w))]
assert rd == gd, (rd, gd)
assert got.shape == want.shape, (got.shape, want.shape)
assert want.size == 1 or len(np.unique(want)) > 1, "a flat region tells nothing"
bad = np.argwhere(got != want)
assert len(bad) == 0, "%d of %d differ, first at %s" % (len(bad), got.size, bad[0])
print("# %dx%d samples equal" % (got.shape[1], got.shape[0]))
PY
}

# check NAME DESIGN REGION K DEPTH
check() {
  local name=$1 d=$2 region=$3 k=$4 depth=$5
  local exact="$tmp/exact.png" ref="$tmp/ref.png" fast="$tmp/fast.png"
  if ! "$TESSERA" preview "$d" --region "$region" --scale 1 --depth "$depth" -o "$ref" 2>"$tmp/err" ||
     ! "$TESSERA" preview "$d" --region "$region" --scale "$k" --depth "$depth" -o "$exact" 2>>"$tmp/err" ||
     ! "$TESSERA" preview "$d" --region "$region" --scale "$k" --depth "$depth" --fast -o "$fast" 2>"$tmp/ferr"; then
    bad "$name: a preview failed: $(cat "$tmp/err" "$tmp/ferr")"
    return
  fi
  # the same size as the exact preview: the IHDR (bytes 16-25) holds width, height, depth
  if ! cmp -s <(head -c 25 "$exact" | tail -c 9) <(head -c 25 "$fast" | tail -c 9); then
    bad "$name: --fast is not the exact preview's size"
  elif ! grep -q "^tessera: wrote .*--fast: block centres" "$tmp/ferr"; then
    bad "$name: no 'wrote ... --fast' line: $(cat "$tmp/ferr")"
  elif out=$(sampled "$ref" "$fast" "$k" 2>&1); then
    ok "$name ${out#\# }"
  else
    bad "$name: $out"
  fi
}

wafer="$SRC/designs/examples/wafer-fields.yaml"
lens="$SRC/designs/examples/microlens-sphere.yaml" # a distance: its own tiles
check "wafer, K=37 (clipped last blocks), 8 bit" "$wafer" 48000,40700,1003,777 37 8
check "wafer, K=48 dividing the region, 16 bit" "$wafer" 43900,44700,960,576 48 16
check "wafer, K past the region: one pixel" "$wafer" 50000,50000,300,200 5000 8
check "microlens-sphere (distance), K=9, 16 bit" "$lens" 100,200,700,300 9 16

# K = 1: the exact preview
"$TESSERA" preview "$wafer" --region 9990,9990,120,90 -o "$tmp/a.png" 2>/dev/null
"$TESSERA" preview "$wafer" --region 9990,9990,120,90 --fast -o "$tmp/b.png" 2>/dev/null
if cmp -s "$tmp/a.png" "$tmp/b.png"; then ok "--fast at --scale 1 is the exact preview"
else bad "--fast at --scale 1 differs from the exact preview"; fi

# a render option, not a preview one
"$TESSERA" render "$wafer" --fast -o null 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q "fast.*preview option" "$tmp/err"; then ok "render --fast: exit 2"
else bad "render --fast: $(cat "$tmp/err")"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
