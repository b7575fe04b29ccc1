#!/usr/bin/env bash
# Mode diloco end to end, real processes on 127.0.0.1:
#  1. Rounds in time: of two trainers, one slowed 4x (--slowdown), each round of 0.5 s takes as
#     many inner steps in each as its speed allows (within 30%: about a quarter in the slow one),
#     neither waits for the round's weights more than 10% of its time, and the job trains the mlp
#     to 0.75.
#  2. Faults: a trainer killed in the middle of a round is left out of it (the round does not
#     wait for it past the heartbeat timeout); a trainer that joins the running job starts at a
#     later round; the job finishes with the remaining trainers' data trained.
#   diloco_test.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

samples=60000
job "model: mlp" "mode: diloco" "servers: 1" "trainers: 2" "global_batch_size: 64" \
  "max_train_samples: $samples" "chunk_samples: 500" "progress_interval_ms: 200" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "diloco: {round_seconds: 0.5}"
start_scheduler
start_member server hetps-server
start_member fast hetps-trainer --device cpu
start_member slow hetps-trainer --device cpu --slowdown 4
wait_scheduler || fail "the job with a slowed trainer failed"
check_summary diloco 1 2 0.75 "$samples"
/usr/bin/python3 - "$work/run.json" <<'PY' || fail "rounds in time"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["mode"] == "diloco" and s["rounds"] >= 3, (s["mode"], s["rounds"])
fast, slow = sorted(s["trainer_details"], key=lambda t: -t["inner_steps"])
for t in (fast, slow):
    assert t["steps"] > 0 and t["inner_steps"] >= t["steps"], t
    wait = t["wait_seconds"] / t["step_seconds"]
    print(f"trainer {t['rank']}: {t['inner_steps']} inner steps in {t['steps']} rounds, "
          f"waited {100 * wait:.1f}% of {t['step_seconds']:.1f} s")
    assert wait <= 0.10, f"trainer {t['rank']} waited {100 * wait:.1f}% of its rounds"
# Inner steps in proportion to each trainer's speed (its steps' time, the slowdown's sleeps
# included): a quarter, less what the slowed trainer's idle core gives the other.
ratio = (slow["inner_steps"] / slow["steps"]) / (fast["inner_steps"] / fast["steps"])
speeds = slow["compute_samples_per_second"] / fast["compute_samples_per_second"]
print(f"the slowed trainer's inner steps per round: {ratio:.2f} of the other's; its speed {speeds:.2f} of it")
assert 0.7 * speeds <= ratio <= 1.3 * speeds, (ratio, speeds)
assert 0.25 * 0.5 <= speeds <= 0.25 * 1.3, speeds
assert s["bytes_per_round"] > 0 and len(s["inner_steps_per_round"]) == 2, s
PY

# Faults: three trainers; one is killed in the middle of a round, one joins later.
rm -f "$work/job.yaml" "$work/run.json" "$work/endpoint"
job "model: mlp" "mode: diloco" "servers: 1" "trainers: 2" "max_trainers: 3" "global_batch_size: 64" \
  "max_train_samples: $samples" "chunk_samples: 500" "progress_interval_ms: 200" \
  "heartbeat_interval_ms: 100" "heartbeat_timeout_ms: 1000" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "diloco: {round_seconds: 0.5}"
start_scheduler
start_member server2 hetps-server
start_member stays hetps-trainer --device cpu --slowdown 4
start_member dies hetps-trainer --device cpu --slowdown 4
dies=$last_pid
wait_for_line "$work/scheduler.log" "training starts" 60 || fail "the job did not start"
sleep 2.2  # a few rounds in, and in the middle of one
kill -9 "$dies"
start_member joins hetps-trainer --device cpu
wait_for_line "$work/scheduler.log" "is dead" 30 || fail "the killed trainer was not noticed"
wait_scheduler || fail "the job with a killed and a joining trainer failed"
check_summary diloco 1 2 0.70 "$samples" --joined-late 1
grep -q "joined the running job; it starts at step" "$work/scheduler.log" || fail "the joiner did not join"
echo "ok: diloco rounds in time, a trainer killed mid-round, a trainer joining"
