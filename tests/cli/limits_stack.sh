#!/usr/bin/env bash
# Deep chains and thread stacks (docs/reliability.md). The CPU backend recurses once per node
# level on its worker threads (cpu/pool.c) and the main thread. Under `ulimit -s unlimited`
# (usual on HPC hosts) glibc gives new threads 2 MiB, which a 1000-deep chain used to overflow
# (SIGSEGV); the engine now starts its workers with the stack the design needs (cpu/stack.c)
# and checks the stack once per level, so a stack that is too small anyway (the main thread's
# ulimit -s) is a clear error, never a crash. The root places the chain with a pattern (not a
# repeat, which the main thread would compute once as the root's period), so both threads
# compute chain tiles; several runs each, since which thread computes which tile is a race.
# `--backend cpu`: on a GPU machine `auto` would compute the chain on the device, no recursion.
. "${SRC:?}/tests/cli/lib/common.sh"

# chain NODES STEP: n0 = 0, each level adds STEP, the root places the last. 999 x 2^-10 and
# 1998 x 2^-11 are both 0.9755859375, exact in float: the same bytes as a root filled with it.
chain() {
    echo "tessera: 1"
    echo "nodes:"
    echo "  n0: {size: [3000, 2], fill: 0.0}"
    for ((i = 1; i < $1; i++)); do
        echo "  n$i: {size: [3000, 2], fill: $2, children: [{trait: pattern, ref: n$((i - 1)), blend: add}]}"
    done
    echo "root: {size: [3000, 2], tile: 256, children: [{trait: pattern, ref: n$(($1 - 1))}]}"
}
chain 1000 0.0009765625 >"$tmp/c1000.yaml"
chain 1999 0.00048828125 >"$tmp/c2000.yaml" # with the root: the loader's limit
echo "tessera: 1
root: {size: [3000, 2], tile: 256, fill: 0.9755859375}" >"$tmp/flat.yaml"
"$TESSERA" render "$tmp/flat.yaml" -o "$tmp/want.raw" || bad "the flat reference does not render"

# renders: exit 0 and the reference bytes. 2000 levels need more than glibc's 2 MiB even at
# ~1.2 KiB a level: the workers must have got the engine's larger stacks.
for c in c1000 c2000; do
    for run in 1 2 3 4; do
        (ulimit -s unlimited && exec "$TESSERA" render "$tmp/$c.yaml" --backend cpu --threads 2 --memory 100G -o "$tmp/c.raw") 2>"$tmp/err"
        rc=$?
        if [ $rc -eq 0 ] && cmp -s "$tmp/c.raw" "$tmp/want.raw"; then ok "$c run $run under ulimit -s unlimited, 2 threads"
        else bad "$c run $run under ulimit -s unlimited, 2 threads: exit $rc $(head -c 300 "$tmp/err")"; fi
    done
done

# too small anyway: exit 1 (a render failure) naming the stack and the remedy; not 134/139
# `stack ULIMIT_KIB THREADS`: the main thread's stack is too small for the chain. On one thread
# it computes the chain: exit 1 naming it and the remedy. On two, the worker (whose stack the
# engine sized) may claim every rect before the main thread claims one: then the render
# completes with the right bytes; never a crash either way.
stack() {
    local what="ulimit -s $1, $2 threads"
    (
        ulimit -s "$1" || exit 99
        exec "$TESSERA" render "$tmp/c1000.yaml" --backend cpu --threads "$2" --memory 100G -o "$tmp/s.raw"
    ) 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -q "out of thread stack (.* on the main thread) in a chain of nested nodes 1001 deep" "$tmp/err" &&
        grep -q "give it more stack: ulimit -s [1-9][0-9]* for the main thread, [1-9][0-9]* MiB for a thread an application starts" "$tmp/err"; then
        ok "$what: clean error: $(head -c 120 "$tmp/err")"
    elif [ $rc -eq 0 ] && [ "$2" -gt 1 ] && cmp -s "$tmp/s.raw" "$tmp/want.raw"; then
        ok "$what: the worker computed the chain, the right bytes"
    else
        bad "$what: exit $rc (want 1 and the stack named) $(head -c 300 "$tmp/err")"
    fi
}
# 512 KiB: a level takes ~0.8 KiB since uncached chain nodes are computed in their parent's
# fetch (plan.c), so 1000 levels fit the 1 MiB that used to be too small
stack 512 1
for run in 1 2 3; do
    stack 512 2
done
finish
