#!/usr/bin/env bash
# CLI error paths: every bad input exits 2 (usage, design, memory plan) or 1 (I/O), with a
# message naming what is wrong, and leaves no half-written output behind.
. "${SRC:?}/tests/cli/lib/common.sh"
good="$SRC/designs/examples/microlens-array.yaml"

# expect RC PATTERN -- ARGS...: run tessera, check the exit status and a stderr substring
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

cat >"$tmp/bad.yaml" <<'Y'
tessera: 1
root:
  size: [100, 100]
  children:
    - trait: blur
      sigma: 1000
      node: {size: [10, 10]}
Y
cat >"$tmp/typo.yaml" <<'Y'
tessera: 1
root:
  size: [100, 100]
  fil: 0.5
Y
cat >"$tmp/small.yaml" <<'Y'
tessera: 1
root:
  size: [64, 48]
  source: {shape: circle, center: [32, 24], radius: 20}
Y

expect 2 "unknown command" -- frobnicate "$good"
expect 2 "usage" --
expect 2 "--frob is not an option of render (see tessera render --help)" -- render "$good" --frob
expect 2 "missing value" -- render "$good" --threads
expect 2 "--threads 0" -- render "$good" --threads 0 -o null
expect 2 "--memory lots" -- render "$good" --memory lots -o null
expect 2 "--tile 0" -- render "$good" --tile 0 -o null
expect 2 "--rows 5:5" -- render "$good" --rows 5:5 -o null
expect 2 "--rows 10:999999999" -- render "$good" --rows 10:999999999 -o null
expect 2 "exactly one DESIGN" -- render
expect 2 "bad.yaml:6:7: root.children[0].sigma: must be in 0.3..256" -- render "$tmp/bad.yaml" -o null
expect 2 "typo.yaml:4:3: root.fil: unknown key 'fil' (did you mean 'fill'?)" -- check "$tmp/typo.yaml"
expect 2 "needs at least" -- render "$good" --memory 1M -o null
expect 2 "needs --region" -- preview "$good" -o "$tmp/p.png"
expect 2 "must lie inside the root" -- preview "$tmp/small.yaml" --region 0,0,65,48 -o "$tmp/p.png"
expect 2 "--region 1,2,3" -- preview "$tmp/small.yaml" --region 1,2,3 -o "$tmp/p.png"
expect 2 "--scale 0" -- preview "$tmp/small.yaml" --region 0,0,8,8 --scale 0 -o "$tmp/p.png"
expect 2 "--depth 12" -- preview "$tmp/small.yaml" --region 0,0,8,8 --depth 12 -o "$tmp/p.png"
expect 2 "--backend fpga" -- render "$tmp/small.yaml" --backend fpga -o null
expect 1 "No such file or directory" -- render "$tmp/small.yaml" -o "$tmp/no/such/dir/out.raw"
expect 1 "No space left on device" -- render "$tmp/small.yaml" -o /dev/full
expect 2 "$tmp/missing.yaml: cannot open" -- render "$tmp/missing.yaml" -o null
expect 2 "$tmp: read error: Is a directory" -- check "$tmp"

# regions whose x + w or y + h overflow int64 (UBSan in tsr_rect_contains; the release
# build rendered 9.2e18 px outside the root), strict numbers, a design that never ends
expect 2 "must lie inside the root" -- preview "$tmp/small.yaml" --region 9223372036854775806,0,1,1 -o "$tmp/p.png"
expect 2 "must lie inside the root" -- profile "$tmp/small.yaml" --region 0,9223372036854775800,1,100
expect 2 "must lie inside the root" -- preview "$tmp/small.yaml" --region 9223372036854775807,0,9223372036854775807,1 -o "$tmp/p.png"
expect 2 "--region 9223372036854775808,0,1,1" -- preview "$tmp/small.yaml" --region 9223372036854775808,0,1,1 -o "$tmp/p.png"
expect 2 "--region 0,+0,8,8" -- preview "$tmp/small.yaml" --region 0,+0,8,8 -o "$tmp/p.png"
expect 2 "--region 0,0,8,8," -- preview "$tmp/small.yaml" --region 0,0,8,8, -o "$tmp/p.png"
expect 2 "--region 0,0,0x8,8" -- preview "$tmp/small.yaml" --region 0,0,0x8,8 -o "$tmp/p.png"
expect 2 "--memory 0x40M" -- check "$tmp/small.yaml" --memory 0x40M
expect 2 "--memory inf" -- check "$tmp/small.yaml" --memory inf
expect 2 "--memory  64M" -- check "$tmp/small.yaml" --memory " 64M"
expect 2 "--resume-at +5" -- render "$tmp/small.yaml" --resume-at +5 -o "$tmp/r.raw"
expect 2 "--resume-at  -5" -- render "$tmp/small.yaml" --resume-at " -5" -o "$tmp/r.raw"
expect 2 "--threads +2" -- check "$tmp/small.yaml" --threads +2
expect 2 "--rows 0:+5" -- render "$tmp/small.yaml" --rows 0:+5 -o null
expect 2 "--scale 0x10" -- preview "$tmp/small.yaml" --region 0,0,8,8 --scale 0x10 -o "$tmp/p.png"
expect 2 "--stall-timeout 0x10" -- render "$tmp/small.yaml" --stall-timeout 0x10 -o tcp://127.0.0.1:9
expect 2 "--rate +1MB/s" -- render "$tmp/small.yaml" --rate +1MB/s -o null
expect 2 "/dev/zero: larger than 16 MiB" -- check /dev/zero
printf 'tessera: 1\nroot:\n  size: [1, 1]\n  fill: 0.5\xff\n' >"$tmp/utf8.yaml"
expect 2 "utf8.yaml:4:12: YAML syntax error: invalid leading UTF-8 octet" -- check "$tmp/utf8.yaml"
printf 'tessera: 1\nroot:\n  size: [9, 9]\n  children:\n    - {trait: repeat, region: [0, 0, 0, 0], node: {size: [3, 3]}}\n' >"$tmp/r0.yaml"
expect 2 "r0.yaml:5:31: root.children[0].region: w and h must be > 0" -- check "$tmp/r0.yaml"

# what check, profile and --help print must arrive: a full disk is exit 1, not 0
full() {
    local what=$1
    shift
    "$TESSERA" "$@" >/dev/full 2>"$tmp/err" </dev/null
    local got=$?
    if [ "$got" -eq 1 ] && grep -qF "stdout: No space left on device" "$tmp/err"; then
        pass=$((pass + 1)); echo "ok   $what > /dev/full: exit 1"
    else
        fail=$((fail + 1)); echo "FAIL $what > /dev/full: exit $got, $(head -c 300 "$tmp/err")"
    fi
}
full check check "$tmp/small.yaml"
full profile profile "$tmp/small.yaml"
full "profile --json" profile "$tmp/small.yaml" --json
full --help --help

# a failed preview leaves no PNG behind
"$TESSERA" preview "$tmp/small.yaml" --region 0,0,99,99 -o "$tmp/none.png" 2>/dev/null
if [ ! -e "$tmp/none.png" ]; then pass=$((pass + 1)); echo "ok   no PNG from a failed preview"
else fail=$((fail + 1)); echo "FAIL a failed preview left $tmp/none.png"; fi

# and a good run still works: exit 0, exact size
"$TESSERA" render "$tmp/small.yaml" -o "$tmp/ok.raw" && [ "$(stat -c %s "$tmp/ok.raw")" -eq $((64 * 48)) ] \
    && { pass=$((pass + 1)); echo "ok   good render"; } || { fail=$((fail + 1)); echo "FAIL good render"; }

finish
