#!/usr/bin/env python3
"""Regenerates the test PNGs of tests/oracle/designs/img/ (committed; run only to change them).

Every colour type and bit depth the oracle decodes, every filter type (the writer cycles
filters 0..4 over the scanlines), split IDAT, a gAMA chunk and a tRNS chunk (both must be
ignored), and a few Adam7-interlaced images (including one so small some passes are empty).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tinypng import write_png  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def field(w, h, ch, maxv, seed):
    """Deterministic content: a diagonal ramp plus noise, per channel."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    out = []
    for c in range(ch):
        ramp = ((x * (3 + c) + y * (5 - c)) % (maxv + 1)).astype(np.int64)
        noise = rng.integers(0, maxv + 1, size=(h, w))
        out.append(np.where(rng.random((h, w)) < 0.3, noise, ramp))
    a = np.stack(out, axis=2)
    a[0, 0, :] = 0       # the extremes appear somewhere
    a[-1, -1, :] = maxv
    return a


def palette(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 256, size=(n, 3))
    p[0] = (0, 0, 0)
    p[-1] = (255, 255, 255)
    return [tuple(int(v) for v in row) for row in p]


def main():
    j = lambda name: os.path.join(HERE, name)  # noqa: E731
    gama = (b"gAMA", (45455).to_bytes(4, "big"))
    write_png(j("g1.png"), field(37, 23, 1, 1, 1), 0, 1)
    write_png(j("g2.png"), field(29, 17, 1, 3, 2), 0, 2)
    write_png(j("g4.png"), field(31, 19, 1, 15, 3), 0, 4)
    write_png(j("g8.png"), field(41, 27, 1, 255, 4), 0, 8, extra=[gama])
    write_png(j("g16.png"), field(33, 21, 1, 65535, 5), 0, 16)
    write_png(j("p8.png"), field(40, 30, 1, 199, 6), 3, 8, palette=palette(200, 7),
              extra=[(b"tRNS", bytes(range(0, 200)))])
    write_png(j("p4.png"), field(25, 15, 1, 15, 8), 3, 4, palette=palette(16, 9))
    write_png(j("p2.png"), field(13, 9, 1, 3, 10), 3, 2, palette=palette(4, 11))
    write_png(j("p1.png"), field(19, 11, 1, 1, 12), 3, 1, palette=[(10, 200, 30), (250, 5, 128)])
    write_png(j("rgb8.png"), field(35, 25, 3, 255, 13), 2, 8, extra=[gama])
    write_png(j("rgb16.png"), field(27, 19, 3, 65535, 14), 2, 16)
    write_png(j("rgba8.png"), field(30, 20, 4, 255, 15), 6, 8)
    write_png(j("rgba16.png"), field(17, 13, 4, 65535, 16), 6, 16)
    write_png(j("ga8.png"), field(23, 29, 2, 255, 17), 4, 8)
    write_png(j("ga16.png"), field(21, 15, 2, 65535, 18), 4, 16)
    write_png(j("i_g8.png"), field(21, 19, 1, 255, 19), 0, 8, interlace=True)
    write_png(j("i_rgb8.png"), field(23, 17, 3, 255, 20), 2, 8, interlace=True)
    write_png(j("i_g2.png"), field(11, 13, 1, 3, 21), 0, 2, interlace=True)
    write_png(j("i_p4.png"), field(3, 2, 1, 15, 22), 3, 4, palette=palette(16, 23),
              interlace=True)


if __name__ == "__main__":
    main()
