#!/usr/bin/env bash
# What failures cost: runs the CNN job with a server (and in every other run also a trainer)
# killed with kill -9 at a random moment, restarted by launch_local.sh --max-restarts, and reports
# per run the time from the server's death to training going on, the samples trained again, and
# the final accuracy beside an undisturbed run of the same mode; then the throughput cost of
# checkpointing every 10 s against none, in alternating pairs.
#
#   benchmarks/faults.sh [--quick] [--runs N] [--pairs N] [--seed S] [--out DIR]
#                        [--build-dir DIR] [--no-build]
#
# Writes DIR/faults.md (the tables, with the command and the machine) and DIR/faults.json, and
# keeps each run's logs and summary in DIR/faults-runs/. DIR defaults to benchmarks/results.
#   --runs N      fault runs, in turn sync, async and ssp (default 6)
#   --pairs N     checkpoint-cost pairs (default 3)
#   --seed S      seeds the kill times and victims (default 1)
#   --quick       the mlp on 6,000 samples, 2 fault runs (sync, async) and 1 pair, no
#                 undisturbed runs: to check that it works (about a minute)
# A full run takes about 40 minutes on 2 cores. Exits 1 when a job failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=faults.sh
source "$root/benchmarks/lib/options.sh"
quick=0
runs=6
pairs=3
seed=1
command_line="benchmarks/faults.sh${*:+ $*}"
while (($#)); do
  take_benchmark_flag "$@" && { shift "$taken"; continue; }
  case $1 in
    --quick) quick=1; runs=2; pairs=1; shift ;;
    --runs) need_value "$@"; runs=$2; shift 2 ;;
    --pairs) need_value "$@"; pairs=$2; shift 2 ;;
    --seed) need_value "$@"; seed=$2; shift 2 ;;
    *) echo "faults.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
prepare_benchmark

if ((quick)); then
  job=(--config configs/fashion_mnist.yaml --model mlp --max-train-samples 6000 --lr 0.02)
  # Trainers 40x slower than they can be in fault runs, so that the job lasts long enough for the
  # kills to fall inside training: about 6 s on a 2-core machine that computes an MLP step in
  # 1.5 ms, 25 s where it takes 6 ms (12x was too short for the first).
  fault_flags=(--slowdown 40,40)
  interval=1
  kill_window=2  # seconds after the first checkpoint within which the kill falls
else
  job=(--config configs/fashion_mnist.yaml --model cnn)
  fault_flags=()
  interval=10
  kill_window=40
fi
job+=(--servers 2 --trainers 2 --epochs 1 --progress none)
runs_dir="$out/faults-runs"
rm -rf "$runs_dir"
mkdir -p "$runs_dir"
RANDOM=$seed
launcher=""
trap '[[ -n $launcher ]] && kill -s INT "$launcher" 2>/dev/null; wait 2>/dev/null || true' EXIT

# run NAME FLAGS...: one job; its summary goes to runs_dir/NAME/summary.json.
run() {
  local name=$1
  shift
  scripts/launch_local.sh "${job[@]}" "$@" --summary "$runs_dir/$name/summary.json" --run-dir "$runs_dir/$name" \
    --build-dir "$build_dir" --no-build > "$runs_dir/$name.out" 2>&1 || {
    echo "faults.sh: run $name failed; the end of its output:" >&2
    tail -n 15 "$runs_dir/$name.out" | sed 's/^/  | /' >&2
    return 1
  }
}

# fault NAME MODE KILL_TRAINER: a run with a server (and maybe a trainer) killed at random.
fault() {
  local name=$1 mode=$2 kill_trainer=$3
  mkdir -p "$runs_dir/$name"
  scripts/launch_local.sh "${job[@]}" ${fault_flags[@]+"${fault_flags[@]}"} --mode "$mode" \
    --checkpoint-interval "$interval" --max-restarts 3 \
    --summary "$runs_dir/$name/summary.json" --run-dir "$runs_dir/$name" --build-dir "$build_dir" --no-build \
    > "$runs_dir/$name.out" 2>&1 &
  launcher=$!
  for _ in $(seq 3000); do
    grep -q "checkpoint 1 committed" "$runs_dir/$name/scheduler.log" 2>/dev/null && break
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  local delay=$((RANDOM % (kill_window * 10)))
  sleep "$((delay / 10)).$((delay % 10))"
  local victim=$((RANDOM % 2))
  local pid
  pid=$(pgrep -P "$launcher" -f hetps-server | sed -n "$((victim + 1))p" || true)
  if [[ -z $pid ]]; then
    echo "faults.sh: fault run $name: the job ended before its server could be killed (${delay}00 ms after" \
      "the first checkpoint); it is too short on this machine" >&2
    wait "$launcher" || true
    launcher=""
    return 1
  fi
  kill -9 "$pid" && echo "faults.sh: $name: killed server $victim after ${delay}00 ms"
  if ((kill_trainer)); then
    delay=$((RANDOM % (kill_window * 10)))
    sleep "$((delay / 10)).$((delay % 10))"
    pid=$(pgrep -P "$launcher" -f hetps-trainer | sed -n "$((RANDOM % 2 + 1))p" || true)
    [[ -n $pid ]] && kill -9 "$pid" && echo "faults.sh: $name: killed a trainer ${delay}00 ms later"
  fi
  local status=0
  wait "$launcher" || status=$?
  launcher=""
  if ((status != 0)); then
    echo "faults.sh: fault run $name failed; the end of its output:" >&2
    tail -n 15 "$runs_dir/$name.out" | sed 's/^/  | /' >&2
    return 1
  fi
  # A restarted trainer that never trained is a failure too, though the others finished the job.
  local idle
  idle=$(/usr/bin/python3 -c 'import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
print(" ".join(str(rank) for rank, n in enumerate(steps) if n == 0))' "$runs_dir/$name/summary.json")
  if [[ -n $idle ]]; then
    echo "faults.sh: fault run $name: trainer rank(s) $idle joined and never trained; their logs are in $runs_dir/$name" >&2
    return 1
  fi
}

failed=0
start=$SECONDS
# The accuracy to compare with (not in --quick: its figures mean nothing anyway).
for mode in sync async ssp; do
  ((quick)) && break
  echo "faults.sh: undisturbed $mode run"
  run "undisturbed-$mode" --mode "$mode" --checkpoint-interval "$interval" || failed=1
done
for ((i = 1; i <= runs; i++)); do
  modes=(sync async ssp)
  mode=${modes[(i - 1) % 3]}
  echo "faults.sh: fault run $i of $runs ($mode)"
  fault "fault-$i" "$mode" $((i % 2 == 0)) || failed=1
done
for ((i = 1; i <= pairs; i++)); do
  echo "faults.sh: checkpoint cost, pair $i of $pairs"
  # Alternate which goes first, so a drift of the machine's speed does not favour one side.
  if ((i % 2)); then
    run "cost-$i-none" --mode sync --no-checkpoints || failed=1
    run "cost-$i-10s" --mode sync --checkpoint-interval 10 || failed=1
  else
    run "cost-$i-10s" --mode sync --checkpoint-interval 10 || failed=1
    run "cost-$i-none" --mode sync --no-checkpoints || failed=1
  fi
done

/usr/bin/python3 benchmarks/faults_report.py --out "$out" --runs-dir "$runs_dir" --command "$command_line" \
  --job "scripts/launch_local.sh ${job[*]}" --interval "$interval" --seconds $((SECONDS - start)) || failed=1
exit $failed
