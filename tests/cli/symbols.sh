#!/usr/bin/env bash
# libtessera exports its public API and nothing else: every symbol
# libtessera.so defines for the dynamic linker is a tsr_ function declared in include/tessera.h
# (and each of those is exported); every global symbol of the static libtessera.a is tsr_-named
# too (nvcc's C++ objects mangle theirs: _Z<len>tsr_...), so linking it into a program cannot
# clash with the program's own names. (Under ASan every global gets an __odr_asan.NAME twin.)
. "${SRC:?}/tests/cli/lib/common.sh"
: "${BUILD:?}"

header=$SRC/include/tessera.h
declared=$(grep -oE '^tsr_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u)
[ -n "$declared" ] || bad "no declarations found in $header"
exported=$(nm -D --defined-only "$BUILD/lib/libtessera.so" | awk '{print $3}' | sort -u)
[ -n "$exported" ] || bad "nm -D found nothing in $BUILD/lib/libtessera.so"
for s in $exported; do
    case $s in
    tsr_*) grep -qx -- "$s" <<<"$declared" && ok "exports $s" ||
        bad "exports $s, which tessera.h does not declare" ;;
    *) bad "exports $s: not tsr_-prefixed" ;;
    esac
done
for s in $declared; do
    grep -qx -- "$s" <<<"$exported" || bad "tessera.h declares $s, libtessera.so lacks it"
done

# Weak definitions (W, V) are left out: geom/clip.cpp instantiates Clipper's and the standard
# library's inline templates (std::vector<ClipperLib::IntPoint>), weak by the C++ ABI, and a
# weak definition cannot clash with a program's own (the program's wins).
strays=$(nm -g --defined-only "$BUILD/lib/libtessera.a" | awk 'NF == 3 && $2 != "W" && $2 != "V" {print $3}' |
    grep -vE '^(tsr_|_Z[0-9]+tsr_|__odr_asan\.tsr_|DW\.ref\.__gxx_personality_v0$)' | sort -u)
[ -z "$strays" ] && ok "libtessera.a: every global symbol is tsr_" ||
    bad "libtessera.a defines globals without tsr_: $(echo $strays)"

finish
