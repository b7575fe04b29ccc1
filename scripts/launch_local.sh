#!/usr/bin/env bash
# Starts a whole hetps cluster on this machine (127.0.0.1): one scheduler, N servers and M
# trainers, shows the scheduler's progress, and stops every process it started when the job
# ends, when any of them fails, or on Ctrl-C. Logs go to a run directory.
#
#   scripts/launch_local.sh [--config FILE] [options] [-- extra hetps-scheduler flags]
#
# Job options (override the job file; see hetps-scheduler --help):
#   --servers N  --trainers N  --mode sync|async|ssp  --staleness S  --staleness-aware-lr true|false
#   --balance none|speed  --model mlp|cnn  --epochs N  --optimizer NAME  --lr X  --momentum X
#   --weight-decay X  --global-batch-size N  --max-train-samples N  --eval-interval-samples N
#   --wire-dtype fp32|bf16|fp16  --seed N  --summary FILE
# Trainer options:
#   --device auto|cpu|cuda|mps (default cpu), or one per trainer: --device cuda,cpu
#   --data-dir DIR   --threads N (default 1)
#   --slowdown K1,K2,...  one factor per trainer (>= 1): trainer i takes Ki times its compute
#                         time per step, to reproduce slower machines (default 1 for all)
#   --no-overlap          push gradients after backward, not each as backward produces it
# Server options:
#   --server-threads N    worker threads per hetps-server (default 1, best on a shared host)
# Checkpoints and the model:
#   --checkpoint-dir DIR         where checkpoints go (default: the job file's checkpoint.dir, else
#                                <run dir>/checkpoints)
#   --checkpoint-interval SECS   seconds between checkpoints (default: the job file's, 30)
#   --no-checkpoints             take none (a lost server then ends the job)
#   --model-out FILE             where the trained model goes (default <run dir>/model.safetensors)
#   --resume DIR                 continue the job of a checkpoint (DIR: a checkpoint, or a directory
#                                of checkpoints: the newest committed one); the job is the
#                                checkpoint's, and the options above still override it
# Launcher options:
#   --max-restarts N   restart a server that dies, with the same arguments, up to N times in all
#                      (default 3 with checkpoints, 0 without); past that the job stops as when
#                      restarts are off. A trainer that dies counts as one too, but is not started
#                      again: the others take its data (another hetps-trainer may still join the
#                      running job, up to the job's max_trainers).
#                      When the scheduler dies the job stops; continue it with --resume.
#   --secure           encrypt and authenticate every connection with CURVE: generates a key pair
#                      per process into RUN_DIR/keys and admits only those keys
#   --run-dir DIR      where logs go (default runs/<date-time>)
#   --build-dir DIR    where the binaries are built (default build)
#   --no-build         do not (re)build before starting
#   --progress auto|plain|none   the scheduler's progress display (default auto)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir="$root/build"
run_dir=""
build=1
devices=(cpu)
data_dir=/usr/share/datasets/fashion-mnist
threads=1
server_threads=1
slowdown=()
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
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "launch_local.sh: $1 needs a value" >&2; exit 2; }; }

while (($#)); do
  case $1 in
    --config|--servers|--trainers|--mode|--model|--epochs|--optimizer|--lr|--momentum|\
    --weight-decay|--global-batch-size|--max-train-samples|--summary|--seed|--staleness|\
    --staleness-aware-lr|--balance|--eval-interval-samples|--wire-dtype|--checkpoint-interval)
      need_value "$@"; scheduler_flags+=("$1" "$2"); shift 2 ;;
    --checkpoint-dir) need_value "$@"; checkpoint_dir=$2; shift 2 ;;
    --no-checkpoints) checkpoints=0; shift ;;
    --model-out) need_value "$@"; model_out=$2; shift 2 ;;
    --resume) need_value "$@"; resume=$2; shift 2 ;;
    --max-restarts) need_value "$@"; max_restarts=$2; shift 2 ;;
    --device) need_value "$@"; IFS=, read -r -a devices <<<"$2"; shift 2 ;;
    --data-dir) need_value "$@"; data_dir=$2; shift 2 ;;
    --threads) need_value "$@"; threads=$2; shift 2 ;;
    --server-threads) need_value "$@"; server_threads=$2; shift 2 ;;
    --slowdown) need_value "$@"; IFS=, read -r -a slowdown <<<"$2"; shift 2 ;;
    --no-overlap) trainer_flags+=(--no-overlap); shift ;;
    --run-dir) need_value "$@"; run_dir=$2; shift 2 ;;
    --build-dir) need_value "$@"; build_dir=$2; shift 2 ;;
    --progress) need_value "$@"; progress=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --secure) secure=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; scheduler_flags+=("$@"); break ;;
    *) echo "launch_local.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if ((build)); then
  "$root/scripts/build.sh" --build-dir "$build_dir" --binaries-only
fi
bin="$build_dir/bin"
for program in hetps-scheduler hetps-server hetps-trainer hetps-keygen; do
  [[ -x $bin/$program ]] || { echo "launch_local.sh: $bin/$program is missing; build first (scripts/build.sh)" >&2; exit 1; }
done

if [[ -n $resume ]]; then
  for flag in "${scheduler_flags[@]}"; do
    [[ $flag == --config ]] && { echo "launch_local.sh: --resume takes the job from the checkpoint; drop --config" >&2; exit 2; }
  done
  scheduler_flags+=(--resume "$resume")
fi
# Resolve the job once up front: this validates it and tells how many processes to start.
resolved=$("$bin/hetps-scheduler" "${scheduler_flags[@]}" --check) || exit 2
servers=$(awk '$1 == "servers:" {print $2}' <<<"$resolved")
trainers=$(awk '$1 == "trainers:" {print $2}' <<<"$resolved")
if ((${#devices[@]} != 1 && ${#devices[@]} != trainers)); then
  echo "launch_local.sh: --device gives ${#devices[@]} devices for $trainers trainers; give one, or one per trainer" >&2
  exit 2
fi
if ((${#slowdown[@]} > 0 && ${#slowdown[@]} != trainers)); then
  echo "launch_local.sh: --slowdown gives ${#slowdown[@]} factors for $trainers trainers; give one per trainer" >&2
  exit 2
fi

run_dir=${run_dir:-$root/runs/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$run_dir"
run_dir=$(cd "$run_dir" && pwd)
# Checkpoints go to the run directory unless the job (or --checkpoint-dir) puts them elsewhere.
job_checkpoint_dir=$(awk '/^checkpoint:/ {inside = 1; next} /^[^ ]/ {inside = 0} inside && $1 == "dir:" && $2 != "\"\"" && $2 != "~" {print $2}' <<<"$resolved")
if ((checkpoints)); then
  if [[ -n $checkpoint_dir ]]; then
    scheduler_flags+=(--checkpoint-dir "$checkpoint_dir")
  elif [[ -z $job_checkpoint_dir ]]; then
    scheduler_flags+=(--checkpoint-dir "$run_dir/checkpoints")
  fi
else
  scheduler_flags+=(--checkpoint-dir "")
fi
scheduler_flags+=(--model-out "${model_out:-$run_dir/model.safetensors}")
resolved=$("$bin/hetps-scheduler" "${scheduler_flags[@]}" --check) || exit 2
echo "$resolved" > "$run_dir/job.yaml"
checkpoints_dir=$(awk '/^checkpoint:/ {inside = 1; next} /^[^ ]/ {inside = 0} inside && $1 == "dir:" && $2 != "\"\"" && $2 != "~" {print $2}' <<<"$resolved")
if [[ -z $max_restarts ]]; then
  if [[ -n $checkpoints_dir ]]; then max_restarts=3; else max_restarts=0; fi
fi
[[ $max_restarts =~ ^[0-9]+$ ]] || { echo "launch_local.sh: --max-restarts needs a number, not '$max_restarts'" >&2; exit 2; }
restarts=0
echo "launch_local.sh: $servers servers, $trainers trainers; logs in $run_dir"

# --secure: one key pair per process; each member's flags name its key.
keys="$run_dir/keys"
curve_flags() {  # the flags of the member whose key is named $1 (none without --secure)
  ((secure)) && echo "--curve-keys $keys --key-name $1"
  return 0
}
if ((secure)); then
  for name in scheduler $(seq -f 'server-%g' 0 $((servers - 1))) $(seq -f 'trainer-%g' 0 $((trainers - 1))); do
    "$bin/hetps-keygen" "$keys" "$name" > /dev/null
  done
  scheduler_flags+=(--curve-keys "$keys")
  echo "launch_local.sh: CURVE on; keys in $keys"
fi

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

interrupted() {
  trap - INT TERM
  echo
  echo "launch_local.sh: interrupted; stopping the cluster (logs in $run_dir)" >&2
  [[ -n ${scheduler_pid:-} ]] && kill -s TERM "$scheduler_pid" 2>/dev/null
  finish 5
  exit 130
}
trap interrupted INT TERM

endpoint_file="$run_dir/scheduler.endpoint"
rm -f "$endpoint_file"
# The scheduler's progress goes to this terminal; its log to the run directory.
"$bin/hetps-scheduler" "${scheduler_flags[@]}" --listen 'tcp://127.0.0.1:*' \
  --endpoint-file "$endpoint_file" --progress "$progress" 2>> "$run_dir/scheduler.log" &
scheduler_pid=$!
names[$scheduler_pid]=scheduler
pids+=($scheduler_pid)

for _ in $(seq 100); do
  [[ -s $endpoint_file ]] && break
  kill -0 "$scheduler_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ ! -s $endpoint_file ]]; then
  echo "launch_local.sh: the scheduler did not start; last lines of $run_dir/scheduler.log:" >&2
  tail -n 20 "$run_dir/scheduler.log" >&2
  finish 2
  exit 1
fi
endpoint=$(<"$endpoint_file")

start_server() {  # start_server I
  start "server-$1" "$run_dir/server-$1.log" "$bin/hetps-server" --scheduler "$endpoint" \
    --threads "$server_threads" $(curve_flags "server-$1")
}
for ((i = 0; i < servers; i++)); do start_server "$i"; done
for ((i = 0; i < trainers; i++)); do
  start "trainer-$i" "$run_dir/trainer-$i.log" "$bin/hetps-trainer" --scheduler "$endpoint" \
    --device "${devices[i]:-${devices[0]}}" --data-dir "$data_dir" --threads "$threads" --slowdown "${slowdown[i]:-1}" \
    ${trainer_flags[@]+"${trainer_flags[@]}"} $(curve_flags "trainer-$i")
done

# Watch until the scheduler ends the job, or a member fails on its own. (Polling rather than
# `wait -n` keeps this working with the bash 3.2 that macOS ships.)
status=0
name=""
watching=("${pids[@]}")
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
    # 3: the member left because the scheduler ended the job; the scheduler reports why.
    if ((code != 0 && code != 3)) && [[ ${names[$pid]} == server-* ]] && ((restarts < max_restarts)); then
      restarts=$((restarts + 1))
      echo "launch_local.sh: ${names[$pid]} died (exit $code); restarting it ($restarts of $max_restarts restarts)" >&2
      echo "launch_local.sh: restarted after exit $code" >> "$run_dir/${names[$pid]}.log"
      start_server "${names[$pid]#server-}"
      still+=("${pids[${#pids[@]} - 1]}")
      continue
    fi
    # Not restarted: the scheduler gives a dead trainer's data to the others.
    if ((code != 0 && code != 3)) && [[ ${names[$pid]} == trainer-* ]] && ((restarts < max_restarts)); then
      restarts=$((restarts + 1))
      echo "launch_local.sh: ${names[$pid]} died (exit $code); the job goes on with the other trainers ($restarts of $max_restarts restarts)" >&2
      continue
    fi
    if ((code != 0 && code != 3)); then
      name=${names[$pid]}
      echo "launch_local.sh: $name failed (exit $code); last lines of $run_dir/$name.log:" >&2
      tail -n 15 "$run_dir/$name.log" >&2
      status=1
      kill -s TERM "$scheduler_pid" 2>/dev/null || true
      break
    fi
  done
  watching=(${still[@]+"${still[@]}"})
done

finish 10
if ((status != 0)); then
  echo "launch_local.sh: the job failed; logs in $run_dir" >&2
  [[ $name == scheduler ]] && tail -n 5 "$run_dir/scheduler.log" >&2
  if [[ $name == scheduler && -n $checkpoints_dir ]] && ls "$checkpoints_dir"/checkpoint-*/manifest.json >/dev/null 2>&1; then
    echo "launch_local.sh: continue the job from its newest checkpoint with: scripts/launch_local.sh --resume $checkpoints_dir" >&2
  fi
  exit 1
fi
echo "launch_local.sh: done; logs in $run_dir"
