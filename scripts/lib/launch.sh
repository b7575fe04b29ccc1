# The parts of a launcher that do not depend on where its processes run, shared by
# scripts/launch_local.sh (every process on 127.0.0.1), scripts/launch_hosts.sh (hosts over ssh)
# and scripts/sim_cluster.sh (one network namespace per simulated machine): the job's flags, resolving the job file, and watching the
# members until the job ends. Sourced, not run; the caller sets `tool` (its name, for messages)
# and `root` before sourcing it and `bin` after, and keeps the state below in globals (pids,
# names, run_dir, scheduler_pid, ...).

# Defaults of the options every launcher takes (see take_launch_flag).
build_dir="$root/build"
run_dir=""
build=1
data_dir=/usr/share/datasets/fashion-mnist
server_threads=1
trainer_flags=()
progress=auto
secure=0
scheduler_flags=()
checkpoint_dir=""
checkpoints=1
model_out=""
resume=""
max_restarts=""

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "$tool: $1 needs a value" >&2; exit 2; }; }

# The flags that override the job file; both launchers hand them to hetps-scheduler unchanged.
is_job_flag() {
  case $1 in
    --config|--servers|--trainers|--mode|--model|--model-file|--loss|--epochs|--optimizer|--lr|--momentum|\
    --weight-decay|--global-batch-size|--max-train-samples|--summary|--seed|--staleness|\
    --staleness-aware-lr|--balance|--async-batch|--eval-interval-samples|--wire-dtype|--checkpoint-interval|\
    --round-steps|--round-seconds|--overlap-rounds|--async-rounds|--outer-lr|--outer-momentum|\
    --pseudo-gradient-dtype)
      return 0 ;;
  esac
  return 1
}

# Takes one option the launchers share (a job flag, or one for the processes, checkpoints,
# logs and build) from the front of "$@": returns 0 and sets `taken` to the words it used, or
# returns 1 for an option that is not shared. Exits 2 on a missing value.
take_launch_flag() {
  taken=2
  if is_job_flag "$1"; then
    need_value "$@"; scheduler_flags+=("$1" "$2"); return 0
  fi
  case $1 in
    --checkpoint-dir) need_value "$@"; checkpoint_dir=$2 ;;
    --no-checkpoints) checkpoints=0; taken=1 ;;
    --model-out) need_value "$@"; model_out=$2 ;;
    --resume) need_value "$@"; resume=$2 ;;
    --max-restarts) need_value "$@"; max_restarts=$2 ;;
    --data-dir) need_value "$@"; data_dir=$2 ;;
    --threads) need_value "$@"; threads=$2 ;;
    --server-threads) need_value "$@"; server_threads=$2 ;;
    --no-overlap|--forward-during-pull) trainer_flags+=("$1"); taken=1 ;;
    --data-cache|--data-cache-limit) need_value "$@"; trainer_flags+=("$1" "$2") ;;
    --run-dir) need_value "$@"; run_dir=$2 ;;
    --build-dir) need_value "$@"; build_dir=$2 ;;
    --progress) need_value "$@"; progress=$2 ;;
    --no-build) build=0; taken=1 ;;
    --secure) secure=1; taken=1 ;;
    -h|--help) usage; exit 0 ;;
    *) return 1 ;;
  esac
  return 0
}

# The status page of launch_local.sh and launch_hosts.sh: `http` (ADDR:PORT or off) and
# `http_given` (1 when the user chose it) give `http_flags` for hetps-scheduler, which writes the
# URL it took to `http_url_file`. The default port in use (another job's status page): any free
# one rather than no page.
http=127.0.0.1:7480
http_given=0
status_page_flags() {
  http_flags=(--http off)
  [[ $http == off ]] && return 0
  if ((!http_given)) && (exec 3<>"/dev/tcp/${http%:*}/${http##*:}") 2>/dev/null; then
    echo "$tool: $http is in use; the status page takes a free port instead"
    http=${http%:*}:0
  fi
  http_flags=(--http "$http" --http-url-file "$http_url_file")
}
# Also the hetps-status command that prints the member table, ready to paste into a terminal.
announce_status_page() {
  [[ -s $http_url_file ]] && echo "$tool: status page on $(<"$http_url_file") (also status and metrics there)"
  local command="$bin/hetps-status --scheduler $endpoint"
  ((secure)) && command+=" --curve-keys $keys --key-name status"
  echo "$tool: member table: $command"
  echo "$tool: (with --watch it is redrawn in place until the job ends)"
}

require_binaries() {
  for program in hetps-scheduler hetps-server hetps-trainer hetps-keygen; do
    [[ -x $bin/$program ]] || { echo "$tool: $bin/$program is missing; build first (scripts/build.sh)" >&2; exit 1; }
  done
}

# Resolves the job once up front from scheduler_flags (and `resume`): this validates it and sets
# `resolved`, `servers` and `trainers`.
check_job() {
  if [[ -n $resume ]]; then
    for flag in "${scheduler_flags[@]}"; do
      [[ $flag == --config ]] && { echo "$tool: --resume takes the job from the checkpoint; drop --config" >&2; exit 2; }
    done
    scheduler_flags+=(--resume "$resume")
  fi
  resolved=$("$bin/hetps-scheduler" "${scheduler_flags[@]}" --check) || exit 2
  servers=$(awk '$1 == "servers:" {print $2}' <<<"$resolved")
  trainers=$(awk '$1 == "trainers:" {print $2}' <<<"$resolved")
}

job_serves_data() {  # the resolved job's data.serve
  awk '/^data:/ {inside = 1; next} /^[^ ]/ {inside = 0} inside && $1 == "serve:" {print $2}' <<<"$resolved"
}
# After check_job: exits 2 unless the job serves its data to trainers without it, saying that
# WHO (e.g. `--data-from scheduler`) needs it.
need_served_data() {  # WHO
  [[ $(job_serves_data) == true ]] && return 0
  echo "$tool: $1 needs a job that serves its data; add 'data: {serve: true}' to the job file" >&2
  exit 2
}

# The files of the resolved job's data section (train and test, x and y), one a line as the job
# file gives them (relative ones are read under each process's --data-dir); nothing for a job on
# the built-in data set.
job_data_files() {
  awk '/^data:/ {inside = 1; next} /^[^ ]/ {inside = 0}
       inside && /^  (train|test):/ {split_ = 1; next} inside && /^  [^ ]/ {split_ = 0}
       inside && split_ && ($1 == "x:" || $1 == "y:") {
         sub(/^ *[xy]: */, ""); if ($0 ~ /^".*"$/) $0 = substr($0, 2, length($0) - 2)
         if ($0 != "") print
       }' <<<"$resolved"
}

job_checkpoint_dir() {  # the checkpoint directory of the resolved job, or nothing
  awk '/^checkpoint:/ {inside = 1; next} /^[^ ]/ {inside = 0} inside && $1 == "dir:" && $2 != "\"\"" && $2 != "~" {print $2}' <<<"$resolved"
}

# Creates the run directory and hands it to the scheduler, which puts there what the job places
# nowhere else: the summary, the model and (but in mode auto) the checkpoints (hetps-scheduler
# --run-dir). Writes the resolved job.yaml and sets `checkpoints_dir`, `max_restarts` (unless
# given) and `restarts`.
settle_job() {
  run_dir=${run_dir:-$root/runs/$(date +%Y%m%d-%H%M%S)}
  mkdir -p "$run_dir"
  run_dir=$(cd "$run_dir" && pwd)
  scheduler_flags+=(--run-dir "$run_dir")
  if ((checkpoints)); then
    [[ -z $checkpoint_dir ]] || scheduler_flags+=(--checkpoint-dir "$checkpoint_dir")
  else
    scheduler_flags+=(--no-checkpoints)
  fi
  [[ -z $model_out ]] || scheduler_flags+=(--model-out "$model_out")
  # The scheduler reads the data it serves, and relative paths of the job's data section, under
  # --data-dir as the trainers do, unless the flags after `--` give it one of its own.
  local flag own=0
  for flag in "${scheduler_flags[@]}"; do [[ $flag == --data-dir || $flag == --data-dir=* ]] && own=1; done
  ((own)) || scheduler_flags+=(--data-dir "$data_dir")
  resolved=$("$bin/hetps-scheduler" "${scheduler_flags[@]}" --check) || exit 2
  echo "$resolved" > "$run_dir/job.yaml"
  checkpoints_dir=$(job_checkpoint_dir)
  if [[ -z $max_restarts ]]; then
    if [[ -n $checkpoints_dir ]]; then max_restarts=3; else max_restarts=0; fi
  fi
  [[ $max_restarts =~ ^[0-9]+$ ]] || { echo "$tool: --max-restarts needs a number, not '$max_restarts'" >&2; exit 2; }
  restarts=0
}

# --secure: one key pair per process, each of its process's role; each member's flags name its key.
curve_flags() {  # the flags of the member whose key is named $1 (none without --secure)
  ((secure)) && echo "--curve-keys $keys --key-name $1"
  return 0
}
# Also a key named `status`, which the scheduler admits like the others, for hetps-status
# (announce_status_page prints the command).
make_keys() {
  keys="$run_dir/keys"
  ((secure)) || return 0
  local name
  for name in scheduler $(seq -f 'server-%g' 0 $((servers - 1))) $(seq -f 'trainer-%g' 0 $((trainers - 1))) status; do
    "$bin/hetps-keygen" "$keys" "$name" --role "${name%%-*}" > /dev/null
  done
  scheduler_flags+=(--curve-keys "$keys")
  echo "$tool: CURVE on; keys in $keys"
}

names=()   # names[pid]
pids=()
start() {  # start NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  "$@" >> "$log" 2>&1 &
  names[$!]=$name
  pids+=($!)
}

stop_all() {
  local signal=${1:-TERM}
  for pid in "${pids[@]}"; do kill -s "$signal" "$pid" 2>/dev/null || true; done
}

finish() {  # waits up to $1 seconds for every process, then kills what is left
  local deadline=$((SECONDS + $1))
  while ((SECONDS < deadline)); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 0.2
  done
  stop_all TERM
  sleep 1
  stop_all KILL
}

# On Ctrl-C or SIGTERM: asks the scheduler to stop (SIGTERM), which takes a checkpoint first and
# shuts the members down; another Ctrl-C asks again, which stops it at once. Then stops what is
# left and says how to resume.
stop_job() {
  # (|| true: under set -e a trap's failing command, the scheduler already gone, would exit.)
  trap '[[ -n ${scheduler_pid:-} ]] && kill -s TERM "$scheduler_pid" 2>/dev/null || true' INT TERM
  if [[ -n ${scheduler_pid:-} ]] && kill -s TERM "$scheduler_pid" 2>/dev/null; then
    [[ -z ${checkpoints_dir:-} ]] ||
      echo "$tool: the scheduler takes a checkpoint, then stops the job (Ctrl-C again: at once)" >&2
    # Twice the default checkpoint.cut_timeout_s and a little: the scheduler's own bound on it.
    local deadline=$((SECONDS + 130))
    while kill -0 "$scheduler_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  fi
  finish 5
  resume_hint
}

resume_hint() {  # says how to continue the job, when it has a committed checkpoint
  if [[ -n ${checkpoints_dir:-} ]] && ls "$checkpoints_dir"/checkpoint-*/manifest.json >/dev/null 2>&1; then
    echo "$tool: continue the job from its newest checkpoint with: scripts/$tool --resume $checkpoints_dir" >&2
  fi
}

wait_for_endpoint() {  # waits for the scheduler to write $endpoint_file; exits 1 if it does not
  for _ in $(seq 100); do
    [[ -s $endpoint_file ]] && break
    kill -0 "$scheduler_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ ! -s $endpoint_file ]]; then
    echo "$tool: the scheduler did not start; last lines of $run_dir/scheduler.log:" >&2
    tail -n 20 "$run_dir/scheduler.log" >&2
    finish 2
    exit 1
  fi
  endpoint=$(<"$endpoint_file")
}

# Watches until the scheduler ends the job, or a member fails on its own, restarting a server or
# trainer that dies with the caller's start_server or start_trainer. Sets `status` (0: the job
# finished) and `name` (who ended it). (Polling rather than `wait -n` keeps this working with the
# bash 3.2 that macOS ships.)
watch_members() {
  status=0
  name=""
  local watching=("${pids[@]}") still pid code
  while ((${#watching[@]})) && [[ -z $name ]]; do
    sleep 0.2
    still=()
    for pid in "${watching[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then
        still+=("$pid")
        continue
      fi
      set +e
      wait "$pid"
      code=$?
      set -e
      if [[ ${names[$pid]} == scheduler ]]; then
        name=scheduler
        status=$code
        break
      fi
      # 3: the member left because the scheduler ended the job; the scheduler reports why. 2: a
      # usage or configuration error (a bad flag, job, data or model file), which the same
      # command would meet again. A restarted server takes the dead one's rank; a restarted
      # trainer joins the running job (the others trained its unfinished data meanwhile).
      if ((code == 2)) && [[ ${names[$pid]} == server-* || ${names[$pid]} == trainer-* ]] && ((max_restarts > 0)); then
        echo "$tool: ${names[$pid]} stopped on an error that a restart cannot fix (exit 2: a bad flag, job," \
          "data or model file); not restarting it" >&2
      fi
      if ((code != 0 && code != 2 && code != 3)) && [[ ${names[$pid]} == server-* || ${names[$pid]} == trainer-* ]] &&
         ((restarts < max_restarts)); then
        restarts=$((restarts + 1))
        echo "$tool: ${names[$pid]} died (exit $code); restarting it ($restarts of $max_restarts restarts)" >&2
        echo "$tool: restarted after exit $code" >> "$run_dir/${names[$pid]}.log"
        "start_${names[$pid]%-*}" "${names[$pid]##*-}"  # start_server I or start_trainer I
        still+=("${pids[${#pids[@]} - 1]}")
        continue
      fi
      if ((code != 0 && code != 3)); then
        name=${names[$pid]}
        echo "$tool: $name failed (exit $code); last lines of $run_dir/$name.log:" >&2
        tail -n 15 "$run_dir/$name.log" >&2
        status=1
        kill -s TERM "$scheduler_pid" 2>/dev/null || true
        break
      fi
    done
    watching=(${still[@]+"${still[@]}"})
  done
}

# The error each server or trainer stopped on, one line per member that logged one, leaving out
# those that only repeat the scheduler's end of the job: a member refused at its start (a flag
# that does not suit the job) shows the scheduler only a closed connection.
member_errors() {
  local log line
  for log in "$run_dir"/server-*.log "$run_dir"/trainer-*.log; do
    [[ -f $log ]] || continue
    line=$(grep '^hetps-[a-z]*: error:' "$log" | grep -v 'the scheduler ended the job' | tail -n 1 || true)
    [[ -z $line ]] || echo "$(basename "$log" .log): $line"
  done
}

# After watch_members: stops what is left and says how the job ended; exits 1 if it failed.
end_job() {
  finish 10
  if ((status != 0)); then
    echo "$tool: the job failed; logs in $run_dir" >&2
    [[ $name == scheduler ]] && tail -n 5 "$run_dir/scheduler.log" >&2
    [[ $name == scheduler ]] && member_errors >&2
    [[ $name == scheduler ]] && resume_hint
    exit 1
  fi
  echo "$tool: done; logs in $run_dir"
}
