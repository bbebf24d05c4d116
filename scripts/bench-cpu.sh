#!/usr/bin/env bash
# CPU against peers (docs/targets.md): tessera on 2 threads beside libvips and OpenCV on the
# designs in designs/bench/, in one run on one machine, so the ratios are comparable.
#
#   scripts/bench-cpu.sh            # BENCH_RUNS=3 runs of each tool, alternating
#
# Environment:
#   BENCH_RUNS=N      runs per tool and design (default 3); the table shows the best run (the
#                     least disturbed by other processes) and the median in parentheses
#   BENCH_BUILD=DIR   tessera build folder (default build-bench, configured Release if needed)
#   BENCH_NO_BUILD=1  use the tessera already in BENCH_BUILD as it is (no cmake)
#   BENCH_VERIFY=1    also write every tool's output once and compare it with tessera's bytes
#   BENCH_DESIGNS="repeat blur4 ..."  a subset (default: repeat blur4 blur32 distance)
#
# What is timed (each output is 10240 x 10240 8-bit samples = 104857600 bytes; MB = 1e6 bytes):
#   tessera: `TSR_DIRECT=1 tessera render designs/bench/X.yaml -o null --threads 2` (repeat
#            without TSR_DIRECT: replicating one period is what libvips replicate does), the wall
#            time of the whole process (date +%s.%N around it: start-up, design load and plan
#            included), and its CPU time (user + system, /usr/bin/time). TSR_DIRECT=1 turns the
#            periodic shortcuts off: the bench lattices are periodic (inside a border since issue
#            13), and copying one computed period would measure a copy, not the kernel the peer
#            runs. The figures are therefore the kernels' own.
#   libvips: scripts/bench/vips_bench.c, VIPS_CONCURRENCY=2, its own clocks (wall, getrusage)
#            from building the motif to the end of vips_rawsave to /dev/null (start-up excluded).
#   OpenCV:  scripts/bench/opencv_bench.py, its own clocks (perf_counter, process_time) around
#            distanceTransform + clamp + table lookup only ("core"; lattice build, writing and
#            Python start-up excluded).
# Peers are thus timed at their most favourable, which makes the ratios conservative for tessera.
# Two tables: wall-clock MB/s (what the targets of docs/targets.md mean) and MB per CPU second
# (user + system of all threads), which moves much less when other processes load the machine;
# on an idle machine a tool that keeps both cores busy gets about twice its MB/cpu-s in wall
# MB/s, so the CPU table under-rates the parallel tool.
#
# Peers compute the same picture: repeat gives identical bytes; blur (libvips float precision,
# edge clamp = libvips's copy extension) is within 1 sample; distance: OpenCV's "precise" EDT is
# exact except for ~0.3% of pixels (up to 4 samples), tessera's is exact (BENCH_VERIFY=1 shows
# this). Two more libvips rows per blur are information, not judged against the target, because
# they do not compute the same picture: "integer" is gaussblur's integer precision (libvips's
# default for uchar) with the same ~3.7 sigma mask, up to 4 samples off; "defaults" is gaussblur
# exactly as libvips ships it (integer precision, min_ampl 0.2: a mask of ~1.8 sigma), up to 11
# samples off, the fastest a libvips user gets and the kind of figure docs/targets.md quotes.
#
# Exit status: 0 when everything ran (a missed target is a result, not an error), 1 on errors.
# shellcheck disable=SC2317  # the run_* functions are called through $cmd
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${BENCH_RUNS:-3}
BUILD=${BENCH_BUILD:-build-bench}
DESIGNS=${BENCH_DESIGNS:-repeat blur4 blur32 distance}
PY=/usr/bin/python3   # Debian's python3, where python3-opencv and python3-numpy live
SIDE=10240
BYTES=$((SIDE * SIDE))

die() { echo "bench-cpu: $*" >&2; exit 1; }
case "$RUNS" in ''|*[!0-9]*|0) die "BENCH_RUNS must be a positive integer (got '$RUNS')";; esac

# ---- dependencies and builds -------------------------------------------------------------
TSR_DEPS_EXTRA="libvips-dev libvips-tools python3-opencv" bash scripts/deps.sh \
  || die "installing dependencies failed"

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
  if ! grep -qs '^CMAKE_BUILD_TYPE:STRING=Release$' "$BUILD/CMakeCache.txt"; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null || die "cmake configure failed"
  fi
  cmake --build "$BUILD" -j2 --target tessera >/dev/null || die "building tessera failed"
fi
TSR="$BUILD/tessera"
[ -x "$TSR" ] || die "no tessera at $TSR"

VIPS_BENCH="$BUILD/vips_bench"
if [ ! -x "$VIPS_BENCH" ] || [ scripts/bench/vips_bench.c -nt "$VIPS_BENCH" ]; then
  # shellcheck disable=SC2046  # pkg-config output is meant to split
  cc -O2 -Wall -Wextra -o "$VIPS_BENCH" scripts/bench/vips_bench.c \
     $(pkg-config --cflags --libs vips) -lm || die "building vips_bench failed"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- runners: each prints "wall-MB/s cpu-MB/s" (MB per CPU second, user + system) ----------
run_tessera() {   # design
  local s e direct=1
  [ "$1" = repeat ] && direct=0 # replicating is the repeat's own algorithm: the period copy
  s=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$tmp/time" \
    env TSR_DIRECT=$direct "$TSR" render "designs/bench/$1.yaml" -o null --threads 2 --progress none \
    >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; die "tessera failed on $1"; }
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" -v b="$BYTES" '{ c = $1 + $2 } END {
      printf "%.1f %.1f\n", b / (e - s) / 1e6, (c > 0) ? b / c / 1e6 : 0 }' "$tmp/time"
}
run_vips() {      # vips_bench arguments...
  VIPS_CONCURRENCY=2 "$VIPS_BENCH" "$@" >"$tmp/out" 2>"$tmp/err" \
    || { cat "$tmp/err" >&2; die "vips_bench $* failed"; }
  sed -n 's/.* MB\/s=\([0-9.]*\).* MB\/cpu-s=\([0-9.]*\).*/\1 \2/p' "$tmp/out"
}
run_opencv() {
  "$PY" scripts/bench/opencv_bench.py --dmax 32 >"$tmp/out" 2>"$tmp/err" \
    || { cat "$tmp/err" >&2; die "opencv_bench failed"; }
  sed -n 's/.* core_MB\/s=\([0-9.]*\).* core_MB\/cpu-s=\([0-9.]*\).*/\1 \2/p' "$tmp/out"
  sed -n 's/.* whole_MB\/s=\([0-9.]*\).*/\1/p' "$tmp/out" >>"$tmp/opencv_whole"
}

# peers of a design: "label|target|command" lines; target "-" = information only
peers_of() {
  case "$1" in
    repeat)   echo "libvips replicate (uchar motif)|2|run_vips repeat --uchar" ;;
    blur4|blur32)
      local s=${1#blur} t=3
      [ "$s" = 32 ] && t=20
      echo "libvips gaussblur float|$t|run_vips blur $s --uchar --precision float"
      echo "libvips gaussblur integer|-|run_vips blur $s --uchar --precision integer"
      echo "libvips gaussblur defaults|-|run_vips blur $s --uchar --precision integer" \
           "--min-ampl 0.2" ;;
    distance) echo "OpenCV distanceTransform PRECISE|3|run_opencv" ;;
    *) die "unknown design '$1'" ;;
  esac
}

# best / median of column $1 of stdin
best()   { awk -v c="${1:-1}" '{ print $c }' | sort -g | tail -n 1; }
median() { awk -v c="${1:-1}" '{ print $c }' | sort -g |
           awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
                                     else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# ---- header --------------------------------------------------------------------------------
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- engine nodes tiles cache image stream designs cli 2>/dev/null \
  || rev="$rev+local edits"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(nproc) cores, $cpu, $(uname -sr)"
echo "load:     $(uptime | sed 's/.*load average: //') (1/5/15 min, at start)"
echo "tessera:  $rev, $TSR, --threads 2"
echo "peers:    libvips $(pkg-config --modversion vips), VIPS_CONCURRENCY=2;" \
     "OpenCV $("$PY" -c 'import cv2; print(cv2.__version__)'), cv2.setNumThreads(2)"
echo "runs:     $RUNS per tool, alternating; best run shown, median in parentheses"
echo

# ---- runs ----------------------------------------------------------------------------------
for d in $DESIGNS; do
  peers_of "$d" >"$tmp/peers.$d"
  : >"$tmp/t.$d"
  : >"$tmp/opencv_whole"
  for ((r = 1; r <= RUNS; r++)); do
    run_tessera "$d" >>"$tmp/t.$d"
    i=0
    while IFS='|' read -r _label _target cmd; do
      # shellcheck disable=SC2086  # cmd is a runner and its arguments
      $cmd >>"$tmp/p.$d.$i" </dev/null
      i=$((i + 1))
    done <"$tmp/peers.$d"
  done
  if [ -s "$tmp/opencv_whole" ]; then cp "$tmp/opencv_whole" "$tmp/opencv_whole.$d"; fi
done

# ---- tables --------------------------------------------------------------------------------
# $1: column (1 wall, 2 CPU); $2: unit
table() {
  printf '| design | tessera %s | peer | peer %s | ratio | target | result |\n' "$2" "$2"
  printf '| --- | ---: | --- | ---: | ---: | ---: | --- |\n'
  local d i tb tm pb pm ratio tgt res label target _cmd
  for d in $DESIGNS; do
    tb=$(best "$1" <"$tmp/t.$d"); tm=$(median "$1" <"$tmp/t.$d")
    i=0
    while IFS='|' read -r label target _cmd; do
      pb=$(best "$1" <"$tmp/p.$d.$i"); pm=$(median "$1" <"$tmp/p.$d.$i")
      ratio=$(awk -v a="$tb" -v b="$pb" 'BEGIN { printf "%.2f", a / b }')
      if [ "$target" = "-" ]; then
        tgt="-"; res="(information)"
      else
        tgt=">= ${target}x"
        res=$(awk -v r="$ratio" -v t="$target" 'BEGIN { print ((r >= t) ? "met" : "missed") }')
      fi
      printf '| %s | %s (%s) | %s | %s (%s) | %s | %s | %s |\n' \
        "$d" "$tb" "$tm" "$label" "$pb" "$pm" "$ratio" "$tgt" "$res"
      i=$((i + 1))
    done <"$tmp/peers.$d"
  done
}
echo "Wall clock (the targets' measure), MB/s:"
echo
table 1 MB/s
echo
echo "CPU time (user + system, all threads; less sensitive to other load), MB per CPU second:"
echo
table 2 MB/cpu-s
for d in $DESIGNS; do
  if [ -s "$tmp/opencv_whole.$d" ]; then
    echo
    echo "OpenCV whole script (lattice + transform + table + write, Python start-up excluded)" \
         "on $d: best $(best <"$tmp/opencv_whole.$d") MB/s," \
         "median $(median <"$tmp/opencv_whole.$d") MB/s"
  fi
done
echo
echo "load:     $(uptime | sed 's/.*load average: //') (1/5/15 min, at end)"

# ---- optional equivalence check ------------------------------------------------------------
if [ "${BENCH_VERIFY:-0}" = 1 ]; then
  echo
  echo "equivalence (each peer's bytes against tessera's):"
  for d in $DESIGNS; do
    "$TSR" render "designs/bench/$d.yaml" -o "$tmp/t.raw" --threads 2 2>/dev/null \
      || die "tessera failed on $d"
    case "$d" in
      repeat)   VIPS_CONCURRENCY=2 "$VIPS_BENCH" repeat --uchar -o "$tmp/p.raw" >/dev/null ;;
      blur4)    VIPS_CONCURRENCY=2 "$VIPS_BENCH" blur 4 --uchar -o "$tmp/p.raw" >/dev/null ;;
      blur32)   VIPS_CONCURRENCY=2 "$VIPS_BENCH" blur 32 --uchar -o "$tmp/p.raw" >/dev/null ;;
      distance) "$PY" scripts/bench/opencv_bench.py -o "$tmp/p.raw" >/dev/null ;;
    esac || die "peer failed on $d"
    "$PY" - "$tmp/t.raw" "$tmp/p.raw" "$d" <<'EOF' || die "comparison failed"
import sys
import numpy as np
t = np.fromfile(sys.argv[1], np.uint8).astype(np.int16)
p = np.fromfile(sys.argv[2], np.uint8).astype(np.int16)
d = np.abs(t - p)
print("  %-9s max |diff| %d samples, %.3f%% of pixels differ"
      % (sys.argv[3], d.max(), 100.0 * (d != 0).mean()))
EOF
  done
  rm -f "$tmp/t.raw" "$tmp/p.raw"
fi
exit 0
