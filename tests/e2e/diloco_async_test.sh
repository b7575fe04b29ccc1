#!/usr/bin/env bash
# Mode diloco with asynchronous rounds (diloco: {async: true}) end to end, real processes on
# 127.0.0.1: of two trainers with rounds of 20 inner steps, one slowed 4x (--slowdown), neither
# waits for the other: the fast one pushes about four rounds to the slow one's one (in synchronous
# rounds they push as many), neither waits for its weights more than 10% of its rounds' time, and
# the job trains the mlp to 0.75, its summary saying the rounds were asynchronous.
#   diloco_async_test.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

samples=40000
job "model: mlp" "mode: diloco" "servers: 1" "trainers: 2" "global_batch_size: 64" \
  "max_train_samples: $samples" "chunk_samples: 500" "progress_interval_ms: 200" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "diloco: {async: true, round_steps: 20}" \
  "outer_optimizer: {name: sgd, lr: 1.0, momentum: 0.5, nesterov: true}"
start_scheduler
start_member server hetps-server
start_member fast hetps-trainer --device cpu
start_member slow hetps-trainer --device cpu --slowdown 4
wait_scheduler || fail "the job with asynchronous rounds failed"
check_summary diloco 1 2 0.75 "$samples"
/usr/bin/python3 - "$work/run.json" <<'PY' || fail "asynchronous rounds"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["mode"] == "diloco" and s["async_rounds"] is True, (s["mode"], s.get("async_rounds"))
fast, slow = sorted(s["trainer_details"], key=lambda t: -t["steps"])
for t in (fast, slow):
    wait = t["wait_seconds"] / t["step_seconds"]
    print(f"trainer {t['rank']}: {t['steps']} rounds of {t['inner_steps']} inner steps, "
          f"waited {100 * wait:.1f}% of {t['step_seconds']:.1f} s")
    assert t["steps"] > 0 and t["inner_steps"] >= 20 * (t["steps"] - 1), t
    assert wait <= 0.10, f"trainer {t['rank']} waited {100 * wait:.1f}% of its rounds"
ratio = slow["steps"] / fast["steps"]
print(f"the slowed trainer pushed {ratio:.2f} of the other's rounds")
assert ratio <= 0.45, ratio
# Every push applied is a round of one trainer.
assert s["rounds"] == fast["steps"] + slow["steps"], (s["rounds"], fast["steps"], slow["steps"])
PY
echo "ok: asynchronous diloco rounds, a 4x slower trainer pushing a quarter as many"
