#!/usr/bin/env bash
# deploy/slurm/hetps.sbatch end to end on a real single-node Slurm: the test starts slurmctld and
# slurmd on 127.0.0.1 (free ports, a cluster and node name of its own, state, spool and logs in a
# temporary directory, no authentication daemon: auth/none), submits the batch script with
# sbatch, and the job must train to completion in three job steps (scheduler, servers, trainers);
# then a job whose trainers find no data must fail. Slurm's daemons and jobs are stopped on every
# exit path. Exits 77 (skipped) only where Slurm cannot start.
#   slurm_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
for program in slurmctld slurmd sbatch sinfo scancel; do
  command -v "$program" >/dev/null || { echo "FAILED: $program is missing: install slurm-wlm (scripts/install-deps.sh)"; exit 1; }
done
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIPPED: slurmd must run as root to start jobs, and this runs as $(id -un)"
  exit 77
fi

work=$(mktemp -d /tmp/hetps-slurm-test.XXXXXX)
mkdir -p "$work/state" "$work/spool"
ctld_pid="" slurmd_pid=""
export SLURM_CONF="$work/slurm.conf"
stop_daemon() {  # PID
  [[ -n $1 ]] || return 0
  kill -s TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.2; done
  kill -s KILL "$1" 2>/dev/null || true
}
cleanup() {
  [[ -n $ctld_pid ]] && scancel --user="$(id -un)" 2>/dev/null
  for _ in $(seq 25); do
    [[ -z $(squeue -h 2>/dev/null) ]] && break
    sleep 0.2
  done
  stop_daemon "$slurmd_pid"
  stop_daemon "$ctld_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
  echo "FAILED: $*"
  for log in "$work"/*.log "$work"/*.out "$work"/run*/*.log; do [[ -f $log ]] && { echo "== $log"; tail -n 15 "$log"; }; done
  exit 1
}
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cluster="hetps$$"
node="hetps-node-$$"
cat > "$SLURM_CONF" <<EOF
ClusterName=$cluster
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$node NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=$cluster Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" > "$work/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N "$node" -f "$SLURM_CONF" > "$work/slurmd.out" 2>&1 &
slurmd_pid=$!
for _ in $(seq 100); do
  [[ $(sinfo -h -n "$node" -o %t 2>/dev/null) == idle ]] && break
  kill -0 "$ctld_pid" 2>/dev/null && kill -0 "$slurmd_pid" 2>/dev/null || break
  sleep 0.2
done
if [[ $(sinfo -h -n "$node" -o %t 2>/dev/null) != idle ]]; then
  echo "SKIPPED: Slurm did not start here (node state '$(sinfo -h -n "$node" -o %t 2>&1)'):"
  tail -n 5 "$work/slurmctld.out" "$work/slurmd.out" "$work"/*.log 2>/dev/null
  exit 77
fi
echo "ok: slurmctld and slurmd up: cluster $cluster, node $node"

submit() {  # NAME SBATCH-FLAGS... -- SCRIPT-FLAGS...: sbatch --wait; sets code
  local name=$1
  shift
  code=0
  HETPS_CONFIG="$root/configs/fashion_mnist.yaml" HETPS_BIN="$build/bin" HETPS_DEVICE=cpu \
    HETPS_PORT=$(free_port) HETPS_LISTEN_HOST=127.0.0.1 HETPS_SCHEDULER_HOST=127.0.0.1 \
    HETPS_SERVER_BIND='tcp://127.0.0.1:*' HETPS_RUN_DIR="$work/$name" \
    timeout 600 sbatch --wait --ntasks=5 --chdir="$work" --output="$work/$name.out" \
    "$@" || code=$?
}

steps_before=$(grep -c 'launch task StepId=' "$work/slurmd.log" || true)
# With CURVE (HETPS_SECURE=1): keys of their roles for every task, made by the batch script.
HETPS_SECURE=1 submit run "$root/deploy/slurm/hetps.sbatch" --model mlp --mode sync --epochs 1 \
  --max-train-samples 12000 --lr 0.02 --momentum 0.9
[[ $code == 0 ]] || fail "the job: sbatch --wait exited $code"
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run/summary.json" sync 2 2 0.70 12000 ||
  fail "the job's summary fell short"
steps=$(($(grep -c 'launch task StepId=' "$work/slurmd.log") - steps_before))
((steps == 3)) || fail "the job ran $steps job steps, expected 3 (scheduler, servers, trainers)"
for log in scheduler server-0 server-1 trainer-0 trainer-1; do
  [[ -s $work/run/$log.log ]] || fail "the job: $log.log is empty"
done
grep -q 'hetps.sbatch: done' "$work/run.out" || fail "the job: no closing line in its output"
grep -q 'CURVE on: admitting 6 keys' "$work/run/scheduler.log" || fail "the job did not run with CURVE"
grep -qx 'role: trainer' "$work/run/keys/trainer-1.pub" || fail "trainer-1's key has no trainer role"
echo "ok: the job trained through sbatch in $steps steps to" \
  "$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["final_test_accuracy"])' "$work/run/summary.json")"

# Trainers without data: their step fails, the script stops the job and the batch job fails.
HETPS_DATA_DIR="$work/no-such-dir" submit nodata "$root/deploy/slurm/hetps.sbatch" --model mlp
[[ $code != 0 ]] || fail "a job without data: sbatch --wait exited 0"
grep -q 'a member step failed' "$work/nodata.out" || fail "a job without data: no reason given: $(cat "$work/nodata.out")"
echo "ok: a job whose trainers have no data fails (exit $code)"
[[ -z $(squeue -h) ]] || fail "jobs are left: $(squeue)"
