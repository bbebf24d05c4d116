#!/usr/bin/env bash
# Framing threads through the whole program (docs/streaming.md, "Framing threads"): a framed
# stream, deflated or not, to a file or a pipe, is the same bytes whatever TSR_FRAME_THREADS
# says (bands of many frames: microlens-array's rows are 200000 samples), and it decodes
# (tests/stream/proto.py) to the raw render; a bad TSR_FRAME_THREADS is refused before
# anything is written.
source "$SRC/tests/stream/lib.sh"

LENS="$SRC/designs/examples/microlens-array.yaml"
R=(render "$LENS" --rows 0:96 --progress none)
"$TESSERA" "${R[@]}" -o "$tmp/lens.raw" 2>"$tmp/err"
check "raw render of microlens-array rows 0:96" test $? -eq 0

for z in "" --deflate; do
  for t in 1 3; do
    TSR_FRAME_THREADS=$t "$TESSERA" "${R[@]}" --framed $z -o "$tmp/f$t.tsr" 2>"$tmp/err"
    check "framed $z file, $t framing threads: exit 0" test $? -eq 0
    TSR_FRAME_THREADS=$t "$TESSERA" "${R[@]}" --framed $z -o - 2>"$tmp/err" | cat >"$tmp/p$t.tsr"
    check "framed $z pipe, $t framing threads: exit 0" test "${PIPESTATUS[0]}" -eq 0
  done
  check "framed $z file: the same bytes with 1 and 3 threads" cmp -s "$tmp/f1.tsr" "$tmp/f3.tsr"
  check "framed $z pipe: the same bytes with 1 and 3 threads" cmp -s "$tmp/p1.tsr" "$tmp/p3.tsr"
  check "framed $z: a pipe gets what a file gets" cmp -s "$tmp/f3.tsr" "$tmp/p3.tsr"
  "$PY" "$PROTO" decode "$tmp/f3.tsr" --out "$tmp/d.raw" >"$tmp/d.json" 2>&1
  check "framed $z, 3 threads: every frame's crc and the trailer check out" test $? -eq 0
  check "framed $z, 3 threads: the samples are the raw render's" cmp -s "$tmp/d.raw" "$tmp/lens.raw"
done
check "deflated: smaller than raw frames" \
  test "$(stat -c %s "$tmp/f3.tsr")" -lt "$(stat -c %s "$tmp/lens.raw")"

for v in 0 65 x " 2"; do
  rm -f "$tmp/bad.tsr"
  TSR_FRAME_THREADS=$v "$TESSERA" "${R[@]}" --framed -o "$tmp/bad.tsr" 2>"$tmp/err"
  rc=$?
  msg="TSR_FRAME_THREADS=$v: expected the number of framing threads, 1..64"
  check "TSR_FRAME_THREADS='$v': exit 2, named, nothing written" \
    test $rc -eq 2 -a -n "$(grep -F "$msg" "$tmp/err")" -a ! -e "$tmp/bad.tsr"
done

summary
