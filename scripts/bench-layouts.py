#!/usr/bin/python3
"""Layout figures for docs/performance.md (the layout source, docs/layouts.md §8):

    /usr/bin/python3 scripts/bench-layouts.py build/tessera N [TMPDIR]

1. Load: N rotated rectangles (1 x 0.4 um, turned by 7 degrees times their index mod 13, on a
   2 um grid), as one GDSII array of one cell and flattened (N BOUNDARY records), written here
   by a few lines of struct (gdspy would take minutes); `tessera check` on a design over each
   (it opens, reads and indexes the file and counts the flattened shapes) under
   /usr/bin/time: wall seconds and peak RSS.
2. Body: the flattened layout at 0.25 um/px (every pixel row crosses shapes), `tessera profile`
   on the CPU (--seconds 4, 2 threads): MB/s of 8-bit samples; KLayout (klayout -b, LayoutView
   standalone, save_image_with_options with oversampling 3, monochrome) rendering a window of
   the same layout at the same pitch into a PNG, timed the same way (its limits: the image is
   a screen picture, oversampled, not an exact area; it is bounded by memory and by Qt's image
   size; `save_image` stops at 6400 px without options).
Prints a markdown table per part."""
import math
import os
import re
import struct
import subprocess
import sys
import time

tessera = sys.argv[1]
N = int(sys.argv[2])
tmp = sys.argv[3] if len(sys.argv) > 3 else "/tmp/tsr-bench-layouts"
os.makedirs(tmp, exist_ok=True)


def rec(rt, dt, data=b""):
    return struct.pack(">HBB", 4 + len(data), rt, dt) + data


def real8(v):
    """GDSII excess-64 8-byte real."""
    if v == 0:
        return b"\0" * 8
    s = 0x80 if v < 0 else 0
    v = abs(v)
    e = 64
    while v >= 1:
        v /= 16
        e += 1
    while v < 1 / 16:
        v *= 16
        e -= 1
    m = int(v * (1 << 56))
    return struct.pack(">B", s | e) + m.to_bytes(7, "big")


def s(x):
    x = x.encode()
    return x + (b"\0" if len(x) % 2 else b"")


def head(f):
    f.write(rec(0x00, 2, struct.pack(">h", 600)))
    f.write(rec(0x01, 2, struct.pack(">12h", *([2026, 11, 27, 0, 0, 0] * 2))))
    f.write(rec(0x02, 6, s("BENCH")))
    f.write(rec(0x03, 5, real8(1e-3) + real8(1e-9)))


def bgnstr(f, name):
    f.write(rec(0x05, 2, struct.pack(">12h", *([2026, 11, 27, 0, 0, 0] * 2))))
    f.write(rec(0x06, 6, s(name)))


def rect_pts(cx, cy, a):
    c, sn = math.cos(a), math.sin(a)
    pts = [(cx + x * c - y * sn, cy + x * sn + y * c)
           for x, y in ((-500, -200), (500, -200), (500, 200), (-500, 200))]
    pts = [(int(round(x)), int(round(y))) for x, y in pts]
    return pts + [pts[0]]


def boundary(f, pts):
    f.write(b"\x00\x04\x08\x00")                       # BOUNDARY
    f.write(b"\x00\x06\x0d\x02\x00\x01")               # LAYER 1
    f.write(b"\x00\x06\x0e\x02\x00\x00")               # DATATYPE 0
    f.write(rec(0x10, 3, struct.pack(">10i", *[v for p in pts for v in p])))
    f.write(b"\x00\x04\x11\x00")                       # ENDEL


side = int(math.ceil(math.sqrt(N)))
flat = os.path.join(tmp, "flat.gds")
arr = os.path.join(tmp, "array.gds")
if not os.path.exists(flat) or os.path.getsize(flat) < 68 * N:
    with open(flat, "wb", buffering=1 << 22) as f:
        head(f)
        bgnstr(f, "TOP")
        angles = [rect_pts(0, 0, math.radians(7 * k)) for k in range(13)]
        for i in range(N):
            x, y = (i % side) * 2000, (i // side) * 2000
            boundary(f, [(px + x, py + y) for px, py in angles[i % 13]])
        f.write(rec(0x07, 0))
        f.write(rec(0x04, 0))
with open(arr, "wb") as f:
    head(f)
    bgnstr(f, "R")
    boundary(f, rect_pts(0, 0, math.radians(7)))
    f.write(rec(0x07, 0))
    bgnstr(f, "TOP")
    f.write(b"\x00\x04\x0b\x00")                       # AREF
    f.write(rec(0x12, 6, s("R")))
    f.write(rec(0x13, 2, struct.pack(">hh", side, side)))
    f.write(rec(0x10, 3, struct.pack(">6i", 0, 0, side * 2000, 0, 0, side * 2000)))
    f.write(b"\x00\x04\x11\x00")
    f.write(rec(0x07, 0))
    f.write(rec(0x04, 0))


def design(path, name, pitch, extra=""):
    y = os.path.join(tmp, name + ".yaml")
    with open(y, "w") as f:
        f.write("tessera: 1\nroot:\n  source: {layout: %s, cell: TOP, layers: [[1, 0, 1]], "
                "pitch: %r%s}\n" % (path, pitch, extra))
    return y


def timed(cmd):
    t = time.time()
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    wall, kb = r.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kb) / 1024, r.stdout, time.time() - t


print("| layout | file | `tessera check` wall | peak RSS |")
print("| --- | ---: | ---: | ---: |")
for path, what in ((arr, "one %d x %d array" % (side, side)), (flat, "flattened, %d shapes" % N)):
    y = design(path, os.path.basename(path)[:-4], 1.0)
    wall, mb, out, _ = timed([tessera, "check", y])
    print("| %s | %.1f MB | %.2f s | %.0f MB |" % (what, os.path.getsize(path) / 1e6, wall, mb))

# ---- body -------------------------------------------------------------------------------------
pitch = 0.25
W = 8192
win = "0, 0, %r, %r" % (W * pitch, W * pitch)
y = design(flat, "body", pitch, ", window: [%s]" % win)
r = subprocess.run([tessera, "profile", y, "--backend", "cpu", "--threads", "2", "--seconds", "4",
                    "--json"], capture_output=True, text=True, check=True)
m = re.search(r'"mb_per_s":\s*([0-9.e+-]+)', r.stdout)
cpu = re.search(r'"cpu_seconds":\s*([0-9.e+-]+)', r.stdout)
byt = re.search(r'"bytes":\s*([0-9.e+-]+)', r.stdout)
print()
print("| renderer | what | rate |")
print("| --- | --- | ---: |")
print("| tessera profile, CPU, 2 threads | %d x %d px windows of the flattened layout at %g um, "
      "exact area, 8 bit | %.1f MB/s (%.1f MB per CPU-second) |"
      % (W, W, pitch, float(m.group(1)), float(byt.group(1)) / float(cpu.group(1)) / 1e6))
K = 4096
script = os.path.join(tmp, "klayout_raster.py")
png = os.path.join(tmp, "klayout.png")
with open(script, "w") as f:
    f.write("""import pya, time
t = time.time()
c0 = time.process_time()
lv = pya.LayoutView()
lv.load_layout(%r, True)
lv.max_hier()
t1 = time.time()
c1 = time.process_time()
lv.save_image_with_options(%r, %d, %d, 0, 3, 0, pya.DBox(0, 0, %r, %r), True)
print("load %%.2f s, image %%.2f s, image cpu %%.2f s" %% (t1 - t, time.time() - t1,
      time.process_time() - c1))
""" % (flat, png, K, K, K * pitch, K * pitch))
wall, mb, out, _ = timed(["klayout", "-b", "-r", script])
parts = re.findall(r"([0-9.]+) s", out)
img = float(parts[1]) if len(parts) > 1 else wall
icpu = float(parts[2]) if len(parts) > 2 else img
print("| KLayout 0.28 save_image_with_options, oversampling 3, monochrome | %d x %d px window "
      "of the same layout at %g um (a screen picture, not exact areas) | %.1f MB/s of 8-bit "
      "pixels (%.1f MB per CPU-second; %.2f s for the image; load %s s; peak RSS %.0f MB) |"
      % (K, K, pitch, K * K / img / 1e6, K * K / icpu / 1e6, img, parts[0] if parts else "?",
         mb))
