#!/usr/bin/env bash
# Elastic trainers: a trainer started while a job runs (max_trainers above trainers) is admitted
# mid-epoch. It gets the shard map, pulls the servers' current weights, starts at the step the
# scheduler names and trains samples; the job finishes every sample at its usual accuracy, and
# the summary counts the late joiner.
#   trainer_joins_test.sh BUILD_DIR MODE
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"
mode=$2

job "model: mlp" "mode: $mode" "epochs: 2" "servers: 1" "trainers: 1" "max_trainers: 2" \
  "optimizer: {name: sgd, lr: 0.02, momentum: 0.9}" "heartbeat_interval_ms: 200" "heartbeat_timeout_ms: 2000"
start_scheduler
start_member server hetps-server
start_member trainer-0 hetps-trainer --device cpu
wait_for_line "$work/trainer-0.log" "training starts" 60
sleep 2  # well into the first epoch (about 8 s each)
start_member trainer-1 hetps-trainer --device cpu

status=0
wait_scheduler || status=$?
if ((status != 0)) || ! grep -q "joined the running job; it starts at step" "$work/scheduler.log"; then
  echo "the job did not take the trainer that joined it (scheduler exit $status)"
  show_logs
  exit 1
fi
grep "joined the running job" "$work/scheduler.log"
# It started from the servers' weights of the moment, not from the initial ones.
if ! grep -q "training starts at step [0-9]* with the servers' weights of version [1-9]" "$work/trainer-1.log"; then
  echo "the late trainer did not start from the current weights"
  show_logs
  exit 1
fi
grep "training starts at step" "$work/trainer-1.log"
check_summary "$mode" 1 1 0.80 60000 --joined-late 1
