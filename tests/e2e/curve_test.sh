#!/usr/bin/env bash
# CURVE end to end, over the real binaries on 127.0.0.1:
# - a job with CURVE (keys from hetps-keygen) trains the mlp to the usual accuracy, takes
#   checkpoints and writes the model (over the scheduler's links to the servers), while a
#   trainer with an unlisted key and a trainer without CURVE are refused, told why, and exit;
#   the scheduler counts both as unauthenticated;
# - hetps-status reads the CURVE scheduler's status with a listed key (--curve-keys, --key-name),
#   and without keys, or with the unlisted key, stops at once with an error naming those options;
# - nothing readable on the wire: members reach the scheduler through a relay that records every
#   byte; the model's tensor names are in the recording of a plaintext job, never in the CURVE one.
#   curve_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

keys=$work/keys
for name in scheduler server-0 trainer-0 trainer-1 status; do "$bin/hetps-keygen" "$keys" "$name" > /dev/null; done
# The intruder has the scheduler's public key, but its own key is not among the job's.
"$bin/hetps-keygen" "$work/intruder" intruder > /dev/null
cp "$keys/scheduler.pub" "$work/intruder/"
[[ $(stat -c %a "$keys/trainer-0.key") == 600 ]] || { echo "a secret key is not mode 600"; exit 1; }
if "$bin/hetps-keygen" "$keys" trainer-0 2> "$work/keygen.err"; then
  echo "hetps-keygen overwrote a key"; exit 1
fi
grep -q "never overwritten" "$work/keygen.err"

# relay_to ENDPOINT NAME: starts a recording relay to ENDPOINT; sets $relayed to its endpoint.
relay_to() {
  /usr/bin/python3 "$e2e_root/tests/e2e/recording_relay.py" "${1#tcp://}" "$work/$2.bytes" "$work/$2.port" &
  e2e_pids+=($!)
  for _ in $(seq 100); do [[ -s $work/$2.port ]] && break; sleep 0.1; done
  relayed="tcp://127.0.0.1:$(<"$work/$2.port")"
}

# run_job NAME CURVE(0|1): a sync job of one server and two trainers, members through the relay.
run_job() {
  local name=$1 curve=$2
  : > "$work/job.yaml"
  job "model: mlp" "mode: sync" "servers: 1" "trainers: 2" "max_train_samples: 12000" \
    "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}"
  # Checkpoints and the exported model travel over the scheduler's own links to the servers' data
  # sockets, which CURVE covers as well.
  job "checkpoint: {dir: $work/$name-checkpoints, interval_steps: 40}" "model_out: $work/$name.safetensors"
  ((curve)) && job "security: {curve: true, keys_dir: $keys, allowed: [scheduler, server-0, trainer-0, trainer-1, status]}"
  rm -f "$work/endpoint"
  start_scheduler
  relay_to "$endpoint" "$name"
  endpoint=$relayed
  local flags=()
  ((curve)) && flags=(--curve-keys "$keys")
  start_member "$name-server" hetps-server ${flags[@]+"${flags[@]}" --key-name server-0}
  if ((curve)); then
    # Refused at the handshake, told why, and gone; the job does not notice.
    local status=0
    "$bin/hetps-trainer" --scheduler "$endpoint" --device cpu --curve-keys "$work/intruder" --key-name intruder \
      --connect-timeout 20 2> "$work/intruder.log" || status=$?
    ((status != 0)) && grep -q "refused this process's CURVE key" "$work/intruder.log" ||
      { echo "a trainer with an unlisted key was not refused as such (exit $status)"; cat "$work/intruder.log"; exit 1; }
    status=0
    "$bin/hetps-trainer" --scheduler "$endpoint" --device cpu --connect-timeout 20 2> "$work/plain.log" || status=$?
    ((status != 0)) && grep -q "one side uses CURVE and the other does not" "$work/plain.log" ||
      { echo "a plaintext trainer was not refused as such (exit $status)"; cat "$work/plain.log"; exit 1; }
    grep -h "error:" "$work/intruder.log" "$work/plain.log"
    check_status
  fi
  start_member "$name-trainer-0" hetps-trainer --device cpu ${flags[@]+"${flags[@]}" --key-name trainer-0}
  start_member "$name-trainer-1" hetps-trainer --device cpu ${flags[@]+"${flags[@]}" --key-name trainer-1}
  if ! wait_scheduler; then
    echo "the $name job failed"; show_logs; exit 1
  fi
  check_summary sync 1 2 0.78 12000
  ls "$work/$name-checkpoints"/checkpoint-*/manifest.json > /dev/null ||
    { echo "the $name job committed no checkpoint"; show_logs; exit 1; }
  [[ -s $work/$name.safetensors ]] || { echo "the $name job wrote no model"; show_logs; exit 1; }
}

# check_status: hetps-status against the CURVE scheduler (waiting for its trainers): with the
# listed key it prints the table; without keys, or with the unlisted one, it fails well before its
# timeout, naming the options to give or fix.
check_status() {
  "$bin/hetps-status" --scheduler "$endpoint" --curve-keys "$keys" > "$work/status.txt" 2> "$work/status.err" ||
    { echo "hetps-status with the listed key 'status' failed"; cat "$work/status.err"; exit 1; }
  grep -qE "^server +0 " "$work/status.txt" || { echo "hetps-status printed no server"; cat "$work/status.txt"; exit 1; }
  local status started
  for attempt in plain intruder; do
    local flags=()
    [[ $attempt == intruder ]] && flags=(--curve-keys "$work/intruder" --key-name intruder)
    status=0
    started=$SECONDS
    "$bin/hetps-status" --scheduler "$endpoint" --timeout-ms 30000 ${flags[@]+"${flags[@]}"} \
      > /dev/null 2> "$work/status-$attempt.err" || status=$?
    ((status != 0 && SECONDS - started < 20)) ||
      { echo "hetps-status ($attempt) exited $status after $((SECONDS - started)) s"; cat "$work/status-$attempt.err"; exit 1; }
  done
  grep -q "one side uses CURVE and the other does not.*--curve-keys DIR --key-name NAME" "$work/status-plain.err" ||
    { echo "hetps-status without keys did not name --curve-keys"; cat "$work/status-plain.err"; exit 1; }
  grep -q "refused this process's CURVE key.*--key-name intruder: the scheduler must .*admit intruder.pub" \
    "$work/status-intruder.err" ||
    { echo "hetps-status with an unlisted key did not name it"; cat "$work/status-intruder.err"; exit 1; }
  cat "$work/status-plain.err" "$work/status-intruder.err"
}

run_job plain 0
grep -q "fc1.weight" "$work/plain.bytes" ||
  { echo "the plaintext recording lacks the tensor names; the relay recorded nothing useful"; exit 1; }
run_job curve 1
if grep -q "fc1.weight" "$work/curve.bytes"; then echo "a tensor name crossed the wire in clear with CURVE"; exit 1; fi
echo "recorded $(stat -c %s "$work/plain.bytes") plaintext and $(stat -c %s "$work/curve.bytes") CURVE bytes"
/usr/bin/python3 - "$work/run.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
refused = s["scheduler_refusals"].get("unauthenticated", 0)
# The unlisted key and the plaintext trainer, each at least once (both retry until they give up).
assert refused >= 2, f"the scheduler counted {refused} unauthenticated connections: {s['scheduler_refusals']}"
print(f"scheduler refusals: {s['scheduler_refusals']}")
PY
