#!/usr/bin/env bash
# The stage's geometry (docs/outputs.md §2, §8): swath overlap with the dose feathered (linear,
# cosine), overscan at row ends, bit planes, one BMP a swath. Each stream equals
# tests/stream/stage.py's numpy reordering of the raster render bit for bit (8 and 16 bit,
# packed depth 1, every start corner and stage order, tile sizes and threads); the feathered
# overlaps added back give the raster render; a resumed bit-plane stream is the whole one;
# the framed header (version 2) carries the geometry and the controller takes it; the BMPs of
# a swath stream put back together are the raw stream; `check` prints the geometry; bad keys
# and outputs that cannot hold the stream are refused.
source "$SRC/tests/stream/lib.sh"
NP=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy' 2>/dev/null; then
    NP=$cand
    break
  fi
done
[ -n "$NP" ] || { echo "FAIL: no python3 with numpy (install python3-numpy)"; exit 1; }
STAGE="$SRC/tests/stream/stage.py"
W=301
H=67

# design OUT DEPTH [OUTPUT LINES...]: lenses.yaml, 301 x 67 px, tile 32, another output
design() {
  local out=$1 depth=$2
  shift 2
  {
    sed -n '1,/^output:/p' "$DESIGN" | sed 's/^tile: 64/tile: 32/'
    echo "  depth: $depth"
    for l in "$@"; do echo "  $l"; done
    sed -n '/^nodes:/,$p' "$DESIGN" | sed "s/size: \[2000, 1200\]/size: [$W, $H]/"
  } >"$out"
}

design "$tmp/f8.yaml" 8
design "$tmp/f16.yaml" 16
"$TESSERA" render "$tmp/f8.yaml" -o "$tmp/f8.raw" --progress none
"$TESSERA" render "$tmp/f16.yaml" -o "$tmp/f16.raw" --progress none

# same NAME DEPTH "OUTPUT LINES" "stage.py OPTIONS" [RENDER OPTIONS]: the numpy reordering
# (depth 1, 2, 4: of the 8-bit render, dithered by stage.py --bits)
n=0
same() {
  local name=$1 depth=$2 lines=$3 opts=$4 run=${5:-}
  n=$((n + 1))
  local lines_a=()
  IFS='|' read -r -a lines_a <<<"$lines"
  design "$tmp/d$n.yaml" "$depth" "${lines_a[@]}"
  local src="$tmp/f8.raw" sd=8
  [ "$depth" = 16 ] && { src="$tmp/f16.raw"; sd=16; }
  # shellcheck disable=SC2086
  "$NP" "$STAGE" expect "$src" $W $H $sd "$tmp/want$n.raw" $opts
  rm -f "$tmp/got$n.raw"
  # shellcheck disable=SC2086
  "$TESSERA" render "$tmp/d$n.yaml" -o "$tmp/got$n.raw" --progress none $run 2>"$tmp/err"
  check "$name: the numpy reordering ($(head -c 200 "$tmp/err"))" cmp -s "$tmp/got$n.raw" "$tmp/want$n.raw"
}

SW="order: swath"
# ---- overlap, feathered -----------------------------------------------------------------------
same "overlap 9, linear, swaths of 70" 8 "$SW|swath: {width: 70}|stage: {overlap: 9}" \
  "--swath 70 --overlap 9"
same "overlap 9, cosine, tile 7, one thread" 8 "$SW|swath: {width: 70}|stage: {overlap: 9, feather: cosine}" \
  "--swath 70 --overlap 9 --feather cosine" "--tile 7 --threads 1"
same "overlap 40 wider than the last swath (21 px), serpentine from the bottom-right" 8 \
  "$SW|swath: {width: 70, serpentine: true, start: bottom-right}|stage: {overlap: 40, feather: cosine}" \
  "--swath 70 --serpentine --start bottom-right --overlap 40 --feather cosine"
same "16 bit, overlap 13, mirror-x, bidirectional rows" 16 \
  "$SW|swath: {width: 64}|stage: {overlap: 13, mirror-x: true, bidirectional: rows}" \
  "--swath 64 --overlap 13 --mirror-x --bidirectional rows"
same "y-up, bidirectional swaths, overlap 6" 8 \
  "$SW|swath: {width: 100}|stage: {overlap: 6, y-up: true, bidirectional: swaths}" \
  "--swath 100 --overlap 6 --y-up --bidirectional swaths" "--tile 64 --threads 2"

# the overlaps added back: the raster render (within one step; the split is exact)
design "$tmp/sum.yaml" 8 "$SW" "swath: {width: 70}" "stage: {overlap: 25, feather: cosine}"
"$TESSERA" render "$tmp/sum.yaml" -o "$tmp/sum.raw" --progress none
"$NP" "$STAGE" sum "$tmp/sum.raw" $W $H 8 70 25 top-left "$tmp/summed.raw"
check "the feathered overlaps sum back to the unfeathered render (within one step)" \
  "$NP" -c 'import numpy as np,sys; a=np.fromfile(sys.argv[1],np.uint8).astype(int); b=np.fromfile(sys.argv[2],np.uint8).astype(int); sys.exit(0 if a.shape==b.shape and np.abs(a-b).max()<=1 else 1)' \
  "$tmp/summed.raw" "$tmp/f8.raw"
check "... and the overlap columns are really shared (not all in one swath)" \
  "$NP" -c 'import numpy as np,sys; r=np.fromfile(sys.argv[1],np.uint8).reshape(-1); h=67; s0=r[:h*95].reshape(h,95); s1=r[h*95:h*95+h*95].reshape(h,95); t=s0[:,70:95].astype(int); l=s1[:,:25].astype(int); sys.exit(0 if (t>0).any() and (l>0).any() and ((t>0)&(l>0)).any() else 1)' "$tmp/sum.raw"

# ---- overscan ----------------------------------------------------------------------------------
same "overscan 5 of 7, raster" 8 "stage: {overscan: 5, overscan-value: 7}" "--overscan 5 --overscan-value 7"
same "overscan 3 of 65535, 16 bit, bidirectional rows" 16 "stage: {overscan: 3, overscan-value: 65535, bidirectional: rows}" \
  "--overscan 3 --overscan-value 65535 --bidirectional rows" "--tile 7"
same "overscan and overlap in swaths from the top-right" 8 \
  "$SW|swath: {width: 90, start: top-right}|stage: {overlap: 11, overscan: 4, overscan-value: 255}" \
  "--swath 90 --start top-right --overlap 11 --overscan 4 --overscan-value 255"
same "depth 1 (blue16), overscan 3 of level 1, bidirectional rows" 1 \
  "dither: blue16|stage: {overscan: 3, overscan-value: 1, bidirectional: rows}" \
  "--bits 1 --array blue16 --overscan 3 --overscan-value 1 --bidirectional rows"
same "depth 2 (bayer4) swaths of 45, overscan 5 of level 2, mirror-x, tile 7" 2 \
  "dither: bayer4|$SW|swath: {width: 45}|stage: {overscan: 5, overscan-value: 2, mirror-x: true}" \
  "--bits 2 --array bayer4 --swath 45 --overscan 5 --overscan-value 2 --mirror-x" "--tile 7"

# ---- bit planes ----------------------------------------------------------------------------------
same "planes of 5 rows, raster" 8 "planes: 5" "--planes 5"
same "planes of 8 rows, 16 bit, swaths, overscan, y-up" 16 \
  "$SW|swath: {width: 100}|planes: 8|stage: {overscan: 2, overscan-value: 4095, y-up: true}" \
  "--swath 100 --planes 8 --overscan 2 --overscan-value 4095 --y-up" "--tile 7 --threads 1"
same "planes of the whole height, serpentine swaths, overlap" 8 \
  "$SW|swath: {width: 80, serpentine: true}|planes: $H|stage: {overlap: 10}" \
  "--swath 80 --serpentine --planes $H --overlap 10"
design "$tmp/pl.yaml" 8 "$SW" "swath: {width: 70}" "planes: 6" "stage: {overscan: 1}"
"$NP" "$STAGE" expect "$tmp/f8.raw" $W $H 8 "$tmp/want_pl.raw" --swath 70 --planes 6 --overscan 1
total=$(stat -c %s "$tmp/want_pl.raw")
for b in 1 777 $((total / 2 + 3)) $((total - 1)); do
  head -c "$b" "$tmp/want_pl.raw" >"$tmp/res.raw"
  "$TESSERA" render "$tmp/pl.yaml" -o "$tmp/res.raw" --resume-at "$b" --progress none 2>"$tmp/err"
  check "bit planes resumed at byte $b of $total (inside a unit): the whole stream" \
    cmp -s "$tmp/res.raw" "$tmp/want_pl.raw"
done
"$TESSERA" check "$tmp/pl.yaml" >"$tmp/check.txt" 2>&1
check "check gives the planes' stream bytes ($total)" grep -q "stream: $total bytes" "$tmp/check.txt"
check "check says how the planes go" grep -q "bit planes: every 6 rows of a swath (stream order) go as 8 1-bit planes, top bit first" "$tmp/check.txt"
check "the sidecar names the planes" grep -q '"planes": 6,' "$tmp/res.raw.json"

# ---- the header carries the geometry; the controller takes the stream -----------------------------
design "$tmp/hd.yaml" 8 "$SW" "swath: {width: 70}" "planes: 3" "stage: {overlap: 9, feather: cosine, overscan: 5, overscan-value: 7}"
"$NP" "$STAGE" expect "$tmp/f8.raw" $W $H 8 "$tmp/want_hd.raw" --swath 70 --planes 3 --overlap 9 --feather cosine --overscan 5 --overscan-value 7
"$TESSERA" render "$tmp/hd.yaml" -o "$tmp/hd.tsr" --framed --progress none
hv=$("$PY" -c 'import struct,sys; b=open(sys.argv[1],"rb").read(107); v=struct.unpack_from("<H",b,4)[0]; t=struct.unpack_from("<Q",b,67)[0]; f=b[79]; o,s=struct.unpack_from("<II",b,83); val=struct.unpack_from("<H",b,91)[0]; p=struct.unpack_from("<I",b,95)[0]; print(v,f,o,s,val,p,t)' "$tmp/hd.tsr")
check "the framed header: version 2, feather 1, overlap 9, overscan 5 of 7, planes 3, total ($hv)" \
  test "$hv" = "2 1 9 5 7 3 $(stat -c %s "$tmp/want_hd.raw")"
start_controller "$tmp/ctl.log" -o "$tmp/ctl.raw"
ctl=$CPID
"$TESSERA" render "$tmp/hd.yaml" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
rc=$?
reap_within "$ctl" 20
check "tcp: the sender and the controller finish (exit $rc, $REAPED: $(tail -n 1 "$tmp/ctl.log"))" \
  test "$rc" -eq 0 -a "$REAPED" -eq 0
check "tcp: the controller holds the stream" cmp -s "$tmp/ctl.raw" "$tmp/want_hd.raw"

# ---- check prints the geometry ----------------------------------------------------------------
"$TESSERA" check "$tmp/hd.yaml" >"$tmp/check.txt" 2>&1
check "check: the overlap" grep -q "overlap: each swath goes on 9 px into the next, the dose feathered (cosine weights" "$tmp/check.txt"
check "check: the overscan" grep -q "overscan: 5 px of 7 at both ends of every row" "$tmp/check.txt"
check "check: a swath's columns" grep -q "swath 1: columns \[70, 149), overlap 9 with the one before, 9 with the next; a row 89 px" "$tmp/check.txt"

# ---- one BMP a swath ----------------------------------------------------------------------------
for spec in "8|" "1|dither: bayer8|"; do
  IFS='|' read -r dep extra _ <<<"$spec"
  lines=("$SW" "swath: {width: 96, serpentine: true}" "stage: {overscan: 4, overscan-value: 1, bidirectional: rows}")
  [ -n "$extra" ] && lines+=("$extra")
  design "$tmp/bmp.yaml" "$dep" "${lines[@]}"
  rm -f "$tmp"/sw-*.bmp
  "$TESSERA" render "$tmp/bmp.yaml" -o "$tmp/raw.raw" --progress none
  "$TESSERA" render "$tmp/bmp.yaml" -o "$tmp/sw-%d.bmp" --progress none 2>"$tmp/err"
  check "depth $dep: one BMP a swath, sw-0.bmp .. sw-3.bmp ($(head -c 200 "$tmp/err"))" \
    test -s "$tmp/sw-0.bmp" -a -s "$tmp/sw-3.bmp" -a ! -e "$tmp/sw-4.bmp" -a ! -e "$tmp/sw-%d.bmp"
  check "depth $dep: the BMPs read by PIL and put back together are the raw stream" \
    "$NP" - "$tmp" "$dep" <<'PYEOF'
import sys
import numpy as np
from PIL import Image
tmp, dep = sys.argv[1], int(sys.argv[2])
parts = []
for k in range(4):
    im = Image.open("%s/sw-%d.bmp" % (tmp, k))
    a = np.array(im.convert("L") if dep == 1 else im).astype(np.uint8)
    if dep == 1:
        a = (a > 0).astype(np.uint8)
        parts.append(np.packbits(a, axis=1).tobytes())
    else:
        parts.append(a.tobytes())
sys.exit(0 if b"".join(parts) == open(tmp + "/raw.raw", "rb").read() else 1)
PYEOF
done
design "$tmp/tf.yaml" 8 "stage: {overscan: 6, overscan-value: 200, bidirectional: rows}"
"$TESSERA" render "$tmp/tf.yaml" -o "$tmp/tf.raw" --progress none
"$TESSERA" render "$tmp/tf.yaml" -o "$tmp/tf.tif" --progress none 2>"$tmp/err"
check "a raster stream with overscan as a TIFF: $((W + 12)) px wide, the raw stream's rows ($(head -c 200 "$tmp/err"))" \
  "$NP" -c 'import sys, numpy as np, tifffile; a=tifffile.imread(sys.argv[1]); r=np.fromfile(sys.argv[2],np.uint8); sys.exit(0 if a.shape==(int(sys.argv[4]),int(sys.argv[3])) and a.tobytes()==r.tobytes() else 1)' \
  "$tmp/tf.tif" "$tmp/tf.raw" $((W + 12)) $H
design "$tmp/bs.yaml" 8 "$SW" "swath: {width: 96}"
"$TESSERA" render "$tmp/bs.yaml" -o "$tmp/one.bmp" --progress none 2>"$tmp/err"
check "a swath design into one BMP: refused, naming %d ($(cat "$tmp/err"))" \
  grep -q "one BMP a swath with %d in its name (out-%d.bmp)" "$tmp/err"
"$TESSERA" render "$tmp/pl.yaml" -o "$tmp/pl-%d.bmp" --progress none 2>"$tmp/err"
check "bit planes into BMPs: refused ($(cat "$tmp/err"))" grep -q "streams bit planes (planes: 6): write a .raw file" "$tmp/err"
"$TESSERA" render "$tmp/pl.yaml" -o "$tmp/pl.tif" --progress none 2>"$tmp/err"
check "bit planes into a TIFF: refused" grep -q "a TIFF holds pixels, the design streams bit planes" "$tmp/err"

# ---- profile: packed bytes, and samples where the stage's stream goes -------------------------------
design "$tmp/pq.yaml" 1 "dither: bayer8"
rm -f "$tmp/pq.raw"
"$TESSERA" profile "$tmp/pq.yaml" --region 0,0,$W,$H -o "$tmp/pq.raw" >"$tmp/pq.txt" 2>&1
"$TESSERA" check "$tmp/pq.yaml" >"$tmp/check.txt" 2>&1
pqt=$(sed -n 's/^stream: \([0-9]*\) bytes.*/\1/p' "$tmp/check.txt")
check "profile -o at depth 1: the sink gets the rows the profile rendered (render --rows 0:$H, $pqt bytes)" \
  grep -q "$pqt bytes (render --rows 0:$H)" "$tmp/pq.txt"
design "$tmp/pm.yaml" 8 "$SW" "swath: {width: 70}" "stage: {mirror-x: true}"
"$TESSERA" profile "$tmp/pm.yaml" --json --seconds 0.3 >"$tmp/pm.json" 2>/dev/null
check "profile with mirror-x: the first sample is in the swath at the right edge" \
  "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["samples"][0]["region"]; sys.exit(0 if r[0] == 301 - 70 else 1)' "$tmp/pm.json"
design "$tmp/py.yaml" 8 "stage: {y-up: true}"
"$TESSERA" profile "$tmp/py.yaml" --json --seconds 0.3 >"$tmp/py.json" 2>/dev/null
check "profile with y-up: the first sample ends at the bottom row" \
  "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["samples"][0]["region"]; sys.exit(0 if r[1] + r[3] == 67 else 1)' "$tmp/py.json"

# ---- bad keys -------------------------------------------------------------------------------------
refuse() {
  local name=$1 msg=$2 out=$3
  printf 'tessera: 1\noutput: %s\nroot: {size: [16, 16]}\n' "$out" >"$tmp/bad.yaml"
  "$TESSERA" check "$tmp/bad.yaml" >/dev/null 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -qF "$msg" "$tmp/err"; then ok "$name (exit 2: $(cat "$tmp/err"))"; else bad "$name (exit $rc: $(cat "$tmp/err"))"; fi
}
refuse "an overlap in raster order" "output.stage.overlap: only with order: swath" "{stage: {overlap: 4}}"
refuse "an overlap at depth 1" "output.stage.overlap: a feathered overlap needs depth 8 or 16, not 1" \
  "{depth: 1, order: swath, swath: {width: 8}, stage: {overlap: 4}}"
refuse "feather without an overlap" "output.stage.feather: only with an overlap" "{stage: {feather: cosine}}"
refuse "a feather that is not a name" "output.stage.feather" "{order: swath, swath: {width: 8}, stage: {overlap: 2, feather: gauss}}"
refuse "an overscan value above 255 at 8 bit" "output.stage.overscan-value: must be 0..255 at 8 bit" "{stage: {overscan: 2, overscan-value: 256}}"
refuse "an overscan level above 1 at depth 1" "output.stage.overscan-value: must be 0..1 at 1 bit" "{depth: 1, stage: {overscan: 2, overscan-value: 2}}"
refuse "a negative overscan" "output.stage.overscan" "{stage: {overscan: -1}}"
refuse "bit planes of a dithered output" "output.planes: bit planes are of depth 8 or 16 samples, not depth 1" "{depth: 1, planes: 4}"
refuse "bit planes of 0 rows" "output.planes" "{planes: 0}"
summary
