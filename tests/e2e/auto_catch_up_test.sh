#!/usr/bin/env bash
# mode: auto does not switch to sync while a trainer far behind would hold the others: the job
# starts in async, where a trainer slowed 10x (--slowdown) falls hundreds of steps behind the
# other within the first second; a rule that syncs any two steady trainers then would make the
# fast one wait for all those steps, so the scheduler says why it stays async, at every look,
# and the job ends with every sample trained and no switch in its summary.
#   auto_catch_up_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

# sync_min_speed_ratio 0: steady trainers of any speeds would sync; steady_variation 100: the
# shared test host's noise never makes them variable; diloco_min_speedup 1000: never diloco
# (whose switch nobody waits for; predicted faster over loopback, where the mlp's steps are about
# half transfers), which this test is not about.
job "model: mlp" "mode: auto" "servers: 1" "trainers: 2" "epochs: 1" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "progress_interval_ms: 200" \
  "auto: {measure_seconds: 1, decide_interval_seconds: 1, steady_variation: 100, sync_min_speed_ratio: 0, diloco_min_speedup: 1000}"
start_scheduler
start_member server hetps-server
start_member trainer-0 hetps-trainer --device cpu
start_member trainer-1 hetps-trainer --device cpu --slowdown 10

status=0
wait_scheduler || status=$?
((status == 0)) || fail "the scheduler exited with $status"
check_summary auto 1 2 0.7 60000
refused='mode auto: sync (balanced) would suit (.*), but trainer [01] is [0-9]* steps behind, [0-9.]* s of its steps that the others would wait (at most 1.0 s); staying async'
grep -q -- "$refused" "$work/scheduler.log" || fail "the scheduler did not say why it stays async"
grep -m1 -- "$refused" "$work/scheduler.log" | sed 's/^/auto_catch_up_test: /'
/usr/bin/python3 - "$work/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["mode_decisions"]
assert [x["mode"] for x in d] == ["async"] and d[0]["from_clock"] == 0, d
PY
