#!/usr/bin/env bash
# tessera check warns where the memory plan makes the engine compute tiles again: a tile
# cache smaller than the tiles one band reads below the root (two blurs over a 20000 px plate:
# ~240 MiB a band). The warning names the --memory that avoids it, and at that --memory (or the
# default, at least 2 GiB) there is no such warning. The default is a quarter of the host's
# available memory, at least 2 GiB, and `check` says so.
. "${SRC:?}/tests/cli/lib/common.sh"

cat >"$tmp/chain.yaml" <<'Y'
tessera: 1
root:
  size: [20000, 20000]
  children:
    - trait: blur
      sigma: 6
      node:
        size: [20000, 20000]
        children:
          - trait: blur
            sigma: 6
            node: {size: [20000, 20000], source: {shape: circle, center: [10000, 10000], radius: 9000}}
Y
"$TESSERA" check --threads 2 --memory 200M "$tmp/chain.yaml" >"$tmp/small" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] && ok "a warned plan still exits 0" || bad "check exit $rc: $(cat "$tmp/err")"
grep -q "warning: --memory .* leaves a tile cache of .* less than the .* of tiles one band reads below the root: tiles are evicted and computed again" "$tmp/small" &&
    ok "a small --memory is warned about" || bad "no recomputation warning: $(cat "$tmp/small")"
want=$(grep -o '(--memory [0-9]*) to compute each once' "$tmp/small" | grep -o '[0-9]*' | head -1)
[ -n "$want" ] && [ "$want" -gt 209715200 ] && ok "it names a larger --memory ($want)" ||
    bad "no larger --memory named: '$want'"
"$TESSERA" check --threads 2 --memory "${want:-1}" "$tmp/chain.yaml" >"$tmp/enough" 2>"$tmp/err"
grep -q "computed again" "$tmp/enough" && bad "still warned at the --memory it named: $(cat "$tmp/enough")" ||
    ok "no warning at the --memory it named"
"$TESSERA" check --threads 2 "$tmp/chain.yaml" >"$tmp/default" 2>"$tmp/err"
grep -q "computed again" "$tmp/default" && bad "warned at the default --memory" ||
    ok "no warning at the default --memory"
# the default: a quarter of MemAvailable, at least 2 GiB (read here from /proc/meminfo; the
# two reads differ by what other processes did meanwhile, hence the 5 % margin)
avail=$(awk '/^MemAvailable:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
got=$(sed -n 's/^memory plan (--memory \([^,]*\), the default: a quarter of the host.s available memory, at least 2 GiB):$/\1/p' "$tmp/default")
if [ -z "$got" ]; then
    bad "no default budget line: $(grep "memory plan" "$tmp/default")"
elif awk -v g="$got" -v a="$avail" 'BEGIN {
        split(g, p, " "); m = p[2] == "GiB" ? 2^30 : p[2] == "MiB" ? 2^20 : p[2] == "TiB" ? 2^40 : 0
        v = p[1] * m; want = a / 4 > 2^31 ? a / 4 : 2^31
        exit !(v > 0.95 * want && v < 1.05 * want) }'; then
    ok "check names the default budget: $got (MemAvailable / 4 = $((avail / 4)), at least 2 GiB)"
else
    bad "default budget $got, not a quarter of MemAvailable $avail (at least 2 GiB)"
fi
# a design that reads nothing below its root again (a lone shape) is never warned about
printf 'tessera: 1\nroot: {size: [20000, 20000], source: {shape: circle, center: [9, 9], radius: 5}}\n' >"$tmp/flat.yaml"
"$TESSERA" check --threads 2 --memory 40M "$tmp/flat.yaml" >"$tmp/flat" 2>"$tmp/err"
grep -q "computed again" "$tmp/flat" && bad "a flat design warned" || ok "a flat design is not warned"
finish
