#!/usr/bin/env bash
# Install the Debian packages tessera needs, only those that are missing.
# Idempotent: a machine that has them all runs no apt-get at all.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libyaml-dev uthash-dev zlib1g-dev libdeflate-dev libpng-dev libtiff-dev libssl-dev
      libcriterion-dev libopenmpi-dev openmpi-bin python3-numpy python3-scipy python3-yaml
      libpolyclipping-dev python3-shapely python3-tifffile python3-pil)
# text/: FreeType for outline fonts, DejaVu for the tests, FreeType's Python binding for the
# outline oracle
pkgs+=(libfreetype-dev fonts-dejavu-core python3-freetype)
# the layout oracle (tests/cli/layout_oracle.sh): gdspy writes, KLayout converts, ezdxf writes DXF
pkgs+=(python3-gdspy python3-ezdxf klayout)
[ "${TSR_DEPS_EXTRA:-}" ] && pkgs+=($TSR_DEPS_EXTRA)
# Optional, only for `make fuzz`: clang with libFuzzer (compiler-rt).
[ "${TSR_DEPS_FUZZ:-}" ] && pkgs+=(clang libclang-rt-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
