#!/usr/bin/env bash
# On a GPU machine (through the device tool, with .debs carried: scripts/gpu-debs.sh): unpack
# the Debian packages it lacks into a prefix (never /), build tessera with CUDA, run every test
# (the GPU suite included), compute-sanitizer on the GPU suite, and the GPU benchmarks. Logs
# and results go to $OUT (default out/gpu). One call does it all: device time is scarce.
#   GPU_CHECK_STEPS="build cputest test clitest sanitize bench" (default: all; each step may be
#   named alone, so a short call can take part of it: cputest = the suite as CI runs it, test =
#   the GPU suites and every suite's CPU == GPU cases, clitest = the CLI suites with the GPU as
#   `auto`), or "quick": only what the GPU
#   changes (tessera and the GPU-facing suites: test_gpu, test_gpu_math, test_job), when device
#   time is short; test_multi's GPU test runs two engines on the one device (--gpus 2)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/gpu}
STEPS=${GPU_CHECK_STEPS:-build cputest test clitest sanitize bench}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd) # absolute: some steps run from build-gpu
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
if has quick; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
      >"$OUT/cmake.log" 2>&1 && cmake --build build-gpu -j "$(nproc)" --target tessera test_gpu \
      test_gpu_math test_job test_multi >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log" "$OUT/cmake.log"; exit 1; }
  grep -h "tessera:" "$OUT/cmake.log"
  for t in test_gpu test_gpu_math test_job test_multi; do
    (cd build-gpu && timeout 300 "./tests/$t" --jobs 4 >"$OUT/$t.log" 2>&1) || rc=1
    echo "$t: $(grep -E "Synthesis" "$OUT/$t.log")"
    grep -E "^\[(FAIL|SKIP)|Assertion" -A2 "$OUT/$t.log" | head -20
  done
fi
if has build; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
      >"$OUT/cmake.log" 2>&1 && cmake --build build-gpu -j "$(nproc)" >"$OUT/build.log" 2>&1 ||
      { tail -40 "$OUT/build.log" "$OUT/cmake.log"; exit 1; }
  grep -h "tessera:" "$OUT/cmake.log"
fi
if has cputest; then
  # The suite as CI runs it (CPU backend: TSR_NOGPU hides the device from `auto`; the numpy
  # and shapely oracles are CI's: the image's system python3 has neither, so test_coverage's
  # oracle cases are left to CI too; its CPU == GPU case runs in the test step)
  (cd build-gpu && TSR_NOGPU=1 timeout 300 ctest --output-on-failure -j 8 -LE 'oracle|pyread' -E 'test_gpu$|test_coverage' \
      2>&1) >"$OUT/ctest-cpu.log"
  rc=$?
  echo "ctest, CPU backend: $(grep -E 'tests passed|tests failed' "$OUT/ctest-cpu.log")"
fi
if has test; then
  ./build-gpu/tests/test_gpu --verbose --jobs 4 >"$OUT/test_gpu.log" 2>&1 || rc=1
  grep -E "^\[(FAIL|SKIP)|Synthesis" "$OUT/test_gpu.log"
  ./build-gpu/tests/test_gpu_math >"$OUT/test_gpu_math.log" 2>&1 || rc=1
  tail -1 "$OUT/test_gpu_math.log"
  ./build-gpu/tests/test_multi --jobs 2 >"$OUT/test_multi.log" 2>&1 || rc=1
  echo "test_multi (--gpus: two GPU engines on this device): $(tail -1 "$OUT/test_multi.log")"
  # Every suite's own CPU == GPU cases (a test named *gpu*: text, booleans, layouts, aa exact,
  # rank, optics, variation, dither, packed depths, GPU previews, transforms...), which the
  # TSR_NOGPU pass above skipped: run with the device visible, each case listed PASS/SKIP/FAIL
  # (a SKIP here means the case found no device: a failure of this check)
  for src in tests/test_*.c; do
    t=$(basename "$src" .c)
    [ "$t" = test_gpu ] || [ "$t" = test_multi ] && continue
    grep -q "^Test([a-z_0-9]*, [a-z_0-9]*gpu" "$src" || continue
    (cd build-gpu && TSR_SRC_DIR="$PWD/.." timeout 300 "./tests/$t" --jobs 4 --verbose \
        --filter '*/*gpu*' >"$OUT/$t-gpu.log" 2>&1) || rc=1
    echo "$t (its GPU cases): $(grep -E "Synthesis" "$OUT/$t-gpu.log")"
    # (the filter leaves the suite's other tests "disabled": those SKIP lines are not shown)
    grep -E "^\[(FAIL|SKIP)|Assertion" -A2 "$OUT/$t-gpu.log" | grep -v "Test is disabled" | head -10
  done
fi
if has clitest; then
  (cd build-gpu && timeout 420 ctest --output-on-failure -j 8 -R '^cli_' -LE 'oracle|rss|pyread' \
      2>&1) >"$OUT/ctest-cli-gpu.log"
  echo "ctest, CLI suites with --backend auto = gpu: $(grep -E 'tests passed|tests failed' "$OUT/ctest-cli-gpu.log")"
  grep -E "^FAIL|\*\*\*" "$OUT/ctest-cli-gpu.log" | head -20
fi
if has sanitize; then
  # memcheck over the GPU suite's fault and budget tests and the oracle sweep; racecheck (shared
  # memory hazards, which only the distance and blur kernels could have) over the sweep's
  # first designs only: under racecheck the whole sweep takes most of the device time
  compute-sanitizer --tool memcheck --error-exitcode 9 ./build-gpu/tests/test_gpu --jobs 1 \
      --filter 'gpu/a_device*' >"$OUT/sanitizer-memcheck.log" 2>&1
  echo "compute-sanitizer memcheck (fault, budget tests): exit $?"
  compute-sanitizer --tool memcheck --error-exitcode 9 ./build-gpu/tests/test_gpu --jobs 1 \
      --filter 'gpu/sanitized*' >>"$OUT/sanitizer-memcheck.log" 2>&1
  echo "compute-sanitizer memcheck (oracle designs): exit $?"
  # the per-copy repeat kernels (table, sources, jitter) and the layout/vector sources' pieces
  for t in test_vary test_layouts_source test_text_source; do
    compute-sanitizer --tool memcheck --error-exitcode 9 "./build-gpu/tests/$t" --jobs 1 \
        --filter '*/*gpu*' >>"$OUT/sanitizer-memcheck.log" 2>&1
    echo "compute-sanitizer memcheck ($t, its GPU cases): exit $?"
  done
  TSR_GPU_SWEEP=blur,distance timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 \
      ./build-gpu/tests/test_gpu --jobs 1 --filter 'gpu/sanitized*' \
      >"$OUT/sanitizer-racecheck.log" 2>&1
  echo "compute-sanitizer racecheck (blur and distance oracle designs): exit $?"
  grep -h "ERROR SUMMARY" "$OUT"/sanitizer-*.log | sort | uniq -c
fi
if has bench; then
  bash scripts/bench-gpu.sh build-gpu/tessera "$OUT" 2>&1 | tee "$OUT/bench.log"
fi
exit $rc
