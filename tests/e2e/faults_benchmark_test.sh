#!/usr/bin/env bash
# benchmarks/faults.sh --quick runs its fault runs (a server killed, restarted and recovered) and
# its checkpoint-cost pair through the real binaries, and writes its report.
#   faults_benchmark_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/benchmarks/faults.sh" --quick --no-build --build-dir "$build" --out "$work"
for file in faults.md faults.json; do
  [[ -s $work/$file ]] || { echo "faults_benchmark_test: $file was not written" >&2; exit 1; }
done
/usr/bin/python3 - "$work/faults.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
runs = report["runs"]
assert len(runs) == 2, runs
for r in runs:
    assert r["status"] == "ok", r
    assert r["server_failures"] == 1 and r["recovery_seconds"] is not None, r
assert len(report["checkpoint_cost"]["pairs"]) == 1, report["checkpoint_cost"]
print("faults_benchmark_test: 2 fault runs recovered; checkpoint cost ratio",
      round(report["checkpoint_cost"]["median_ratio"], 3))
PY
