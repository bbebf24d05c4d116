#!/usr/bin/env bash
# On a GPU machine (through the device tool, with .debs carried: scripts/gpu-debs.sh): unpack
# the Debian packages it lacks into a prefix (never /), build tessera with CUDA, run every test
# (the GPU suite included), compute-sanitizer on the GPU suite, and the GPU benchmarks. Logs
# and results go to $OUT (default out/gpu). One call does it all: device time is scarce.
#   GPU_CHECK_STEPS="build test sanitize bench" (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu}
STEPS=${GPU_CHECK_STEPS:-build test sanitize bench}
mkdir -p "$OUT"
. scripts/gpu-env.sh
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
      --format=csv,noheader || true
  nvcc --version | tail -2
  nproc
} >"$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
rc=0
if has build; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
      >"$OUT/cmake.log" 2>&1 && cmake --build build-gpu -j "$(nproc)" >"$OUT/build.log" 2>&1 ||
      { tail -40 "$OUT/build.log" "$OUT/cmake.log"; exit 1; }
  grep -h "tessera:" "$OUT/cmake.log"
fi
if has test; then
  # the numpy oracle is the CPU's business (CI runs it); everything else, GPU suite included
  (cd build-gpu && ctest --output-on-failure -j 8 -LE oracle 2>&1) >"$OUT/ctest.log"
  rc=$?
  tail -25 "$OUT/ctest.log"
  ./build-gpu/tests/test_gpu --verbose 2>&1 | tail -20 | tee "$OUT/test_gpu.log"
fi
if has sanitize; then
  # memcheck and racecheck over the GPU suite's fault and budget tests and one design sweep
  # (the whole sweep under the sanitizer would take most of the device time)
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 ./build-gpu/tests/test_gpu --jobs 1 \
        --filter 'gpu/a_device*' >"$OUT/sanitizer-$tool.log" 2>&1
    echo "compute-sanitizer $tool (fault, budget tests): exit $?"
    compute-sanitizer --tool $tool --error-exitcode 9 \
        ./build-gpu/tests/test_gpu --jobs 1 --filter 'gpu/sanitized*' \
        >>"$OUT/sanitizer-$tool.log" 2>&1
    echo "compute-sanitizer $tool (oracle designs): exit $?"
    grep -h "ERROR SUMMARY" "$OUT/sanitizer-$tool.log" | sort | uniq -c
  done
fi
if has bench; then
  bash scripts/bench-gpu.sh build-gpu/tessera "$OUT" 2>&1 | tee "$OUT/bench.log"
fi
exit $rc
