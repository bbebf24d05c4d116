#!/usr/bin/env bash
# mpirun -n K tessera render (docs/scale-out.md): rank 0 streams, ranks 1..K-1 compute
# its bands on the CPU. Three ranks on this host give the bytes of one process for a sample of
# the examples (a crop of their rows) and of the oracle designs (in bands of 8 rows so each
# worker gets several: the crops their `# rows:` comments name, raster and swath order,
# serpentine, every start corner, and whole the ones that read across band edges); a resume
# from a mid-band offset; a sink failure, a worker's error, a SIGTERM to rank 0 and a worker
# killed with SIGKILL each end in a resumable abort whose rerun completes
# the same bytes; a worker with another design (fingerprint) or a plan that does not fit ends
# the job before its first byte, naming the rank. Skipped (exit 77) without mpirun or in a
# build without MPI.
. "${SRC:?}/tests/cli/lib/common.sh"
mp=
trap '[ -n "$mp" ] && kill -KILL "$mp" 2>/dev/null; rm -rf "$tmp"' EXIT
if [ "${TSR_HAVE_MPI:-ON}" != ON ]; then
    echo "skip: this tessera was built without MPI (TSR_MPI=OFF or no MPI found)"
    exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "skip: no mpirun (scripts/deps.sh installs openmpi-bin and libopenmpi-dev)"
    exit 77
fi
# root in a container: Open MPI refuses root without these; one host and no network: shared
# memory between ranks without the single-copy (CMA) path a container's ptrace rules may refuse,
# and no ssh launcher
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_plm=isolated OMPI_MCA_btl_base_warn_component_unused=0
MPI=(mpirun --oversubscribe -n 3)

# same NAME DESIGN ARGS...: one process and three ranks give the same bytes
same() {
    local name=$1 d=$2
    shift 2
    if ! "$TESSERA" render "$d" -o "$tmp/one" --progress none "$@" 2>"$tmp/err1"; then
        bad "$name: one process: $(cat "$tmp/err1")"
        return
    fi
    if ! "${MPI[@]}" "$TESSERA" render "$d" -o "$tmp/three" --progress none "$@" 2>"$tmp/err3"; then
        bad "$name: mpirun -n 3: $(grep -m 3 "tessera" "$tmp/err3" || tail -n 5 "$tmp/err3")"
    elif cmp -s "$tmp/one" "$tmp/three"; then
        ok "$name: mpirun -n 3 = one process ($(stat -c %s "$tmp/one") bytes)"
    else
        bad "$name: mpirun -n 3 differs: $(cmp "$tmp/one" "$tmp/three" 2>&1 | head -c 200)"
    fi
}

# A sample of the examples, one per kind of work (the ranks split bands whatever computes them;
# every example took 40 mpiruns and most of CI's time for this test): a periodic lattice under
# distance, a blur, per-copy variation, noise, a layout, text, a boolean and a transform
# (wafer-map-150, a swath order, is the abort tests' design below).
for n in microlens-array blurred-grating dose-focus-matrix noisy-diffuser layout-wafer-dies \
    dose-ladder wafer-keepout rotated-grating; do
    d="$SRC/designs/examples/$n.yaml"
    [ -e "$d" ] || { bad "$n.yaml: no such example"; continue; }
    same "$n.yaml rows 100:700" "$d" --rows 100:700
done
# The oracle designs whose `# rows:` crop exercises an order (swath, serpentine, every start
# corner: the ranks must deliver bands in the stream's order) or a periodic chain by that crop,
# and whole two whose bands read across band edges (a blur's and a distance's seams).
for d in "$SRC"/tests/oracle/designs/*.yaml; do
    n=$(basename "$d")
    rows=$(sed -n 's/^# rows: *\([0-9]*:[0-9]*\).*/\1/p' "$d" | head -n 1)
    case "$n" in swath_* | blur_periodic_chain.yaml | microlens_600.yaml | periodic_root.yaml) ;;
    *) continue ;; esac
    if [ -n "$rows" ]; then
        same "$n rows $rows" "$d" --tile 8 --rows "$rows"
    fi
done
for n in blur_seams seam_distance; do
    same "$n.yaml" "$SRC/tests/oracle/designs/$n.yaml" --tile 8
done

# ---- resume, aborts and their reruns ------------------------------------------------------
D="$SRC/designs/examples/wafer-map-150.yaml"
ROWS=(--rows 0:300) # 45 MB in about 40 bands
"$TESSERA" render "$D" "${ROWS[@]}" -o "$tmp/ref" --progress none 2>/dev/null
total=$(stat -c %s "$tmp/ref")

# resume NAME OFFSET: the file holds the first OFFSET bytes; three ranks complete it
resume() {
    local name=$1 off=$2
    if "${MPI[@]}" "$TESSERA" render "$D" "${ROWS[@]}" -o "$tmp/out" --resume-at "$off" \
        --progress none 2>"$tmp/err" && cmp -s "$tmp/out" "$tmp/ref"; then
        ok "$name: --resume-at $off under mpirun completes the same bytes"
    else
        bad "$name: --resume-at $off: $(tail -n 3 "$tmp/err") $(cmp "$tmp/out" "$tmp/ref" 2>&1 | head -c 200)"
    fi
}

off=$((total / 3 + 12345)) # inside a band: that band is computed and cut
head -c "$off" "$tmp/ref" >"$tmp/out"
resume "resume" "$off"

# rank_pid R: the pid of rank R of the running mpirun $mp (its children, by environment)
rank_pid() {
    local p
    for p in $(pgrep -P "$mp"); do
        # not `tr | grep -q`: under pipefail tr's SIGPIPE, when grep stops early, fails it
        if grep -qx "OMPI_COMM_WORLD_RANK=$1" <<<"$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null)"; then
            echo "$p"
            return
        fi
    done
}

# abort NAME RANK SIGNAL FAULT HOW LINE: a paced render (so it is mid-stream for a while), with
# FAULT (VAR=VALUE, or empty) in its environment, gets SIGNAL at RANK once the output holds a
# few MB; rank 0 says LINE (a pattern) and "HOW at byte N; resume with --resume-at N", and the
# rerun from N completes the stream
abort() {
    local name=$1 rank=$2 sig=$3 fault=$4 how=$5 line=$6 waited=0 pid=
    at= # global: the offset it stopped at
    rm -f "$tmp/out"
    env ${fault:+"$fault"} "${MPI[@]}" "$TESSERA" render "$D" "${ROWS[@]}" -o "$tmp/out" --rate 20MB/s \
        --progress none 2>"$tmp/err" &
    mp=$!
    while [ "$(stat -c %s "$tmp/out" 2>/dev/null || echo 0)" -lt 4000000 ] && [ $waited -lt 300 ]; do
        sleep 0.05
        waited=$((waited + 1))
    done
    pid=$(rank_pid "$rank")
    [ -n "$pid" ] && kill -"$sig" "$pid"
    waited=0
    while kill -0 "$mp" 2>/dev/null && [ $waited -lt 400 ]; do
        sleep 0.05
        waited=$((waited + 1))
    done
    kill -KILL "$mp" 2>/dev/null
    wait "$mp"
    local rc=$?
    mp=
    at=$(sed -n "s/^tessera: $how at byte \([0-9]*\); resume with --resume-at \1\$/\1/p" "$tmp/err")
    if [ -z "$pid" ] && [ "$sig" != 0 ]; then
        bad "$name: rank $rank not found"
    elif [ "$rc" -eq 0 ] || [ -z "$at" ] || [ "$at" -ge "$total" ]; then
        bad "$name: exit $rc, no '$how at byte N' line: $(grep -v '^-*$' "$tmp/err" | tail -n 4)"
    elif ! grep -q "$line" "$tmp/err"; then
        bad "$name: no line '$line': $(grep -v '^-*$' "$tmp/err" | tail -n 4)"
    elif ! cmp -s -n "$at" "$tmp/out" "$tmp/ref" || [ "$(stat -c %s "$tmp/out")" -lt "$at" ]; then
        bad "$name: the first $at bytes differ"
    else
        ok "$name: exit $rc, $(grep -m1 "$line" "$tmp/err" | head -c 90); $how at byte $at"
        resume "$name" "$at"
    fi
}

# a sink failure on rank 0 (the fault hook: EIO after 6 MB; signal 0: nothing is sent)
abort "sink failure" 0 0 TSR_FAULT=eio@6000000 stopped "^tessera: .*/out: Input/output error"
# a worker's error in the middle of the job (the hook fails each worker's 4th band: rank 1's is
# the stream's 4th, as bands go out in runs of 4): rank 0 names it, and every band before it
# goes out whatever the timing, so the offset is exactly 3 bands (wafer-map-150 streams swaths
# 8192 px wide: a band of rows 0:300 is one swath's 8192 x 300 bytes)
abort "worker error" 0 0 TSR_DIST_FAULT=4 stopped "^tessera: rank 1: band 4: injected fault"
[ "$at" = 7372800 ] || bad "worker error: stopped at byte $at, not after 3 bands (7372800)"
abort "SIGTERM to rank 0" 0 TERM "" interrupted "^tessera: stopping"
# a worker killed: mpirun sends SIGCONT to the other ranks, SIGTERM and SIGKILL a second later;
# rank 0 stops on the SIGCONT
abort "worker killed (SIGKILL)" 2 KILL "" interrupted "^tessera: stopping"

# ---- a worker that cannot serve: the job ends before its first byte, naming it ------------
# refused NAME PATTERN WORKER_ARGS...: rank 0 renders $D, ranks 1 and 2 get WORKER_ARGS (MPMD);
# exit 2, rank 0 names a worker with PATTERN, and no output file is made
refused() {
    local name=$1 pattern=$2
    shift 2
    rm -f "$tmp/out"
    mpirun --oversubscribe -n 1 "$TESSERA" render "$D" "${ROWS[@]}" -o "$tmp/out" --progress none : \
        -n 2 "$TESSERA" render "$@" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -q "^tessera: rank [12]: $pattern" "$tmp/err" && [ ! -e "$tmp/out" ]; then
        ok "$name: exit 2, $(grep -m1 '^tessera: rank' "$tmp/err" | head -c 100)"
    else
        bad "$name: exit $rc, $(tail -n 3 "$tmp/err"), output $([ -e "$tmp/out" ] && echo written)"
    fi
}
refused "another design on a worker" "the design differs from rank 0's (fingerprint)" \
    "$SRC/designs/examples/blazed-grating.yaml" "${ROWS[@]}"
refused "a worker's plan does not fit" "memory plan: .*--memory" "$D" "${ROWS[@]}" --memory 1M

# ---- one rank is the one-process render ---------------------------------------------------
mpirun -n 1 "$TESSERA" render "$D" "${ROWS[@]}" -o "$tmp/out" --progress none 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/ref" && ok "mpirun -n 1: the one-process render" ||
    bad "mpirun -n 1: exit $rc $(tail -n 3 "$tmp/err")"

finish
