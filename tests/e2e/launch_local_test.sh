#!/usr/bin/env bash
# End to end through the real binaries: scripts/launch_local.sh starts a scheduler, two servers
# and two trainers on 127.0.0.1, trains on Fashion-MNIST for one epoch, and the run summary must
# report a finished job at or above the given accuracy. With LOCAL_STEPS (e.g. 1,4: one count per
# trainer; async or ssp) each trainer takes that many batches per push (--local-steps), and its
# samples per step must show it.
#   launch_local_test.sh BUILD_DIR MODE MODEL MIN_ACCURACY [LOCAL_STEPS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1 mode=$2 model=$3 min_accuracy=$4 local_steps=${5:-}
extra=()
[[ -z $local_steps ]] || extra=(--local-steps "$local_steps")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$root/scripts/launch_local.sh" --no-build --build-dir "$build" \
    --config "$root/configs/fashion_mnist.yaml" --servers 2 --trainers 2 --mode "$mode" \
    --model "$model" --epochs 1 --lr 0.02 --momentum 0.9 \
    --summary "$work/run.json" --run-dir "$work/run" --progress plain ${extra[@]+"${extra[@]}"}; then
  for log in "$work"/run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" "$mode" 2 2 "$min_accuracy" 60000
[[ -z $local_steps ]] && exit 0
# Refused in sync: the launch fails and says why, from the trainers' logs (the scheduler sees only
# their connections close).
if "$root/scripts/launch_local.sh" --no-build --build-dir "$build" --config "$root/configs/fashion_mnist.yaml" \
    --mode sync --model "$model" --max-train-samples 640 --local-steps 2 --no-checkpoints \
    --run-dir "$work/refused" --progress none > "$work/refused.out" 2>&1; then
  echo "launch_local.sh --mode sync --local-steps 2 succeeded"
  exit 1
fi
grep -q "^trainer-[0-9]: hetps-trainer: error: --local-steps [0-9]* needs mode async or ssp" "$work/refused.out" || {
  echo "launch_local.sh did not show why the trainers stopped:"
  cat "$work/refused.out"
  exit 1
}
# A trainer's samples per step (its pushes) are its batch (half the global batch of 64) times its
# local steps; the last step of each chunk may be short, so the mean is a little under that.
/usr/bin/python3 - "$work/run.json" "$local_steps" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
counts = sorted(int(n) for n in sys.argv[2].split(","))
# Ranks follow the order of joining, not of starting: compare the sorted figures.
trainers = sorted(s["trainer_details"], key=lambda t: t["samples"] / t["steps"] / t["batch_size"])
for trainer, steps in zip(trainers, counts):
    per_step = trainer["samples"] / trainer["steps"]
    expected = trainer["batch_size"] * steps
    assert 0.8 * expected <= per_step <= expected, \
        f"trainer {trainer['rank']} trained {per_step:.1f} samples a step, not about {expected} ({steps} local steps)"
    print(f"ok: trainer {trainer['rank']}: {per_step:.1f} samples a step with {steps} local steps")
PY
