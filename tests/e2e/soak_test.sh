#!/usr/bin/env bash
# Soak: while a real job trains (scheduler, one server, two trainers on 127.0.0.1), a bounded
# flood of hostile traffic (tests/support/flood_main.cc: random bytes and frames, truncated
# FlatBuffers, oversized messages, valid messages with absurd content) hits the scheduler's and
# the server's ports. The job must finish with the usual accuracy, every process's peak memory
# stays bounded (reported), and the refusals are counted in the run summary by reason.
#   soak_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"
flood=$1/tests/hetps-flood

job "model: mlp" "mode: sync" "servers: 1" "trainers: 2" "max_train_samples: 12000" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}"
start_scheduler
start_member server hetps-server
server_pid=$last_pid
start_member trainer-0 hetps-trainer --device cpu
trainer0=$last_pid
start_member trainer-1 hetps-trainer --device cpu
trainer1=$last_pid
# The flood starts once training runs (before that, a hostile Join could take a trainer's place:
# only CURVE keeps strangers from joining).
wait_for_line "$work/scheduler.log" "training starts" 60
server_endpoint=$(grep -o "serving on tcp://[0-9.:]*" "$work/server.log" | head -1 | cut -d' ' -f3)
flood_pids=()
for target in "scheduler $endpoint 1" "server $server_endpoint 2"; do
  read -r name at seed <<<"$target"
  "$flood" --endpoint "$at" --rounds 150 --seed "$seed" > "$work/flood-$name.out" 2>&1 &
  e2e_pids+=($!)
  flood_pids+=($!)
done

# Peak resident memory (VmHWM) of each process, sampled until it exits.
declare -A peak=([scheduler]=0 [server]=0 [trainer-0]=0 [trainer-1]=0)
declare -A pid_of=([scheduler]=$scheduler [server]=$server_pid [trainer-0]=$trainer0 [trainer-1]=$trainer1)
while kill -0 "$scheduler" 2>/dev/null; do
  for name in "${!pid_of[@]}"; do
    kb=$(awk '/^VmHWM:/ {print $2}' "/proc/${pid_of[$name]}/status" 2>/dev/null || true)
    [[ -n $kb ]] && ((kb > peak[$name])) && peak[$name]=$kb
  done
  sleep 0.2
done
if ! wait_scheduler; then
  echo "the job did not survive the flood"; show_logs; exit 1
fi
for pid in "${flood_pids[@]}"; do wait "$pid" || true; done
# The members leave once the scheduler has shut the job down (before the work directory goes).
for pid in "$server_pid" "$trainer0" "$trainer1"; do
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { echo "a member did not leave after the job ended"; show_logs; exit 1; }
  wait "$pid" || true
done
cat "$work"/flood-*.out
for name in scheduler server trainer-0 trainer-1; do
  echo "peak RSS of $name: $((peak[$name] / 1024)) MiB"
done
# Bounded: the flood sends some 25 MiB of messages per port and offers about fifteen frames of
# 80 MiB (ZeroMQ drops each at its header); the scheduler and the server need a few MiB for this
# job and may keep none of it.
((peak[scheduler] < 128 * 1024)) || { echo "the scheduler grew to ${peak[scheduler]} KiB"; exit 1; }
((peak[server] < 256 * 1024)) || { echo "the server grew to ${peak[server]} KiB"; exit 1; }
check_summary sync 1 2 0.78 12000
/usr/bin/python3 - "$work/run.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
total, scheduler = s["refusals"], s["scheduler_refusals"]
print(f"refusals: {total}\nscheduler_refusals: {scheduler}")
server = {k: total[k] - scheduler[k] for k in total}
for who, counts, reasons in (("scheduler", scheduler, ("unverified", "oversized", "unexpected")),
                             ("server", server, ("unverified", "oversized", "impostor"))):
    for reason in reasons:
        assert counts[reason] > 0, f"the {who} counted no {reason} refusals: {counts}"
PY
