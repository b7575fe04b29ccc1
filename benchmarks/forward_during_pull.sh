#!/usr/bin/env bash
# What hetps-trainer --forward-during-pull buys and costs: the same async (or ssp) job with and
# without it, in alternating pairs (seed k for pair k, the same for both), on loopback
# (scripts/launch_local.sh) or on a cluster in a box (--spec FILE, scripts/sim_cluster.sh, as
# root). Reports per case the median and range of samples/s, of the time to the target test
# accuracy and of the final accuracy (benchmarks/time_to_accuracy.py), over the pairs.
#
#   benchmarks/forward_during_pull.sh [--quick] [--pairs N] [--model mlp|cnn] [--samples N]
#       [--mode async|ssp] [--staleness N] [--momentum X] [--target A] [--servers N]
#       [--trainers N] [--spec FILE]
#       [--out DIR] [--build-dir DIR] [--no-build]
#
# Writes DIR/forward_during_pull.md (the table, with the command) and keeps each run's logs and
# summary in DIR/forward-during-pull-runs/. DIR defaults to benchmarks/results.
#   --pairs N      with/without pairs (default 3)
#   --model M      default mlp; --samples N training samples per run (default 30000)
#   --mode M       async (default) or ssp (then --staleness, default 3)
#   --momentum X   SGD momentum of both (default 0.5: a step of staleness overshoots at 0.9)
#   --target A     test accuracy for the time to accuracy (default 0.8)
#   --servers N --trainers N  on loopback (default 1 and 2)
#   --spec FILE    run on the cluster in a box FILE describes (needs root), not on loopback;
#                  its machines' roles say how many servers and trainers
#   --quick        the mlp on 4,000 samples, 1 pair: to check that it works
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=forward_during_pull.sh
source "$root/benchmarks/lib/options.sh"
pairs=3
samples=30000
model=mlp
mode=async
staleness=3
servers=1
trainers=2
momentum=0.5
target=0.8
spec=
command_line="benchmarks/forward_during_pull.sh${*:+ $*}"
while (($#)); do
  take_benchmark_flag "$@" && { shift "$taken"; continue; }
  case $1 in
    --quick) pairs=1; samples=4000; model=mlp; shift ;;
    --pairs) need_value "$@"; pairs=$2; shift 2 ;;
    --model) need_value "$@"; model=$2; shift 2 ;;
    --samples) need_value "$@"; samples=$2; shift 2 ;;
    --servers) need_value "$@"; servers=$2; shift 2 ;;
    --trainers) need_value "$@"; trainers=$2; shift 2 ;;
    --mode) need_value "$@"; mode=$2; shift 2 ;;
    --staleness) need_value "$@"; staleness=$2; shift 2 ;;
    --momentum) need_value "$@"; momentum=$2; shift 2 ;;
    --target) need_value "$@"; target=$2; shift 2 ;;
    --spec) need_value "$@"; spec=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    *) echo "$tool: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $mode == async || $mode == ssp ]] || { echo "$tool: --mode must be async or ssp, not '$mode'" >&2; exit 2; }
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "$tool: --pairs must be a positive integer, not '$pairs'" >&2; exit 2; }
prepare_benchmark forward-during-pull-runs
runs="$out/forward-during-pull-runs"

# run NAME SEED FLAGS...: one job into $runs/NAME (its summary: $runs/NAME.json).
run() {
  local name=$1 seed=$2
  shift 2
  local launcher=(scripts/launch_local.sh --servers "$servers" --trainers "$trainers")
  [[ -n $spec ]] && launcher=(scripts/sim_cluster.sh --spec "$spec")
  rm -rf "${runs:?}/$name" "$runs/$name.json"
  local ssp=()
  [[ $mode == ssp ]] && ssp=(--staleness "$staleness")
  if ! "${launcher[@]}" --config configs/fashion_mnist.yaml --mode "$mode" "${ssp[@]}" \
      --model "$model" --epochs 1 --max-train-samples "$samples" --momentum "$momentum" \
      --eval-interval-samples 2000 --seed "$seed" --progress none --no-checkpoints \
      --build-dir "$build_dir" --no-build --summary "$runs/$name.json" --run-dir "$runs/$name" "$@" \
      >"$runs/$name.out" 2>&1; then
    echo "$tool: the $name run failed; see $runs/$name.out and $runs/$name" >&2
    tail -n 5 "$runs/$name.out" >&2
    exit 1
  fi
}

cases=()
for ((pair = 1; pair <= pairs; ++pair)); do
  # Alternate which goes first, so that a drifting host favours neither.
  if ((pair % 2)); then order=(plain ahead); else order=(ahead plain); fi
  for which in "${order[@]}"; do
    if [[ $which == ahead ]]; then run "ahead-$pair" "$pair" --forward-during-pull; else run "plain-$pair" "$pair"; fi
    cases+=("$which=$runs/$which-$pair.json")
  done
  echo "$tool: pair $pair of $pairs done"
done
table=$(/usr/bin/python3 "$root/benchmarks/time_to_accuracy.py" --target "$target" "${cases[@]}")
where=loopback
[[ -n $spec ]] && where="the cluster in a box $(basename "$spec")"
described=$mode
[[ $mode == ssp ]] && described="ssp, staleness $staleness"
{
  echo "Command: \`$command_line\` ($model, $described, $samples samples, momentum $momentum, on $where$([[ -n $spec ]] || echo ", $servers server(s), $trainers trainers"); plain = without, ahead = with --forward-during-pull)"
  echo
  echo "$table"
  echo
  /usr/bin/python3 - "${cases[@]}" <<'PY'
import json, statistics, sys
staleness = {}
for run in sys.argv[1:]:
    case, _, path = run.partition("=")
    staleness.setdefault(case, []).append(json.load(open(path))["staleness_mean"])
print("Mean staleness of the applied pushes, median over the runs: " +
      ", ".join(f"{case} {statistics.median(values):.2f}" for case, values in staleness.items()) + ".")
PY
} >"$out/forward_during_pull.md"
cat "$out/forward_during_pull.md"
