"""A tiny PNG writer (zlib + struct) for the oracle's test images and self-test.

write_png(path, samples, color_type, bit_depth, palette=None, interlace=False, filters=None,
          extra=()) writes `samples` (int array (h, w) or (h, w, channels)) with the given
colour type (0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA) and bit depth. `filters` is a
list of filter types cycled over the scanlines (default all five, 0..4, so a decoder meets
every filter). `extra` is a list of (chunk type, bytes) written before IDAT (gAMA, tRNS, ...).
"""

import struct
import zlib

import numpy as np

CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def _chunk(ctype, body):
    return (struct.pack(">I", len(body)) + ctype + body +
            struct.pack(">I", zlib.crc32(ctype + body) & 0xFFFFFFFF))


def _pack_row(row, depth):
    """row: 1-D int array of samples (all channels interleaved) -> scanline bytes."""
    row = [int(v) for v in row]
    if depth == 8:
        return bytes(row)
    if depth == 16:
        return b"".join(struct.pack(">H", v) for v in row)
    per = 8 // depth
    out = bytearray()
    for k in range(0, len(row), per):
        byte = 0
        for m in range(per):
            v = row[k + m] if k + m < len(row) else 0
            byte |= (v & ((1 << depth) - 1)) << (8 - depth * (m + 1))
        out.append(byte)
    return bytes(out)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    if pb <= pc:
        return b
    return c


def _filter(lines, bpp, filters, first_index):
    out = bytearray()
    prior = bytes(len(lines[0])) if lines else b""
    for n, line in enumerate(lines):
        ft = filters[(first_index + n) % len(filters)]
        res = bytearray(len(line))
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b = prior[i]
            c = prior[i - bpp] if i >= bpp else 0
            if ft == 0:
                p = 0
            elif ft == 1:
                p = a
            elif ft == 2:
                p = b
            elif ft == 3:
                p = (a + b) >> 1
            else:
                p = _paeth(a, b, c)
            res[i] = (line[i] - p) & 0xFF
        out.append(ft)
        out += res
        prior = line
    return bytes(out)


def write_png(path, samples, color_type, bit_depth, palette=None, interlace=False,
              filters=None, extra=()):
    s = np.asarray(samples)
    if s.ndim == 2:
        s = s[:, :, None]
    h, w, ch = s.shape
    assert ch == CHANNELS[color_type], (ch, color_type)
    assert int(s.max(initial=0)) < (1 << bit_depth) and int(s.min(initial=0)) >= 0
    filters = filters or [0, 1, 2, 3, 4]
    bpp = max(1, ch * bit_depth // 8)

    def encode(img, first):
        lines = [_pack_row(img[y].reshape(-1), bit_depth) for y in range(img.shape[0])]
        return _filter(lines, bpp, filters, first)

    if not interlace:
        raw = encode(s, 0)
    else:
        raw = b""
        k = 0
        for x0, y0, dx, dy in ADAM7:
            sub = s[y0::dy, x0::dx]
            if sub.shape[0] == 0 or sub.shape[1] == 0:
                continue
            raw += encode(sub, k)
            k += 1
    data = b"\x89PNG\r\n\x1a\n"
    data += _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0,
                                        1 if interlace else 0))
    for ctype, body in extra:
        if ctype != b"tRNS":
            data += _chunk(ctype, body)
    if palette is not None:
        data += _chunk(b"PLTE", bytes(int(v) for rgb in palette for v in rgb))
    for ctype, body in extra:
        if ctype == b"tRNS":
            data += _chunk(ctype, body)
    comp = zlib.compress(raw, 9)
    # two IDAT chunks when there is enough data, so a decoder must concatenate them
    cut = len(comp) // 2
    if cut > 0:
        data += _chunk(b"IDAT", comp[:cut]) + _chunk(b"IDAT", comp[cut:])
    else:
        data += _chunk(b"IDAT", comp)
    data += _chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)
