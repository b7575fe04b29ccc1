#!/usr/bin/env bash
# benchmarks/modes.sh --quick runs the home scenario's cases through the real binaries (on the
# cluster in a box when this host can make one, else with --local) and writes its table, JSON and
# plot; every run must finish, and modes.json must hold the figures the benchmark is judged by.
#   modes_benchmark_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$root/scripts/lib/sim_machines.sh"
form=()
reason=$(sim_unavailable)
if [[ -n $reason ]]; then
  echo "modes_benchmark_test: no cluster in a box ($reason): the --local form"
  form=(--local)
fi
"$root/benchmarks/modes.sh" --quick "${form[@]}" --no-build --build-dir "$build" --out "$work"
for file in modes.md modes.json modes.png; do
  [[ -s $work/$file ]] || { echo "modes_benchmark_test: $file was not written" >&2; exit 1; }
done
/usr/bin/python3 - "$work/modes.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert list(report["scenarios"]) == ["home"], report["scenarios"].keys()
home = report["scenarios"]["home"]
names = [c["case"] for c in home["cases"]]
assert names == ["fast alone", "slow alone", "sync balanced", "async", "auto"], names
for key in ("fast_alone_seconds_to_target", "best_mode", "best_seconds_to_target",
            "auto_seconds_to_target", "speedup_vs_fast_alone"):
    assert key in home, key
for c in home["cases"]:
    for r in c["runs"]:
        assert r["status"] == "ok", r
        assert r["final_test_accuracy"] > 0.6, r
        assert len(r["curve"]) >= 3, r
auto = [c for c in home["cases"] if c["case"] == "auto"][0]["runs"][0]
assert auto["mode_decisions"] and auto["mode_decisions"][0]["mode"] == "async", auto["mode_decisions"]
assert home["sum_samples_per_second"] > 0, home
if home["fast_alone_seconds_to_target"] and home["best_seconds_to_target"]:
    assert abs(home["speedup_vs_fast_alone"] - home["fast_alone_seconds_to_target"] /
               home["best_seconds_to_target"]) < 1e-9, home
print("modes_benchmark_test: 5 cases ok; best", home["best_mode"], "speedup", home["speedup_vs_fast_alone"])
PY
rows=$(grep -c '^| [a-z]' "$work/modes.md")
((rows == 6)) || { echo "modes_benchmark_test: expected a header and 5 rows, found $rows" >&2; exit 1; }
