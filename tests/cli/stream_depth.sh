#!/usr/bin/env bash
# depth 1, 2, 4 (docs/outputs.md): the stream's bytes equal tests/stream/packed.py's numpy
# reference (tests/oracle/dither.py's levels, reordered into the stream's order) bit for bit,
# raster and swath (serpentine, from the bottom-right corner, a swath width that is not whole
# bytes), a --rows crop (the thresholds follow the root's rows), every tile size and thread
# count, a resumed file, and a tcp stream through the reference controller (header version 2);
# a flat gray keeps its density within the stated bound; `check` says it; a profile sent to a
# controller is checked and dropped, never taken for the job it holds; bad keys are refused.
source "$SRC/tests/stream/lib.sh"
NP=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy' 2>/dev/null; then
    NP=$cand
    break
  fi
done
[ -n "$NP" ] || { echo "FAIL: no python3 with numpy (install python3-numpy)"; exit 1; }
PACKED="$SRC/tests/stream/packed.py"
export TSR_DITHER_CACHE="$tmp" # each blue-noise array made once (tests/oracle/dither.py)
quiet() { "$@" >/dev/null 2>&1; }
W=2000
H=1200

# design OUT DEPTH DITHER [ORDER LINES...]: lenses.yaml with another output section
design() {
  local out=$1 depth=$2 dither=$3
  shift 3
  {
    sed -n '1,/^output:/p' "$DESIGN"
    echo "  depth: $depth"
    [ -n "$dither" ] && echo "  dither: $dither"
    for l in "$@"; do echo "  $l"; done
    sed -n '/^nodes:/,$p' "$DESIGN"
  } >"$out"
}

# ---- raster: every depth, array, tile size and thread count -------------------------------
for spec in "1 blue64" "2 bayer4" "4 threshold" "1 bayer8"; do
  set -- $spec
  bits=$1 arr=$2
  design "$tmp/r.yaml" "$bits" "$arr"
  "$NP" "$PACKED" expect "$FULL" $W $H "$bits" "$arr" "$tmp/want.raw"
  # 7 px tiles over the first 96 rows only: tiny tiles cost per tile, not per row
  head -c $((96 * W * bits / 8)) "$tmp/want.raw" >"$tmp/want96.raw"
  for run in "--tile 7 --threads 1 --rows 0:96" "--tile 64 --threads 2" ""; do
    rm -f "$tmp/got.raw"
    "$TESSERA" render "$tmp/r.yaml" -o "$tmp/got.raw" --progress none $run 2>"$tmp/err"
    want="$tmp/want.raw"
    case "$run" in *--rows*) want="$tmp/want96.raw" ;; esac
    check "depth $bits $arr ${run:-(defaults)}: the numpy reference, bit for bit" \
      cmp -s "$tmp/got.raw" "$want"
  done
done

# ---- swath order, serpentine, from the bottom-right: the rows of each swath padded ------------
design "$tmp/s.yaml" 1 bayer8 "order: swath" "swath: {width: 300, serpentine: true, start: bottom-right}"
"$NP" "$PACKED" expect "$FULL" $W $H 1 bayer8 "$tmp/want_s.raw" --swath 300 --serpentine \
  --start bottom-right
"$TESSERA" render "$tmp/s.yaml" -o "$tmp/got_s.raw" --progress none --tile 64 2>"$tmp/err"
check "swath order (300 px swaths = 37.5 bytes, padded to 38): exit 0 ($(head -c 200 "$tmp/err"))" test $? -eq 0
check "swath order: the numpy reordering" cmp -s "$tmp/got_s.raw" "$tmp/want_s.raw"
check "swath order: the sidecar counts the padded rows" \
  grep -q "\"bytes\": $(stat -c %s "$tmp/want_s.raw")," "$tmp/got_s.raw.json"
design "$tmp/s2.yaml" 2 blue16 "order: swath" "swath: {width: 333, start: top-right}"
"$NP" "$PACKED" expect "$FULL" $W $H 2 blue16 "$tmp/want_s2.raw" --swath 333 --start top-right
"$TESSERA" render "$tmp/s2.yaml" -o "$tmp/got_s2.raw" --progress none --threads 1 2>"$tmp/err"
check "depth 2, swaths of 333 from the top-right: the numpy reordering" \
  cmp -s "$tmp/got_s2.raw" "$tmp/want_s2.raw"
total=$(stat -c %s "$tmp/want_s.raw")
"$TESSERA" check "$tmp/s.yaml" >"$tmp/check.txt" 2>&1
check "check gives the packed stream's bytes ($total)" grep -q "stream: $total bytes" "$tmp/check.txt"
check "check names depth 1 and the array" grep -q "depth 1, swath order" "$tmp/check.txt"
check "check says how it is packed" grep -q "1 bit a pixel, dithered from 8-bit samples against bayer8" "$tmp/check.txt"

# ---- a --rows crop: the thresholds follow the root's rows ---------------------------------------
design "$tmp/r.yaml" 1 blue32
head -c $((700 * W)) "$FULL" | tail -c $((600 * W)) >"$tmp/crop8.raw"
"$NP" "$PACKED" expect "$tmp/crop8.raw" $W 600 1 blue32 "$tmp/want_c.raw" --y0 100
"$TESSERA" render "$tmp/r.yaml" -o "$tmp/got_c.raw" --rows 100:700 --progress none 2>"$tmp/err"
check "--rows 100:700: the reference from root row 100" cmp -s "$tmp/got_c.raw" "$tmp/want_c.raw"

# ---- a resumed file: the same bytes --------------------------------------------------------------
for b in 123457 1 $((total - 1)); do
  head -c "$b" "$tmp/want_s.raw" >"$tmp/res.raw"
  "$TESSERA" render "$tmp/s.yaml" -o "$tmp/res.raw" --resume-at "$b" --progress none 2>"$tmp/err"
  check "resumed at byte $b of $total: the whole stream" cmp -s "$tmp/res.raw" "$tmp/want_s.raw"
done

# ---- density of a flat gray ---------------------------------------------------------------------
cat >"$tmp/flat8.yaml" <<'Y'
tessera: 1
output: {depth: 8}
root: {size: [512, 256], fill: 0.3}
Y
"$TESSERA" render "$tmp/flat8.yaml" -o "$tmp/flat8.raw" --progress none
gray=$(od -An -tu1 -N1 "$tmp/flat8.raw" | tr -d ' ')
for spec in "1 bayer8 8" "2 bayer16 16" "1 blue64 64" "4 bayer4 4"; do
  set -- $spec
  sed "s/depth: 8}/depth: $1, dither: $2}/" "$tmp/flat8.yaml" >"$tmp/flat.yaml"
  "$TESSERA" render "$tmp/flat.yaml" -o "$tmp/flat.raw" --progress none
  check "flat gray $gray at depth $1 against $2: $("$NP" "$PACKED" density "$tmp/flat.raw" 512 256 $1 "$gray" $3)" \
    quiet "$NP" "$PACKED" density "$tmp/flat.raw" 512 256 "$1" "$gray" "$3"
done

# ---- tcp: header version 2 through the reference controller -------------------------------------
start_controller "$tmp/ctl.log" -o "$tmp/ctl.raw"
ctl=$CPID
"$TESSERA" render "$tmp/s.yaml" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
rc=$?
reap_within "$ctl" 20
check "tcp: the sender and the controller finish (exit $rc, $REAPED: $(tail -n 1 "$tmp/ctl.log"))" \
  test "$rc" -eq 0 -a "$REAPED" -eq 0
check "tcp: the controller holds the packed stream" cmp -s "$tmp/ctl.raw" "$tmp/want_s.raw"
check "tcp: the controller logs 1 bit" grep -q "at 1 bit, $total bytes" "$tmp/ctl.log"
"$TESSERA" render "$tmp/s.yaml" -o "$tmp/framed.tsr" --framed --progress none
"$PY" "$PROTO" decode "$tmp/framed.tsr" --out "$tmp/dec.raw" >"$tmp/dec.json"
hv=$("$PY" -c 'import json,sys; h=json.load(open(sys.argv[1]))["header"]; print(h["version"], h["depth"], h["dither"], h["dither_log2"], h["profile"])' "$tmp/dec.json")
check "a framed transcript: header version 2, depth 1, Bayer 2^3, not a profile ($hv)" test "$hv" = "2 1 2 3 False"
check "... and proto.py decodes its frames to the stream" cmp -s "$tmp/dec.raw" "$tmp/want_s.raw"

# ---- a profile is never taken for the job -------------------------------------------------------
cp "$tmp/ctl.raw.tsrstate" "$tmp/state.before"
start_controller "$tmp/ctl2.log" -o "$tmp/ctl.raw"
ctl=$CPID
"$TESSERA" profile "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --seconds 0.3 >"$tmp/prof.txt" 2>"$tmp/prof.err"
rc=$?
sleep 0.3
check "profile -o tcp:// into a controller holding a complete job exits 0 ($(tail -n 1 "$tmp/prof.err"))" test "$rc" -eq 0
check "the controller is still waiting for its job (not exited)" running "$ctl"
check "it says it dropped a profile's stream" grep -q "a profile's stream" "$tmp/ctl2.log"
check "the job it holds is untouched" cmp -s "$tmp/ctl.raw" "$tmp/want_s.raw"
check "... and so is its state" cmp -s "$tmp/ctl.raw.tsrstate" "$tmp/state.before"
"$TESSERA" render "$tmp/s.yaml" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
rc=$?
reap_within "$ctl" 20
check "the job sent again after the profile is still complete: nothing re-sent ($(tail -n 1 "$tmp/err"))" \
  test "$rc" -eq 0 -a "$REAPED" -eq 0
check "... the controller answered the total" grep -q "resuming at byte $total" "$tmp/ctl2.log"

# a controller holding part of another job: a profile neither replaces it nor ends the controller
start_controller "$tmp/ctl3.log" -o "$tmp/part.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$FULL" --fingerprint "$(printf 'a%.0s' $(seq 64))" \
  --stop-after 3 >/dev/null
sleep 0.2
cp "$tmp/part.raw.tsrstate" "$tmp/pstate.before"
"$TESSERA" profile "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --seconds 0.3 >/dev/null 2>"$tmp/prof.err"
rc=$?
sleep 0.3
check "profile into a controller holding part of another job: exit 0 ($(tail -n 1 "$tmp/prof.err"))" test "$rc" -eq 0
check "the controller goes on" running "$ctl"
check "its state is the partial job's" cmp -s "$tmp/part.raw.tsrstate" "$tmp/pstate.before"
kill "$ctl" 2>/dev/null
reap "$ctl"

# ---- stage options: only the order changes --------------------------------------------------
# stage TAG DEPTH DITHER "OUTPUT LINES" "RENDER ARGS" "PACKED.PY ARGS": the render against numpy
stage() {
  local tag=$1 bits=$2 arr=$3 lines=$4 rargs=$5 pargs=$6 src=$FULL h=$H y0=0
  IFS='|' read -ra L <<<"$lines"
  design "$tmp/st.yaml" "$bits" "$arr" "${L[@]}"
  [ "$bits" = 8 ] && sed -i '/dither:/d' "$tmp/st.yaml"
  if [ -n "${7:-}" ]; then # a --rows crop Y0:Y1
    y0=${7%:*}
    h=$((${7#*:} - y0))
    head -c $((${7#*:} * W)) "$FULL" | tail -c $((h * W)) >"$tmp/stsrc.raw"
    src="$tmp/stsrc.raw"
    rargs="$rargs --rows $7"
  fi
  "$NP" "$PACKED" expect "$src" $W $h "$bits" "${arr:-x}" "$tmp/st_want.raw" --y0 $y0 $pargs
  rm -f "$tmp/st_got.raw"
  "$TESSERA" render "$tmp/st.yaml" -o "$tmp/st_got.raw" --progress none $rargs 2>"$tmp/err"
  check "stage: $tag: exit 0 ($(head -c 200 "$tmp/err"))" test $? -eq 0
  check "stage: $tag: the numpy reordering of the samples" cmp -s "$tmp/st_got.raw" "$tmp/st_want.raw"
}
stage "8 bit, bidirectional rows, mirrored, y up" 8 "" "stage: {bidirectional: rows, mirror-x: true, y-up: true}" \
  "--tile 7 --threads 2" "--bidirectional rows --mirror-x --y-up"
stage "8 bit, bidirectional rows from an odd crop row" 8 "" "stage: {bidirectional: rows}" \
  "--threads 1" "--bidirectional rows" 101:700
stage "depth 1, swaths of 301 from the top-right, serpentine, every other swath reversed, mirrored" 1 blue16 \
  "order: swath|swath: {width: 301, serpentine: true, start: top-right}|stage: {bidirectional: swaths, mirror-x: true}" \
  "--tile 7" "--swath 301 --serpentine --start top-right --bidirectional swaths --mirror-x"
stage "depth 2, bidirectional rows, y up, a crop" 2 bayer8 "stage: {bidirectional: rows, y-up: true}" \
  "--tile 64 --threads 2" "--bidirectional rows --y-up" 33:1000
stage "depth 4, swaths, mirrored" 4 blue32 "order: swath|swath: {width: 512}|stage: {mirror-x: true}" \
  "" "--swath 512 --mirror-x"
cp "$tmp/st_want.raw" "$tmp/st_full.raw"
n=$(stat -c %s "$tmp/st_full.raw")
head -c 77777 "$tmp/st_full.raw" >"$tmp/st_res.raw"
"$TESSERA" render "$tmp/st.yaml" -o "$tmp/st_res.raw" --resume-at 77777 --progress none 2>"$tmp/err"
check "stage: resumed at byte 77777 of $n: the whole stream" cmp -s "$tmp/st_res.raw" "$tmp/st_full.raw"
"$TESSERA" render "$tmp/st.yaml" -o "$tmp/st.tsr" --framed --progress none
"$PY" "$PROTO" decode "$tmp/st.tsr" >"$tmp/st.json"
sv=$("$PY" -c 'import json,sys; h=json.load(open(sys.argv[1]))["header"]; print(h["version"], h["depth"], h["stage"], h["start"])' "$tmp/st.json")
check "stage: the header says it: version 2, depth 4, stage 4 (mirrored), from the top-right ($sv)" test "$sv" = "2 4 4 1"
"$TESSERA" check "$tmp/st.yaml" >"$tmp/check.txt" 2>&1
check "check prints the stage" grep -q "stage: rows as ordered, x mirrored (every row right to left); the stream starts at the top-right corner" "$tmp/check.txt"

# ---- refused -------------------------------------------------------------------------------
refuse() { # what, message, yaml output line
  printf 'tessera: 1\noutput: %s\nroot: {size: [16, 16]}\n' "$3" >"$tmp/bad.yaml"
  "$TESSERA" check "$tmp/bad.yaml" >/dev/null 2>"$tmp/err"
  local rc=$?
  check "$1 (exit $rc: $(head -c 200 "$tmp/err"))" test "$rc" -eq 2 -a -n "$(grep -F -- "$2" "$tmp/err")"
}
refuse "dither with depth 8" "bad.yaml:2:28: output.dither: only with depth 1, 2 or 4" "{depth: 8, dither: bayer8}"
refuse "dither without a depth" "output.dither: only with depth 1, 2 or 4" "{dither: bayer8}"
refuse "a Bayer size that is no power of two" "output.dither: bayer size 12: must be a power of two in 2..256" "{depth: 1, dither: bayer12}"
refuse "an unknown array" "output.dither: dither 'floyd': expected threshold, bayerN" "{depth: 1, dither: floyd}"
refuse "a blue-noise size out of range" "output.dither: blue size 8: must be 16, 32, 64 or 128" "{depth: 1, dither: blue8}"
refuse "a dither that is not a name" "output.dither: expected threshold, bayerN or blueN" "{depth: 1, dither: [8]}"
refuse "depth 3" "output.depth: must be 1, 2, 4, 8 or 16, got 3" "{depth: 3}"
refuse "bidirectional swaths in raster order" "output.stage.bidirectional: swaths: only with order: swath (use rows)" "{stage: {bidirectional: swaths}}"
refuse "an unknown stage key" "output.stage.speed: unknown key 'speed'" "{stage: {speed: 4}}"
refuse "an unknown bidirectional" "output.stage.bidirectional" "{stage: {bidirectional: diagonal}}"
design "$tmp/r2.yaml" 2 bayer8
"$TESSERA" render "$tmp/r2.yaml" -o "$tmp/x.bmp" --progress none 2>"$tmp/err"
rc=$?
check "depth 2 to a BMP is refused (exit $rc: $(head -c 200 "$tmp/err"))" \
  test "$rc" -ne 0 -a -n "$(grep -F "a BMP here holds 1, 4 or 8 bits" "$tmp/err")"

summary
