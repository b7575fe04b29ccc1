#!/usr/bin/env bash
# Which consistency mode to pick when one machine is slower than another: runs the same job —
# the demo job (configs/fashion_mnist.yaml: FashionCNN on Fashion-MNIST, SGD lr 0.05 momentum
# 0.9, global batch 64) on one server and two trainers, one of them made four times slower
# (--slowdown 1,4), one compute thread each — in every mode, evaluating on the whole test set at
# a fixed interval of samples, and reports time to accuracy for each.
#
#   benchmarks/modes.sh [--quick] [--epochs N] [--eval-interval N] [--out DIR]
#                       [--build-dir DIR] [--no-build]
#
# Cases, each one scripts/launch_local.sh command: sync; sync with --balance speed; async; async
# with the staleness-aware learning rate; ssp with staleness 1, 3 and 8; the fast trainer alone.
# Writes DIR/modes.md (the table, with the command and the machine), DIR/modes.json (figures and
# accuracy curves per case) and DIR/modes.png (test accuracy against wall time), and keeps each
# case's logs and summary in DIR/modes-runs/. DIR defaults to benchmarks/results.
#   --quick            every case on the mlp and 40,000 samples, to check that it works (~1 min)
#   --epochs N         epochs per case (default 1; 2 take about half an hour)
#   --eval-interval N  samples trained (over both trainers) between evaluations (default 5000)
#   --build-dir DIR    where the binaries are built (default build); built with
#                      scripts/build.sh --binaries-only unless --no-build
# A full run takes about 15 minutes on 2 cores. A case that fails is named with the end of its
# log, marked failed in the table, and the others still run; the script then exits 1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/benchmarks/results"
build_dir="$root/build"
build=1
quick=0
epochs=1
interval=5000
command_line="benchmarks/modes.sh${*:+ $*}"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "modes.sh: $1 needs a value" >&2; exit 2; }; }
while (($#)); do
  case $1 in
    --quick) quick=1; shift ;;
    --epochs) need_value "$@"; epochs=$2; shift 2 ;;
    --eval-interval) need_value "$@"; interval=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --build-dir) need_value "$@"; build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "modes.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# The cases run from the repository root (so the job line in the report can be pasted there);
# paths given relative to where modes.sh was started keep their meaning.
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ $build_dir = /* ]] || build_dir="$PWD/$build_dir"
cd "$root"

job=(--config configs/fashion_mnist.yaml --servers 1 --epochs "$epochs")
if ((quick)); then
  job+=(--model mlp --max-train-samples 40000)
else
  job+=(--model cnn)
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

if ((build)); then scripts/build.sh --build-dir "$build_dir" --binaries-only; fi
runs="$out/modes-runs"
rm -rf "$runs"
mkdir -p "$runs"

failed=()
results=()   # mode|flags|summary path; an empty path marks a case that failed
start=$SECONDS
for i in "${!cases[@]}"; do
  name=${cases[i]%%|*}
  read -r -a flags <<<"${cases[i]#*|}"
  dir="$runs/case-$((i + 1))"
  echo "modes.sh: [$((i + 1))/${#cases[@]}] $name"
  if scripts/launch_local.sh "${job[@]}" "${flags[@]}" --progress none --summary "$dir/summary.json" \
      --run-dir "$dir" --build-dir "$build_dir" --no-build > "$dir.out" 2>&1; then
    results+=("$name|${flags[*]}|$dir/summary.json")
  else
    failed+=("$name")
    results+=("$name|${flags[*]}|")
    echo "modes.sh: case '$name' failed; the end of its output (logs in $dir, output in $dir.out):" >&2
    tail -n 20 "$dir.out" | sed 's/^/  | /' >&2
  fi
done

# The report exits 1 when a summary is missing or says the job failed.
report_status=0
/usr/bin/python3 benchmarks/modes_report.py --out "$out" --command "$command_line" \
  --job "scripts/launch_local.sh ${job[*]}" --seconds $((SECONDS - start)) "${results[@]}" ||
  report_status=$?
if ((${#failed[@]} > 0 || report_status != 0)); then
  ((${#failed[@]} == 0)) || echo "modes.sh: failed: $(printf "'%s' " "${failed[@]}")" >&2
  exit 1
fi
