#!/usr/bin/env bash
# benchmarks/modes.sh --quick runs every case through the real binaries and writes its table,
# JSON and plot; every case must finish.
#   modes_benchmark_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/benchmarks/modes.sh" --quick --no-build --build-dir "$build" --out "$work"
for file in modes.md modes.json modes.png; do
  [[ -s $work/$file ]] || { echo "modes_benchmark_test: $file was not written" >&2; exit 1; }
done
/usr/bin/python3 - "$work/modes.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
names = [c["mode"] for c in cases]
expected = ["sync", "sync, balance speed", "async", "async, staleness-aware lr", "ssp s=1",
            "ssp s=3", "ssp s=8", "fast trainer alone"]
assert names == expected, names
for c in cases:
    assert c["status"] == "ok", c
    assert c["final_test_accuracy"] > 0.6, c
    assert len(c["curve"]) >= 3, c
for c in cases[4:7]:
    bound = int(c["mode"].split("=")[1])
    assert c["max_clock_gap"] <= bound, c
print("modes_benchmark_test: 8 cases ok")
PY
rows=$(grep -c '^| [a-z]' "$work/modes.md")
((rows == 9)) || { echo "modes_benchmark_test: expected a header and 8 rows, found $rows" >&2; exit 1; }
