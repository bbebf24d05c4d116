#!/usr/bin/env bash
# make demo: render an example design to a file, write a preview PNG, print the profile
# against the 10 MB/s target. Outputs go to out/.
set -euo pipefail
tessera=${1:-build/tessera}
design=designs/examples/microlens-array.yaml
mkdir -p out
echo "== tessera check $design"
"$tessera" check "$design" | tail -n 12
echo
echo "== tessera render $design --rows 0:512 -o out/demo.raw"
"$tessera" render "$design" --rows 0:512 -o out/demo.raw
ls -l out/demo.raw
echo
echo "== tessera preview $design --region 0,0,1200,900 -o out/demo.png"
"$tessera" preview "$design" --region 0,0,1200,900 -o out/demo.png
echo
echo "== tessera profile $design --target 10MB/s"
"$tessera" profile "$design" --target 10MB/s
