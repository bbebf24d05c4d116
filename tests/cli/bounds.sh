#!/usr/bin/env bash
# Load, plan and thread bounds (issue 10, items 10 and 11): `check` on lattices whose copy
# counts are astronomical returns at once (bounded by the design's size, not its copies), and
# thread stacks under an address-space limit (`ulimit -v`) are sized from the design and
# refused with a tessera message naming the remedy, never a death inside libgomp.
set -uo pipefail
: "${TESSERA:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
L="$SRC/tests/designs/limits"

ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# A hang guard, not a timing assertion: these took hours (the first) and > 100 s (the second).
guard=120

# `check` of the dense 2^40 lattice: the plan refuses it (each tile reads the whole bar).
timeout "$guard" "$TESSERA" check "$L/lattice_dense_2_40.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "memory plan: needs at least" "$tmp/err"; then
    ok "dense 2^40 lattice: check refuses it at once"
else bad "dense 2^40 lattice: exit $rc (124 = still running after ${guard} s): $(head -c 300 "$tmp/err")"; fi

timeout "$guard" "$TESSERA" check "$L/lattice_long_child.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "stream: 2097152 bytes" "$tmp/out"; then
    ok "unit lattice of a 4194304 x 1 child: check plans it at once"
else bad "unit lattice of a 4194304 x 1 child: exit $rc (124 = still running after ${guard} s): $(head -c 300 "$tmp/err")"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
