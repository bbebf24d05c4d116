#!/usr/bin/env python3
"""tessera oracle: an independent whole-image renderer of docs/format.md §2, in numpy.

    python3 tests/oracle/oracle.py DESIGN.yaml -o OUT.raw [--rows Y0:Y1]

Renders the whole root (small designs only: every node is computed as one full array) and
writes exactly the raw samples of docs/format.md §7 (8-bit, or 16-bit little-endian; raster or
swath order). Written from docs/format.md alone; it shares no code with the C engine.

Precision
- Pixel values are numpy float32 arrays. Float32 arithmetic (blends, repeat overlap sums and
  divisions) is done on float32 arrays only, so numpy computes it in float32 (IEEE, no FMA).
- Sources are computed in float64 exactly as the formulas are written (same operation order)
  and rounded once to float32.
- Distance tables are built per entry with Python's math module (the C library's sqrt, cos,
  exp, as the engine would call them), in double, and rounded once to float32.
- The output conversion is done in float64 exactly as §2.4 writes it.
- Blur (the only non-exact trait, tolerance 2e-3) is computed in FLOAT64 throughout: the
  Gaussian taps are computed and normalised in double, the x pass and the y pass accumulate in
  double, and the result is rounded once to float32. An explicit kernel is applied the same way
  (float32 entries promoted to double, sum over j then i, in double).

Decisions (where docs/format.md is silent or ambiguous)
- D1 polygon: the polygon is closed: edges are p[k] -> p[(k+1) mod n] for k = 0..n-1. The
  intersection abscissa is evaluated as ((x2-x1)*(py-y1))/(y2-y1) + x1 (C precedence).
- D2 aa: the pixel is rewritten only where the coverage c > 0 (with c = 0 the formula gives P
  back anyway, except that a -0.0 fill would become +0.0). c = count/(n*n) in double;
  P' = (double)P*(1-c) + (double)value*c, rounded once to float32. Gradients and images ignore aa.
- D3 PNG palette images are expanded through PLTE to 8-bit RGB and then use the RGB formula
  with max = 255, whatever the index bit depth (1/2/4/8). An index beyond PLTE is an error.
- D4 PNG RGB / RGBA: value = (0.299*R + 0.587*G + 0.114*B) / max, evaluated left to right in
  double, max = 2^bitdepth - 1 (255 or 65535). Alpha (RGBA, gray+alpha) is dropped. Gray images
  of 1/2/4 bits use max = 1/3/15 (the sample is not rescaled to 8 bits first).
  Adam7-interlaced PNGs are decoded too (the spec says nothing about interlace).
- D5 repeat: copies at (ox + i*px, oy + j*py); it is exactly repeat-vector with u = [px, 0],
  v = [0, py], including `region` and every `overlap` mode (default first).
- D6 repeat-vector `first` = the copy that comes first in copy order, i.e. the smallest (j, i)
  lexicographically (j major). `max` uses numpy maximum (for equal values the sign of a zero
  may differ from the engine; irrelevant for output bytes). `add` = float32 running sum in copy
  order, starting from the first copy's value. `average` = float32 running sum of the non-zero
  values in copy order, divided (float32) by their count (count as float32); 0.0 where none.
- D7 distance: the squared distance is computed exactly (two separable exact minimum passes,
  equal to the brute-force minimum; tests/oracle/selftest.py checks that against a literal
  brute force). Mask pixels exist only inside the child rectangle. sphere uses
  sqrt(1 - (d/dmax)*(d/dmax)) as written; cosine 0.5*(1 + cos((pi*d)/dmax)); gaussian
  exp((-(d*d)) / ((2*s)*s)).
- D8 blur edge modes for the separable Gaussian: the x pass reads C at the mapped column, the y
  pass reads the x-pass result at the mapped row (zero: 0 outside; clamp: nearest; wrap: floor
  mod, any number of periods). For an explicit kernel each coordinate is mapped on its own
  (zero: 0 when either coordinate is outside).
- D9 swath order: the swaths are cut from the start corner's side, so with a right start
  corner swath 0 is [W - sw, W) and the narrow one (if any) is [0, W mod sw). serpentine
  reverses the row order of every swath with an odd index (counted from the start side).
  --rows Y0:Y1 crops the rendered root to rows [Y0, Y1) first, then orders that crop.
- D10 YAML: PyYAML (YAML 1.1) loads reals like `1e-3` (no dot) as strings; every number is
  converted with float()/int(), so those are read as the C strtod would read them.
- D11 max/min blend: numpy maximum/minimum in float32.
- D12 calibration: the segment index is the largest i with t_i <= t (t < 1); t == 1 gives c_n.
- D13 a node with an image source and no `size` takes the image's size (§2.1 calls size
  required, §2.2 allows omitting it for images).
- D14 blur tolerance in tests/cli/oracle.sh: ceil(2e-3 * max / |hi - lo|) sample steps, at
  least 1 (= 1 step at 8 bit over [0, 1]); blur designs avoid calibration and never add two
  blur errors together.

Speed only (no effect on values): shapes are evaluated inside a window 2 px beyond their
bounding box (no sample outside it can be inside), and blur pads once and slices.
"""

import argparse
import math
import os
import struct
import sys
import zlib

import numpy as np
import yaml

F32 = np.float32
F64 = np.float64


def f32(x):
    """A value-like real as the loader stores it: parsed as double, rounded once to float32."""
    return F32(float(x))


def fl(x):
    return float(x)


def ints(seq):
    return [int(v) for v in seq]


# ---------------------------------------------------------------------------------------------
# PNG decoder (zlib + struct only)

PNG_SIG = b"\x89PNG\r\n\x1a\n"
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    if pb <= pc:
        return b
    return c


def _unfilter(data, pos, width, height, bpp_bits):
    """Reconstruct `height` filtered scanlines starting at data[pos]. Returns (rows, pos)."""
    stride = (width * bpp_bits + 7) // 8
    bpp = max(1, bpp_bits // 8)
    prior = bytearray(stride)
    rows = []
    for _ in range(height):
        ftype = data[pos]
        line = bytearray(data[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        if len(line) != stride:
            raise ValueError("PNG: truncated image data")
        if ftype == 0:
            pass
        elif ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            for i in range(stride):
                line[i] = (line[i] + prior[i]) & 0xFF
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prior[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                ul = prior[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prior[i], ul)) & 0xFF
        else:
            raise ValueError("PNG: bad filter type %d" % ftype)
        rows.append(bytes(line))
        prior = line
    return rows, pos


def _samples(rows, width, channels, depth):
    """Scanline bytes -> int array (h, width, channels)."""
    h = len(rows)
    buf = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(h, -1) if h else \
        np.zeros((0, 0), np.uint8)
    n = width * channels
    if depth == 8:
        s = buf[:, :n].astype(np.int64)
    elif depth == 16:
        s = (buf[:, 0:2 * n:2].astype(np.int64) << 8) | buf[:, 1:2 * n:2].astype(np.int64)
    else:
        per = 8 // depth
        mask = (1 << depth) - 1
        parts = [(buf.astype(np.int64) >> (8 - depth * (k + 1))) & mask for k in range(per)]
        s = np.stack(parts, axis=2).reshape(h, -1)[:, :n]
    return s.reshape(h, width, channels)


def read_png(path):
    """Decode a PNG into (samples int64 array (h, w, channels), color type, bit depth, palette)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != PNG_SIG:
        raise ValueError("%s: not a PNG" % path)
    pos = 8
    ihdr = None
    plte = None
    idat = []
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"PLTE":
            plte = body
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
    w, h, depth, ct, _comp, _filt, interlace = ihdr
    ch = CHANNELS[ct]
    bits = ch * depth
    raw = zlib.decompress(b"".join(idat))
    if interlace == 0:
        rows, _ = _unfilter(raw, 0, w, h, bits)
        s = _samples(rows, w, ch, depth)
    else:
        s = np.zeros((h, w, ch), np.int64)
        p = 0
        for x0, y0, dx, dy in ADAM7:
            pw = (w - x0 + dx - 1) // dx if w > x0 else 0
            ph = (h - y0 + dy - 1) // dy if h > y0 else 0
            if pw == 0 or ph == 0:
                continue
            rows, p = _unfilter(raw, p, pw, ph, bits)
            s[y0::dy, x0::dx, :] = _samples(rows, pw, ch, depth)
    pal = None
    if ct == 3:
        pal = np.frombuffer(plte, dtype=np.uint8).reshape(-1, 3).astype(np.int64)
    return s, ct, depth, pal


def png_values(path):
    """The float32 node values of an image source (docs/format.md §4, decisions D3, D4)."""
    s, ct, depth, pal = read_png(path)
    if ct == 3:
        idx = s[:, :, 0]
        if idx.max(initial=0) >= len(pal):
            raise ValueError("%s: palette index out of range" % path)
        rgb = pal[idx]
        r, g, b = (rgb[:, :, k].astype(F64) for k in range(3))
        v = (0.299 * r + 0.587 * g + 0.114 * b) / 255.0
    elif ct in (2, 6):
        mx = float((1 << depth) - 1)
        r, g, b = (s[:, :, k].astype(F64) for k in range(3))
        v = (0.299 * r + 0.587 * g + 0.114 * b) / mx
    else:  # 0 gray, 4 gray + alpha
        mx = float((1 << depth) - 1)
        v = s[:, :, 0].astype(F64) / mx
    return v.astype(F32)


# ---------------------------------------------------------------------------------------------
# Sources (docs/format.md §4)

def _shape_inside(src):
    """A function (px, py) -> bool array implementing the 'inside' column, in double."""
    shape = src["shape"]
    if shape == "circle":
        cx, cy = (fl(v) for v in src["center"])
        r = fl(src["radius"])
        rr = r * r

        def inside(px, py):
            dx = px - cx
            dy = py - cy
            return dx * dx + dy * dy <= rr
    elif shape == "ellipse":
        cx, cy = (fl(v) for v in src["center"])
        rx, ry = (fl(v) for v in src["radii"])

        def inside(px, py):
            dx = px - cx
            dy = py - cy
            return (dx / rx) * (dx / rx) + (dy / ry) * (dy / ry) <= 1.0
    elif shape == "ring":
        cx, cy = (fl(v) for v in src["center"])
        ri, ro = (fl(v) for v in src["radii"])
        ri2, ro2 = ri * ri, ro * ro

        def inside(px, py):
            dx = px - cx
            dy = py - cy
            d2 = dx * dx + dy * dy
            return (ri2 <= d2) & (d2 <= ro2)
    elif shape == "rect":
        x, y, w, h = (fl(v) for v in src["rect"])
        xw, yh = x + w, y + h

        def inside(px, py):
            return (x <= px) & (px <= xw) & (y <= py) & (py <= yh)
    elif shape == "polygon":
        pts = [(fl(p[0]), fl(p[1])) for p in src["points"]]
        n = len(pts)

        def inside(px, py):
            shape = np.broadcast_shapes(np.shape(px), np.shape(py))
            odd = np.zeros(shape, bool)
            hit = np.empty(shape, bool)
            for k in range(n):
                x1, y1 = pts[k]
                x2, y2 = pts[(k + 1) % n]
                if y1 == y2:
                    continue  # (y1 > py) != (y2 > py) is never true
                cross = (y1 > py) != (y2 > py)
                xi = (x2 - x1) * (py - y1) / (y2 - y1) + x1
                # an edge that does not cross the row can never count: px < -inf is false
                xi = np.where(cross, xi, -np.inf)
                np.less(px, xi, out=hit)
                np.logical_xor(odd, hit, out=odd)
            return odd
    else:
        raise ValueError("unknown shape %r" % shape)
    return inside


def _shape_bounds(src):
    """(xmin, xmax, ymin, ymax) in double outside which no point is inside the shape."""
    shape = src["shape"]
    if shape in ("circle", "ellipse", "ring"):
        cx, cy = (fl(v) for v in src["center"])
        if shape == "circle":
            rx = ry = fl(src["radius"])
        elif shape == "ellipse":
            rx, ry = (fl(v) for v in src["radii"])
        else:
            rx = ry = fl(src["radii"][1])
        return cx - rx, cx + rx, cy - ry, cy + ry
    if shape == "rect":
        x, y, w, h = (fl(v) for v in src["rect"])
        return x, x + w, y, y + h
    xs = [fl(p[0]) for p in src["points"]]
    ys = [fl(p[1]) for p in src["points"]]
    return min(xs), max(xs), min(ys), max(ys)


def _window(lo, hi, n):
    """Pixel index range [a, b) of a node of n pixels holding every sample in [lo, hi], with
    two pixels to spare (rounding in the inside tests cannot reach that far)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0, n
    a = max(0, min(n, int(math.floor(lo)) - 2))
    b = max(0, min(n, int(math.ceil(hi)) + 3))
    return a, b


def render_source(src, P, design_dir):
    """Draw a source over the float32 node array P (fill); returns the new array."""
    h, w = P.shape
    xs = np.arange(w, dtype=F64)[None, :]
    ys = np.arange(h, dtype=F64)[:, None]
    px = xs + 0.5
    py = ys + 0.5
    if "shape" in src:
        value = f32(src.get("value", 1.0))
        inside = _shape_inside(src)
        n = int(src.get("aa", 0) or 0)
        out = P.copy()
        # only a window around the shape's bounding box can be covered (speed only)
        bx0, bx1, by0, by1 = _shape_bounds(src)
        x0, x1 = _window(bx0, bx1, w)
        y0, y1 = _window(by0, by1, h)
        if x0 >= x1 or y0 >= y1:
            return out
        xs, ys = xs[:, x0:x1], ys[y0:y1, :]
        win = out[y0:y1, x0:x1]
        if n == 0:
            m = np.broadcast_to(inside(xs + 0.5, ys + 0.5), win.shape)
            win[m] = value
            return out
        count = np.zeros(win.shape, np.int64)
        for j in range(n):
            sy = ys + (j + 0.5) / n
            for i in range(n):
                sx = xs + (i + 0.5) / n
                count += np.broadcast_to(inside(sx, sy), win.shape)
        c = count / float(n * n)
        mix = win.astype(F64) * (1.0 - c) + float(value) * c
        m = count > 0
        win[m] = mix[m].astype(F32)
        return out
    if "gradient" in src:
        a, b = (float(f32(v)) for v in src["values"])
        if src["gradient"] == "linear":
            x0, y0 = (fl(v) for v in src["from"])
            x1, y1 = (fl(v) for v in src["to"])
            num = (px - x0) * (x1 - x0) + (py - y0) * (y1 - y0)
            den = (x1 - x0) * (x1 - x0) + (y1 - y0) * (y1 - y0)
            t = num / den
        elif src["gradient"] == "radial":
            cx, cy = (fl(v) for v in src["center"])
            r = fl(src["radius"])
            dx = px - cx
            dy = py - cy
            t = np.sqrt(dx * dx + dy * dy) / r
        else:
            raise ValueError("unknown gradient %r" % src["gradient"])
        t = np.minimum(np.maximum(t, 0.0), 1.0)
        v = a + t * (b - a)
        return np.broadcast_to(v, P.shape).astype(F32)
    if "image" in src:
        img = png_values(os.path.join(design_dir, src["image"]))
        if img.shape != P.shape:
            raise ValueError("image %s is %dx%d, node is %dx%d" % (
                src["image"], img.shape[1], img.shape[0], w, h))
        return img.copy()
    raise ValueError("unknown source %r" % (src,))


# ---------------------------------------------------------------------------------------------
# Traits (docs/format.md §5)

def place(C, ox, oy, W, H):
    """The child placed with its (0,0) at parent (ox, oy): (L, cov) over the W x H parent."""
    L = np.zeros((H, W), F32)
    cov = np.zeros((H, W), bool)
    hc, wc = C.shape
    x0, x1 = max(0, ox), min(W, ox + wc)
    y0, y1 = max(0, oy), min(H, oy + hc)
    if x0 < x1 and y0 < y1:
        L[y0:y1, x0:x1] = C[y0 - oy:y1 - oy, x0 - ox:x1 - ox]
        cov[y0:y1, x0:x1] = True
    return L, cov


def _floordiv(a, b):
    return a // b


def _ceildiv(a, b):
    return -((-a) // b)


def lattice(C, ox, oy, u, v, overlap, region, W, H):
    """repeat-vector: copies of C at (ox + i*u + j*v), combined by `overlap`, in copy order
    (ascending j, then ascending i), covered = union of the copies, clipped to region."""
    hc, wc = C.shape
    L = np.zeros((H, W), F32)
    cov = np.zeros((H, W), bool)
    if region is None:
        rx0, ry0, rx1, ry1 = 0, 0, W, H
    else:
        x, y, w, h = region
        rx0, ry0, rx1, ry1 = max(0, x), max(0, y), min(W, x + w), min(H, y + h)
    if rx0 >= rx1 or ry0 >= ry1:
        return L, cov
    ux, uy = u
    vx, vy = v
    det = ux * vy - uy * vx
    if det == 0:
        raise ValueError("u and v are linearly dependent")
    # copy positions p with p.x in [rx0-wc+1, rx1-1], p.y in [ry0-hc+1, ry1-1]
    bx0, bx1 = rx0 - wc + 1, rx1 - 1
    by0, by1 = ry0 - hc + 1, ry1 - 1
    inum, jnum = [], []
    for bx in (bx0, bx1):
        for by in (by0, by1):
            qx, qy = bx - ox, by - oy
            inum.append(qx * vy - qy * vx)
            jnum.append(ux * qy - uy * qx)
    sgn = 1 if det > 0 else -1
    dd = det * sgn
    inum = [a * sgn for a in inum]
    jnum = [a * sgn for a in jnum]
    imin, imax = _floordiv(min(inum), dd), _ceildiv(max(inum), dd)
    jmin, jmax = _floordiv(min(jnum), dd), _ceildiv(max(jnum), dd)
    if overlap == "average":
        S = np.zeros((H, W), F32)
        N = np.zeros((H, W), np.int64)
    for j in range(jmin, jmax + 1):
        for i in range(imin, imax + 1):
            X = ox + i * ux + j * vx
            Y = oy + i * uy + j * vy
            x0, x1 = max(rx0, X), min(rx1, X + wc)
            y0, y1 = max(ry0, Y), min(ry1, Y + hc)
            if x0 >= x1 or y0 >= y1:
                continue
            sl = (slice(y0, y1), slice(x0, x1))
            cs = C[y0 - Y:y1 - Y, x0 - X:x1 - X]
            cv = cov[sl]
            if overlap == "first":
                Ls = L[sl]
                m = ~cv
                Ls[m] = cs[m]
            elif overlap == "max":
                L[sl] = np.where(cv, np.maximum(L[sl], cs), cs)
            elif overlap == "add":
                L[sl] = np.where(cv, L[sl] + cs, cs)
            elif overlap == "average":
                nz = cs != 0
                S[sl] = np.where(nz, S[sl] + cs, S[sl])
                N[sl] += nz
            else:
                raise ValueError("unknown overlap %r" % overlap)
            cov[sl] = True
    if overlap == "average":
        m = N > 0
        L[m] = S[m] / N[m].astype(F32)
    return L, cov


def sqdist_exact(M, dmax):
    """a[y, x] = min over mask pixels q of (qx-x)^2 + (qy-y)^2, clamped to dmax^2 (int64).
    Exact: min over dy of (dy^2 + min over dx of dx^2 on row y+dy), both within |d| <= dmax."""
    h, w = M.shape
    cap = dmax * dmax
    it = np.int64 if cap >= 2 ** 30 else np.int32
    g = np.full((h, w), cap, it)
    for dx in range(-dmax, dmax + 1):
        d2 = dx * dx
        if d2 >= cap:
            continue
        x0, x1 = max(0, -dx), min(w, w - dx)
        if x0 >= x1:
            continue
        sub = g[:, x0:x1]
        np.putmask(sub, M[:, x0 + dx:x1 + dx] & (sub > d2), it(d2))
    a = np.full((h, w), cap, it)
    for dy in range(-dmax, dmax + 1):
        d2 = dy * dy
        if d2 >= cap:
            continue
        y0, y1 = max(0, -dy), min(h, h - dy)
        if y0 >= y1:
            continue
        sub = a[y0:y1]
        np.minimum(sub, g[y0 + dy:y1 + dy] + it(d2), out=sub)
    return np.minimum(a, cap).astype(np.int64)


def sqdist_brute(M, dmax):
    """Literal brute force of docs/format.md (for the self-test)."""
    h, w = M.shape
    cap = dmax * dmax
    qs = np.argwhere(M)
    a = np.full((h, w), cap, np.int64)
    for y in range(h):
        for x in range(w):
            best = cap
            for qy, qx in qs:
                d = (int(qx) - x) ** 2 + (int(qy) - y) ** 2
                if d < best:
                    best = d
            a[y, x] = best
    return a


def profile_fn(profile, dmax):
    """f(d) of docs/format.md §5 in double, with the C library's functions."""
    D = float(dmax)
    if profile is None or profile == "linear":
        return lambda d: 1.0 - d / D
    if profile == "sphere":
        return lambda d: math.sqrt(1.0 - (d / D) * (d / D))
    if profile == "cosine":
        return lambda d: 0.5 * (1.0 + math.cos(math.pi * d / D))
    if isinstance(profile, dict) and "gaussian" in profile:
        s = fl(profile["gaussian"])
        return lambda d: math.exp(-(d * d) / (2.0 * s * s))
    if isinstance(profile, dict) and "points" in profile:
        pts = [(fl(p[0]), fl(p[1])) for p in profile["points"]]

        def f(d):
            if d < pts[0][0]:
                return pts[0][1]
            if d >= pts[-1][0]:
                return pts[-1][1]
            for k in range(len(pts) - 1):
                di, zi = pts[k]
                dn, zn = pts[k + 1]
                if di <= d < dn:
                    return zi + (zn - zi) * ((d - di) / (dn - di))
            raise AssertionError("unreachable")
        return f
    raise ValueError("unknown profile %r" % (profile,))


def distance_table(e, dmax):
    f = profile_fn(e.get("profile", "linear"), dmax)
    k = fl(e.get("scale", 1.0))
    b = fl(e.get("bias", 0.0))
    cap = dmax * dmax
    tab = np.empty(cap + 1, F32)
    for a in range(cap + 1):
        tab[a] = b + k * f(math.sqrt(a))  # double, rounded once to float32 on store
    return tab


def distance_layer(C, e):
    thr = f32(e.get("threshold", 0.5))
    dmax = int(e["dmax"])
    M = C > thr
    a = sqdist_exact(M, dmax)
    return distance_table(e, dmax)[a]


def _pad(A, before, after, axis, edge):
    """Extend A along axis by the edge mode (zero / clamp / wrap, any number of periods)."""
    n = A.shape[axis]
    idx = np.arange(-before, n + after)
    idx, valid = _map_index(idx, n, edge)
    out = np.take(A, idx, axis=axis)
    if not valid.all():
        shape = [1, 1]
        shape[axis] = -1
        out = out * valid.reshape(shape)
    return out


def _map_index(idx, n, edge):
    """Map integer coordinates to [0, n) by the edge mode; returns (index, valid)."""
    if edge == "zero":
        valid = (idx >= 0) & (idx < n)
        return np.clip(idx, 0, n - 1), valid
    if edge == "clamp":
        return np.clip(idx, 0, n - 1), np.ones(idx.shape, bool)
    if edge == "wrap":
        return np.mod(idx, n), np.ones(idx.shape, bool)
    raise ValueError("unknown edge %r" % edge)


def gauss_taps(sigma):
    r = int(math.ceil(4.0 * sigma))
    g = [math.exp(-(k * k) / (2.0 * sigma * sigma)) for k in range(-r, r + 1)]
    tot = 0.0
    for x in g:
        tot += x
    return r, [x / tot for x in g]


def blur_layer(C, e):
    """blur in float64, rounded once to float32 (see the precision notes above)."""
    edge = e.get("edge", "zero")
    h, w = C.shape
    C64 = C.astype(F64)
    if "kernel" in e:
        K = np.array([[float(f32(v)) for v in row] for row in e["kernel"]], F64)
        kh, kw = K.shape
        rx, ry = kw // 2, kh // 2
        # padded[y + ry][x + rx] = C(x, y) mapped by the edge mode, each coordinate on its own
        padded = _pad(_pad(C64, ry, ry, 0, edge), rx, rx, 1, edge)
        out = np.zeros((h, w), F64)
        for j in range(kh):
            for i in range(kw):
                out += K[j, i] * padded[j:j + h, i:i + w]
        return out.astype(F32)
    sigma = fl(e["sigma"])
    r, g = gauss_taps(sigma)
    padded = _pad(C64, r, r, 1, edge)
    tmp = np.zeros((h, w), F64)
    for k in range(-r, r + 1):
        tmp += g[k + r] * padded[:, r + k:r + k + w]
    padded = _pad(tmp, r, r, 0, edge)
    out = np.zeros((h, w), F64)
    for k in range(-r, r + 1):
        out += g[k + r] * padded[r + k:r + k + h, :]
    return out.astype(F32)


def blend(mode, P, L, cov):
    out = P.copy()
    p, l = P[cov], L[cov]
    if mode == "over":
        r = l
    elif mode == "add":
        r = p + l
    elif mode == "max":
        r = np.maximum(p, l)
    elif mode == "min":
        r = np.minimum(p, l)
    elif mode == "multiply":
        r = p * l
    else:
        raise ValueError("unknown blend %r" % mode)
    assert r.dtype == F32
    out[cov] = r
    return out


# ---------------------------------------------------------------------------------------------
# Design

class Design:
    def __init__(self, path):
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        if self.doc.get("tessera") != 1:
            raise ValueError("not a tessera: 1 design")
        self.named = self.doc.get("nodes") or {}
        self.memo = {}

    def child(self, e):
        if "ref" in e:
            return self.named[e["ref"]]
        return e["node"]

    def size(self, node):
        if "size" in node:
            w, h = ints(node["size"])
            return w, h
        src = node.get("source") or {}
        if "image" in src:
            s, _, _, _ = read_png(os.path.join(self.dir, src["image"]))
            return s.shape[1], s.shape[0]
        raise ValueError("node without size")

    def render(self, node, depth=0):
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        if depth > 64:
            raise ValueError("ref cycle")
        w, h = self.size(node)
        P = np.full((h, w), f32(node.get("fill", 0.0)), F32)
        if node.get("source"):
            P = render_source(node["source"], P, self.dir)
        for e in node.get("children") or []:
            P = self.edge(e, P, depth)
        self.memo[key] = P
        return P

    def edge(self, e, P, depth):
        H, W = P.shape
        C = self.render(self.child(e), depth + 1)
        ox, oy = ints(e.get("offset", [0, 0]))
        trait = e["trait"]
        if trait == "pattern":
            L, cov = place(C, ox, oy, W, H)
        elif trait in ("repeat", "repeat-vector"):
            hc, wc = C.shape
            if trait == "repeat":
                px, py = ints(e.get("period", [wc, hc]))
                u, v = (px, 0), (0, py)
                overlap = e.get("overlap", "first")
            else:
                u, v = tuple(ints(e["u"])), tuple(ints(e["v"]))
                overlap = e.get("overlap", "average")
            region = ints(e["region"]) if "region" in e else None
            L, cov = lattice(C, ox, oy, u, v, overlap, region, W, H)
        elif trait == "distance":
            L, cov = place(distance_layer(C, e), ox, oy, W, H)
        elif trait == "blur":
            L, cov = place(blur_layer(C, e), ox, oy, W, H)
        else:
            raise ValueError("unknown trait %r" % trait)
        if e.get("mask", "none") == "nonzero":
            cov = cov & (L != 0)
        return blend(e.get("blend", "over"), P, L, cov)

    def render_root(self):
        return self.render(self.doc["root"])


# ---------------------------------------------------------------------------------------------
# Output (docs/format.md §7)

def to_samples(V, out):
    """float32 values -> integer samples, in double exactly as §2.4 writes it."""
    out = out or {}
    depth = int(out.get("depth", 8))
    lo, hi = (fl(x) for x in out.get("range", [0.0, 1.0]))
    mx = 255.0 if depth == 8 else 65535.0
    t = (V.astype(F64) - lo) / (hi - lo)
    t = np.minimum(np.maximum(t, 0.0), 1.0)
    cal = out.get("calibration")
    if cal:
        ts = np.array([fl(p[0]) for p in cal], F64)
        cs = np.array([fl(p[1]) for p in cal], F64)
        one = t == 1.0
        i = np.searchsorted(ts, t, side="right") - 1
        i = np.clip(i, 0, len(ts) - 2)
        ti, tn = ts[i], ts[i + 1]
        ci, cn = cs[i], cs[i + 1]
        t = np.where(one, cs[-1], ci + (cn - ci) * ((t - ti) / (tn - ti)))
    s = np.floor(t * mx + 0.5)
    return s.astype(np.uint8 if depth == 8 else np.uint16), depth


def order_samples(S, out):
    """Serialise the sample array (rows x width) in the output order."""
    out = out or {}
    order = out.get("order", "raster")
    if order == "raster":
        return [S]
    sw_cfg = out.get("swath") or {}
    H, W = S.shape
    sw = int(sw_cfg.get("width", W))
    serp = bool(sw_cfg.get("serpentine", False))
    start = sw_cfg.get("start", "top-left")
    right = start.endswith("right")
    bottom = start.startswith("bottom")
    parts = []
    k = 0
    cut = 0
    while cut < W:
        n = min(sw, W - cut)
        if right:
            x0, x1 = W - cut - n, W - cut
        else:
            x0, x1 = cut, cut + n
        block = S[:, x0:x1]
        upward = bottom
        if serp and k % 2 == 1:
            upward = not upward
        if upward:
            block = block[::-1, :]
        parts.append(block)
        cut += n
        k += 1
    return parts


def render_bytes(path, rows=None):
    d = Design(path)
    V = d.render_root()
    if rows is not None:
        y0, y1 = rows
        V = V[y0:y1]
    S, depth = to_samples(V, d.doc.get("output"))
    chunks = []
    for part in order_samples(S, d.doc.get("output")):
        a = np.ascontiguousarray(part)
        if depth == 16:
            a = a.astype("<u2")
        chunks.append(a.tobytes())
    return b"".join(chunks)


def main(argv=None):
    ap = argparse.ArgumentParser(description="tessera oracle (docs/format.md §2, numpy)")
    ap.add_argument("design")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--rows", default=None, help="Y0:Y1, half-open")
    a = ap.parse_args(argv)
    rows = None
    if a.rows:
        y0, y1 = a.rows.split(":")
        rows = (int(y0), int(y1))
    data = render_bytes(a.design, rows)
    if a.out == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(a.out, "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
