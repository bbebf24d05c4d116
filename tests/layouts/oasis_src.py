#!/usr/bin/python3
"""The GDSII source of the OASIS tests (tests/test_layouts_oasis.c), written with gdspy.

Writes oasis_src.gds (1 nm database unit) and oasis_src.txt, the flattened polygons of TOP as
gdspy computes them (paths outlined by gdspy itself, placements and arrays expanded), in
database units: the independent truth the OASIS reader's flattened output is compared with.
KLayout (oasis_klayout.py) turns the GDSII into the OASIS files the tests read.

Run: /usr/bin/python3 tests/layouts/oasis_src.py (from the repository root or this folder).
"""
import math
import os

import gdspy

here = os.path.dirname(os.path.abspath(__file__))
lib = gdspy.GdsLibrary(unit=1e-6, precision=1e-9)

leaf = gdspy.Cell("LEAF", exclude_from_current=True)
lib.add(leaf)

leaf.add(gdspy.Rectangle((0, 0), (10, 5), layer=1))
leaf.add(gdspy.Polygon([(0, 8), (12, 8), (4, 17)], layer=2))  # any angle
leaf.add(gdspy.Polygon([(14, 0), (20, 0), (20, 3), (17, 3), (17, 9), (14, 9)], layer=2))  # L
leaf.add(gdspy.Polygon([(22, 0), (30, 0), (30, 2), (24, 2), (24, 6), (30, 6), (30, 8),
                        (22, 8)], layer=2))  # C, vertical edge first after a horizontal
# paths become GDSII PATH records (gdsii_path): flush, half-width and explicit extensions,
# turning 90 and 45 degrees
leaf.add(gdspy.FlexPath([(0, 20), (10, 20), (10, 30), (20, 30)], 1.0, ends="flush",
                        gdsii_path=True, layer=3))
leaf.add(gdspy.FlexPath([(0, 34), (8, 34), (14, 40), (22, 40)], 2.0, ends="extended",
                        gdsii_path=True, layer=4))
leaf.add(gdspy.FlexPath([(25, 12), (25, 24), (33, 24)], 1.5, ends=(0.5, 2.25),
                        gdsii_path=True, layer=5))
# sharp turns (135 and 150 degrees) and segments shorter than the width: a path that is not
# one simple outline
leaf.add(gdspy.FlexPath([(0, 45), (12, 45), (2, 49), (12, 52), (12.5, 52), (12.5, 52.4),
                         (20, 52.4)], 1.0, ends="extended", gdsii_path=True, layer=13))
leaf.add(gdspy.Round((40, 10), 4, number_of_points=64, layer=6))
leaf.add(gdspy.Label("leaf", (1, 1), layer=10))

row = gdspy.Cell("ROW", exclude_from_current=True)
lib.add(row)

for i in range(20):  # regular in x: repetition type 2
    row.add(gdspy.Rectangle((i * 3, 0), (i * 3 + 1, 1), layer=7))
for j in range(10):  # regular in y: type 3
    row.add(gdspy.Rectangle((-5, j * 4), (-4, j * 4 + 2), layer=7))
for i in range(5):  # a grid: type 1
    for j in range(4):
        row.add(gdspy.Rectangle((70 + i * 5, j * 6), (72 + i * 5, j * 6 + 3), layer=8))
for i in range(6):  # along a diagonal: type 9
    row.add(gdspy.Polygon([(i * 7, 40 + i * 3), (i * 7 + 2, 40 + i * 3),
                           (i * 7, 42 + i * 3)], layer=9))
for x in (0, 2, 10, 12, 30, 31, 47):  # irregular: type 10/11
    row.add(gdspy.Rectangle((x, 60), (x + 0.5, 61), layer=11))
for i in range(4):  # a skewed lattice: type 8
    for j in range(3):
        row.add(gdspy.Rectangle((100 + i * 4 + j * 2, 50 + j * 5), (101 + i * 4 + j * 2,
                                                                    51 + j * 5), layer=12))

mid = gdspy.Cell("MID", exclude_from_current=True)
lib.add(mid)

mid.add(gdspy.CellReference(leaf, (0, 0)))
mid.add(gdspy.CellReference(leaf, (100, 0), rotation=90))
mid.add(gdspy.CellReference(leaf, (200, 0), x_reflection=True))
mid.add(gdspy.CellReference(leaf, (300, 0), magnification=2))
mid.add(gdspy.CellReference(leaf, (450, 0), rotation=30))
mid.add(gdspy.CellReference(leaf, (550, 0), rotation=270, x_reflection=True,
                            magnification=1.5))
mid.add(gdspy.Label("mid", (0, -3), layer=10))

top = gdspy.Cell("TOP", exclude_from_current=True)
lib.add(top)

top.add(gdspy.CellReference(mid, (0, 0)))
top.add(gdspy.CellArray(leaf, 3, 2, (50, 60), (0, 200)))  # orthogonal array
# rotated by atan(3/4): the lattice vectors (40, 30) and (-42, 56) stay on the grid (type 8)
top.add(gdspy.CellArray(leaf, 2, 3, (50, 70), (300, 200), rotation=math.degrees(math.atan2(3, 4))))
top.add(gdspy.CellArray(mid, 1, 2, (0, 300), (0, 500), x_reflection=True))
top.add(gdspy.CellReference(row, (0, -150)))
top.add(gdspy.CellReference(row, (400, -150), rotation=180))

lib.write_gds(os.path.join(here, "oasis_src.gds"))

def num(v):
    """v to 0.001 nm, without trailing zeros (the file stays small)."""
    return ("%.3f" % v).rstrip("0").rstrip(".")


with open(os.path.join(here, "oasis_src.txt"), "w") as f:
    f.write("# TOP of oasis_src.gds flattened by gdspy, database units (1 nm)\n")
    f.write("texts %d\n" % len(top.get_labels()))
    for (layer, dt), polys in sorted(top.get_polygons(by_spec=True).items()):
        for p in polys:
            f.write("poly %d %d %d %s\n" % (layer, dt, len(p), " ".join(
                "%s %s" % (num(x * 1000), num(y * 1000)) for x, y in p)))
