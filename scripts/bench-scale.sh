#!/usr/bin/env bash
# Several GPUs (docs/performance.md §3.8): the device-to-host ceiling of one GPU first, then
# `tessera profile --backend gpu` of a band of each design at --gpus 1, 2, 4, 8 (those the
# machine has): the seed's 4e12 job (designs/bench/seed-4e12.yaml, one 16384 px swath, 1e6
# rows: 16.4 GB) and the compute-bound designs (blur sigma 32, distance dmax 256: 20000 rows
# of 100000 px, 2 GB).
#   scripts/bench-scale.sh TESSERA [OUT]
set -uo pipefail
T=${1:?usage: bench-scale.sh TESSERA [OUT]}
OUT=${2:-out/gpu}
mkdir -p "$OUT"
nvcc -O2 -arch=sm_90 scripts/bench/d2h.cu -o "$OUT/d2h" && "$OUT/d2h" | tee "$OUT/d2h.txt"
n=$(nvidia-smi -L | wc -l)
run() { # DESIGN REGION
  for g in 1 2 4 8; do
    [ "$g" -le "$n" ] || break
    printf '%-22s --gpus %d  ' "$(basename "$1" .yaml)" "$g"
    "$T" profile "$1" --backend gpu --gpus "$g" --region "$2" 2>&1 |
        awk '/^throughput/ {printf "%s %s %s %s  ", $2, $3, $5, $6} /^projected/ {print $0}' | tr -s ' '
    echo
  done
}
run designs/bench/seed-4e12.yaml 0,0,16384,1000000
run designs/bench/np-blur32.yaml 0,0,100000,20000
run designs/bench/np-distance256.yaml 0,0,100000,20000
