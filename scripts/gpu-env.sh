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
