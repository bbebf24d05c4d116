#!/usr/bin/env python3
"""Expected bytes of a stream with the stage's geometry (docs/outputs.md §2, §7, §8), from the
raster render of the same design, by numpy reordering: swaths from the start corner, each going
`overlap` columns on into the next with the dose split between the two (feathered), rows
reversed as the stage says, `overscan` pixels of a value at both row ends, packed rows or bit
planes (every R rows of a swath as depth 1-bit planes, top bit first).

  stage.py expect SAMPLES W H DEPTH OUT [--bits B --array A] [--y0 Y] [--swath SW]
           [--serpentine] [--start CORNER] [--mirror-x] [--y-up] [--bidirectional rows|swaths]
           [--overlap K] [--feather linear|cosine] [--overscan N] [--overscan-value V]
           [--planes R]
      SAMPLES: H rows of W samples (DEPTH 8 or 16, little-endian) of root rows Y..;
      --bits 1|2|4 dithers them against ARRAY first (tests/oracle/dither.py's definition).
  stage.py sum STREAM W H DEPTH SW K START OUT
      the raster image a feathered swath stream (no overscan, no planes, rows unreversed)
      stands for: each overlap column's two shares added back, written to OUT as DEPTH-bit
      samples."""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))


def weights(n, feather):
    """The later swath's weight of overlap column j (0 .. n - 1 from the earlier swath's side),
    in 1/65536: f((j + 1/2) / n), linear t or cosine (1 - cos(pi t)) / 2, rounded half up."""
    t = (np.arange(n, dtype=np.float64) + 0.5) / n
    f = t if feather == "linear" else 0.5 - 0.5 * np.cos(math.pi * t)
    return np.clip(np.floor(f * 65536.0 + 0.5), 0, 65536).astype(np.int64)


def later(s, w):
    return (s * w + 32768) >> 16


def swaths(w, sw, overlap):
    """(a, b, lead, trail) per swath in stream order: its own columns counted from the start
    side, and the overlaps it shares with the ones before and after it."""
    if sw is None or sw >= w:
        return [(0, w, 0, 0)]
    n = -(-w // sw)
    base = [min(sw, w - k * sw) for k in range(n)]
    out = []
    for k in range(n):
        trail = min(overlap, base[k + 1]) if k + 1 < n else 0
        lead = min(overlap, base[k]) if k > 0 else 0
        out.append((k * sw, k * sw + base[k], lead, trail))
    return out


def pack_rows(block, bits):
    if bits == 8:
        return block.astype(np.uint8).tobytes()
    if bits == 16:
        return block.astype("<u2").tobytes()
    per = 8 // bits
    h, w = block.shape
    rb = -(-w * bits // 8)
    padded = np.zeros((h, rb * per), dtype=np.uint8)
    padded[:, :w] = block
    out = np.zeros((h, rb), dtype=np.uint8)
    for j in range(per):
        out |= (padded[:, j::per] << (8 - bits * (j + 1))).astype(np.uint8)
    return out.tobytes()


def planes_of(block, depth, rows):
    parts = []
    for u0 in range(0, block.shape[0], rows):
        unit = block[u0:u0 + rows].astype(np.int64)
        for b in range(depth - 1, -1, -1):
            parts.append(np.packbits(((unit >> b) & 1).astype(np.uint8), axis=1).tobytes())
    return b"".join(parts)


def stream(px, depth, bits, o):
    """px: H x W samples (bits == depth) or levels (bits < 8)."""
    h, w = px.shape
    start = o["start"]
    right = (start in ("top-right", "bottom-right")) != o["mirror"]
    bottom = start.startswith("bottom") != o["yup"]
    parts = []
    for k, (a, b, lead, trail) in enumerate(swaths(w, o["swath"], o["overlap"])):
        x0, x1 = (w - b - trail, w - a) if right else (a, b + trail)
        block = px[:, x0:x1].astype(np.int64)
        width = x1 - x0
        if lead:  # this swath's first columns: the later swath's share
            wt = weights(lead, o["feather"])
            cols = np.arange(lead) if not right else width - 1 - np.arange(lead)
            block[:, cols] = later(block[:, cols], wt)
        if trail:  # the next swath's first columns: the rest
            wt = weights(trail, o["feather"])
            cols = width - trail + np.arange(trail) if not right else trail - 1 - np.arange(trail)
            block[:, cols] = block[:, cols] - later(block[:, cols], wt)
        if bottom != (o["serp"] and k % 2 == 1):
            block = block[::-1]
        block = block.copy()
        for i in range(h):
            bidir = o["bidir"]
            if o["mirror"] != ((bidir == "rows" and i % 2 == 1) or (bidir == "swaths" and k % 2 == 1)):
                block[i] = block[i, ::-1]
        n = o["overscan"]
        if n:
            pad = np.full((h, n), o["value"], dtype=np.int64)
            block = np.concatenate([pad, block, pad], axis=1)
        if o["planes"]:
            parts.append(planes_of(block, depth, o["planes"]))
        else:
            parts.append(pack_rows(block, bits))
    return b"".join(parts)


def read(path, w, h, depth):
    return np.fromfile(path, dtype=np.uint8 if depth == 8 else "<u2").reshape(h, w)


def main(argv):
    opts = {"--y0": "0", "--swath": None, "--start": "top-left", "--bidirectional": "none",
            "--overlap": "0", "--feather": "linear", "--overscan": "0", "--overscan-value": "0",
            "--planes": "0", "--bits": None, "--array": None}
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
        src, w, h, depth, out = pos[1], int(pos[2]), int(pos[3]), int(pos[4]), pos[5]
        px = read(src, w, h, depth)
        bits = depth
        if opts["--bits"]:
            import dither  # tests/oracle/dither.py
            bits = int(opts["--bits"])
            px = dither.reference(dither.ranks(opts["--array"]), px, 8, bits, 0, int(opts["--y0"]))
        o = {"swath": int(opts["--swath"]) if opts["--swath"] else None,
             "serp": "--serpentine" in flags, "start": opts["--start"],
             "mirror": "--mirror-x" in flags, "yup": "--y-up" in flags,
             "bidir": opts["--bidirectional"], "overlap": int(opts["--overlap"]),
             "feather": opts["--feather"], "overscan": int(opts["--overscan"]),
             "value": int(opts["--overscan-value"]), "planes": int(opts["--planes"])}
        with open(out, "wb") as f:
            f.write(stream(px, depth, bits, o))
        return 0
    if pos and pos[0] == "sum":
        path, w, h, depth, sw, k, start, out = pos[1:9]
        w, h, depth, sw, k = int(w), int(h), int(depth), int(sw), int(k)
        raw = np.frombuffer(open(path, "rb").read(), dtype=np.uint8 if depth == 8 else "<u2")
        right = start in ("top-right", "bottom-right")
        img = np.zeros((h, w), dtype=np.int64)
        at = 0
        for (a, b, lead, trail) in swaths(w, sw, k):
            width = b - a + trail
            block = raw[at:at + h * width].reshape(h, width).astype(np.int64)
            at += h * width
            x0 = w - b - trail if right else a
            img[:, x0:x0 + width] += block
        img.astype(np.uint8 if depth == 8 else "<u2").tofile(out)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
