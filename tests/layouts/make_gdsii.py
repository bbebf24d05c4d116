#!/usr/bin/python3
"""Writes the GDSII test layouts of tests/test_layouts_gdsii.c with gdspy (python3-gdspy), then
reads each back with gdspy and writes what gdspy's own flatten makes of it, so the test
compares tessera's reader and queries with an independent one.

    /usr/bin/python3 tests/layouts/make_gdsii.py tests/layouts

Each NAME.gds gets NAME.txt: lines "cells N", "texts N" (gdspy's labels, flattened), then one
line per flattened polygon, "L D n x0 y0 ... x(n-1) y(n-1)", in database units (1 nm; the user
unit is 1 um)."""
import sys
import warnings

import gdspy

out = sys.argv[1] if len(sys.argv) > 1 else "."
warnings.simplefilter("ignore")


def lib():
    return gdspy.GdsLibrary(unit=1e-6, precision=1e-9)


def elements():
    """Every element kind gdspy writes, flat: polygons, rectangles, overlaps, labels, and
    paths of every type with bends (all in one cell)."""
    L = lib()
    top = gdspy.Cell("ELEMENTS", exclude_from_current=True)
    L.add(top)
    top.add(gdspy.Rectangle((0, 0), (10, 5), layer=1))
    top.add(gdspy.Rectangle((8, 2), (14, 9), layer=1))            # overlaps the first
    top.add(gdspy.Polygon([(20, 0), (30, 0), (25, 8)], layer=2, datatype=3))
    top.add(gdspy.Polygon([(40, 0), (50, 0), (50, 4), (44, 4), (44, 10), (40, 10)], layer=2))
    top.add(gdspy.Polygon([(60, 0), (61.5, 0.25), (63, 3), (61, 7), (59.5, 2)], layer=7, datatype=1))
    top.add(gdspy.Label("hello", (1, 1), layer=5))
    top.add(gdspy.Label("world", (2, 2), layer=5))
    return L, top


def paths():
    """Paths of types 0, 1, 2 and 4, straight and with 90 and 45 degree bends, both turning
    ways, odd widths (half a database unit off the grid)."""
    L = lib()
    top = gdspy.Cell("PATHS", exclude_from_current=True)
    L.add(top)
    bends = [(0, 0), (20, 0), (20, 15), (35, 30), (50, 30), (50, 10)]
    for k, ends in enumerate(["flush", "round", "extended", (1.5, 0.75)]):
        y = 60 * k
        pts = [(x, y + yy) for x, yy in bends]
        top.add(gdspy.FlexPath(pts, 3.001, ends=ends, gdsii_path=True, layer=10 + k))
        top.add(gdspy.FlexPath([(70, y), (90, y + 7)], 2.0, ends=ends, gdsii_path=True,
                               layer=20 + k))
    return L, top


def hierarchy():
    """SREF and AREF with rotations, mirrors and magnifications, nested two deep, the top
    written first so every placement refers forward."""
    L = lib()
    top = gdspy.Cell("TOP", exclude_from_current=True)
    mid = gdspy.Cell("MID", exclude_from_current=True)
    leaf = gdspy.Cell("LEAF", exclude_from_current=True)
    L.add(top)
    L.add(mid)
    L.add(leaf)
    leaf.add(gdspy.Polygon([(0, 0), (3, 0), (3, 1), (1, 2)], layer=1))
    leaf.add(gdspy.Rectangle((0, 3), (2, 4), layer=2, datatype=1))
    leaf.add(gdspy.Label("leaf", (0, 0), layer=9))
    mid.add(gdspy.CellReference(leaf, (10, 0)))
    mid.add(gdspy.CellReference(leaf, (20, 0), rotation=90))
    mid.add(gdspy.CellReference(leaf, (30, 0), x_reflection=True))
    mid.add(gdspy.CellReference(leaf, (40, 0), rotation=30, magnification=2.5))
    mid.add(gdspy.CellReference(leaf, (50, 0), rotation=180, x_reflection=True,
                                magnification=0.5))
    mid.add(gdspy.Rectangle((0, 0), (1, 1), layer=3))
    top.add(gdspy.CellArray(mid, 3, 2, (60, 25), (0, 0)))
    top.add(gdspy.CellArray(leaf, 4, 3, (5, 6), (0, -100), rotation=90))
    # lattice vectors land on the grid (2 * 8 * cos 45 um rounds to an even 11314 nm): the
    # model keeps integer vectors, gdspy the written displacement over the count
    top.add(gdspy.CellArray(leaf, 2, 5, (8, 9), (100, -100), rotation=45, x_reflection=True,
                            magnification=1.5))
    top.add(gdspy.CellReference(mid, (-200, 0), rotation=270, magnification=2))
    top.add(gdspy.CellArray(leaf, 1, 1, (1, 1), (300, 300), rotation=-60))
    return L, top


for name, make in [("elements", elements), ("paths", paths), ("hierarchy", hierarchy)]:
    L, top = make()
    fn = "%s/%s.gds" % (out, name)
    L.write_gds(fn, timestamp=__import__("datetime").datetime(2026, 1, 1))
    back = gdspy.GdsLibrary(infile=fn)
    t = back.cell_dict[top.name]
    for c in back.cell_dict.values():
        for p in c.paths:
            p.tolerance = 1e-4  # round ends within 0.1 nm: the comparison's margin is larger
    with open("%s/%s.txt" % (out, name), "w") as f:
        f.write("cells %d\n" % len(back.cell_dict))
        f.write("texts %d\n" % len(t.get_labels()))
        for (layer, dt), polys in sorted(t.get_polygons(by_spec=True).items()):
            for p in polys:
                f.write("%d %d %d %s\n" % (layer, dt, len(p),
                        " ".join("%.6f %.6f" % (x * 1000, y * 1000) for x, y in p)))
