#!/usr/bin/env bash
# tessera check warns where the memory plan makes the engine compute tiles again: a tile
# cache smaller than the tiles one band reads below the root (two blurs over a 20000 px plate:
# ~240 MiB a band). The warning names the --memory that avoids it, and at that --memory (or the
# default 2 GiB) there is no such warning.
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
# a design that reads nothing below its root again (a lone shape) is never warned about
printf 'tessera: 1\nroot: {size: [20000, 20000], source: {shape: circle, center: [9, 9], radius: 5}}\n' >"$tmp/flat.yaml"
"$TESSERA" check --threads 2 --memory 40M "$tmp/flat.yaml" >"$tmp/flat" 2>"$tmp/err"
grep -q "computed again" "$tmp/flat" && bad "a flat design warned" || ok "a flat design is not warned"
finish
