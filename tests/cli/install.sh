#!/usr/bin/env bash
# tessera installs: `cmake --install` into a scratch prefix puts the
# command, the shared and static libraries, tessera.h, tessera.pc, the man page and the bash
# completion in their places; examples/pull.c builds against the installed files alone through
# `pkg-config --cflags --libs tessera` (and statically through --static), and the bytes it
# pulls through the library equal `tessera render -o FILE`'s, also after a resume at a random
# offset. $BUILD is the build tree, $CC the compiler, $TSR_CFLAGS the build's sanitizer flags.
. "${SRC:?}/tests/cli/lib/common.sh"
: "${BUILD:?}"
CC=${CC:-cc}

prefix=$tmp/prefix
if ! cmake --install "$BUILD" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    bad "cmake --install: $(tail -5 "$tmp/install.log")"
    echo "$pass passed, $fail failed"
    exit 1
fi
pc=$(find "$prefix" -name tessera.pc)
libdir=$(dirname "$(dirname "$pc")")
export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
ver=$(pkg-config --modversion tessera)
major=${ver%%.*}
for f in bin/tessera include/tessera.h share/man/man1/tessera.1 \
    share/bash-completion/completions/tessera; do
    [ -f "$prefix/$f" ] && ok "installs $f" || bad "no $prefix/$f"
done
for f in libtessera.so "libtessera.so.$major" libtessera.a pkgconfig/tessera.pc; do
    [ -f "$libdir/$f" ] && ok "installs ${libdir#"$prefix/"}/$f" || bad "no $libdir/$f"
done
soname=$(objdump -p "$libdir/libtessera.so" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = "libtessera.so.$major" ] && ok "SONAME $soname" || bad "SONAME '$soname'"
got=$("$prefix/bin/tessera" --version)
[ "$got" = "tessera $ver" ] && ok "tessera --version: $got" || bad "--version '$got', pc $ver"

# the example, against the installed files only: shared, then static
# shellcheck disable=SC2086,SC2046 # flags are words
if $CC ${TSR_CFLAGS:-} -Wall -Wextra -Werror "$SRC/examples/pull.c" \
    $(pkg-config --cflags --libs tessera) -o "$tmp/pull" 2>"$tmp/cc.err"; then
    ok "examples/pull.c builds with pkg-config --cflags --libs tessera"
else
    bad "pull.c: $(head -c 600 "$tmp/cc.err")"
fi
static=$(pkg-config --static --libs tessera)
static=${static/-ltessera/$libdir/libtessera.a}
# shellcheck disable=SC2086,SC2046
if $CC ${TSR_CFLAGS:-} "$SRC/examples/pull.c" $(pkg-config --cflags tessera) $static \
    -o "$tmp/pull-static" 2>"$tmp/cc.err"; then
    ok "examples/pull.c links libtessera.a with pkg-config --static --libs"
else
    bad "pull.c static: $(head -c 600 "$tmp/cc.err")"
fi
# pkg-config's flags carry an rpath to the prefix's lib folder: the program finds the installed
# library with no LD_LIBRARY_PATH at all
deps=$(env -u LD_LIBRARY_PATH ldd "$tmp/pull" 2>&1)
found=$(sed -n "s|^[[:space:]]*libtessera.so.$major => \([^ ]*\) .*|\1|p" <<<"$deps")
[ -n "$found" ] && [ "$(realpath "$found")" = "$(realpath "$libdir/libtessera.so.$major")" ] &&
    ok "pull finds the installed libtessera.so.$major through its rpath, no LD_LIBRARY_PATH" ||
    bad "pull without LD_LIBRARY_PATH: $deps"
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} # first, before what the host needs
deps=$(ldd "$tmp/pull" 2>&1) # not `ldd | grep -q`: pipefail would see ldd's SIGPIPE
grep -qF "$libdir/libtessera.so.$major" <<<"$deps" &&
    ok "pull loads the installed libtessera.so.$major" || bad "pull: $deps"

# 16-bit swaths from the bottom right, serpentine, a narrow last swath, 32-row bands
cat >"$tmp/d.yaml" <<'Y'
tessera: 1
tile: 32
output:
  depth: 16
  order: swath
  swath: {width: 300, serpentine: true, start: bottom-right}
nodes:
  lens: {size: [60, 60], source: {shape: circle, center: [30, 30], radius: 21, aa: 4}}
root:
  size: [700, 333]
  fill: 0.1
  children:
    - {trait: repeat-vector, ref: lens, u: [60, 0], v: [30, 52]}
    - {trait: pattern, offset: [410, 170], node: {size: [90, 40], fill: 0.9}}
Y
"$prefix/bin/tessera" render "$tmp/d.yaml" -o "$tmp/ref.raw" --progress none ||
    bad "reference render"
total=$((700 * 333 * 2))
for p in pull pull-static; do
    if "$tmp/$p" "$tmp/d.yaml" "$tmp/$p.raw" >"$tmp/out" 2>"$tmp/err" &&
        cmp -s "$tmp/$p.raw" "$tmp/ref.raw" && [ ! -s "$tmp/err" ] &&
        grep -qF "700 x 333, 16 bit, $total bytes" "$tmp/out"; then
        ok "$p: the bytes of tessera render, nothing on stderr"
    else
        bad "$p: $(head -c 300 "$tmp/err") $(cmp "$tmp/$p.raw" "$tmp/ref.raw" 2>&1)"
    fi
done
# a resume: the file holds the first $at bytes and some garbage after them
at=$(((RANDOM * 32768 + RANDOM) % total))
{ head -c "$at" "$tmp/ref.raw"; head -c 5000 /dev/urandom; } >"$tmp/resumed.raw"
if "$tmp/pull" "$tmp/d.yaml" "$tmp/resumed.raw" "$at" >"$tmp/out" 2>"$tmp/err" &&
    cmp -s "$tmp/resumed.raw" "$tmp/ref.raw"; then
    ok "pull resumed at byte $at completes the file identically"
else
    bad "resume at $at: $(head -c 300 "$tmp/err") $(cmp "$tmp/resumed.raw" "$tmp/ref.raw" 2>&1)"
fi
"$tmp/pull" "$tmp/d.yaml" "$tmp/x.raw" $((total + 1)) >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -qF "offset $((total + 1)) is past the end of the stream ($total bytes)" \
    "$tmp/err" && ok "a resume past the end fails clearly" || bad "past the end: rc $rc, $(cat "$tmp/err")"

# the man page renders and names every option the usage text names; the completion completes
man=$prefix/share/man/man1/tessera.1
: >"$tmp/man.txt"
: >"$tmp/man.err"
command -v man >/dev/null && MANWIDTH=80 man -l "$man" >"$tmp/man.txt" 2>"$tmp/man.err"
# a minimized system's `man` prints a notice instead of the page: groff then, if it is there
if ! grep -q "tessera render DESIGN" "$tmp/man.txt" && command -v groff >/dev/null; then
    groff -man -Tutf8 "$man" >"$tmp/man.txt" 2>"$tmp/man.err"
fi
if grep -q "tessera render DESIGN" "$tmp/man.txt"; then
    [ ! -s "$tmp/man.err" ] && ok "man -l renders tessera.1" || bad "man page: $(head -c 300 "$tmp/man.err")"
else
    echo "skip man page rendering: neither man nor groff renders pages here"
    sed 's/\\-/-/g' "$man" >"$tmp/man.txt" # the options below, from the roff source
fi
missing=
for o in $("$TESSERA" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
    grep -qF -- "$o" "$tmp/man.txt" || missing="$missing $o"
done
[ -z "$missing" ] && ok "the man page names every option of the usage" || bad "man lacks$missing"
# shellcheck disable=SC1091
words=$(bash -c 'source "$1"; COMP_WORDS=(tessera check --t); COMP_CWORD=2; _tessera
    echo "${COMPREPLY[*]}"' _ "$prefix/share/bash-completion/completions/tessera")
[ "$words" = "--tree --threads --tile" ] && ok "completion: check --t -> $words" ||
    bad "completion: '$words'"

finish
