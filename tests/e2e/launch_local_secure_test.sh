#!/usr/bin/env bash
# scripts/launch_local.sh --secure end to end: the job trains with CURVE on every connection; the
# launcher makes a `status` key beside the members' and prints the hetps-status command that uses
# it, and that command, run as printed while the job trains, reads the member table; hetps-status
# without the key is refused by the scheduler.
#   launch_local_secure_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
launcher=
cleanup() {
  if [[ -n $launcher ]] && kill -0 "$launcher" 2> /dev/null; then
    kill -INT "$launcher" 2> /dev/null || true
    wait "$launcher" 2> /dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "$1"
  cat "$work/launch.out"
  for log in "$work"/run/*.log; do [[ -f $log ]] && { echo "== $log"; tail -n 20 "$log"; }; done
  exit 1
}

: > "$work/launch.out"
"$root/scripts/launch_local.sh" --no-build --build-dir "$build" --config "$root/configs/fashion_mnist.yaml" \
  --secure --servers 1 --trainers 2 --mode sync --model mlp --max-train-samples 20000 --lr 0.02 \
  --momentum 0.9 --http off --summary "$work/run.json" --run-dir "$work/run" --progress plain \
  > "$work/launch.out" 2>&1 &
launcher=$!

for _ in $(seq 600); do
  grep -q "member table: " "$work/launch.out" && break
  kill -0 "$launcher" 2> /dev/null || break
  sleep 0.1
done
command=$(sed -n 's/^launch_local.sh: member table: //p' "$work/launch.out")
[[ -n $command ]] || fail "launch_local.sh --secure printed no hetps-status command"
[[ -s $work/run/keys/status.key && -s $work/run/keys/status.pub ]] || fail "no status key in the run's keys"

# The command as printed (both trainers listed once they have joined).
listed=0
for _ in $(seq 150); do
  if $command > "$work/status.txt" 2> "$work/status.err" && grep -qE "^trainer +1 " "$work/status.txt"; then
    listed=1
    break
  fi
  kill -0 "$launcher" 2> /dev/null || break
  sleep 0.2
done
((listed)) || fail "the printed command did not list both trainers: $(cat "$work/status.txt" "$work/status.err")"
cat "$work/status.txt"

# Without the key, the CURVE scheduler does not answer.
endpoint=$(<"$work/run/scheduler.endpoint")
status=0
"$build/bin/hetps-status" --scheduler "$endpoint" --timeout-ms 20000 > /dev/null 2> "$work/plain.err" || status=$?
((status != 0)) && grep -q "one side uses CURVE and the other does not" "$work/plain.err" ||
  fail "hetps-status without the key was not refused as such (exit $status): $(cat "$work/plain.err")"

status=0
wait "$launcher" || status=$?
launcher=
((status == 0)) || fail "launch_local.sh --secure failed (exit $status)"
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" sync 1 2 0.75 20000
