#!/usr/bin/env bash
# What tessera writes to a path the user names (preview's PNG, render's file sink) goes through
# whatever is there, never replaces it: a FIFO stays a FIFO, a symlink a symlink, a device node
# a device (checked on private nodes made with mknod in the scratch folder when running as root,
# never the system's /dev/null or /dev/full). `-o -` is stdout. Closed descriptors 0-2 never
# turn into the output, of a render or of a controller.
. "${SRC:?}/tests/cli/lib/common.sh"

cat >"$tmp/small.yaml" <<'Y'
tessera: 1
root:
  size: [64, 48]
  source: {shape: circle, center: [32, 24], radius: 20}
Y
prev=(preview "$tmp/small.yaml" --region 0,0,64,48 --scale 3)
"$TESSERA" "${prev[@]}" -o "$tmp/ref.png" 2>/dev/null || bad "reference preview"
"$TESSERA" render "$tmp/small.yaml" -o "$tmp/ref.raw" --progress none || bad "reference render"

# A scale past the region is the region: the same 1x1 PNG as --scale 64, not a heap overflow.
"$TESSERA" preview "$tmp/small.yaml" --region 0,0,8,8 --scale 8 -o "$tmp/k8.png" 2>/dev/null
for k in 9 100000 2147483648 9223372036854775807; do
    if "$TESSERA" preview "$tmp/small.yaml" --region 0,0,8,8 --scale "$k" -o "$tmp/k.png" \
        2>"$tmp/err" && cmp -s "$tmp/k.png" "$tmp/k8.png" && grep -qF "(1x1)" "$tmp/err"; then
        ok "preview --scale $k of an 8x8 region is one pixel"
    else
        bad "preview --scale $k: $(head -c 300 "$tmp/err")"
    fi
done

# into a FIFO: the reader gets the very bytes, the FIFO stays
out_fifo() {
    local what=$1 ref=$2
    shift 2
    rm -f "$tmp/fifo" "$tmp/got"
    mkfifo "$tmp/fifo"
    cat "$tmp/fifo" >"$tmp/got" &
    local reader=$!
    "$TESSERA" "$@" -o "$tmp/fifo" 2>"$tmp/err"
    local rc=$?
    if [ ! -p "$tmp/fifo" ] || [ "$rc" -ne 0 ]; then
        kill "$reader" 2>/dev/null # never opened for writing: cat would wait forever
        bad "$what into a FIFO: exit $rc, $(ls -l "$tmp/fifo"), $(head -c 300 "$tmp/err")"
        return
    fi
    wait "$reader"
    cmp -s "$tmp/got" "$ref" && ok "$what into a FIFO" || bad "$what into a FIFO: other bytes"
}
out_fifo preview "$tmp/ref.png" "${prev[@]}"
out_fifo render "$tmp/ref.raw" render "$tmp/small.yaml" --progress none

# through a symlink: the target gets the bytes, the link stays
out_link() {
    local what=$1 ref=$2
    shift 2
    rm -f "$tmp/link" "$tmp/target"
    echo old >"$tmp/target"
    ln -s target "$tmp/link"
    if "$TESSERA" "$@" -o "$tmp/link" 2>"$tmp/err" && [ -L "$tmp/link" ] &&
        cmp -s "$tmp/target" "$ref"; then
        ok "$what through a symlink"
    else
        bad "$what through a symlink: $(ls -l "$tmp/link"), $(head -c 300 "$tmp/err")"
    fi
}
out_link preview "$tmp/ref.png" "${prev[@]}"
out_link render "$tmp/ref.raw" render "$tmp/small.yaml" --progress none

# into private device nodes: a full one is exit 1 (ENOSPC), and both stay devices
if mknod "$tmp/null" c 1 3 2>/dev/null && mknod "$tmp/full" c 1 7 2>/dev/null &&
    (: >"$tmp/null") 2>/dev/null; then
    for cmd in preview render; do
        if [ "$cmd" = preview ]; then args=("${prev[@]}"); else args=(render "$tmp/small.yaml" --progress none); fi
        "$TESSERA" "${args[@]}" -o "$tmp/null" 2>"$tmp/err"
        rc=$?
        [ "$rc" -eq 0 ] && [ -c "$tmp/null" ] && ok "$cmd into a null device" ||
            bad "$cmd into a null device: exit $rc, $(ls -l "$tmp/null"), $(head -c 300 "$tmp/err")"
        "$TESSERA" "${args[@]}" -o "$tmp/full" 2>"$tmp/err"
        rc=$?
        [ "$rc" -eq 1 ] && [ -c "$tmp/full" ] && grep -qF "$tmp/full: No space left on device" "$tmp/err" &&
            ok "$cmd into a full device: exit 1" ||
            bad "$cmd into a full device: exit $rc, $(ls -l "$tmp/full"), $(head -c 300 "$tmp/err")"
    done
else
    echo "skip device nodes (mknod needs root and a dev mount)"
fi

# -o - is stdout (it made a file named "-")
(cd "$tmp" && "$TESSERA" "${prev[@]}" -o - >"$tmp/dash.png" 2>"$tmp/err")
if [ $? -eq 0 ] && cmp -s "$tmp/dash.png" "$tmp/ref.png" && [ ! -e "$tmp/-" ] &&
    grep -qF "wrote stdout" "$tmp/err"; then
    ok "preview -o - writes to stdout"
else
    bad "preview -o -: $(head -c 300 "$tmp/err")"
fi

# Closed descriptors: with 2 closed, the sink's file got fd 2 and the progress JSON went into
# the samples. Paced to about 2 s so the JSON (after 1 s) is due while the file is open.
"$TESSERA" render "$tmp/small.yaml" -o "$tmp/closed.raw" --progress json --rate 1.5KB/s 2>&-
rc=$?
[ "$rc" -eq 0 ] && cmp -s "$tmp/closed.raw" "$tmp/ref.raw" && ok "render 2>&- writes exactly the samples" ||
    bad "render 2>&-: exit $rc, $(stat -c %s "$tmp/closed.raw") bytes for $(stat -c %s "$tmp/ref.raw")"
"$TESSERA" render "$tmp/small.yaml" -o "$tmp/closed.raw" --progress none <&- >&- 2>&-
rc=$?
[ "$rc" -eq 0 ] && cmp -s "$tmp/closed.raw" "$tmp/ref.raw" && ok "render <&- >&- 2>&-" || bad "render <&- >&- 2>&-: exit $rc"
# a closed stdout is still a closed stdout: check's printout is lost, so exit 1
"$TESSERA" check "$tmp/small.yaml" >&- 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && grep -qF "stdout: Bad file descriptor" "$tmp/err" && ok "check >&-: exit 1" ||
    bad "check >&-: exit $rc, $(head -c 300 "$tmp/err")"

# A controller started with 2>&- opened its output as fd 2 and logged into the machine's data
# ("listening on ..." at byte 0), while its state vouched for the crc of the clean stream.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$TESSERA" controller --listen "127.0.0.1:$port" -o "$tmp/ctl.raw" 2>&- &
ctl=$!
sent=no
for _ in $(seq 100); do # until it listens (at most ~20 s)
    "$TESSERA" render "$tmp/small.yaml" -o "tcp://127.0.0.1:$port" --progress none 2>/dev/null &&
        { sent=yes; break; }
    sleep 0.2
done
[ "$sent" = yes ] || kill "$ctl" 2>/dev/null # no job came: it would wait for one forever
wait "$ctl"
rc=$?
[ "$sent" = yes ] && [ "$rc" -eq 0 ] && cmp -s "$tmp/ctl.raw" "$tmp/ref.raw" &&
    ok "controller 2>&-: the output holds exactly the samples" ||
    bad "controller 2>&-: sent $sent, exit $rc, $(cmp "$tmp/ctl.raw" "$tmp/ref.raw" 2>&1)"

finish
