#!/usr/bin/env bash
# preview --fast: an image of the exact preview's size whose every pixel is
# the mean of 4 region pixels of its block scattered by splitmix64 (docs/semantics.md gives the
# formula), converted. Checked against a 16-bit --scale 1 preview of the same region: numpy
# picks the same pixels, takes value = sample / 65535, averages and converts (range [0, 1], no
# calibration, as in the designs used); the 8-bit image must match exactly, the 16-bit one
# within 1 (the reference itself is rounded to 16 bits). K dividing the region or not, a
# design whose fast engine gets small tiles (the wafer) and one that keeps its own (a
# distance). K = 1 is the exact preview byte for byte. No timing is asserted. Every preview
# here is --backend cpu: what is tested is the sampling and the conversion, and the GPU's
# preview is another file's (tests/test_gpu.c compares its bytes with the CPU's); under `auto`
# a GPU host ran the samples there one by one and the test timed out at 420 s.
. "${SRC:?}/tests/cli/lib/common.sh"
. "$SRC/tests/cli/lib/python.sh"
find_python numpy

# sampled REF FAST K: FAST is REF (a 16-bit --scale 1 PNG) at the scattered samples
sampled() {
  "$PY" - "$SRC/tests/oracle" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from oracle import read_png
ref, _, rd, _ = read_png(sys.argv[2])
got, _, gd, _ = read_png(sys.argv[3])
k = int(sys.argv[4])
assert rd == 16, rd
ref, got = ref[:, :, 0], got[:, :, 0]
H, W = ref.shape
M = (1 << 64) - 1
def splitmix64(x):
    x = (x + 0x9e3779b97f4a7c15) & M
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
kx, ky = min(k, W), min(k, H)
ow, oh = -(-W // kx), -(-H // ky)
want = np.zeros((oh, ow), np.int64)
for by in range(oh):
    for bx in range(ow):
        x0, y0 = bx * kx, by * ky
        bw, bh = min(kx, W - x0), min(ky, H - y0)
        s = 0.0
        for i in range(4):
            h = splitmix64((by * ow + bx) * 4 + i)
            s += float(np.float32(ref[y0 + (h >> 32) % bh, x0 + h % bw] / 65535.0))
        m = min(max(s / 4, 0.0), 1.0)
        want[by, bx] = int(np.floor(m * ((1 << gd) - 1) + 0.5))
assert got.shape == want.shape, (got.shape, want.shape)
assert want.size == 1 or len(np.unique(want)) > 1, "a flat region tells nothing"
tol = 0 if gd == 8 else 1
bad = np.argwhere(np.abs(got - want) > tol)
assert len(bad) == 0, "%d of %d differ, first at %s: %d, not %d" % (
    len(bad), got.size, bad[0], got[tuple(bad[0])], want[tuple(bad[0])])
print("# %dx%d pixels equal%s" % (ow, oh, " within 1" if tol else ""))
PY
}

# check NAME DESIGN REGION K DEPTH
check() {
  local name=$1 d=$2 region=$3 k=$4 depth=$5
  local exact="$tmp/exact.png" ref="$tmp/ref.png" fast="$tmp/fast.png"
  if ! "$TESSERA" preview "$d" --backend cpu --region "$region" --scale 1 --depth 16 -o "$ref" 2>"$tmp/err" ||
     ! "$TESSERA" preview "$d" --backend cpu --region "$region" --scale "$k" --depth "$depth" -o "$exact" 2>>"$tmp/err" ||
     ! "$TESSERA" preview "$d" --backend cpu --region "$region" --scale "$k" --depth "$depth" --fast -o "$fast" 2>"$tmp/ferr"; then
    bad "$name: a preview failed: $(cat "$tmp/err" "$tmp/ferr")"
    return
  fi
  # the same size as the exact preview: the IHDR (bytes 16-25) holds width, height, depth
  if ! cmp -s <(head -c 25 "$exact" | tail -c 9) <(head -c 25 "$fast" | tail -c 9); then
    bad "$name: --fast is not the exact preview's size"
  elif ! grep -q "^tessera: wrote .*--fast: sampled" "$tmp/ferr"; then
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
# a distance's samples each compute the seeds' 512 px tiles under them: sampling is the cheaper
# way only for blocks of many tiles
check "microlens-sphere (distance), K=1000, 16 bit" "$lens" 1000,2000,3000,2000 1000 16
check "microlens-sphere (distance), K=1500 (clipped last blocks), 8 bit" "$lens" 3000,3000,4500,1600 1500 8

# --fast is never the slower way: where its samples would cost more than the exact preview
# (small blocks over a distance: each sample computes the seed tiles under it; before, 10.5 min
# against 48 s on a large lens), it is the exact preview, byte for byte, and says so
for kr in "9 100,200,700,300" "13 3000,3000,650,390"; do
  set -- $kr
  "$TESSERA" preview "$lens" --region "$2" --scale "$1" -o "$tmp/a.png" 2>/dev/null
  "$TESSERA" preview "$lens" --region "$2" --scale "$1" --fast -o "$tmp/b.png" 2>"$tmp/ferr"
  if cmp -s "$tmp/a.png" "$tmp/b.png" && grep -q -- "--fast: exact, estimated cheaper" "$tmp/ferr"; then
    ok "microlens-sphere K=$1: --fast runs the exact preview, estimated cheaper"
  else bad "microlens-sphere K=$1: --fast is not the exact preview: $(cat "$tmp/ferr")"; fi
done

# K = 1: the exact preview
"$TESSERA" preview "$wafer" --backend cpu --region 9990,9990,120,90 -o "$tmp/a.png" 2>/dev/null
"$TESSERA" preview "$wafer" --backend cpu --region 9990,9990,120,90 --fast -o "$tmp/b.png" 2>/dev/null
if cmp -s "$tmp/a.png" "$tmp/b.png"; then ok "--fast at --scale 1 is the exact preview"
else bad "--fast at --scale 1 differs from the exact preview"; fi

# K = 1 over batches of samples that start and end inside image rows (16384 pixels a batch)
"$TESSERA" preview "$wafer" --backend cpu --region 40000,49990,20000,3 -o "$tmp/a.png" 2>/dev/null
"$TESSERA" preview "$wafer" --backend cpu --region 40000,49990,20000,3 --fast -o "$tmp/b.png" 2>/dev/null
if cmp -s "$tmp/a.png" "$tmp/b.png"; then ok "--fast at --scale 1, 20000 x 3 (batches across rows): the exact preview"
else bad "--fast at --scale 1, 20000 x 3: differs from the exact preview"; fi

# a render option, not a preview one
"$TESSERA" render "$wafer" --fast -o null 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q -- "--fast is not an option of render, but of preview" "$tmp/err"; then ok "render --fast: exit 2"
else bad "render --fast: $(cat "$tmp/err")"; fi

finish
