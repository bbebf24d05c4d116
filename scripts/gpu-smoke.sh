#!/usr/bin/env bash
# GPU smoke test on a device machine without the project's build dependencies: nvcc compiles
# gpu/context.cu for sm_90, gcc the rest, and the fill/copy self-test runs.
set -euo pipefail
out=${OUT:-out/gpu}
mkdir -p "$out" build-smoke
nvcc -arch=sm_90 --fmad=false -I. -c gpu/context.cu -o build-smoke/context.o
gcc -std=c11 -O2 -D_GNU_SOURCE -I. tiles/tiles.c scripts/gpu-selftest.c build-smoke/context.o \
    -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++ -o build-smoke/gpu-selftest
./build-smoke/gpu-selftest | tee "$out/gpu-smoke.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$out/gpu-smoke.txt"
nvcc --version | tail -1 | tee -a "$out/gpu-smoke.txt"
