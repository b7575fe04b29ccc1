#!/usr/bin/env bash
# Which consistency mode to pick when one machine is slower than another: runs the same job —
# FashionCNN on Fashion-MNIST, one server and two trainers, one of them made four times slower
# (--slowdown 1,4), one compute thread each — in every mode, evaluating on the whole test set at
# a fixed interval of samples, and reports time to accuracy for each.
#
#   benchmarks/modes.sh [--quick] [--epochs N] [--eval-interval N] [--out DIR]
#                       [--build-dir DIR] [--no-build]
#
# Cases: sync; sync with balance: speed; async; async with the staleness-aware learning rate;
# ssp with staleness 1, 3 and 8; the fast trainer alone.
# Writes DIR/modes.md (the table, with the command and the machine), DIR/modes.json and
# DIR/modes.png (test accuracy against wall time), and keeps each case's logs and summary in
# DIR/modes-runs/. DIR defaults to benchmarks/results.
#   --quick            the mlp on 30,000 samples, for a check that the script works (~1 min)
#   --epochs N         epochs per case (default 1)
#   --eval-interval N  samples between evaluations (default 7500; quick 5000)
# A full run takes about 15 minutes on 2 cores. A case that fails is reported, marked failed in
# the table, and the others still run; the script then exits 1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/benchmarks/results"
build_dir="$root/build"
build=1
quick=0
epochs=1
interval=""
command_line="benchmarks/modes.sh $*"

need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "modes.sh: $1 needs a value" >&2; exit 2; }; }
while (($#)); do
  case $1 in
    --quick) quick=1; shift ;;
    --epochs) need_value "$@"; epochs=$2; shift 2 ;;
    --eval-interval) need_value "$@"; interval=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --build-dir) need_value "$@"; build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "modes.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done

job=(--config "$root/benchmarks/modes.yaml" --epochs "$epochs")
if ((quick)); then
  job+=(--model mlp --max-train-samples 30000 --lr 0.02)
  interval=${interval:-5000}
else
  job+=(--model cnn)
  interval=${interval:-7500}
fi
job+=(--eval-interval-samples "$interval")

cases=(
  "sync|--mode sync --trainers 2 --slowdown 1,4"
  "sync, balance speed|--mode sync --balance speed --trainers 2 --slowdown 1,4"
  "async|--mode async --trainers 2 --slowdown 1,4"
  "async, staleness-aware lr|--mode async --staleness-aware-lr true --trainers 2 --slowdown 1,4"
  "ssp s=1|--mode ssp --staleness 1 --trainers 2 --slowdown 1,4"
  "ssp s=3|--mode ssp --staleness 3 --trainers 2 --slowdown 1,4"
  "ssp s=8|--mode ssp --staleness 8 --trainers 2 --slowdown 1,4"
  "fast trainer alone|--mode sync --trainers 1 --slowdown 1"
)

if ((build)); then "$root/scripts/build.sh" --build-dir "$build_dir" --binaries-only; fi
runs="$out/modes-runs"
rm -rf "$runs"
mkdir -p "$runs"

failed=0
results=()   # name|summary path, or name| for a failed case
start=$SECONDS
for i in "${!cases[@]}"; do
  name=${cases[i]%%|*}
  read -r -a flags <<<"${cases[i]#*|}"
  dir="$runs/case-$i"
  echo "modes.sh: [$((i + 1))/${#cases[@]}] $name"
  if "$root/scripts/launch_local.sh" --no-build --build-dir "$build_dir" "${job[@]}" "${flags[@]}" \
      --progress none --summary "$dir/summary.json" --run-dir "$dir" > "$dir.out" 2>&1; then
    results+=("$name|$dir/summary.json")
  else
    failed=1
    results+=("$name|")
    echo "modes.sh: case '$name' failed; the end of its output (all logs in $dir):" >&2
    tail -n 15 "$dir.out" >&2
  fi
done

/usr/bin/python3 "$root/benchmarks/modes_report.py" --out "$out" --command "$command_line" \
  --job "${job[*]}" --seconds $((SECONDS - start)) "${results[@]}"
exit "$failed"
