#!/usr/bin/python3
"""Writes the DXF test files of tests/test_layouts_dxf.c with ezdxf (python3-ezdxf), and for
each NAME.dxf a NAME.expect that ezdxf and shapely (python3-shapely) computed from the drawing,
independently of tessera's reader:

    unit <meters per drawing unit>
    layers <name> <name> ...            every layer, in order of first appearance
    texts <n>                           text entities stored (blocks counted once)
    skipped <n>                         entities that bound no area (blocks counted once)
    poly <layer> <area> <cx> <cy>       an area of the flattened top cell (drawing units)
    circle <layer> <cx> <cy> <r>        a circle of the flattened top cell

Areas come from ezdxf's own geometry (bulge_to_arc, OCS, its construction arcs and ellipses
sampled within 1e-6 units, hatch boundary edges), its block placement matrices
(Insert.matrix44: base point, rotation, scale, also non-uniform, mirroring, OCS; MINSERT
arrays by Insert.multi_insert) and shapely (polygon areas and centroids; hatch loops combined even-odd; wide
open polylines buffered with flush ends and mitred joins).

Run from the repository root: /usr/bin/python3 tests/layouts/make_dxf.py
"""
import functools
import math
import os

import ezdxf
from ezdxf.entities.boundary_paths import LineEdge, PolylinePath, SplineEdge
from ezdxf.math import (ConstructionArc, Matrix44, Vec2, Vec3, bulge_to_arc,
                        uniform_knot_vector)
from ezdxf.path import make_path
from shapely.affinity import affine_transform
from shapely.geometry import LineString, Polygon

HERE = os.path.dirname(os.path.abspath(__file__))
FLAT = 1e-6  # ezdxf's flattening distance, drawing units (finer than the reader's arc_tol)

UNITS = {0: 1e-3, 1: 0.0254, 4: 1e-3, 6: 1.0, 13: 1e-6}
TEXTS = {"TEXT", "MTEXT", "ATTDEF", "ATTRIB"}
AREAS = {"CIRCLE", "SOLID", "TRACE", "3DFACE", "HATCH"}


def is_area(e):
    t = e.dxftype()
    if t in AREAS:
        return True
    if t == "LWPOLYLINE":
        return e.closed or wide(e) is not None
    if t == "POLYLINE":
        return (e.is_2d_polyline or e.is_3d_polyline) and (e.is_closed or wide(e) is not None)
    if t == "ELLIPSE":
        span = (e.dxf.end_param - e.dxf.start_param) % math.tau
        return span < 1e-9 or span > math.tau - 1e-9
    if t == "SPLINE":
        pts = list(e.construction_tool().flattening(FLAT))
        return e.closed or pts[0].isclose(pts[-1], abs_tol=1e-6)
    return False


def wide(e):
    """The constant width of an open polyline, or None."""
    if e.dxftype() == "LWPOLYLINE":
        ws = {w for x, y, s, t, b in e.get_points("xyseb") for w in (s, t)}
        if ws == {0}:
            ws = {e.dxf.const_width}
    else:
        ws = {w for v in e.vertices for w in (v.dxf.start_width, v.dxf.end_width)}
    return ws.pop() if len(ws) == 1 and min(ws) > 0 else None


def arc_pts(p, q, b):
    """The points from p up to (not including) q along the arc of bulge b (ezdxf's bulge
    geometry, sampled on the true arc: ezdxf.path would fit Bezier curves, off by ~3e-4 r)."""
    if b == 0:
        return [p]
    center, a0, a1, r = bulge_to_arc(p, q, b)
    pts = list(ConstructionArc(center, r, math.degrees(a0), math.degrees(a1)).flattening(FLAT))
    if b < 0:
        pts.reverse()
    return [p] + pts[1:-1]


def bulged(vs, closed, ocs):
    """Vertices (x, y, bulge) of a polyline in OCS, as WCS points."""
    pts = []
    n = len(vs)
    for i in range(n if closed else n - 1):
        (x0, y0, b), (x1, y1, _) = vs[i], vs[(i + 1) % n]
        pts += arc_pts(Vec2(x0, y0), Vec2(x1, y1), b)
    if not closed:
        pts.append(Vec2(vs[-1][0], vs[-1][1]))
    return [(w.x, w.y) for w in ocs.points_to_wcs([Vec3(v.x, v.y, 0) for v in pts])]


def curve(tool, ccw):
    pts = list(tool.flattening(FLAT))
    return pts if ccw else pts[::-1]


def hatch_loops(h):
    ocs = h.ocs()
    for path in h.paths:
        if isinstance(path, PolylinePath):
            yield bulged([(x, y, b) for x, y, b in path.vertices], True, ocs)
            continue
        pts = []
        for e in path.edges:
            if isinstance(e, LineEdge):
                pts += [Vec2(e.start), Vec2(e.end)]
            elif isinstance(e, SplineEdge):
                pts += [Vec2(v) for v in e.construction_tool().flattening(FLAT)]
            else:
                pts += [Vec2(v) for v in curve(e.construction_tool(), e.ccw)]
        yield [(w.x, w.y) for w in ocs.points_to_wcs([Vec3(v.x, v.y, 0) for v in pts])]


def outline(e):
    """The polyline, ellipse or face e as WCS points."""
    t = e.dxftype()
    if t == "LWPOLYLINE":
        return bulged(list(e.get_points("xyb")), e.closed, e.ocs())
    if t == "POLYLINE" and e.is_2d_polyline:
        vs = [(v.dxf.location.x, v.dxf.location.y, v.dxf.bulge) for v in e.vertices]
        return bulged(vs, e.is_closed, e.ocs())
    if t in ("ELLIPSE", "SPLINE"):
        return [(v.x, v.y) for v in e.construction_tool().flattening(FLAT)]
    return [(v.x, v.y) for v in make_path(e).flattening(FLAT)]  # no curves


def area_of(e):
    """A shapely polygon of the area entity e (WCS), or a circle tuple."""
    t = e.dxftype()
    if t == "CIRCLE":
        c = e.ocs().to_wcs(e.dxf.center)
        return ("circle", c.x, c.y, e.dxf.radius)
    if t == "HATCH":
        loops = [Polygon(p) for p in hatch_loops(e)]
        return functools.reduce(lambda a, b: a.symmetric_difference(b), loops)
    if t in ("LWPOLYLINE", "POLYLINE") and not e.is_closed:
        w = wide(e)
        line = LineString(outline(e))
        return line.buffer(w / 2, cap_style=2, join_style=2, mitre_limit=4.0)
    return Polygon(outline(e))


def special(name):
    return name.lower()[1:].startswith(("model_space", "paper_space"))


def explode(doc, entities, m):
    """(entity, its block-to-WCS matrix) for every entity below, INSERTs followed through
    ezdxf's own placement matrices (Insert.matrix44: base point, scale, rotation, OCS) and
    arrays (Insert.multi_insert)."""
    for e in entities:
        if e.dxftype() != "INSERT":
            yield e, m
            continue
        for ins in (e.multi_insert() if e.mcount > 1 else [e]):
            yield from explode(doc, doc.blocks[ins.dxf.name], ins.matrix44() * m)


def counts(doc):
    texts = skipped = 0
    layouts = [doc.modelspace()] + [b for b in doc.blocks if not special(b.name)]
    for lay in layouts:
        for e in lay:
            t = e.dxftype()
            if t in TEXTS:
                texts += 1
            elif t == "INSERT":
                texts += len(e.attribs)
            elif not is_area(e):
                skipped += 1
    return texts, skipped


def write(doc, name):
    path = os.path.join(HERE, name + ".dxf")
    doc.saveas(path)
    doc = ezdxf.readfile(path)  # what the file says, not what was meant
    msp = doc.modelspace()
    units = doc.header.get("$INSUNITS", 0)
    texts, skipped = counts(doc)
    layers = [layer.dxf.name for layer in doc.layers]  # the table, then entities' layers
    for lay in [b for b in doc.blocks if not special(b.name)] + [msp]:
        for e in lay:
            for x in [e] + list(getattr(e, "attribs", [])):
                if not any(x.dxf.layer.lower() == n.lower() for n in layers):
                    layers.append(x.dxf.layer)
    lines = [f"unit {UNITS[units]!r}", "layers " + " ".join(layers), f"texts {texts}",
             f"skipped {skipped}"]
    for e, m in explode(doc, msp, Matrix44()):
        if e.dxftype() in TEXTS or not is_area(e):
            continue
        a = area_of(e)
        ux, uy = m.transform_direction(Vec3(1, 0, 0)), m.transform_direction(Vec3(0, 1, 0))
        conformal = abs(ux.dot(uy)) < 1e-12 and math.isclose(ux.magnitude, uy.magnitude)
        if isinstance(a, tuple) and conformal:
            c = m.transform(Vec3(a[1], a[2], 0))
            lines.append(f"circle {e.dxf.layer} {c.x!r} {c.y!r} {a[3] * ux.magnitude!r}")
            continue
        if isinstance(a, tuple):  # a circle through a non-uniform scale: an ellipse
            a = Polygon([(v.x, v.y) for v in ConstructionArc((a[1], a[2]), a[3], 0, 360).flattening(FLAT)])
        a = affine_transform(a, [m[0, 0], m[1, 0], m[0, 1], m[1, 1],
                                 m[3, 0], m[3, 1]])
        c = a.centroid
        lines.append(f"poly {e.dxf.layer} {a.area!r} {c.x!r} {c.y!r}")
    with open(os.path.join(HERE, name + ".expect"), "w") as f:
        f.write("\n".join(lines) + "\n")
    assert os.path.getsize(path) < 100_000, path


def shapes():
    """Every area entity kind in model space, in mm."""
    doc = ezdxf.new("R2018", units=4)
    for n in ("METAL", "via", "Fill"):
        doc.layers.add(n)
    msp = doc.modelspace()
    m = {"layer": "METAL"}
    msp.add_lwpolyline([(0, 0), (10, 0), (10, 5), (0, 5)], close=True, dxfattribs=m)
    # a slot: two half circles by bulges
    msp.add_lwpolyline([(20, 0, 1), (30, 0, 0), (30, 4, 1), (20, 4, 0)], format="xyb",
                       close=True, dxfattribs=m)
    # clockwise bulges, a quarter arc
    msp.add_lwpolyline([(40, 0, 0), (50, 0, -0.4142135623730951), (50, 10, 0)], format="xyb",
                       close=True, dxfattribs=m)
    msp.add_lwpolyline([(0, 20), (10, 20), (10, 30)], dxfattribs=m)  # open: no area
    msp.add_lwpolyline([(0, 40), (10, 40), (10, 50)], dxfattribs={"layer": "via",
                                                                   "const_width": 0.5})
    msp.add_lwpolyline([(20, 40, 1, 1), (30, 40, 1, 1), (30, 50, 1, 1)], format="xyseb",
                       dxfattribs={"layer": "via"})
    p2 = msp.add_polyline2d([(60, 0, 0, 0, 0.5), (70, 0, 0, 0, 0), (70, 8, 0, 0, 0)],
                            format="xyseb", close=True, dxfattribs={"layer": "via"})
    assert p2.is_2d_polyline
    msp.add_polyline3d([(80, 0, 1), (90, 0, 2), (85, 6, 3)], close=True,
                       dxfattribs={"layer": "via"})
    msp.add_circle((5, 60), 3, dxfattribs=m)
    msp.add_arc((20, 60), 3, 0, 90, dxfattribs=m)  # no area
    msp.add_line((0, 70), (10, 70), dxfattribs=m)  # no area
    msp.add_ellipse((40, 60), major_axis=(6, 3), ratio=0.4, dxfattribs=m)
    msp.add_ellipse((60, 60), major_axis=(6, 0), ratio=0.5, start_param=0, end_param=2,
                    dxfattribs=m)  # an elliptic arc: no area
    msp.add_solid([(0, 80), (10, 80), (0, 90), (10, 92)], dxfattribs=m)  # 1-2-4-3
    msp.add_solid([(20, 80), (30, 80), (25, 90)], dxfattribs=m)
    msp.add_trace([(40, 80), (50, 80), (40, 85), (50, 86)], dxfattribs=m)
    msp.add_3dface([(60, 80, 0), (70, 80, 0), (72, 90, 1), (60, 88, 1)], dxfattribs=m)
    msp.add_text("hello", dxfattribs={"layer": "METAL", "insert": (0, 100)})
    msp.add_mtext("world", dxfattribs={"layer": "METAL", "insert": (0, 110)})
    # hatch: an outer polyline path (counterclockwise) and a hole with a bulge (clockwise)
    h = msp.add_hatch(dxfattribs={"layer": "Fill"})
    h.paths.add_polyline_path([(0, 120), (30, 120), (30, 140), (0, 140)], is_closed=True,
                              flags=1)
    h.paths.add_polyline_path([(5, 125, 0), (5, 135, 0), (15, 135, 0), (15, 125, -0.5)], is_closed=True, flags=16)
    # hatch: an edge path of a line, a clockwise arc, a line and an elliptic arc
    h = msp.add_hatch(dxfattribs={"layer": "Fill"})
    ep = h.paths.add_edge_path(flags=1)
    ep.add_line((40, 120), (60, 120))
    ep.add_arc((60, 125), 5, start_angle=0, end_angle=270, ccw=False)  # 270 down to 0, cw
    ep.add_line((65, 125), (65, 135))
    ep.add_ellipse((52.5, 135), major_axis=(12.5, 0), ratio=0.4, start_angle=0,
                   end_angle=180, ccw=True)
    ep.add_line((40, 135), (40, 120))
    # a clockwise elliptic arc edge: over the upper half from 0 to 180 degrees, clockwise
    h = msp.add_hatch(dxfattribs={"layer": "Fill"})
    ep = h.paths.add_edge_path(flags=1)
    ep.add_line((80, 120), (100, 120))
    ep.add_ellipse((90, 120), major_axis=(10, 0), ratio=0.5, start_angle=0, end_angle=180,
                   ccw=False)
    # splines: clamped with ends that meet (an area), rational and flagged closed, unclamped
    # with the first control points repeated (closed), open (no area); a hatch spline edge
    s = {"layer": "via"}
    msp.add_open_spline([(0, 150), (10, 145), (20, 160), (5, 170), (0, 150)], dxfattribs=s)
    rs = msp.add_rational_spline([(30, 150), (40, 150), (45, 165), (30, 160), (30, 150)],
                                 [1, 3, 0.5, 2, 1], degree=2, dxfattribs=s)
    rs.closed = True
    ring = [(60, 150), (70, 152), (72, 162), (62, 165), (55, 158)]
    msp.add_open_spline(ring + ring[:3], degree=3, knots=uniform_knot_vector(8, 4),
                        dxfattribs=s)
    msp.add_open_spline([(80, 150), (90, 160), (100, 150)], degree=2, dxfattribs=s)
    h = msp.add_hatch(dxfattribs={"layer": "Fill"})
    ep = h.paths.add_edge_path(flags=1)
    ep.add_spline(control_points=[(0, 180), (5, 190), (15, 175), (20, 185)], degree=3)
    ep.add_line((20, 185), (20, 170))
    ep.add_line((20, 170), (0, 170))
    ep.add_line((0, 170), (0, 180))
    # mirrored by the extrusion (0, 0, -1): x -> -x
    neg = {"layer": "METAL", "extrusion": (0, 0, -1)}
    msp.add_lwpolyline([(100, 0, 0.5), (110, 0, 0), (110, 5, 0), (100, 5, 0)], format="xyb",
                       close=True, dxfattribs=neg)
    msp.add_circle((100, 20), 2, dxfattribs=neg)
    h = msp.add_hatch(dxfattribs=dict(neg, layer="Fill"))
    h.paths.add_polyline_path([(100, 40, 0), (110, 40, 0.3), (110, 50, 0)], is_closed=True)
    msp.add_solid([(100, 60), (106, 60), (100, 66)], dxfattribs=neg)
    # paper space is not the design
    doc.layouts.get("Layout1").add_circle((0, 0), 50, dxfattribs={"layer": "via"})
    write(doc, "shapes")


def blocks():
    """Blocks with base points, nested, placed rotated, scaled, mirrored, in arrays, with
    attributes; in micrometres."""
    doc = ezdxf.new("R2000", units=13)
    doc.layers.add("A")
    doc.layers.add("B")
    unit = doc.blocks.new("UNIT", base_point=(1, 1))
    unit.add_lwpolyline([(1, 1), (4, 1), (4, 2), (2, 2), (2, 3), (1, 3)], close=True,
                        dxfattribs={"layer": "A"})  # an L: shows rotation and mirroring
    unit.add_circle((3, 3), 0.5, dxfattribs={"layer": "B"})
    unit.add_line((0, 0), (1, 1), dxfattribs={"layer": "A"})
    unit.add_attdef("TAG", (0, 0))
    pair = doc.blocks.new("PAIR", base_point=(0, 0))
    pair.add_blockref("UNIT", (0, 0), dxfattribs={"layer": "A"})
    pair.add_blockref("UNIT", (10, 0), dxfattribs={"layer": "A", "rotation": 90})
    pair.add_solid([(0, -5), (3, -5), (0, -3), (3, -3)], dxfattribs={"layer": "B"})
    msp = doc.modelspace()
    msp.add_blockref("UNIT", (0, 0))
    msp.add_blockref("UNIT", (20, 0), dxfattribs={"rotation": 30, "xscale": 2, "yscale": 2})
    msp.add_blockref("UNIT", (40, 0), dxfattribs={"xscale": -1, "yscale": 1})
    msp.add_blockref("UNIT", (60, 0), dxfattribs={"xscale": 1.5, "yscale": -1.5,
                                                  "rotation": 45})
    msp.add_blockref("UNIT", (80, 0), dxfattribs={"xscale": -1, "yscale": -1})
    msp.add_blockref("UNIT", (100, 0), dxfattribs={"extrusion": (0, 0, -1), "rotation": 20})
    arr = msp.add_blockref("UNIT", (0, 40), dxfattribs={"rotation": 15})
    arr.grid(size=(2, 3), spacing=(8, 6))
    msp.add_blockref("PAIR", (0, 80), dxfattribs={"rotation": -90, "xscale": 0.5,
                                                  "yscale": 0.5})
    ref = msp.add_blockref("UNIT", (40, 80))
    ref.add_attrib("TAG", "value", (40, 80))
    ref.add_attrib("TAG2", "value2", (40, 82))
    # non-uniform scales: flattened into the cell that places them (circles become ellipses)
    msp.add_blockref("UNIT", (0, 120), dxfattribs={"xscale": 2, "yscale": 1, "rotation": 30})
    nu = msp.add_blockref("PAIR", (40, 120), dxfattribs={"xscale": 1, "yscale": 3})
    nu.grid(size=(2, 2), spacing=(20, 12))
    msp.add_blockref("UNIT", (80, 120), dxfattribs={"xscale": -1.5, "yscale": 0.5,
                                                    "extrusion": (0, 0, -1)})
    stretched = doc.blocks.new("NU", base_point=(0, 0))
    stretched.add_blockref("UNIT", (0, 0), dxfattribs={"xscale": 1, "yscale": 2})
    msp.add_blockref("NU", (0, 160))
    msp.add_blockref("NU", (20, 160), dxfattribs={"rotation": 90, "xscale": 2, "yscale": 2})
    write(doc, "blocks")


def r12():
    """An R12 file: POLYLINE/VERTEX/SEQEND, no $INSUNITS (read as mm)."""
    doc = ezdxf.new("R12")
    msp = doc.modelspace()
    msp.add_polyline2d([(0, 0), (10, 0), (10, 10), (0, 10)], close=True,
                       dxfattribs={"layer": "P"})
    msp.add_polyline2d([(20, 0, 0, 0, 1), (30, 0, 0, 0, 0), (30, 10, 0, 0, 0)],
                       format="xyseb", close=True, dxfattribs={"layer": "P"})
    msp.add_polyline2d([(0, 20), (10, 20)], dxfattribs={"layer": "P"})  # open
    msp.add_polyline2d([(0, 30, 2, 2), (10, 30, 2, 2), (10, 40, 2, 2)], format="xyse",
                       dxfattribs={"layer": "Q"})  # wide
    blk = doc.blocks.new("B", base_point=(5, 5))
    blk.add_circle((5, 5), 2, dxfattribs={"layer": "Q"})
    msp.add_blockref("B", (50, 50), dxfattribs={"xscale": 3, "yscale": 3})
    write(doc, "r12")


def inch():
    doc = ezdxf.new("R2010", units=1)
    doc.modelspace().add_lwpolyline([(0, 0), (1, 0), (1, 1)], close=True)
    write(doc, "inch")


if __name__ == "__main__":
    shapes()
    blocks()
    r12()
    inch()
