#!/usr/bin/env bash
# tessera profile --json: one JSON object with the fields docs/semantics.md §1 names, whose
# byte count is the region's, and the same figures in the human-readable form.
. "${SRC:?}/tests/cli/lib/common.sh"
py=/usr/bin/python3
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
# the team's busy time: some, and never more than 2 threads for the whole run
assert 0 < p["busy_thread_seconds"] <= 2 * p["seconds"] * 1.05 + 0.01, (p["busy_thread_seconds"], p["seconds"])
assert p["cpu_seconds"] >= 0, p["cpu_seconds"]  # may read 0: the kernel counts in ticks
assert p["device"] is None, p["device"]  # the GPU backend's figures, on the CPU none
assert p["engines"] == [], p["engines"]  # --gpus only
assert p["link"] is None and p["sink"] is None, (p["link"], p["sink"])  # GPU only; -o only
PY
then pass=$((pass + 1)); echo "ok   JSON fields and values"
else fail=$((fail + 1)); echo "FAIL JSON fields"; fi
# --gpus: each engine's share (here CPU engines, TSR_MULTI_CPU=1: the same hand-out of bands)
if TSR_MULTI_CPU=1 "$TESSERA" profile "$d" --gpus 2 --threads 1 --tile 16 --region 0,0,400,600 \
    --json >"$tmp/m.json" 2>"$tmp/err" && "$py" - "$tmp/m.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
eng = p["engines"]
assert p["backend"] == "gpus" and len(eng) == 2, p["backend"]
assert sum(e["bytes"] for e in eng) == p["bytes"] == 400 * 600, (eng, p["bytes"])
assert all(e["bytes"] > 0 and e["busy_seconds"] > 0 for e in eng), eng
PY
then pass=$((pass + 1)); echo "ok   --gpus: each engine's bytes and time, summing to the profile's"
else fail=$((fail + 1)); echo "FAIL --gpus engines: $(head -c 400 "$tmp/m.json") $(cat "$tmp/err")"; fi
# On a GPU: the device's memory plan, its tile cache and its time per stage (the root's
# distance is the work; skipped, not passed, without a device)
if "$TESSERA" profile "$d" --backend gpu --region 0,0,3000,2000 --json >"$tmp/g.json" 2>"$tmp/err"; then
    if "$py" - "$tmp/g.json" "$SRC/nodes/traits.def" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
dev = p["device"]
assert p["backend"] == "gpu" and dev["arena_bytes"] >= dev["arena_peak_bytes"] > 0, dev
assert dev["bands_in_flight"] >= 2, dev
assert {"hits", "misses", "evictions", "bytes", "budget"} <= set(dev["cache"]), dev
st = dev["stage_seconds"]
# four stages of the backend's own, then one per trait of the table (nodes/traits.def)
import re
traits = [m.replace("_", "-") for m in
          re.findall(r"^X\((\w+),", open(sys.argv[2]).read(), re.M)]
assert traits[:2] == ["pattern", "repeat"], traits
assert set(st) == {"base", "convert", "copies", "period"} | set(traits), (st, traits)
assert st["distance"] > 0 and st["blur"] == 0, st
link = p["link"]  # the device-to-host ceiling, measured in the same run
assert link["d2h_gb_per_s"] > 1 and link["bytes"] == 256 << 20, link
assert abs(link["share"] - p["mb_per_s"] / 1e3 / link["d2h_gb_per_s"]) < 1e-3, link
PY
    then pass=$((pass + 1)); echo "ok   GPU: device memory, tile cache and stage times in the JSON"
    else fail=$((fail + 1)); echo "FAIL GPU JSON: $(head -c 600 "$tmp/g.json")"; fi
else
    grep -q "no usable GPU" "$tmp/err" && echo "skip GPU JSON: no GPU" ||
        { fail=$((fail + 1)); echo "FAIL profile --backend gpu: $(cat "$tmp/err")"; }
fi
# -o OUT: the stream into that sink behind this renderer, as `render --rows 0:K` writes it (K
# full rows, the profile's bytes): the same framed transcript but for its header, marked as a
# profile's (version 2, flag bit 0: docs/streaming.md §2), and its rate beside
"$TESSERA" profile "$d" --backend cpu --region 100,200,700,300 --json -o "$tmp/s.tsr" --framed \
    >"$tmp/s.json" 2>"$tmp/err" &&
    "$TESSERA" render "$d" --backend cpu --rows 0:2 --framed -o "$tmp/r.tsr" --progress none 2>>"$tmp/err"
if "$py" - "$tmp/s.json" "$tmp/s.tsr" "$tmp/r.tsr" <<'PY'
import json, sys
s, r = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
want = r[:4] + b"\x02\x00" + r[6:75] + bytes([0, 0, 1]) + bytes(29) + r[75:]
assert s == want, "the profile's transcript is not render's with a profile's header"
p = json.load(open(sys.argv[1]))
s = p["sink"]
assert s["rows"] == [0, 2] and s["bytes"] == 2 * 150000 and s["framed"] and not s["deflate"], s
assert s["seconds"] > 0 and abs(s["mb_per_s"] - s["bytes"] / s["seconds"] / 1e6) < 1e-3 * s["mb_per_s"], s
PY
then pass=$((pass + 1)); echo "ok   -o FILE --framed: render --rows 0:2's transcript, and its rate"
else fail=$((fail + 1)); echo "FAIL profile -o: $(head -c 300 "$tmp/s.json") $(cat "$tmp/err")"; fi
"$TESSERA" profile "$d" --backend cpu --region 0,0,300,200 -o null >"$tmp/n.txt" 2>"$tmp/err" &&
    grep -q "^sink        -o null: [0-9.]* MB/s, 150000 bytes (render --rows 0:1)" "$tmp/n.txt" &&
    { pass=$((pass + 1)); echo "ok   -o null: the sink's line"; } ||
    { fail=$((fail + 1)); echo "FAIL -o null: $(cat "$tmp/n.txt" "$tmp/err")"; }
for bad in "-o -" "-o $tmp/x.tsr --deflate" "-o ftp://x"; do
    "$TESSERA" profile "$d" --region 0,0,10,10 $bad >"$tmp/o.txt" 2>"$tmp/err"
    [ $? -eq 2 ] && [ ! -s "$tmp/o.txt" ] && [ ! -e "$tmp/x.tsr" ] &&
        { pass=$((pass + 1)); echo "ok   profile $bad refused, exit 2: $(head -1 "$tmp/err")"; } ||
        { fail=$((fail + 1)); echo "FAIL profile $bad: $(cat "$tmp/err")"; }
done
"$TESSERA" profile "$d" --backend cpu --region 0,0,300,200 --target 1MB/s >"$tmp/p.txt" 2>&1
if grep -q "x the 1 MB/s target" "$tmp/p.txt" && grep -q "^cache" "$tmp/p.txt" && grep -q "distance" "$tmp/p.txt" &&
    grep -q "^busy        [0-9.]* thread-s in [0-9.]* s: [0-9.]* of [0-9]* threads busy on average" "$tmp/p.txt"; then
    pass=$((pass + 1)); echo "ok   human-readable profile"
else fail=$((fail + 1)); echo "FAIL human-readable profile: $(cat "$tmp/p.txt")"; fi
"$TESSERA" profile "$d" --backend cpu --region 0,0,150001,1 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "inside the root" "$tmp/err" && { pass=$((pass + 1)); echo "ok   region outside refused"; } \
    || { fail=$((fail + 1)); echo "FAIL region outside: $(cat "$tmp/err")"; }
# a tall cheap design: ASan-fast, and its bands are small (every sample takes at least one)
cat >"$tmp/tall.yaml" <<'Y'
tessera: 1
root:
  size: [2000, 40000]
  source: {shape: circle, center: [1000, 30000], radius: 900}
Y
# Without --region: samples spread over the whole design in the job's order, bounded by
# --seconds, with the spread reported and small figures printed with digits that show them.
# (2 s: --seconds is a real bound, so on a loaded machine a short one reaches fewer samples)
"$TESSERA" profile "$tmp/tall.yaml" --backend cpu --threads 2 --seconds 2 --json >"$tmp/s.json" 2>"$tmp/err"
if "$py" - "$tmp/s.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for k in ["bytes", "seconds", "mb_per_s", "headroom", "projected_seconds", "region", "nodes",
          "samples", "slowest_mb_per_s", "fastest_mb_per_s", "projected_seconds_slowest",
          "startup_seconds"]:
    assert k in p, "missing " + k
# the start-up (a GPU's untimed row before the samples; none on the CPU) is in the projection,
# not in the rate
assert p["startup_seconds"] == 0, p["startup_seconds"]
want = p["startup_seconds"] + 2000 * 40000 / (p["mb_per_s"] * 1e6)
assert abs(p["projected_seconds"] - want) <= 1e-3 * want + 2e-3, (p["projected_seconds"], want)
s = p["samples"]
assert len(s) >= 4, s
ys = [r["region"][1] for r in s]
assert min(ys) < 40000 // 4 and max(ys) > 40000 // 2, ys     # not only the top rows
assert sum(r["bytes"] for r in s) == p["bytes"]
assert all(r["bytes"] == r["region"][2] * r["region"][3] for r in s)
assert p["bytes"] <= 2000 * 40000
assert p["slowest_mb_per_s"] <= p["mb_per_s"] * (1 + 1e-9) <= p["fastest_mb_per_s"] * (1 + 1e-6)
assert p["projected_seconds_slowest"] >= p["projected_seconds"] * (1 - 1e-6)
PY
then pass=$((pass + 1)); echo "ok   default profile samples the whole design"
else fail=$((fail + 1)); echo "FAIL default profile samples: $(head -c 300 "$tmp/err")"; fi
w="$SRC/designs/examples/wafer-fields.yaml"   # swath order, 8192 px swaths
# (2 s: --seconds is a real bound, and a chunk of this design takes ~0.2 s here)
"$TESSERA" profile "$w" --backend cpu --threads 2 --seconds 2 --json >"$tmp/w.json" 2>"$tmp/err"
if "$py" - "$tmp/w.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
xs = sorted({r["region"][0] for r in p["samples"]})
assert len(xs) >= 4 and all(x % 8192 == 0 for x in xs), xs      # several whole swaths
assert all(r["region"][2] <= 8192 for r in p["samples"])
PY
then pass=$((pass + 1)); echo "ok   a swath design is sampled by swaths"
else fail=$((fail + 1)); echo "FAIL swath samples: $(head -c 300 "$tmp/err")"; fi
"$TESSERA" profile "$tmp/tall.yaml" --backend cpu --threads 2 --seconds 0.3 --target 1000GB/s >"$tmp/t.txt" 2>&1
if grep -q "^spread      slowest" "$tmp/t.txt" && ! grep -qE " 0\.0(x| MB/s)" "$tmp/t.txt" &&
    grep -qE "= 0\.0*[1-9][0-9]*x the 1000000 MB/s target" "$tmp/t.txt"; then
    pass=$((pass + 1)); echo "ok   small figures keep their digits"
else fail=$((fail + 1)); echo "FAIL small figures: $(cat "$tmp/t.txt")"; fi
# --seconds bounds the profile: a design of twelve nested blurs, whose first band takes minutes
# (tests/cli/stop.sh), ends at the deadline with what it can say; 60 s is a hang guard (it ran
# for minutes before), the figures are in docs/performance.md
{
    echo "tessera: 1"
    echo "nodes:"
    echo "  b0: {size: [30000, 30000], source: {shape: circle, center: [15000, 15000], radius: 12000}}"
    for i in $(seq 1 11); do
        echo "  b$i: {size: [30000, 30000], children: [{trait: blur, sigma: 250, ref: b$((i - 1))}]}"
    done
    echo "root: {size: [30000, 30000], children: [{trait: blur, sigma: 250, ref: b11}]}"
} >"$tmp/blurs.yaml"
timeout 60 "$TESSERA" profile "$tmp/blurs.yaml" --backend cpu --threads 2 --seconds 1 >"$tmp/b.txt" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -qE "^unfinished  no chunk of rows \([0-9.]+ [KMG]?i?B\) finished in --seconds 1: the design renders slower than [0-9.]+ [kMG]?B/s; the whole of it \(858.3 MiB\) would take more than [0-9.]+ s$" "$tmp/b.txt"; then
    pass=$((pass + 1)); echo "ok   --seconds 1 on a design whose band takes minutes: $(cut -c 1-60 "$tmp/b.txt" | tail -1)..."
else fail=$((fail + 1)); echo "FAIL --seconds 1 on nested blurs: exit $rc (124: no bound): $(cat "$tmp/b.txt" "$tmp/err")"; fi
timeout 60 "$TESSERA" profile "$tmp/blurs.yaml" --backend cpu --threads 2 --seconds 1 --json >"$tmp/b.json" 2>"$tmp/err"
if "$py" - "$tmp/b.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["finished"] is False and p["bytes"] == 0 and p["mb_per_s_below"] > 0, p
PY
then pass=$((pass + 1)); echo "ok   ... and --json says so"
else fail=$((fail + 1)); echo "FAIL --json of the unfinished profile: $(cat "$tmp/b.json" "$tmp/err")"; fi
# sizes and rates in units that show them: no "4e+10 bytes", no "0 MB per CPU-second"
"$TESSERA" profile "$SRC/designs/examples/microlens-sphere.yaml" --backend cpu --threads 2 --seconds 1 >"$tmp/m.txt" 2>"$tmp/err"
if grep -q "^projected   whole design (21.0 GiB): " "$tmp/m.txt" &&
    grep -qE "^cpu         [0-9.]+ s .*: (0\.0*)?[1-9][0-9.]* [kMGTP]?B per CPU-second$" "$tmp/m.txt" &&
    ! grep -qE "e\+[0-9]| 0 [kMG]?B" "$tmp/m.txt"; then
    pass=$((pass + 1)); echo "ok   sizes and rates with units: $(grep -E '^(projected|cpu)' "$tmp/m.txt" | cut -c 1-70 | tr '\n' ' ')"
else fail=$((fail + 1)); echo "FAIL units: $(cat "$tmp/m.txt" "$tmp/err")"; fi
for bad in "--seconds 0" "--seconds x" "--seconds 1 --region 0,0,10,10"; do
    # shellcheck disable=SC2086
    "$TESSERA" profile "$d" $bad >/dev/null 2>"$tmp/err"
    [ $? -eq 2 ] && grep -q -- "--seconds" "$tmp/err" && { pass=$((pass + 1)); echo "ok   $bad refused"; } ||
        { fail=$((fail + 1)); echo "FAIL $bad: $(cat "$tmp/err")"; }
done
finish
