#!/usr/bin/env bash
# Sink faults through the whole program (docs/reliability.md, "Sink faults"): TSR_FAULT makes
# the sink's medium fail at a chosen byte (a full disk, a dead device, a reader gone, a reset
# connection) or take random short writes, while the engine renders. Each run must exit 1 (not
# crash), name the error and the exact resume point, leave a framed file ending in an abort
# frame (never a trailer), and a resume must complete the job byte-identically. Then the
# controller's own disk filling up (it exits 1, keeps what it wrote, resumes when restarted),
# and a controller that stalls: briefly (the job completes), and for good (the sender gives up
# after --stall-timeout and the next run resumes). Fault points are random; the seed is
# printed, and SEED=N replays a run.
source "$SRC/tests/stream/lib.sh"

SEED=${SEED:-$RANDOM}
RANDOM=$SEED
echo "seed $SEED (SEED=$SEED replays these points)"

# rand_below N: a random integer in [0, N)
rand_below() { echo $(( (RANDOM * 32768 + RANDOM) % $1 )); }

# resume_point ERRFILE: the B of "stopped at byte B" (0 when nothing was delivered)
resume_point() {
  local b
  b=$(sed -n 's/.*stopped at byte \([0-9]*\);.*/\1/p' "$1" | head -n 1)
  echo "${b:-0}"
}

# decode FILE OUT: proto.py's checks of a framed transcript; prints its exit code (0 trailer,
# 3 abort, 4 no end, 1 protocol error); OUT gets the samples, FILE.json the summary
decode() {
  local rc=0
  "$PY" "$PROTO" decode "$1" --out "$2" >"$1.json" 2>&1 || rc=$?
  echo "$rc"
}
json_field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' "$1" "$2"; }

# ---- raw file, full disk and dead device ---------------------------------------------------
for kind in enospc eio; do
  for i in 1 2 3; do
    n=$(rand_below "$TOTAL")
    [ "$i" = 1 ] && [ "$kind" = enospc ] && n=0
    short=""
    [ "$i" = 3 ] && short=",short:$i"
    rm -f "$tmp/a.raw"
    TSR_FAULT="$kind@$n$short" "$TESSERA" render "$DESIGN" -o "$tmp/a.raw" --progress none \
      2>"$tmp/err"
    rc=$?
    b=$(resume_point "$tmp/err")
    what="raw file $kind@$n$short"
    check "$what: exit 1 ($(head -c 200 "$tmp/err"))" test "$rc" -eq 1
    check "$what: the error is named" grep -q "a.raw: \(No space left on device\|Input/output error\)" "$tmp/err"
    check "$what: resume point $b is the fault byte" test "$b" -eq "$n"
    check "$what: the file holds exactly the first $b bytes" cmp -s "$tmp/a.raw" <(head -c "$b" "$FULL")
    "$TESSERA" render "$DESIGN" -o "$tmp/a.raw" --resume-at "$b" --progress none 2>"$tmp/err2"
    check "$what: resume exits 0 ($(head -c 200 "$tmp/err2"))" test $? -eq 0
    check "$what: resumed file is identical" cmp -s "$tmp/a.raw" "$FULL"
  done
done

# ---- framed file (deflated too), full disk -------------------------------------------------
for i in 1 2 3 4; do
  flags=(--framed)
  [ $((i % 2)) = 0 ] && flags+=(--deflate)
  # a point inside the transcript a clean run writes (deflated ones are shorter)
  "$TESSERA" render "$DESIGN" -o "$tmp/clean.tsr" "${flags[@]}" --progress none
  n=$(( 75 + $(rand_below $(( $(stat -c %s "$tmp/clean.tsr") - 75 )) ) ))
  short=""
  [ "$i" -ge 3 ] && short=",short:$i"
  what="framed file ${flags[*]} enospc@$n$short"
  TSR_FAULT="enospc@$n$short" "$TESSERA" render "$DESIGN" -o "$tmp/f.tsr" "${flags[@]}" \
    --progress none 2>"$tmp/err"
  rc=$?
  b=$(resume_point "$tmp/err")
  check "$what: exit 1 ($(head -c 200 "$tmp/err"))" test "$rc" -eq 1
  check "$what: the error is named" grep -q "f.tsr: No space left on device" "$tmp/err"
  check "$what: within the medium's $n bytes" test "$(stat -c %s "$tmp/f.tsr")" -le "$n"
  drc=$(decode "$tmp/f.tsr" "$tmp/f.raw")
  # the abort frame needs 24 bytes + the reason after the last whole frame: 3 when it fitted,
  # 4 (ends at a whole frame, no end marker) when it did not; never 0 (trailer) or 1 (damage)
  check "$what: ends in an abort frame or at a whole frame ($drc: $(cat "$tmp/f.tsr.json"))" \
    test "$drc" -eq 3 -o "$drc" -eq 4
  check "$what: its samples are the first $b bytes" cmp -s "$tmp/f.raw" <(head -c "$b" "$FULL")
  if [ "$drc" -eq 3 ]; then
    check "$what: the abort names the error" grep -q '"reason": "[^"]*No space left on device' "$tmp/f.tsr.json"
    check "$what: the abort is at byte $b" test "$(json_field "$tmp/f.tsr.json" offset)" = "$b"
  fi
  "$TESSERA" render "$DESIGN" -o "$tmp/g.tsr" "${flags[@]}" --resume-at "$b" --progress none \
    2>"$tmp/err2"
  check "$what: resume exits 0 ($(head -c 200 "$tmp/err2"))" test $? -eq 0
  drc=$(decode "$tmp/g.tsr" "$tmp/g.raw")
  check "$what: the resumed transcript ends in a good trailer" test "$drc" -eq 0
  check "$what: both transcripts together are the job" cmp -s <(cat "$tmp/f.raw" "$tmp/g.raw") "$FULL"
done

# ---- stdout pipe, the reader gone ----------------------------------------------------------
for i in 1 2 3; do
  n=$(rand_below "$TOTAL")
  short=""
  [ "$i" = 3 ] && short=",short:$i"
  what="stdout pipe epipe@$n$short"
  TSR_FAULT="epipe@$n$short" "$TESSERA" render "$DESIGN" -o - --progress none 2>"$tmp/err" \
    | cat >"$tmp/p.raw"
  rc=${PIPESTATUS[0]}
  b=$(resume_point "$tmp/err")
  check "$what: exit 1 ($(head -c 200 "$tmp/err"))" test "$rc" -eq 1
  check "$what: the error is named" grep -q "stdout: Broken pipe" "$tmp/err"
  check "$what: the reader got exactly $b = $n bytes, the right ones" \
    cmp -s "$tmp/p.raw" <(head -c "$n" "$FULL")
  "$TESSERA" render "$DESIGN" -o - --resume-at "$b" --progress none 2>"$tmp/err2" >>"$tmp/p.raw"
  check "$what: resume exits 0 and completes the stream" cmp -s "$tmp/p.raw" "$FULL"
done

# ---- short writes alone change nothing -----------------------------------------------------
TSR_FAULT="short:7" "$TESSERA" render "$DESIGN" -o "$tmp/s.raw" --progress none 2>"$tmp/err"
check "short writes, raw file: exit 0, identical" cmp -s "$tmp/s.raw" "$FULL"
TSR_FAULT="short:8" "$TESSERA" render "$DESIGN" -o - --progress none 2>"$tmp/err" | cat >"$tmp/s2.raw"
check "short writes, stdout pipe: identical" cmp -s "$tmp/s2.raw" "$FULL"
TSR_FAULT="short:9" "$TESSERA" render "$DESIGN" -o "$tmp/s.tsr" --framed --deflate --progress none 2>"$tmp/err"
check "short writes, framed file: exit 0" test $? -eq 0
check "short writes, framed file: a complete transcript" test "$(decode "$tmp/s.tsr" "$tmp/s3.raw")" -eq 0
check "short writes, framed file: identical samples" cmp -s "$tmp/s3.raw" "$FULL"

TSR_FAULT="enospc" "$TESSERA" render "$DESIGN" -o "$tmp/x.raw" 2>"$tmp/err"
check "a bad TSR_FAULT exits 2" test $? -eq 2
check "a bad TSR_FAULT is named" grep -q "TSR_FAULT=enospc: expected" "$tmp/err"

# ---- tcp: the connection fails mid-job, the controller holds, the rerun completes ----------
# wait_count FILE PATTERN N: until FILE has N lines matching PATTERN (10 s)
wait_count() {
  local k=100
  while [ "$k" -gt 0 ]; do
    [ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
    sleep 0.1
    k=$((k - 1))
  done
  return 1
}
gone=0
start_controller "$tmp/ctl.log" -o "$tmp/c.raw" || exit 1
for kind in reset epipe; do
  # below 600000: each connection fails before a quarter of the 2.4 MB job, so the second one
  # (resuming) still has more than that to send
  n=$(( 75 + $(rand_below 600000) ))
  what="tcp $kind@$n,short:4"
  TSR_FAULT="$kind@$n,short:4" "$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" \
    --progress none 2>"$tmp/err"
  rc=$?
  check "$what: exit 1 ($(head -c 200 "$tmp/err"))" test "$rc" -eq 1
  check "$what: the error is named" grep -q "tcp://127.0.0.1:$CPORT: \(connection reset by the receiver\|Broken pipe\)" "$tmp/err"
  check "$what: says to run it again" grep -q "stopped at byte [0-9]*; run it again to resume" "$tmp/err"
  gone=$((gone + 1))
  check "$what: the controller holds it for a resume" wait_count "$tmp/ctl.log" "sender gone at byte" "$gone"
  check "$what: the controller is still serving" alive "$CPID"
done
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
check "tcp: the rerun exits 0 ($(head -c 200 "$tmp/err"))" test $? -eq 0
reap "$CPID"
check "tcp: the controller exits 0 after the job ($(tail -n 2 "$tmp/ctl.log"))" test "$REAPED" -eq 0
# The rerun must resume at byte $2, the controller's held offset (log $3), never restart; a
# fault inside the first frame leaves nothing whole to hold (frame sizes follow the sender's
# writes, so timing decides: the GPU's 16 MiB bands make it likely), and then "starting at
# byte 0" is right.
check_resumed_at() {
  if [ "$2" -gt 0 ]; then
    check "$1: it resumed at the held byte $2 rather than restarting" grep -q "resuming at byte $2\b" "$3"
  else
    check "$1: nothing whole was held, so it started at byte 0" grep -q "starting at byte 0" "$3"
  fi
}
# The rerun starts where the controller's last "holding B" said.
held=$(sed -n 's/.*holding \([0-9]*\) for a resume.*/\1/p' "$tmp/ctl.log" | tail -n 1)
check_resumed_at "tcp" "${held:-0}" "$tmp/ctl.log"
check "tcp: the controller's output is identical" cmp -s "$tmp/c.raw" "$FULL"

# ---- the controller's own disk fills up ----------------------------------------------------
# TSR_FAULT on the controller: its output file holds N bytes. It must exit 1 naming the error,
# keep (durably) what it checked and wrote, and, restarted with room, resume the job.
n=$(( 100000 + $(rand_below 2000000) ))
TSR_FAULT="enospc@$n" start_controller "$tmp/ctl3.log" -o "$tmp/d.raw" || exit 1
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
src=$?
reap "$CPID"
what="controller disk full at byte $n"
check "$what: the controller exits 1 ($(tail -n 1 "$tmp/ctl3.log"))" test "$REAPED" -eq 1
check "$what: it names the error" grep -q "d.raw: No space left on device" "$tmp/ctl3.log"
check "$what: the sender exits 1 ($(head -c 200 "$tmp/err"))" test "$src" -eq 1
held=$(sed -n 's/^offset //p' "$tmp/d.raw.tsrstate")
check "$what: its state holds ${held:-?} <= $n bytes" test "${held:-x}" -le "$n"
check "$what: and they are on disk, right" cmp -s <(head -c "$held" "$tmp/d.raw") <(head -c "$held" "$FULL")
start_controller "$tmp/ctl3.log" -o "$tmp/d.raw" || exit 1
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
check "$what: with room again the rerun exits 0" test $? -eq 0
reap "$CPID"
check "$what: the restarted controller exits 0" test "$REAPED" -eq 0
check_resumed_at "$what" "${held:-0}" "$tmp/ctl3.log"
check "$what: its output is identical" cmp -s "$tmp/d.raw" "$FULL"

# ---- a controller that stalls --------------------------------------------------------------
# A job larger than the loopback socket buffers (48 MB), so a stopped controller stops the
# sender, consumed at 20 MB/s, so it is still running when SIGSTOP freezes the controller the
# way a hung machine would.
BIG="$tmp/big.yaml"
sed 's/size: \[2000, 1200\]/size: [8000, 6000]/' "$DESIGN" >"$BIG"
"$TESSERA" render "$BIG" -o "$tmp/big.raw" --progress none 2>"$tmp/err" || echo "FAIL rendering big: $(cat "$tmp/err")"

# stalled_run STALL_SECONDS TIMEOUT: start a sender, freeze the controller once the job runs,
# thaw it after STALL_SECONDS (or when the sender is gone); RC gets the sender's exit status
stalled_run() {
  local stall=$1 timeout=$2 spid t=0
  "$TESSERA" render "$BIG" -o "tcp://127.0.0.1:$CPORT" --stall-timeout "$timeout" \
    --progress none 2>"$tmp/serr" &
  spid=$!
  CHILDREN+=("$spid")
  wait_for "$tmp/ctl2.log" "job 1: .*\(starting\|resuming\)" || echo "job did not start"
  sleep 0.3
  STOPPED=0
  alive "$spid" && kill -STOP "$CPID" && STOPPED=1
  while [ "$t" -lt $((stall * 10)) ] && alive "$spid"; do
    sleep 0.1
    t=$((t + 1))
  done
  kill -CONT "$CPID"
  reap "$spid"
  RC=$REAPED
}

start_controller "$tmp/ctl2.log" -o "$tmp/c2.raw" --rate 20MB/s || exit 1
stalled_run 2 30
check "brief stall: the controller was frozen mid-job" test "$STOPPED" -eq 1
check "brief stall (2 s, --stall-timeout 30): the sender waits and completes ($(head -c 200 "$tmp/serr"))" test "$RC" -eq 0
reap "$CPID"
check "brief stall: the controller exits 0" test "$REAPED" -eq 0
check "brief stall: identical" cmp -s "$tmp/c2.raw" "$tmp/big.raw"

start_controller "$tmp/ctl2.log" -o "$tmp/c3.raw" --rate 20MB/s || exit 1
stalled_run 30 1
check "stall for good: the controller was frozen mid-job" test "$STOPPED" -eq 1
check "stall for good (--stall-timeout 1): the sender exits 1 ($(head -c 300 "$tmp/serr"))" test "$RC" -eq 1
check "stall for good: it says why" grep -q "the receiver took nothing for 1 s (--stall-timeout): giving up" "$tmp/serr"
check "stall for good: and where to go on" grep -q "stopped at byte [0-9]*; run it again to resume" "$tmp/serr"
check "stall for good: the thawed controller holds the job" wait_for "$tmp/ctl2.log" "sender gone at byte"
"$TESSERA" render "$BIG" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
check "stall for good: the rerun exits 0" test $? -eq 0
reap "$CPID"
check "stall for good: the controller exits 0" test "$REAPED" -eq 0
check "stall for good: the rerun resumed" grep -q "resuming at byte [1-9]" "$tmp/ctl2.log"
check "stall for good: identical" cmp -s "$tmp/c3.raw" "$tmp/big.raw"

"$TESSERA" render "$DESIGN" -o "$tmp/x.raw" --stall-timeout 5 2>"$tmp/err"
check "--stall-timeout without tcp:// exits 2" test $? -eq 2
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:9" --stall-timeout 0 2>"$tmp/err"
check "--stall-timeout 0 exits 2" test $? -eq 2

summary
