#!/usr/bin/env bash
# The layout source against the shapely oracle (tests/layouts/layout_oracle.py): gdspy layouts
# of every element kind and transform, far coordinates and off-grid edges rendered by
# `tessera render` and compared pixel by pixel with shapely's exact areas (one 8-bit step), and
# one layout as GDSII, OASIS (KLayout in batch mode) and DXF (ezdxf) giving the same bytes.
# Needs python3 with gdspy, ezdxf, shapely, numpy and klayout (scripts/deps.sh installs them).
set -euo pipefail
: "${TESSERA:?TESSERA must name the tessera binary}"
: "${SRC:?SRC must name the source tree}"
. "$SRC/tests/cli/lib/python.sh"
find_python numpy gdspy ezdxf shapely
command -v klayout >/dev/null || { echo "FAIL: no klayout (install klayout)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera_layout_oracle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$PY" "$SRC/tests/layouts/layout_oracle.py" "$TESSERA" "$tmp"
