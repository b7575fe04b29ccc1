#!/usr/bin/env bash
# benchmarks/run.sh torch --quick compares the two LibTorch builds: it needs both, so it runs from
# the pip build (the only one that registers it) with the system build beside it at
# <repository>/build (as .ci/run makes them), and reports itself skipped (exit 77) without that.
#   torch_benchmark_test.sh PIP_BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
system="$root/build"
if ! grep -qs '^HETPS_TORCH:STRING=system' "$system/CMakeCache.txt" || [[ ! -x $system/bin/hetps-bench-local-loop ]]; then
  echo "SKIPPED: no system build with hetps-bench-local-loop at $system to compare with"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$root/benchmarks/run.sh" torch --quick --build-dir "$system" --pip-build-dir "$build" --out "$work" | tee "$work/out"
python3 - "$work/torch.json" <<'PY'
import json, math, sys
cases = json.load(open(sys.argv[1]))
assert {(c["model"], c["threads"]) for c in cases} == {("cnn", 1), ("cnn", 2), ("mlp", 1), ("mlp", 2)}, cases
for c in cases:
    assert math.isfinite(c["ratio"]) and c["ratio"] > 0, c
    assert c["pairs"][0]["system_libtorch"].startswith("LibTorch 1."), c
    assert c["pairs"][0]["pip_libtorch"].startswith("LibTorch 2."), c
print(f"torch_benchmark_test: {len(cases)} cases")
PY
