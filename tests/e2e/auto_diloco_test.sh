#!/usr/bin/env bash
# mode: auto switches to diloco when the trainers would train faster in it, and says why: the
# scheduler logs the switch with its reason, both trainers leave their per-step loop at the step
# it names and run rounds to the end, and the job trains the mlp to 0.75 with rounds in its
# summary and the decision in its `mode_decisions`. Run twice: with auto's default, synchronous
# rounds, and with asynchronous ones (--async-rounds true).
#   auto_diloco_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

run_case() {
  local rounds=$1
  shift
  rm -rf "${work:?}"/*
  samples=60000
  job "model: mlp" "mode: auto" "servers: 1" "trainers: 2" "epochs: 1" "global_batch_size: 64" \
    "max_train_samples: $samples" "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "progress_interval_ms: 200" \
    "auto: {measure_seconds: 1, decide_interval_seconds: 1, steady_variation: 100, diloco_min_speedup: 0}"
  start_scheduler "$@"
  start_member server hetps-server
  start_member trainer-0 hetps-trainer --device cpu
  start_member trainer-1 hetps-trainer --device cpu

  status=0
  wait_scheduler || status=$?
  ((status == 0)) || fail "the scheduler exited with $status"
  check_summary auto 1 2 0.75 "$samples"
  switched='mode auto: async -> diloco from step [0-9]*: diloco would train [0-9.]*x the samples/s of now (samples/s in compute alone and paced, between stalls: trainer'
  [[ $(grep -c -- "$switched" "$work/scheduler.log") == 1 ]] || fail "the scheduler did not say once why it switched to diloco"
  grep -m1 -- "$switched" "$work/scheduler.log" | sed 's/^/auto_diloco_test: /'
  grep -q "rounds to the end of the job" "$work/server.log" || fail "the server did not take the switch"
  for t in trainer-0 trainer-1; do
    grep -q "mode auto: diloco from step [0-9]*: rounds of inner steps of 64 samples" "$work/$t.log" ||
      fail "$t did not enter diloco's rounds"
    if [[ $rounds == async ]]; then
      grep -q "asynchronous rounds: each pushes on its own clock" "$work/$t.log" ||
        fail "$t did not run asynchronous rounds with --async-rounds true"
    elif grep -q "asynchronous rounds" "$work/$t.log"; then
      fail "$t ran asynchronous rounds, which auto does not by default"
    fi
  done
  /usr/bin/python3 - "$work/run.json" "$rounds" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rounds = sys.argv[2]
d = s["mode_decisions"]
assert [x["mode"] for x in d] == ["async", "diloco"], d
assert d[1]["from_clock"] > 0 and "diloco would train" in d[1]["reason"], d[1]
assert s["async_rounds"] == (rounds == "async"), s["async_rounds"]
if rounds == "async":
    # Each push is a round of its own: at least one from each trainer.
    assert s["rounds"] >= 2, s["rounds"]
else:
    # The rounds go on from the switch's step.
    assert s["rounds"] > d[1]["from_clock"], (s["rounds"], d[1])
for t in s["trainer_details"]:
    assert t["inner_steps"] > 0, t
print(f"auto_diloco_test: {rounds} rounds: diloco from step {d[1]['from_clock']}, server rounds counter at {s['rounds']}, "
      f"inner steps {[t['inner_steps'] for t in s['trainer_details']]}, accuracy {s['final_test_accuracy']:.3f}")
PY
}

run_case sync
run_case async --async-rounds true
echo "PASSED"
