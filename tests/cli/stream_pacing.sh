#!/usr/bin/env bash
# Pacing (--rate, token bucket) never runs more than 10% over the rate across 2 s, on the
# sender (null sink, tcp) and in the controller. Upper bounds only: a slow machine passes.
source "$SRC/tests/stream/lib.sh"

now() { date +%s.%N; }
# at_most BYTES SECONDS RATE: BYTES/SECONDS <= 1.1 * RATE
at_most() { "$PY" -c 'import sys; b, s, r = map(float, sys.argv[1:]); sys.exit(0 if b / s <= 1.1 * r else 1)' "$@"; }
rate_of() { "$PY" -c 'import sys; b, s = map(float, sys.argv[1:]); print("%.3f MB/s" % (b / s / 1e6))' "$@"; }

# the sender's own account: every pair of progress samples >= 2 s apart, start included
"$TESSERA" render "$DESIGN" -o null --rate 1MB/s --progress json 2>"$tmp/prog"
check "null sink at 1MB/s: exit 0" test $? -eq 0
check "null sink at 1MB/s: no 2 s window (progress samples) above 1.1 MB/s" "$PY" -c '
import json, sys
s = [(0.0, 0)] + [(j["elapsed_s"], j["bytes"]) for j in map(json.loads, (l for l in open(sys.argv[1]) if l.startswith("{")))]
worst = max(((b2 - b1) / (t2 - t1) for (t1, b1) in s for (t2, b2) in s if t2 - t1 >= 2.0), default=None)
print("# worst 2 s window: %s" % (worst and "%.3f MB/s" % (worst / 1e6)))
assert worst is not None and worst <= 1.1e6, worst
' "$tmp/prog"

# over tcp, measured at the sender's end (it returns when the controller confirmed the end)
start_controller "$tmp/ctl.log" -o "$tmp/got.raw"
ctl=$CPID
t0=$(now)
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --rate 1MB/s --progress none 2>"$tmp/err"
rc=$?
t1=$(now)
reap "$ctl"
secs=$("$PY" -c "print($t1 - $t0)")
check "tcp sender at 1MB/s: $(rate_of "$TOTAL" "$secs") <= 1.1 MB/s" \
  test $rc -eq 0 -a "$REAPED" -eq 0 -a "$(at_most "$TOTAL" "$secs" 1e6 && echo y)" = y
check "tcp sender at 1MB/s: bytes identical" cmp -s "$tmp/got.raw" "$FULL"

# the controller consumes at its rate whatever the sender does
start_controller "$tmp/ctl.log" -o "$tmp/got2.raw" --rate 1MB/s
ctl=$CPID
t0=$(now)
"$TESSERA" render "$DESIGN" -o "tcp://127.0.0.1:$CPORT" --progress none 2>"$tmp/err"
rc=$?
reap "$ctl"
t1=$(now)
secs=$("$PY" -c "print($t1 - $t0)")
check "controller at 1MB/s: $(rate_of "$TOTAL" "$secs") <= 1.1 MB/s" \
  test $rc -eq 0 -a "$REAPED" -eq 0 -a "$(at_most "$TOTAL" "$secs" 1e6 && echo y)" = y
check "controller at 1MB/s: reports its underruns" grep -q "complete: .* underruns" "$tmp/ctl.log"
check "controller at 1MB/s: bytes identical" cmp -s "$tmp/got2.raw" "$FULL"

# units: SI and binary rates parse as docs/streaming.md says
"$TESSERA" render "$DESIGN" -o null --rate 1000KiB/s --progress none --rows 0:10 2>"$tmp/err"
check "--rate 1000KiB/s is accepted" test $? -eq 0
"$TESSERA" render "$DESIGN" -o null --rate 2e6 --progress none --rows 0:10 2>"$tmp/err"
check "--rate 2e6 is accepted" test $? -eq 0

summary
