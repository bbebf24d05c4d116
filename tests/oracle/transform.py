"""An independent resampler for the transform trait, written from docs/transforms.md.

render(img, case, W, H, fill) gives the root's values (float64, H x W) for a root of W x H
filled with `fill` and one transform edge whose child is the float image `img` (h x w):
  - the forward map as a 3 x 3 matrix: translate(offset + shift + pivot) . scale .
    rotate (counterclockwise on screen, y down) . mirror (x -> -x) . translate(-pivot),
    inverted by numpy.linalg.inv;
  - each parent pixel centre (x + 0.5, y + 0.5) through it to (u, v);
  - coverage and the values past the edges by `outside` (none, zero, clamp, wrap);
  - nearest, bilinear (taps at floor(u - 0.5) + {0, 1}) or bicubic (Keys, a = -0.5, taps at
    floor(u - 0.5) + {-1, 0, 1, 2}), as whole-array numpy operations.
bilinear_scipy() does the bilinear case again with scipy.ndimage.map_coordinates (order 1),
a third implementation the oracle checks itself against.

`near` marks the pixels whose point lies within 1e-6 px of a coverage edge (or, for nearest,
of a pixel edge), where two correct implementations may round to different sides: the
comparison leaves those out and counts them.
"""

import numpy as np


def inverse_map(case, cw, ch):
    piv = case.get("pivot")
    if piv is None:
        piv = (cw // 2, ch // 2)
    px, py = float(piv[0]), float(piv[1])
    ox, oy = case.get("offset", (0, 0))
    sx, sy = case.get("shift", (0.0, 0.0))
    th = np.deg2rad(case.get("rotate", 0.0))
    c, s = np.cos(th), np.sin(th)
    k = case.get("scale", 1.0)

    def tr(a, b):
        return np.array([[1, 0, a], [0, 1, b], [0, 0, 1]], float)

    rot = np.array([[c, s, 0], [-s, c, 0], [0, 0, 1]], float)
    mir = np.diag([-1.0 if case.get("mirror") else 1.0, 1.0, 1.0])
    fwd = tr(ox + sx + px, oy + sy + py) @ np.diag([k, k, 1.0]) @ rot @ mir @ tr(-px, -py)
    return np.linalg.inv(fwd)


def points(case, cw, ch, W, H):
    inv = inverse_map(case, cw, ch)
    X, Y = np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)
    u = inv[0, 0] * X + inv[0, 1] * Y + inv[0, 2]
    v = inv[1, 0] * X + inv[1, 1] * Y + inv[1, 2]
    return u, v


def keys(d):
    d = np.abs(d)
    return np.where(d <= 1, (1.5 * d - 2.5) * d * d + 1,
                    np.where(d < 2, ((-0.5 * d + 2.5) * d - 4) * d + 2, 0.0))


def gather(img, ix, iy, outside):
    h, w = img.shape
    if outside == "wrap":
        return img[np.mod(iy, h), np.mod(ix, w)]
    if outside == "zero":
        inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        return np.where(inside, img[np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)], 0.0)
    return img[np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]  # none, clamp: nearest pixel


def sample(img, u, v, filt, outside):
    if filt == "nearest":
        return gather(img, np.floor(u).astype(np.int64), np.floor(v).astype(np.int64), outside)
    taps = (0, 1) if filt == "bilinear" else (-1, 0, 1, 2)
    bx = np.floor(u - 0.5).astype(np.int64)
    by = np.floor(v - 0.5).astype(np.int64)
    fx, fy = (u - 0.5) - bx, (v - 0.5) - by
    out = np.zeros(u.shape)
    for j in taps:
        wy = (1 - np.abs(fy - j)) if filt == "bilinear" else keys(fy - j)
        for i in taps:
            wx = (1 - np.abs(fx - i)) if filt == "bilinear" else keys(fx - i)
            out += wy * wx * gather(img, bx + i, by + j, outside)
    return out


def coverage(u, v, cw, ch, filt, outside):
    """covered, and near (within 1e-6 of an edge that decides it)."""
    eps = 1e-6
    if outside in ("clamp", "wrap"):
        cov = np.ones(u.shape, bool)
        near = np.zeros(u.shape, bool)
    else:
        r = 0.0 if (outside == "none" or filt == "nearest") else (0.5 if filt == "bilinear" else 1.5)
        cov = (u > -r) & (u < cw + r) & (v > -r) & (v < ch + r)
        if r == 0.0:
            cov = (u >= 0) & (u < cw) & (v >= 0) & (v < ch)
        near = ((np.abs(u + r) < eps) | (np.abs(u - cw - r) < eps) |
                (np.abs(v + r) < eps) | (np.abs(v - ch - r) < eps))
    if filt == "nearest":
        near |= (np.abs(u - np.round(u)) < eps) | (np.abs(v - np.round(v)) < eps)
    return cov, near


def render(img, case, W, H, fill):
    ch, cw = img.shape
    u, v = points(case, cw, ch, W, H)
    filt = case.get("filter", "bilinear")
    outside = case.get("outside", "none")
    cov, near = coverage(u, v, cw, ch, filt, outside)
    vals = sample(img, u, v, filt, outside)
    return np.where(cov, vals, fill), near


def bilinear_scipy(img, case, W, H, fill):
    from scipy import ndimage
    ch, cw = img.shape
    u, v = points(case, cw, ch, W, H)
    outside = case.get("outside", "none")
    mode = {"none": "nearest", "clamp": "nearest", "zero": "grid-constant",
            "wrap": "grid-wrap"}[outside]
    vals = ndimage.map_coordinates(img, [v - 0.5, u - 0.5], order=1, mode=mode, cval=0.0)
    cov, _ = coverage(u, v, cw, ch, "bilinear", outside)
    return np.where(cov, vals, fill)


def to_samples(vals, depth):
    mx = (1 << depth) - 1
    t = np.clip(vals, 0.0, 1.0)
    return np.floor(t * mx + 0.5).astype(np.int64)
