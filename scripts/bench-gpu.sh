#!/usr/bin/env bash
# GPU figures, one run (docs/performance.md): the device-to-host ceiling (pinned, contiguous,
# 256 MiB), the pipeline milestone (designs/bench/gpu-fill.yaml to a null sink), the bench
# designs whole (10240 x 10240) beside CuPy's kernels on the same pictures
# (scripts/bench/cupy_peers.py), the device tile cache on and off, and `tessera profile` of
# every example and bench design on the GPU beside the CPU on all cores.
#   scripts/bench-gpu.sh TESSERA [OUT]
set -uo pipefail
T=${1:?usage: bench-gpu.sh TESSERA [OUT]}
OUT=${2:-out/gpu}
mkdir -p "$OUT"
nvcc -O2 -arch=sm_90 scripts/bench/d2h.cu -o "$OUT/d2h" && "$OUT/d2h" | tee "$OUT/d2h.txt"
d2h=$(awk '{print $2}' "$OUT/d2h.txt")
echo "milestone: gpu-fill.yaml, whole stream (17.2 GB) to -o null"
for rep in 1 2; do
  t0=$(date +%s.%N)
  "$T" render designs/bench/gpu-fill.yaml -o null --backend gpu --progress none ||
      { echo "  render failed: $?"; continue; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v d="$d2h" 'BEGIN { r = 131072.0 * 131072 / (b - a) / 1e9;
      printf "  run: %.2f s, %.1f GB/s = %.0f %% of the %.1f GB/s d2h ceiling\n", b - a, r, 100 * r / d, d }'
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

echo
echo "bench designs whole (profile --region 0,0,10240,10240; 8-bit, so MB/s = Mpx/s, host copy included)"
python3 scripts/bench/cupy_peers.py >"$OUT/cupy.jsonl" 2>"$OUT/cupy.err" || tail -3 "$OUT/cupy.err"
peer() { sed -n "s/.*\"$1\".*$2.*\"mpx_per_s\": \([0-9.]*\).*/\1/p" "$OUT/cupy.jsonl"; }
for spec in "blur4 gaussian_filter sigma.:.4," "blur32 gaussian_filter sigma.:.32," \
            "distance distance_transform_edt ." "repeat - -"; do
  set -- $spec
  g=$("$T" profile "designs/bench/$1.yaml" --backend gpu --region 0,0,10240,10240 --json \
      2>>"$OUT/err.txt" | sed -n 's/.*"mb_per_s":\([0-9.]*\).*/\1/p')
  p=$([ "$2" = - ] || peer "$2" "$3")
  awk -v n="$1" -v g="${g:-0}" -v p="${p:-0}" -v op="$2" -v d="$d2h" 'BEGIN {
      printf "  %-10s tessera %8.0f Mpx/s (%4.1f%% of d2h)", n, g, 100 * g / 1000 / d
      if (p > 0) printf "   cupy %s %8.0f Mpx/s: tessera/cupy %.2fx", op, p, g / p
      printf "\n" }'
done
echo
echo "device tile cache off / on (profile --region of 16384 x 16384 px; TSR_GPU_CACHE)"
for f in designs/bench/lens-blur.yaml designs/examples/lens-lattice-dose.yaml \
         designs/examples/microlens-sphere.yaml; do
  for c in off on; do
    printf '  %-40s %-4s ' "$(basename "$f")" "$c"
    TSR_GPU_CACHE=$c "$T" profile "$f" --backend gpu --region 0,0,16384,16384 2>&1 |
        grep -E "throughput|device" | tr -s ' ' | tr '\n' ' '
    echo
  done
done
