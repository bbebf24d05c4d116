#!/usr/bin/env bash
# Per-copy variation from the command line (docs/variation.md): a bad expression, table or
# source key exits 2 naming the file, line:col and key path, and writes nothing; the three
# examples check, and a jittered render is the same bytes at any tile and thread count and
# when resumed.
. "${SRC:?}/tests/cli/lib/common.sh"

expect() { # RC PATTERN FILE: render FILE to $tmp/out.raw
    local rc=$1 pat=$2 f=$3
    rm -f "$tmp/out.raw"
    "$TESSERA" render "$f" -o "$tmp/out.raw" >/dev/null 2>"$tmp/err"
    local got=$?
    if [ "$got" -eq "$rc" ] && grep -qF -- "$pat" "$tmp/err" && [ ! -e "$tmp/out.raw" ]; then
        ok "$rc $(basename "$f"): $pat"
    else
        bad "$(basename "$f") -> exit $got (want $rc, '$pat'), output $( [ -e "$tmp/out.raw" ] && echo left || echo none): $(head -c 300 "$tmp/err")"
    fi
}

edge() { # NAME KEY-LINES...: a design with one varied repeat
    local f="$tmp/$1.yaml"
    shift
    { printf 'tessera: 1\nroot:\n  size: [64, 64]\n  children:\n    - trait: repeat\n'
      printf '      %s\n' "$@"
      printf '      node: {size: [8, 8], source: {shape: circle, center: [4, 4], radius: 3}}\n'; } >"$f"
    echo "$f"
}

expect 2 "bad-expr.yaml:6:19: root.children[0].scale: unknown name 'sinh'" \
    "$(edge bad-expr 'scale: "1 + sinh(i)"')"
expect 2 "bad-end.yaml:6:23: root.children[0].bias: expected ')', got the end" \
    "$(edge bad-end 'bias: 0.5*(i + 1')"
expect 2 "root.children[0].scale.table[1]" "$(edge bad-table 'scale: {table: [[1, 2], [3]]}')"
cat >"$tmp/bad-key.yaml" <<'Y'
tessera: 1
root:
  size: [64, 64]
  children:
    - trait: repeat
      source-radius: "2 + i"
      node: {size: [8, 8], source: {shape: rect, rect: [1, 1, 4, 4]}}
Y
expect 2 "bad-key.yaml:6:7: root.children[0].source-radius: the child root.children[0].node has no source with a 'radius'" \
    "$tmp/bad-key.yaml"
expect 2 "root.children[0].jitter" "$(edge bad-jitter 'jitter: [1, -2]')"

for d in dose-focus-matrix lens-array-graded microlens-jittered; do
    if "$TESSERA" check "$SRC/designs/examples/$d.yaml" >/dev/null 2>"$tmp/err"; then ok "check $d"
    else bad "check $d: $(head -c 300 "$tmp/err")"; fi
done

j="$(edge jit 'jitter: [3, 2]' 'seed: 9' 'overlap: max' 'period: [6, 5]' 'scale: "1 - 0.01*i*j"')"
"$TESSERA" render "$j" -o "$tmp/a.raw" --threads 1 --tile 512 2>/dev/null || bad "render jit"
"$TESSERA" render "$j" -o "$tmp/b.raw" --threads 2 --tile 7 2>/dev/null || bad "render jit tile 7"
head -c 1000 "$tmp/a.raw" >"$tmp/c.raw"
"$TESSERA" render "$j" -o "$tmp/c.raw" --threads 2 --tile 13 --resume-at 1000 2>/dev/null || bad "resume"
if cmp -s "$tmp/a.raw" "$tmp/b.raw"; then ok "jitter: same bytes at tile 7, 2 threads"; else bad "jitter: tile 7 differs"; fi
if cmp -s "$tmp/a.raw" "$tmp/c.raw"; then ok "jitter: resumed at 1000"; else bad "jitter: resumed stream differs"; fi
finish
