#!/usr/bin/env bash
# Raw streams: --resume-at on files (bytes before B kept) and pipes, --rows with and without a
# resume, swath order and 16-bit samples resumed mid-swath and mid-sample, SIGINT/SIGTERM with
# the printed resume offset, write failures (ENOSPC, EPIPE) and usage errors, progress output.
source "$SRC/tests/stream/lib.sh"

# slice FILE FROM [COUNT]: bytes [FROM, FROM+COUNT) of FILE (to the end without COUNT)
slice() {
  if [ $# -eq 3 ]; then tail -c +$(($2 + 1)) "$1" | head -c "$3"; else tail -c +$(($2 + 1)) "$1"; fi
}

# ---- --resume-at on files -----------------------------------------------------------------------
B=1234567
# a file holding a marker before B and garbage after it: the marker must survive
{ head -c "$B" /dev/zero | tr '\0' 'M'; head -c 3000000 /dev/urandom; } >"$tmp/r.raw"
"$TESSERA" render "$DESIGN" -o "$tmp/r.raw" --resume-at "$B" --progress none 2>"$tmp/err"
check "file --resume-at $B: exit 0" test $? -eq 0
check "file --resume-at: bytes before B kept" \
  test "$(head -c "$B" "$tmp/r.raw" | tr -d 'M' | wc -c)" -eq 0
check "file --resume-at: bytes from B are the render's, the file ends with the stream" \
  cmp -s <(slice "$tmp/r.raw" "$B") <(slice "$FULL" "$B")
check "file --resume-at: length = total" test "$(stat -c %s "$tmp/r.raw")" -eq "$TOTAL"

head -c 1000 "$FULL" >"$tmp/short.raw"
"$TESSERA" render "$DESIGN" -o "$tmp/short.raw" --resume-at 5000 --progress none 2>"$tmp/err"
rc=$?
check "file shorter than --resume-at: exit 2, says so, file untouched" \
  test $rc -eq 2 -a -n "$(grep 'holds 1000 bytes, cannot resume at byte 5000' "$tmp/err")" -a "$(stat -c %s "$tmp/short.raw")" -eq 1000
"$TESSERA" render "$DESIGN" -o "$tmp/new.raw" --resume-at 0 --progress none 2>"$tmp/err"
check "--resume-at 0 on a new file is a full render" cmp -s "$tmp/new.raw" "$FULL"
cp "$FULL" "$tmp/done.raw"
"$TESSERA" render "$DESIGN" -o "$tmp/done.raw" --resume-at "$TOTAL" --progress none 2>"$tmp/err"
check "--resume-at total: nothing to do, exit 0, file kept" test $? -eq 0 -a "$(cmp "$tmp/done.raw" "$FULL" && echo same)" = same
"$TESSERA" render "$DESIGN" -o "$tmp/x.raw" --resume-at $((TOTAL + 1)) --progress none 2>"$tmp/err"
rc=$?
check "--resume-at past the end: exit 2" test $rc -eq 2 -a -n "$(grep 'past the end' "$tmp/err")"
"$TESSERA" render "$DESIGN" -o "$tmp/x.raw" --resume-at -5 2>"$tmp/err"
check "--resume-at -5: exit 2" test $? -eq 2

# ---- pipes ---------------------------------------------------------------------------------------
for b in 1 4095 4096 1000000 $((TOTAL - 1)); do
  "$TESSERA" render "$DESIGN" -o - --resume-at "$b" --progress none 2>"$tmp/err" >"$tmp/p.raw"
  check "file stdout --resume-at $b: the tail from $b" cmp -s "$tmp/p.raw" <(slice "$FULL" "$b")
  "$TESSERA" render "$DESIGN" -o - --resume-at "$b" --progress none 2>"$tmp/err" | cat >"$tmp/p.raw"
  check "pipe --resume-at $b: the tail from $b" cmp -s "$tmp/p.raw" <(slice "$FULL" "$b")
done
"$TESSERA" render "$DESIGN" -o - --progress none 2>/dev/null | cat >"$tmp/p.raw"
check "pipe (vmsplice): whole stream identical" cmp -s "$tmp/p.raw" "$FULL"
TSR_NO_VMSPLICE=1 "$TESSERA" render "$DESIGN" -o - --progress none 2>/dev/null | cat >"$tmp/p.raw"
check "pipe (write): whole stream identical" cmp -s "$tmp/p.raw" "$FULL"
# a reader that splices the pages onward (to another pipe) must still see the right bytes
"$TESSERA" render "$DESIGN" -o - --progress none 2>/dev/null |
  "$PY" -c '
import os, sys
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    out = open(sys.argv[1], "wb")
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        out.write(b)
    sys.exit(0)
os.close(r)
while os.splice(0, w, 1 << 20):
    pass
os.close(w)
os.wait()
' "$tmp/spliced.raw" 2>"$tmp/err"
check "pipe read with splice(2) into a second pipe: identical" cmp -s "$tmp/spliced.raw" "$FULL"

# ---- --rows ----------------------------------------------------------------------------------------------
"$TESSERA" render "$DESIGN" -o "$tmp/rows.raw" --rows 300:700 --progress none 2>"$tmp/err"
check "--rows 300:700 = rows 300..699 of the full render" \
  cmp -s "$tmp/rows.raw" <(slice "$FULL" $((300 * 2000)) $((400 * 2000)))
"$TESSERA" render "$DESIGN" -o - --rows 300:700 --resume-at 123457 --progress none 2>"$tmp/err" >"$tmp/rr.raw"
check "--rows 300:700 --resume-at 123457 = the crop's tail" \
  cmp -s "$tmp/rr.raw" <(slice "$FULL" $((300 * 2000 + 123457)) $((400 * 2000 - 123457)))

# swath order, 16-bit: resume mid-swath, mid-sample
sed -e 's/^  depth: 8/  depth: 16\n  order: swath\n  swath: {width: 700, serpentine: true, start: bottom-right}/' \
  "$DESIGN" >"$tmp/swath.yaml"
"$TESSERA" render "$tmp/swath.yaml" -o "$tmp/sw.raw" --progress none 2>"$tmp/err"
for b in 1 1680001 3333333; do
  "$TESSERA" render "$tmp/swath.yaml" -o - --resume-at "$b" --progress none 2>"$tmp/err" >"$tmp/swr.raw"
  check "swath 16-bit --resume-at $b (odd: mid-sample)" cmp -s "$tmp/swr.raw" <(slice "$tmp/sw.raw" "$b")
done
"$TESSERA" render "$tmp/swath.yaml" -o "$tmp/swrows.raw" --rows 100:1100 --progress none 2>"$tmp/err"
"$TESSERA" render "$tmp/swath.yaml" -o - --rows 100:1100 --resume-at 999999 --progress none 2>"$tmp/err" >"$tmp/swrr.raw"
check "swath --rows crop resumed: the crop's tail" cmp -s "$tmp/swrr.raw" <(slice "$tmp/swrows.raw" 999999)

# ---- stops -----------------------------------------------------------------------------------------------
rm -f "$tmp/int.raw"
"$TESSERA" render "$DESIGN" -o "$tmp/int.raw" --rate 1MB/s --progress none 2>"$tmp/int.err" &
snd=$!
CHILDREN+=("$snd")
wait_bytes "$tmp/int.raw" && sleep 0.3
kill -INT "$snd"
reap "$snd"
n=$(sed -n 's/^tessera: interrupted at byte \([0-9]*\); resume with --resume-at \1$/\1/p' "$tmp/int.err")
check "SIGINT on a file: exit 1 and 'interrupted at byte N; resume with --resume-at N'" \
  test "$REAPED" -eq 1 -a -n "$n"
check "SIGINT on a file: the file holds exactly N bytes of the stream" \
  cmp -s "$tmp/int.raw" <(head -c "${n:-0}" "$FULL")
"$TESSERA" render "$DESIGN" -o "$tmp/int.raw" --resume-at "${n:-0}" --progress none 2>"$tmp/err"
check "SIGINT on a file, then --resume-at N: identical to a direct render" cmp -s "$tmp/int.raw" "$FULL"

rm -f "$tmp/pid"
{
  "$TESSERA" render "$DESIGN" -o - --rate 1MB/s --progress none 2>"$tmp/int.err" &
  echo $! >"$tmp/pid"
  wait
} | cat >"$tmp/pint.raw" &
CHILDREN+=("$!")
wait_for "$tmp/pid" . && wait_bytes "$tmp/pint.raw" && sleep 0.3
pid=$(cat "$tmp/pid")
CHILDREN+=("$pid")
kill -TERM "$pid"
wait
n=$(sed -n 's/^tessera: interrupted at byte \([0-9]*\);.*/\1/p' "$tmp/int.err")
check "SIGTERM on a pipe: the reader got exactly the N bytes named ($n)" \
  test -n "$n" -a "$(stat -c %s "$tmp/pint.raw")" = "${n:-x}"
check "SIGTERM on a pipe: they are the stream's first N" cmp -s "$tmp/pint.raw" <(head -c "${n:-0}" "$FULL")

# ---- failures and usage errors ---------------------------------------------------------------------------
"$TESSERA" render "$DESIGN" -o /dev/full --progress none 2>"$tmp/err"
rc=$?
check "ENOSPC: exit 1, 'No space left on device'" \
  test $rc -eq 1 -a -n "$(grep 'No space left on device' "$tmp/err")"
"$TESSERA" render "$DESIGN" -o /dev/full --framed --progress none 2>"$tmp/err"
rc=$?
check "ENOSPC, framed: exit 1" test $rc -eq 1
"$TESSERA" render "$DESIGN" -o - --progress none 2>"$tmp/err" | head -c 10 >/dev/null
rc=${PIPESTATUS[0]}
check "EPIPE: exit 1 with 'Broken pipe', not killed by SIGPIPE" \
  test "$rc" -eq 1 -a -n "$(grep 'stdout: Broken pipe' "$tmp/err")"
"$TESSERA" render "$DESIGN" -o - --framed --progress none 2>"$tmp/err" | head -c 10 >/dev/null
rc=${PIPESTATUS[0]}
check "EPIPE, framed: exit 1" test "$rc" -eq 1
"$TESSERA" render "$DESIGN" -o "$tmp/nodir/x.raw" --progress none 2>"$tmp/err"
check "unwritable path: exit 1" test $? -eq 1
"$TESSERA" render "$DESIGN" -o "$tmp/x.raw" --deflate 2>"$tmp/err"
check "--deflate without --framed: exit 2" test $? -eq 2
"$TESSERA" render "$DESIGN" -o null --rate fast 2>"$tmp/err"
check "--rate fast: exit 2" test $? -eq 2
"$TESSERA" render "$DESIGN" -o null --rate 0 2>"$tmp/err"
check "--rate 0: exit 2" test $? -eq 2
"$TESSERA" render "$DESIGN" -o null --progress loud 2>"$tmp/err"
check "--progress loud: exit 2" test $? -eq 2
"$TESSERA" check "$DESIGN" --rate 1MB/s >/dev/null 2>"$tmp/err"
check "--rate on check: exit 2" test $? -eq 2

# ---- progress ----------------------------------------------------------------------------------------------
"$TESSERA" render "$DESIGN" -o null --rate 1.5MB/s --progress json 2>"$tmp/prog"
check "--progress json: exit 0" test $? -eq 0
check "--progress json: every line is JSON, the last says done, bytes = total" "$PY" -c '
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
js = [json.loads(l) for l in lines]
assert len(js) >= 2, lines
assert js[-1]["done"] is True and js[-1]["bytes"] == js[-1]["total"] == int(sys.argv[2])
for a, b in zip(js, js[1:]):
    assert b["bytes"] >= a["bytes"] and b["elapsed_s"] >= a["elapsed_s"]
    assert {"mb_per_s", "eta_s", "underruns", "underrun_s", "start"} <= set(a)
# at most 2 lines a second (the final line aside)
t = [j["elapsed_s"] for j in js[:-1]]
assert all(b - a >= 0.45 for a, b in zip(t, t[1:])), t
' "$tmp/prog" "$TOTAL"
check "paced run ends with an underrun summary" grep -q "underruns (.* s starved)" "$tmp/prog"
"$TESSERA" render "$DESIGN" -o null --rate 1.5MB/s --progress none 2>"$tmp/prog"
check "--progress none: stderr silent" test ! -s "$tmp/prog"
"$TESSERA" render "$DESIGN" -o null 2>"$tmp/prog"
check "auto progress, short run, stderr not a terminal: no JSON line, the summary only" \
  grep -Exq "tessera: $TOTAL bytes in [0-9.]+ s \([0-9.]+ MB/s\), first byte after [0-9.]+ s" "$tmp/prog"
if command -v script >/dev/null 2>&1; then
  script -qec "$TESSERA render $DESIGN -o null --rate 2MB/s --progress bar" /dev/null >"$tmp/bar" 2>&1
  check "--progress bar: redrawn line with MB/s, ETA and underruns" \
    grep -q "ETA [0-9-]*:[0-9-]*:[0-9-]*  underruns" "$tmp/bar"
fi

summary
