#!/usr/bin/env bash
# tessera profile --json: one JSON object with the fields DESIGN.md §4 and issue 5 name, whose
# byte count is the region's, and the same figures in the human-readable form.
set -uo pipefail
: "${TESSERA:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
pass=0 fail=0
d="$SRC/designs/examples/microlens-sphere.yaml"
if "$TESSERA" profile "$d" --backend cpu --region 100,200,700,300 --threads 2 --json >"$tmp/p.json" 2>"$tmp/err"; then
    pass=$((pass + 1)); echo "ok   profile --json exits 0"
else
    fail=$((fail + 1)); echo "FAIL profile --json: $(cat "$tmp/err")"
fi
if "$py" - "$tmp/p.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
need = ["bytes", "seconds", "mb_per_s", "target_mb_per_s", "headroom", "projected_seconds",
        "backend", "threads", "peak_rss_bytes", "cache", "nodes"]
missing = [k for k in need if k not in p]
assert not missing, "missing %s" % missing
for k in ["hits", "misses", "evictions", "bytes"]:
    assert k in p["cache"], "cache.%s missing" % k
assert p["bytes"] == 700 * 300, p["bytes"]
assert p["backend"] == "cpu" and p["threads"] == 2
assert p["target_mb_per_s"] == 10.0
assert abs(p["headroom"] - p["mb_per_s"] / 10.0) <= 1e-5 * max(1, p["headroom"])
assert abs(p["projected_seconds"] - 150000 * 150000 / (p["mb_per_s"] * 1e6)) < 1e-3 * p["projected_seconds"]
names = [n["name"] for n in p["nodes"]]
assert "root" in names and "seeds" in names, names
assert all({"name", "trait", "seconds"} <= set(n) for n in p["nodes"])
assert [n["trait"] for n in p["nodes"] if n["name"] == "root"] == ["distance"]
PY
then pass=$((pass + 1)); echo "ok   JSON fields and values"
else fail=$((fail + 1)); echo "FAIL JSON fields"; fi
"$TESSERA" profile "$d" --backend cpu --region 0,0,300,200 --target 1MB/s >"$tmp/p.txt" 2>&1
if grep -q "x the 1 MB/s target" "$tmp/p.txt" && grep -q "^cache" "$tmp/p.txt" && grep -q "distance" "$tmp/p.txt"; then
    pass=$((pass + 1)); echo "ok   human-readable profile"
else fail=$((fail + 1)); echo "FAIL human-readable profile: $(cat "$tmp/p.txt")"; fi
"$TESSERA" profile "$d" --backend cpu --region 0,0,150001,1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "inside the root" "$tmp/err" && { pass=$((pass + 1)); echo "ok   region outside refused"; } \
    || { fail=$((fail + 1)); echo "FAIL region outside: $(cat "$tmp/err")"; }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
