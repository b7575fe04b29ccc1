# Helpers for end-to-end tests that run a cluster of real processes on 127.0.0.1 and kill or
# signal some of them. Source it with the build directory:
#   source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" BUILD_DIR
# It makes a work directory ($work, removed at exit with every process started here still
# running killed), and provides:
#   job KEY: VALUE ...        lines for $work/job.yaml (listen and summary are filled in)
#   start_scheduler [FLAGS...]  starts hetps-scheduler on the job; sets $scheduler and $endpoint
#   start_member NAME PROGRAM [FLAGS...]  starts a server or trainer, logging to $work/NAME.log;
#                             sets $last_pid
#   by_hand NAME SLOWDOWN [SCHEDULER_FLAGS...]  starts a scheduler with only these flags (no job
#                             file, no run directory: its default), one server and one trainer;
#                             logs in $work/NAME.out, NAME.log, NAME-server.log, NAME-trainer.log
#   wait_for_line FILE PATTERN SECONDS    waits until FILE holds a line matching PATTERN
#   wait_scheduler            waits for the scheduler; its exit status
#   show_logs                 prints the end of every log (on failure)
#   check_summary MODE SERVERS TRAINERS MIN_ACCURACY SAMPLES_PER_EPOCH  (tests/e2e/check_summary.py)
set -euo pipefail
e2e_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$1/bin
work=$(mktemp -d)
e2e_pids=()
e2e_cleanup() {
  ((${#e2e_pids[@]})) && { kill -9 "${e2e_pids[@]}" 2>/dev/null || true; }
  rm -rf "$work"
}
trap e2e_cleanup EXIT

job() {
  printf '%s\n' "$@" >> "$work/job.yaml"
}

start_scheduler() {
  job "listen: tcp://127.0.0.1:*" "summary: $work/run.json"
  "$bin/hetps-scheduler" --config "$work/job.yaml" --run-dir "$work/run-dir" --endpoint-file "$work/endpoint" \
    --progress plain "$@" \
    > "$work/scheduler.out" 2> "$work/scheduler.log" &
  scheduler=$!
  e2e_pids+=("$scheduler")
  for _ in $(seq 100); do [[ -s $work/endpoint ]] && break; sleep 0.1; done
  endpoint=$(<"$work/endpoint")
}

start_member() {
  local name=$1 program=$2
  shift 2
  "$bin/$program" --scheduler "$endpoint" "$@" 2> "$work/$name.log" &
  last_pid=$!
  e2e_pids+=("$last_pid")
}

by_hand() {
  local name=$1 slowdown=$2
  shift 2
  rm -f "$work/endpoint"
  "$bin/hetps-scheduler" --listen 'tcp://127.0.0.1:*' --endpoint-file "$work/endpoint" --progress plain "$@" \
    > "$work/$name.out" 2> "$work/$name.log" &
  scheduler=$!
  e2e_pids+=("$scheduler")
  for _ in $(seq 100); do [[ -s $work/endpoint ]] && break; sleep 0.1; done
  [[ -s $work/endpoint ]] || fail "the scheduler ($name) did not start"
  endpoint=$(<"$work/endpoint")
  start_member "$name-server" hetps-server
  start_member "$name-trainer" hetps-trainer --device cpu --threads 1 --slowdown "$slowdown"
}
wait_for_line() {
  local file=$1 pattern=$2 seconds=$3
  local deadline=$((SECONDS + seconds))
  until grep -q -- "$pattern" "$file" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      echo "no line matching '$pattern' in $file within $seconds s"
      return 1
    fi
    sleep 0.05
  done
}

wait_scheduler() {
  local status=0
  wait "$scheduler" || status=$?
  return $status
}

show_logs() {
  for log in "$work"/*.log "$work/scheduler.out"; do
    echo "== $log"
    tail -n 25 "$log"
  done
}

# fail MESSAGE: says which test failed and why, shows the members' logs and ends the test.
fail() {
  echo "$(basename "$0" .sh): $*"
  show_logs
  exit 1
}

check_summary() {
  /usr/bin/python3 "$e2e_root/tests/e2e/check_summary.py" "$work/run.json" "$@"
}
