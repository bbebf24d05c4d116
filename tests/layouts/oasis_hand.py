#!/usr/bin/python3
"""oasis_hand.oas: the OASIS records KLayout does not write, written byte by byte.

KLayout writes RECTANGLE, POLYGON (point lists 0, 1, 4), PATH, TEXT, PLACEMENT, CIRCLE and the
repetitions 1-3 and 8-11; this file holds the rest for tests/test_layouts_oasis.c: TRAPEZOID
(23, 24, 25, both orientations, deltas of both signs), all 26 CTRAPEZOID types, point lists
2, 3 and 5, explicit and mixed path extensions, repetitions 4-7 and modal reuse (type 0), every
real number type (magnifications and angles of PLACEMENT 18, property values), every property
value type, PROPERTY 29, XNAME, XELEMENT, XGEOMETRY, LAYERNAME, PAD, XYRELATIVE, a CBLOCK,
cells by reference number whose CELLNAME comes after them, and a cell by name.
KLayout reads it back (oasis_klayout.py) and writes oasis_hand.txt, its flattened polygons:
the reader's output is compared with that, not with numbers of our own.

Run: /usr/bin/python3 tests/layouts/oasis_hand.py
"""
import os
import struct
import zlib

here = os.path.dirname(os.path.abspath(__file__))


def u(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def s(v):
    return u((-v << 1) | 1 if v < 0 else v << 1)


def st(x):
    x = x.encode() if isinstance(x, str) else x
    return u(len(x)) + x


def g1(d, mag):  # g-delta form 1: direction 0-7 (E N W S NE NW SW SE)
    return u(mag << 4 | d << 1)


def g2(x, y):  # g-delta form 2
    return u(abs(x) << 2 | (2 if x < 0 else 0) | 1) + s(y)


def real(t, *a):
    if t in (0, 1, 2, 3):
        return u(t) + u(a[0])
    if t in (4, 5):
        return u(t) + u(a[0]) + u(a[1])
    if t == 6:
        return u(6) + struct.pack("<f", a[0])
    return u(7) + struct.pack("<d", a[0])


def rect(layer=None, dt=None, w=None, h=None, x=None, y=None, rep=None, square=False):
    info = (0x80 if square else 0) | (0x40 if w is not None else 0) | \
        (0x20 if h is not None else 0) | (0x10 if x is not None else 0) | \
        (0x08 if y is not None else 0) | (0x04 if rep is not None else 0) | \
        (0x02 if dt is not None else 0) | (0x01 if layer is not None else 0)
    b = bytes([20, info])
    for v, f in ((layer, u), (dt, u), (w, u), (h, u), (x, s), (y, s)):
        if v is not None:
            b += f(v)
    return b + (rep or b"")


def geo(rid, head, layer, dt, fields, x, y, rep):
    """A geometry record: info = head | X Y R D L, then layer, datatype, fields, x, y, rep."""
    info = head | (0x10 if x is not None else 0) | (0x08 if y is not None else 0) | \
        (0x04 if rep is not None else 0) | (0x02 if dt is not None else 0) | \
        (0x01 if layer is not None else 0)
    b = bytes([rid, info])
    if layer is not None:
        b += u(layer)
    if dt is not None:
        b += u(dt)
    b += fields
    if x is not None:
        b += s(x)
    if y is not None:
        b += s(y)
    return b + (rep or b"")


def polygon(pl, x, y, layer=None, dt=None, rep=None):
    return geo(21, 0x20 if pl is not None else 0, layer, dt, pl or b"", x, y, rep)


def path(hw, ext, pl, x, y, layer=None, dt=None, rep=None):
    head = (0x40 if hw is not None else 0) | (0x80 if ext is not None else 0) | \
        (0x20 if pl is not None else 0)
    f = (u(hw) if hw is not None else b"") + (ext or b"") + (pl or b"")
    return geo(22, head, layer, dt, f, x, y, rep)


def trap(rid, vertical, w, h, da, db, x, y, layer=None, dt=None, rep=None):
    head = (0x80 if vertical else 0) | (0x40 if w is not None else 0) | \
        (0x20 if h is not None else 0)
    f = (u(w) if w is not None else b"") + (u(h) if h is not None else b"")
    if rid in (23, 24):
        f += s(da)
    if rid in (23, 25):
        f += s(db)
    return geo(rid, head, layer, dt, f, x, y, rep)


def ctrap(t, w, h, x, y, layer=None, dt=None, rep=None):
    head = (0x80 if t is not None else 0) | (0x40 if w is not None else 0) | \
        (0x20 if h is not None else 0)
    f = (u(t) if t is not None else b"") + (u(w) if w is not None else b"") + \
        (u(h) if h is not None else b"")
    return geo(26, head, layer, dt, f, x, y, rep)


def placement(cell, x, y, aa=0, flip=False, rep=None):
    """PLACEMENT 17; cell: int (reference number), str (name) or None (modal)."""
    info = (0x80 if cell is not None else 0) | (0x40 if isinstance(cell, int) else 0) | \
        (0x20 if x is not None else 0) | (0x10 if y is not None else 0) | \
        (0x08 if rep is not None else 0) | aa << 1 | (1 if flip else 0)
    b = bytes([17, info])
    if cell is not None:
        b += u(cell) if isinstance(cell, int) else st(cell)
    if x is not None:
        b += s(x)
    if y is not None:
        b += s(y)
    return b + (rep or b"")


def placement18(cell, x, y, mag=None, angle=None, flip=False, rep=None):
    info = (0x80 if cell is not None else 0) | (0x40 if isinstance(cell, int) else 0) | \
        (0x20 if x is not None else 0) | (0x10 if y is not None else 0) | \
        (0x08 if rep is not None else 0) | (0x04 if mag is not None else 0) | \
        (0x02 if angle is not None else 0) | (1 if flip else 0)
    b = bytes([18, info])
    if cell is not None:
        b += u(cell) if isinstance(cell, int) else st(cell)
    b += (mag or b"") + (angle or b"")
    if x is not None:
        b += s(x)
    if y is not None:
        b += s(y)
    return b + (rep or b"")


def text(string, x, y, layer=None, tt=None, rep=None):
    info = (0x40 if string is not None else 0) | (0x20 if isinstance(string, int) else 0) | \
        (0x10 if x is not None else 0) | (0x08 if y is not None else 0) | \
        (0x04 if rep is not None else 0) | (0x02 if tt is not None else 0) | \
        (0x01 if layer is not None else 0)
    b = bytes([19, info])
    if string is not None:
        b += u(string) if isinstance(string, int) else st(string)
    if layer is not None:
        b += u(layer)
    if tt is not None:
        b += u(tt)
    if x is not None:
        b += s(x)
    if y is not None:
        b += s(y)
    return b + (rep or b"")


def prop(name, values, ref=False):
    """PROPERTY 28 with a name (string or reference number) and values (encoded)."""
    n = len(values)
    info = (min(n, 15) << 4) | 0x04 | (0x02 if ref else 0)
    b = bytes([28, info]) + (u(name) if ref else st(name))
    if n >= 15:
        b += u(n)
    return b + b"".join(values)


def rep(t, *f):
    return u(t) + b"".join(f)


# ---- the file -----------------------------------------------------------------------------
out = bytearray(b"%SEMI-OASIS\r\n")
out += bytes([1]) + st("1.0") + real(0, 1000) + u(0) + bytes(12)  # START: 1 nm, offsets here
out += bytes([0, 0])                                                # PAD
out += bytes([11]) + st("METAL") + u(3) + u(1) + u(3) + u(0)        # LAYERNAME 1/0
out += bytes([12]) + st("LABELS") + u(4) + u(10) + u(12) + u(0)    # LAYERNAME text 10-12/*
out += bytes([5]) + st("label one")                                 # TEXTSTRING 0
out += bytes([7]) + st("PNAME")                                     # PROPNAME 0
out += bytes([9]) + st("a prop string")                             # PROPSTRING 0
out += bytes([30]) + u(7) + st("xname")                             # XNAME implicit
out += prop("FILEPROP", [u(8) + u(5)])

# SUB: by name
cell = bytearray(bytes([14]) + st("SUB"))
cell += rect(8, 0, 1000, 400, 0, 0)
cell += polygon(u(4) + u(2) + g1(0, 600) + g1(1, 900), 0, 0)        # triangle, g-delta form 1
cell += text("sub", 10, 10, 10, 0)
out += cell

# cell number 1 (its CELLNAME comes at the end): shapes on layer 9
out += bytes([13]) + u(1)
out += rect(9, 0, 300, None, 0, 0, square=True)
out += placement("SUB", 2000, 0)  # nested: SUB2 places SUB

# HAND: number 0 (CELLNAME at the end)
h = bytearray(bytes([13]) + u(0))
# rectangles: plain, square, modal reuse of w/h/layer/datatype
h += rect(1, 0, 1000, 500, 0, 0)
h += rect(None, None, 700, None, 2000, None, square=True)
h += rect(None, None, None, None, 4000, 100)
h += rect(None, 2, 300, 900, 6000, -400)
# polygons: point lists 0-5
h += polygon(u(0) + u(4) + s(1000) + s(500) + s(-400) + s(700), 0, 2000, 2, 0)  # implied pt
h += polygon(u(1) + u(4) + s(800) + s(600) + s(-300) + s(-400), 2000, 2000)
h += polygon(u(2) + u(3) + u(500 << 2 | 0) + u(700 << 2 | 1) + u(200 << 2 | 2), 4000, 2000)
h += polygon(u(3) + u(3) + u(600 << 3 | 0) + u(300 << 3 | 5) + u(300 << 3 | 2), 6000, 2000)
h += polygon(u(4) + u(3) + g2(700, 100) + g2(-300, 600) + g1(2, 200), 8000, 2000)
h += polygon(u(5) + u(3) + g2(400, 0) + g2(-200, 300) + g2(-400, 100), 10000, 2000)
h += polygon(None, 12000, 2000)  # the modal point list again
# paths on layer 3: extension schemes (SS EE): flush, half-width, explicit, modal
pl = u(2) + u(3) + u(800 << 2 | 0) + u(600 << 2 | 1) + u(500 << 2 | 0)
h += path(50, u(0b0101), pl, 0, 4000, 3, 0)
h += path(None, u(0b1010), None, 2000, 4000)
h += path(None, u(0b1111) + s(120) + s(-30), None, 4000, 4000)
h += path(80, u(0b0111) + s(200), u(3) + u(2) + u(500 << 3 | 4) + u(400 << 3 | 0), 6000, 4000)
h += path(None, u(0), u(4) + u(1) + g2(700, 300), 8000, 4000)  # modal extensions, slanted
h += path(None, u(0b1001), u(0) + u(3) + s(600) + s(500) + s(-300), 10000, 4000)  # 1-deltas
# trapezoids on layer 4
h += trap(23, False, 1000, 400, 200, 300, 0, 6000, 4, 0)
h += trap(23, False, None, None, -200, -300, 1500, 6000)
h += trap(24, False, None, None, 250, 0, 3000, 6000)
h += trap(25, False, None, None, 0, -250, 4500, 6000)
h += trap(23, True, 400, 1000, 200, 300, 6000, 6000)
h += trap(23, True, None, None, -200, -300, 6600, 6000)
h += trap(24, True, None, None, -250, 0, 7200, 6000)
h += trap(25, True, None, None, 0, 250, 7800, 6000)
# all 26 ctrapezoid types on layer 5
for t in range(26):
    if t < 8:
        w, hh = 400, 200
    elif t < 16:
        w, hh = 200, 400
    elif t < 20 or t in (22, 23):
        w, hh = 300, None
    elif t in (20, 21):
        w, hh = None, 150
    elif t == 24:
        w, hh = 400, 250
    else:
        w, hh = 350, None
    h += ctrap(t, w, hh, 800 * t, 8000, 5 if t == 0 else None, 0 if t == 0 else None)
h += ctrap(None, None, None, 800 * 26, 8000)  # modal type (25) and its box
# repetitions on layer 6, each on a 100 x 50 rectangle
h += rect(6, 0, 100, 50, 0, 10000, rep(1, u(1), u(2), u(300), u(200)))
h += rect(None, None, None, None, 2000, 10000, rep(2, u(3), u(250)))
h += rect(None, None, None, None, 4000, 10000, rep(3, u(2), u(150)))
h += rect(None, None, None, None, 5000, 10000, rep(4, u(2), u(200), u(500), u(150)))
h += rect(None, None, None, None, 7000, 10000, rep(5, u(1), u(50), u(3), u(8)))
h += rect(None, None, None, None, 9000, 10000, rep(6, u(1), u(100), u(400)))
h += rect(None, None, None, None, 9500, 10000, rep(7, u(2), u(25), u(4), u(6), u(20)))
h += rect(None, None, None, None, 10000, 10000,
          rep(8, u(1), u(0), g2(300, 100), g2(-100, 250)))
h += rect(None, None, None, None, 12000, 10000, rep(9, u(2), g1(4, 200)))
h += rect(None, None, None, None, 13000, 10000,
          rep(10, u(3), g2(300, 50), g1(1, 200), g2(-150, -30), g2(700, 1)))
h += rect(None, None, None, None, 15000, 10000,
          rep(11, u(2), u(10), g2(30, 5), g1(3, 20), g1(6, 7)))
h += rect(None, None, None, None, 17000, 10000, rep(0))  # type 0: the last one again
# relative coordinates on layer 7
h += bytes([16])
h += rect(7, 0, 200, 200, 0, 12000)
h += rect(None, None, None, None, 500, None)
h += rect(None, None, None, None, 500, 300)
h += polygon(u(4) + u(2) + g2(100, 0) + g2(0, 100), 300, None)
h += bytes([15])
# placements of SUB (by name, then modal) and of number 1
h += placement("SUB", 0, 14000)
for aa in range(4):
    h += placement(None, 3000 * (aa + 1), 14000, aa=aa, flip=False)
    h += placement(None, 3000 * (aa + 1), 18000, aa=aa, flip=True)
h += placement18("SUB", 16000, 14000, mag=real(2, 2), angle=real(6, 30.0))
h += placement18(None, 19000, 14000, mag=real(4, 3, 2), angle=real(7, -45.0), flip=True)
h += placement18(None, 22000, 14000, angle=real(1, 90))
h += placement18(None, 25000, 14000, angle=real(5, 135, 1))
h += placement18(None, 28000, 14000, mag=real(0, 1), angle=real(3, 1))  # -1 degree
h += placement(1, 0, 22000, rep=rep(1, u(0), u(1), u(3000), u(2500)))
h += placement18(1, 10000, 22000, angle=real(0, 60), rep=rep(9, u(0), g2(1500, 900)))
# texts, properties and extensions: read over
h += text(0, 0, -1000, 10, 0)
h += text("another", 500, -1000, rep=rep(2, u(1), u(400)))
h += text(None, 900, -1500)
h += prop(0, [real(v, *((3, 7) if v in (4, 5) else (1.5,) if v in (6, 7) else (9,)))
              for v in range(8)], ref=True)
h += prop("VALUES", [u(8) + u(12), u(9) + s(-12), u(10) + st("a"), u(11) + st(b"\x01b"),
                     u(12) + st("n"), u(13) + u(0), u(14) + u(0), u(15) + u(0)] * 2)
h += bytes([29])
h += bytes([28, 0x08])  # modal name, modal values
h += bytes([32]) + u(3) + st(b"xelement data")
h += bytes([33, 0x1B]) + u(2) + u(9) + u(0) + st(b"xgeometry") + s(100) + s(100)
# a CBLOCK holding more shapes (layer 1, datatype 5) and a PAD
inner = rect(1, 5, 111, 222, -3000, 0) + bytes([0]) + \
    polygon(u(4) + u(2) + g2(500, 0) + g2(-250, 400), -3000, 1000)
z = zlib.compressobj(9, zlib.DEFLATED, -15)
comp = z.compress(inner) + z.flush()
h += bytes([34]) + u(0) + u(len(inner)) + u(len(comp)) + comp
h += rect(None, None, None, None, -3000, 2000)  # modal variables set inside the CBLOCK
out += h

out += bytes([3]) + st("HAND")  # CELLNAME 0 and 1, after their cells
out += bytes([3]) + st("SUB2")
out += bytes([28, 0x14]) + st("CELLPROP") + u(8) + u(1)
# END: padding to 256 bytes, no validation
end = bytearray([2])
pad = 256 - 1 - 1
end += bytes([0x80] * (pad - 1) + [0]) + u(0)
out += end
open(os.path.join(here, "oasis_hand.oas"), "wb").write(out)
