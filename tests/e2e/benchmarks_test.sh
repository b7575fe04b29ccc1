#!/usr/bin/env bash
# benchmarks/run.sh NAME --quick works for every data-plane benchmark: each prints its table and
# writes JSON with a ratio per case; scaling's also its cost model and predictions.
# hetps-bench-step also runs without overlap and with 2 server threads.
#   benchmarks_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for name in pushpull apply overhead rtt step scaling; do
  "$root/benchmarks/run.sh" "$name" --quick --build-dir "$build" --out "$work" | tee "$work/$name.out"
  grep -q '^| ---' "$work/$name.out" || { echo "benchmarks_test: $name printed no table" >&2; exit 1; }
  /usr/bin/python3 - "$work/$name.json" "$name" <<'PY'
import json, math, sys
cases = json.load(open(sys.argv[1]))
if sys.argv[2] == "rtt":
    assert cases["median_us"] == cases["cases"][0]["hetps_median_us"] > 0, cases
    assert cases["one_core_median_us"] == cases["cases"][0]["one_core"]["hetps_median_us"] > 0, cases
    for c in cases["cases"]:
        assert math.isfinite(c["one_core"]["ratio"]) and c["one_core"]["ratio"] > 0, c
    cases = cases["cases"]
if sys.argv[2] == "scaling":
    data = cases
    cases = data["cases"]
    assert data["cores"] > 0 and data["cores_shared"] is True, data
    grid = {(c["model"], c["mode"], c["servers"], c["trainers"]) for c in cases}
    assert grid == {("mlp", m, s, t) for m in ("sync", "async") for s in (1, 2) for t in (1, 2)}, grid
    for c in cases:
        assert c["parameters"] == 535818 and c["batch_per_trainer"] == 64, c
        assert c["samples"] == 64 * c["trainers"] * 20 and c["samples_per_second"] > 0, c
        m = c["step_ms"]
        assert 0 < m["compute"] < m["step"] and m["wire"] > 0 and m["hand_off"] >= 0, c
        # The trainer's log gives compute to 0.1 ms and the phases to 0.01 ms: rounding adds up
        # to 0.05 + 3 x 0.005 ms.
        assert m["batch"] + m["forward"] + m["backward"] <= m["compute"] * 1.01 + 0.065, c
        assert c["payload_bytes_per_sample"] == 8 * 535818 / 64, c
        if data["wire_measured"]:  # TCP/IP headers and control messages come on top of the payload
            assert c["payload_bytes_per_sample"] < c["bytes_per_sample"] < 1.5 * c["payload_bytes_per_sample"], c
        if c["trainers"] == 1:
            assert c["ratio"] == 1, c
    model = data["cost_model"]
    assert model["compute_ms"]["mlp"] > 0 and min(model["round_trip_ms"], model["server_ns_per_parameter"]) >= 0, model
    kinds = {(p["case"], p["network"]) for p in data["predictions"]}
    assert kinds == {(k, n) for k in ("home", "cluster") for n in ("1 GbE", "10 GbE")}, kinds
    assert {p["trainers"] for p in data["predictions"] if p["case"] == "cluster"} == {8, 32, 128}
    for p in data["predictions"]:
        assert all(v > 0 for k, v in p.items() if k.endswith("samples_per_second")), p
    assert [(b["model"], b["mode"]) for b in data["baselines"]] == [("mlp", "sync"), ("mlp", "async")], data
    for b in data["baselines"]:
        assert min(b["plain_loop_samples_per_second"], b["two_plain_loops_samples_per_second"]) > 0, b
        assert b["ratio_vs_two_plain_loops"] == b["samples_per_second"] / b["two_plain_loops_samples_per_second"], b
assert cases, f"{sys.argv[2]}: no cases"
for c in cases:
    assert math.isfinite(c["ratio"]) and c["ratio"] > 0, c
print(f"benchmarks_test: {sys.argv[2]}: {len(cases)} cases")
PY
done

# The step benchmark's variants run and say which they were.
"$build/bin/hetps-bench-step" --model mlp --steps 3 --pairs 1 --no-overlap --server-threads 2 --json "$work/variant.json" \
  > /dev/null
/usr/bin/python3 - "$work/variant.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["overlap"] is False and d["server_threads"] == 2 and d["ratio_vs_plain"] > 0, d
print("benchmarks_test: step without overlap, 2 server threads")
PY
