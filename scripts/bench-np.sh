#!/usr/bin/env bash
# The non-periodic GPU bench (designs/bench/np-*.yaml, 10 GB each): the device-to-host
# ceiling first (every figure is a fraction of it), then `tessera profile --backend gpu` of a
# 100000 x 10240 band of each design (1.02 GB), with the per-stage device seconds, at
# --gpus 1 and, where the machine has several GPUs, at every power of two up to their count.
#   scripts/bench-np.sh TESSERA [OUT]
set -uo pipefail
T=${1:?usage: bench-np.sh TESSERA [OUT]}
OUT=${2:-out/gpu}
mkdir -p "$OUT"
nvcc -O2 -arch=sm_90 scripts/bench/d2h.cu -o "$OUT/d2h" && "$OUT/d2h" | tee "$OUT/d2h.txt"
n=$(nvidia-smi -L | wc -l)
for f in designs/bench/np-*.yaml; do
  for g in 1 2 4 8; do
    [ "$g" -le "$n" ] || break
    echo "== $(basename "$f") --gpus $g"
    TSR_GPU_TRACE=${TRACE:-0} "$T" profile "$f" --backend gpu --gpus "$g" \
        --region 0,0,100000,${NP_ROWS:-10240} 2>&1 | grep -vE "^  [a-z]" | tail -14
  done
done
