#!/usr/bin/env bash
# The trained model leaves the cluster: a short CNN job through scripts/launch_local.sh writes
# model.safetensors at its end (the launcher's default: in the run directory) and checkpoints;
# Python loads the model into a FashionCNN (Debian's python3-torch, PyPI's safetensors) and
# reproduces the test accuracy hetps reported; hetps-export writes the same model from the last
# checkpoint.
#   export_model_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=/usr/share/datasets/fashion-mnist

/usr/bin/python3 -c 'import safetensors, torch' || {
  echo "export_model_test: /usr/bin/python3 lacks torch or safetensors; run scripts/install-deps.sh" >&2
  exit 1
}
if ! "$root/scripts/launch_local.sh" --no-build --build-dir "$build" \
    --config "$root/configs/fashion_mnist.yaml" --servers 2 --trainers 2 --model cnn --epochs 1 \
    --max-train-samples 4000 --checkpoint-interval 2 \
    --summary "$work/run.json" --run-dir "$work/run" --progress none; then
  for log in "$work"/run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
[[ -s $work/run/model.safetensors ]] || { echo "export_model_test: no model.safetensors in the run directory" >&2; exit 1; }
/usr/bin/python3 "$root/tests/e2e/evaluate_export.py" "$work/run/model.safetensors" "$work/run.json" "$data" 0.002

# The final checkpoint holds the same model.
"$build/bin/hetps-export" "$work/run/checkpoints" "$work/exported.safetensors"
cmp "$work/exported.safetensors" "$work/run/model.safetensors" || {
  /usr/bin/python3 - "$work/exported.safetensors" "$work/run/model.safetensors" <<'PY'
import sys
from safetensors.torch import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
assert a.keys() == b.keys(), (a.keys(), b.keys())
for k in a:
    assert (a[k] == b[k]).all(), k
print("export_model_test: the exported checkpoint holds the same tensors")
PY
}
python3 - "$work/run.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["checkpoints"]
assert s["status"] == "ok", s.get("error")
assert c["count"] >= 1 and c["last_id"] >= 1 and c["mean_write_seconds"] > 0, c
assert s["failures"] == [], s["failures"]
print(f"export_model_test: {c['count']} checkpoints, mean write {c['mean_write_seconds']:.3f} s")
PY
