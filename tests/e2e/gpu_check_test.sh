#!/usr/bin/env bash
# scripts/gpu_check.sh: on a machine without an NVIDIA GPU it says so in one line, exits 0 and
# writes nothing; with --device cpu --quick every step it takes on a GPU machine runs with the CPU
# in place of the GPU and gpu_check.json holds every figure.
#   gpu_check_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "gpu_check_test: this machine has a GPU; the no-GPU line is not checked"
else
  (cd "$work" && "$root/scripts/gpu_check.sh" --out "$work/none.json") > "$work/none.out"
  cat "$work/none.out"
  [[ $(wc -l < "$work/none.out") -eq 1 ]] || { echo "gpu_check_test: expected one line" >&2; exit 1; }
  grep -q "no NVIDIA GPU" "$work/none.out" || { echo "gpu_check_test: the line does not say why" >&2; exit 1; }
  [[ ! -e $work/none.json ]] || { echo "gpu_check_test: wrote $work/none.json without a GPU" >&2; exit 1; }
fi

"$root/scripts/gpu_check.sh" --device cpu --quick --no-build --build-dir "$build" --out "$work/gpu_check.json"
python3 - "$work/gpu_check.json" <<'PY'
import json, math, sys
f = json.load(open(sys.argv[1]))
assert f["device"] == "cpu" and f["libtorch"].startswith("hetps-trainer "), f
trainers = f["job"]["trainers"]
assert len(trainers) == 2, trainers
for t in trainers:
    assert t["samples"] > 0 and t["samples_per_second"] > 0, t
    assert set(t["step_ms"]) == {"compute", "device_to_host", "wire", "host_to_device"}, t
    assert t["step_ms"]["compute"] > 0, t
assert 0.2 < f["job"]["final_test_accuracy"] <= 1, f["job"]  # twice chance: it trained
for bench in ("overhead", "pushpull"):
    assert f[bench] and all(math.isfinite(c["ratio"]) and c["ratio"] > 0 for c in f[bench]), f[bench]
print("gpu_check_test: gpu_check.json holds every figure")
PY
