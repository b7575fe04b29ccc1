#!/usr/bin/env bash
# Accuracy while it trains. A job with eval_interval_samples: its periodic evaluations reach the
# scheduler's /status while the job is still in phase "training", evaluated by the trainer with
# the smaller share of the samples (the slower of two, on a thread beside its training); the
# summary records, for each, when its weights were taken and when it was reported, and the first
# is reported before training ends.
#   evaluations_beside_training_test.sh BUILD_DIR
build=$(cd "$1" && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$build"
cd "$work"

job "mode: async" "model: mlp" "servers: 1" "trainers: 2" "epochs: 2" "max_train_samples: 12000" \
  "eval_interval_samples: 4000" "seed: 5"
start_scheduler --http 127.0.0.1:0
start_member server hetps-server
start_member fast hetps-trainer --device cpu --threads 1 --slowdown 3
start_member slow hetps-trainer --device cpu --threads 1 --slowdown 12
wait_for_line "$work/scheduler.log" "status page on http://" 30 || fail "no status page"
url=$(grep -o "status page on http://[0-9.:]*/" "$work/scheduler.log" | head -1 | cut -d' ' -f4)

# /status, polled until an evaluation shows: the phase it showed in.
seen=$(/usr/bin/python3 - "${url}status" <<'PY'
import json, sys, time, urllib.request
deadline = time.time() + 120
while time.time() < deadline:
    try:
        status = json.load(urllib.request.urlopen(sys.argv[1], timeout=2))
    except OSError:
        break  # the job ended before any evaluation showed
    if status.get("evaluations"):
        print(status["phase"], status["progress"]["ratio"])
        sys.exit(0)
    time.sleep(0.1)
print("none")
PY
)
wait_scheduler || fail "the job failed"
read -r phase ratio <<< "$seen"
[[ $phase == training ]] || fail "the first evaluation reached /status in phase '$seen', not while training"
echo "first evaluation on /status at progress $ratio"
# The slower trainer (the second, rank 1) evaluated the snapshots; the faster none.
grep -q "snapshot 1: evaluated weights version" "$work/slow.log" || fail "the slower trainer did not evaluate snapshot 1"
! grep -q "snapshot [0-9]*: evaluated" "$work/fast.log" || fail "the faster trainer evaluated a snapshot"
/usr/bin/python3 - "$work/run.json" <<'PY' || fail "the summary's periodic evaluations are wrong"
import json, sys
summary = json.load(open(sys.argv[1]))
periodic = [e for e in summary["evaluations"] if e["snapshot"] > 0]
assert len(periodic) >= 4, periodic
for e in periodic:
    assert e["evaluated_seconds"] >= e["wall_seconds"], e
    assert e["test_samples"] == 10000 and e["test_accuracy"] > 0.3, e
assert periodic[0]["evaluated_seconds"] < summary["train_seconds"], (periodic[0], summary["train_seconds"])
final = [e for e in summary["evaluations"] if e["final"]]
assert len(final) == 1 and summary["evaluations"][-1]["final"], summary["evaluations"]
PY
echo "evaluations beside training: ok"
