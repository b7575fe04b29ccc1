#!/usr/bin/env bash
# Nothing is lost when a trainer dies late: in the last rounds of the final sync epoch, once the
# other trainer has run out of data, the trainer still holding a chunk is killed with -9. The
# survivor's rounds wait for it until it is declared dead, then take the chunk it gave back, and
# every sample of every epoch is trained.
#   trainer_dies_late_test.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

# Nine chunks in all (three epochs of three): a trainer out of an epoch's data goes on with the
# next epoch's, so the trainers share them out until one takes the ninth alone and trains it for
# 256 rounds while the other has nothing left.
job "model: mlp" "mode: sync" "epochs: 3" "servers: 1" "trainers: 2" "max_train_samples: 6144" \
  "chunk_samples: 2048" "global_batch_size: 16" "optimizer: {name: sgd, lr: 0.02, momentum: 0.9}" \
  "heartbeat_interval_ms: 200" "heartbeat_timeout_ms: 2000"
start_scheduler
start_member server hetps-server
start_member trainer-0 hetps-trainer --device cpu
pids=([0]=$last_pid)
start_member trainer-1 hetps-trainer --device cpu
pids[1]=$last_pid

# The first trainer out of data in the last epoch lives; the other, which holds the last chunk, dies.
deadline=$((SECONDS + 120))
victim=
until [[ -n $victim ]]; do
  for t in 0 1; do
    if grep -q "no data left to take in the last epoch" "$work/trainer-$t.log" 2>/dev/null; then
      victim=$((1 - t))
      break
    fi
  done
  if ((SECONDS >= deadline)); then
    echo "no trainer ran out of data in the last epoch within 120 s"
    show_logs
    exit 1
  fi
  sleep 0.02
done
kill -9 "${pids[$victim]}"
if grep -q "no data left to take in the last epoch" "$work/trainer-$victim.log"; then
  echo "inconclusive: trainer $victim had run out of data too before it was killed"; show_logs
  exit 1
fi
echo "killed trainer $victim while it trained the last chunk"

status=0
wait_scheduler || status=$?
if ((status != 0)) || ! grep -q "is dead" "$work/scheduler.log"; then
  echo "the job did not survive the late death of a trainer (scheduler exit $status)"
  show_logs
  exit 1
fi
grep "is dead\|returned to the queue" "$work/scheduler.log"
check_summary sync 1 2 0.70 6144
