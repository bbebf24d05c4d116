#!/usr/bin/env bash
# Build with nvcc (sm_90) and run the test suite on a machine with a GPU; results under $OUT.
# Used through the device tool: one call builds, tests and describes the device.
set -uo pipefail
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  nvcc --version | tail -2
} >"$OUT/device.txt" 2>&1
bash scripts/deps.sh >"$OUT/deps.log" 2>&1 || { echo "deps failed"; tail "$OUT/deps.log"; exit 1; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >"$OUT/cmake.log" 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
grep -h "tessera:" "$OUT/cmake.log"
(cd build-gpu && ctest --output-on-failure -j 8 -E cli_oracle 2>&1) | tee "$OUT/ctest.log" | tail -15
./build-gpu/tests/test_gpu --verbose 2>&1 | tail -6 | tee "$OUT/test_gpu.log"
for d in designs/examples/*.yaml; do
  ./build-gpu/tessera profile "$d" --json --threads "$(nproc)" >>"$OUT/profile-cpu.jsonl" 2>&1
done
cat "$OUT/device.txt"
