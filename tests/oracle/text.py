#!/usr/bin/env python3
"""The text source's outlines, written from docs/text.md alone with FreeType's Python binding
(Debian python3-freetype), as rings for the coverage oracle (tests/oracle/coverage.py):

    python3 tests/oracle/text.py FONT TEXT HEIGHT X Y ALIGN ANCHOR ROTATE MIRROR W H > CASES

The capital height is the H glyph's top (DejaVu's OS/2 cap height is the same number), glyphs
follow by their advances (no kerning), lines are the font's line height apart, the anchor goes
to (X, Y), mirrored left-right then turned ROTATE degrees counterclockwise as seen (y down).
Curves are cut into chords far finer than tessera's (1e-4 px), so the two differ by less than
one 8-bit step of area. The rect is [0, W) x [0, H)."""
import math
import sys

import freetype

FLAGS = freetype.FT_LOAD_NO_SCALE | freetype.FT_LOAD_NO_HINTING | freetype.FT_LOAD_NO_BITMAP


def bezier(pts, n):
    out = []
    for i in range(1, n + 1):
        t = i / n
        q = list(pts)
        while len(q) > 1:  # de Casteljau
            q = [((1 - t) * a[0] + t * b[0], (1 - t) * a[1] + t * b[1]) for a, b in zip(q, q[1:])]
        out.append(q[0])
    return out


def glyph_rings(face, ch, scale):
    face.load_char(ch, FLAGS)
    rings = []

    def move_to(p, _):
        rings.append([(p.x, p.y)])

    def line_to(p, _):
        rings[-1].append((p.x, p.y))

    def conic_to(c, p, _):
        rings[-1] += bezier([rings[-1][-1], (c.x, c.y), (p.x, p.y)], 256)

    def cubic_to(c1, c2, p, _):
        rings[-1] += bezier([rings[-1][-1], (c1.x, c1.y), (c2.x, c2.y), (p.x, p.y)], 256)

    face.glyph.outline.decompose(None, move_to=move_to, line_to=line_to, conic_to=conic_to,
                                 cubic_to=cubic_to)
    return rings, face.glyph.advance.x


def main():
    font, text, height, x, y, align, anchor, rot, mirror, w, h = sys.argv[1:12]
    height, x, y, rot, w, h = float(height), float(x), float(y), float(rot), int(w), int(h)
    face = freetype.Face(font)
    face.load_char("H", FLAGS)
    cap = face.glyph.outline.get_bbox().yMax
    s = height / cap
    lines = text.split("\n")
    sp = face.height * s
    last = (len(lines) - 1) * sp
    ay = {"top": -height, "baseline": 0.0, "bottom": last, "middle": (last - height) / 2}[anchor]
    c, sn = math.cos(math.radians(rot)), math.sin(math.radians(rot))
    rings = []
    for k, line in enumerate(lines):
        glyphs = [glyph_rings(face, ch, s) for ch in line]
        width = sum(a for _, a in glyphs)
        dx = {"left": 0.0, "center": -width / 2, "right": -width}[align]
        pen = 0.0
        for rs, adv in glyphs:
            for r in rs:
                ring = []
                for fx, fy in r:
                    px, py = (pen + dx + fx) * s, k * sp - ay - fy * s
                    if mirror == "true":
                        px = -px
                    ring.append((x + c * px + sn * py, y + c * py - sn * px))
                rings.append(ring)
            pen += adv
    print("case 0 0 %d %d" % (w, h))
    for r in rings:
        print("ring %d" % len(r))
        for px, py in r:
            print("%.17g %.17g" % (px, py))


main()
