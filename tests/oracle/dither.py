#!/usr/bin/env python3
"""Reference for docs/outputs.md (dithering, threshold arrays), written from the text of that
page and nothing of nodes/dither.c: the Bayer matrix by its block recursion, the blue-noise
array by void-and-cluster over whole numpy arrays (np.roll of the full toroidal filter), the
thresholds and levels in Python integers, the packing by np.packbits.

  dither.py ranks ARRAY OUT.bin
      write the array's ranks (N*N little-endian uint32, row-major)
  dither.py check ARRAY --depth D --bits B --width W --height H [--x0 X] [--y0 Y] SAMPLES GOT
      SAMPLES: H rows of W samples (8-bit, or 16-bit little-endian) of pixels (X.., Y..);
      GOT: the packed rows (each ceil(W*B/8) bytes; pixel X lands at bit 0 of its row, i.e.
      rows are packed from X). Exit 0 when GOT is bit for bit the reference, 1 with the first
      difference otherwise.

ARRAY is threshold, bayerN or blueN."""
import os
import sys

import numpy as np

Q = 3439140958          # round(exp(-1 / (2 * 1.5^2)) * 2^32)
SEED = 0x7E55E7A0B1E5EED
M64 = (1 << 64) - 1


def bayer(n):
    m = np.array([[0]], dtype=np.int64)
    while m.shape[0] < n:
        m = np.block([[4 * m, 4 * m + 2], [4 * m + 3, 4 * m + 1]])
    return m


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def blue(n):
    # the filter: w(d^2) = 2^32 q^(d^2), each power rounded down from the last
    w = [1 << 32]
    while w[-1] > 0:
        w.append((w[-1] * Q) >> 32)
    d = np.minimum(np.arange(n), n - np.arange(n))
    d2 = d[:, None] ** 2 + d[None, :] ** 2
    kern = np.array([[w[v] if v < len(w) else 0 for v in row] for row in d2], dtype=np.int64)
    cells = n * n
    on = np.zeros(cells, dtype=bool)
    e = np.zeros((n, n), dtype=np.int64)

    def toggle(p, add):
        on[p] = add
        y, x = divmod(p, n)
        r = np.roll(np.roll(kern, y, axis=0), x, axis=1)
        e[...] = e + r if add else e - r

    big = np.iinfo(np.int64).max

    def cluster():   # the one with the most energy; argmax gives the lowest index on ties
        return int(np.argmax(np.where(on, e.ravel(), -1)))

    def void():
        return int(np.argmin(np.where(on, big, e.ravel())))

    state, perm = SEED, list(range(cells))
    ones = cells // 10
    for i in range(ones):
        state, z = splitmix(state)
        j = i + z % (cells - i)
        perm[i], perm[j] = perm[j], perm[i]
        toggle(perm[i], True)
    for _ in range(64 * cells):
        c = cluster()
        toggle(c, False)
        v = void()
        toggle(v, True)
        if v == c:
            break
    on0, e0 = on.copy(), e.copy()
    rank = np.zeros(cells, dtype=np.int64)
    for r in range(ones - 1, -1, -1):
        c = cluster()
        toggle(c, False)
        rank[c] = r
    on[:], e[...] = on0, e0
    for r in range(ones, cells):
        v = void()
        toggle(v, True)
        rank[v] = r
    return rank.reshape(n, n)


def ranks(name):
    # Generating a blue-noise array takes seconds in Python; the tests call this script once per
    # case, so $TSR_DITHER_CACHE (a scratch folder of the test's) keeps each array once made.
    cache = os.environ.get("TSR_DITHER_CACHE")
    if cache and name.startswith("blue"):
        path = os.path.join(cache, "ranks-%s.npy" % name)
        if os.path.exists(path):
            return np.load(path)
        rk = ranks_made(name)
        np.save(path + ".tmp.npy", rk)
        os.replace(path + ".tmp.npy", path)
        return rk
    return ranks_made(name)


def ranks_made(name):
    if name == "threshold":
        return np.zeros((1, 1), dtype=np.int64)
    if name.startswith("bayer"):
        return bayer(int(name[5:]))
    if name.startswith("blue"):
        return blue(int(name[4:]))
    raise SystemExit("unknown array " + name)


def reference(rk, samples, depth, bits, x0, y0):
    """Levels of the definition for samples at (x0.., y0..)."""
    n = rk.shape[0]
    mx = 255 if depth == 8 else 65535
    levels = (1 << bits) - 1
    t_of = {int(r): (2 * int(r) + 1) * mx // (2 * n * n) for r in rk.ravel()}
    h, w = samples.shape
    ys = (y0 + np.arange(h)) % n
    xs = (x0 + np.arange(w)) % n
    t = np.vectorize(lambda r: t_of[int(r)])(rk[np.ix_(ys, xs)]).astype(np.int64)
    sl = samples.astype(np.int64) * levels
    base = sl // mx
    frac = sl - base * mx
    return base + (frac > t)


def pack(levels, bits):
    h, w = levels.shape
    per = 8 // bits
    wpad = -(-w // per) * per
    v = np.zeros((h, wpad), dtype=np.uint8)
    v[:, :w] = levels
    v = v.reshape(h, wpad // per, per)
    out = np.zeros((h, wpad // per), dtype=np.uint8)
    for j in range(per):
        out |= (v[:, :, j] << (8 - bits * (j + 1))).astype(np.uint8)
    return out


def main(argv):
    if len(argv) >= 3 and argv[0] == "ranks":
        ranks(argv[1]).astype("<u4").tofile(argv[2])
        return 0
    if len(argv) < 1 or argv[0] != "check":
        print(__doc__, file=sys.stderr)
        return 2
    opts = {"--x0": 0, "--y0": 0}
    pos = []
    i = 1
    while i < len(argv):
        if argv[i].startswith("--"):
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            pos.append(argv[i])
            i += 1
    name = pos[0]
    depth, bits = int(opts["--depth"]), int(opts["--bits"])
    w, h = int(opts["--width"]), int(opts["--height"])
    x0, y0 = int(opts["--x0"]), int(opts["--y0"])
    dt = np.uint8 if depth == 8 else np.dtype("<u2")
    samples = np.fromfile(pos[1], dtype=dt).reshape(h, w)
    want = pack(reference(ranks(name), samples, depth, bits, x0, y0), bits)
    got = np.fromfile(pos[2], dtype=np.uint8)
    if got.size != want.size:
        print(f"{name}: {got.size} bytes, the reference has {want.size}")
        return 1
    got = got.reshape(want.shape)
    bad = np.argwhere(got != want)
    if bad.size:
        y, b = bad[0]
        print(f"{name} depth {depth} bits {bits}: {len(bad)} bytes differ, first row {y} "
              f"byte {b}: got {got[y, b]:#04x}, reference {want[y, b]:#04x}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
