#!/usr/bin/env bash
# Does the slow machine help? Time to accuracy of every consistency mode, and of mode auto,
# against the fast machine alone, on simulated home clusters (scripts/sim_cluster.sh, root) or,
# with --local, on this host with a sleeping trainer (--slowdown).
#
#   benchmarks/modes.sh [--local] [--quick] [--scenarios A,B] [--seeds N] [--model mlp|cnn|charlm]
#                       [--epochs N] [--eval-interval N] [--target X] [--out DIR]
#                       [--cases A,B] [--build-dir DIR] [--no-build]
#
# Scenarios (benchmarks/clusters/NAME.yaml): equal (two machines of 0.9 cores), home (1.2 : 0.3
# cores, 1 : 0.25), home-slowlink (home with the slow machine on 100 Mbit), stalls (equal, the
# laptop frozen 4 s of every 15 s) and, when named, stalls-remote (stalls with the server on a third
# machine, so that both trainers keep one pace between stalls) and stalls-short (stalls-remote's
# machines, the laptop frozen 0.6 s of every 5 s: a stall an ssp bound covers) and home-gpu (home
# with its links scaled down by a GPU's speed-up over this host's CPU, 30: the compute-to-transfer
# ratio of an NVIDIA desktop and a Mac on Wi-Fi; see the spec). With --local only
# equal (--slowdown 1,1) and home (1,4) exist. Cases in each scenario: the fast machine alone and the slow one alone
# (the baselines: their samples/s added up is the sum the two could reach), fast alone plain (the
# fast machine alone without hetps: a plain LibTorch loop of the same model, optimizer, batch,
# seed and threads under its CPU budget, benchmarks/plain_train.cc), sync, sync balanced by
# speed, async, async whole (async_batch: whole with the staleness-aware rate), async local (async
# whole with 8 local steps on every machine but the fast one: hetps-trainer --local-steps), ssp
# (bound 3; in the stalls scenarios also 16), auto (whose async and ssp phases take whole batches
# with the staleness-aware rate unless told otherwise), auto share (auto told async_batch: share,
# staleness_aware_lr: false, as async), fast alone diloco (the fast machine alone in mode diloco:
# no transfer per step), diloco (its defaults: rounds the servers choose, overlapped, plain
# averaging), diloco no overlap (each round waits for its weights), diloco nesterov (outer
# Nesterov SGD, lr 0.7, momentum 0.9), diloco int8 (int8 pseudo-gradients with error feedback,
# bf16 weights: 3 of float32's 8 bytes per parameter and round) and diloco async (asynchronous
# rounds: each applied alone on arrival; plain averaging outside).
# Each case runs --seeds times (different --seed: the initial weights and the data order),
# interleaved: seed by seed, scenario by scenario, case by case, so that the host's drift falls on
# every case alike.
# Job: benchmarks/modes.yaml (SGD lr 0.05 momentum 0.9, global batch 64; --model charlm:
# benchmarks/modes_charlm.yaml, Adam lr 0.002, 32 windows of 64 characters) with the model, an
# evaluation on the test set every --eval-interval samples (default 2000; evaluated on copies of
# the weights after training, so they cost no training time).
# Writes DIR/modes.md (per scenario: median and range over the seeds of the seconds to --target,
# samples/s and final accuracy, and the mean accuracy at equal training time in windows of 0.5-1,
# 1-1.5 and 1.5-2x the fast machine alone's time to --target), DIR/modes.json (per scenario
# fast_alone_seconds_to_target (the best of the fast alone cases, named by fast_alone_best_case),
# best_mode (the quickest two-machine case), best_seconds_to_target, auto_seconds_to_target,
# speedup_vs_fast_alone, each a median; per case accuracy_at_equal_time; every run's figures and
# curve) and DIR/modes.png (median accuracy against time with the range as a band), and keeps
# each run's logs and summary in DIR/modes-runs/.
#   --quick            the home scenario, 10,000 samples (charlm: 2,000 windows), one seed, the
#                      cases fast alone, fast alone plain, slow alone, sync balanced, async, auto,
#                      fast alone diloco and diloco (a few minutes)
#   --seeds N          runs per case (default 3)
#   --model mlp|cnn|charlm  default mlp (target 0.85); cnn's target is 0.90, which the fast machine
#                      alone reaches in 4-6 epochs (below it the curves are too flat to rank);
#                      charlm: a character-level GPT of Python's sources (benchmarks/modes_charlm.yaml,
#                      its corpus tokenized into data/charlm first when missing), timed to a
#                      validation loss, without the fast alone plain case (the plain loop trains
#                      Fashion-MNIST only)
#   --epochs N         default 2 for mlp (it reaches 0.85 around the end of its first epoch), 6 for
#                      cnn; charlm: 1 epoch of --windows windows
#   --windows N        charlm: windows of 64 characters trained on (default 40,000)
#   --eval-interval N  default 2000 samples for mlp, 6000 for cnn, 2000 windows for charlm
#   --target X         the accuracy timed (default 0.85 for mlp, 0.90 for cnn); charlm: the
#                      validation loss timed (default 2.0 nats per character)
#   --cases A,B        only these cases, by name (e.g. "fast alone,sync balanced,auto")
#   --out DIR          where the report goes (default benchmarks/results; charlm:
#                      benchmarks/results/charlm)
#   --build-dir DIR    where the binaries are (default build); built with scripts/build.sh
#                      --binaries-only unless --no-build
# A case that fails is named with the end of its output, marked failed, and the others still
# run; the script then exits 1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=""   # default benchmarks/results (--model charlm: benchmarks/results/charlm)
build_dir="$root/build"
build=1
quick=0
local_form=0
seeds=3
model=mlp
epochs=""
interval=""
target=""
windows=40000
scenarios=""
only_cases=""
command_line="benchmarks/modes.sh${*:+ $*}"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "modes.sh: $1 needs a value" >&2; exit 2; }; }
while (($#)); do
  case $1 in
    --local) local_form=1; shift ;;
    --quick) quick=1; shift ;;
    --scenarios) need_value "$@"; scenarios=$2; shift 2 ;;
    --seeds) need_value "$@"; seeds=$2; shift 2 ;;
    --model) need_value "$@"; model=$2; shift 2 ;;
    --epochs) need_value "$@"; epochs=$2; shift 2 ;;
    --eval-interval) need_value "$@"; interval=$2; shift 2 ;;
    --target) need_value "$@"; target=$2; shift 2 ;;
    --windows) need_value "$@"; windows=$2; shift 2 ;;
    --cases) need_value "$@"; only_cases=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --build-dir) need_value "$@"; build_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "modes.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $model == mlp || $model == cnn || $model == charlm ]] ||
  { echo "modes.sh: --model is mlp, cnn or charlm, not '$model'" >&2; exit 2; }
[[ $seeds =~ ^[1-9][0-9]*$ ]] || { echo "modes.sh: --seeds must be a positive number, not '$seeds'" >&2; exit 2; }
[[ $windows =~ ^[1-9][0-9]*$ ]] || { echo "modes.sh: --windows must be a positive number, not '$windows'" >&2; exit 2; }
case $model in
  mlp) defaults=(0.85 2 2000) ;;
  cnn) defaults=(0.90 6 6000) ;;
  charlm) defaults=(2.0 1 2000) ;;
esac
[[ -n $target ]] || target=${defaults[0]}
[[ -n $epochs ]] || epochs=${defaults[1]}
[[ -n $interval ]] || interval=${defaults[2]}
metric=$([[ $model == charlm ]] && echo loss || echo accuracy)

if ((local_form)); then
  known=(equal home)
  extra=()
else
  known=(equal home home-slowlink stalls)
  extra=(stalls-remote stalls-short home-gpu)   # run when named
fi
if ((quick)); then
  seeds=1
  [[ -n $scenarios ]] || scenarios=home
fi
[[ -n $scenarios ]] || scenarios=$(IFS=,; echo "${known[*]}")
IFS=, read -r -a chosen <<<"$scenarios"
known+=("${extra[@]}")
for s in "${chosen[@]}"; do
  [[ " ${known[*]} " == *" $s "* ]] ||
    { echo "modes.sh: scenario '$s' is not one of: ${known[*]}$( ((local_form)) && echo ' (with --local)')" >&2; exit 2; }
done

if ((!local_form)); then
  source "$root/scripts/lib/sim_machines.sh"
  reason=$(sim_unavailable)
  [[ -z $reason ]] || { echo "modes.sh: the cluster in a box is unavailable: $reason (or use --local)" >&2; exit 2; }
fi

[[ -n $out ]] || out="$root/benchmarks/results$([[ $model == charlm ]] && echo /charlm)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
[[ $build_dir = /* ]] || build_dir="$PWD/$build_dir"
cd "$root"

if [[ $model == charlm ]]; then
  # The corpus of configs/charlm.yaml, made once.
  data="$root/data/charlm"
  if [[ ! -s $data/vocab.json ]]; then
    ((build)) && scripts/build.sh --build-dir "$build_dir" --target hetps-data
    "$build_dir/bin/hetps-data" tokenize --chars /usr/lib/python3.11 --include '*.py' --val-percent 1 --out "$data"
  fi
  ((quick)) && windows=2000
  job=(--config benchmarks/modes_charlm.yaml --epochs "$epochs" --max-train-samples "$windows"
       --eval-interval-samples "$interval" --data-dir "$data")
else
  job=(--config benchmarks/modes.yaml --model "$model" --epochs "$epochs" --eval-interval-samples "$interval")
  ((quick)) && job+=(--max-train-samples 10000)
fi

# The cases of a scenario: "name|flags". The baselines' names are fixed (the report finds them).
cases_of() {
  local scenario=$1
  local fast slow
  if ((local_form)); then
    fast="--trainers 1 --slowdown 1"
    slow="--trainers 1 --slowdown $([[ $scenario == home ]] && echo 4 || echo 1)"
  else
    local spec=benchmarks/clusters/$scenario.yaml
    # The first machine with a trainer is the fast one; machines without a trainer (a server of
    # its own) stay in its run.
    local trainers others slow_machines
    trainers=$(awk -F: '/^[a-z0-9-]+:/ && /trainer/ { print $1 }' "$spec" | tr '\n' ' ')
    others=$(awk -F: '/^[a-z0-9-]+:/ && !/trainer/ { printf ",%s", $1 }' "$spec")
    read -r fast_machine slow_machines <<<"$trainers"
    fast="--only $fast_machine$others"
    slow="--slow-alone"   # the spec less the fast machine's trainer (see slow_spec)
  fi
  echo "fast alone|--mode sync $fast"
  [[ $model == charlm ]] || echo "fast alone plain|--plain"
  echo "slow alone|--mode sync $slow"
  ((quick)) || echo "sync|--mode sync"
  echo "sync balanced|--mode sync --balance speed"
  echo "async|--mode async"
  ((quick)) || echo "async whole|--mode async --async-batch whole --staleness-aware-lr true"
  if ((!quick)); then
    local steps=1,8   # --local: launch_local.sh's trainers, the second the slow one
    if ((!local_form)); then
      steps=$(for m in $slow_machines; do printf '%s=8,' "$m"; done)
      steps=${steps%,}
    fi
    echo "async local|--mode async --async-batch whole --staleness-aware-lr true --local-steps $steps"
  fi
  ((quick)) || echo "ssp s=3|--mode ssp --staleness 3"
  if ((!quick)) && [[ $scenario == stalls* ]]; then echo "ssp s=16|--mode ssp --staleness 16"; fi
  echo "auto|--mode auto"
  ((quick)) || echo "auto share|--mode auto --async-batch share --staleness-aware-lr false"
  echo "fast alone diloco|--mode diloco $fast"
  echo "diloco|--mode diloco"
  if ((!quick)); then
    echo "diloco no overlap|--mode diloco --overlap-rounds false"
    echo "diloco nesterov|--mode diloco --outer-lr 0.7 --outer-momentum 0.9"
    echo "diloco int8|--mode diloco --pseudo-gradient-dtype int8 --wire-dtype bf16"
    echo "diloco async|--mode diloco --async-rounds true"
  fi
}

# cases_of, less the cases --cases leaves out; a name --cases gives that no scenario has is an
# error.
chosen_cases_of() {
  if [[ -z $only_cases ]]; then cases_of "$1"; return; fi
  local line
  cases_of "$1" | while IFS= read -r line; do
    [[ ",$only_cases," == *",${line%%|*},"* ]] && echo "$line"
  done
}

# The slow machine alone still needs the server and scheduler where the spec puts them: the
# scenario's spec with the trainer role of its first machine with one removed (and the machine,
# when that was its only role).
slow_spec() {
  /usr/bin/python3 - "benchmarks/clusters/$1.yaml" "$2" <<'PY'
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
first = next(m for m in spec if "trainer" in spec[m]["roles"])
spec[first]["roles"] = [r for r in spec[first]["roles"] if r != "trainer"]
if not spec[first]["roles"]:
    del spec[first]
with open(sys.argv[2], "w") as f:
    f.write("# " + sys.argv[1] + " without the trainer of " + first + " (modes.sh's slow-alone baseline)\n")
    yaml.safe_dump(spec, f, default_flow_style=None, sort_keys=False)
PY
}

# The fast machine alone without hetps (the case fast alone plain): benchmarks/plain_train.cc with
# the job's model, epochs, evaluations, seed and modes.yaml's optimizer and batch, under the fast
# machine's CPU budget and threads (a loop sends nothing, so no link), its cgroups removed on
# every exit.
run_plain() {  # SCENARIO SEED DIR
  local flags
  flags=$(/usr/bin/python3 - benchmarks/modes.yaml <<'PY'
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
o = job["optimizer"]
assert o["name"] == "sgd", "modes.yaml: the plain loop runs SGD"
print(f"--lr {o['lr']} --momentum {o.get('momentum', 0)} --batch {job['global_batch_size']}")
PY
)
  local plain=("$build_dir/bin/hetps-bench-plain-train" $flags --model "$model" --epochs "$epochs"
               --eval-interval-samples "$interval" --seed "$2" --summary "$3/summary.json")
  ((quick)) && plain+=(--max-train-samples 10000)
  mkdir -p "$3"
  if ((local_form)); then "${plain[@]}"; return; fi
  (
    local machine cpus threads
    read -r machine cpus threads < <(/usr/bin/python3 - "benchmarks/clusters/$1.yaml" <<'PY'
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
name = next(m for m in spec if "trainer" in spec[m]["roles"])
print(name, spec[name]["cpus"], spec[name].get("threads", 1))
PY
)
    sim_prefix=hetps-sim-$BASHPID
    trap 'sim_teardown "$sim_prefix"' EXIT
    sim_cgroups_up
    sim_cpu_budget_up "$machine" "$cpus"
    (join_machine_cgroups "$machine" && exec "${plain[@]}" --threads "$threads")
  )
}

if ((build)); then scripts/build.sh --build-dir "$build_dir" --binaries-only --target hetps-bench-plain-train; fi
runs="$out/modes-runs"
rm -rf "$runs"
mkdir -p "$runs"
manifest="$runs/manifest.tsv"   # scenario, case, seed, flags, summary ("" when the run failed)
: > "$manifest"

failed=()
start=$SECONDS
n=0
for seed in $(seq 1 "$seeds"); do
  for scenario in "${chosen[@]}"; do
    while IFS='|' read -r name flags; do
      n=$((n + 1))
      read -r -a case_flags <<<"$flags"
      dir="$runs/$scenario/$(echo "$name" | tr ' =' '-_')/seed-$seed"
      mkdir -p "$(dirname "$dir")"
      echo "modes.sh: [$n] $scenario, $name, seed $seed"
      if [[ $flags == --plain ]]; then
        launcher=()
      elif ((local_form)); then
        launcher=(scripts/launch_local.sh --servers 1)
        [[ " ${case_flags[*]} " == *" --trainers "* ]] || launcher+=(--trainers 2 --slowdown "$([[ $scenario == home ]] && echo 1,4 || echo 1,1)")
      elif [[ ${case_flags[*]} == *--slow-alone* ]]; then
        slow_spec "$scenario" "$runs/$scenario-slow-alone.yaml"
        launcher=(scripts/sim_cluster.sh --spec "$runs/$scenario-slow-alone.yaml")
        kept=()
        for flag in "${case_flags[@]}"; do [[ $flag == --slow-alone ]] || kept+=("$flag"); done
        case_flags=("${kept[@]}")
      else
        launcher=(scripts/sim_cluster.sh --spec "benchmarks/clusters/$scenario.yaml")
      fi
      if ((${#launcher[@]} == 0)); then
        run=(run_plain "$scenario" "$seed" "$dir")
      else
        run=("${launcher[@]}" "${job[@]}" "${case_flags[@]}" --seed "$seed" --progress none --no-checkpoints
             --summary "$dir/summary.json" --run-dir "$dir" --build-dir "$build_dir" --no-build)
      fi
      if "${run[@]}" > "$dir.out" 2>&1; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$scenario" "$name" "$seed" "$flags" "$dir/summary.json" >> "$manifest"
      else
        failed+=("$scenario/$name/seed $seed")
        printf '%s\t%s\t%s\t%s\t%s\n' "$scenario" "$name" "$seed" "$flags" "" >> "$manifest"
        echo "modes.sh: '$scenario, $name, seed $seed' failed; the end of its output (logs in $dir):" >&2
        tail -n 20 "$dir.out" | sed 's/^/  | /' >&2
      fi
    done < <(chosen_cases_of "$scenario")
  done
done

where=$( ((local_form)) && echo "this host (launch_local.sh, --slowdown)" || echo "the cluster in a box (sim_cluster.sh)")
report_status=0
/usr/bin/python3 benchmarks/modes_report.py --out "$out" --command "$command_line" --where "$where" \
  --job "${job[*]}" --target "$target" --metric "$metric" --seconds $((SECONDS - start)) "$manifest" || report_status=$?
if ((${#failed[@]} > 0 || report_status != 0)); then
  ((${#failed[@]} == 0)) || echo "modes.sh: failed: $(printf "'%s' " "${failed[@]}")" >&2
  exit 1
fi
