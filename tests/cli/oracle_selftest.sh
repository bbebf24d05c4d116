#!/usr/bin/env bash
# The oracle's own hand-computed checks (tests/oracle/selftest.py); needs no engine.
set -euo pipefail
: "${SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
PY=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy, yaml' 2>/dev/null; then
    PY=$cand
    break
  fi
done
if [ -z "$PY" ]; then
  echo "FAIL: no python3 with numpy and yaml (install python3-numpy python3-yaml)" >&2
  exit 1
fi
exec "$PY" "$SRC/tests/oracle/selftest.py"
