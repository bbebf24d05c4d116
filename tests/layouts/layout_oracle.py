#!/usr/bin/python3
"""The layout source against shapely (tests/cli/layout_oracle.sh runs it):

    /usr/bin/python3 tests/layouts/layout_oracle.py TESSERA TMPDIR

Writes small layouts with gdspy (python3-gdspy) covering every GDSII element kind and every
placement transform (polygons, boxes, overlaps, a self-crossing polygon, paths of every end
type with bends, references turned by 0/90/180/270 and 30 degrees, mirrored, magnified, arrays
plain and turned, text), the whole layout turned by the source's own transform (rotate at
angles off the grid, mirror, scale, a sub-pixel translate), a layout far from the origin and
off-grid edges; renders each with
`tessera render` at 16 bits and compares every pixel with the oracle, which flattens the
layout with gdspy itself (not tessera's reader) and computes each pixel's exact coverage with
shapely (tests/oracle/coverage.py: the nonzero region from noded faces and winding numbers),
then blends the layers in table order, P = P (1 - c) + v c. Tolerance: one 8-bit step (gdspy
and tessera polygonize round path ends and circles each their own way; everything else agrees
to 1e-6).

Then the same layout as GDSII, as OASIS (KLayout in batch mode: klayout -b -r) and as DXF
(python3-ezdxf: blocks and INSERTs for the cells, LWPOLYLINEs for the shapes) must give the same
bytes. Exit status 0 when everything agrees; the first disagreement is printed."""
import math
import os
import subprocess
import sys
import warnings

import gdspy
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "oracle"))
import coverage  # noqa: E402  (tests/oracle/coverage.py)

warnings.simplefilter("ignore")
TESSERA, TMP = sys.argv[1], sys.argv[2]
failed = 0


def lib(unit=1e-6, precision=1e-9):
    return gdspy.GdsLibrary(unit=unit, precision=precision)


def cell(L, name):
    c = gdspy.Cell(name, exclude_from_current=True)
    L.add(c)
    return c


def kinds():
    """Every element kind and transform, in um, database unit 1 nm."""
    L = lib()
    leaf = cell(L, "LEAF")
    leaf.add(gdspy.Rectangle((0, 0), (4, 2), layer=1))
    leaf.add(gdspy.Rectangle((3, 1), (6, 5), layer=1))                      # overlaps: once
    leaf.add(gdspy.Polygon([(0, 3), (2.5, 3), (1.2, 6.1)], layer=2))          # any angle
    leaf.add(gdspy.Polygon([(7, 0), (10, 3), (10, 0), (7, 3)], layer=2))      # bow tie
    leaf.add(gdspy.Polygon([(0, 7), (5, 7), (5, 8), (1, 8), (1, 10), (0, 10)], layer=3))
    leaf.add(gdspy.FlexPath([(6, 6), (9, 6), (9, 9)], 0.8, ends="flush", gdsii_path=True,
                            layer=3))
    leaf.add(gdspy.FlexPath([(2, 11), (5, 11), (7, 13)], 0.6, ends="extended",
                            gdsii_path=True, layer=4))
    # along (3, 4): its offsets and extensions fall on the 1 nm grid, to which the readers round
    # outline points (gdspy does not: elsewhere that is up to 0.5 nm, ~1e-3 of a pixel here)
    leaf.add(gdspy.FlexPath([(0, 13), (3, 17)], 0.5, ends=(0.3, 0.7), gdsii_path=True,
                            tolerance=1e-5, layer=4))
    leaf.add(gdspy.FlexPath([(8, 11), (10, 11)], 0.6, ends="round", gdsii_path=True,
                            tolerance=1e-5, layer=4))
    leaf.add(gdspy.Label("leaf", (1, 1), layer=1))
    top = cell(L, "TOP")
    top.add(gdspy.CellReference(leaf, (0, 0)))
    top.add(gdspy.CellReference(leaf, (30, 0), rotation=90))
    top.add(gdspy.CellReference(leaf, (32, 0), rotation=180))
    top.add(gdspy.CellReference(leaf, (33, 20), rotation=270, x_reflection=True))
    top.add(gdspy.CellReference(leaf, (0, 35), x_reflection=True, magnification=1.5))
    top.add(gdspy.CellReference(leaf, (20, 25), rotation=30))
    top.add(gdspy.CellArray(leaf, 3, 2, (11.3, 15), (40, 0)))
    top.add(gdspy.CellArray(leaf, 2, 2, (12, 16), (80, 40), rotation=90))
    top.add(gdspy.Rectangle((-3, -3), (-1.622, 50), layer=5))                 # 1.378 um wide
    return L, top


def huge():
    """Shapes two thousand metres from the origin (1 um database unit: 2e9 units)."""
    L = lib(1e-6, 1e-6)
    top = cell(L, "FAR")
    X = 2.0e9
    top.add(gdspy.Rectangle((X, X), (X + 7, X + 3), layer=1))
    top.add(gdspy.Polygon([(X + 2, X + 5), (X + 9, X + 4), (X + 6, X + 11)], layer=1))
    sub = cell(L, "SUB")
    sub.add(gdspy.Rectangle((0, 0), (2, 1), layer=2))
    top.add(gdspy.CellArray(sub, 3, 3, (3, 3), (X + 10, X), rotation=90))
    return L, top


def flat_polys(top, layer, dt):
    """The cell's polygons of (layer, dt), as gdspy itself flattens them (um)."""
    got = top.get_polygons(by_spec=True).get((layer, dt), [])
    return [list(map(tuple, p)) for p in got]


def area2(r):
    return sum(r[i][0] * r[(i + 1) % len(r)][1] - r[(i + 1) % len(r)][0] * r[i][1]
               for i in range(len(r)))


def transform(xf):
    """The layout source's transform (docs/layouts.md §8): q = scale R(rotate) M p about the
    origin, M: x -> -x when mirrored; written here from that text, not from tessera's code."""
    t = math.radians(xf.get("rotate", 0.0))
    s = xf.get("scale", 1.0)
    m = -1.0 if xf.get("mirror") else 1.0
    c, n = math.cos(t), math.sin(t)
    return lambda x, y: (s * (c * m * x - n * y), s * (n * m * x + c * y))


def oracle(top, table, fill, pitch, window, xf=None):
    """Float64 pixels of the node: fill, then each layer's exact coverage blended in."""
    x0, y0, x1, y1 = window
    W = math.ceil((x1 - x0) / pitch - 1e-9)
    H = math.ceil((y1 - y0) / pitch - 1e-9)
    P = np.full((H, W), np.float32(fill), dtype=np.float64)
    f = transform(xf or {})
    tx, ty = (xf or {}).get("translate", (0.0, 0.0))
    for (layer, dt, value) in table:
        rings = [[((q[0] - x0) / pitch + tx, (y1 - q[1]) / pitch + ty)
                  for q in (f(x, y) for x, y in p)]
                 for p in flat_polys(top, layer, dt)]
        # every shape fills its own outline whichever way it is wound (a mirrored placement
        # turns it over): wound alike, overlapping shapes unite under the nonzero rule
        rings = [r if area2(r) >= 0 else r[::-1] for r in rings]
        c = np.array(coverage.coverage((0, 0, W, H), rings)).reshape(H, W)
        v = float(np.float32(value))
        P = np.where(c > 0, (P * (1 - c) + v * c).astype(np.float32), P)
    return P


def design(path, name, table, fill, pitch, window, cell_name, xf=None):
    y = os.path.join(TMP, name + ".yaml")
    layers = ", ".join("[%d, %d, %r]" % t for t in table)
    win = ", ".join(repr(float(v)) for v in window)
    keys = ""
    for k, v in (xf or {}).items():
        keys += ", %s: %s" % (k, ("[%r, %r]" % v) if k == "translate" else
                              ("true" if v is True else repr(v)))
    with open(y, "w") as f:
        f.write("tessera: 1\noutput: {depth: 16}\nroot:\n  fill: %r\n  source: {layout: %s, "
                "cell: %s, layers: [%s], pitch: %r, window: [%s]%s}\n"
                % (fill, path, cell_name, layers, pitch, win, keys))
    return y


def render(y, raw):
    subprocess.run([TESSERA, "render", y, "-o", raw, "--progress", "none"], check=True)
    return np.fromfile(raw, dtype="<u2")


def compare(name, L, top, table, fill, pitch, window, xf=None):
    global failed
    gds = os.path.join(TMP, name + ".gds")
    L.write_gds(gds)
    y = design(gds, name, table, fill, pitch, window, top.name, xf)
    got = render(y, os.path.join(TMP, name + ".raw")).astype(np.float64) / 65535
    want = oracle(top, table, fill, pitch, window, xf)
    if got.size != want.size:
        print("FAIL %s: %d samples, oracle %d" % (name, got.size, want.size))
        failed += 1
        return
    got = got.reshape(want.shape)
    d = np.abs(got - np.clip(want, 0, 1))
    tol = 1 / 255 + 1 / 65535
    bad = np.argwhere(d > tol)
    exact = np.count_nonzero(d <= 1.5 / 65535)
    if bad.size:
        j, i = bad[0]
        print("FAIL %s: pixel (%d, %d): tessera %.6f, oracle %.6f (%d pixels beyond one 8-bit "
              "step)" % (name, i, j, got[j, i], want[j, i], len(bad)))
        failed += 1
    else:
        print("ok   %s: %dx%d px, max difference %.2g, %d of %d within a 16-bit step"
              % (name, want.shape[1], want.shape[0], d.max(), exact, d.size))


# ---- every kind, every transform; off-grid pitch ------------------------------------------------
L, top = kinds()
table = [(1, 0, 1.0), (2, 0, 0.6), (3, 0, 0.35), (4, 0, 0.8), (5, 0, 0.5)]
compare("kinds", L, top, table, 0.1, 0.37, (-4, -17, 110, 76))
compare("kinds_fine", L, top, [(4, 0, 1.0), (2, 0, 0.25)], 0.0, 0.113, (-2, -1, 12, 16))
# the whole layout turned by an angle off the grid, mirrored, magnified and moved by a
# fraction of a pixel: the window is in the transformed layout's coordinates
compare("kinds_turned", L, top, table, 0.1, 1.1, (-176, -93, 16, 89),
        {"rotate": 30.0, "mirror": True, "scale": 1.3, "translate": (0.3, -0.45)})
compare("kinds_turned_fine", L, top, [(4, 0, 1.0), (2, 0, 0.25)], 0.0, 0.17, (-7, -19, 16, 3),
        {"rotate": -117.5})
L, top = huge()
compare("huge", L, top, [(1, 0, 1.0), (2, 0, 0.5)], 0.0, 0.25, (2.0e9 - 1, 2.0e9 - 1,
                                                               2.0e9 + 20, 2.0e9 + 13))


# ---- one layout, three formats ------------------------------------------------------------------
def formats():
    """Cells, boxes, polygons, placements turned by multiples of 90 degrees, mirrored, and an
    array: what GDSII, OASIS and DXF all hold the same way (no paths or circles, whose outlines
    each format's reader makes its own way)."""
    L = lib()
    leaf = cell(L, "LEAF")
    leaf.add(gdspy.Rectangle((0, 0), (4, 2), layer=1))
    leaf.add(gdspy.Rectangle((3, 1), (6, 5), layer=1))
    leaf.add(gdspy.Polygon([(0, 3), (2.5, 3), (1.2, 6.1)], layer=2))
    leaf.add(gdspy.Polygon([(7, 0), (10, 3), (10, 0), (7, 3)], layer=2))
    top = cell(L, "TOP")
    top.add(gdspy.CellReference(leaf, (0, 0)))
    top.add(gdspy.CellReference(leaf, (30, 0), rotation=90))
    top.add(gdspy.CellReference(leaf, (32, 0), rotation=180))
    top.add(gdspy.CellReference(leaf, (33, 20), rotation=270, x_reflection=True))
    top.add(gdspy.CellArray(leaf, 3, 2, (11.25, 15), (40, 0)))
    return L, leaf, top


L, leaf, top = formats()
gds = os.path.join(TMP, "fmt.gds")
oas = os.path.join(TMP, "fmt.oas")
dxf = os.path.join(TMP, "fmt.dxf")
L.write_gds(gds)
script = os.path.join(TMP, "to_oas.py")
with open(script, "w") as f:
    f.write("import pya\nly = pya.Layout()\nly.read(%r)\nly.write(%r)\n" % (gds, oas))
subprocess.run(["klayout", "-b", "-r", script], check=True, stdout=subprocess.DEVNULL)

import ezdxf  # noqa: E402

doc = ezdxf.new("R2010")
doc.header["$INSUNITS"] = 13  # micrometres: 1 pm database units, the nm grid exactly
for ln in ("L1", "L2"):
    doc.layers.add(ln)
blk = doc.blocks.new(name="LEAF")
for (layer, dt), polys in leaf.get_polygons(by_spec=True).items():
    for p in polys:
        blk.add_lwpolyline([tuple(map(float, q)) for q in p], close=True,
                           dxfattribs={"layer": "L%d" % layer})
msp = doc.modelspace()
for ref in top.references:
    reps = [(0, 0)]
    if isinstance(ref, gdspy.CellArray):
        reps = [(i * ref.spacing[0], j * ref.spacing[1]) for j in range(ref.rows)
                for i in range(ref.columns)]
    for dx, dy in reps:
        attrs = {"insert": (ref.origin[0] + dx, ref.origin[1] + dy),
                 "rotation": ref.rotation or 0}
        if ref.x_reflection:  # mirror about x, then turn: a negative y scale
            attrs["yscale"] = -1
        msp.add_blockref("LEAF", attrs["insert"], dxfattribs=attrs)
doc.saveas(dxf)

bytes_of = {}
for path, fmt in ((gds, "gdsii"), (oas, "oasis"), (dxf, "dxf")):
    t = [(1, 0, 1.0), (2, 0, 0.6)]
    y = os.path.join(TMP, "fmt_%s.yaml" % fmt)
    names = ("[L1, 1.0], [L2, 0.6]" if fmt == "dxf" else "[1, 0, 1.0], [2, 0, 0.6]")
    with open(y, "w") as f:
        # the DXF's top cell is its model space, named after the file
        f.write("tessera: 1\noutput: {depth: 16}\nroot:\n  fill: 0.1\n  source: {layout: %s, "
                "cell: %s, layers: [%s], pitch: 0.29, window: [-5, -12, 75, 36]}\n"
                % (path, "TOP" if fmt != "dxf" else "fmt", names))
    bytes_of[fmt] = render(y, os.path.join(TMP, "fmt_%s.raw" % fmt))
want = oracle(top, [(1, 0, 1.0), (2, 0, 0.6)], 0.1, 0.29, (-5, -12, 75, 36))
for fmt in ("oasis", "dxf"):
    a, b = bytes_of["gdsii"], bytes_of[fmt]
    if a.size != b.size or not np.array_equal(a, b):
        k = int(np.argmax(a != b)) if a.size == b.size else -1
        print("FAIL formats: %s differs from GDSII (sample %d: %s vs %s)"
              % (fmt, k, b[k] if k >= 0 else b.size, a[k] if k >= 0 else a.size))
        failed += 1
    else:
        print("ok   formats: %s gives GDSII's bytes (%d samples)" % (fmt, a.size))
d = np.abs(bytes_of["gdsii"].astype(np.float64).reshape(want.shape) / 65535 - want)
if d.max() > 1 / 255:
    print("FAIL formats: GDSII against the oracle: %.3g" % d.max())
    failed += 1
else:
    print("ok   formats: GDSII within %.2g of the oracle" % d.max())
sys.exit(1 if failed else 0)
