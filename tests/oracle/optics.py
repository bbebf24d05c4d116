#!/usr/bin/env python3
"""Reference for docs/optics.md (surface sources, wrapping, levels, exact-area zone edges),
written from that page alone, none of nodes/surface*: whole numpy arrays, numpy's own arctan2,
powers and cosines instead of the engine's Horner and complex powers, zone radii by bisection on
the height itself, and each zone edge's area in a pixel by a 4000-strip midpoint rule (exact
in y) instead of the engine's circular segments.

  optics.py DESIGN.yaml ENGINE.raw
      DESIGN: one root node, its fill and a `surface:` source (no children); ENGINE: its
      samples from `tessera render`. Exit 0 when every sample is within one output step of the
      reference, 1 with the worst pixels otherwise."""
import math
import sys

import numpy as np
import yaml


def fnum(v):
    return float(v)


class Surf:
    def __init__(self, s):
        self.s = s
        self.kind = s["surface"]
        self.cx, self.cy = (fnum(v) for v in s.get("center", s.get("origin", [0, 0])))
        self.ap = fnum(s.get("aperture", s.get("radius", 0)) or 0)
        if self.kind == "grating":
            self.ap = 0.0
        self.angle = math.radians(fnum(s.get("angle", 0)))
        self.wrap = fnum(s.get("wrap", 0))
        self.levels = int(s.get("levels", 0))
        self.aa = bool(s.get("aa", False))
        if self.kind in ("vortex", "grating"):
            self.wrap = fnum(s["height"])
        self.cap = s.get("relief", "sag") == "cap"
        self.zrim = 0.0
        if self.cap:
            if self.kind == "toroid":
                self.zrim = max(self.raw(np.array(self.ap), np.array(0.0)),
                                self.raw(np.array(0.0), np.array(self.ap)))
            elif self.kind == "cylinder":
                self.zrim = self.raw_r(np.array(self.ap))
            else:
                self.zrim = self.raw_r(np.array(self.ap))

    @staticmethod
    def conic(R, k, r2):
        c = 0.0 if R == 0 else 1.0 / R
        t = 1.0 - (1.0 + k) * c * c * r2
        return c * r2 / (1.0 + np.sqrt(np.maximum(t, 0.0)))

    def raw_r(self, r):
        """sag at radius r (asphere, cylinder across its axis, axicon), no relief"""
        s = self.s
        if self.kind == "axicon":
            return fnum(s["slope"]) * r
        z = self.conic(fnum(s.get("roc", 0)), fnum(s.get("conic", 0)), r * r)
        for p, a in s.get("terms", []) or []:
            z = z + fnum(a) * r ** int(p)
        return z

    def raw(self, x, y):
        """toroid (biconic) in its own axes, no relief"""
        R = [fnum(v) for v in self.s.get("roc", [0, 0])]
        K = [fnum(v) for v in self.s.get("conic", [0, 0])]
        c = [0.0 if v == 0 else 1.0 / v for v in R]
        num = c[0] * x * x + c[1] * y * y
        t = 1.0 - (1 + K[0]) * c[0] ** 2 * x * x - (1 + K[1]) * c[1] ** 2 * y * y
        return num / (1.0 + np.sqrt(np.maximum(t, 0.0)))

    def radial(self, r):
        z = self.raw_r(r)
        return self.zrim - z if self.cap else z

    def height(self, dx, dy):
        k, ca, sa = self.kind, math.cos(self.angle), math.sin(self.angle)
        if k in ("asphere", "axicon"):
            return self.radial(np.hypot(dx, dy))
        if k == "cylinder":
            return self.radial(np.abs(dy * ca - dx * sa))
        if k == "toroid":
            z = self.raw(dx * ca + dy * sa, dy * ca - dx * sa)
            return self.zrim - z if self.cap else z
        if k == "vortex":
            th = np.mod(np.arctan2(dy * ca - dx * sa, dx * ca + dy * sa), 2 * math.pi)
            return fnum(self.s["height"]) * int(self.s["charge"]) * th / (2 * math.pi)
        if k == "grating":
            return fnum(self.s["height"]) * (dx * ca + dy * sa) / fnum(self.s["period"])
        if k == "zernike":
            R = fnum(self.s["radius"])
            X, Y = dx / R, dy / R
            rho, th = np.hypot(X, Y), np.arctan2(Y, X)
            z = np.zeros_like(dx)
            for j, coef in self.s["terms"]:
                n = int(math.ceil((-3 + math.sqrt(9 + 8 * int(j))) / 2))
                m = 2 * int(j) - n * (n + 2)
                am = abs(m)
                Rn = sum((-1) ** q * math.factorial(n - q) /
                         (math.factorial(q) * math.factorial((n + am) // 2 - q) *
                          math.factorial((n - am) // 2 - q)) * rho ** (n - 2 * q)
                         for q in range((n - am) // 2 + 1))
                z = z + fnum(coef) * Rn * (np.cos(am * th) if m >= 0 else np.sin(am * th))
            return z
        raise SystemExit("unknown surface " + k)

    def wrapped(self, z):
        H, N = self.wrap, self.levels
        if H <= 0:
            return z
        w = np.mod(z, H)
        if N:
            return H * np.clip(np.floor(w / H * N), 0, N - 1) / N
        return w


def strip_areas(x0, y0, rho, n=4000):
    """areas of unit pixels [x0, x0+1] x [y0, y0+1] inside discs of radius rho at 0 (arrays)"""
    out = np.empty(len(rho))
    for c in range(0, len(rho), 500):
        xs = x0[c:c + 500, None] + (np.arange(n) + 0.5)[None, :] / n
        r = rho[c:c + 500, None]
        s = np.sqrt(np.maximum(r * r - xs * xs, 0.0))
        y = y0[c:c + 500, None]
        top, bot = np.minimum(s, y + 1), np.maximum(-s, y)
        out[c:c + 500] = np.sum(np.maximum(top - bot, 0.0), axis=1) / n
    return out


def mix_all(sf, x0, y0, rlo, rhi, zc):
    """pixels' exact-area mixes over the zone edges their radial spans cross (monotone z)"""
    step = sf.wrap / sf.levels if sf.levels else sf.wrap
    za, zb = sf.radial(rlo), sf.radial(rhi)
    pix, ts = [], []
    for i in range(len(rlo)):
        lo, hi = min(za[i], zb[i]), max(za[i], zb[i])
        for k in range(math.floor(lo / step) + 1, math.floor(hi / step) + 1):
            if lo < k * step < hi:
                pix.append(i)
                ts.append(k * step)
    pix, ts = np.array(pix, dtype=np.int64), np.array(ts)
    a, b = rlo[pix].copy(), rhi[pix].copy()
    zpa = za[pix]
    for _ in range(60):  # bisection on the height itself
        m = (a + b) / 2
        same = (sf.radial(m) - ts) * (zpa - ts) > 0
        a, b = np.where(same, m, a), np.where(same, b, m)
    rho = (a + b) / 2
    areas = strip_areas(x0[pix], y0[pix], rho)
    out = np.empty(len(rlo))
    for i in range(len(rlo)):
        sel = np.nonzero(pix == i)[0] if len(pix) else []
        order = np.argsort(rho[sel]) if len(sel) else []
        rs = [float(rho[sel][o]) for o in order]
        ar = [float(areas[sel][o]) for o in order]
        edges, cum = [rlo[i]] + rs + [rhi[i]], [0.0] + ar + [1.0]
        v = 0.0
        for e in range(len(edges) - 1):
            zm = float(sf.radial(np.array((edges[e] + edges[e + 1]) / 2)))
            if sf.levels:
                g = float(sf.wrapped(np.array(zm)))
            else:
                g = zc[i] - math.floor(zm / sf.wrap) * sf.wrap
            v += (cum[e + 1] - cum[e]) * g
        out[i] = v
    return out


def render(doc):
    root = doc["root"]
    w, h = (int(v) for v in root["size"])
    fill = float(np.float32(root.get("fill", 0.0)))
    sf = Surf(root["source"])
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = x + 0.5 - sf.cx, y + 0.5 - sf.cy
    z = sf.height(dx, dy)
    v = sf.wrapped(z)
    if sf.ap > 0:
        d2 = (dy * math.cos(sf.angle) - dx * math.sin(sf.angle)) ** 2 if sf.kind == "cylinder" \
            else dx * dx + dy * dy
        inside = d2 <= sf.ap * sf.ap
    else:
        inside = np.ones_like(z, dtype=bool)
    v = np.where(inside, v, fill)
    if sf.aa and sf.wrap > 0:
        x0, y0 = x - sf.cx, y - sf.cy
        nx = np.where(x0 > 0, x0, np.where(x0 + 1 < 0, x0 + 1, 0.0))
        ny = np.where(y0 > 0, y0, np.where(y0 + 1 < 0, y0 + 1, 0.0))
        fx, fy = np.maximum(-x0, x0 + 1), np.maximum(-y0, y0 + 1)
        rlo, rhi = np.hypot(nx, ny), np.minimum(np.hypot(fx, fy), sf.ap)
        sel = inside & (rlo < rhi)
        v[sel] = mix_all(sf, x0[sel], y0[sel], rlo[sel], rhi[sel], z[sel])
    return v.astype(np.float32).astype(np.float64)


def samples(doc, v):
    out = doc.get("output") or {}
    depth = int(out.get("depth", 8))
    lo, hi = (float(t) for t in out.get("range", [0.0, 1.0]))
    mx = 255 if depth == 8 else 65535
    t = np.clip((v - lo) / (hi - lo), 0.0, 1.0)
    return np.floor(t * mx + 0.5).astype(np.int64), depth


def main():
    design, raw = sys.argv[1:3]
    doc = yaml.safe_load(open(design))
    want, depth = samples(doc, render(doc))
    got = np.fromfile(raw, dtype=np.uint8 if depth == 8 else np.dtype("<u2")).astype(np.int64)
    if got.size != want.size:
        print("size differs: engine %d samples, oracle %d" % (got.size, want.size))
        return 1
    got = got.reshape(want.shape)
    d = np.abs(got - want)
    bad = np.argwhere(d > 1)
    if bad.size:
        for j, i in bad[:5]:
            print("pixel (%d, %d): engine %d, oracle %d" % (i, j, got[j, i], want[j, i]))
        print("%d samples beyond one step" % len(bad))
        return 1
    print("max |diff| %d over %d samples" % (int(d.max()), d.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
