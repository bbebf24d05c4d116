#!/usr/bin/env python3
"""Read an image file back with an independent reader and compare it with the raw stream it
was written from (tests/test_tiff.c, tests/test_bmp.c).

  images.py tiff FILE RAW WIDTH HEIGHT DEPTH [key=value ...]
      python3-tifffile; keys: bigtiff=0|1, compression=1|5|8|32773 (TIFF codes),
      xres=PIXELS_PER_CM, yres=..., strip_rows=N
  images.py bmp FILE RAW WIDTH HEIGHT DEPTH [ppm=X,Y]
      python3-pil
  images.py invalid tiff|bmp FILE
      exit 0 when the reader refuses the file (an unfinished one)

RAW holds the stream's bytes: rows of WIDTH samples (8-bit, 16-bit little-endian), or at
depth 1, 2, 4 rows packed MSB-first (the first pixel in the high bits), each padded to a
whole byte; depths 2 and 4 compared as levels (TIFF read by PIL). Exit 0 when equal, 1 otherwise
with the first difference."""
import sys

import numpy as np


def raw_pixels(path, w, h, depth):
    b = np.fromfile(path, dtype=np.uint8)
    if depth == 8:
        return b.reshape(h, w)
    if depth == 16:
        return b.view("<u2").reshape(h, w)
    if depth == 1:
        rb = (w + 7) // 8
        return np.unpackbits(b.reshape(h, rb), axis=1)[:, :w]
    per = 8 // depth  # 2 and 4: the first pixel of a byte in its high bits
    rb = (w * depth + 7) // 8
    b = b.reshape(h, rb)
    out = np.zeros((h, rb * per), dtype=np.uint8)
    for j in range(per):
        out[:, j::per] = (b >> (8 - depth * (j + 1))) & ((1 << depth) - 1)
    return out[:, :w]


def gray_levels(img, depth):
    """8-bit gray (a reader's expansion of 2^depth levels over 0..255) as levels."""
    top = (1 << depth) - 1
    return np.rint(img.astype(np.float64) * top / 255).astype(np.uint8)


def compare(got, want, what):
    if got.shape != want.shape:
        print(f"{what}: shape {got.shape}, the stream's {want.shape}")
        return 1
    bad = np.argwhere(got != want)
    if bad.size:
        y, x = bad[0]
        print(f"{what}: {len(bad)} pixels differ, first ({x}, {y}): {got[y, x]} vs {want[y, x]}")
        return 1
    return 0


def check_tiff(path, want, depth, keys):
    if depth in (2, 4):  # tifffile needs imagecodecs to unpack these; PIL reads them
        from PIL import Image
        with Image.open(path) as im:
            if im.format != "TIFF" or im.info.get("compression", "raw") != "raw":
                print(f"format {im.format} {im.info.get('compression')}")
                return 1
            return compare(gray_levels(np.array(im.convert("L")), depth), want, path)
    import tifffile
    with tifffile.TiffFile(path) as t:
        page = t.pages[0]
        got = page.asarray()
        if depth == 1:
            got = got.astype(np.uint8)
        if page.photometric != 1:
            print(f"photometric {page.photometric}, want 1 (MinIsBlack)")
            return 1
        if "bigtiff" in keys and int(t.is_bigtiff) != int(keys["bigtiff"]):
            print(f"bigtiff {t.is_bigtiff}, want {keys['bigtiff']}")
            return 1
        if "compression" in keys and int(page.compression) != int(keys["compression"]):
            print(f"compression {int(page.compression)}, want {keys['compression']}")
            return 1
        tags = page.tags
        if "strip_rows" in keys and tags["RowsPerStrip"].value != int(keys["strip_rows"]):
            print(f"RowsPerStrip {tags['RowsPerStrip'].value}, want {keys['strip_rows']}")
            return 1
        for k, tag in (("xres", "XResolution"), ("yres", "YResolution")):
            if k in keys:
                num, den = tags[tag].value
                if abs(num / den - float(keys[k])) > 1e-3 * float(keys[k]):
                    print(f"{tag} {num}/{den}, want {keys[k]} per cm")
                    return 1
                if tags["ResolutionUnit"].value != 3:
                    print(f"ResolutionUnit {tags['ResolutionUnit'].value}, want 3 (cm)")
                    return 1
        return compare(got, want, path)


def check_bmp(path, want, depth, keys):
    from PIL import Image
    with Image.open(path) as im:
        if im.format != "BMP":
            print(f"format {im.format}")
            return 1
        if "ppm" in keys:
            x, y = (float(v) for v in keys["ppm"].split(","))
            dpi = im.info.get("dpi", (0, 0))
            # PIL reports dots per inch from the pixels per metre
            if abs(dpi[0] / (x * 0.0254) - 1) > 1e-5 or abs(dpi[1] / (y * 0.0254) - 1) > 1e-5:
                print(f"dpi {dpi}, want {x * 0.0254}, {y * 0.0254}")
                return 1
        got = np.array(im.convert("L"))
        if depth == 1:
            got = (got > 127).astype(np.uint8)
        elif depth == 4:
            got = gray_levels(got, depth)
        return compare(got, want, path)


def main(argv):
    if len(argv) >= 3 and argv[0] == "invalid":
        try:
            if argv[1] == "tiff":
                import tifffile
                with tifffile.TiffFile(argv[2]) as t:
                    t.pages[0].asarray()
            else:
                from PIL import Image
                with Image.open(argv[2]) as im:
                    im.load()
        except Exception as e:  # any refusal is what we want
            print(f"refused: {type(e).__name__}: {e}")
            return 0
        print(f"{argv[2]}: read as a valid {argv[1]}")
        return 1
    if len(argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    kind, path, raw = argv[0], argv[1], argv[2]
    w, h, depth = int(argv[3]), int(argv[4]), int(argv[5])
    keys = dict(a.split("=", 1) for a in argv[6:])
    want = raw_pixels(raw, w, h, depth)
    return check_tiff(path, want, depth, keys) if kind == "tiff" else check_bmp(path, want, depth, keys)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
