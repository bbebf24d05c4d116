#!/usr/bin/env bash
# The reference controller as the machine it stands for: it never vouches for a job whose
# trailer did not match (a restart must not answer `total` and take a bare trailer); one
# controller per output (a lock); one file per job with --jobs N (%d), a complete job taking no
# more senders (the same design twice is two jobs; an incomplete one is resumed); held bytes
# read back before they are resumed over or called complete (a cut or altered output starts
# the job over); its output and state are regular files or nothing (FIFOs, symlinks, devices
# refused, never replaced); the whole header, and each whole frame, within its limit (a
# trickling client is dropped); abort reasons logged escaped, the job held through an abort;
# and a sender bounded by --stall-timeout while it waits for the controller's answer.
source "$SRC/tests/stream/lib.sh"

head -c 600000 "$FULL" >"$tmp/data.raw"
DATA_TOTAL=600000
FP_A=$(printf 'a%.0s' $(seq 64))
FP_B=$(printf 'b%.0s' $(seq 64))
json() { "$PY" -c 'import json,sys; j=json.loads(open(sys.argv[1]).readline()); print(eval(sys.argv[2]))' "$1" "$2"; }
state_offset() { sed -n 's/^offset //p' "$1" 2>/dev/null; }
# refused NAME RC LOG PATTERN: the controller exited RC (not 124: it did not run on) saying so
refused() {
  check "$1 (exit $2: $(head -c 300 "$3"))" test "$2" -eq 2 -a -n "$(grep -e "$4" "$3")"
}

# ---- a trailer that does not match is never laundered by a restart --------------------------
out="$tmp/tr.raw"
start_controller "$tmp/ctl.log" -o "$out"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --bad-trailer \
  >"$tmp/send.json"
reap "$ctl"
check "bad trailer crc: the controller exits 1 ($(tail -n 1 "$tmp/ctl.log"))" test "$REAPED" -eq 1
check "bad trailer crc: it says the job is not complete" grep -q "does not match.*not complete" "$tmp/ctl.log"
held=$(state_offset "$out.tsrstate")
check "bad trailer crc: the state does not hold the whole job (offset $held)" test "${held:-x}" -lt "$DATA_TOTAL"
start_controller "$tmp/ctl.log" -o "$out"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap "$ctl"
ans=$(json "$tmp/send.json" 'j["answer"]')
check "restarted after the bad trailer: answered $ans, not the total (no bare trailer completes it)" \
  test "$ans" != "$DATA_TOTAL"
check "restarted: the bytes re-sent complete the job (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["closed"]')" = True
check "restarted: output identical" cmp -s "$out" "$tmp/data.raw"

# ---- one controller per output ----------------------------------------------------------------
out="$tmp/lock.raw"
start_controller "$tmp/ctl.log" -o "$out"
ctl=$CPID
port1=$CPORT
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --stop-after 3 >/dev/null
sleep 0.2
cp "$out.tsrstate" "$tmp/lock.state"
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$out" 2>"$tmp/err2"
refused "a second controller on the same -o is refused" $? "$tmp/err2" "lock.raw: in use by another controller"
check "the second one touched nothing" cmp -s "$out.tsrstate" "$tmp/lock.state"
ln -s "$out" "$tmp/lock-link.raw"
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/lock-link.raw" 2>"$tmp/err2"
refused "... nor through a symlink to it" $? "$tmp/err2" "in use by another controller"
"$PY" "$PROTO" send --port "$port1" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap "$ctl"
check "the first completes its job, resumed at 196608 (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"]')" = 196608
check "... output identical" cmp -s "$out" "$tmp/data.raw"

# ---- --jobs N: one file per job ---------------------------------------------------------------
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 --jobs 2 -o "$tmp/plate.raw" 2>"$tmp/err2"
refused "--jobs 2 without %d in -o is refused" $? "$tmp/err2" "one file per job: put %d in the name"
start_controller "$tmp/ctl.log" -o "$tmp/plate-%d.raw" --jobs 2
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >/dev/null
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$ctl"
check "--jobs 2 -o plate-%d.raw: both jobs, exit 0 (sender $src, controller $REAPED)" \
  test "$src" -eq 0 -a "$REAPED" -eq 0
check "--jobs 2: job 1 in plate-1.raw" cmp -s "$tmp/plate-1.raw" "$tmp/data.raw"
check "--jobs 2: job 2 in plate-2.raw" cmp -s "$tmp/plate-2.raw" "$FULL"
start_controller "$tmp/ctl.log" -o "$tmp/plate-%d.raw" --jobs 3
ctl=$CPID
check "restarted with --jobs 3: jobs 1 and 2 are complete already" \
  grep -q "job 2 is complete in $tmp/plate-2.raw" "$tmp/ctl.log"
# the design of job 2 again: job 2 is complete, so this is job 3 (it was answered total and
# swallowed as a retry of job 2)
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/send.err"
src=$?
reap_within "$ctl"
check "job 2's design again after job 2 is complete: job 3 from byte 0 into plate-3.raw (sender $src, controller $REAPED)" \
  test "$src" -eq 0 -a "$REAPED" -eq 0 -a -n "$(grep 'job 3: .*starting at byte 0, into .*plate-3.raw' "$tmp/ctl.log")"
check "plate-3.raw holds job 3" cmp -s "$tmp/plate-3.raw" "$FULL"
check "plate-2.raw still holds job 2" cmp -s "$tmp/plate-2.raw" "$FULL"
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/plate-%d.raw" --jobs 3 2>"$tmp/err2"
check "restarted when every job is complete: exit 0 at once" \
  test $? -eq 0 -a -n "$(grep 'all 3 jobs are complete' "$tmp/err2")"
# job 1 gone, jobs 2 and 3 complete: once job 1 is received the controller goes on past them
rm -f "$tmp/plate-1.raw" "$tmp/plate-1.raw.tsrstate"
start_controller "$tmp/ctl.log" -o "$tmp/plate-%d.raw" --jobs 3
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_B" >/dev/null
reap_within "$ctl"
check "job 1 received again, jobs 2 and 3 found complete after it: exit 0 ($REAPED)" \
  test "$REAPED" -eq 0 -a -n "$(grep 'job 3 is complete in' "$tmp/ctl.log")"
check "... plate-1.raw holds job 1" cmp -s "$tmp/plate-1.raw" "$tmp/data.raw"

# the same job twice with --jobs 2: two jobs, two files (the second was taken as a retry of
# the first: "0 bytes", nothing written, the controller waiting for job 2)
start_controller "$tmp/ctl.log" -o "$tmp/j-%d.raw" --jobs 2
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send1.json"
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap_within "$ctl"
check "--jobs 2, the same job twice: the second is answered 0 ($(json "$tmp/send.json" 'j["answer"]'))" \
  test "$(json "$tmp/send.json" 'j["answer"]')" = 0
check "... and is job 2: the controller exits 0 ($REAPED)" \
  test "$REAPED" -eq 0 -a -n "$(grep 'job 2: .*into .*j-2.raw' "$tmp/ctl.log")"
check "... j-1.raw holds it" cmp -s "$tmp/j-1.raw" "$tmp/data.raw"
check "... j-2.raw holds it" cmp -s "$tmp/j-2.raw" "$tmp/data.raw"
# a retry of an incomplete job resumes it, whatever came before
start_controller "$tmp/ctl.log" -o "$tmp/k-%d.raw" --jobs 2
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >/dev/null
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --stop-after 3 >/dev/null
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap_within "$ctl"
check "--jobs 2: job 2's sender, stopped and run again, resumes job 2 at 196608 (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"]')" = 196608
check "... k-2.raw holds it" cmp -s "$tmp/k-2.raw" "$tmp/data.raw"
# discarding (no -o): the same
start_controller "$tmp/ctl.log" --jobs 2
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >/dev/null
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap_within "$ctl"
check "--jobs 2 without -o, the same job twice: the second is answered 0 and received whole (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"]')" = 0 \
  -a -n "$(grep "job 2 complete: $DATA_TOTAL bytes ($DATA_TOTAL this connection)" "$tmp/ctl.log")"

# ---- the held bytes are read back before the controller vouches for them ------------------------
# an output cut below its state's offset: the same job starts over and is taken (it was refused
# as "a different design", exit 1, on every restart until the state was removed by hand)
out="$tmp/cut.raw"
start_controller "$tmp/ctl.log" -o "$out"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --stop-after 3 >/dev/null
wait_for "$tmp/ctl.log" "sender gone at byte"
kill -INT "$ctl"
reap_within "$ctl"
truncate -s 1000 "$out"
start_controller "$tmp/ctl.log" -o "$out"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap_within "$ctl"
check "output cut below the state's offset: the same job is answered 0 and completes (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"], j["closed"]')" = "(0, True)"
check "... saying it starts over" grep -q "holds 1000 bytes, less than the state's 196608.*starting over" "$tmp/ctl.log"
check "... output identical" cmp -s "$out" "$tmp/data.raw"
# a byte of a complete job altered on disk: a restart neither reports it complete nor answers total
flip() { "$PY" -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^1]))' "$1" "$2"; }
flip "$out" 300000
start_controller "$tmp/ctl.log" -o "$out"
ctl=$CPID
check "a complete job whose byte 300000 changed: not reported complete at start" \
  test -z "$(grep 'complete' "$tmp/ctl.log")"
check "... the controller says the held bytes cannot be trusted" \
  grep -q "cannot be trusted; starting over from byte 0" "$tmp/ctl.log"
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap_within "$ctl"
check "... its sender is answered 0, not the total, and the job completes again (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"]')" = 0
check "... output identical" cmp -s "$out" "$tmp/data.raw"
# a held byte of a partial job altered while the controller waits: its resume starts over
start_controller "$tmp/ctl.log" -o "$tmp/alt.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --stop-after 3 >/dev/null
wait_for "$tmp/ctl.log" "sender gone at byte"
flip "$tmp/alt.raw" 5
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap_within "$ctl"
check "a held byte altered while the controller waits: the resume is answered 0, the job completes (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"]')" = 0 \
  -a -n "$(grep 'cannot be trusted; starting over from byte 0' "$tmp/ctl.log")"
check "... output identical" cmp -s "$tmp/alt.raw" "$tmp/data.raw"

# ---- outputs and states are regular files or nothing ------------------------------------------------
mkfifo "$tmp/fifo.raw"
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/fifo.raw" 2>"$tmp/err2"
refused "-o FIFO: refused" $? "$tmp/err2" "fifo.raw: is a FIFO"
check "-o FIFO: still a FIFO" test -p "$tmp/fifo.raw"
echo precious >"$tmp/precious"
: >"$tmp/st.raw"
ln -s "$tmp/precious" "$tmp/st.raw.tsrstate"
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/st.raw" 2>"$tmp/err2"
refused "a symlink as the state file: refused" $? "$tmp/err2" "st.raw.tsrstate: is a symbolic link"
check "the state symlink and its target are untouched" \
  test -L "$tmp/st.raw.tsrstate" -a "$(cat "$tmp/precious")" = precious
rm "$tmp/st.raw.tsrstate"
mkfifo "$tmp/st.raw.tsrstate"
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/st.raw" 2>"$tmp/err2"
refused "a FIFO as the state file: refused (not read, not replaced)" $? "$tmp/err2" "st.raw.tsrstate: is a FIFO"
check "... still a FIFO" test -p "$tmp/st.raw.tsrstate"
rm "$tmp/st.raw.tsrstate"
mkfifo "$tmp/st.raw.tsrstate.tmp"
timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/st.raw" 2>"$tmp/err2"
refused "a FIFO as the state's temporary: refused" $? "$tmp/err2" "st.raw.tsrstate.tmp: is a FIFO"
rm "$tmp/st.raw.tsrstate.tmp"
if mknod "$tmp/dev.raw" c 1 3 2>/dev/null; then # a private null device
  timeout 10 "$TESSERA" controller --listen 127.0.0.1:0 -o "$tmp/dev.raw" 2>"$tmp/err2"
  refused "-o a device node: refused" $? "$tmp/err2" "dev.raw: is a device"
  check "-o a device node: still a device" test -c "$tmp/dev.raw"
else
  echo "# mknod not permitted here: the device-node case is covered by the FIFO ones"
fi
echo old >"$tmp/target.raw"
ln -s "$tmp/target.raw" "$tmp/via-link.raw"
start_controller "$tmp/ctl.log" -o "$tmp/via-link.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >/dev/null
reap "$ctl"
check "-o a symlink to a regular file: written through it (exit $REAPED), the link stays a link" \
  test "$REAPED" -eq 0 -a -L "$tmp/via-link.raw"
check "... the target holds the job" cmp -s "$tmp/target.raw" "$tmp/data.raw"

# ---- the header's time is bounded as a whole ----------------------------------------------------
start_controller "$tmp/ctl.log" --stall-timeout 2
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --trickle 0.25 >"$tmp/send.json"
sent=$(json "$tmp/send.json" 'j["sent"]')
check "a header trickled a byte every 0.25 s is cut under --stall-timeout 2 ($sent of 75 bytes sent)" \
  test "$(json "$tmp/send.json" 'j["cut"]')" = True
check "... the controller says so" grep -q "no whole header within 2 s" "$tmp/ctl.log"
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >/dev/null
reap "$ctl"
check "... and serves the next sender (exit $REAPED)" test "$REAPED" -eq 0

# ---- ... and so is each frame's: from its first byte to its last ----------------------------------
start_controller "$tmp/ctl.log" --stall-timeout 2
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" \
  --trickle-frame 0.25 --give-up 6 >"$tmp/send.json"
sent=$(json "$tmp/send.json" '"%d of %d" % (j["sent"], j["of"])')
check "a frame trickled a byte every 0.25 s is cut under --stall-timeout 2 ($sent bytes sent; the sender gives up at 6 s)" \
  test "$(json "$tmp/send.json" 'j["cut"]')" = True
check "... the controller says so" grep -q "no whole frame within 2 s of its first byte" "$tmp/ctl.log"
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >/dev/null
reap_within "$ctl"
check "... and serves the next sender (exit $REAPED)" test "$REAPED" -eq 0

# ---- an abort: the reason escaped, the job held for the sender's return --------------------------
# ESC [2J ESC [31m, CR LF and a forged "job complete" line, a backslash
why=$(printf '\033[2J\033[31mEVIL\r\ntessera controller: job 1 complete\\' | od -An -tx1 | tr -d ' \n')
start_controller "$tmp/ctl.log" -o "$tmp/ab.raw"
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --stop-after 2 \
  --abort-hex "$why" >/dev/null
sleep 0.3
check "abort: the controller keeps running" alive "$ctl"
check "abort: the reason is logged escaped" \
  grep -qF 'aborted the job at byte 131072: \x1b[2J\x1b[31mEVIL\x0d\x0atessera controller: job 1 complete\x5c' "$tmp/ctl.log"
check "abort: no raw control byte reaches the log" test -z "$(tr -d '\n' <"$tmp/ctl.log" | tr -d '[:print:]')"
check "abort: the held bytes recorded" test "$(state_offset "$tmp/ab.raw.tsrstate")" = 131072
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" >"$tmp/send.json"
reap "$ctl"
check "abort: the sender's return resumes at 131072 and completes (exit $REAPED)" \
  test "$REAPED" -eq 0 -a "$(json "$tmp/send.json" 'j["answer"]')" = 131072
check "abort: output identical" cmp -s "$tmp/ab.raw" "$tmp/data.raw"
start_controller "$tmp/ctl.log" --exit-on-abort
ctl=$CPID
"$PY" "$PROTO" send --port "$CPORT" --data "$tmp/data.raw" --fingerprint "$FP_A" --stop-after 2 \
  --abort-hex "$why" >/dev/null
reap "$ctl"
check "--exit-on-abort: exit 1 naming the escaped reason" \
  test "$REAPED" -eq 1 -a -n "$(grep -F 'EVIL\x0d\x0a' "$tmp/ctl.log")"
"$TESSERA" render "$DESIGN" -o null --exit-on-abort 2>"$tmp/err2"
check "--exit-on-abort is a controller option (render: exit 2)" test $? -eq 2

# ---- the sender's wait for the handshake answer ------------------------------------------------------
start_controller "$tmp/ctl.log"
ctl=$CPID
kill -STOP "$ctl"
timeout 60 "$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --stall-timeout 1 \
  --progress none 2>"$tmp/send.err"
src=$?
kill -CONT "$ctl"
check "a stopped controller: the sender gives up after --stall-timeout 1 (exit $src; 124: still waiting)" \
  test "$src" -eq 1
check "... saying the receiver did not answer the header" \
  grep -q "did not answer the header within 1 s (--stall-timeout)" "$tmp/send.err"
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/send.err"
src=$?
reap "$ctl"
check "... the controller, running again, takes the next run (sender $src, controller $REAPED)" \
  test "$src" -eq 0 -a "$REAPED" -eq 0

summary
