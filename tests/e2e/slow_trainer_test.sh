#!/usr/bin/env bash
# Slow is not dead: a trainer whose every step takes more than three times the heartbeat timeout
# (--slowdown) keeps heartbeating from its control channel's thread, is never declared dead, and
# the job finishes.
#   slow_trainer_test.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

timeout_ms=300
job "model: mlp" "mode: sync" "servers: 1" "trainers: 1" "global_batch_size: 64" \
  "max_train_samples: 64" "heartbeat_interval_ms: 50" "heartbeat_timeout_ms: $timeout_ms"
start_scheduler
start_member server hetps-server
start_member trainer hetps-trainer --device cpu --slowdown 400

if ! wait_scheduler || grep -q "is dead" "$work/scheduler.log"; then
  echo "the job did not finish with its slow trainer alive"
  show_logs
  exit 1
fi
# The step really was that long: one step of 64 samples in the training time.
/usr/bin/python3 - "$work/run.json" "$timeout_ms" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
timeout_s = int(sys.argv[2]) / 1000
step_s = s["train_seconds"]
assert s["status"] == "ok", s
assert s["trainer_details"][0]["alive"], s["trainer_details"]
assert s["samples_completed"] == 64, s["samples_completed"]
assert step_s >= 3 * timeout_s, f"steps took {step_s:.2f} s, not 3 x the {timeout_s} s timeout"
print(f"ok: steps of {step_s:.2f} s with a heartbeat timeout of {timeout_s} s; the trainer stayed alive")
PY
