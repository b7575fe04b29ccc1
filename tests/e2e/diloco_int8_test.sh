#!/usr/bin/env bash
# Mode diloco with int8 pseudo-gradients (error feedback on the trainers) and bf16 weights, end to
# end on 127.0.0.1: two trainers train the mlp to the same 0.75 as float32 rounds do
# (diloco_test.sh), and a round moves 3 bytes per parameter and trainer (1 up, 2 down) against
# float32's 8: the summary's bytes_per_round within 10% of 3/8 of float32's.
#   diloco_int8_test.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

samples=60000
job "model: mlp" "mode: diloco" "servers: 1" "trainers: 2" "global_batch_size: 64" \
  "max_train_samples: $samples" "chunk_samples: 500" "progress_interval_ms: 200" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "wire_dtype: bf16" \
  "diloco: {round_steps: 20, pseudo_gradient_dtype: int8}"
start_scheduler
start_member server hetps-server
start_member one hetps-trainer --device cpu
start_member two hetps-trainer --device cpu
wait_scheduler || fail "the job with int8 pseudo-gradients failed"
check_summary diloco 1 2 0.75 "$samples"
/usr/bin/python3 - "$work/run.json" <<'PY' || fail "bytes per round"
import json, sys
s = json.load(open(sys.argv[1]))
parameters = 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10  # the mlp
float32 = 2 * parameters * (4 + 4)  # two trainers, pseudo-gradient up and weights down
ratio = s["bytes_per_round"] / float32
print(f"{s['rounds']} rounds of {s['bytes_per_round'] / 1e6:.2f} MB: {ratio:.3f} of float32's")
assert s["rounds"] >= 10, s["rounds"]
assert 0.9 * 3 / 8 <= ratio <= 1.1 * 3 / 8, ratio
PY
echo "ok: diloco with int8 pseudo-gradients trains the mlp in 3/8 of float32's bytes per round"
