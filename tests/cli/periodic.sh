#!/usr/bin/env bash
# Periodicity through distance and blur (engine/plan.c): `tessera check --tree` names the nodes
# periodic inside a border and where; TSR_DIRECT=1 (the kernel benchmarks' switch) turns every
# periodic shortcut off, and the bytes are the same either way, in the design's swath order
# and through a crop that cuts the border.
. "${SRC:?}/tests/cli/lib/common.sh"

d="$SRC/designs/examples/lens-lattice-dose.yaml"
"$TESSERA" check "$d" --tree >"$tmp/tree" 2>&1
if grep -q "^  smooth .*periodic 44 x 76 inside \[25, 25, 99950, 99950\]" "$tmp/tree" &&
    grep -q "^  lenses .*periodic 44 x 76 inside \[20, 20, 99960, 99960\]" "$tmp/tree" &&
    grep -q "^  seeds .*periodic 44 x 76: one period computed, the rest copied" "$tmp/tree" &&
    ! grep -q "^  root .*periodic" "$tmp/tree"; then
    ok "check --tree names the periodic nodes and their interiors"
else bad "check --tree: $(grep -E '^  (seeds|lenses|smooth|root) ' "$tmp/tree")"; fi
TSR_DIRECT=1 "$TESSERA" check "$d" --tree >"$tmp/tree.direct" 2>&1
if ! grep -q "periodic" "$tmp/tree.direct"; then ok "TSR_DIRECT=1: nothing periodic"
else bad "TSR_DIRECT=1 still lists periodic nodes"; fi

w="$SRC/designs/examples/wafer-fields.yaml"
"$TESSERA" check "$w" --tree >"$tmp/wtree" 2>&1
if grep -q "^  root.children\[1\] (circle r=49000) .*; uncached: computed where its one pattern parent reads it" "$tmp/wtree" &&
    ! grep -q "^  cross .*uncached" "$tmp/wtree" && ! grep -q "^  root .*uncached" "$tmp/wtree"; then
    ok "check --tree marks the node only one pattern edge reads as uncached, and no other"
else bad "check --tree, uncached: $(grep -E '^  (cross|root)' "$tmp/wtree")"; fi

# a crop across the top border, the design's swath order (16384 px swaths, 7 of them)
for direct in 0 1; do
    TSR_DIRECT=$direct "$TESSERA" render "$d" --rows 0:40 -o "$tmp/r$direct.raw" --progress none \
        2>"$tmp/err" || bad "render (TSR_DIRECT=$direct): $(cat "$tmp/err")"
done
if [ -s "$tmp/r0.raw" ] && cmp -s "$tmp/r0.raw" "$tmp/r1.raw"; then
    ok "the same $(stat -c %s "$tmp/r0.raw") bytes with and without the periodic shortcuts"
else bad "the bytes differ with TSR_DIRECT=1"; fi
finish
