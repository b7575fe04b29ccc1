#!/usr/bin/env bash
# A trainer killed in the middle of training does not hang the job: the scheduler declares it
# dead, gives its data chunks to the other trainer, and the job finishes every sample. SIGNAL KILL
# (the default) ends the process, whose closed connection takes it out at once; STOP freezes it
# with its connection open, and the heartbeat timeout does.
#   trainer_dies_test.sh BUILD_DIR MODE [KILL|STOP]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1 mode=$2 signal=${3:-KILL}
bin=$build/bin
work=$(mktemp -d)
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

cat > "$work/job.yaml" <<YAML
model: mlp
mode: $mode
servers: 1
trainers: 2
optimizer: {name: sgd, lr: 0.02, momentum: 0.9}
heartbeat_interval_ms: 200
heartbeat_timeout_ms: 2000
listen: tcp://127.0.0.1:*
summary: $work/run.json
YAML
"$bin/hetps-scheduler" --config "$work/job.yaml" --endpoint-file "$work/endpoint" --progress plain --run-dir "$work/run" \
  > "$work/scheduler.out" 2> "$work/scheduler.log" &
scheduler=$!
pids+=($scheduler)
for _ in $(seq 100); do [[ -s $work/endpoint ]] && break; sleep 0.1; done
endpoint=$(<"$work/endpoint")
"$bin/hetps-server" --scheduler "$endpoint" 2> "$work/server.log" & pids+=($!)
"$bin/hetps-trainer" --scheduler "$endpoint" --device cpu 2> "$work/trainer-0.log" & pids+=($!)
victim=$!
"$bin/hetps-trainer" --scheduler "$endpoint" --device cpu 2> "$work/trainer-1.log" & pids+=($!)

# Kill one trainer once training is well under way.
for _ in $(seq 300); do
  grep -q "training starts" "$work/trainer-0.log" 2>/dev/null && break
  sleep 0.1
done
sleep 2
kill -s "$signal" "$victim"

status=0
wait "$scheduler" || status=$?
if ((status != 0)) || ! grep -q "is dead" "$work/scheduler.log"; then
  echo "the job did not survive the loss of a trainer (scheduler exit $status)"
  for log in "$work"/*.log "$work/scheduler.out"; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
why=$([[ $signal == KILL ]] && echo "its connection closed" || echo "silent for more than")
grep "is dead: $why" "$work/scheduler.log" ||
  { echo "the scheduler did not take the trainer out because $why"; tail -n 20 "$work/scheduler.log"; exit 1; }
# Every sample of the epoch was trained by somebody (chunks of the dead trainer were re-queued).
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" "$mode" 1 2 0.75 60000
