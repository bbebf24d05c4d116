#!/usr/bin/env bash
# An output that is an input is refused before anything is written: the design itself, an image
# it reads (also under another name: a hard link or a symlink, the same inode), and for
# profile, whose -o takes a crop of the stream, any existing file. Exit 2, the file named, the
# input unchanged byte for byte.
. "${SRC:?}/tests/cli/lib/common.sh"

cp "$SRC/tests/oracle/designs/img/g8.png" "$tmp/in.png"
cat >"$tmp/d.yaml" <<'Y'
tessera: 1
root:
  fill: 0.25
  children:
    - {trait: pattern, offset: [0, 0], node: {source: {image: in.png}}}
  size: [64, 64]
Y
ln "$tmp/in.png" "$tmp/hard.png"
ln -s "$tmp/d.yaml" "$tmp/link.yaml"
cp "$tmp/d.yaml" "$tmp/d.keep"
cp "$tmp/in.png" "$tmp/in.keep"

refused() { # NAME WANT_MSG CMD...: exit 2, the message, inputs unchanged
    local name=$1 want=$2
    shift 2
    "$TESSERA" "$@" 2>"$tmp/err" >/dev/null
    local rc=$?
    if [ $rc -eq 2 ] && grep -qF "$want" "$tmp/err" && cmp -s "$tmp/d.yaml" "$tmp/d.keep" &&
        cmp -s "$tmp/in.png" "$tmp/in.keep"; then
        ok "$name: refused, named, inputs intact"
    else
        bad "$name: exit $rc: $(head -c 300 "$tmp/err")"
    fi
}
refused "render -o the design" "is the design itself" render "$tmp/d.yaml" -o "$tmp/d.yaml"
refused "render -o a symlink to the design" "is the design itself" render "$tmp/d.yaml" \
    -o "$tmp/link.yaml"
refused "render -o its image" "is an input of the design" render "$tmp/d.yaml" -o "$tmp/in.png"
refused "preview -o its image under another name" "is an input of the design" preview \
    "$tmp/d.yaml" --region 0,0,64,64 -o "$tmp/hard.png"
refused "render --framed -o the design" "is the design itself" render "$tmp/d.yaml" --framed \
    -o "$tmp/d.yaml"

"$TESSERA" render "$tmp/d.yaml" -o "$tmp/out.raw" --progress none 2>/dev/null
cp "$tmp/out.raw" "$tmp/out.keep"
"$TESSERA" profile "$tmp/d.yaml" --region 0,0,64,8 -o "$tmp/out.raw" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -qF "the file exists" "$tmp/err" && cmp -s "$tmp/out.raw" "$tmp/out.keep"; then
    ok "profile -o an existing output: refused, the output intact"
else
    bad "profile -o an existing output: exit $rc: $(head -c 300 "$tmp/err")"
fi
"$TESSERA" profile "$tmp/d.yaml" --region 0,0,64,8 -o "$tmp/new.raw" >/dev/null 2>"$tmp/err" &&
    [ -s "$tmp/new.raw" ] && ok "profile -o a new path writes its crop there" ||
    bad "profile -o a new path: $(head -c 300 "$tmp/err")"
"$TESSERA" render "$tmp/d.yaml" -o "$tmp/other.raw" --progress none 2>"$tmp/err" &&
    cmp -s "$tmp/other.raw" "$tmp/out.keep" && ok "an output that is no input renders" ||
    bad "an ordinary output: $(head -c 300 "$tmp/err")"
finish
