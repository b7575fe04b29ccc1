#!/usr/bin/env bash
# A job that diverges (a learning rate far too large: its gradients overflow to NaN within a few
# steps) is stopped with a clear reason instead of finishing "successfully" on NaN weights: the
# server leaves every NaN push out (the weights stay finite), each trainer logs it, the scheduler
# drops each trainer after nonfinite_limit steps in a row and tells it why, and the job fails
# naming the cause; the summary lists the drops and the steps left out.
#   nonfinite_test.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

job "model: mlp" "mode: sync" "epochs: 1" "servers: 1" "trainers: 2" "max_train_samples: 12800" \
  "optimizer: {name: sgd, lr: 1000000}" "nonfinite_limit: 5" "heartbeat_interval_ms: 200"
start_scheduler
start_member server hetps-server
start_member trainer-0 hetps-trainer --device cpu
trainer0=$last_pid
start_member trainer-1 hetps-trainer --device cpu
trainer1=$last_pid
status=0
timeout 120 tail --pid "$scheduler" -f /dev/null || fail "the job did not end within 120 s"
wait_scheduler || status=$?
((status != 0)) || fail "the diverging job ended as a success"
for pid in "$trainer0" "$trainer1"; do wait "$pid" 2>/dev/null || true; done
grep -q "every trainer has stopped" "$work/scheduler.log" || fail "the scheduler did not say why the job ended"
grep -Eq "dropped from the job: server 0 .* left out its last [0-9]+ steps" "$work/scheduler.log" ||
  fail "the scheduler did not drop a trainer for its NaN gradients"
for t in 0 1; do
  grep -q "left out .* step(s) of this trainer's gradients" "$work/trainer-$t.log" ||
    fail "trainer $t did not log that its gradients were left out"
  grep -q "this trainer was dropped from the job" "$work/trainer-$t.log" || fail "trainer $t was not told it was dropped"
done
grep -q "(nonfinite, " "$work/server.log" || fail "the server did not count a nonfinite push"
/usr/bin/python3 - "$work/run.json" <<'PY' || fail "the summary does not record the drops"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] != "ok", s["status"]
assert len(s["dropped"]) == 2, s["dropped"]
assert all("nonfinite_limit 5" in d["reason"] for d in s["dropped"]), s["dropped"]
assert all(steps >= 5 for steps in s["nonfinite_pushes"].values()) and len(s["nonfinite_pushes"]) == 2, s
assert s["refusals"].get("nonfinite", 0) >= 10, s["refusals"]
print("nonfinite_test: dropped", [d["trainer"] for d in s["dropped"]], "left out", s["nonfinite_pushes"])
PY
grep -m1 "left out" "$work/server.log"
grep "dropped from the job" "$work/scheduler.log" | head -2
