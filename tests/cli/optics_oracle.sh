#!/usr/bin/env bash
# Surfaces, wraps, levels and exact-area zone edges against the numpy oracle of docs/optics.md
# (tests/oracle/optics.py): every tests/oracle/optics/*.yaml is rendered by `tessera render`
# and each sample must lie within one output step of the oracle's. Also checks that an aa design
# really differs from its plain twin at the zone edges (the mix is there to be tested). Needs
# $TESSERA (the binary) and $SRC (the repo root).
set -euo pipefail

: "${TESSERA:?TESSERA must name the tessera binary}"
: "${SRC:?SRC must name the source tree}"

. "$SRC/tests/cli/lib/python.sh"
find_python numpy yaml

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera_optics.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail=0
n=0
for d in "$SRC"/tests/oracle/optics/*.yaml; do
  name=$(basename "$d" .yaml)
  "$TESSERA" render "$d" -o "$tmp/$name.raw" --progress none
  if msg=$("$PY" "$SRC/tests/oracle/optics.py" "$d" "$tmp/$name.raw"); then
    echo "ok $name ($msg)"
  else
    echo "FAIL $name: $msg"
    fail=$((fail + 1))
  fi
  n=$((n + 1))
done
[ "$n" -ge 10 ] || { echo "FAIL: only $n optics designs found"; exit 1; }

# the aa design and the same without aa: equal away from the edges, different on some of them
sed 's/, aa: true//' "$SRC/tests/oracle/optics/asphere_wrap_aa.yaml" >"$tmp/plain.yaml"
grep -q 'aa' "$tmp/plain.yaml" && { echo "FAIL: sed left aa in"; exit 1; }
"$TESSERA" render "$tmp/plain.yaml" -o "$tmp/plain.raw" --progress none
"$TESSERA" render "$SRC/tests/oracle/optics/asphere_wrap_aa.yaml" -o "$tmp/aa.raw" --progress none
"$PY" - "$tmp/plain.raw" "$tmp/aa.raw" <<'PY' || fail=$((fail + 1))
import sys
import numpy as np
a, b = (np.fromfile(p, dtype="<u2").astype(np.int64) for p in sys.argv[1:3])
differ = int(np.count_nonzero(a != b))
if not (100 < differ < a.size // 2):
    print("FAIL aa: %d of %d samples differ from the plain render" % (differ, a.size))
    sys.exit(1)
print("ok aa changes %d of %d samples (the zone edges)" % (differ, a.size))
PY
[ "$fail" -eq 0 ] || { echo "$fail failed"; exit 1; }
