# Source on a GPU machine: unpack the carried Debian packages (.debs, scripts/gpu-debs.sh) into
# a prefix (never /) and point pkg-config, the compiler and the loader at it.
PREFIX=${TSR_PREFIX:-/tmp/tsr-prefix}
mkdir -p "$PREFIX"
for f in .debs/*.deb; do [ -e "$PREFIX/.$(basename "$f")" ] || { dpkg -x "$f" "$PREFIX" && touch "$PREFIX/.$(basename "$f")"; }; done
LIB=$PREFIX/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$LIB/pkgconfig:$PREFIX/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export CPATH=$PREFIX/usr/include${CPATH:+:$CPATH}
export LIBRARY_PATH=$LIB${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/usr/local/cuda/bin:$PATH
# the unpacked .pc files say prefix=/usr (includedir=/usr/include/polyclipping...): point them at
# the prefix, where the headers are (CMake refuses an include folder that does not exist)
sed -i "s|=/usr|=$PREFIX/usr|" "$LIB"/pkgconfig/*.pc "$PREFIX"/usr/share/pkgconfig/*.pc 2>/dev/null
# libtiff-4.pc and freetype2.pc name libraries it links privately (libwebp, liblzma, ...) whose .pc files the GPU
# image lacks; a dynamic link needs none of them, so each missing one gets an empty stand-in
for m in $(sed -n 's/^Requires.private: *//p' "$LIB/pkgconfig/libtiff-4.pc" "$LIB/pkgconfig/freetype2.pc" \
    2>/dev/null | tr ',' ' ' | sed 's/[<>=] *[0-9.]*//g'); do
  pkg-config --exists "$m" 2>/dev/null ||
    printf 'Name: %s\nDescription: stand-in (scripts/gpu-env.sh)\nVersion: 0\n' "$m" >"$LIB/pkgconfig/$m.pc"
done
