#!/usr/bin/env bash
# GPU figures, one run (docs/performance.md): the device-to-host ceiling (pinned, contiguous,
# 256 MiB), the pipeline milestone (designs/bench/gpu-fill.yaml to a null sink), and
# `tessera profile` of every example and bench design on the GPU beside the CPU on all cores.
#   scripts/bench-gpu.sh TESSERA [OUT]
set -uo pipefail
T=${1:?usage: bench-gpu.sh TESSERA [OUT]}
OUT=${2:-out/gpu}
mkdir -p "$OUT"
nvcc -O2 -arch=sm_90 scripts/bench/d2h.cu -o "$OUT/d2h" && "$OUT/d2h" | tee "$OUT/d2h.txt"
d2h=$(awk '{print $2}' "$OUT/d2h.txt")
echo "milestone: gpu-fill.yaml, whole stream (17.2 GB) to -o null"
for rep in 1 2 3; do
  t0=$(date +%s.%N)
  "$T" render designs/bench/gpu-fill.yaml -o null --backend gpu --progress none ||
      { echo "  render failed: $?"; continue; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v d="$d2h" 'BEGIN { r = 131072.0 * 131072 / (b - a) / 1e9;
      printf "  run: %.2f s, %.1f GB/s = %.0f %% of the %.1f GB/s d2h ceiling\n", b - a, r, 100 * r / d, d }'
done
echo "tuning (TSR_GPU_TUNE=chunk Mpx,band MiB; profile of 131072 x 32768):"
for tune in 16,16 4,16 4,32 2,64 8,64 16,128; do
  printf '  %-8s ' "$tune"
  TSR_GPU_TUNE=$tune TSR_GPU_TRACE=1 "$T" profile designs/bench/gpu-fill.yaml --backend gpu \
      --region 0,0,131072,32768 2>&1 | grep -E "throughput|gpu:" | tr '\n' ' '
  echo
done
echo "milestone, renderer only (profile: the same pipeline into a null sink, after start-up):"
"$T" profile designs/bench/gpu-fill.yaml --backend gpu --region 0,0,131072,65536 |
    grep -E "throughput|backend"
printf '\n%-28s %12s %12s %10s\n' design "gpu MB/s" "cpu MB/s" "gpu/d2h"
for f in designs/examples/*.yaml designs/bench/*.yaml; do
  g=$("$T" profile "$f" --backend gpu --json 2>"$OUT/err.txt" | tee -a "$OUT/profile-gpu.jsonl" |
      sed -n 's/.*"mb_per_s":\([0-9.]*\).*/\1/p')
  c=$("$T" profile "$f" --backend cpu --json 2>>"$OUT/err.txt" | tee -a "$OUT/profile-cpu.jsonl" |
      sed -n 's/.*"mb_per_s":\([0-9.]*\).*/\1/p')
  awk -v n="$(basename "$f")" -v g="${g:-0}" -v c="${c:-0}" -v d="$d2h" \
      'BEGIN { printf "%-28s %12.1f %12.1f %9.1f%%\n", n, g, c, 100 * g / 1000 / d }'
done
