#!/usr/bin/python3
"""Write the layout benchmark's GDSII files (docs/performance.md, "Layouts"):

    python3 scripts/layout_bench_gds.py OUT.gds N [--flat] [--pitch-nm P] [--angle DEG]

N x N copies of one rectangle (600 x 200 nm, turned by --angle degrees about its centre, its
corners rounded to the 1 nm database grid) on a square lattice of pitch P nm (default 1000):

- default: one cell RECT holding the rectangle and a cell TOP holding one AREF of it (a few
  hundred bytes, whatever N);
- --flat: TOP holds the N*N rectangles as BOUNDARY elements (64 bytes each: 25 million are
  1.6 GB), the same geometry flattened.

Written by hand with numpy rather than gdspy: gdspy builds a Python object per polygon (25
million of them do not fit a small machine's memory or time), while every BOUNDARY record here
differs only in its coordinates, so a chunk of a million is one numpy array."""
import argparse
import math
import struct
import sys

import numpy as np


def rec(rtype, dtype, data=b""):
    return struct.pack(">HBB", 4 + len(data), rtype, dtype) + data


def real8(x):
    """GDSII excess-64 base-16 real."""
    if x == 0:
        return b"\0" * 8
    s = 0x80 if x < 0 else 0
    x = abs(x)
    e = 64
    while x >= 1:
        x /= 16
        e += 1
    while x < 1 / 16:
        x *= 16
        e -= 1
    m = int(round(x * 2 ** 56))
    return struct.pack(">B", s | e) + m.to_bytes(7, "big")


def i16(*v):
    return struct.pack(">%dh" % len(v), *v)


def i32(*v):
    return struct.pack(">%di" % len(v), *v)


def header(f):
    stamp = i16(2026, 11, 27, 0, 0, 0) * 2
    f.write(rec(0x00, 0x02, i16(600)))
    f.write(rec(0x01, 0x02, stamp))
    f.write(rec(0x02, 0x06, b"BENCH\0"))
    f.write(rec(0x03, 0x05, real8(1e-3) + real8(1e-9)))


def bgnstr(f, name):
    f.write(rec(0x05, 0x02, i16(2026, 11, 27, 0, 0, 0) * 2))
    n = name.encode()
    if len(n) % 2:
        n += b"\0"
    f.write(rec(0x06, 0x06, n))


def corners(angle):
    """The turned rectangle's corners around (0, 0), nm, on the grid, closed (5 points)."""
    t = math.radians(angle)
    c, s = math.cos(t), math.sin(t)
    pts = [(-300, -100), (300, -100), (300, 100), (-300, 100)]
    q = [(int(round(c * x - s * y)), int(round(s * x + c * y))) for x, y in pts]
    return q + [q[0]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("n", type=int)
    ap.add_argument("--flat", action="store_true")
    ap.add_argument("--pitch-nm", type=int, default=1000)
    ap.add_argument("--angle", type=float, default=30.0)
    a = ap.parse_args()
    n, p = a.n, a.pitch_nm
    q = corners(a.angle)
    with open(a.out, "wb") as f:
        header(f)
        if not a.flat:
            bgnstr(f, "RECT")
            f.write(rec(0x08, 0x00))  # BOUNDARY
            f.write(rec(0x0D, 0x02, i16(1)))  # LAYER
            f.write(rec(0x0E, 0x02, i16(0)))  # DATATYPE
            f.write(rec(0x10, 0x03, i32(*[v for xy in q for v in xy])))
            f.write(rec(0x11, 0x00))  # ENDEL
            f.write(rec(0x07, 0x00))  # ENDSTR
            bgnstr(f, "TOP")
            f.write(rec(0x0B, 0x00))  # AREF
            f.write(rec(0x12, 0x06, b"RECT"))
            f.write(rec(0x13, 0x02, i16(n, n)))  # COLROW
            f.write(rec(0x10, 0x03, i32(0, 0, n * p, 0, 0, n * p)))
            f.write(rec(0x11, 0x00))
            f.write(rec(0x07, 0x00))
        else:
            bgnstr(f, "TOP")
            head = (rec(0x08, 0x00) + rec(0x0D, 0x02, i16(1)) + rec(0x0E, 0x02, i16(0)) +
                    struct.pack(">HBB", 44, 0x10, 0x03))
            tail = rec(0x11, 0x00)
            dt = np.dtype([("h", "S%d" % len(head)), ("xy", ">i4", (10,)),
                           ("t", "S%d" % len(tail))])
            assert dt.itemsize == 64
            off = np.array([v for xy in q for v in xy], dtype=np.int64)
            cols = np.arange(n, dtype=np.int64) * p
            for j in range(n):
                # one row of the lattice (i fastest, as the AREF's copies are visited)
                buf = np.empty(n, dtype=dt)
                buf["h"] = head
                buf["t"] = tail
                xy = np.empty((n, 10), dtype=np.int64)
                xy[:, 0::2] = cols[:, None] + off[0::2]
                xy[:, 1::2] = j * p + off[1::2]
                buf["xy"] = xy
                f.write(buf.tobytes())
            f.write(rec(0x07, 0x00))
        f.write(rec(0x04, 0x00))  # ENDLIB
    return 0


if __name__ == "__main__":
    sys.exit(main())
