#!/usr/bin/env bash
# A home cluster in a box: runs a hetps job on simulated machines, each a Linux network namespace
# with its own address, link speed (tc) and CPU budget (cgroup), started with the same commands
# as on separate hosts, then collects the logs and summary and removes every namespace, link and
# cgroup it made, also when the job fails or on Ctrl-C. Needs root.
#
#   scripts/sim_cluster.sh --spec FILE [options] [-- extra hetps-scheduler flags]
#
# The spec (YAML) maps machine names to machines, e.g. benchmarks/clusters/home.yaml:
#   desktop: {cpus: 1.2, link: 1gbit, roles: [scheduler, server, trainer]}
#   mac:     {cpus: 0.3, link: 1gbit, roles: [trainer]}
# Fields: cpus (cores, required; all machines together at most the cores here), link (a tc rate
# such as 1gbit or 300mbit, both directions; none or absent: no limit), roles (scheduler, server,
# trainer: one process each, repeats allowed; without a scheduler it goes to the first server's
# machine), threads (compute threads per trainer, default 1), local_steps (hetps-trainer
# --local-steps of its trainers, default 1), stall ({every: S, for: S}: frozen
# for `for` seconds every `every` seconds; with cpus: C throttled to C cores instead).
# See docs/sim_cluster.md.
#
# Spec options:
#   --spec FILE       the machines (required)
#   --only A,B        run only these machines of the spec (e.g. the fast one alone)
#   --local-steps NAME=N[,NAME=N]  these machines' local_steps, over the spec's
#   --clean           remove what runs killed with SIGKILL left behind, then exit (every run
#                     does this first, for runs whose process is gone)
# Job options (override the job file, as in scripts/launch_local.sh; the spec sets --servers and
# --trainers): --config FILE  --mode sync|async|ssp|auto|diloco  --staleness S  --staleness-aware-lr true|false
#   --balance none|speed  --model mlp|cnn  --epochs N  --optimizer NAME  --lr X  --momentum X
#   --weight-decay X  --global-batch-size N  --max-train-samples N  --eval-interval-samples N
#   --wire-dtype fp32|bf16|fp16  --seed N  --summary FILE  --checkpoint-interval SECS
#   --async-batch share|whole  --round-steps H  --round-seconds S  --overlap-rounds true|false
#   --async-rounds true|false  --outer-lr X  --outer-momentum X  --pseudo-gradient-dtype wire_dtype|int8
#   (mode diloco)
# Process options: --data-dir DIR  --threads N (every trainer, over the spec's)  --server-threads N
#   --no-overlap  --forward-during-pull  --data-cache DIR|off  --data-cache-limit SIZE  --checkpoint-dir DIR
#   --no-checkpoints  --model-out FILE  --resume DIR  --max-restarts N  --secure
#   --run-dir DIR (default runs/<date-time>-sim)  --build-dir DIR  --no-build
#   --progress auto|plain|none
# The run directory gets every process's log, job.yaml, spec.yaml, machines.json (each machine's
# address, budget and the CPU seconds it used) and stalls.log.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=sim_cluster.sh
source "$root/scripts/lib/launch.sh"
source "$root/scripts/lib/sim_machines.sh"
threads=""
spec=""
only=""
local_steps_override=""
clean=0

while (($#)); do
  [[ $1 == --servers || $1 == --trainers ]] &&
    { echo "$tool: $1: the spec's roles decide how many servers and trainers run" >&2; exit 2; }
  take_launch_flag "$@" && { shift "$taken"; continue; }
  case $1 in
    --spec) need_value "$@"; spec=$2; shift 2 ;;
    --only) need_value "$@"; only=$2; shift 2 ;;
    --local-steps) need_value "$@"; local_steps_override=$2; shift 2 ;;
    --clean) clean=1; shift ;;
    --device|--slowdown)
      echo "$tool: $1: simulated machines are CPUs, slow by their budget (the spec's cpus)" >&2; exit 2 ;;
    --) shift; scheduler_flags+=("$@"); break ;;
    *) echo "$tool: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done

reason=$(sim_unavailable)
[[ -z $reason ]] || { echo "$tool: cannot simulate machines here: $reason" >&2; exit 2; }
if ((clean)); then clean_stale; exit 0; fi
[[ -n $spec ]] || { echo "$tool: --spec FILE is required (see benchmarks/clusters/)" >&2; exit 2; }
# A run killed with SIGKILL (or with the machine's session) could not tear down; its namespaces
# and cgroups go now, before they are mistaken for this run's or pile up.
clean_stale >&2

# The spec, one machine per line: NAME CPUS LINK THREADS LOCAL_STEPS STALL_EVERY STALL_FOR STALL_CPUS
# ROLES.
cores=$(getconf _NPROCESSORS_ONLN)
machine_lines=$(/usr/bin/python3 "$root/scripts/lib/sim_spec.py" "$spec" "$cores" "$only" "$local_steps_override") ||
  exit 2
m_name=() m_cpus=() m_link=() m_threads=() m_local=() m_every=() m_for=() m_throttle=() m_roles=()
while IFS=$'\t' read -r name cpus link machine_threads local_steps every length throttle roles; do
  m_name+=("$name") m_cpus+=("$cpus") m_link+=("$link") m_threads+=("${threads:-$machine_threads}")
  m_local+=("$local_steps")
  m_every+=("$every") m_for+=("$length") m_throttle+=("$throttle") m_roles+=("$roles")
done <<<"$machine_lines"
machines=${#m_name[@]}

# Who runs where: server i on server_machine[i] (index into m_*), and likewise for trainers.
server_machine=() trainer_machine=() scheduler_machine=""
for ((m = 0; m < machines; m++)); do
  IFS=, read -r -a roles <<<"${m_roles[m]}"
  for role in "${roles[@]}"; do
    case $role in
      scheduler) scheduler_machine=$m ;;
      server) server_machine+=("$m") ;;
      trainer) trainer_machine+=("$m") ;;
    esac
  done
done
scheduler_flags+=(--servers "${#server_machine[@]}" --trainers "${#trainer_machine[@]}")

if ((build)); then
  "$root/scripts/build.sh" --build-dir "$build_dir" --binaries-only
fi
bin="$build_dir/bin"
require_binaries
check_job
run_dir=${run_dir:-$root/runs/$(date +%Y%m%d-%H%M%S)-sim}
settle_job
cp "$spec" "$run_dir/spec.yaml"
make_keys

sim_prefix="hetps-sim-$$"
stall_pids=()
stop_stalls() {  # ends the stall loops and thaws every machine
  for pid in ${stall_pids[@]+"${stall_pids[@]}"}; do kill "$pid" 2>/dev/null || true; done
  for pid in ${stall_pids[@]+"${stall_pids[@]}"}; do wait "$pid" 2>/dev/null || true; done
  stall_pids=()
  for ((m = 0; m < machines; m++)); do
    freezer=$(machine_cgroup freezer "${m_name[m]}")
    [[ -f $freezer/freezer.state ]] && echo THAWED > "$freezer/freezer.state"
    cpu=$(machine_cgroup cpu "${m_name[m]}")
    [[ -f $cpu/cpu.cfs_quota_us ]] &&
      awk -v c="${m_cpus[m]}" -v p="$(cfs_period_us "${m_cpus[m]}")" 'BEGIN { printf "%d\n", c * p }' > "$cpu/cpu.cfs_quota_us"
  done
  return 0
}
report_machines() {
  for ((m = 0; m < machines; m++)); do
    machine_report "$m" "${m_name[m]}" "${m_cpus[m]}" "${m_link[m]}" "${m_roles[m]}"
  done > "$run_dir/machines.json" 2>/dev/null || true
}
# Both handlers ignore further INT and TERM rather than reset them: a second Ctrl-C or kill during
# the (bounded) stop would otherwise end the script before the teardown and leave the namespaces.
on_exit() {
  local code=$?
  trap - EXIT
  trap '' INT TERM
  stop_stalls 2>/dev/null || true
  finish 5 2>/dev/null || true
  report_machines
  sim_teardown "$sim_prefix"
  exit "$code"
}
interrupted() {
  echo
  echo "$tool: interrupted; stopping the cluster (logs in $run_dir)" >&2
  stop_stalls
  stop_job
  exit 130
}
trap on_exit EXIT
trap interrupted INT TERM

sim_bridge_up
for ((m = 0; m < machines; m++)); do
  sim_machine_up "$m" "${m_name[m]}" "${m_cpus[m]}" "${m_link[m]}"
  echo "$tool: ${m_name[m]}: $(machine_address "$m"), ${m_cpus[m]} cpus, link ${m_link[m]/-/unlimited}, ${m_roles[m]}"
done
echo "$tool: ${#server_machine[@]} servers, ${#trainer_machine[@]} trainers on $machines machines; logs in $run_dir"

# The commands of several hosts: the scheduler listens on its machine's address, each server
# binds a port of its own machine's address, and every member is given the scheduler's address.
scheduler_address=$(machine_address "$scheduler_machine")
endpoint_file="$run_dir/scheduler.endpoint"
rm -f "$endpoint_file"
on_machine "${m_name[scheduler_machine]}" "$bin/hetps-scheduler" "${scheduler_flags[@]}" \
  --listen "tcp://$scheduler_address:7400" --endpoint-file "$endpoint_file" --progress "$progress" \
  2>> "$run_dir/scheduler.log" &
scheduler_pid=$!
names[$scheduler_pid]=scheduler
pids+=($scheduler_pid)
wait_for_endpoint

start_server() {  # start_server I
  local m=${server_machine[$1]} port=7500 j
  for ((j = 0; j < $1; j++)); do [[ ${server_machine[j]} == "$m" ]] && port=$((port + 1)); done
  start "server-$1" "$run_dir/server-$1.log" on_machine "${m_name[m]}" "$bin/hetps-server" \
    --scheduler "$endpoint" --bind "tcp://$(machine_address "$m"):$port" \
    --threads "$server_threads" $(curve_flags "server-$1")
}
for ((i = 0; i < ${#server_machine[@]}; i++)); do start_server "$i"; done
start_trainer() {  # start_trainer I
  local m=${trainer_machine[$1]}
  start "trainer-$1" "$run_dir/trainer-$1.log" on_machine "${m_name[m]}" "$bin/hetps-trainer" \
    --scheduler "$endpoint" --device cpu --data-dir "$data_dir" --threads "${m_threads[m]}" \
    --local-steps "${m_local[m]}" \
    ${trainer_flags[@]+"${trainer_flags[@]}"} $(curve_flags "trainer-$1")
}
for ((i = 0; i < ${#trainer_machine[@]}; i++)); do start_trainer "$i"; done
for ((m = 0; m < machines; m++)); do
  [[ ${m_every[m]} == 0 ]] && continue
  stall_loop "${m_name[m]}" "${m_cpus[m]}" "${m_every[m]}" "${m_for[m]}" "${m_throttle[m]}" &
  stall_pids+=($!)
done

watch_members
stop_stalls
end_job
