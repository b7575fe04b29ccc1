#!/usr/bin/env bash
# A trainer stopped with SIGTERM leaves at once and cleanly: it says Goodbye, the scheduler takes
# it out of the job within about a second (not after the heartbeat timeout), its unfinished data
# chunks go to the other trainer, sync rounds stop waiting for it, and the job finishes every
# sample. The trainer exits 0.
#   trainer_leaves_test.sh BUILD_DIR MODE
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"
mode=$2

job "model: mlp" "mode: $mode" "epochs: 2" "servers: 1" "trainers: 2" \
  "optimizer: {name: sgd, lr: 0.02, momentum: 0.9}" "heartbeat_interval_ms: 500" "heartbeat_timeout_ms: 10000"
start_scheduler
start_member server hetps-server
start_member trainer-0 hetps-trainer --device cpu
start_member trainer-1 hetps-trainer --device cpu
leaver=$last_pid
wait_for_line "$work/trainer-1.log" "training starts" 60
sleep 2

signalled=$(date +%s%N)
kill -TERM "$leaver"
# (Ranks go by the order of joining, so the leaver's may be 0 or 1.)
until grep -q "trainer [01] .* left the job" "$work/scheduler.log"; do
  if (( ($(date +%s%N) - signalled) / 1000000 > 5000 )); then
    echo "the scheduler did not see the stopped trainer leave within 5 s"
    show_logs
    exit 1
  fi
  sleep 0.02
done
took_ms=$(( ($(date +%s%N) - signalled) / 1000000 ))
echo "the stopped trainer was out of the job $took_ms ms after SIGTERM"
# Well under the heartbeat timeout (10 s): it left, it was not declared dead.
if ((took_ms > 1500)); then
  echo "leaving took $took_ms ms, more than about a second"
  exit 1
fi
leaver_status=0
wait "$leaver" || leaver_status=$?
status=0
wait_scheduler || status=$?
if ((status != 0 || leaver_status != 0)) || grep -q "is dead" "$work/scheduler.log"; then
  echo "the job did not go on cleanly without the trainer that left (scheduler exit $status, trainer exit $leaver_status)"
  show_logs
  exit 1
fi
grep "left the job\|returned to the queue" "$work/scheduler.log"
check_summary "$mode" 1 2 0.80 60000 --left 1
