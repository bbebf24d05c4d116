# The OASIS files of tests/test_layouts_oasis.c, written by KLayout (the test peer) in batch mode:
#   cd tests/layouts && klayout -b -r oasis_klayout.py
# from oasis_src.gds (made by oasis_src.py with gdspy), in four ways: CBLOCK compression on or
# off times strict mode (name tables at the end, through the END record's offsets) on or off,
# with KLayout's shape-array detection on (compression level 2: arrays become repetitions) and
# its standard properties (PROPERTY records of several value types) written.
# Also oasis_circles.oas: KLayout writes a one-point path with round ends as a CIRCLE record;
# oasis_circles.txt lists those circles (centre, radius, database units) as KLayout has them.
import os

import pya

here = os.path.dirname(os.path.abspath(__file__))

ly = pya.Layout()
ly.read(os.path.join(here, "oasis_src.gds"))
for cblocks in (False, True):
    for strict in (False, True):
        o = pya.SaveLayoutOptions()
        o.format = "OASIS"
        o.oasis_compression_level = 2
        o.oasis_write_cblocks = cblocks
        o.oasis_strict_mode = strict
        o.oasis_write_std_properties = 2
        name = "oasis_%s_%s.oas" % ("cblock" if cblocks else "plain",
                                    "strict" if strict else "loose")
        ly.write(os.path.join(here, name), o)

c = pya.Layout()
c.dbu = 0.001
top = c.create_cell("CIRCLES")
l1 = c.layer(20, 0)
l2 = c.layer(21, 3)
truth = []
for (x, y, r, li, ld) in [(0, 0, 500, l1, (20, 0)), (3000, 1000, 1250, l1, (20, 0)),
                          (-2000, 4000, 10, l2, (21, 3))]:
    top.shapes(li).insert(pya.Path([pya.Point(x, y)], 2 * r, r, r, True))
    truth.append((ld[0], ld[1], x, y, r))
for i in range(6):  # a row of equal circles: one CIRCLE record with a repetition
    x, y, r = 10000 + 2000 * i, -3000, 400
    top.shapes(l2).insert(pya.Path([pya.Point(x, y)], 2 * r, r, r, True))
    truth.append((21, 3, x, y, r))
o = pya.SaveLayoutOptions()
o.format = "OASIS"
o.oasis_compression_level = 2
o.oasis_write_cblocks = False
c.write(os.path.join(here, "oasis_circles.oas"), o)
with open(os.path.join(here, "oasis_circles.txt"), "w") as f:
    f.write("# layer datatype x y r of the circles KLayout wrote into oasis_circles.oas\n")
    for t in truth:
        f.write("circle %d %d %d %d %d\n" % t)

# oasis_hand.oas (written byte by byte by oasis_hand.py) as KLayout reads it: the top cell
# flattened, every shape as a polygon in database units (placements applied in floating point,
# so nothing is rounded; KLayout outlines the paths), and the text count.
h = pya.Layout()
h.read(os.path.join(here, "oasis_hand.oas"))
top = h.cell("HAND")
with open(os.path.join(here, "oasis_hand.txt"), "w") as f:
    f.write("# oasis_hand.oas's HAND flattened by KLayout %s, database units\n"
            % pya.Application.instance().version())
    texts = 0
    for li in h.layer_indexes():
        info = h.get_info(li)
        it = top.begin_shapes_rec(li)
        while not it.at_end():
            sh = it.shape()
            t = pya.DCplxTrans(it.trans())  # keeps the displacement's fraction
            if sh.is_text():
                texts += 1
            elif sh.is_polygon() or sh.is_box() or sh.is_path() or sh.is_simple_polygon():
                pts = [t * pya.DPoint(p.x, p.y) for p in sh.polygon.each_point_hull()]
                pts = [(p.x, p.y) for p in pts]
                f.write("poly %d %d %d %s\n" % (info.layer, info.datatype, len(pts), " ".join(
                    "%.3f %.3f" % q for q in pts)))
            it.next()
    f.write("texts %d\n" % texts)
