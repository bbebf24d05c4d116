# Sourced by the shell tests that run numpy checks: find_python MODULE... sets PY to the first of
# $PYTHON, python3 and /usr/bin/python3 (Debian's, when a pyenv/venv one shadows it) that
# imports every MODULE, or ends the test (exit 1) naming the Debian packages to install.
find_python() {
    local cand mods
    mods=$(IFS=,; echo "$*")
    PY=""
    for cand in ${PYTHON:-} python3 /usr/bin/python3; do
        if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import $mods" 2>/dev/null; then
            PY=$cand
            return 0
        fi
    done
    echo "FAIL: no python3 with $* (install$(printf ' python3-%s' "$@"))" >&2
    exit 1
}
