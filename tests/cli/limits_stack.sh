#!/usr/bin/env bash
# Deep chains and thread stacks (docs/reliability.md). The CPU backend recurses once per node
# level on OpenMP worker threads and the main thread. Under `ulimit -s unlimited` (usual on HPC
# hosts) glibc gives new threads 2 MiB, which a 1000-deep chain used to overflow (SIGSEGV);
# the engine now raises the default for the workers it starts (engine/stack.c) and checks the
# stack once per level, so a stack that is too small anyway is a clear error, never a crash.
# Several runs each, since which thread computes the chain is a race.
set -uo pipefail
: "${TESSERA:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# chain NODES STEP: n0 = 0, each level adds STEP, the root repeats the last. 999 x 2^-10 and
# 1998 x 2^-11 are both 0.9755859375, exact in float: the same bytes as a root filled with it.
chain() {
    echo "tessera: 1"
    echo "nodes:"
    echo "  n0: {size: [3000, 2], fill: 0.0}"
    for ((i = 1; i < $1; i++)); do
        echo "  n$i: {size: [3000, 2], fill: $2, children: [{trait: pattern, ref: n$((i - 1)), blend: add}]}"
    done
    echo "root: {size: [3000, 2], tile: 256, children: [{trait: repeat, ref: n$(($1 - 1))}]}"
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
        (ulimit -s unlimited && exec "$TESSERA" render "$tmp/$c.yaml" --threads 2 --memory 100G -o "$tmp/c.raw") 2>"$tmp/err"
        rc=$?
        if [ $rc -eq 0 ] && cmp -s "$tmp/c.raw" "$tmp/want.raw"; then ok "$c run $run under ulimit -s unlimited, 2 threads"
        else bad "$c run $run under ulimit -s unlimited, 2 threads: exit $rc $(head -c 300 "$tmp/err")"; fi
    done
done

# too small anyway: exit 1 (a render failure) naming the stack and the remedy; not 134/139
# `stack ULIMIT_KIB OMP_STACKSIZE THREADS WHICH`: WHICH is the thread the message must name, or
# "" for either
stack() {
    local what="ulimit -s $1, OMP_STACKSIZE=${2:-unset}, $3 threads"
    (
        ulimit -s "$1" || exit 99
        [ -n "$2" ] && export OMP_STACKSIZE="$2"
        exec "$TESSERA" render "$tmp/c1000.yaml" --threads "$3" --memory 100G -o null
    ) 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 1 ] && grep -q "out of thread stack (.* on the $4.*thread) in a chain of nested nodes 1001 deep" "$tmp/err" &&
        grep -q "OMP_STACKSIZE=[1-9][0-9]*M for worker threads, ulimit -s [1-9][0-9]* for the main thread" "$tmp/err"; then
        ok "$what: clean error: $(head -c 120 "$tmp/err")"
    else
        bad "$what: exit $rc (want 1 and the stack named) $(head -c 300 "$tmp/err")"
    fi
}
stack 1024 "" 1 main
for run in 1 2 3; do
    stack 1024 256K 2 ""
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
