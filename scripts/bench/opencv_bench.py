#!/usr/bin/python3
"""opencv_bench: the OpenCV peer of designs/bench/distance.yaml (run by scripts/bench-cpu.sh).

The same picture as the design: a 10240 x 10240 lattice of discs of radius 3 (tessera's inside
test on pixel centres) at the centre of every 100 x 100 cell; the exact Euclidean distance
transform cv2.distanceTransform(DIST_L2, DIST_MASK_PRECISE) of the inverted mask (dots are the
zero pixels it measures to); a = round(d*d) clamped to dmax^2 (d*d of an exact EDT is an integer
up to float rounding); then the sphere table of docs/format.md §5 built in double and quantised as
tessera's output, floor(f*255 + 0.5), looked up with numpy into uint8.

Two timings (wall, time.perf_counter, after the imports; and CPU, time.process_time, all threads):
  core  = distanceTransform + clamp + table lookup only (the figure scripts/bench-cpu.sh uses:
          the peer's most favourable number, so the ratio is conservative for tessera);
  whole = lattice build + core + writing the bytes to /dev/null (or -o PATH).
cv2.setNumThreads(2) (OpenCV's precise distance transform is sequential anyway).

Usage: opencv_bench.py [-o PATH] [--dmax N]. Prints one line with both MB/s and Mpx/s.
"""
import argparse
import sys
import time

import cv2
import numpy as np

SIDE, PITCH, RADIUS = 10240, 100, 3.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", default="/dev/null")
    ap.add_argument("--dmax", type=int, default=32)
    args = ap.parse_args()
    cv2.setNumThreads(2)
    dmax = args.dmax

    # the table: index a = squared distance in 0..dmax^2, value = the 8-bit sample
    a = np.arange(dmax * dmax + 1, dtype=np.float64)
    f = np.sqrt(np.maximum(0.0, 1.0 - (np.sqrt(a) / dmax) ** 2))
    lut = np.floor(np.clip(f, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)

    t0, c0 = time.perf_counter(), time.process_time()
    c = np.arange(PITCH, dtype=np.float64) + 0.5 - PITCH / 2
    cell = (c[None, :] ** 2 + c[:, None] ** 2 <= RADIUS * RADIUS)
    reps = -(-SIDE // PITCH)
    mask = np.tile(cell, (reps, reps))[:SIDE, :SIDE]
    # distanceTransform measures to the nearest zero pixel: dots are 0, the rest 255
    src = np.where(mask, np.uint8(0), np.uint8(255))
    src = np.ascontiguousarray(src)

    t1, c1 = time.perf_counter(), time.process_time()
    d = cv2.distanceTransform(src, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    sq = np.minimum(np.rint(d * d), dmax * dmax).astype(np.int32)
    out = lut[sq]
    t2, c2 = time.perf_counter(), time.process_time()

    out.tofile(args.o)
    t3, c3 = time.perf_counter(), time.process_time()

    nbytes = out.size  # 8-bit: one byte a pixel
    core, whole = t2 - t1, t3 - t0
    core_cpu, whole_cpu = c2 - c1, c3 - c0
    print("opencv distance dmax=%d threads=%d bytes=%d core_seconds=%.3f core_MB/s=%.1f "
          "core_Mpx/s=%.1f core_cpu_seconds=%.3f core_MB/cpu-s=%.1f whole_seconds=%.3f "
          "whole_MB/s=%.1f whole_Mpx/s=%.1f whole_cpu_seconds=%.3f"
          % (dmax, cv2.getNumThreads(), nbytes, core, nbytes / core / 1e6, out.size / core / 1e6,
             core_cpu, nbytes / core_cpu / 1e6, whole, nbytes / whole / 1e6,
             out.size / whole / 1e6, whole_cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
