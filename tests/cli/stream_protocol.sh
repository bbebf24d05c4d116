#!/usr/bin/env bash
# The framed stream on the wire, checked by an independent implementation (tests/stream/
# proto.py, Python's struct + zlib): the header field by field, resume answers, deflate,
# abort and trailer; the controller against corrupted frames, deflate garbage, foreign
# fingerprints and bad headers; the fingerprint's invariances; framed transcripts in files
# and pipes; connection failures.
source "$SRC/tests/stream/lib.sh"

# json FILE EXPR: evaluate a Python expression over the JSON line in FILE (as `j`)
json() { "$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).readline()); print(eval(sys.argv[2]))' "$1" "$2"; }

# recv_start ARGS...: start proto.py recv in the background; sets RPID and RPORT
recv_start() {
  rm -f "$tmp/port" "$tmp/port.started"
  "$PY" "$PROTO" recv --port-file "$tmp/port" "$@" >"$tmp/recv.json" 2>"$tmp/recv.err" &
  RPID=$!
  CHILDREN+=("$RPID")
  wait_for "$tmp/port" . || { echo "receiver did not start: $(cat "$tmp/recv.err")"; return 1; }
  RPORT=$(cat "$tmp/port")
}

# ---- what tessera sends ----------------------------------------------------------------------
recv_start --out "$tmp/r0.raw"
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$RPID"
check "fresh job: sender exits 0 ($(cat "$tmp/send.err"))" test "$src" -eq 0
check "fresh job: receiver saw a trailer with the right crc" test "$REAPED" -eq 0
check "fresh job: bytes identical" cmp -s "$tmp/r0.raw" "$FULL"
check "header: width 2000, height 1200, depth 8, version 1" \
  test "$(json "$tmp/recv.json" '(j["header"]["width"], j["header"]["height"], j["header"]["depth"], j["header"]["version"])')" = "(2000, 1200, 8, 1)"
check "header: raster order, swath width = width, total" \
  test "$(json "$tmp/recv.json" '(j["header"]["order"], j["header"]["serpentine"], j["header"]["start"], j["header"]["swath_width"], j["header"]["total"])')" = "(0, 0, 0, 2000, $TOTAL)"
fp0=$(json "$tmp/recv.json" 'j["header"]["fingerprint"]')
check "frames are at most 1 MiB when unpaced" test "$(json "$tmp/recv.json" 'j["max_raw"] <= 1 << 20')" = True

# the receiver decides where the stream starts
B=777777
recv_start --answer $B --out "$tmp/rb.raw"
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$RPID"
check "resume answer $B: sender exits 0, trailer crc of the bytes since $B" test "$src" -eq 0 -a "$REAPED" -eq 0
check "resume answer $B: the bytes are the full render's from $B" \
  cmp -s "$tmp/rb.raw" <(tail -c +$((B + 1)) "$FULL")
recv_start --answer $TOTAL --out "$tmp/rt.raw"
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$RPID"
check "resume answer = total: only the trailer" test "$src" -eq 0 -a "$REAPED" -eq 0 -a ! -s "$tmp/rt.raw"
recv_start --answer $((TOTAL + 1))
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$RPID"
check "resume answer past the end: sender exits 1 saying so" \
  test "$src" -eq 1 -a -n "$(grep 'past the end' "$tmp/send.err")"

recv_start --answer refuse
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$RPID"
check "refused (UINT64_MAX): sender exits 1 with a clear message" \
  test "$src" -eq 1 -a -n "$(grep 'the controller refused the job' "$tmp/send.err")"

recv_start --close-after-header
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$RPID"
check "receiver gone after answering: sender exits 1 ($(head -c 120 "$tmp/send.err"))" test "$src" -eq 1

# deflate: every payload one zlib stream, the samples unchanged
recv_start --out "$tmp/rz.raw"
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --deflate --progress none 2>"$tmp/send.err"
src=$?
reap "$RPID"
check "deflate: trailer ok and bytes identical" test "$src" -eq 0 -a "$REAPED" -eq 0
check "deflate: bytes identical" cmp -s "$tmp/rz.raw" "$FULL"
check "deflate: frames carry zlib payloads" test "$(json "$tmp/recv.json" 'j["deflated"] > 0')" = True

# SIGINT: an abort frame with the reason and the next undelivered byte, never a trailer
recv_start --out "$tmp/ra.raw"
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --rate 1MB/s --progress none \
  2>"$tmp/send.err" &
snd=$!
CHILDREN+=("$snd")
wait_for "$tmp/port.started" . && sleep 0.3
kill -INT "$snd"
reap "$snd"
src=$REAPED
reap "$RPID"
check "SIGINT: receiver got an abort frame (exit 3), sender exit 1" test "$REAPED" -eq 3 -a "$src" -eq 1
check "SIGINT: abort reason" test "$(json "$tmp/recv.json" 'j["reason"]')" = "interrupted by SIGINT"
n=$(sed -n 's/.*interrupted at byte \([0-9]*\).*/\1/p' "$tmp/send.err")
check "SIGINT: abort offset = bytes received = the byte the sender names ($n)" \
  test "$(json "$tmp/recv.json" '(j["offset"], j["bytes"])')" = "($n, $n)"
check "SIGINT: what arrived is the full render's prefix" cmp -s "$tmp/ra.raw" <(head -c "$n" "$FULL")

# SIGTERM the same way
recv_start
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$RPORT" --rate 1MB/s --progress none \
  2>"$tmp/send.err" &
snd=$!
CHILDREN+=("$snd")
wait_for "$tmp/port.started" . && sleep 0.3
kill -TERM "$snd"
reap "$snd"
src=$REAPED
reap "$RPID"
check "SIGTERM: abort frame 'interrupted by SIGTERM', sender exit 1" \
  test "$REAPED" -eq 3 -a "$src" -eq 1 -a "$(json "$tmp/recv.json" 'j["reason"]')" = "interrupted by SIGTERM"

# ---- header fields of a swath stream and the fingerprint ------------------------------------------
sed -e 's/^  depth: 8/  depth: 16\n  order: swath\n  swath: {width: 700, serpentine: true, start: bottom-right}/' \
  "$DESIGN" >"$tmp/swath.yaml"
recv_start
"$TESSERA" render "$tmp/swath.yaml" -o "tcp://127.0.0.1:$RPORT" --rows 100:1100 --progress none 2>"$tmp/send.err"
reap "$RPID"
check "header: swath order, serpentine, bottom-right, swath 700, 16 bit, --rows height ($(cat "$tmp/send.err"))" \
  test "$(json "$tmp/recv.json" '(j["header"]["order"], j["header"]["serpentine"], j["header"]["start"], j["header"]["swath_width"], j["header"]["depth"], j["header"]["height"], j["header"]["total"])')" = "(1, 1, 3, 700, 16, 1000, 4000000)"

# fingerprint_of DESIGN [ARGS]: the fingerprint tessera sends
fingerprint_of() {
  recv_start --close-after-header >/dev/null
  "$TESSERA" render "$@" -o "tcp://127.0.0.1:$RPORT" --progress none 2>/dev/null
  reap "$RPID"
  json "$tmp/recv.json" 'j["header"]["fingerprint"]'
}
sed -e 's/^name: .*/name: another-name/' -e 's/^tile: 64/tile: 128/' "$DESIGN" >"$tmp/renamed.yaml"
check "fingerprint ignores name and tile" test "$(fingerprint_of "$tmp/renamed.yaml")" = "$fp0"
check "fingerprint ignores --tile and --threads" test "$(fingerprint_of "$DESIGN" --tile 32 --threads 1)" = "$fp0"
sed -e 's/radius: 28, aa: 4/radius: 27, aa: 4/' "$DESIGN" >"$tmp/changed.yaml"
check "fingerprint changes with a parameter" test "$(fingerprint_of "$tmp/changed.yaml")" != "$fp0"
check "fingerprint changes with the --rows crop" test "$(fingerprint_of "$DESIGN" --rows 0:600)" != "$fp0"
# an image source: its bytes count, not its path
mkdir -p "$tmp/img1" "$tmp/img2"
"$TESSERA" preview "$DESIGN" --region 0,0,64,48 -o "$tmp/img1/a.png" 2>/dev/null
"$TESSERA" preview "$DESIGN" --region 0,0,64,48 -o "$tmp/img2/b.png" 2>/dev/null
"$TESSERA" preview "$DESIGN" --region 30,30,64,48 -o "$tmp/img2/c.png" 2>/dev/null
for n in a b c; do
  cat >"$tmp/img_$n.yaml" <<EOF2
tessera: 1
root:
  size: [640, 480]
  children:
    - trait: repeat
      node:
        source: {image: $( [ $n = a ] && echo "$tmp/img1/a.png" || echo "$tmp/img2/$n.png")}
EOF2
done
fa=$(fingerprint_of "$tmp/img_a.yaml")
check "fingerprint: same image bytes under another path, same fingerprint" test "$(fingerprint_of "$tmp/img_b.yaml")" = "$fa" -a -n "$fa"
check "fingerprint: other image bytes, other fingerprint" test "$(fingerprint_of "$tmp/img_c.yaml")" != "$fa"

# ---- framed transcripts: files and pipes --------------------------------------------------------------
"$TESSERA" render "$DESIGN" --framed -o "$tmp/t.tsr" --progress none 2>"$tmp/send.err"
check "framed file: exit 0" test $? -eq 0
"$PY" "$PROTO" decode "$tmp/t.tsr" --out "$tmp/t.raw" >"$tmp/dec.json"
check "framed file: decodes with a trailer" test $? -eq 0
check "framed file: samples identical" cmp -s "$tmp/t.raw" "$FULL"
check "framed file: header bytes 0..3 are TSRA, header 75 bytes, then a frame at offset 0" \
  test "$(head -c 4 "$tmp/t.tsr")" = TSRA -a "$(od -An -tu8 -j75 -N8 "$tmp/t.tsr" | tr -d ' ')" = 0
"$TESSERA" render "$DESIGN" --framed --deflate --resume-at 1000000 -o - --progress none 2>/dev/null |
  "$PY" "$PROTO" decode /dev/stdin --out "$tmp/tp.raw" >"$tmp/dec.json"
check "framed pipe with deflate from --resume-at 1000000: trailer, bytes from there" \
  test "${PIPESTATUS[1]}" -eq 0 -a "$(json "$tmp/dec.json" 'j["start"]')" = 1000000
check "framed pipe: bytes identical to the slice" cmp -s "$tmp/tp.raw" <(tail -c +1000001 "$FULL")

# ---- the controller against bad senders ----------------------------------------------------------------
head -c 600000 "$FULL" >"$tmp/data.raw"
FP_A=$(printf 'a%.0s' $(seq 64))
FP_B=$(printf 'b%.0s' $(seq 64))
start_controller "$tmp/ctl.log" -o "$tmp/bad.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --corrupt 3 >"$tmp/send.json"
reap "$ctl"
check "corrupted frame: controller exits non-zero" test "$REAPED" -ne 0
check "corrupted frame: named with its offset" grep -q "frame at byte 196608: crc mismatch" "$tmp/ctl.log"
check "corrupted frame: the 3 good frames before it are held" grep -q "^offset 196608$" "$tmp/bad.raw.tsrstate"
check "corrupted frame: and written" cmp -s <(head -c 196608 "$tmp/bad.raw") <(head -c 196608 "$tmp/data.raw")

rm -f "$tmp/bad.raw"*
start_controller "$tmp/ctl.log" -o "$tmp/bad.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --deflate --corrupt 1 >"$tmp/send.json"
reap "$ctl"
check "corrupted deflate payload: controller exits non-zero, naming the frame" \
  test "$REAPED" -ne 0 -a -n "$(grep 'frame at byte 65536' "$tmp/ctl.log")"

# a partial job of design A, then design B: refused
rm -f "$tmp/bad.raw"*
start_controller "$tmp/ctl.log" -o "$tmp/fp.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --stop-after 2 >"$tmp/send.json"
check "a sender that stops early leaves the controller running" alive "$ctl"
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_B" >"$tmp/send.json"
check "mismatched fingerprint: answered UINT64_MAX" test "$(json "$tmp/send.json" 'j["answer"]')" = refuse
reap "$ctl"
check "mismatched fingerprint: controller exits non-zero, naming both" \
  test "$REAPED" -ne 0 -a -n "$(grep "refused a job with fingerprint bbbbbbbbbbbbbbbb.*holds 131072 of 600000 bytes.*aaaaaaaaaaaaaaaa" "$tmp/ctl.log")"
start_controller "$tmp/ctl.log" -o "$tmp/fp.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap "$ctl"
check "the same fingerprint resumes at 131072 and completes" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"], j["closed"]')" = "(131072, True)"
check "resumed output identical" cmp -s "$tmp/fp.raw" "$tmp/data.raw"

# tessera itself refused: a controller holding part of another design's job
start_controller "$tmp/ctl.log" -o "$tmp/fp.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_B" --stop-after 1 >"$tmp/send.json"
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$ctl"
check "tessera refused by a controller with another partial job: exit 1, clear message" \
  test "$src" -eq 1 -a -n "$(grep 'refused the job' "$tmp/send.err")" -a "$REAPED" -ne 0

# after a complete job, another design starts a new job at 0
start_controller "$tmp/ctl.log" -o "$tmp/fp.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_B" >"$tmp/send.json"
reap "$ctl"
start_controller "$tmp/ctl.log" -o "$tmp/fp.raw"
ctl=$CPID
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$ctl"
check "a finished job, then a new design from byte 0; exit 0" \
  test "$src" -eq 0 -a "$REAPED" -eq 0 -a -n "$(grep 'job 1: .*starting at byte 0' "$tmp/ctl.log")"
check "the output is the second job" cmp -s "$tmp/fp.raw" "$FULL"

# a bad header is refused without ending the controller; discarding controller
start_controller "$tmp/ctl.log"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --bad-header >"$tmp/send.json"
check "bad header: answered UINT64_MAX" test "$(json "$tmp/send.json" 'j["answer"]')" = refuse
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --deflate --progress none 2>"$tmp/send.err"
src=$?
reap "$ctl"
check "bad header: the controller still takes the next job (discarding its data), exit 0" \
  test "$src" -eq 0 -a "$REAPED" -eq 0 -a -n "$(grep 'bad magic' "$tmp/ctl.log")"

# ---- connection and usage failures ------------------------------------------------------------------------
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
check "no controller listening: exit 1, 'Connection refused'" \
  test $? -eq 1 -a -n "$(grep "tcp://127.0.0.1:$CPORT: Connection refused" "$tmp/err")"
"$TESSERA" render "$DESIGN" -o "tcp://nohost.invalid:5000" --progress none 2>"$tmp/err"
rc=$?
check "unknown host: exit 1 ($(cat "$tmp/err"))" test $rc -eq 1
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:99999" 2>"$tmp/err"
check "bad port: exit 2" test $? -eq 2
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:5000" --resume-at 10 2>"$tmp/err"
check "--resume-at with tcp: exit 2" test $? -eq 2 -a -n "$(grep 'controller answers' "$tmp/err")"
"$TESSERA" controller --listen 0.0.0.0:0 2>"$tmp/err"
check "controller on a non-loopback address: exit 2" test $? -eq 2 -a -n "$(grep 'not a loopback address' "$tmp/err")"
"$TESSERA" controller --listen 127.0.0.1 2>"$tmp/err"
check "controller without a port: exit 2" test $? -eq 2
"$TESSERA" controller 2>"$tmp/err"
check "controller without --listen: exit 2" test $? -eq 2
"$TESSERA" controller --listen 127.0.0.1:0 --jobs 0 2>"$tmp/err"
check "controller --jobs 0: exit 2" test $? -eq 2
printf 'garbage\n' >"$tmp/g.raw.tsrstate"
"$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/g.raw" 2>"$tmp/err"
check "controller with a corrupt state file: exit 1, names it" \
  test $? -eq 1 -a -n "$(grep 'not a controller state file' "$tmp/err")"
start_controller "$tmp/ctl.log"
ctl=$CPID
kill -INT "$ctl"
reap "$ctl"
check "controller SIGINT while idle: exit 1" test "$REAPED" -eq 1

summary
