#!/usr/bin/env bash
# Load, plan and thread bounds: `check` on lattices whose copy
# counts are astronomical returns at once (bounded by the design's size, not its copies), and
# thread stacks under an address-space limit (`ulimit -v`) are sized from the design and
# refused with a tessera message naming the remedy, never a death inside libgomp.
. "${SRC:?}/tests/cli/lib/common.sh"
L="$SRC/tests/designs/limits"

# A hang guard, not a timing assertion: these took hours (the first) and > 100 s (the second).
guard=120

# `check` of the dense 2^40 lattice: the plan refuses it (each tile reads the whole bar).
timeout "$guard" "$TESSERA" check "$L/lattice_dense_2_40.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "memory plan: needs at least" "$tmp/err"; then
    ok "dense 2^40 lattice: check refuses it at once"
else bad "dense 2^40 lattice: exit $rc (124 = still running after ${guard} s): $(head -c 300 "$tmp/err")"; fi

timeout "$guard" "$TESSERA" check "$L/lattice_long_child.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "stream: 2097152 bytes" "$tmp/out"; then
    ok "unit lattice of a 4194304 x 1 child: check plans it at once"
else bad "unit lattice of a 4194304 x 1 child: exit $rc (124 = still running after ${guard} s): $(head -c 300 "$tmp/err")"; fi

# ---- thread stacks under an address-space limit (item 11) -----------------------------------
# Every thread got 32 MiB stacks (address space): under `ulimit -v 1000000` (~1 GB) 64 threads
# made libgomp print "Thread creation failed" and exit, with no tessera message. Stacks now
# follow the design's depth (1 MiB for a shallow one, ~5 MiB at the depth limit), and a run
# whose threads cannot fit is refused before it starts. ASan reserves terabytes of shadow
# address space, so these need the plain build.
if ldd "$TESSERA" 2>/dev/null | grep libasan >/dev/null; then  # no -q: grep reads it all, ldd never gets SIGPIPE (pipefail)
    echo "skip ulimit -v under a sanitizer build"
else
    printf 'tessera: 1\nroot: {size: [64, 48], source: {shape: circle, center: [32, 24], radius: 20}}\n' >"$tmp/small.yaml"
    "$TESSERA" render "$tmp/small.yaml" -o "$tmp/want.raw" 2>/dev/null || bad "small.yaml does not render"
    # chain NODES: n0 <- n1 <- ... <- root, each level adding 2^-11 (exact in float)
    {
        echo "tessera: 1"
        echo "nodes:"
        echo "  n0: {size: [4, 1], fill: 0.0}"
        for ((i = 1; i < 1999; i++)); do
            echo "  n$i: {size: [4, 1], fill: 0.00048828125, children: [{trait: pattern, ref: n$((i - 1)), blend: add}]}"
        done
        echo "root: {size: [256, 2], tile: 4, children: [{trait: repeat, ref: n1998}]}"
    } >"$tmp/deep.yaml"
    echo "tessera: 1
root: {size: [256, 2], fill: 0.9755859375}" >"$tmp/flat.yaml"
    "$TESSERA" render "$tmp/flat.yaml" -o "$tmp/flat.raw" 2>/dev/null || bad "flat.yaml does not render"
    # ulimit_run KIB ARGS...: tessera ARGS under ulimit -v KIB; RC, $tmp/err
    ulimit_run() {
        local kib=$1
        shift
        (ulimit -v "$kib" && exec "$TESSERA" "$@") >"$tmp/out" 2>"$tmp/err"
        RC=$?
    }
    for threads in 16 64; do
        ulimit_run 1000000 render "$tmp/small.yaml" --threads "$threads" -o "$tmp/got.raw"
        if [ $RC -eq 0 ] && cmp -s "$tmp/got.raw" "$tmp/want.raw"; then
            ok "ulimit -v 1000000, --threads $threads: renders"
        else bad "ulimit -v 1000000, --threads $threads: exit $RC: $(head -c 300 "$tmp/err")"; fi
    done
    ulimit_run 1000000 render "$tmp/deep.yaml" --threads 64 --memory 400M -o "$tmp/got.raw"
    if [ $RC -eq 0 ] && cmp -s "$tmp/got.raw" "$tmp/flat.raw"; then
        ok "ulimit -v 1000000, a 2000-deep chain on 64 threads: renders"
    else bad "ulimit -v 1000000, a 2000-deep chain on 64 threads: exit $RC: $(head -c 300 "$tmp/err")"; fi
    ulimit_run 1000000 render "$tmp/small.yaml" --threads 1024 -o "$tmp/none.raw"
    if [ $RC -eq 2 ] && grep -q "^tessera: thread stacks: 1024 threads x 1 MiB .* do not fit the address space ulimit -v leaves .*: use fewer threads (--threads N) or raise ulimit -v$" "$tmp/err" &&
        ! grep -q libgomp "$tmp/err" && [ ! -s "$tmp/none.raw" ]; then
        ok "ulimit -v 1000000, --threads 1024: refused naming the remedy, nothing written"
    else bad "ulimit -v 1000000, --threads 1024: exit $RC: $(head -c 300 "$tmp/err")"; fi
    ulimit_run 1000000 check "$tmp/deep.yaml" --threads 1024 --memory 100G
    if [ $RC -eq 2 ] && grep -q "1024 threads x [5-9] MiB (a chain of 2000 nested nodes)" "$tmp/err"; then
        ok "ulimit -v 1000000, check of a 2000-deep chain on 1024 threads: refused, the stack named"
    else bad "ulimit -v 1000000, check of a 2000-deep chain on 1024 threads: exit $RC: $(head -c 300 "$tmp/err")"; fi
fi

finish
