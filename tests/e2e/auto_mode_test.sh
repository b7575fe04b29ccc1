#!/usr/bin/env bash
# mode: auto runs a job to completion and switches when a trainer's speed changes: two equal
# trainers are measured and synced (balanced); then one of them stalls (SIGSTOP for 1.2 s of every
# 2 s, as a laptop that sleeps) and the scheduler switches to ssp, saying why; the job ends with
# every sample trained and its decisions in the run summary.
#   auto_mode_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"

# A rule that never calls these trainers variable from their speeds alone (the shared test host
# makes speeds noisy), syncs any two within 5x and lets an ssp bound cover a stall of the fastest's
# steps (at the default cap of 32 a 1.2 s stall of these trainers' millisecond steps makes it
# async) and never goes async for steps that are mostly transfers (the MLP's over loopback may
# be, on a fast host) nor to diloco (predicted about 1.7x over loopback, where they are about half
# transfers): stalls are what the test changes.
job "model: mlp" "mode: auto" "servers: 1" "trainers: 2" "epochs: 3" \
  "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" \
  "progress_interval_ms: 200" "heartbeat_interval_ms: 200" "heartbeat_timeout_ms: 6000" \
  "auto: {measure_seconds: 1.5, decide_interval_seconds: 1, steady_variation: 100, sync_min_speed_ratio: 0.2, async_min_transfer_share: 1, max_staleness: 10000, diloco_min_speedup: 1000}"
start_scheduler
start_member server hetps-server
start_member trainer-0 hetps-trainer --device cpu
start_member trainer-1 hetps-trainer --device cpu
victim=$last_pid

wait_for_line "$work/scheduler.log" "mode auto: .* -> sync (balanced)" 60 ||
  fail "the steady trainers were not switched to balanced sync"
stalls=0
deadline=$((SECONDS + 40))
stalled_switches() { grep -c -- "-> ssp (staleness [0-9]*) from step [0-9]*: a trainer stalled" "$work/scheduler.log" || true; }
before=$(stalled_switches)
until (($(stalled_switches) > before)); do
  ((SECONDS < deadline)) || { kill -CONT "$victim" 2>/dev/null || true; fail "no switch to ssp after $stalls stalls"; }
  kill -STOP "$victim"
  sleep 1.2
  kill -CONT "$victim"
  sleep 0.8
  stalls=$((stalls + 1))
done
echo "auto_mode_test: switched to ssp after $stalls stalls"

status=0
wait_scheduler || status=$?
((status == 0)) || fail "the scheduler exited with $status"
check_summary auto 1 2 0.75 60000
/usr/bin/python3 - "$work/run.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
d = s["mode_decisions"]
modes = [x["mode"] for x in d]
assert modes[0] == "async" and d[0]["from_clock"] == 0, d
assert "sync" in modes, d
first_sync = modes.index("sync")
stalled = [x for x in d[first_sync:] if x["mode"] == "ssp" and "stalled" in x["reason"]]
assert stalled, d
assert all(2 <= x["staleness"] <= 10000 for x in stalled), stalled
assert all(x["from_clock"] > 0 for x in d[1:]), d
assert all(d[i]["at_seconds"] <= d[i + 1]["at_seconds"] for i in range(len(d) - 1)), d
print("auto_mode_test: decisions", [(x["mode"], x["staleness"], round(x["at_seconds"], 1)) for x in d])
PY
grep -q "from step [0-9]* (asked: [0-9]*): sync" "$work/server.log" || fail "the server did not log the switch to sync"
grep -q "from step [0-9]* (asked: [0-9]*): ssp staleness" "$work/server.log" || fail "the server did not log the switch to ssp"
