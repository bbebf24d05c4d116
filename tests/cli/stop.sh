#!/usr/bin/env bash
# Stops: SIGTERM or SIGINT stops render, preview and profile within about a
# second whatever the design, because the engine's workers poll the stop per tile and inside
# long loops (a polygon's rows, a blur's strips), not only between bands: a band of a chain of
# blurs took over 9 minutes, one of a big polygon 18 s and more (before the scanline
# fill). The first signal prints "stopping..." at once; the second exits at once with the resume offset, which resumes to
# the same bytes. The bound here is a hang guard (20 s), not a timing assertion; the measured
# latencies are in docs/reliability.md.
. "${SRC:?}/tests/cli/lib/common.sh"
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# A comb of 8000 teeth (a 16000-point polygon) with 4x4 anti-aliasing: every sub-sample row
# crosses all 16000 edges, so the render takes ~16 s here (a 4000-point star was enough while
# every sub-sample tested every edge; the scanline fill draws it in 0.7 s).
awk 'BEGIN {
    printf "tessera: 1\nroot:\n  size: [20000, 20000]\n  source: {shape: polygon, aa: 4, points: ["
    for (i = 0; i < 8000; i++) {
        x = 20000 * i / 8000
        printf "%s[%.3f, 100], [%.3f, 19900]", (i ? ", " : ""), x, x + 1.25
    }
    printf "]}\n" }' >"$tmp/poly.yaml"
# Twelve nested blurs of sigma 250: each level reads a halo of 1000 px around the one above,
# so the first band alone computes ~25000 rows at every level (the old engine went on for
# more than 10 minutes after SIGTERM).
{
    echo "tessera: 1"
    echo "nodes:"
    echo "  b0: {size: [30000, 30000], source: {shape: circle, center: [15000, 15000], radius: 12000}}"
    for i in $(seq 1 11); do
        echo "  b$i: {size: [30000, 30000], children: [{trait: blur, sigma: 250, ref: b$((i - 1))}]}"
    done
    echo "root: {size: [30000, 30000], children: [{trait: blur, sigma: 250, ref: b11}]}"
} >"$tmp/blurs.yaml"

# stop NAME SIGNAL ARGS...: start tessera ARGS, signal it after 1.5 s, wait at most 20 s.
stop() {
    local name=$1 sig=$2
    shift 2
    "$TESSERA" "$@" >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    sleep 1.5
    kill -"$sig" "$pid"
    local waited=0
    while kill -0 "$pid" 2>/dev/null && [ $waited -lt 200 ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid"
        wait "$pid" 2>/dev/null
        pid=
        bad "$name: still running 20 s after SIG$sig"
        return 1
    fi
    wait "$pid"
    local rc=$?
    pid=
    if [ $rc -eq 1 ] && grep -q "^tessera: stopping\.\.\.$" "$tmp/err" && grep -q "interrupted" "$tmp/err"; then
        ok "$name: SIG$sig stops it (exit 1): $(tail -1 "$tmp/err")"
    else
        bad "$name: SIG$sig: exit $rc: $(head -c 300 "$tmp/err")"
    fi
}

stop "render of 12 nested blurs" TERM render "$tmp/blurs.yaml" -o "$tmp/b.raw" --progress none --threads 2
grep -q "resume with --resume-at 0$" "$tmp/err" && ok "  ... nothing delivered: resume at 0" ||
    bad "  ... resume offset: $(tail -1 "$tmp/err")"
stop "render of a 16000-point polygon" INT render "$tmp/poly.yaml" -o null --progress none
# (the whole 30000 px square: a GPU previewed a 4000-row strip of it within the 1.5 s)
stop "preview of 12 nested blurs" TERM preview "$tmp/blurs.yaml" --region 0,0,30000,30000 --scale 8 -o "$tmp/p.png" --threads 2
[ -e "$tmp/p.png" ] && bad "  ... an interrupted preview wrote a PNG" || ok "  ... no PNG written"
stop "profile of a 16000-point polygon" TERM profile "$tmp/poly.yaml"

# The second signal exits at once with the offset the sink confirmed; resuming there gives the
# bytes of an uninterrupted render. Frozen with SIGSTOP, the process gets SIGINT and SIGTERM
# (two kinds: pending signals of one kind merge into one) and handles both when it thaws,
# the second while the first stop has not even begun.
cat >"$tmp/med.yaml" <<'Y'
tessera: 1
tile: 128
output: {depth: 16}
root:
  size: [2000, 1500]
  children:
    - trait: blur
      sigma: 12
      node: {size: [2000, 1500], source: {gradient: radial, center: [1000, 750], radius: 900, values: [1, 0]}}
Y
"$TESSERA" render "$tmp/med.yaml" -o "$tmp/want.raw" --threads 1 2>/dev/null || bad "the reference render failed"
# --backend cpu: on the GPU the 0.7 s can end before the stream starts (the device's start-up),
# and a second signal then has no confirmed offset to name.
"$TESSERA" render "$tmp/med.yaml" -o "$tmp/m.raw" --threads 1 --rate 2MB/s --progress none \
    --backend cpu 2>"$tmp/err" &
pid=$!
sleep 0.7
kill -STOP "$pid"
kill -INT "$pid"
kill -TERM "$pid"
kill -CONT "$pid"
wait "$pid"
rc=$?
pid=
off=$(sed -n 's/^tessera: interrupted again at byte \([0-9]*\); resume with --resume-at \1$/\1/p' "$tmp/err")
if [ -n "$off" ] && [ $rc -eq 1 ] && grep -q "^tessera: stopping\.\.\.$" "$tmp/err"; then
    ok "a second signal exits at once (exit 1) with the offset: byte $off"
    if "$TESSERA" render "$tmp/med.yaml" -o "$tmp/m.raw" --resume-at "$off" --threads 1 2>"$tmp/err2" &&
        cmp -s "$tmp/m.raw" "$tmp/want.raw"; then
        ok "  ... resuming at byte $off gives the uninterrupted bytes"
    else bad "  ... resuming at byte $off: $(head -c 300 "$tmp/err2")"; fi
else
    bad "a second signal: exit $rc: $(head -c 300 "$tmp/err")"
fi

finish
