#!/usr/bin/env bash
# Starts a hetps job on several machines: the scheduler here, the servers and trainers on the
# hosts of an MPI-style hostfile, over ssh (localhost without). Shows the scheduler's progress,
# and stops every process it started, here and on the hosts, when the job ends, when any of them
# fails, or on Ctrl-C. Logs of every process come back to a run directory here.
#
#   scripts/launch_hosts.sh --hostfile FILE [--config FILE] [options] [-- extra hetps-scheduler flags]
#
# The hostfile: one host a line, `HOST key=value ...`; `#` starts a comment. e.g.
#   gpu-box    role=trainer slots=1 device=cuda threads=8
#   gpu-box    role=server
#   mac.local  role=trainer device=mps addr=192.168.1.20 bin=/Users/me/hetps/build/bin data=/Users/me/fmnist
#   laptop     role=trainer data=scheduler
#   localhost  role=server
# HOST is what ssh is given (user@host, or a Host of the ssh config); localhost and 127.0.0.1 run
# here without ssh. Keys: role (server or trainer; required), slots (processes of that role there,
# default 1), device (trainers: auto, cpu, cuda, cuda:N or mps; default --device), threads
# (trainers; default --threads), local_steps (trainers: hetps-trainer --local-steps, for a host on
# a slow link; async and ssp with SGD; default 1), addr (the address the other machines reach it at; default HOST),
# bin (the binaries' directory there; default this build's), data (trainers: the Fashion-MNIST
# directory there, or `scheduler` for a host without the data, whose trainers receive it from the
# scheduler with hetps-trainer --data-from-scheduler and keep it in that host's
# ~/.cache/hetps/data; the job then needs data: {serve: true}; default --data-from and
# --data-dir). The hostfile decides how many servers and trainers the job has.
#
# Host options:
#   --hostfile FILE            the hosts (required)
#   --ssh-config FILE          ssh's configuration file (ssh -F), e.g. for ports, users and keys
#   --scheduler-address ADDR   how the hosts reach this machine (default: its host name; 127.0.0.1
#                              when every host is localhost or has a loopback addr)
#   --scheduler-port PORT      the scheduler's port (default 7400; * picks a free one)
#   --server-port PORT         the first server port of a machine; its next servers take the next
#                              ports (default 7500; * lets each pick a free one)
#   --device DEV               trainers without device= (default cpu)
#   --data-from local|scheduler  trainers without data=: local reads the files under --data-dir,
#                              scheduler is data=scheduler (default local)
# Job options (override the job file, as in scripts/launch_local.sh): --config FILE
#   --mode sync|async|ssp|auto|diloco  --staleness S  --staleness-aware-lr true|false  --balance none|speed
#   --async-batch share|whole  --model mlp|cnn  --epochs N  --optimizer NAME  --lr X  --momentum X
#   --weight-decay X  --global-batch-size N  --max-train-samples N  --eval-interval-samples N
#   --wire-dtype fp32|bf16|fp16  --seed N  --summary FILE  --checkpoint-interval SECS
#   --round-steps H  --round-seconds S  --overlap-rounds true|false  --async-rounds true|false
#   --outer-lr X  --outer-momentum X  --pseudo-gradient-dtype wire_dtype|int8 (mode diloco)
# Process options: --data-dir DIR  --threads N  --server-threads N  --no-overlap  --forward-during-pull
#   --data-cache DIR|off  --data-cache-limit SIZE (trainers on served data, as in launch_local.sh;
#   DIR is a path on each host, default each host's ~/.cache/hetps/data)
#   --checkpoint-dir DIR  --no-checkpoints  --model-out FILE  --resume DIR  --max-restarts N
#   --secure (generates the keys here, one per process and of its role; each host gets the public
#   keys and its members' secret keys, removed at the end). Without it anyone who reaches the
#   hosts' ports is trusted as a member: use it on any network shared with others.
#   --run-dir DIR (default runs/<date-time>-hosts)  --build-dir DIR  --no-build  --progress auto|plain|none
#   --http ADDR:PORT   the scheduler's status page, /status and /metrics, as in launch_local.sh
#                      (default 127.0.0.1:7480, this machine only; 0.0.0.0:7480 for the hosts'
#                      browsers; --http off: none)
# Paths in job options (summary, checkpoints, model) are on this machine, where the scheduler runs;
# so is --data-dir for the scheduler, which reads the data it serves (data=scheduler) there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=launch_hosts.sh
source "$root/scripts/lib/launch.sh"
source "$root/scripts/lib/hosts.sh"
threads=1
device=cpu
hostfile=""
ssh_config=""
scheduler_address=""
scheduler_port=7400
server_port=7500
data_from=local

port_value() {  # FLAG VALUE: exits 2 unless VALUE is a port or *
  [[ $2 == '*' || ($2 =~ ^[0-9]+$ && $2 -ge 1 && $2 -le 65535) ]] ||
    { echo "$tool: $1 '$2' is neither a port (1-65535) nor *" >&2; exit 2; }
}
while (($#)); do
  [[ $1 == --servers || $1 == --trainers ]] &&
    { echo "$tool: $1: the hostfile's roles and slots decide how many servers and trainers run" >&2; exit 2; }
  take_launch_flag "$@" && { shift "$taken"; continue; }
  case $1 in
    --hostfile) need_value "$@"; hostfile=$2; shift 2 ;;
    --ssh-config) need_value "$@"; ssh_config=$2; shift 2 ;;
    --scheduler-address) need_value "$@"; scheduler_address=$2; shift 2 ;;
    --scheduler-port) need_value "$@"; port_value "$@"; scheduler_port=$2; shift 2 ;;
    --server-port) need_value "$@"; port_value "$@"; server_port=$2; shift 2 ;;
    --device) need_value "$@"; device=$2; shift 2 ;;
    --data-from)
      need_value "$@"
      [[ $2 == local || $2 == scheduler ]] ||
        { echo "$tool: --data-from takes local or scheduler, not '$2' (per host: data= in the hostfile)" >&2; exit 2; }
      data_from=$2; shift 2 ;;
    --http) need_value "$@"; http=$2; http_given=1; shift 2 ;;
    --) shift; scheduler_flags+=("$@"); break ;;
    *) echo "$tool: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n $hostfile ]] || { echo "$tool: --hostfile FILE is required (see --help)" >&2; exit 2; }
parse_hostfile "$hostfile"
resolve_addresses
ssh=(ssh -o BatchMode=yes -o ConnectTimeout=10)
if [[ -n $ssh_config ]]; then
  [[ -r $ssh_config ]] || { echo "$tool: the ssh config '$ssh_config' cannot be read" >&2; exit 2; }
  ssh+=(-F "$ssh_config")
fi

# Who runs where: server i on entry server_entry[i], and likewise for trainers.
server_entry=() trainer_entry=()
for ((e = 0; e < ${#e_host[@]}; e++)); do
  for ((s = 0; s < e_slots[e]; s++)); do
    if [[ ${e_role[e]} == server ]]; then server_entry+=("$e"); else trainer_entry+=("$e"); fi
  done
done
((${#server_entry[@]})) || { echo "$tool: $hostfile has no role=server host" >&2; exit 2; }
((${#trainer_entry[@]})) || { echo "$tool: $hostfile has no role=trainer host" >&2; exit 2; }
scheduler_flags+=(--servers "${#server_entry[@]}" --trainers "${#trainer_entry[@]}")

if ((build)); then
  "$root/scripts/build.sh" --build-dir "$build_dir" --binaries-only
fi
bin="$(cd "$build_dir" && pwd)/bin"
require_binaries
check_job
check_served_data "$hostfile"
run_dir=${run_dir:-$root/runs/$(date +%Y%m%d-%H%M%S)-hosts}
settle_job
check_hosts
cp "$hostfile" "$run_dir/hostfile"
for ((e = 0; e < ${#e_host[@]}; e++)); do
  served=""
  [[ ${e_role[e]} == trainer ]] && host_data_served "$e" && served=", data from the scheduler"
  echo "$tool: ${e_host[e]}: ${e_slots[e]} ${e_role[e]}$( ((e_slots[e] > 1)) && echo s), reached at ${e_addr[e]}$served"
done
echo "$tool: ${#server_entry[@]} servers, ${#trainer_entry[@]} trainers; logs in $run_dir"
make_keys

on_exit() {
  local code=$?
  trap - EXIT INT TERM
  finish 5 2>/dev/null || true
  remove_shipped_keys
  close_ssh_stdin
  exit "$code"
}
interrupted() {
  echo
  echo "$tool: interrupted; stopping the job here and on the hosts (logs in $run_dir)" >&2
  stop_job
  exit 130
}
trap on_exit EXIT
trap interrupted INT TERM
ship_keys
open_ssh_stdin

endpoint_file="$run_dir/scheduler.endpoint"
http_url_file="$run_dir/scheduler.url"
rm -f "$endpoint_file" "$http_url_file"
status_page_flags
"$bin/hetps-scheduler" "${scheduler_flags[@]}" --listen "tcp://$bind_ip:$scheduler_port" \
  --endpoint-file "$endpoint_file" "${http_flags[@]}" --progress "$progress" 2>> "$run_dir/scheduler.log" 7>&- &
scheduler_pid=$!
names[$scheduler_pid]=scheduler
pids+=($scheduler_pid)
wait_for_endpoint
endpoint="tcp://$scheduler_address:${endpoint##*:}"  # as the hosts reach it
echo "$tool: scheduler at $endpoint"
announce_status_page

start_server() {  # start_server I
  local e=${server_entry[$1]} j port=$server_port endpoint_flags=()
  if [[ $port == '*' ]]; then
    endpoint_flags=(--bind "tcp://$bind_ip:*")
  else
    for ((j = 0; j < $1; j++)); do [[ ${e_addr[server_entry[j]]} == "${e_addr[e]}" ]] && port=$((port + 1)); done
    endpoint_flags=(--bind "tcp://$bind_ip:$port" --advertise "tcp://${e_addr[e]}:$port")
  fi
  # shellcheck disable=SC2046  # the CURVE flags are words
  start "server-$1" "$run_dir/server-$1.log" on_host "$e" "$(host_bin "$e")/hetps-server" \
    --scheduler "$endpoint" "${endpoint_flags[@]}" --threads "$server_threads" \
    $(member_curve_flags "$e" "server-$1")
}
for ((i = 0; i < ${#server_entry[@]}; i++)); do start_server "$i"; done
start_trainer() {  # start_trainer I
  local e=${trainer_entry[$1]} data
  if host_data_served "$e"; then data=(--data-from-scheduler); else data=(--data-dir "$(host_data "$e")"); fi
  # shellcheck disable=SC2046
  start "trainer-$1" "$run_dir/trainer-$1.log" on_host "$e" "$(host_bin "$e")/hetps-trainer" \
    --scheduler "$endpoint" --device "${e_device[e]:-$device}" "${data[@]}" \
    --threads "${e_threads[e]:-$threads}" --local-steps "${e_steps[e]:-1}" \
    ${trainer_flags[@]+"${trainer_flags[@]}"} \
    $(member_curve_flags "$e" "trainer-$1")
}
for ((i = 0; i < ${#trainer_entry[@]}; i++)); do start_trainer "$i"; done

watch_members
end_job
