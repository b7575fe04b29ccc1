#!/usr/bin/env bash
# What served data costs: the FashionCNN on Fashion-MNIST with one server and one trainer, once
# with the trainer reading its local files and once with --data-from-scheduler (every training
# chunk's bytes come from the scheduler when it is granted, checked by CRC-32; with the trainer's
# on-disk cache off, so that every run measures the network path), in alternating pairs, one
# epoch each. Reports each run's samples/s (the run summary's) and the ratio served /
# local (target >= 0.95).
#
#   benchmarks/served_data.sh [--quick] [--pairs N] [--samples N] [--out DIR] [--build-dir DIR]
#                             [--no-build]
#
# Writes DIR/served_data.md (the table, with the command) and keeps each run's logs in
# DIR/served-data-runs/. DIR defaults to benchmarks/results.
#   --pairs N     local/served pairs (default 3)
#   --samples N   training samples per run (default 60000, the whole epoch)
#   --quick       the mlp on 6,000 samples, 1 pair: to check that it works
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=served_data.sh
source "$root/benchmarks/lib/options.sh"
pairs=3
samples=60000
model=cnn
command_line="benchmarks/served_data.sh${*:+ $*}"
while (($#)); do
  take_benchmark_flag "$@" && { shift "$taken"; continue; }
  case $1 in
    --quick) pairs=1; samples=6000; model=mlp; shift ;;
    --pairs) need_value "$@"; pairs=$2; shift 2 ;;
    --samples) need_value "$@"; samples=$2; shift 2 ;;
    *) echo "served_data.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
prepare_benchmark served-data-runs

pids=()
cleanup() { if ((${#pids[@]})); then kill -9 "${pids[@]}" 2>/dev/null || true; fi; }
trap cleanup EXIT

# run NAME FLAGS...: one job; prints its samples/s.
run() {
  local name=$1 dir="$out/served-data-runs/$1"
  shift
  rm -rf "$dir" && mkdir -p "$dir"
  cat >"$dir/job.yaml" <<YAML
model: $model
mode: sync
epochs: 1
global_batch_size: 64
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
max_train_samples: $samples
listen: tcp://127.0.0.1:*
summary: $dir/run.json
data: {serve: true}
YAML
  "$bin/hetps-scheduler" --config "$dir/job.yaml" --endpoint-file "$dir/endpoint" --progress none \
    --run-dir "$dir/run" --no-checkpoints \
    >"$dir/scheduler.out" 2>"$dir/scheduler.log" &
  local scheduler=$!
  pids+=("$scheduler")
  for _ in $(seq 100); do [[ -s $dir/endpoint ]] && break; sleep 0.1; done
  local endpoint
  endpoint=$(<"$dir/endpoint")
  "$bin/hetps-server" --scheduler "$endpoint" --bind "tcp://127.0.0.1:*" 2>"$dir/server.log" &
  pids+=($!)
  "$bin/hetps-trainer" --scheduler "$endpoint" --device cpu "$@" 2>"$dir/trainer.log" &
  pids+=($!)
  if ! wait "$scheduler"; then
    echo "served_data.sh: the $name run failed; see $dir" >&2
    tail -n 5 "$dir"/*.log >&2
    exit 1
  fi
  wait
  pids=()
  /usr/bin/python3 -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['samples_per_second'])" "$dir/run.json"
}

rows=()
ratios=()
for ((pair = 1; pair <= pairs; ++pair)); do
  local_rate=$(run "local-$pair")
  served_rate=$(run "served-$pair" --data-from-scheduler --data-dir "$out/served-data-runs/no-such-dir" \
                    --data-cache off)
  ratio=$(/usr/bin/python3 -c "print('%.3f' % ($served_rate / $local_rate))")
  requests=$(grep -o "served data in all: [0-9]* requests, [0-9]* bytes" "$out/served-data-runs/served-$pair/trainer.log" |
             sed 's/served data in all: //')
  rows+=("| $pair | $local_rate | $served_rate | $ratio | $requests |")
  ratios+=("$ratio")
  echo "pair $pair: local $local_rate samples/s, served $served_rate samples/s, ratio $ratio ($requests)"
done
median=$(/usr/bin/python3 -c "import statistics,sys; print('%.3f' % statistics.median(map(float, sys.argv[1:])))" "${ratios[@]}")
{
  echo "Command: \`$command_line\` ($model, $samples samples, 1 server, 1 trainer, sync, batch 64)"
  echo
  echo "| pair | local samples/s | served samples/s | served / local | served traffic |"
  echo "| ---: | ---: | ---: | ---: | --- |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Median served / local: $median (target >= 0.95)."
} >"$out/served_data.md"
cat "$out/served_data.md"
