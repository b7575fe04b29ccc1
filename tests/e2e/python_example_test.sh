#!/usr/bin/env bash
# examples/python/ end to end with Debian's python3-torch: the walk-through scripts a model with
# BatchNorm, trains it through scripts/launch_local.sh and evaluates the exported
# model.safetensors in Python. The exported file holds exactly MyNet's state_dict: its parameters
# and, by the rule in docs/models.md, the running statistics of the trainer that made the final
# evaluation, so Python reproduces the accuracy hetps reported.
#   python_example_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 -c 'import safetensors, torch' || {
  echo "python_example_test: /usr/bin/python3 lacks torch or safetensors; run scripts/install-deps.sh" >&2
  exit 1
}
# A copy, so that the test writes nothing into the source tree.
cp -r "$root/examples/python" "$work/example"
if ! HETPS_ROOT=$root PYTHON=/usr/bin/python3 "$work/example/walkthrough.sh" "$work/run" \
    --no-build --build-dir "$build" --max-train-samples 4000 --no-checkpoints > "$work/out" 2>&1; then
  cat "$work/out"
  for log in "$work"/run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
python_accuracy=$(awk '$1 == "accuracy" {print $2}' "$work/out")
[[ -n $python_accuracy ]] || { cat "$work/out"; echo "python_example_test: evaluate.py printed no accuracy" >&2; exit 1; }
cd "$work/example"
/usr/bin/python3 - "$work/run/model.safetensors" "$work/run/summary.json" "$python_accuracy" <<'PY'
import json, sys
import torch
from safetensors.torch import load_file
from mynet import MyNet

state = load_file(sys.argv[1])
summary = json.load(open(sys.argv[2]))
python_accuracy = float(sys.argv[3])
expected = MyNet().state_dict()
assert set(state) == set(expected), sorted(set(state) ^ set(expected))
for name, tensor in expected.items():
    assert state[name].shape == tensor.shape and state[name].dtype == tensor.dtype, (name, state[name].dtype)
# The buffers are trained running statistics, not the initial ones.
steps = summary["steps"][0]
for bn in ("bn1", "bn2"):
    tracked = state[f"{bn}.num_batches_tracked"].item()
    assert 0 < tracked <= steps, (bn, tracked, steps)
    assert not torch.allclose(state[f"{bn}.running_var"], torch.ones_like(state[f"{bn}.running_var"])), bn
    assert state[f"{bn}.running_mean"].abs().sum() > 0, bn
reported = summary["final_test_accuracy"]
print(f"python_example_test: {len(state)} tensors; Python accuracy {python_accuracy:.4f}, "
      f"hetps reported {reported:.4f}; bn1 tracked {state['bn1.num_batches_tracked'].item()} batches")
assert reported > 0.6, reported
assert abs(python_accuracy - reported) <= 0.002, f"accuracies differ: {python_accuracy} vs {reported}"
PY
