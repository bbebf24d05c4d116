# KLayout's side of the layout benchmark (docs/performance.md, "Layouts at 25 million
# rectangles"), run in KLayout's batch mode:
#
#   klayout -b -rd gds=FILE -rd mode=read|area|image [-rd n=256] [-rd px=250] -r THIS
#
# read: load the file (time it with /usr/bin/time -v). area: exact area coverage of an n x n
# pixel window at px database units a pixel, the only exact way Debian's KLayout 0.28 offers
# (Region.rasterize came later): the layer merged, clipped to the window, to each row, to
# 16-pixel chunks, then each pixel's area. image: LayoutView.save_image of the whole cell at
# n x n pixels (a screen picture: outlines in grey levels, not areas).
import time

import pya

gds = globals().get("gds")
mode = globals().get("mode", "read")
n = int(globals().get("n", "256"))
px = int(globals().get("px", "250"))
t, c = time.time(), time.process_time()
if mode == "image":
    v = pya.LayoutView()
    v.load_layout(gds, True)
    v.max_hier()
    v.zoom_fit()
    t, c = time.time(), time.process_time()
    v.save_image(gds + ".png", n, n)
else:
    ly = pya.Layout()
    ly.read(gds)
    if mode == "area":
        top = ly.top_cell()
        reg = pya.Region(top.begin_shapes_rec(ly.layer(1, 0)))
        reg.merge()
        t, c = time.time(), time.process_time()
        C, total = 16, 0
        win = reg & pya.Region(pya.Box(0, 0, n * px, n * px))
        for j in range(n):
            row = win & pya.Region(pya.Box(0, j * px, n * px, (j + 1) * px))
            for i0 in range(0, n, C):
                chunk = row & pya.Region(pya.Box(i0 * px, j * px, (i0 + C) * px, (j + 1) * px))
                for i in range(i0, i0 + C):
                    total += chunk.area(pya.Box(i * px, j * px, (i + 1) * px, (j + 1) * px))
        print("area: covered %d dbu^2" % total)
dt, dc = time.time() - t, time.process_time() - c
print("%s: wall %.2f s, cpu %.2f s" % (mode, dt, dc))
if mode != "read":
    print("%.4f MB/s wall, %.4f MB per CPU-second (1 byte a pixel)" % (n * n / dt / 1e6, n * n / dc / 1e6))
