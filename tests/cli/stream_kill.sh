#!/usr/bin/env bash
# Streams survive kills: a sender killed (SIGKILL) at random points mid-stream and restarted,
# and a controller killed at random points and restarted, must leave the controller's output
# byte-identical to a direct `render -o file` -- nothing lost, nothing written twice. Also a
# SIGINT'd sender (Ctrl-C): abort frame, resume offset on stderr, the controller keeps the job
# and the sender run again completes it (--exit-on-abort: the controller exits 1 instead).
# STREAM_SEED=N replays a run's kill points.
source "$SRC/tests/stream/lib.sh"

seed=${STREAM_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$seed
echo "# seed $seed (STREAM_SEED=$seed replays it), job $TOTAL bytes"
kills=0
midstream=0

# state_offset FILE: the offset a controller's state file holds (empty if none)
state_offset() { sed -n 's/^offset //p' "$1" 2>/dev/null; }
note_kill() {
  kills=$((kills + 1))
  local off
  off=$(state_offset "$1")
  if [ -n "$off" ] && [ "$off" -gt 0 ] && [ "$off" -lt "$TOTAL" ]; then
    midstream=$((midstream + 1))
  fi
}
# a random sleep of 0.05 .. 1.10 s
nap() { sleep "$(printf '0.%02d' $((5 + RANDOM % 95)))"; [ $((RANDOM % 4)) -eq 0 ] && sleep 0.1; true; }

# ---- the sender dies -----------------------------------------------------------------------
for trial in $(seq 1 12); do
  out="$tmp/s$trial.raw"
  start_controller "$tmp/ctl.log" -o "$out" || { bad "sender-kill $trial: controller"; continue; }
  ctl=$CPID
  nkill=$((1 + RANDOM % 2))
  for k in $(seq 1 $nkill); do
    alive "$ctl" || break # a "killed" sender that finished first completed the job
    "$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --rate 2MB/s --progress none \
      2>"$tmp/send.err" &
    snd=$!
    CHILDREN+=("$snd")
    nap
    kill -9 "$snd" 2>/dev/null
    wait "$snd" 2>/dev/null
    sleep 0.05 # let the controller see the EOF and record its state
    note_kill "$out.tsrstate"
  done
  src=0
  if alive "$ctl"; then
    "$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/send.err"
    src=$?
  fi
  reap "$ctl"; crc=$REAPED
  if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ] && cmp -s "$out" "$FULL"; then
    ok "sender killed $nkill time(s), restarted: output identical (trial $trial)"
  else
    bad "sender-kill trial $trial: sender $src, controller $crc, $(cmp "$out" "$FULL" 2>&1 | head -c 200); $(tail -n 3 "$tmp/ctl.log" | tr '\n' ' ') $(cat "$tmp/send.err")"
  fi
done

# ---- the controller dies -------------------------------------------------------------------
for trial in $(seq 1 10); do
  out="$tmp/c$trial.raw"
  nkill=$((1 + RANDOM % 2))
  for k in $(seq 1 $nkill); do
    start_controller "$tmp/ctl.log" -o "$out" --rate 3MB/s || { bad "controller-kill $trial: start"; continue 2; }
    ctl=$CPID
    "$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --rate 2MB/s --progress none \
      2>"$tmp/send.err" &
    snd=$!
    CHILDREN+=("$snd")
    nap
    kill -9 "$ctl" 2>/dev/null
    wait "$ctl" 2>/dev/null
    note_kill "$out.tsrstate"
    reap "$snd"; src=$REAPED # the sender sees the connection die (or had finished)
  done
  start_controller "$tmp/ctl.log" -o "$out" || { bad "controller-kill $trial: restart"; continue; }
  ctl=$CPID
  "$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/send.err"
  src=$?
  reap "$ctl"; crc=$REAPED
  if [ "$src" -eq 0 ] && [ "$crc" -eq 0 ] && cmp -s "$out" "$FULL"; then
    ok "controller killed $nkill time(s), restarted: output identical (trial $trial)"
  else
    bad "controller-kill trial $trial: sender $src, controller $crc, $(cmp "$out" "$FULL" 2>&1 | head -c 200); $(tail -n 3 "$tmp/ctl.log" | tr '\n' ' ') $(cat "$tmp/send.err")"
  fi
done
echo "# $kills kill points, $midstream of them with the controller holding part of the job"
if [ "$kills" -ge 20 ]; then ok "$kills random kill points"; else bad "only $kills kill points"; fi

# ---- SIGINT (Ctrl-C): clean stop, abort frame, the controller keeps the job, a rerun resumes ----
# sigint_sender OUT [ARGS...]: a controller (-o OUT ARGS) and a paced sender, SIGINT'd mid-job;
# sets ctl (the controller's pid), src (the sender's exit) and n (the byte the sender named)
sigint_sender() {
  local out=$1
  shift
  start_controller "$tmp/ctl.log" -o "$out" "$@"
  ctl=$CPID
  "$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --rate 1MB/s --progress none \
    2>"$tmp/int.err" &
  local snd=$!
  CHILDREN+=("$snd")
  wait_for "$tmp/ctl.log" "job 1:" && sleep 0.4
  kill -INT "$snd"
  reap "$snd"; src=$REAPED
  n=$(sed -n 's/.*interrupted at byte \([0-9]*\).*/\1/p' "$tmp/int.err")
}
out="$tmp/int.raw"
sigint_sender "$out"
check "SIGINT: sender exits 1 and names the byte ($n)" test "$src" -eq 1 -a -n "$n"
wait_for "$tmp/ctl.log" "waiting for the sender"
check "SIGINT: the controller keeps running, holding the job" alive "$ctl"
check "SIGINT: controller names the abort and its reason" \
  grep -q "sender aborted the job at byte [0-9]*: interrupted by SIGINT" "$tmp/ctl.log"
held=$(state_offset "$out.tsrstate")
check "SIGINT: the controller holds exactly the byte the sender named ($held = $n)" \
  test "$held" = "$n"
# run it again at once, to the same controller
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/int.err"
src=$?
reap "$ctl"; crc=$REAPED
check "SIGINT: the rerun completes the job (sender $src, controller $crc: $(tail -n 1 "$tmp/int.err"))" \
  test "$src" -eq 0 -a "$crc" -eq 0
check "SIGINT: resumed output identical to a direct render" cmp -s "$out" "$FULL"
check "SIGINT: resumed at the held byte" grep -q "resuming at byte $n" "$tmp/ctl.log"

# --exit-on-abort: the old behaviour, the controller exits 1 on the abort frame
sigint_sender "$tmp/int2.raw" --exit-on-abort
reap "$ctl"; crc=$REAPED
check "--exit-on-abort: sender 1, controller exits 1 on the abort ($src, $crc)" \
  test "$src" -eq 1 -a "$crc" -eq 1
check "--exit-on-abort: it still holds what arrived" \
  test "$(state_offset "$tmp/int2.raw.tsrstate")" = "$n"

summary
