#!/usr/bin/env python3
"""Expected bytes of a dithered, packed stream (docs/outputs.md; depth 1, 2, 4), from the 8-bit
raster render of the same design, by tests/oracle/dither.py's definition of the levels and
numpy reordering into the stream's order (docs/format.md §7: swaths from the start corner, every
second one reversed when serpentine, rows of a swath top down or bottom up).

  packed.py expect SAMPLES W H BITS ARRAY OUT [--y0 Y] [--swath SW] [--serpentine]
            [--start CORNER] [--mirror-x] [--y-up] [--bidirectional rows|swaths]
      SAMPLES: H rows of W 8-bit samples of root rows Y.. (a --rows crop starts at Y);
      writes the stream's bytes to OUT (BITS 8: the samples reordered, ARRAY ignored).
  packed.py density PACKED W H BITS GRAY N
      PACKED: a raster stream of a flat design of 8-bit sample GRAY dithered against an
      N x N array, W and H multiples of N: exit 0 when its mean level is within 1 / (2 N^2)
      of a level of GRAY * L / 255 (the bound docs/outputs.md states), 1 otherwise.
  packed.py unpack PACKED W H BITS OUT
      the levels, one byte a pixel, raster rows (for comparing with image files)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import dither  # noqa: E402


def levels(samples, bits, array, y0):
    return dither.reference(dither.ranks(array), samples, 8, bits, 0, y0)


def pack(block, bits):
    return block.astype(np.uint8).tobytes() if bits == 8 else dither.pack(block, bits).tobytes()


def stream(lv, bits, sw, serp, start, mirror=False, yup=False, bidir="none"):
    """The stream's bytes (docs/format.md §7.2, docs/outputs.md §7): the machine's axes flip
    the start corner (mirror: left and right, y up: top and bottom); a swath's rows run from
    its start edge; a row runs right to left when mirrored, xor (bidirectional) its index in
    the swath, or its swath's, is odd. The levels keep their own pixels' thresholds."""
    h, w = lv.shape
    if sw is None or sw >= w:
        sw = w
    right = (start in ("top-right", "bottom-right")) != mirror
    bottom = start.startswith("bottom") != yup
    parts = []
    for k in range(-(-w // sw)):
        a, b = k * sw, min(k * sw + sw, w)
        x0, x1 = (w - b, w - a) if right else (a, b)
        block = lv[:, x0:x1]
        if bottom != (serp and k % 2 == 1):
            block = block[::-1]
        block = block.copy()
        for i in range(h):
            rev = mirror != ((bidir == "rows" and i % 2 == 1) or (bidir == "swaths" and k % 2 == 1))
            if rev:
                block[i] = block[i, ::-1]
        parts.append(pack(block, bits))
    return b"".join(parts)


def unpack(raw, w, h, bits):
    per = 8 // bits
    rb = -(-w * bits // 8)
    b = np.frombuffer(raw, dtype=np.uint8).reshape(h, rb)
    out = np.zeros((h, rb * per), dtype=np.uint8)
    for j in range(per):
        out[:, j::per] = (b >> (8 - bits * (j + 1))) & ((1 << bits) - 1)
    return out[:, :w]


def main(argv):
    opts = {"--y0": "0", "--swath": None, "--start": "top-left", "--bidirectional": "none"}
    flags = set()
    pos = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--serpentine", "--mirror-x", "--y-up"):
            flags.add(argv[i])
            i += 1
        elif argv[i].startswith("--"):
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            pos.append(argv[i])
            i += 1
    if pos and pos[0] == "expect":
        src, w, h, bits, array, out = pos[1], int(pos[2]), int(pos[3]), int(pos[4]), pos[5], pos[6]
        s = np.fromfile(src, dtype=np.uint8).reshape(h, w)
        lv = s if bits == 8 else levels(s, bits, array, int(opts["--y0"]))
        sw = int(opts["--swath"]) if opts["--swath"] else None
        with open(out, "wb") as f:
            f.write(stream(lv, bits, sw, "--serpentine" in flags, opts["--start"],
                           "--mirror-x" in flags, "--y-up" in flags, opts["--bidirectional"]))
        return 0
    if pos and pos[0] == "density":
        w, h, bits, gray, n = (int(v) for v in pos[2:7])
        lv = unpack(open(pos[1], "rb").read(), w, h, bits).astype(np.float64)
        L = (1 << bits) - 1
        err = abs(lv.mean() - gray * L / 255)
        bound = 1 / (2 * n * n)
        print("mean level %.6f, gray %d of 255 is %.6f levels: error %.2e (bound %.2e)"
              % (lv.mean(), gray, gray * L / 255, err, bound))
        return 0 if err <= bound + 1e-12 else 1
    if pos and pos[0] == "unpack":
        w, h, bits = int(pos[2]), int(pos[3]), int(pos[4])
        unpack(open(pos[1], "rb").read(), w, h, bits).tofile(pos[5])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
