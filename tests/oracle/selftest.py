#!/usr/bin/env python3
"""Self-checks of the oracle (tests/oracle/oracle.py) on hand-computed tiny cases.

    python3 tests/oracle/selftest.py        # exit 0 when every check passes

Each check states the expected values worked out by hand from docs/format.md §2, independently of
the oracle's code paths where possible (literal brute force, literal loops).
"""

import glob
import math
import os
import sys
import tempfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracle  # noqa: E402
import tinypng  # noqa: E402

F32 = np.float32
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def eq(got, want, what=""):
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError("%s\n got  %r\n want %r" % (what, got, want))


def design(text, files=None):
    """Write a design into a temp dir and return the oracle's Design for it."""
    d = tempfile.mkdtemp(prefix="oracle_selftest_")
    p = os.path.join(d, "d.yaml")
    with open(p, "w") as f:
        f.write(text)
    for name, writer in (files or {}).items():
        writer(os.path.join(d, name))
    return p


def values(text, files=None):
    return oracle.Design(design(text, files)).render_root()


# --- sources ---------------------------------------------------------------------------------

@check
def circle_4x4():
    # centre (2, 2), r = 1: only the pixel centres (1.5|2.5, 1.5|2.5) have d^2 = 0.5 <= 1
    V = values("""tessera: 1
root: {size: [4, 4], fill: 0.25, source: {shape: circle, center: [2, 2], radius: 1, value: 0.9}}
""")
    a, b = F32(0.25), F32(0.9)
    eq(V, np.array([[a, a, a, a], [a, b, b, a], [a, b, b, a], [a, a, a, a]], F32))


@check
def circle_4x4_aa2():
    # aa 2: pixel (1,1) sub-samples (1.25|1.75, 1.25|1.75); (1.25, 1.25) has d^2 = 1.125 > 1,
    # the other three are inside: c = 3/4. Pixel (0,1): x 0.25|0.75 -> dx >= 1.25: c = 0.
    # P' = 0.5*(1 - 0.75) + 1*0.75 = 0.875
    V = values("""tessera: 1
root: {size: [4, 4], fill: 0.5, source: {shape: circle, center: [2, 2], radius: 1, aa: 2}}
""")
    a, b = F32(0.5), F32(0.875)
    eq(V, np.array([[a, a, a, a], [a, b, b, a], [a, b, b, a], [a, a, a, a]], F32))


@check
def aa_mix_is_double_then_float():
    # fill 0.1f, value 0.7f, aa 3, a rect covering sub-samples i = 0, 1 of 3 in x, all in y:
    # c = 6/9; P' = (double)0.1f*(1 - 6/9) + (double)0.7f*(6/9), rounded once.
    V = values("""tessera: 1
root: {size: [1, 1], fill: 0.1, source: {shape: rect, rect: [0, 0, 0.6, 1], value: 0.7, aa: 3}}
""")
    c = 6 / 9
    want = F32(float(F32(0.1)) * (1 - c) + float(F32(0.7)) * c)
    eq(V, np.array([[want]], F32))


@check
def rect_edges_inclusive():
    # rect [0.5, 0.5, 2, 1]: px in [0.5, 2.5] -> columns 0, 1, 2; py in [0.5, 1.5] -> rows 0, 1
    V = values("""tessera: 1
root: {size: [5, 3], source: {shape: rect, rect: [0.5, 0.5, 2, 1]}}
""")
    eq(V, np.array([[1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]], F32))


@check
def ellipse_and_ring():
    # ellipse centre (2.5, 1.5), radii [2, 1]: pixel centres (0.5..4.5, 0.5..2.5);
    # (0.5, 1.5): (-2/2)^2 = 1 <= 1 inside; (1.5, 0.5): 0.25 + 1 > 1 outside.
    V = values("""tessera: 1
root: {size: [5, 3], source: {shape: ellipse, center: [2.5, 1.5], radii: [2, 1]}}
""")
    eq(V, np.array([[0, 0, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 1, 0, 0]], F32))
    # ring radii [1, 1.5] around (2.5, 2.5): d^2 in [1, 2.25]: distance 1 (4-neighbours) in,
    # sqrt(2) diagonals in (2 <= 2.25), centre (0) out, distance 2 out.
    V = values("""tessera: 1
root: {size: [5, 5], source: {shape: ring, center: [2.5, 2.5], radii: [1, 1.5]}}
""")
    eq(V, np.array([[0, 0, 0, 0, 0], [0, 1, 1, 1, 0], [0, 1, 0, 1, 0], [0, 1, 1, 1, 0],
                    [0, 0, 0, 0, 0]], F32))


@check
def polygon_even_odd():
    # pentagram: the centre pentagon is crossed twice -> outside under even-odd; a tip is in.
    V = values("""tessera: 1
root:
  size: [41, 41]
  source: {shape: polygon, points: [[20.5, 0.5], [32.5, 38.5], [0.5, 14.5], [40.5, 14.5], [8.5, 38.5]]}
""")
    assert V[20, 20] == 0, "centre of a pentagram must be outside (even-odd)"
    assert V[5, 20] == 1, "top tip must be inside"
    assert V[16, 3] == 1, "left tip must be inside"
    # a square given with its first point repeated: vertices on pixel centres; the strict
    # (y > py) tests put the top edge row in and the bottom edge row out; px < x puts the
    # left column in and the right column out.
    V = values("""tessera: 1
root: {size: [5, 5], source: {shape: polygon, points: [[1.5, 1.5], [3.5, 1.5], [3.5, 3.5], [1.5, 3.5], [1.5, 1.5]]}}
""")
    want = np.zeros((5, 5), F32)
    want[1:3, 1:3] = 1
    eq(V, want)


@check
def gradients():
    V = values("""tessera: 1
root: {size: [4, 1], source: {gradient: linear, from: [0, 0], to: [4, 0], values: [0, 1]}}
""")
    eq(V, np.array([[0.125, 0.375, 0.625, 0.875]], F32))
    V = values("""tessera: 1
root: {size: [2, 1], fill: 0.5, source: {gradient: radial, center: [0, 0], radius: 1, values: [1, 0]}}
""")
    eq(V, np.array([[F32(1.0 - math.sqrt(0.5)), 0.0]], F32))


# --- PNG -------------------------------------------------------------------------------------

@check
def png_roundtrip_every_type():
    rng = np.random.default_rng(1)
    d = tempfile.mkdtemp(prefix="oracle_png_")
    for ct, depths in ((0, (1, 2, 4, 8, 16)), (2, (8, 16)), (3, (1, 2, 4, 8)), (4, (8, 16)),
                       (6, (8, 16))):
        for depth in depths:
            for interlace in (False, True):
                for w, h in ((1, 1), (3, 2), (13, 9)):
                    ch = tinypng.CHANNELS[ct]
                    s = rng.integers(0, 1 << depth, size=(h, w, ch))
                    pal = None
                    if ct == 3:
                        pal = [tuple(int(v) for v in rng.integers(0, 256, 3))
                               for _ in range(1 << depth)]
                    p = os.path.join(d, "t.png")
                    tinypng.write_png(p, s, ct, depth, palette=pal, interlace=interlace)
                    got, gct, gdepth, gpal = oracle.read_png(p)
                    eq(got, s, "ct %d depth %d interlace %s %dx%d" % (ct, depth, interlace, w, h))
                    assert gct == ct and gdepth == depth


@check
def png_values_formulas():
    d = tempfile.mkdtemp(prefix="oracle_png_")
    p = os.path.join(d, "a.png")
    tinypng.write_png(p, np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]]), 2, 8)
    want = [0.299, 0.587, 0.114, (0.299 * 10 + 0.587 * 20 + 0.114 * 30) / 255.0]
    eq(oracle.png_values(p), np.array([want], F32))
    tinypng.write_png(p, np.array([[[65535, 65535, 0, 7]]]), 6, 16)  # alpha ignored
    eq(oracle.png_values(p), np.array([[(0.299 * 65535 + 0.587 * 65535) / 65535.0]], F32))
    tinypng.write_png(p, np.array([[0, 1, 2, 3]]), 0, 2)  # gray 2-bit: max 3
    eq(oracle.png_values(p), np.array([[0, 1 / 3, 2 / 3, 1]], F32))
    tinypng.write_png(p, np.array([[1, 0]]), 3, 1, palette=[(10, 200, 30), (250, 5, 128)])
    eq(oracle.png_values(p), np.array([[(0.299 * 250 + 0.587 * 5 + 0.114 * 128) / 255,
                                        (0.299 * 10 + 0.587 * 200 + 0.114 * 30) / 255]], F32))
    tinypng.write_png(p, np.array([[[40000, 3]]]), 4, 16)  # gray+alpha 16
    eq(oracle.png_values(p), np.array([[40000 / 65535]], F32))


# --- repeat / repeat-vector ------------------------------------------------------------------

@check
def repeat_wrap_negative_offsets():
    # child 3x2 [[a b c], [d e f]], offset (-1, -3), parent 5x4:
    # target[y][x] = child[(y + 3) mod 2][(x + 1) mod 3]
    C = np.arange(1, 7, dtype=F32).reshape(2, 3) / F32(8)
    L, cov = oracle.lattice(C, -1, -3, (3, 0), (0, 2), "first", None, 5, 4)
    want = np.array([[C[(y + 3) % 2][(x + 1) % 3] for x in range(5)] for y in range(4)], F32)
    eq(L, want)
    assert cov.all()
    V = values("""tessera: 1
nodes:
  c:
    size: [3, 2]
    children:
      - {trait: pattern, offset: [0, 0], node: {size: [1, 1], fill: 0.125}}
      - {trait: pattern, offset: [1, 0], node: {size: [1, 1], fill: 0.25}}
      - {trait: pattern, offset: [2, 0], node: {size: [1, 1], fill: 0.375}}
      - {trait: pattern, offset: [0, 1], node: {size: [1, 1], fill: 0.5}}
      - {trait: pattern, offset: [1, 1], node: {size: [1, 1], fill: 0.625}}
      - {trait: pattern, offset: [2, 1], node: {size: [1, 1], fill: 0.75}}
root:
  size: [5, 4]
  children: [{trait: repeat, ref: c, offset: [-1, -3]}]
""")
    eq(V, want)


@check
def repeat_gaps_and_region():
    # period [3, 1] with a 2x1 child [0.5, 0.25]: column 2 (mod 3) is a gap -> not covered,
    # keeps the fill 0.75 (both rows: the period is 1 in y). The second edge adds the same
    # repeat, clipped by region [1, 1, 3, 1] to columns 1..3 of row 1: 0.25 + 0.25, gap, 0.5 + 0.5.
    V = values("""tessera: 1
nodes:
  c:
    size: [2, 1]
    fill: 0.5
    children: [{trait: pattern, offset: [1, 0], node: {size: [1, 1], fill: 0.25}}]
root:
  size: [6, 2]
  fill: 0.75
  children:
    - {trait: repeat, ref: c, period: [3, 1]}
    - {trait: repeat, ref: c, period: [3, 1], offset: [0, 1], region: [1, 1, 3, 1], blend: add}
""")
    eq(V, np.array([[0.5, 0.25, 0.75, 0.5, 0.25, 0.75],
                    [0.5, 0.5, 0.75, 1.0, 0.25, 0.75]], F32))


@check
def average_of_two_copies():
    # child [0.5, 0, 0.25], u [2, 0]: pixel 0 sees copy i=-1 (child x 2 = 0.25) then i=0 (0.5):
    # (0.25 + 0.5) / 2 = 0.375; pixel 1 sees only a zero (count 0) -> 0, still covered.
    C = np.array([[0.5, 0, 0.25]], F32)
    L, cov = oracle.lattice(C, 0, 0, (2, 0), (0, 1), "average", None, 5, 1)
    eq(L, np.array([[0.375, 0, 0.375, 0, 0.375]], F32))
    assert cov.all()
    # float32: (0.1f + 0.2f) / 2 in float32
    C = np.array([[0.1, 0.2]], F32)
    L, _ = oracle.lattice(C, 0, 0, (1, 0), (0, 1), "average", None, 3, 1)
    eq(L[0, 1], (F32(0.2) + F32(0.1)) / F32(2))
    # mask nonzero removes the zero-average pixels (seed case 2)
    V = values("""tessera: 1
nodes:
  c:
    size: [3, 1]
    fill: 0.5
    children: [{trait: pattern, offset: [1, 0], node: {size: [1, 1], fill: 0.0}},
               {trait: pattern, offset: [2, 0], node: {size: [1, 1], fill: 0.25}}]
root:
  size: [5, 1]
  fill: 0.125
  children: [{trait: repeat-vector, ref: c, u: [2, 0], v: [0, 1], mask: nonzero}]
""")
    eq(V, np.array([[0.375, 0.125, 0.375, 0.125, 0.375]], F32))


@check
def copy_order_j_then_i():
    # 2x2 motif rows y: [[0, 2^-24], [2^-23, 1]] on the unit lattice. Interior pixel (x, y)
    # sees copies (x-1,y-1), (x,y-1), (x-1,y), (x,y) in that order (j major), i.e. motif
    # (1,1)=1, (0,1)=2^-23, (1,0)=2^-24, (0,0)=0. float32: 1 + 2^-23 exact, + 2^-24 is a tie
    # -> even -> 1 + 2^-22. Average: count 3 (zero excluded).
    e24, e23 = 2.0 ** -24, 2.0 ** -23
    C = np.array([[0, e24], [e23, 1]], F32)
    s = F32(1) + F32(e23)
    s = s + F32(e24)
    assert float(s) == 1 + 2 * e23
    L, _ = oracle.lattice(C, 0, 0, (1, 0), (0, 1), "average", None, 4, 4)
    eq(L[2, 2], F32(1 + 2 * e23) / F32(3))
    assert L[2, 2] != F32(1 + e23) / F32(3)  # the i-major order would give this
    L, _ = oracle.lattice(C, 0, 0, (1, 0), (0, 1), "add", None, 4, 4)
    eq(L[2, 2], F32(1 + 2 * e23))
    # first = (x-1, y-1) = motif (1,1) = 1; max = 1
    L, _ = oracle.lattice(C, 0, 0, (1, 0), (0, 1), "first", None, 4, 4)
    eq(L[2, 2], F32(1))
    # with v = [0, -1] the copy order (ascending j) runs upward: the first copy over (x, y) is
    # (i, j) = (x-1, -y) at row y, giving motif (1, 0) = 2^-24
    L, _ = oracle.lattice(C, 0, 0, (1, 0), (0, -1), "first", None, 4, 4)
    eq(L[2, 2], F32(e24))


@check
def lattice_literal_crosscheck():
    # compare the oracle's lattice with a literal per-pixel enumeration of all (i, j)
    rng = np.random.default_rng(7)
    for trial in range(100):
        hc, wc = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        C = (rng.integers(0, 4, size=(hc, wc)) / F32(3)).astype(F32)
        while True:
            u = tuple(int(v) for v in rng.integers(-4, 5, 2))
            v = tuple(int(v) for v in rng.integers(-4, 5, 2))
            if u[0] * v[1] - u[1] * v[0] != 0:
                break
        ox, oy = (int(t) for t in rng.integers(-9, 9, 2))
        W, H = 9, 7
        region = None if trial % 2 else [int(rng.integers(-3, 5)), int(rng.integers(-3, 4)),
                                        int(rng.integers(1, 10)), int(rng.integers(1, 8))]
        for mode in ("first", "max", "add", "average"):
            L, cov = oracle.lattice(C, ox, oy, u, v, mode, region, W, H)
            for y in range(H):
                for x in range(W):
                    inreg = region is None or (region[0] <= x < region[0] + region[2] and
                                               region[1] <= y < region[1] + region[3])
                    # every child pixel (cx, cy) that could land on (x, y): the copy is at
                    # (x - cx, y - cy); keep it when that is a lattice point (Cramer's rule)
                    found = []
                    det = u[0] * v[1] - u[1] * v[0]
                    for cy in range(hc):
                        for cx in range(wc):
                            qx, qy = x - cx - ox, y - cy - oy
                            ni, nj = qx * v[1] - qy * v[0], u[0] * qy - u[1] * qx
                            if ni % det == 0 and nj % det == 0:
                                found.append((nj // det, ni // det, C[cy, cx]))
                    vals = [t for _, _, t in sorted(found, key=lambda f: (f[0], f[1]))]
                    want_cov = inreg and bool(vals)
                    assert cov[y, x] == want_cov, (trial, mode, x, y)
                    if not want_cov:
                        continue
                    if mode == "first":
                        w = vals[0]
                    elif mode == "max":
                        w = max(vals)
                    elif mode == "add":
                        w = vals[0]
                        for t in vals[1:]:
                            w = F32(w + t)
                    else:
                        nz = [t for t in vals if t != 0]
                        w = F32(0)
                        if nz:
                            s = nz[0]
                            for t in nz[1:]:
                                s = F32(s + t)
                            w = F32(s / F32(len(nz)))
                    assert L[y, x] == w, (trial, mode, x, y, L[y, x], w)


# --- distance --------------------------------------------------------------------------------

@check
def distance_values():
    # 5x5 child, one mask pixel at (2, 2), dmax 2, linear: a(0,0) = 8 -> clamped 4 -> 0;
    # a(1,2) = 1 -> 1 - 1/2; a(1,1) = 2 -> 1 - sqrt(2)/2; a(2,2) = 0 -> 1
    C = np.zeros((5, 5), F32)
    C[2, 2] = 1
    L = oracle.distance_layer(C, {"dmax": 2})
    assert L[0, 0] == 0 and L[2, 1] == F32(0.5) and L[2, 2] == 1
    assert L[1, 1] == F32(1 - math.sqrt(2) / 2)
    L = oracle.distance_layer(C, {"dmax": 2, "profile": "sphere", "scale": 2, "bias": -0.5})
    assert L[2, 1] == F32(-0.5 + 2 * math.sqrt(0.75))
    L = oracle.distance_layer(C, {"dmax": 2, "profile": "cosine"})
    assert L[2, 1] == F32(0.5 * (1 + math.cos(math.pi / 2)))
    L = oracle.distance_layer(C, {"dmax": 2, "profile": {"gaussian": 1.5}})
    assert L[1, 1] == F32(math.exp(-2.0 / 4.5))
    # threshold: strict compare; no mask pixel -> every a = dmax^2
    L = oracle.distance_layer(C, {"dmax": 3, "threshold": 1.0, "bias": 0.25})
    eq(L, np.full((5, 5), F32(0.25)))
    # points profile: below d0 -> z0, from dn on -> zn, linear between
    prof = {"points": [[1, 0.5], [2, 1.0], [3, 0.0]]}
    f = oracle.profile_fn(prof, 5)
    assert f(0.5) == 0.5 and f(1) == 0.5 and f(1.5) == 0.75 and f(2.5) == 0.5 and f(3) == 0
    assert f(4) == 0.0
    f = oracle.profile_fn({"points": [[2, 0.3]]}, 5)
    assert f(0) == 0.3 and f(2) == 0.3 and f(5) == 0.3


@check
def distance_exact_vs_brute_force():
    rng = np.random.default_rng(3)
    for trial in range(30):
        h, w = int(rng.integers(1, 14)), int(rng.integers(1, 14))
        M = rng.random((h, w)) < [0.0, 0.03, 0.1, 0.5][trial % 4]
        dmax = int(rng.integers(1, 9))
        eq(oracle.sqdist_exact(M, dmax), oracle.sqdist_brute(M, dmax),
           "trial %d %dx%d dmax %d" % (trial, w, h, dmax))


# --- blur ------------------------------------------------------------------------------------

@check
def blur_basics():
    C = np.arange(12, dtype=F32).reshape(3, 4) / F32(16)
    # [[1]] is the identity; [[0, 0, 1]] reads C(x + 1): a correlation, not a convolution
    eq(oracle.blur_layer(C, {"kernel": [[1]]}), C)
    want = np.zeros_like(C)
    want[:, :3] = C[:, 1:]
    eq(oracle.blur_layer(C, {"kernel": [[0, 0, 1]]}), want)
    eq(oracle.blur_layer(C, {"kernel": [[0, 0, 1]], "edge": "wrap"}), np.roll(C, -1, axis=1))
    want[:, 3] = C[:, 3]
    eq(oracle.blur_layer(C, {"kernel": [[0, 0, 1]], "edge": "clamp"}), want)
    # rows of K are y: [[0], [0], [1]] reads C(x, y + 1)
    want = np.zeros_like(C)
    want[:2] = C[1:]
    eq(oracle.blur_layer(C, {"kernel": [[0], [0], [1]]}), want)
    # Gaussian taps: r = ceil(4 s), normalised
    r, g = oracle.gauss_taps(1.5)
    assert r == 6 and len(g) == 13 and abs(sum(g) - 1) < 1e-15 and g[6] == max(g)
    r, g = oracle.gauss_taps(0.3)
    assert r == 2
    # constant image: wrap and clamp keep it, zero darkens the border
    K = np.full((6, 7), F32(0.5))
    for edge in ("wrap", "clamp"):
        B = oracle.blur_layer(K, {"sigma": 1.5, "edge": edge})
        assert np.abs(B - F32(0.5)).max() <= 1e-7, edge
    B = oracle.blur_layer(K, {"sigma": 1.5})
    assert B[0, 0] < B[3, 3] < 0.5 + 1e-7


# --- blends, output --------------------------------------------------------------------------

@check
def blends_float32():
    P = np.array([[0.1, 0.5, 0.7]], F32)
    L = np.array([[0.2, 0.25, 0.9]], F32)
    cov = np.array([[True, True, False]])
    eq(oracle.blend("add", P, L, cov), np.array([[F32(0.1) + F32(0.2), 0.75, 0.7]], F32))
    eq(oracle.blend("multiply", P, L, cov), np.array([[F32(0.1) * F32(0.2), 0.125, 0.7]], F32))
    eq(oracle.blend("max", P, L, cov), np.array([[0.2, 0.5, 0.7]], F32))
    eq(oracle.blend("min", P, L, cov), np.array([[0.1, 0.25, 0.7]], F32))
    eq(oracle.blend("over", P, L, cov), np.array([[0.2, 0.25, 0.7]], F32))


@check
def output_conversion():
    V = np.array([[0.0, 0.5, 1.0, 0.25, -3.0, 7.0]], F32)
    S, depth = oracle.to_samples(V, {})
    eq(S, np.array([[0, 128, 255, 64, 0, 255]], np.uint8))  # 127.5 + 0.5 -> 128
    S, _ = oracle.to_samples(V, {"depth": 16})
    eq(S, np.array([[0, 32768, 65535, 16384, 0, 65535]], np.uint16))
    # calibration [[0, 0], [0.5, 0.42], [1, 1]]: 0.5 -> 0.42 -> floor(107.1 + 0.5) = 107;
    # 0.25 -> 0.21 -> floor(53.55 + 0.5) = 54; 1 -> c_n = 1 -> 255
    cal = [[0, 0], [0.5, 0.42], [1, 1]]
    S, _ = oracle.to_samples(V, {"calibration": cal})
    eq(S, np.array([[0, 107, 255, 54, 0, 255]], np.uint8))
    # inverted range [1, 0]: 0.25 -> t = 0.75 -> floor(191.25 + 0.5) = 191
    S, _ = oracle.to_samples(V, {"range": [1, 0]})
    eq(S, np.array([[255, 128, 0, 191, 255, 0]], np.uint8))
    # a value just below the .5 step: float32(0.1) = 0.100000001490116 -> 25.50000038 -> 26
    S, _ = oracle.to_samples(np.array([[0.1]], F32), {})
    eq(S, np.array([[26]], np.uint8))


@check
def swath_orders():
    S = np.arange(15, dtype=np.uint8).reshape(3, 5)

    def order(**sw):
        return list(np.concatenate([p.reshape(-1) for p in oracle.order_samples(
            S, {"order": "swath", "swath": dict(width=2, **sw)})]))
    eq(order(), [0, 1, 5, 6, 10, 11, 2, 3, 7, 8, 12, 13, 4, 9, 14])
    eq(order(serpentine=True), [0, 1, 5, 6, 10, 11, 12, 13, 7, 8, 2, 3, 4, 9, 14])
    eq(order(start="top-right"), [3, 4, 8, 9, 13, 14, 1, 2, 6, 7, 11, 12, 0, 5, 10])
    eq(order(start="top-right", serpentine=True),
       [3, 4, 8, 9, 13, 14, 11, 12, 6, 7, 1, 2, 0, 5, 10])
    eq(order(start="bottom-left"), [10, 11, 5, 6, 0, 1, 12, 13, 7, 8, 2, 3, 14, 9, 4])
    eq(order(start="bottom-left", serpentine=True),
       [10, 11, 5, 6, 0, 1, 2, 3, 7, 8, 12, 13, 14, 9, 4])
    eq(order(start="bottom-right"), [13, 14, 8, 9, 3, 4, 11, 12, 6, 7, 1, 2, 10, 5, 0])
    eq(order(start="bottom-right", serpentine=True),
       [13, 14, 8, 9, 3, 4, 1, 2, 6, 7, 11, 12, 10, 5, 0])
    eq(list(oracle.order_samples(S, {})[0].reshape(-1)), list(range(15)))


@check
def rows_crop_and_bytes():
    p = design("""tessera: 1
output: {depth: 16, order: swath, swath: {width: 2, serpentine: true, start: bottom-right}}
root: {size: [3, 4], source: {gradient: linear, from: [0, 0], to: [3, 4], values: [0, 1]}}
""")
    V = oracle.Design(p).render_root()
    S, _ = oracle.to_samples(V[1:3], {"depth": 16})
    # crop rows 1..2 (height 2), bottom-right: swath 0 = columns 1..2 bottom-up, swath 1 =
    # column 0 top-down (serpentine)
    want = [S[1, 1], S[1, 2], S[0, 1], S[0, 2], S[0, 0], S[1, 0]]
    got = oracle.render_bytes(p, (1, 3))
    eq(np.frombuffer(got, "<u2"), np.array(want, np.uint16))


@check
def yaml_reals_without_dot():
    # PyYAML reads 75e-2 as a string; the oracle must read it as strtod would
    V = values("""tessera: 1
root: {size: [1, 1], fill: 75e-2}
""")
    eq(V, np.array([[0.75]], F32))


@check
def every_design_renders():
    ds = sorted(glob.glob(os.path.join(HERE, "designs", "*.yaml")))
    assert len(ds) >= 15, "expected the oracle designs"
    for p in ds:
        with open(p) as f:
            text = f.read()
        assert text.startswith("#"), p + ": must start with a comment saying what it checks"
        full = oracle.render_bytes(p)
        assert len(full) > 0
        for line in text.splitlines():
            if line.startswith("# rows:"):
                y0, y1 = (int(t) for t in line.split(":", 1)[1].split(":"))
                part = oracle.render_bytes(p, (y0, y1))
                d = oracle.Design(p)
                out = d.doc.get("output") or {}
                bps = 2 if int(out.get("depth", 8)) == 16 else 1
                w = oracle.Design(p).size(d.doc["root"])[0]
                assert len(part) == (y1 - y0) * w * bps, p


def main():
    failed = 0
    for fn in CHECKS:
        try:
            fn()
            print("ok   %s" % fn.__name__)
        except Exception:
            failed += 1
            print("FAIL %s" % fn.__name__)
            traceback.print_exc()
    print("%d passed, %d failed" % (len(CHECKS) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
