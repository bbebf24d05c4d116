#!/usr/bin/env bash
# Messages a new user meets: each names what is wrong, the value given and
# the way out, and exits 2 before anything is written.
. "${SRC:?}/tests/cli/lib/common.sh"
good="$SRC/designs/examples/microlens-array.yaml"

# expect RC PATTERN -- ARGS...: exit status and a stderr substring
expect() {
    local rc=$1 pat=$2
    shift 3
    "$TESSERA" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local got=$?
    if [ "$got" -eq "$rc" ] && grep -qF -- "$pat" "$tmp/err"; then
        pass=$((pass + 1)); echo "ok   $rc $*"
    else
        fail=$((fail + 1)); echo "FAIL $* -> exit $got (want $rc, '$pat'): $(head -c 300 "$tmp/err")"
    fi
}
# reject PATTERN -- ARGS...: stderr must not hold PATTERN
reject() {
    local pat=$1
    shift 2
    "$TESSERA" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    if grep -qF -- "$pat" "$tmp/err"; then
        fail=$((fail + 1)); echo "FAIL $*: says '$pat': $(head -c 300 "$tmp/err")"
    else
        pass=$((pass + 1)); echo "ok   not '$pat': $*"
    fi
}

cat >"$tmp/sigma.yaml" <<'Y'
tessera: 1
root:
  size: [100, 100]
  children:
    - trait: blur
      sigma: 500
      node: {size: [10, 10]}
Y
cat >"$tmp/profile.yaml" <<'Y'
tessera: 1
root:
  size: [100, 100]
  children:
    - trait: distance
      profile: spherical
      dmax: 5
      node: {size: [10, 10], source: {shape: circle, center: [5, 5], radius: 3}}
Y

# too many threads for the memory: the message is about --threads and names how many fit
expect 2 "--threads 1000: " -- render "$good" --threads 1000 --memory 64M -o null
expect 2 "threads fit" -- render "$good" --threads 1000 --memory 64M -o null
# a tiny --memory prints its size with digits that show it
expect 2 "have 9.8 KiB" -- render "$good" --memory 10K -o null
reject "0.0 MiB" -- render "$good" --memory 10K -o null
# a range error says what it got
expect 2 "sigma: must be in 0.3..256, got 500" -- check "$tmp/sigma.yaml"
# enum values get near-miss suggestions as keys do
expect 2 "unknown profile 'spherical' (did you mean 'sphere'?)" -- check "$tmp/profile.yaml"
# preview writes PNG only: another extension is refused, nothing is written
expect 2 "x.jpg: preview writes PNG" -- preview "$good" --region 0,0,10,10 -o "$tmp/x.jpg"
[ ! -e "$tmp/x.jpg" ] && { pass=$((pass + 1)); echo "ok   no x.jpg"; } ||
    { fail=$((fail + 1)); echo "FAIL x.jpg was written"; }
expect 0 "wrote" -- preview "$good" --region 0,0,10,10 -o "$tmp/X.PNG"
# an output URL tessera does not speak is refused, not opened as a path
expect 2 "udp://127.0.0.1:9: unknown output scheme 'udp'" -- render "$good" -o udp://127.0.0.1:9
expect 2 "unknown output scheme" -- preview "$good" --region 0,0,10,10 -o http://x/y.png

# a preview over the size bound is refused before any work, naming the --scale that fits
big="$SRC/designs/examples/microlens-sphere.yaml"
expect 2 "--scale 10 fits (or --force)" -- preview "$big" --region 0,0,150000,150000 -o "$tmp/big.png"
[ ! -e "$tmp/big.png" ] && { pass=$((pass + 1)); echo "ok   no big.png"; } ||
    { fail=$((fail + 1)); echo "FAIL big.png was written"; }
expect 2 "--scale 2 fits" -- preview "$big" --region 0,0,16385,16384 -o "$tmp/big.png"
expect 2 "--scale 2 fits" -- preview "$big" --region 0,0,16384,16384 --depth 16 -o "$tmp/big.png"
expect 2 "--force is not an option of render, but of preview" -- render "$big" --force -o null

# a rate where a size belongs is refused, a rate where a rate belongs taken
expect 2 "--memory 64MB/s: expected a size" -- render "$good" --memory 64MB/s -o null
expect 2 "--gpu-memory 8G/s: expected a size" -- render "$good" --gpu-memory 8G/s -o null
# a missing DESIGN says so once, without the command's name twice
expect 2 "tessera render: expected exactly one DESIGN, got none (see" -- render
expect 2 "tessera render: b.yaml: expected exactly one DESIGN" -- render a.yaml b.yaml

finish
