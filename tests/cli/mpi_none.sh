#!/usr/bin/env bash
# A tessera built without MPI (dist/mpi_none.c: TSR_MPI=OFF, or no MPI found; `make asan`'s
# build) refuses a launch by mpirun with several ranks, which would have every rank write the
# whole stream to the same output: exit 2, naming the remedy, nothing written. One rank (or the
# launcher's variables absent) is the ordinary render. The launch is simulated by the variables
# mpirun sets. In a build with MPI this skips (exit 77): cli_mpi runs the real thing.
. "${SRC:?}/tests/cli/lib/common.sh"
if [ "${TSR_HAVE_MPI:-ON}" = ON ]; then
    echo "skip: this tessera has MPI (cli_mpi tests it)"
    exit 77
fi
D="$SRC/tests/oracle/designs/swath_tl_serp.yaml"

for var in OMPI_COMM_WORLD_SIZE PMI_SIZE; do
    env "$var=3" "$TESSERA" render "$D" -o "$tmp/out" --progress none 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q "^tessera: started by mpirun with 3 ranks, but this tessera was built without MPI" "$tmp/err" &&
        [ ! -e "$tmp/out" ]; then
        ok "$var=3: exit 2, $(head -c 100 "$tmp/err")"
    else
        bad "$var=3: exit $rc, $(cat "$tmp/err"), output $([ -e "$tmp/out" ] && echo written)"
    fi
done
"$TESSERA" render "$D" -o "$tmp/ref" --progress none 2>"$tmp/err" || bad "plain render: $(cat "$tmp/err")"
OMPI_COMM_WORLD_SIZE=1 "$TESSERA" render "$D" -o "$tmp/out" --progress none 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/ref" && ok "one rank: the ordinary render" ||
    bad "one rank: exit $rc $(cat "$tmp/err")"

finish
