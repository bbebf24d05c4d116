#!/usr/bin/env bash
# Engine vs oracle: every tests/oracle/designs/*.yaml is rendered by `tessera render` and by the
# independent numpy oracle (tests/oracle/oracle.py); the raw samples must be byte-identical,
# except designs named blur_* (blur may approximate the reference Gaussian within 2e-3), which
# may differ by at most one sample step. A design's comment line `# rows: Y0:Y1` adds the same
# comparison on the --rows crop. Needs $TESSERA (the binary) and $SRC (the repo root).
set -euo pipefail

: "${TESSERA:?TESSERA must name the tessera binary}"
: "${SRC:?SRC must name the source tree}"

. "$SRC/tests/cli/lib/python.sh"
find_python numpy yaml

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera_oracle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pass=0
fail=0

# compare NAME ENGINE ORACLE DESIGN: prints ok/FAIL, counts
compare() {
  local name=$1 eng=$2 orc=$3 design=$4 msg
  case $(basename "$design") in
    blur_*)
      if msg=$("$PY" - "$eng" "$orc" "$design" "$SRC/tests/oracle" <<'PYEOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[4])
import oracle
eng, orc, design = sys.argv[1:4]
out = oracle.Design(design).doc.get("output") or {}
depth = int(out.get("depth", 8))
lo, hi = (float(v) for v in out.get("range", [0.0, 1.0]))
mx = 255 if depth == 8 else 65535
# blur may differ by 2e-3 in value: one sample step at 8 bit over the range [0, 1]
tol = max(1, int(np.ceil(2e-3 * mx / abs(hi - lo))))
dt = np.uint8 if depth == 8 else np.dtype("<u2")
a = np.fromfile(eng, dtype=np.uint8)
b = np.fromfile(orc, dtype=np.uint8)
if a.size != b.size:
    print("size differs: engine %d bytes, oracle %d bytes" % (a.size, b.size))
    sys.exit(1)
a = a.view(dt).astype(np.int64)
b = b.view(dt).astype(np.int64)
d = np.abs(a - b)
bad = np.nonzero(d > tol)[0]
if bad.size:
    i = int(bad[0])
    print("first differing byte at %d (sample %d: engine %d, oracle %d, tolerance %d; "
          "%d samples beyond)" % (i * (depth // 8) + 1, i, a[i], b[i], tol, bad.size))
    sys.exit(1)
print("max |diff| %d" % (int(d.max()) if d.size else 0))
PYEOF
); then
        echo "ok $name ($msg)"
        pass=$((pass + 1))
      else
        echo "FAIL $name: $msg"
        fail=$((fail + 1))
      fi
      ;;
    *)
      if msg=$(cmp "$eng" "$orc" 2>&1); then
        echo "ok $name"
        pass=$((pass + 1))
      else
        # cmp: "X Y differ: byte N, line L" or "cmp: EOF on X after byte N"
        case $msg in
          *differ:*) msg="first differing byte at ${msg#*byte }"; msg=${msg%%,*} ;;
        esac
        echo "FAIL $name: $msg"
        fail=$((fail + 1))
      fi
      ;;
  esac
}

# run NAME DESIGN [--rows Y0:Y1]
run() {
  local name=$1 design=$2
  shift 2
  rm -f "$tmp/engine.raw" "$tmp/oracle.raw"
  if ! "$TESSERA" render "$design" -o "$tmp/engine.raw" "$@" 2>"$tmp/engine.err"; then
    echo "FAIL $name: tessera render exited non-zero: $(head -c 300 "$tmp/engine.err" | tr '\n' ' ')"
    fail=$((fail + 1))
    return 0
  fi
  if ! "$PY" "$SRC/tests/oracle/oracle.py" "$design" -o "$tmp/oracle.raw" "$@" \
      2>"$tmp/oracle.err"; then
    echo "FAIL $name: oracle failed: $(tail -n 3 "$tmp/oracle.err" | tr '\n' ' ')"
    fail=$((fail + 1))
    return 0
  fi
  compare "$name" "$tmp/engine.raw" "$tmp/oracle.raw" "$design"
}

shopt -s nullglob
designs=("$SRC"/tests/oracle/designs/*.yaml)
if [ ${#designs[@]} -eq 0 ]; then
  echo "FAIL: no designs in $SRC/tests/oracle/designs" >&2
  exit 1
fi

for d in "${designs[@]}"; do
  name=$(basename "$d" .yaml)
  run "$name" "$d"
  while read -r rows; do
    run "$name[--rows $rows]" "$d" --rows "$rows"
  done < <(sed -n 's/^# rows: *\([0-9][0-9]*:[0-9][0-9]*\) *$/\1/p' "$d")
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
