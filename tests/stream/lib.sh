# Shared by tests/cli/stream_*.sh (sourced). Needs $TESSERA and $SRC.
#
# Gives: $tmp (removed at exit), $PY (python3 with zlib), $DESIGN (tests/stream/lenses.yaml),
# $FULL (its whole render), ok/bad/check counters and summary, and helpers that start
# controllers and senders in the background and always reap them: every child a test starts
# is killed at exit (trap), by its own pid.
set -u

: "${TESSERA:?TESSERA must name the tessera binary}"
: "${SRC:?SRC must name the source tree}"

PY=""
for cand in ${PYTHON:-} /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import zlib, struct' 2>/dev/null; then
    PY=$cand
    break
  fi
done
if [ -z "$PY" ]; then
  echo "FAIL: no python3"
  echo "0 passed, 1 failed"
  exit 1
fi
PROTO="$SRC/tests/stream/proto.py"
DESIGN="$SRC/tests/stream/lenses.yaml"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera_stream.XXXXXX")
CHILDREN=()
cleanup() {
  local p
  for p in "${CHILDREN[@]}"; do
    kill -9 "$p" 2>/dev/null
  done
  for p in "${CHILDREN[@]}"; do
    wait "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

pass=0
fail=0
ok() { echo "ok $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
# check NAME CMD...: ok when CMD succeeds
check() {
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
summary() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

# The reference bytes of the test design.
FULL="$tmp/full.raw"
if ! "$TESSERA" render "$DESIGN" -o "$FULL" --progress none 2>"$tmp/full.err"; then
  echo "FAIL: rendering $DESIGN: $(cat "$tmp/full.err")"
  echo "0 passed, 1 failed"
  exit 1
fi
TOTAL=$(stat -c %s "$FULL")

# wait_for FILE PATTERN [TENTHS]: until FILE holds PATTERN (default 10 s); false on timeout
wait_for() {
  local f=$1 pat=$2 n=${3:-100}
  while [ "$n" -gt 0 ]; do
    if [ -f "$f" ] && grep -q "$pat" "$f" 2>/dev/null; then return 0; fi
    sleep 0.1
    n=$((n - 1))
  done
  return 1
}

# wait_bytes FILE [TENTHS]: until FILE is not empty (default 10 s)
wait_bytes() {
  local f=$1 n=${2:-100}
  while [ "$n" -gt 0 ]; do
    [ -s "$f" ] && return 0
    sleep 0.1
    n=$((n - 1))
  done
  return 1
}

# start_controller LOG [ARGS...]: starts `tessera controller --listen 127.0.0.1:$CPORT ARGS`
# (CPORT=0 the first time: a free port is picked and kept, so restarts reuse it); sets CPID.
CPORT=0
start_controller() {
  local log=$1
  shift
  : >"$log"
  "$TESSERA" controller --listen "127.0.0.1:$CPORT" "$@" 2>"$log" &
  CPID=$!
  CHILDREN+=("$CPID")
  if ! wait_for "$log" "listening on"; then
    echo "controller did not start: $(cat "$log")"
    return 1
  fi
  CPORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -n 1)
}

# reap PID: wait for it; its exit status goes to $REAPED (not through $(...): a subshell
# cannot wait for its parent's children)
REAPED=0
reap() {
  REAPED=0
  wait "$1" 2>/dev/null || REAPED=$?
}

# reap_within PID [SECONDS]: as reap, but a PID still running after SECONDS (default 10) is
# killed (REAPED=137): a controller that should have ended fails the test instead of hanging it
running() { # PID: not ended (a zombie has ended; kill -0 would still see it)
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$st" ] && [ "$st" != Z ]
}
reap_within() {
  local n=$((${2:-10} * 10))
  while [ "$n" -gt 0 ] && running "$1"; do
    sleep 0.1
    n=$((n - 1))
  done
  running "$1" && kill -9 "$1" 2>/dev/null
  reap "$1"
}

# alive PID: true while the process runs
alive() { kill -0 "$1" 2>/dev/null; }
