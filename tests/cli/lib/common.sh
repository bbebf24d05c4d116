# Sourced first by the shell tests in tests/cli/ (tests/CMakeLists.txt runs each with TESSERA,
# SRC and BUILD set): a scratch folder $tmp removed at exit, and `ok` / `bad` lines counted for
# `finish`, whose status (any failure) ends the test.
set -uo pipefail
: "${TESSERA:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
