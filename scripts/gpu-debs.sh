#!/usr/bin/env bash
# On a normal machine (with Debian's registry): download the Debian packages the GPU machines
# lack (libyaml, uthash, libdeflate, libtiff with the libraries it links that Ubuntu's GPU
# images lack, Criterion and Criterion's runtime, and the static archives cli_install's static
# link of libtessera.a takes through libtiff: about 7 MB) into .debs/
# (ignored by git), for scripts/gpu-check.sh to unpack there. Carry .debs with the device call.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
cd .debs
apt-get download libyaml-0-2 libyaml-dev uthash-dev libdeflate0 libdeflate-dev libcriterion3 \
    libcriterion-dev libboxfort-dev libgit2-1.5 libnanomsg5 libhttp-parser2.9 libmbedtls14 libmbedx509-1 \
    libmbedcrypto7 libssh2-1 libtiff6 libtiff-dev libjbig0 libjpeg62-turbo liblerc4 libwebp7 \
    libpolyclipping22 libpolyclipping-dev libfreetype6 libfreetype-dev libbrotli1 libbrotli-dev \
    fonts-dejavu-core libwebp-dev liblerc-dev libjbig-dev libzstd-dev liblzma-dev libjpeg62-turbo-dev
ls
