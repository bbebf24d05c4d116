#!/usr/bin/env bash
# On a normal machine (with Debian's registry): download the Debian packages the GPU machines
# lack (libyaml, uthash, libdeflate, Criterion and Criterion's runtime, about 2 MB) into .debs/
# (ignored by git), for scripts/gpu-check.sh to unpack there. Carry .debs with the device call.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs
cd .debs
apt-get download libyaml-0-2 libyaml-dev uthash-dev libdeflate0 libdeflate-dev libcriterion3 \
    libcriterion-dev libboxfort-dev libgit2-1.5 libnanomsg5 libhttp-parser2.9 libmbedtls14 libmbedx509-1 \
    libmbedcrypto7 libssh2-1
ls
