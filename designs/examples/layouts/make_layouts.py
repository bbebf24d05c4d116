#!/usr/bin/python3
"""Writes the layout files of the layout examples (designs/examples/layout-*.yaml), each small
(< 100 KB, committed beside this script):

    cd designs/examples/layouts && /usr/bin/python3 make_layouts.py

- wafer-dies.gds (gdspy): a 20 mm wafer of 2 mm dies placed by arrays (one AREF per row of
  the wafer disc), four alignment crosses, the wafer's outline as a ring of polygons, and
  labels written as polygons (gdspy.Text);
- metasurface.oas (gdspy, then KLayout in batch mode: klayout -b -r): a geometric-phase
  metalens of 200 x 80 nm nano-rectangles, each turned by half the phase a lens needs at its
  place, 16 turned cells placed on a 500 nm grid;
- laser-part.dxf (ezdxf): a bracket with rounded corners (polyline bulges), a slot, holes
  (circles) and an engraved part number (closed polylines), in mm;
- dose-levels.gds (gdspy): 8 layers, 8 dose levels: a 4 x 4 array of stepped pyramids, level
  k on layer k."""
import math
import os
import subprocess
import warnings

import ezdxf
import gdspy

warnings.simplefilter("ignore")
here = os.path.dirname(os.path.abspath(__file__))


def lib():
    return gdspy.GdsLibrary(unit=1e-6, precision=1e-9)


def cell(L, name):
    c = gdspy.Cell(name, exclude_from_current=True)
    L.add(c)
    return c


# ---- wafer of dies ------------------------------------------------------------------------------
L = lib()
die = cell(L, "DIE")
die.add(gdspy.Rectangle((100, 100), (1900, 1900), layer=1, datatype=0))      # die field
for i in range(8):                                                          # bond pads
    die.add(gdspy.Rectangle((200 + i * 200, 1700), (300 + i * 200, 1800), layer=2))
    die.add(gdspy.Rectangle((200 + i * 200, 200), (300 + i * 200, 300), layer=2))
die.add(gdspy.Polygon([(600, 600), (1400, 600), (1000, 1300)], layer=2))    # a device
for p in gdspy.Text("DIE", 150, (750, 1350), layer=3).polygons:
    die.add(gdspy.Polygon(p, layer=3))
mark = cell(L, "MARK")
mark.add(gdspy.Rectangle((-300, -25), (300, 25), layer=4))
mark.add(gdspy.Rectangle((-25, -300), (25, 300), layer=4))
mark.add(gdspy.Rectangle((-400, -400), (-350, 400), layer=4))
mark.add(gdspy.Rectangle((350, -400), (400, 400), layer=4))
top = cell(L, "WAFER")
R, D = 10000, 2000
for j in range(-5, 5):                  # rows of whole dies inside the disc: one array each
    y0, y1 = j * D, (j + 1) * D
    half = math.sqrt(max(0, R * R - max(y0 * y0, y1 * y1)))
    n = int(2 * half // D)
    if n > 0:
        top.add(gdspy.CellArray(die, n, 1, (D, D), (-n * D / 2, y0)))
for x, y in ((-7000, 0), (7000, 0), (0, -7500), (0, 7500)):
    top.add(gdspy.CellReference(mark, (x, y)))
ring = gdspy.Round((0, 0), R, inner_radius=R - 100, tolerance=2, layer=5)
top.add(ring)
for p in gdspy.Text("WAFER 42", 400, (-1900, -9300), layer=3).polygons:
    top.add(gdspy.Polygon(p, layer=3))
L.write_gds(os.path.join(here, "wafer-dies.gds"))

# ---- metasurface of turned nano-rectangles --------------------------------------------------------
L = lib()
K = 16
cells = []
for k in range(K):
    c = cell(L, "PILLAR%02d" % k)
    a = math.pi * k / K
    pts = [(x * math.cos(a) - y * math.sin(a), x * math.sin(a) + y * math.cos(a))
           for x, y in ((-0.1, -0.04), (0.1, -0.04), (0.1, 0.04), (-0.1, 0.04))]
    c.add(gdspy.Polygon(pts, layer=1))
    cells.append(c)
top = cell(L, "METALENS")
N, P, f, lam = 60, 0.5, 40.0, 0.633
for j in range(N):
    for i in range(N):
        x, y = (i - N / 2 + 0.5) * P, (j - N / 2 + 0.5) * P
        phase = -2 * math.pi / lam * (math.sqrt(x * x + y * y + f * f) - f)
        k = int(round((phase / 2) % math.pi / math.pi * K)) % K
        top.add(gdspy.CellReference(cells[k], (x, y)))
gds = os.path.join(here, "metasurface-src.gds")
L.write_gds(gds)
script = os.path.join(here, "to_oasis.tmp.py")
with open(script, "w") as f_:
    f_.write("import pya\nly = pya.Layout()\nly.read(%r)\no = pya.SaveLayoutOptions()\n"
             "o.format = 'OASIS'\no.oasis_compression_level = 2\nly.write(%r, o)\n"
             % (gds, os.path.join(here, "metasurface.oas")))
subprocess.run(["klayout", "-b", "-r", script], check=True, stdout=subprocess.DEVNULL)
os.remove(script)
os.remove(gds)

# ---- laser-cut part -----------------------------------------------------------------------------
doc = ezdxf.new("R2010")
doc.header["$INSUNITS"] = 4  # mm
for name in ("CUT", "HOLES", "ENGRAVE"):
    doc.layers.add(name)
msp = doc.modelspace()
r = 5.0
b = math.tan(math.pi / 8)  # a quarter circle's bulge
# (x, y, bulge to the next point): an 80 x 50 mm plate with rounded corners and a notch
outline = [(r, 0, 0), (80 - r, 0, b), (80, r, 0), (80, 50 - r, b), (80 - r, 50, 0),
           (50, 50, 0), (45, 40, 0), (35, 40, 0), (30, 50, 0), (r, 50, b), (0, 50 - r, 0),
           (0, r, b)]
msp.add_lwpolyline([(x, y, 0, 0, bb) for x, y, bb in outline], format="xyseb", close=True,
                   dxfattribs={"layer": "CUT"})
for x, y, rr in ((10, 10, 3), (70, 10, 3), (10, 40, 3), (70, 40, 3), (40, 20, 8)):
    msp.add_circle((x, y), rr, dxfattribs={"layer": "HOLES"})
# a slot: two half circles joined (bulge 1 = a half circle)
msp.add_lwpolyline([(55, 18, 0, 0, 1), (55, 24, 0, 0, 0), (65, 24, 0, 0, 1), (65, 18, 0, 0, 0)],
                   format="xyseb", close=True, dxfattribs={"layer": "HOLES"})
for p in gdspy.Text("P-0042", 4, (14, 22)).polygons:
    msp.add_lwpolyline([tuple(map(float, q)) for q in p], close=True,
                       dxfattribs={"layer": "ENGRAVE"})
doc.saveas(os.path.join(here, "laser-part.dxf"))

# ---- 8 dose levels on 8 layers ------------------------------------------------------------------
L = lib()
pyr = cell(L, "PYRAMID")
for k in range(1, 9):  # level k: a square 4 (9 - k) um wide, centred, on layer k
    h = 2.0 * (9 - k)
    pyr.add(gdspy.Rectangle((20 - h, 20 - h), (20 + h, 20 + h), layer=k))
top = cell(L, "DOSE")
top.add(gdspy.CellArray(pyr, 4, 4, (40, 40), (0, 0)))
L.write_gds(os.path.join(here, "dose-levels.gds"))
