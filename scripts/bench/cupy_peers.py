#!/usr/bin/env python3
"""The GPU peers of the kernel targets, timed on the device that runs tessera's.

The same pictures as designs/bench/blur4.yaml, blur32.yaml and distance.yaml (a 100 px motif
repeated over 10240 x 10240 px: a disc of radius 40 for the blurs, of radius 3 for the
distance),
made on the device, then:
  cupyx.scipy.ndimage.gaussian_filter(sigma 4 and 32, float32, mode 'nearest' = tessera's
      clamp), and
  cupyx.scipy.ndimage.distance_transform_edt of the lattice's background (exact, unbounded;
      tessera's distance is exact within dmax),
each the best of 5 after a warm-up, timed with CUDA events around the call alone: no upload,
no download, no conversion to 8-bit. One JSON object per line: op, sigma or dmax, megapixels
per second. scripts/bench-gpu.sh sets them beside `tessera profile --region` of the same
designs, whose rate includes everything (8-bit output copied to the host), so a ratio above 1
is a lower bound of the kernel's.
"""
import json
import sys

import cupy as cp
import cupyx.scipy.ndimage as ndi

N = 10240
PITCH = 100


def lattice_disc(radius):
    y, x = cp.mgrid[0:PITCH, 0:PITCH].astype(cp.float32) + 0.5
    motif = ((x - 50) ** 2 + (y - 50) ** 2 <= radius * radius).astype(cp.float32)
    reps = (N + PITCH - 1) // PITCH
    return cp.ascontiguousarray(cp.tile(motif, (reps, reps))[:N, :N])


def best_of(fn, runs=5):
    fn()  # warm-up: kernel compilation and caches
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    best = None
    for _ in range(runs):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms = cp.cuda.get_elapsed_time(start, stop)
        best = ms if best is None or ms < best else best
    return best / 1e3


def main():
    out = []
    img = lattice_disc(40)
    for sigma in (4, 32):
        s = best_of(lambda: ndi.gaussian_filter(img, sigma, mode="nearest"))
        out.append({"op": "gaussian_filter", "sigma": sigma, "seconds": s,
                    "mpx_per_s": N * N / s / 1e6})
    dots = lattice_disc(3) > 0.5  # discs of radius 3, as distance.yaml
    background = cp.logical_not(dots)
    s = best_of(lambda: ndi.distance_transform_edt(background), runs=3)
    out.append({"op": "distance_transform_edt", "seconds": s, "mpx_per_s": N * N / s / 1e6})
    for o in out:
        print(json.dumps(o))
    return 0


if __name__ == "__main__":
    sys.exit(main())
