#!/usr/bin/env bash
# Regression with loss mse: a TorchScript MLP with one output learns a brightness from images
# (tests/e2e/torchscript_models.py writes the problem as IDX files, which the trainers read with
# --data-dir); the evaluations report test loss and R2 instead of accuracy, the summary says so,
# and the final R2 reaches the target.
#   torchscript_regression_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target=0.9

/usr/bin/python3 "$root/tests/e2e/torchscript_models.py" regression-data "$work/data"
/usr/bin/python3 "$root/tests/e2e/torchscript_models.py" regressor "$work/regressor.pt"
if ! "$root/scripts/launch_local.sh" --no-build --build-dir "$build" --model-file "$work/regressor.pt" --loss mse \
    --data-dir "$work/data" --mode sync --servers 1 --trainers 2 --epochs 2 --max-train-samples 8000 \
    --optimizer sgd --lr 0.001 --momentum 0.9 --global-batch-size 64 --no-checkpoints \
    --summary "$work/run.json" --run-dir "$work/run" --progress plain > "$work/run.out"; then
  cat "$work/run.out"
  for log in "$work"/run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
grep -q "final test R2 " "$work/run.out" || { cat "$work/run.out"; echo "no R2 in the scheduler's output" >&2; exit 1; }
if grep -q "test accuracy" "$work/run.out"; then
  cat "$work/run.out"; echo "torchscript_regression_test: a regression job reported an accuracy" >&2; exit 1
fi
python3 - "$work/run.json" "$target" <<'PY'
import json, sys
s, target = json.load(open(sys.argv[1])), float(sys.argv[2])
assert s["status"] == "ok", s.get("error")
assert s["loss"] == "mse" and s["metric"] == "r2", (s["loss"], s["metric"])
assert s["final_test_accuracy"] is None, s["final_test_accuracy"]
evals = s["evaluations"]
assert len(evals) == 2 and all(e["test_accuracy"] is None for e in evals), evals
r2 = s["final_test_r2"]
print(f"torchscript_regression_test: R2 after each epoch {[round(e['test_r2'], 4) for e in evals]}, "
      f"final test loss (MSE) {s['final_test_loss']:.4f}")
assert evals[-1]["test_r2"] == r2
assert r2 >= target, f"final R2 {r2:.4f} < {target}"
PY
