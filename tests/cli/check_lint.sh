#!/usr/bin/env bash
# tessera check as a linter: the summary comes first, the node tree only on
# --tree, inline nodes carry readable names, and legal designs that are almost certainly not
# meant get a warning each (a clean design gets none).
. "${SRC:?}/tests/cli/lib/common.sh"

cat >"$tmp/lint.yaml" <<'Y'
tessera: 1
root:
  size: [1000, 1000]
  fill: 0.5
  children:
    - trait: pattern
      offset: [2000, 10]
      node: {size: [10, 10], source: {shape: circle, center: [5, 5], radius: 3}}
    - trait: pattern
      node: {size: [100, 100], fill: 1, source: {shape: circle, center: [50, 50], radius: 40}}
    - trait: pattern
      node:
        size: [1000, 1000]
        tile: 64
        source: {shape: circle, center: [500, 500], radius: 450, aa: 4}
    - trait: repeat
      overlap: add
      period: [8, 8]
      node:
        size: [16, 16]
        children:
          - trait: distance
            dmax: 8
            bias: 0.2
            node: {size: [16, 16], source: {shape: circle, center: [8, 8], radius: 2}}
Y
"$TESSERA" check "$tmp/lint.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && ok "check of a legal design exits 0" || bad "check exit $rc: $(cat "$tmp/err")"
head -1 "$tmp/out" | grep -q "^design: .*1000 x 1000 px" && ok "summary first" || bad "first line: $(head -1 "$tmp/out")"
grep -q "pattern of root.children\[0\] (circle r=3) at 2000,10 lies wholly outside" "$tmp/out" && ok "pattern outside its parent" || bad "no outside warning"
grep -q "root.children\[1\] (circle r=40): its circle's value 1 equals the node's fill" "$tmp/out" && ok "shape value = fill" || bad "no value=fill warning"
# aa costs only the pixels an edge crosses: a shape far larger than its tile is fine
grep -q "root.children\[2\]" "$tmp/out" && bad "a warning about aa: $(cat "$tmp/out")" || ok "no warning for aa on a large shape"
grep -q "add copies of root.children\[3\] .*not 0) at dmax" "$tmp/out" && ok "distance floor under add" || bad "no distance floor warning"
grep -q "^nodes (children first)" "$tmp/out" && bad "node table without --tree" || ok "no node table without --tree"
[ "$(wc -l <"$tmp/out")" -lt 20 ] && ok "short without --tree" || bad "$(wc -l <"$tmp/out") lines"
"$TESSERA" check "$tmp/lint.yaml" --tree >"$tmp/tree" 2>&1
grep -q "^nodes (children first)" "$tmp/tree" && grep -q "^tessera: 1" "$tmp/tree" &&
    [ "$(grep -n '^warnings:' "$tmp/tree" | cut -d: -f1)" -lt "$(grep -n "^nodes (children" "$tmp/tree" | cut -d: -f1)" ] &&
    ok "--tree prints the nodes and the dump after the summary" || bad "--tree: $(head -c 400 "$tmp/tree")"
for ex in "$SRC"/designs/examples/*.yaml; do
    "$TESSERA" check "$ex" >"$tmp/clean" 2>&1
    grep -A1 "^warnings:" "$tmp/clean" | grep -q "none" && ok "$(basename "$ex") has no warnings" ||
        bad "$(basename "$ex"): $(cat "$tmp/clean")"
done
"$TESSERA" render "$tmp/lint.yaml" --tree -o null >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && ok "--tree is a check option" || bad "--tree on render accepted"
finish
