#!/usr/bin/env bash
# Progress: render's progress moves per finished rect, not per band
# (JSON "computed" and "fraction" move while the first band is still being computed, "bytes"
# delivered still 0), times the first byte (JSON "first_byte_s", the bar's "first byte after",
# the summary), and every run but --progress none ends with the summary line; a preview shows
# progress too (JSON when asked, nothing off a terminal by default). The slow design: one band
# of 64 rows of a root with 40000 layers, 64 root tiles wide (~2.5 s on 2 cores, more under
# the sanitizers). Nothing here is timed: only the order of events.
. "${SRC:?}/tests/cli/lib/common.sh"
check() {
  local name=$1
  shift
  if out=$("$@" 2>&1); then ok "$name${out:+ ($out)}"; else bad "$name: $out"; fi
}
PY=/usr/bin/python3
command -v "$PY" >/dev/null || PY=python3

# 40000 `add` layers of one shared node: every root tile blends each of them, a cost that no
# shape algorithm can shrink (a 1500-point polygon was slow until the scanline fill drew it
# in 0.1 s)
awk -v N=40000 'BEGIN {
    printf "tessera: 1\ntile: 64\nnodes:\n  d: {size: [4096, 256], fill: 0.0001}\n"
    printf "root:\n  size: [4096, 256]\n  children:\n"
    for (i = 0; i < N; i++) printf "    - {trait: pattern, ref: d, blend: add}\n" }' >"$tmp/poly.yaml"
# the runs that need no slowness take the same size without the layers (each band of poly.yaml
# costs seconds)
printf 'tessera: 1\ntile: 64\nroot: {size: [4096, 256], fill: 0.5}\n' >"$tmp/quick.yaml"
"$TESSERA" check "$tmp/poly.yaml" >"$tmp/check" 2>&1
grep -q "64 rows each" "$tmp/check" || bad "the test design's bands are not 64 rows: $(cat "$tmp/check")"

# ---- render: one band (--rows 0:64), JSON ---------------------------------------------------
# `--backend cpu`: rects are the CPU's grain; the GPU backend counts whole bands (16 MiB)
"$TESSERA" render "$tmp/poly.yaml" --rows 0:64 -o null --backend cpu --threads 2 --progress json 2>"$tmp/json"
check "render --progress json: exit 0" test $? -eq 0
check "JSON lines well-formed; computed moves inside the first band; first byte timed; 100 % at the end" \
  "$PY" - "$tmp/json" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
js = [json.loads(l) for l in lines]
assert len(js) >= 2, lines
total = 4096 * 64
need = {"bytes", "total", "start", "elapsed_s", "mb_per_s", "eta_s", "underruns", "underrun_s",
        "computed", "fraction", "first_byte_s"}
for j in js:
    assert need <= set(j), j
    assert j["total"] == total and j["bytes"] <= j["computed"] <= total, j
    assert abs(j["fraction"] - j["computed"] / total) < 1e-5, j
inside = [j for j in js[:-1] if j["bytes"] == 0 and 0 < j["computed"] < total]
assert inside, "no line inside the first band: %s" % lines
assert all(j["first_byte_s"] == -1 for j in inside), inside
assert inside[0]["eta_s"] > 0, inside[0]
for a, b in zip(js, js[1:]):
    assert b["computed"] >= a["computed"] and b["elapsed_s"] >= a["elapsed_s"], (a, b)
last = js[-1]
assert last["done"] is True and last["fraction"] == 1.0, last
assert last["bytes"] == last["computed"] == total, last
assert 0 < last["first_byte_s"] <= last["elapsed_s"], last
print("%d lines inside the first band, first at %.2f of it" % (len(inside), inside[0]["fraction"]))
PY
check "render: summary line with the first byte" \
  grep -Eq "^tessera: 262144 bytes in [0-9.]+ s \([0-9.]+ MB/s\), first byte after [0-9.]+ s$" "$tmp/json"

# ---- the summary on every run: unpaced, short, auto off a terminal ----------------------------
"$TESSERA" render "$tmp/quick.yaml" --rows 0:1 -o "$tmp/one.raw" 2>"$tmp/short"
check "short unpaced run: exit 0" test $? -eq 0
check "short unpaced run: no JSON line, the summary line only" \
  grep -Exq "tessera: 4096 bytes in [0-9.]+ s \([0-9.]+ MB/s\), first byte after [0-9.]+ s" "$tmp/short"
"$TESSERA" render "$tmp/quick.yaml" --rows 0:1 -o null --progress none 2>"$tmp/none"
check "--progress none: stderr silent" test ! -s "$tmp/none"

# ---- the bar says the first byte once ---------------------------------------------------------
if command -v script >/dev/null 2>&1; then
  script -qec "$TESSERA render $tmp/poly.yaml --rows 0:16 -o null --backend cpu --threads 2 --progress bar" \
    /dev/null >"$tmp/bar" 2>&1
  check "--progress bar: 'first byte after' once" \
    test "$(grep -ao "first byte after [0-9.]* s" "$tmp/bar" | wc -l)" -eq 2 # the bar's, the summary's
  check "--progress bar: a percentage between 0 and 100 before the first byte" \
    grep -aEq $'\r +([1-9]|[0-9]?[1-9]\\.[0-9]{2}|[1-9][0-9]\\.[0-9]{2})%  sent 0 B ' "$tmp/bar"
fi

# ---- preview ------------------------------------------------------------------------------------
# --backend cpu: a progress line per finished rect of root pixels; the GPU's preview computes
# this region in one piece and reports it once, at the end.
"$TESSERA" preview "$tmp/poly.yaml" --region 0,0,1024,256 --scale 8 -o "$tmp/p.png" --threads 2 \
  --backend cpu --progress json 2>"$tmp/pjson"
check "preview --progress json: exit 0" test $? -eq 0
check "preview JSON lines: pixels of the region, moving, 100 % at the end" "$PY" - "$tmp/pjson" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
js = [json.loads(l) for l in lines]
total = 1024 * 256
for j in js:
    assert {"computed", "total", "unit", "fraction", "elapsed_s", "per_s", "eta_s"} <= set(j), j
    assert j["unit"] == "px" and j["total"] == total, j
    assert abs(j["fraction"] - j["computed"] / total) < 1e-5, j
mid = [j for j in js[:-1] if 0 < j["fraction"] < 1]
assert mid, "no line before the end: %s" % lines
assert js[-1]["done"] is True and js[-1]["fraction"] == 1.0 and js[-1]["computed"] == total, js[-1]
print("%d lines before the end" % len(mid))
PY
# --backend cpu: the samples' progress as the CPU counts it (under `auto` a GPU host took
# the samples one by one there)
"$TESSERA" preview "$tmp/poly.yaml" --region 0,0,64,64 --fast --scale 4 --backend cpu -o "$tmp/f.png" --progress json 2>"$tmp/fjson"
check "preview --fast --progress json on a short job: the final line, 4 samples a pixel" \
  grep -q '^{"computed":1024,"total":1024,"unit":"px","fraction":1.000000,.*"done":true}$' "$tmp/fjson"
"$TESSERA" preview "$tmp/quick.yaml" --region 0,0,64,64 --backend cpu -o "$tmp/q.png" 2>"$tmp/pauto"
check "preview, auto off a terminal: only the 'wrote' line" \
  grep -xq "tessera: wrote $tmp/q.png (64x64)" "$tmp/pauto"
if command -v script >/dev/null 2>&1; then
  script -qec "$TESSERA preview $tmp/poly.yaml --region 0,0,512,128 --scale 8 -o $tmp/t.png --threads 2 --backend cpu" \
    /dev/null >"$tmp/pbar" 2>&1
  check "preview, auto on a terminal: the bar (percentage, pixels a second, ETA)" \
    grep -aEq $'\r +[0-9]+\\.[0-9]{2}%  [0-9.]+ [kMG]?px / 65.54 kpx  [0-9.]+ [kMG]?px/s  ETA [0-9-]+:[0-9-]+:[0-9-]+' "$tmp/pbar"
fi
"$TESSERA" check "$tmp/poly.yaml" --progress json >/dev/null 2>"$tmp/err"
check "check --progress: exit 2" test $? -eq 2

finish
