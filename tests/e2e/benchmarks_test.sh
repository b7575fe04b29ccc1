#!/usr/bin/env bash
# benchmarks/run.sh NAME --quick works for every data-plane benchmark: each prints its table and
# writes JSON with a ratio per case.
#   benchmarks_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for name in pushpull apply overhead rtt step; do
  "$root/benchmarks/run.sh" "$name" --quick --build-dir "$build" --out "$work" | tee "$work/$name.out"
  grep -q '^| ---' "$work/$name.out" || { echo "benchmarks_test: $name printed no table" >&2; exit 1; }
  /usr/bin/python3 - "$work/$name.json" "$name" <<'PY'
import json, math, sys
cases = json.load(open(sys.argv[1]))
if sys.argv[2] == "rtt":
    assert cases["median_us"] == cases["cases"][0]["hetps_median_us"] > 0, cases
    cases = cases["cases"]
assert cases, f"{sys.argv[2]}: no cases"
for c in cases:
    assert math.isfinite(c["ratio"]) and c["ratio"] > 0, c
print(f"benchmarks_test: {sys.argv[2]}: {len(cases)} cases")
PY
done
