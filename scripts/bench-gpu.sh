#!/usr/bin/env bash
# GPU figures, one run (docs/performance.md): the device-to-host ceiling (pinned, contiguous,
# 256 MiB), the pipeline milestone (designs/bench/gpu-fill.yaml to a null sink), the bench
# designs whole (10240 x 10240) beside CuPy's kernels on the same pictures
# (scripts/bench/cupy_peers.py), the device tile cache on and off, and `tessera profile` of
# every example and bench design on the GPU beside the CPU on all cores.
#   scripts/bench-gpu.sh TESSERA [OUT]
# GPU_BENCH picks sections (default all): milestone designs whole cache wide grid sinks previews
# packed hostteam threads; GPU_DESIGNS (globs) narrows `designs`, GPU_HOST_DESIGNS `hostteam`; the d2h
# ceiling is measured first in every run, since every figure is a fraction of it.
set -uo pipefail
T=${1:?usage: bench-gpu.sh TESSERA [OUT]}
OUT=${2:-out/gpu}
SECTIONS=${GPU_BENCH:-milestone designs whole cache wide grid sinks previews packed hostteam threads}
DESIGNS=${GPU_DESIGNS:-designs/examples/*.yaml designs/bench/*.yaml}
mkdir -p "$OUT"
on() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
# rate: profile --json's own MB/s (its top level, not a sample's)
rate() { python3 -c 'import json, sys; print(json.load(sys.stdin)["mb_per_s"])' 2>/dev/null; }
# secs CMD...: the command's wall seconds (its output dropped), or exit-N when it failed
secs() { local t0 t1 rc; t0=$(date +%s.%N); timeout 300 "$@" >/dev/null 2>>"$OUT/err.txt"; rc=$?
         t1=$(date +%s.%N); [ $rc = 0 ] || { echo "exit-$rc"; return; }
         awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; }
nvcc -O2 -arch=sm_90 scripts/bench/d2h.cu -o "$OUT/d2h" && "$OUT/d2h" | tee "$OUT/d2h.txt"
d2h=$(awk '/d2h_gbps/ {print $2}' "$OUT/d2h.txt")
store=$(awk '/store_gbps/ {print $2}' "$OUT/d2h.txt")
# repeat_grad H: bench/repeat.yaml 200000 x H with a gradient under the lattice: the root no
# longer repeats, so the device computes every band
repeat_grad() {
  awk '{ print } /^root:/ { r = 1 } r && /^  fill: 0.0$/ { print "  source: {gradient: linear, from: [0, 0], to: [200000, 0], values: [0, 0.2]}"; r = 0 }' \
      designs/bench/repeat.yaml | sed "s/size: \[10240, 10240\]/size: [200000, $1]/"
}
# steady NAME FILE W [ENV=V]: the renderer's rate once running, from two profiles of one design
# (--region of W x 10240 and W x 40960 px): the bytes between them over the seconds between them;
# "fixed" is what a profile spends besides (pinning the writer's pool, the first band's
# latency, the period, the pipeline's drain), which a job of terabytes pays once
steady() {
  local name=$1 f=$2 w=$3
  shift 3
  for h in 10240 40960; do
    env "$@" "$T" profile "$f" --backend gpu --region "0,0,$w,$h" --json 2>>"$OUT/err.txt" \
        >"$OUT/steady-$h.json"
  done
  python3 - "$name" "$d2h" "$OUT/steady-10240.json" "$OUT/steady-40960.json" <<'PY'
import json, sys
name, d2h = sys.argv[1], float(sys.argv[2])
a, b = (json.load(open(p)) for p in sys.argv[3:5])
ba, bb = a["bytes"], b["bytes"]
ta, tb = a["seconds"], b["seconds"]
r = (bb - ba) / (tb - ta) / 1e9
print("  %-22s steady %6.1f GB/s = %5.1f%% of the %.1f GB/s link; fixed %3.0f ms; %4.1f GB "
      "profiled at %5.1f GB/s" % (name, r, 100 * r / d2h, d2h, 1e3 * (ta - ba / r / 1e9),
                                  bb / 1e9, bb / tb / 1e9))
PY
}
if on milestone; then
echo "milestone: gpu-fill.yaml, whole stream (17.2 GB) to -o null"
for rep in 1 2; do
  t0=$(date +%s.%N)
  "$T" render designs/bench/gpu-fill.yaml -o null --backend gpu --progress none ||
      { echo "  render failed: $?"; continue; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v d="$d2h" 'BEGIN { r = 131072.0 * 131072 / (b - a) / 1e9;
      printf "  run: %.2f s, %.1f GB/s = %.0f %% of the %.1f GB/s d2h ceiling\n", b - a, r, 100 * r / d, d }'
done
echo "milestone, renderer only (profile: the same pipeline into a null sink, after start-up):"
"$T" profile designs/bench/gpu-fill.yaml --backend gpu --region 0,0,131072,65536 |
    grep -E "throughput|backend"
fi
if on designs; then
# profile's own rate (all its samples, the first one's start-up included: what a user reads)
# and the median of its samples' rates (the rate once running). Until 2026-11-27 evening this
# table read the last sample's rate (a greedy sed over the JSON): docs/performance.md says which
# earlier figures that concerns.
printf '\n%-28s %11s %11s %11s %11s %10s\n' design "gpu MB/s" "gpu median" "cpu MB/s" \
    "cpu median" "gpu/d2h"
rates() { python3 -c 'import json, sys
j = json.load(sys.stdin); s = sorted(x["mb_per_s"] for x in j["samples"]) or [0]
print(j["mb_per_s"], s[len(s) // 2])' 2>/dev/null; }
for f in $DESIGNS; do
  g=$("$T" profile "$f" --backend gpu --json 2>"$OUT/err.txt" | tee -a "$OUT/profile-gpu.jsonl" | rates)
  c=$("$T" profile "$f" --backend cpu --json 2>>"$OUT/err.txt" | tee -a "$OUT/profile-cpu.jsonl" | rates)
  set -- ${g:-0 0} ${c:-0 0}
  awk -v n="$(basename "$f")" -v g="$1" -v gm="$2" -v c="$3" -v cm="$4" -v d="$d2h" \
      'BEGIN { printf "%-28s %11.1f %11.1f %11.1f %11.1f %9.1f%%\n", n, g, gm, c, cm, 100 * g / 1000 / d }'
done
fi

if on hostteam; then
# the designs whose device work waits on the host's polygons (layouts, text, booleans, exact
# shapes): a chunk's polygons on the GPU's thread alone (TSR_GPU_HOST_SERIAL=1) against in
# pieces on the host's team (the default), the CPU backend beside them
# (the examples are small: 1-100 MB, a profile of tens of ms; layout-array is 400 MB and the
# keep-out wafer at 2 um a pixel 2.5 GB)
printf '\n%-28s %12s %12s %12s %10s\n' "host team" "serial MB/s" "team MB/s" "cpu MB/s" "team/d2h"
sed 's/^pixel: 10um$/pixel: 2um/' designs/examples/wafer-keepout.yaml >"$OUT/keepout-2um.yaml"
for f in ${GPU_HOST_DESIGNS:-designs/bench/layout-array.yaml "$OUT/keepout-2um.yaml" \
         designs/examples/layout-*.yaml designs/examples/dose-ladder.yaml \
         designs/examples/wafer-keepout.yaml designs/examples/rotated-rect-array.yaml \
         designs/examples/wafer-fields.yaml designs/examples/wafer-map-150.yaml}; do
  s=$(TSR_GPU_HOST_SERIAL=1 "$T" profile "$f" --backend gpu --json 2>>"$OUT/err.txt" | rate)
  g=$("$T" profile "$f" --backend gpu --json 2>>"$OUT/err.txt" | tee -a "$OUT/profile-team.jsonl" | rate)
  c=$("$T" profile "$f" --backend cpu --json 2>>"$OUT/err.txt" | rate)
  awk -v n="$(basename "$f")" -v s="${s:-0}" -v g="${g:-0}" -v c="${c:-0}" -v d="$d2h" \
      'BEGIN { printf "%-28s %12.1f %12.1f %12.1f %9.1f%%\n", n, s, g, c, 100 * g / 1000 / d }'
done
fi

if on threads; then
# how the host's share scales: layout-array (host unions and layout queries) on the CPU backend
# at 1, 4 and 16 threads, one heap (the default) and 16, and on the GPU backend
echo; echo "host threads: layout-array, profile MB/s"
for a in 1 16; do
  for th in 1 4 16; do
    r=$(TSR_MALLOC_ARENAS=$a "$T" profile designs/bench/layout-array.yaml --backend cpu --threads $th --json 2>>"$OUT/err.txt" | rate)
    echo "  arenas $a, cpu --threads $th: $r"
  done
  r=$(TSR_MALLOC_ARENAS=$a "$T" profile designs/bench/layout-array.yaml --backend gpu --json 2>>"$OUT/err.txt" | rate)
  echo "  arenas $a, gpu: $r"
done
fi

if on whole; then
echo
echo "bench designs whole: 10240 x 10240 and a 200000 x 10240 band (the same design made wider),"
echo "  profile --region of all of it; 8-bit, so MB/s = Mpx/s. 'engine': as shipped (a root periodic"
echo "  inside its border streams from its period; only the border is computed); 'direct':"
echo "  TSR_DIRECT=1, every pixel computed, and 'kernel' = its pixels over the device time of the"
echo "  trait's launches (stage_seconds), beside CuPy's kernel on the same picture"
python3 scripts/bench/cupy_peers.py >"$OUT/cupy.jsonl" 2>"$OUT/cupy.err" || tail -3 "$OUT/cupy.err"
peer() { sed -n "s/.*\"$1\".*$2.*\"mpx_per_s\": \([0-9.]*\).*/\1/p" "$OUT/cupy.jsonl"; }
for spec in "blur4 blur gaussian_filter sigma.:.4," "blur32 blur gaussian_filter sigma.:.32," \
            "distance distance distance_transform_edt ." "repeat repeat - -"; do
  set -- $spec
  p=$([ "$3" = - ] || peer "$3" "$4")
  sed 's/size: \[10240, 10240\]/size: [200000, 10240]/' "designs/bench/$1.yaml" >"$OUT/$1-wide.yaml"
  sed 's/size: \[10240, 10240\]/size: [200000, 40960]/' "designs/bench/$1.yaml" >"$OUT/$1-tall.yaml"
  steady "$1 200000 wide, engine" "$OUT/$1-tall.yaml" 200000
  for w in 10240 200000; do
    f=designs/bench/$1.yaml
    [ "$w" = 200000 ] && f=$OUT/$1-wide.yaml
    for how in engine direct; do
      ( [ $how = direct ] && export TSR_DIRECT=1
        "$T" profile "$f" --backend gpu --region "0,0,$w,10240" --json 2>>"$OUT/err.txt" ) |
          tee -a "$OUT/bench-whole.jsonl" | python3 -c "
import json, sys
p = json.load(sys.stdin); st = p['device']['stage_seconds']; px = $w * 10240
k = st.get('$2', 0)
kr = px / k / 1e6 if k > 0 and '$how' == 'direct' else 0
peer = float('${p:-0}' or 0)
print('  %-9s %6d wide, %-6s: %7.0f MB/s (%4.1f%% of d2h)%s%s' % ('$1', $w, '$how',
      p['mb_per_s'], p['mb_per_s'] / 10 / $d2h, ', kernel %7.0f Mpx/s' % kr if kr else '',
      '   cupy $3 %.0f Mpx/s: kernel/cupy %.2fx' % (peer, kr / peer) if peer > 0 and kr else ''))"
    done
  done
done
fi
if on cache; then
echo
echo "device tile cache off / on (profile --region of 16384 x 16384 px; TSR_GPU_CACHE)"
for f in designs/bench/lens-blur.yaml designs/examples/lens-lattice-dose.yaml \
         designs/examples/microlens-sphere.yaml; do
  for c in off all; do
    printf '  %-40s %-4s ' "$(basename "$f")" "$c"
    TSR_GPU_CACHE=$c "$T" profile "$f" --backend gpu --region 0,0,16384,16384 2>&1 |
        grep -E "throughput|device" | tr -s ' ' | tr '\n' ' '
    echo
  done
done
fi

if on wide; then
echo
echo "16-bit output, and repeat without the host's shortcut (the designs made 200000 wide; profile"
echo "  --region 0,0,200000,10240; the fraction is of the link in bytes)"
sed 's/size: \[10240, 10240\]/size: [200000, 10240]/; s/depth: 8/depth: 16/' designs/bench/blur4.yaml \
    >"$OUT/blur4-16.yaml"
sed 's/size: \[10240, 10240\]/size: [200000, 10240]/; s/depth: 8/depth: 16/' designs/bench/repeat.yaml \
    >"$OUT/repeat-16.yaml"
repeat_grad 10240 >"$OUT/repeat-grad.yaml"
# a region: the lattice inside [1000, 1000, 198000, 38960] (periodic inside it, the rest fill)
sed 's/size: \[200000, 10240\]/size: [200000, 40960]/' "$OUT/repeat-16.yaml" |
    sed 's/depth: 16/depth: 8/; s/      ref: motif/      ref: motif\n      region: [1000, 1000, 198000, 38960]/' \
    >"$OUT/repeat-region-tall.yaml"
steady "repeat-region" "$OUT/repeat-region-tall.yaml" 200000
for f in blur4-16 repeat-16 repeat-grad; do
  sed 's/size: \[200000, 10240\]/size: [200000, 40960]/' "$OUT/$f.yaml" >"$OUT/$f-tall.yaml"
  steady "$f" "$OUT/$f-tall.yaml" 200000
done
echo
echo "a periodic root's bands: the device's period fill and copy against the host's row copies"
echo "  (TSR_GPU_PERIOD=host), 200000 px wide (repeat: periodic whole)"
sed 's/size: \[10240, 10240\]/size: [200000, 40960]/' designs/bench/repeat.yaml >"$OUT/repeat-tall.yaml"
for f in repeat-tall repeat-16-tall; do
  for how in device host; do
    steady "$f, $how" "$OUT/$f.yaml" 200000 TSR_GPU_PERIOD=$how
  done
done
echo "  the period fill's own rate (its bytes over the device time of stage 'period') against the"
echo "  device's store bandwidth (cudaMemset, ${store} GB/s):"
for f in repeat-tall repeat-16-tall; do
  "$T" profile "$OUT/$f.yaml" --backend gpu --region 0,0,200000,40960 --json 2>>"$OUT/err.txt" |
      python3 -c "
import json, sys
p = json.load(sys.stdin); t = p['device']['stage_seconds']['period']
r = p['bytes'] / t / 1e9 if t > 0 else 0
print('  %-16s period fill %6.0f GB/s = %5.1f%% of the store bandwidth' % ('$f', r, 100 * r / $store))"
done
fi
if on grid; then
echo
echo "launch shape: a block row per row (TSR_GPU_GRID_BLOCKS=0, before) against ~4096 blocks of"
echo "  several rows a thread (the default); profile MB/s of each, the same run"
repeat_grad 40960 >"$OUT/repeat-grad-tall.yaml"
steady "repeat-grad, before" "$OUT/repeat-grad-tall.yaml" 200000 TSR_GPU_GRID_BLOCKS=0
steady "repeat-grad, after" "$OUT/repeat-grad-tall.yaml" 200000
for f in designs/examples/*.yaml designs/bench/lens-blur.yaml; do
  for how in 0 4096; do
    m=$(TSR_GPU_GRID_BLOCKS=$how "$T" profile "$f" --backend gpu --json 2>>"$OUT/err.txt" |
        rate)
    printf '  %-28s blocks %-5s %10.0f MB/s\n' "$(basename "$f")" "$how" "${m:-0}"
  done
done
for how in 0 4096; do
  TSR_DIRECT=1 TSR_GPU_GRID_BLOCKS=$how "$T" profile designs/bench/blur4.yaml --backend gpu \
      --region 0,0,10240,10240 --json 2>>"$OUT/err.txt" | python3 -c "
import json, sys
p = json.load(sys.stdin); st = p['device']['stage_seconds']
print('  blur4 direct   blocks %-5s %8.0f MB/s; device s: %s' % ('$how', p['mb_per_s'],
      ' '.join('%s %.4f' % kv for kv in st.items() if kv[1] > 0)))"
done
fi
if on sinks; then
echo
echo "sinks behind the GPU (gpu-fill.yaml, 16384 rows = 2.1 GB; scripts/bench-sinks.sh):"
TSR_SINK_DESIGN=designs/bench/gpu-fill.yaml TSR_SINK_WIDTH=131072 TSR_SINK_ARGS="--backend gpu" \
    bash scripts/bench-sinks.sh "$T" 16384 2
echo "sinks behind the host's row copies (microlens-array, a periodic root, 8192 rows = 1.6 GB):"
bash scripts/bench-sinks.sh "$T" 8192 2
fi
if on previews; then
echo
echo "previews: a whole plate's overview (--scale 150) on the GPU and the render of the same plate"
echo "  (-o null) on the GPU; a strip of a tenth of the plate on the GPU and on all host cores (the"
echo "  PNGs compared); wall seconds of each command"
for f in wafer-map-150 microlens-sphere lens-lattice-dose; do
  y=designs/examples/$f.yaml
  read -r W H < <(sed -n '/^root:/,$ s/^  size: \[\([0-9]*\), \([0-9]*\)\]/\1 \2/p' "$y" | head -1)
  whole=$(secs "$T" preview "$y" --backend gpu --region "0,0,$W,$H" --scale 150 -o "$OUT/pv-$f.png")
  fast=$(secs "$T" preview "$y" --backend gpu --region "0,0,$W,$H" --scale 150 --fast -o "$OUT/pf-$f.png")
  ren=$(secs "$T" render "$y" --backend gpu -o null --progress none)
  sg=$(secs "$T" preview "$y" --backend gpu --region "0,0,$W,$((H / 10))" --scale 150 -o "$OUT/sg-$f.png")
  sc=$(secs "$T" preview "$y" --backend cpu --region "0,0,$W,$((H / 10))" --scale 150 -o "$OUT/sc-$f.png")
  same=$(cmp -s "$OUT/sg-$f.png" "$OUT/sc-$f.png" && echo identical || echo DIFFER)
  printf '  %-20s %6s x %6s: preview gpu %7s s (--fast %7s s), render gpu %7s s; strip gpu %6s s, cpu %6s s, PNGs %s\n' \
      "$f" "$W" "$H" "$whole" "$fast" "$ren" "$sg" "$sc" "$same"
done
fi
if on packed; then
echo
echo "1-bit streams (depth: 1, dither: blue64): tessera profile on the GPU and on all host cores"
echo "  (MB of packed output), and the whole plate rendered to -o null on the GPU (wall seconds)"
for f in microlens-array wafer-map-150 lens-lattice-dose; do
  y=$OUT/$f-1bit.yaml
  sed 's/^  depth: 8$/  depth: 1\n  dither: blue64/' "designs/examples/$f.yaml" >"$y"
  g=$("$T" profile "$y" --backend gpu --json 2>>"$OUT/err.txt" | rate)
  c=$("$T" profile "$y" --backend cpu --json 2>>"$OUT/err.txt" | rate)
  b=$("$T" check "$y" 2>>"$OUT/err.txt" | sed -n 's/^stream: \([0-9]*\) bytes.*/\1/p')
  w=$(secs "$T" render "$y" --backend gpu -o null --progress none)
  awk -v n="$f" -v g="${g:-0}" -v c="${c:-0}" -v b="${b:-0}" -v w="$w" -v d="$d2h" 'BEGIN {
      r = (w + 0 > 0) ? b / w / 1e6 : 0
      printf "  %-18s profile gpu %8.1f MB/s, cpu %8.1f MB/s; render %.2f GB in %s s = %.1f MB/s (%.1f%% of the link)\n",
             n, g, c, b / 1e9, w, r, 100 * r / 1000 / d }'
done
fi
