#!/usr/bin/env bash
# Starts a whole hetps cluster on this machine (127.0.0.1): one scheduler, N servers and M
# trainers, shows the scheduler's progress, and stops every process it started when the job
# ends, when any of them fails, or on Ctrl-C (which takes a checkpoint first and prints how to
# resume). Logs go to a run directory. At the start it prints
# the scheduler's endpoint and the hetps-status command that shows the job's member table.
#
#   scripts/launch_local.sh [--config FILE] [options] [-- extra hetps-scheduler flags]
#
# Job options (override the job file; see hetps-scheduler --help):
#   --servers N  --trainers N  --mode sync|async|ssp|auto|diloco  --staleness S
#   --staleness-aware-lr true|false
#   --balance none|speed  --model mlp|cnn  --epochs N  --optimizer NAME  --lr X  --momentum X
#   --weight-decay X  --global-batch-size N  --max-train-samples N  --eval-interval-samples N
#   --wire-dtype fp32|bf16|fp16  --seed N  --summary FILE  --async-batch share|whole
#   --model-file FILE.pt  a TorchScript model instead of a built-in one (docs/models.md), with
#   --loss cross_entropy|mse|nll  its loss (default cross_entropy)
#   --round-steps H  --round-seconds S  diloco: a round of H inner steps, or of S seconds (default:
#                         a length the servers choose from the measured synchronisation)
#   --overlap-rounds true|false  diloco: each round runs while the last one's weights travel
#                         (default true)
#   --async-rounds true|false  diloco: each trainer's rounds on its own clock, applied as they
#                         arrive, the outer SGD as Delayed Nesterov (default false)
#   --pseudo-gradient-dtype wire_dtype|int8  diloco: pseudo-gradients as wire_dtype, or as int8
#                         with error feedback (default wire_dtype)
#   --outer-lr X  --outer-momentum X  diloco: the outer SGD's lr and Nesterov momentum (default 1, 0:
#                         plain averaging of the trainers' rounds)
# Trainer options:
#   --device auto|cpu|cuda|mps (default cpu), or one per trainer: --device cuda,cpu
#   --data-dir DIR        the Fashion-MNIST directory (default /usr/share/datasets/fashion-mnist),
#                         under which relative paths of the job's data section are read too; the
#                         scheduler reads the data it serves from there as well
#   --threads N           LibTorch compute threads per trainer (default 1)
#   --slowdown K1,K2,...  one factor per trainer (>= 1): trainer i takes Ki times its compute
#                         time per step, to reproduce slower machines (default 1 for all)
#   --local-steps N       async, ssp with sgd: a trainer takes N batches per step, stepping its own
#                         weights after each, and pushes once (hetps-trainer --local-steps); one
#                         for all trainers, or one per trainer: --local-steps 1,8 (default 1)
#   --no-overlap          push gradients after backward, not each as backward produces it
#   --forward-during-pull async, ssp: each trainer starts the next step's forward while the last
#                         step's weights travel (each gradient one step staler; ssp needs
#                         staleness >= 1)
#   --data-from local|scheduler  where the trainers' data comes from (default local: the files
#                         under --data-dir), or one per trainer: --data-from local,scheduler makes
#                         trainer 1 a machine without the data, which receives it from the
#                         scheduler (hetps-trainer --data-from-scheduler; the job needs
#                         data: {serve: true})
#   --data-cache DIR|off  where trainers keep data received from the scheduler for the next run
#                         (default $XDG_CACHE_HOME/hetps/data, else ~/.cache/hetps/data); off: nowhere
#   --data-cache-limit SIZE  the most that cache holds (bytes, or with K, M, G or T; default 20G;
#                         none: no limit); past it the data sets least recently used are removed
# Server options:
#   --server-threads N    worker threads per hetps-server (default 1, best on a shared host)
# Checkpoints and the model:
#   --checkpoint-dir DIR         where checkpoints go (default: the job file's checkpoint.dir, else
#                                <run dir>/checkpoints; in mode auto, none)
#   --checkpoint-interval SECS   seconds between checkpoints (default: the job file's, 30)
#   --no-checkpoints             take none (a lost server then ends the job)
#   --model-out FILE             where the trained model goes (default <run dir>/model.safetensors)
#   --resume DIR                 continue the job of a checkpoint (DIR: a checkpoint, or a directory
#                                of checkpoints: the newest committed one), into a new run
#                                directory; the job is the checkpoint's, and the options above
#                                still override it
# Launcher options:
#   --max-restarts N   restart a server or trainer that dies, with the same arguments, up to N
#                      times in all (default 3 with checkpoints, 0 without; a trainer's restart
#                      needs no checkpoint: it joins the running job, and the others trained its
#                      unfinished data meanwhile); past that the job stops as when restarts are
#                      off. A member that exits 2 (a bad flag, job, data or model file) is not
#                      restarted: the same command would fail the same way, so the job stops.
#                      When the scheduler dies the job stops; continue it with --resume.
#   --secure           encrypt and authenticate every connection with CURVE: generates a key pair
#                      per process into RUN_DIR/keys and admits only those keys (and one named
#                      `status`, for hetps-status; the command is printed at the start); each
#                      key is bound to its process's role
#   --run-dir DIR      where logs go (default runs/<date-time>)
#   --build-dir DIR    where the binaries are built (default build)
#   --no-build         do not (re)build before starting
#   --progress auto|plain|none   the scheduler's progress display (default auto)
#   --http ADDR:PORT   serve the status page, /status and /metrics there (default 127.0.0.1:7480;
#                      when that default port is taken, e.g. by another job, any free port);
#                      --http off: none. The URL is printed at the start.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=launch_local.sh
source "$root/scripts/lib/launch.sh"
devices=(cpu)
threads=1
slowdown=()
local_steps=()
data_from=(local)

while (($#)); do
  take_launch_flag "$@" && { shift "$taken"; continue; }
  case $1 in
    --device) need_value "$@"; IFS=, read -r -a devices <<<"$2"; shift 2 ;;
    --slowdown) need_value "$@"; IFS=, read -r -a slowdown <<<"$2"; shift 2 ;;
    --local-steps) need_value "$@"; IFS=, read -r -a local_steps <<<"$2"; shift 2 ;;
    --data-from) need_value "$@"; IFS=, read -r -a data_from <<<"$2"; shift 2 ;;
    --http) need_value "$@"; http=$2; http_given=1; shift 2 ;;
    --) shift; scheduler_flags+=("$@"); break ;;
    *) echo "launch_local.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if ((build)); then
  "$root/scripts/build.sh" --build-dir "$build_dir" --binaries-only
fi
bin="$build_dir/bin"
require_binaries
check_job
if ((${#devices[@]} != 1 && ${#devices[@]} != trainers)); then
  echo "launch_local.sh: --device gives ${#devices[@]} devices for $trainers trainers; give one, or one per trainer" >&2
  exit 2
fi
if ((${#slowdown[@]} > 0 && ${#slowdown[@]} != trainers)); then
  echo "launch_local.sh: --slowdown gives ${#slowdown[@]} factors for $trainers trainers; give one per trainer" >&2
  exit 2
fi
if ((${#local_steps[@]} > 1 && ${#local_steps[@]} != trainers)); then
  echo "launch_local.sh: --local-steps gives ${#local_steps[@]} counts for $trainers trainers; give one, or one per trainer" >&2
  exit 2
fi
for steps in ${local_steps[@]+"${local_steps[@]}"}; do
  [[ $steps =~ ^[1-9][0-9]*$ ]] ||
    { echo "launch_local.sh: --local-steps takes whole numbers of at least 1, not '$steps'" >&2; exit 2; }
done
if ((${#data_from[@]} != 1 && ${#data_from[@]} != trainers)); then
  echo "launch_local.sh: --data-from gives ${#data_from[@]} sources for $trainers trainers; give one, or one per trainer" >&2
  exit 2
fi
for from in "${data_from[@]}"; do
  [[ $from == local || $from == scheduler ]] ||
    { echo "launch_local.sh: --data-from takes local or scheduler, not '$from'" >&2; exit 2; }
done
if [[ " ${data_from[*]} " == *" scheduler "* ]]; then need_served_data "--data-from scheduler"; fi
settle_job
echo "launch_local.sh: $servers servers, $trainers trainers; logs in $run_dir"
make_keys

interrupted() {
  echo
  echo "launch_local.sh: interrupted; stopping the cluster (logs in $run_dir)" >&2
  stop_job
  exit 130
}
trap interrupted INT TERM

endpoint_file="$run_dir/scheduler.endpoint"
http_url_file="$run_dir/scheduler.url"
rm -f "$endpoint_file" "$http_url_file"
status_page_flags
# The scheduler's progress goes to this terminal; its log to the run directory.
"$bin/hetps-scheduler" "${scheduler_flags[@]}" --listen 'tcp://127.0.0.1:*' \
  --endpoint-file "$endpoint_file" "${http_flags[@]}" --progress "$progress" 2>> "$run_dir/scheduler.log" &
scheduler_pid=$!
names[$scheduler_pid]=scheduler
pids+=($scheduler_pid)
wait_for_endpoint
echo "$tool: scheduler at $endpoint"
announce_status_page

start_server() {  # start_server I
  start "server-$1" "$run_dir/server-$1.log" "$bin/hetps-server" --scheduler "$endpoint" \
    --threads "$server_threads" $(curve_flags "server-$1")
}
for ((i = 0; i < servers; i++)); do start_server "$i"; done
start_trainer() {  # start_trainer I
  local own=(--data-dir "$data_dir")  # this trainer's own flags
  [[ ${data_from[$1]:-${data_from[0]}} == scheduler ]] && own+=(--data-from-scheduler)
  ((${#local_steps[@]} > 0)) && own+=(--local-steps "${local_steps[$1]:-${local_steps[0]}}")
  start "trainer-$1" "$run_dir/trainer-$1.log" "$bin/hetps-trainer" --scheduler "$endpoint" \
    --device "${devices[$1]:-${devices[0]}}" "${own[@]}" --threads "$threads" --slowdown "${slowdown[$1]:-1}" \
    ${trainer_flags[@]+"${trainer_flags[@]}"} $(curve_flags "trainer-$1")
}
for ((i = 0; i < trainers; i++)); do start_trainer "$i"; done

watch_members
end_job
