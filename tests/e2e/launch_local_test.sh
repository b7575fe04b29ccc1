#!/usr/bin/env bash
# End to end through the real binaries: scripts/launch_local.sh starts a scheduler, two servers
# and two trainers on 127.0.0.1, trains on Fashion-MNIST for one epoch, and the run summary must
# report a finished job at or above the given accuracy.
#   launch_local_test.sh BUILD_DIR MODE MODEL MIN_ACCURACY
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1 mode=$2 model=$3 min_accuracy=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$root/scripts/launch_local.sh" --no-build --build-dir "$build" \
    --config "$root/configs/fashion_mnist.yaml" --servers 2 --trainers 2 --mode "$mode" \
    --model "$model" --epochs 1 --lr 0.02 --momentum 0.9 \
    --summary "$work/run.json" --run-dir "$work/run" --progress plain; then
  for log in "$work"/run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" "$mode" 2 2 "$min_accuracy" 60000
