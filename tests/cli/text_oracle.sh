#!/usr/bin/env bash
# The text source against an independent oracle: outlines from FreeType's Python binding laid
# out from docs/text.md (tests/oracle/text.py), their exact coverage by shapely
# (tests/oracle/coverage.py), blended over the fill as docs/text.md says; tessera's 8-bit
# samples within one step of it, for plain, centred and rotated, mirrored text. Skips where
# python3-freetype, python3-shapely or the DejaVu fonts are missing.
set -euo pipefail
: "${TESSERA:?}" "${SRC:?}"
PY=/usr/bin/python3
FONT=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
[ -r "$FONT" ] || { echo "skip: no $FONT"; exit 0; }
"$PY" -c 'import freetype, shapely, numpy' 2>/dev/null || { echo "skip: python3-freetype, shapely or numpy missing"; exit 0; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
check() { # NAME TEXT HEIGHT X Y ALIGN ANCHOR ROTATE MIRROR W H
  local name=$1 text=$2 hgt=$3 x=$4 y=$5 al=$6 an=$7 rot=$8 mir=$9 w=${10} h=${11}
  "$PY" - "$t/$name.yaml" "$text" "$hgt" "$x" "$y" "$al" "$an" "$rot" "$mir" "$w" "$h" "$FONT" <<'PY'
import json, sys
out, text, hgt, x, y, al, an, rot, mir, w, h, font = sys.argv[1:13]
src = {"text": text, "font": font, "height": float(hgt), "position": [float(x), float(y)],
       "align": al, "anchor": an, "rotate": float(rot), "mirror": mir == "true", "value": 0.9}
open(out, "w").write("tessera: 1\nroot:\n  size: [%s, %s]\n  fill: 0.15\n  source: %s\n"
                     % (w, h, json.dumps(src)))
PY
  "$TESSERA" render "$t/$name.yaml" -o "$t/$name.raw" --progress none
  "$PY" "$SRC/tests/oracle/text.py" "$FONT" "$text" "$hgt" "$x" "$y" "$al" "$an" "$rot" "$mir" \
      "$w" "$h" >"$t/$name.cases"
  "$PY" "$SRC/tests/oracle/coverage.py" "$t/$name.cases" "$t/$name.cov"
  "$PY" - "$t/$name.raw" "$t/$name.cov" "$w" "$h" "$name" <<'PY'
import sys
import numpy as np
raw, cov, w, h, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
got = np.fromfile(raw, dtype=np.uint8).reshape(h, w).astype(int)
c = np.loadtxt(cov).reshape(h, w)
p = np.float32(0.15) * (1 - c) + np.float32(0.9) * c
want = np.floor(p * 255 + 0.5).astype(int)
d = np.abs(got - want)
ink = int((c > 0).sum())
print("%s: %d px inked, %d on edges, largest difference %d" % (name, ink, int(((c > 0) & (c < 1)).sum()), d.max()))
if ink < 50 or d.max() > 1:
    y, x = np.unravel_index(np.argmax(d), d.shape)
    sys.exit("%s: pixel %d,%d: tessera %d, oracle %d (coverage %.6f)" % (name, x, y, got[y, x], want[y, x], c[y, x]))
PY
}
check plain "Rg8@" 24 4 6 left top 0 false 90 40
check centred $'Ox\nW%' 17.3 45 24 center middle 0 false 90 48
check turned "Ag&" 21 40 26 right baseline 33.5 true 80 56
