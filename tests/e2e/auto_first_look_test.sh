#!/usr/bin/env bash
# mode: auto keeps its start's async at the first look when the trainers' steps are mostly
# transfers, and says why: in the scheduler's log ("mode auto: staying async: steps mostly
# transfers: ...") and in the run summary's first decision, with no switch after it.
#   auto_first_look_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

# async_min_transfer_share 0: any share of a step outside compute is enough, so the rule does not
# hang on how fast this host computes; sync_min_speed_ratio 0: the trainers are never far apart,
# and steady_variation 100: never variable, so the transfers are the only reason to stay;
# diloco_min_speedup 1000: never diloco (over loopback, where the mlp's steps are about half
# transfers, diloco is predicted about 1.7x), which this test is not about.
job "model: mlp" "mode: auto" "servers: 1" "trainers: 2" "epochs: 2" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "progress_interval_ms: 200" \
  "auto: {measure_seconds: 1, decide_interval_seconds: 1, steady_variation: 100, sync_min_speed_ratio: 0, async_min_transfer_share: 0, diloco_min_speedup: 1000}"
start_scheduler
start_member server hetps-server
start_member trainer-0 hetps-trainer --device cpu
start_member trainer-1 hetps-trainer --device cpu

status=0
wait_scheduler || status=$?
((status == 0)) || fail "the scheduler exited with $status"
check_summary auto 1 2 0.7 60000
kept='mode auto: staying async: steps mostly transfers: of a step of the whole batch (64 samples) at least [0-9]*% is outside compute (trainer [01]'
[[ $(grep -c -- "$kept" "$work/scheduler.log") == 1 ]] ||
  fail "the scheduler did not say once why it kept async at its first look"
grep -m1 -- "$kept" "$work/scheduler.log" | sed 's/^/auto_first_look_test: /'
/usr/bin/python3 - "$work/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["mode_decisions"]
assert [x["mode"] for x in d] == ["async"] and d[0]["from_clock"] == 0, d
assert "; kept at the first look: steps mostly transfers" in d[0]["reason"], d[0]["reason"]
PY
echo "PASSED"
