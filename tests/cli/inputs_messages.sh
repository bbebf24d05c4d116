#!/usr/bin/env bash
# What a new user hit, said plainly: a PNG whose header claims more pixels than its file could
# hold is a corrupt image named at file:line:col (not a memory plan for the size it claims); an
# image that is a FIFO or a device is refused at once (a FIFO blocked `check` for ever); without
# an NVIDIA driver `--backend gpu` says no GPU was found (not "CUDA driver version is
# insufficient", which sent users to update a driver they do not have).
. "${SRC:?}/tests/cli/lib/common.sh"
. "$SRC/tests/cli/lib/python.sh"
find_python zlib
# png W H OUT: a gray 8-bit PNG of W x H whose IDAT holds only 10 rows (or all of them, flat,
# with "whole")
png() {
    "$PY" - "$@" <<'PY'
import struct, sys, zlib
w, h, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
whole = len(sys.argv) > 4
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
rows = h if whole else 10
data = zlib.compress((b'\0' + b'\x80' * w) * rows, 9)
with open(out, 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0))
            + chunk(b'IDAT', data) + chunk(b'IEND', b''))
PY
}
design() { # design W H IMAGE
    printf 'tessera: 1\nroot:\n  size: [%s, %s]\n  source: {image: %s}\n' "$1" "$2" "$3"
}

# ---- a header of 1 x 1e9 pixels in a file of a few bytes ------------------------------------
png 1 1000000000 "$tmp/tall.png"
design 1 1000000000 tall.png >"$tmp/tall.yaml"
for cmd in check "render -o null --progress none"; do
    # shellcheck disable=SC2086
    "$TESSERA" $cmd "$tmp/tall.yaml" >/dev/null 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "^tessera: $tmp/tall.yaml:4:19: root.source.image: $tmp/tall.png: corrupt PNG: its header's 1 x 1000000000 pixels need at least [0-9]* bytes of compressed data, the file has [0-9]*$" "$tmp/err" &&
        ! grep -q "memory plan" "$tmp/err"; then
        ok "${cmd%% *}: a 1 x 1e9 px header in $(stat -c %s "$tmp/tall.png") bytes: corrupt, at file:line:col"
    else bad "${cmd%% *} of the 1 x 1e9 header: exit $rc: $(cat "$tmp/err")"; fi
done
# a real image that deflates about as well as anything can (flat, level 9) still loads
png 3000 3000 "$tmp/flat.png" whole
design 3000 3000 flat.png >"$tmp/flat.yaml"
"$TESSERA" check "$tmp/flat.yaml" >/dev/null 2>"$tmp/err" &&
    ok "a flat 3000 x 3000 image of $(stat -c %s "$tmp/flat.png") bytes loads" ||
    bad "flat image: $(cat "$tmp/err")"

# ---- an image that is not a regular file ----------------------------------------------------
mkfifo "$tmp/fifo.png"
design 64 64 fifo.png >"$tmp/fifo.yaml"
for cmd in check "render -o null --progress none" "preview --region 0,0,8,8 -o $tmp/p.png"; do
    # shellcheck disable=SC2086
    timeout 20 "$TESSERA" $cmd "$tmp/fifo.yaml" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "^tessera: $tmp/fifo.yaml:4:19: root.source.image: $tmp/fifo.png: not a regular file (a FIFO): an image must be a file$" "$tmp/err" &&
        ok "${cmd%% *}: an image that is a FIFO is refused at once" ||
        bad "${cmd%% *} of a FIFO image: exit $rc (124: it blocked): $(cat "$tmp/err")"
done
design 64 64 /dev/zero >"$tmp/dev.yaml"
timeout 20 "$TESSERA" check "$tmp/dev.yaml" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "root.source.image: /dev/zero: not a regular file (a device): an image must be a file$" "$tmp/err" &&
    ok "an image that is a device is refused" || bad "/dev/zero image: exit $rc: $(cat "$tmp/err")"

# ---- --backend gpu without a driver ---------------------------------------------------------
printf 'tessera: 1\nroot: {size: [64, 48], fill: 0.5}\n' >"$tmp/small.yaml"
"$TESSERA" render "$tmp/small.yaml" --backend gpu -o null --progress none 2>"$tmp/err"
rc=$?
if [ -e /proc/driver/nvidia/version ]; then
    echo "# skip: an NVIDIA driver is loaded here"
elif grep -q "built without CUDA" "$tmp/err"; then
    echo "# skip: a build without CUDA says so: $(cat "$tmp/err")"
elif [ $rc -eq 2 ] && grep -qx "tessera: --backend gpu: no usable GPU (no GPU found: no NVIDIA driver is loaded); use --backend cpu" "$tmp/err"; then
    ok "--backend gpu without a driver: no GPU found"
else bad "--backend gpu without a driver: exit $rc: $(cat "$tmp/err")"; fi
finish
