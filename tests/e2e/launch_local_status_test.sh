#!/usr/bin/env bash
# scripts/launch_local.sh and hetps-status --watch around a short job:
#  - a trainer whose data is missing exits 2, and the launcher does not restart it (though
#    restarts are on) but says why and fails the job at once;
#  - a job prints the scheduler's endpoint and a hetps-status command; that command with --watch,
#    on a terminal (script(1)), redraws its table in place (one clearing of the screen, then each
#    table drawn from the top) and exits 0 with one line once the job has ended.
#   launch_local_status_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$(mktemp -d)
launcher=""
cleanup() {
  if [[ -n $launcher ]]; then kill "$launcher" 2>/dev/null || true; wait "$launcher" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  for log in "$work"/*.out "$work"/run*/*.log; do [[ -f $log ]] && { echo "== $log"; tail -n 15 "$log"; }; done
  exit 1
}
launch() {  # launch RUN_DIR FLAGS...: launch_local.sh on a small mlp job
  local run=$1
  shift
  "$root/scripts/launch_local.sh" --no-build --build-dir "$build" --servers 1 --trainers 1 --mode async \
    --model mlp --epochs 1 --http off --progress plain --run-dir "$run" "$@"
}

# Missing data: no restart, though --max-restarts 3 would allow three.
code=0
launch "$work/run-missing" --data-dir "$work/no-such-dir" --max-restarts 3 > "$work/missing.out" 2>&1 || code=$?
((code == 1)) || fail "launch_local.sh exited $code with the trainer's data missing, not 1"
grep -q "trainer-0 stopped on an error that a restart cannot fix (exit 2" "$work/missing.out" ||
  fail "launch_local.sh did not say why it does not restart the trainer"
! grep -q "died (exit [0-9]*); restarting it" "$work/missing.out" || fail "launch_local.sh restarted a trainer whose data is missing"
grep -q "hetps-trainer: error: missing" "$work/run-missing/trainer-0.log" || fail "the trainer did not name the missing file"
grep -c "^hetps-trainer: error:" "$work/run-missing/trainer-0.log" | grep -qx 1 || fail "the trainer ran more than once"
echo "missing data: $(grep 'restart cannot fix' "$work/missing.out")"

# A short job, watched.
launch "$work/run" --max-train-samples 6000 --slowdown 3 > "$work/launch.out" 2>&1 &
launcher=$!
for _ in $(seq 300); do
  grep -q "member table: " "$work/launch.out" && break
  kill -0 "$launcher" 2>/dev/null || fail "launch_local.sh ended before printing the hetps-status command"
  sleep 0.1
done
endpoint=$(sed -n 's/^launch_local.sh: scheduler at //p' "$work/launch.out")
[[ $endpoint == tcp://127.0.0.1:* ]] || fail "launch_local.sh printed no scheduler endpoint"
command=$(sed -n 's/^launch_local.sh: member table: //p' "$work/launch.out")
[[ $command == "$build/bin/hetps-status --scheduler $endpoint" ]] || fail "the printed command is '$command'"
code=0
timeout 120 script -qefc "$command --watch --interval 0.3 --timeout-ms 1000" "$work/watch.tty" > /dev/null || code=$?
((code == 0)) || fail "hetps-status --watch exited $code"
wait "$launcher" || fail "the job failed"
launcher=""
tr -d '\r' < "$work/watch.tty" > "$work/watch.txt"
last=$(grep -ao 'hetps-status: .*' "$work/watch.txt" | tail -n 1)  # script(1) may add a line of its own
[[ $last == "hetps-status: the job has finished" || $last == "hetps-status: the job has ended: the scheduler at $endpoint no longer answers"* ]] ||
  fail "hetps-status --watch ended with '$last'"
clears=$(grep -o $'\033\\[2J' "$work/watch.txt" | wc -l)
homes=$(grep -o $'\033\\[H' "$work/watch.txt" | wc -l)
((clears == 1 && homes >= 3)) || fail "hetps-status --watch cleared the screen $clears times and drew $homes tables"
echo "hetps-status --watch drew $homes tables in place; $last"
