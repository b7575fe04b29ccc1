#!/usr/bin/env bash
# scripts/sim_cluster.sh end to end: the MLP trains to its usual accuracy on the home cluster in
# a box (benchmarks/clusters/home.yaml: 1.2 and 0.3 cores), the slow machine's trainer really is
# slower, and after a finished job, a failed one and one interrupted with SIGINT (and a SIGTERM on
# top) while a machine is frozen, no namespace, link, cgroup or process of the run is left (a diloco
# job on the same machines too, its slow machine taking fewer inner steps per round), and a run
# removes what a run killed with SIGKILL left; a bad
# spec gets an error naming the machine and the field (a bad local_steps too). Needs root: exits
# 77 (skipped) without it.
#   sim_cluster_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
source "$root/scripts/lib/sim_machines.sh"
reason=$(sim_unavailable)
if [[ -n $reason ]]; then
  echo "SKIPPED: cannot simulate machines here: $reason"
  exit 77
fi

work=$(mktemp -d)
tool_pid=""
stale=""
cleanup() {
  [[ -n $tool_pid ]] && kill -s KILL "$tool_pid" 2>/dev/null && sim_teardown "hetps-sim-$tool_pid"
  [[ -n $stale ]] && ip netns del "$stale" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAILED: $*"
  for log in "$work"/*/*.log "$work"/*.out; do [[ -f $log ]] && { echo "== $log"; tail -n 15 "$log"; }; done
  exit 1
}

# Job control gives the tool a process group of its own and SIGINT its default action, as when
# it runs in a terminal (a background job of a script would ignore SIGINT).
set -m
run_tool() {  # NAME SCRIPT-FLAGS...: runs the tool in the background; sets tool_pid
  local name=$1
  shift
  "$root/scripts/sim_cluster.sh" --no-build --build-dir "$build" --config "$root/configs/fashion_mnist.yaml" \
    --model mlp --progress plain --run-dir "$work/$name" "$@" > "$work/$name.out" 2>&1 &
  tool_pid=$!
}
wait_tool() {  # sets code: the tool's exit status
  code=0
  wait "$tool_pid" || code=$?
}
nothing_left() {  # WHAT: no namespace, link, cgroup or process of the run $tool_pid remains
  local prefix="hetps-sim-$tool_pid" controller
  ip netns list | grep -q "^$prefix" && fail "$1: network namespaces are left: $(ip netns list | grep "^$prefix")"
  ip -o link | grep -q "hs${tool_pid}m" && fail "$1: a veth is left: $(ip -o link | grep "hs${tool_pid}m")"
  for controller in cpu cpuacct freezer; do
    [[ -e /sys/fs/cgroup/$controller/$prefix ]] && fail "$1: the cgroup /sys/fs/cgroup/$controller/$prefix is left"
  done
  pgrep -f -- "$work/" >/dev/null && fail "$1: processes of the run are left: $(pgrep -af -- "$work/")"
  echo "ok: $1: no namespace, link, cgroup or process left"
  tool_pid=""
}

# A bad spec: refused before anything is set up, naming the machine and the field.
cat > "$work/bad.yaml" <<'EOF'
desktop: {cpus: 1.2, link: 1gbit, roles: [scheduler, server, trainer]}
mac: {cpus: 0.3, link: 1 gigabit, roles: [trainer]}
EOF
run_tool bad --spec "$work/bad.yaml"
wait_tool
[[ $code == 2 ]] || fail "a bad spec: exit $code, expected 2"
grep -q "spec $work/bad.yaml: machine 'mac': link is '1 gigabit'" "$work/bad.out" ||
  fail "a bad spec: the error does not name the machine and the field: $(cat "$work/bad.out")"
echo "ok: a bad spec: $(cat "$work/bad.out")"
nothing_left "a bad spec"
printf 'a: {cpus: 1, roles: [server, trainer], local_steps: 0}\n' > "$work/steps.yaml"
run_tool steps --spec "$work/steps.yaml"
wait_tool
[[ $code == 2 ]] && grep -q "machine 'a': local_steps is 0; it must be between 1 and 1024" "$work/steps.out" ||
  fail "local_steps 0: exit $code: $(cat "$work/steps.out")"
echo "ok: local_steps 0: $(cat "$work/steps.out")"
nothing_left "local_steps 0"
printf 'a: {cpus: %s, roles: [server, trainer]}\n' "$(getconf _NPROCESSORS_ONLN).5" > "$work/big.yaml"
run_tool big --spec "$work/big.yaml"
wait_tool
[[ $code == 2 ]] && grep -q "more than the" "$work/big.out" || fail "budgets above the cores: exit $code: $(cat "$work/big.out")"
echo "ok: budgets above the cores: $(cat "$work/big.out")"
nothing_left "budgets above the cores"

# What a run killed with SIGKILL left (a namespace named after a process that is gone) goes
# with the next run's start.
sleep 0 &
dead=$!
wait "$dead"
stale="hetps-sim-$dead"
ip netns add "$stale"

# The job: every sample of an epoch in async mode, where each trainer runs at its own pace.
run_tool home --spec "$root/benchmarks/clusters/home.yaml" --mode async --epochs 1 --lr 0.02 \
  --momentum 0.9 --eval-interval-samples 20000 --summary "$work/home.json" --no-checkpoints
wait_tool
[[ $code == 0 ]] || fail "the job on home.yaml: exit $code"
ip netns list | grep -q "^$stale\b" && fail "the namespace $stale, of a process that is gone, is left"
grep -q "removing what $stale left behind" "$work/home.out" || fail "no word of removing $stale: $(head -5 "$work/home.out")"
echo "ok: the run removed $stale, which a process that is gone left"
stale=""
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/home.json" async 1 2 0.80 60000 ||
  fail "the job on home.yaml fell short"
/usr/bin/python3 - "$work/home.json" "$work/home/machines.json" <<'PY' || fail "the CPU budgets"
import json, sys
s = json.load(open(sys.argv[1]))
by_host = {t["host"]: t for t in s["trainer_details"]}
assert set(by_host) == {"desktop", "mac"}, f"trainers' hosts are {sorted(by_host)}"
fast, slow = by_host["desktop"], by_host["mac"]
speed = slow["compute_samples_per_second"] / fast["compute_samples_per_second"]
share = slow["samples"] / fast["samples"]
# 0.3 against 1.2 cores; the bounds leave room for the waits and bursts of a small model.
assert speed < 0.8, f"the mac computes at {speed:.2f} of the desktop's speed"
assert share < 0.5, f"the mac trained {share:.2f} as many samples as the desktop"
machines = {m["machine"]: m for m in map(json.loads, open(sys.argv[2]))}
assert machines["mac"]["throttled_seconds"] > 0, machines["mac"]
print(f"ok: the mac computes at {speed:.2f} of the desktop's speed and trained {share:.2f} as many "
      f"samples; throttled for {machines['mac']['throttled_seconds']} s; "
      f"accuracy {s['final_test_accuracy']:.4f}")
PY
report=$(/usr/bin/python3 "$root/benchmarks/time_to_accuracy.py" --target 0.8 --windows 0,1000 \
  "home=$work/home.json") || fail "time_to_accuracy.py: $report"
grep -qE '^\| home \| 1 \| [0-9.]+ \(' <<<"$report" || fail "time_to_accuracy.py did not report the run: $report"
grep -qE '^\| home \| 0\.[0-9]{4} \(' <<<"$report" ||
  fail "time_to_accuracy.py did not report the accuracy between 0 and 1000 s: $report"
echo "$report"
nothing_left "a finished job"

# Mode diloco on the same machines, two epochs: rounds of 1 s, in which the mac (a quarter of the
# desktop's CPU) takes fewer inner steps than the desktop instead of making it wait.
run_tool diloco --spec "$root/benchmarks/clusters/home.yaml" --mode diloco --round-seconds 1 --epochs 2 \
  --lr 0.05 --momentum 0.9 --summary "$work/diloco.json" --no-checkpoints
wait_tool
[[ $code == 0 ]] || fail "the diloco job on home.yaml: exit $code"
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/diloco.json" diloco 1 2 0.80 60000 ||
  fail "the diloco job on home.yaml fell short"
/usr/bin/python3 - "$work/diloco.json" <<'PY' || fail "the diloco rounds"
import json, sys
s = json.load(open(sys.argv[1]))
by_host = {t["host"]: t for t in s["trainer_details"]}
fast, slow = by_host["desktop"], by_host["mac"]
assert s["rounds"] >= 2 and fast["steps"] == slow["steps"] == s["rounds"], (s["rounds"], fast, slow)
ratio = slow["inner_steps"] / fast["inner_steps"]
assert ratio < 0.6, f"the mac took {ratio:.2f} of the desktop's inner steps"
print(f"ok: diloco, {s['rounds']} rounds; the mac took {ratio:.2f} of the desktop's inner steps; "
      f"accuracy {s['final_test_accuracy']:.4f}")
PY
nothing_left "a finished diloco job"

# A job that fails: the trainers find no data; the tool names them and exits 1.
run_tool failing --spec "$root/benchmarks/clusters/home.yaml" --data-dir "$work/no-such-dir" --no-checkpoints
wait_tool
[[ $code == 1 ]] || fail "a failing job: exit $code, expected 1"
grep -q "trainer-[01] failed" "$work/failing.out" || fail "a failing job does not name the trainer: $(cat "$work/failing.out")"
echo "ok: a failing job exits 1 and names the trainer"
nothing_left "a failed job"

# Ctrl-C while a machine is frozen: every process is thawed and stopped, everything removed.
cat > "$work/stalls.yaml" <<'EOF'
desktop: {cpus: 0.9, roles: [scheduler, server, trainer]}
laptop: {cpus: 0.9, roles: [trainer], stall: {every: 4, for: 3}}
EOF
run_tool interrupted --spec "$work/stalls.yaml" --mode sync --epochs 5 --no-checkpoints
for _ in $(seq 600); do
  grep -q "laptop stalls" "$work/interrupted/stalls.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "laptop stalls" "$work/interrupted/stalls.log" || fail "the laptop never stalled"
grep -qE "FROZEN|FREEZING" /sys/fs/cgroup/freezer/hetps-sim-$tool_pid/laptop/freezer.state ||
  fail "the laptop's cgroup is not frozen during its stall"
kill -s INT "$tool_pid"
started=$SECONDS
# An impatient second signal while the tool stops the cluster must not cut its teardown short.
sleep 0.3
kill -s TERM "$tool_pid" 2>/dev/null || true
wait_tool
[[ $code == 130 ]] || fail "an interrupted job: exit $code, expected 130"
((SECONDS - started <= 20)) || fail "the tool took $((SECONDS - started)) s to stop after SIGINT"
echo "ok: SIGINT during a stall, then SIGTERM, stopped the job in $((SECONDS - started)) s"
nothing_left "an interrupted job"
