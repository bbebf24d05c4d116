#!/usr/bin/env bash
# The oracle's own hand-computed checks (tests/oracle/selftest.py); needs no engine.
set -euo pipefail
: "${SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$SRC/tests/cli/lib/python.sh"
find_python numpy yaml
exec "$PY" "$SRC/tests/oracle/selftest.py"
