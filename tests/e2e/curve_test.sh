#!/usr/bin/env bash
# CURVE end to end, over the real binaries on 127.0.0.1:
# - a job with CURVE (keys from hetps-keygen) trains the mlp to the usual accuracy, takes
#   checkpoints and writes the model (over the scheduler's links to the servers), while a
#   trainer with an unlisted key and a trainer without CURVE are refused, told why, and exit;
#   the scheduler counts both as unauthenticated;
# - keys are bound to roles: a member whose own key is of another role stops at start, and one
#   that relabelled its own copy of a listed key (the status key as a trainer's, a trainer's as a
#   server's) is refused at Join, told why, and exits; the scheduler counts both as impostors;
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
"$bin/hetps-keygen" "$work/intruder" intruder --role trainer > /dev/null
cp "$keys/scheduler.pub" "$work/intruder/"
[[ $(stat -c %a "$keys/trainer-0.key") == 600 ]] || { echo "a secret key is not mode 600"; exit 1; }
grep -qx "role: server" "$keys/server-0.pub" || { echo "server-0.pub does not hold its role"; cat "$keys/server-0.pub"; exit 1; }
# expect_failure PATTERN COMMAND...: COMMAND fails, saying PATTERN on stderr.
expect_failure() {
  local pattern=$1
  shift
  if "$@" 2> "$work/failure.err"; then echo "succeeded, but should not have: $*"; exit 1; fi
  grep -q -- "$pattern" "$work/failure.err" || { echo "no '$pattern' from: $*"; cat "$work/failure.err"; exit 1; }
}
expect_failure "never overwritten" "$bin/hetps-keygen" "$keys" trainer-0
expect_failure "does not say the key's role: give --role" "$bin/hetps-keygen" "$work/other" laptop
expect_failure "'scheduler' cannot be a trainer key" "$bin/hetps-keygen" "$work/other" scheduler --role trainer
# relabelled SOURCE ROLE: a directory holding a copy of the key pair SOURCE whose public key
# claims ROLE, and the scheduler's public key (what a member could make of its own copy).
relabelled() {
  local dir=$work/relabelled-$1
  mkdir -p "$dir"
  cp "$keys/$1.key" "$keys/scheduler.pub" "$dir/"
  sed "s/^role: .*/role: $2/" "$keys/$1.pub" > "$dir/$1.pub"
  echo "$dir"
}

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
    # Keys bound to roles: at start, and at Join against a copy relabelled by its holder.
    expect_failure "the key 'trainer-1' is a trainer key, and this process is a server" \
      "$bin/hetps-server" --scheduler "$endpoint" --curve-keys "$keys" --key-name trainer-1
    expect_failure "the key 'status' is a status key and cannot join as a trainer" \
      "$bin/hetps-trainer" --scheduler "$endpoint" --device cpu --curve-keys "$(relabelled status trainer)" \
      --key-name status --connect-timeout 20
    expect_failure "the key 'trainer-1' is a trainer key and cannot join as a server" \
      "$bin/hetps-server" --scheduler "$endpoint" --curve-keys "$(relabelled trainer-1 server)" \
      --key-name trainer-1 --connect-timeout 20
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
# The two relabelled keys' Joins.
impostors = s["scheduler_refusals"].get("impostor", 0)
assert impostors >= 2, f"the scheduler counted {impostors} impostors: {s['scheduler_refusals']}"
print(f"scheduler refusals: {s['scheduler_refusals']}")
PY
