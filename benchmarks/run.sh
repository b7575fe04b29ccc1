#!/usr/bin/env bash
# Runs one data-plane benchmark from the repository root after the Release build, prints its
# markdown table and writes its figures to benchmarks/results/NAME.json.
#
#   benchmarks/run.sh NAME [--quick] [--build-dir DIR] [--out DIR] [--device DEVICE]
#
#   pushpull  one trainer against 1 and 2 servers, models of 4, 64 and 256 MiB: round trips and
#             GB/s against a bare ZeroMQ echo of the same frames and memcpy (ratio: hetps/echo)
#   apply     every optimizer over 64 MiB, 1 and 2 threads: GB/s against the memory-bandwidth
#             bound of a copy and against torch::optim (ratio: fraction of the bound)
#   overhead  the FashionCNN through one trainer and one server in sync mode against the plain
#             single-process LibTorch loop, three alternating pairs (ratio: the median of the
#             pairs' hetps samples/s over the loop's)
#   rtt       one small push-pull at a time (1 trainer, 1 server, sync; models of 1 KiB, 64 KiB
#             and the MLP's 2.25 MiB), each round trip timed, against a bare ZeroMQ echo of the
#             same messages, three alternating blocks, with the threads spread over the cores and
#             all on one core (median_us, one_core_median_us: the 1 KiB model's medians)
#   step      hetps's trainer step (StepRunner against a server in the same process over inproc)
#             against the plain loop in C++ and in Python (Debian's python3-torch), CNN and MLP,
#             1 and 2 threads, three runs of five alternating blocks (ratio: hetps over the
#             faster plain loop, the median of the runs), with where each step's time goes
#   scaling   jobs of 1, 2 and 4 trainers (64 samples each per step) against 1 and 2 servers,
#             CNN and MLP, sync and async, through launch_local.sh: samples/s, each trainer's
#             step split (compute, hand-off, wire), bytes per sample on the wire (the loopback
#             of a network namespace of its own, when it can make one); then the cost model of
#             benchmarks/scaling_model.py fitted to them, with its predictions (ratio: samples/s
#             over the trainers' count times the 1-trainer job's with as many servers)
#   torch     the two LibTorch builds side by side: the FashionCNN and the MLP training loop
#             (hetps-bench-local-loop, batch 64) on 1 and 2 threads under the system build
#             (--build-dir, default build) and the pip build (--pip-build-dir, default build-pip),
#             alternating, three pairs (ratio: the median of pip samples/s over system's)
# --steps N (scaling) steps per trainer in each job (default 100 for the CNN, 4x that for the MLP).
# --quick runs each with small sizes, to check that it works (a test does).
# --device (overhead, pushpull; default cpu) runs the trainer side on that device, e.g. cuda.
# The sync-vs-async benchmark is benchmarks/modes.sh.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
[[ $# -ge 1 ]] || { usage >&2; exit 2; }
case $1 in
  -h|--help) usage; exit 0 ;;
  pushpull|apply|overhead|rtt|scaling|step|torch) name=$1; shift ;;
  *) echo "run.sh: unknown benchmark '$1'; one of pushpull, apply, overhead, rtt, scaling, step, torch" >&2; exit 2 ;;
esac
build_dir="$root/build"
pip_build_dir="$root/build-pip"
out="$root/benchmarks/results"
device=cpu
quick=0
steps_flag=""
while (($#)); do
  case $1 in
    --quick) quick=1; shift ;;
    --build-dir) [[ $# -ge 2 ]] || { echo "run.sh: --build-dir needs a value" >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --out) [[ $# -ge 2 ]] || { echo "run.sh: --out needs a value" >&2; exit 2; }; out=$2; shift 2 ;;
    --pip-build-dir) [[ $# -ge 2 ]] || { echo "run.sh: --pip-build-dir needs a value" >&2; exit 2; }; pip_build_dir=$2; shift 2 ;;
    --steps) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --steps needs a positive count" >&2; exit 2; }; steps_flag=$2; shift 2 ;;
    --device) [[ $# -ge 2 ]] || { echo "run.sh: --device needs a value" >&2; exit 2; }; device=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin="$build_dir/bin"
mkdir -p "$out"
json="$out/$name.json"
need() {
  [[ -x $bin/$1 ]] || { echo "run.sh: $bin/$1 is missing; build first (scripts/build.sh)" >&2; exit 1; }
}
echo "Command: benchmarks/run.sh $name$( ((quick)) && echo ' --quick')$([[ -n $steps_flag ]] && echo " --steps $steps_flag")$([[ $device != cpu ]] && echo " --device $device")"
echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo

case $name in
  pushpull)
    need hetps-bench-pushpull
    if ((quick)); then
      "$bin/hetps-bench-pushpull" --mib 1,4 --servers 1,2 --seconds 0.3 --device "$device" --json "$json"
    else
      "$bin/hetps-bench-pushpull" --mib 4,64,256 --servers 1,2 --seconds 3 --device "$device" --json "$json"
    fi
    ;;
  rtt)
    need hetps-bench-rtt
    if ((quick)); then
      "$bin/hetps-bench-rtt" --bytes 1024,65536 --rounds 200 --pairs 1 --json "$json"
    else
      "$bin/hetps-bench-rtt" --bytes 1024,65536,2359296 --rounds 2000 --pairs 3 --json "$json"
    fi
    ;;
  step)
    need hetps-bench-step
    # blocks: short alternating blocks of hetps and the C++ loop within one process, so that the
    # host's drift (+-25% over seconds here) falls on both alike; a run's ratio to the C++ loop is
    # the median of its blocks' ratios. The Python loop runs as many steps after each run.
    if ((quick)); then models="cnn"; thread_counts="1"; steps=10; blocks=2; pairs=1
    else models="cnn mlp"; thread_counts="1 2"; steps=30; blocks=5; pairs=3; fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    for model in $models; do
      for threads in $thread_counts; do
        for ((pair = 1; pair <= pairs; pair++)); do
          "$bin/hetps-bench-step" --model "$model" --threads "$threads" --steps "$steps" --pairs "$blocks" \
            > "$work/$model-$threads-$pair.cpp.json"
          /usr/bin/python3 "$root/benchmarks/step_loop.py" --model "$model" --threads "$threads" \
            --steps $((steps * blocks)) --pairs 1 > "$work/$model-$threads-$pair.py.json"
        done
      done
    done
    /usr/bin/python3 - "$work" "$json" "$pairs" $models -- $thread_counts <<'PY'
import glob, json, statistics, sys
work, out, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rest = sys.argv[4:]
models, threads = rest[:rest.index("--")], rest[rest.index("--") + 1:]
cases = []
print("| model | threads | hetps step samples/s | plain C++ | plain Python | hetps / faster plain (range) |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for model in models:
    for t in threads:
        runs = []
        for pair in range(1, pairs + 1):
            cpp = json.load(open(f"{work}/{model}-{t}-{pair}.cpp.json"))
            py = json.load(open(f"{work}/{model}-{t}-{pair}.py.json"))
            # Against the C++ loop, the median of the blocks' ratios (alternated in one process);
            # against Python, the run's samples/s over the Python loop's run right after it.
            ratio = min(cpp["ratio_vs_plain"], cpp["hetps_samples_per_second"] / py["samples_per_second"])
            runs.append({"hetps": cpp["hetps_samples_per_second"], "plain_cpp": cpp["plain_samples_per_second"],
                         "plain_python": py["samples_per_second"], "ratio": ratio,
                         "ratio_vs_cpp_blocks": [b["ratio"] for b in cpp["pairs"]],
                         "hetps_phases_us": cpp["hetps_phases_us"], "plain_cpp_phases_us": cpp["plain_phases_us"],
                         "plain_python_phases_us": py["phases_us"]})
        med = lambda key: statistics.median(r[key] for r in runs)
        case = {"model": model, "threads": int(t), "batch": 64, "pairs": runs,
                "hetps_samples_per_second": med("hetps"), "plain_cpp_samples_per_second": med("plain_cpp"),
                "plain_python_samples_per_second": med("plain_python"), "ratio": med("ratio"),
                "ratio_min": min(r["ratio"] for r in runs), "ratio_max": max(r["ratio"] for r in runs)}
        cases.append(case)
        print(f"| {model} | {t} | {case['hetps_samples_per_second']:.0f} | {case['plain_cpp_samples_per_second']:.0f} | "
              f"{case['plain_python_samples_per_second']:.0f} | {case['ratio']:.3f} "
              f"({case['ratio_min']:.3f}–{case['ratio_max']:.3f}) |")
print()
print("Microseconds per step (the last run):")
for case in cases:
    last = case["pairs"][-1]
    print(f"- {case['model']}, {case['threads']} thread(s): hetps {last['hetps_phases_us']}; "
          f"C++ {last['plain_cpp_phases_us']}; Python {last['plain_python_phases_us']}")
json.dump(cases, open(out, "w"), indent=1)
PY
    ;;
  apply)
    need hetps-bench-apply
    if ((quick)); then
      "$bin/hetps-bench-apply" --mib 4 --repeats 2 --threads 1,2 --json "$json"
    else
      "$bin/hetps-bench-apply" --mib 64 --repeats 5 --threads 1,2 --json "$json"
    fi
    ;;
  overhead)
    need hetps-bench-local-loop
    for program in hetps-scheduler hetps-server hetps-trainer; do need "$program"; done
    samples=$( ((quick)) && echo 1280 || echo 19200 )
    pairs=$( ((quick)) && echo 1 || echo 3 )
    steps=$((samples / 64))
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # The same model, optimizer, batch and thread count in both; the two alternate, and the
    # median of the pairs' ratios is reported, since a shared machine's speed drifts between runs.
    for ((pair = 1; pair <= pairs; pair++)); do
      "$bin/hetps-bench-local-loop" --model cnn --batch 64 --steps "$steps" --threads 1 \
        --lr 0.05 --momentum 0.9 --eval-batch 250 --device "$device" > "$work/loop-$pair.json"
      "$root/scripts/launch_local.sh" --no-build --build-dir "$build_dir" --device "$device" \
        --config "$root/configs/fashion_mnist.yaml" --servers 1 --trainers 1 --mode sync --model cnn \
        --max-train-samples "$samples" --progress none --summary "$work/run-$pair.json" \
        --run-dir "$work/run-$pair" > "$work/launch.out" 2>&1 || {
        echo "run.sh: the hetps job failed:" >&2; tail -n 20 "$work/launch.out" >&2; exit 1; }
    done
    /usr/bin/python3 - "$work" "$pairs" "$json" "$samples" <<'PY'
import json, statistics, sys
work, pairs, samples = sys.argv[1], int(sys.argv[2]), int(sys.argv[4])
runs = []
for pair in range(1, pairs + 1):
    hetps = json.load(open(f"{work}/run-{pair}.json"))["samples_per_second"]
    base = json.load(open(f"{work}/loop-{pair}.json"))["train_samples_per_second"]
    runs.append({"hetps_samples_per_second": hetps, "local_loop_samples_per_second": base,
                 "ratio": hetps / base})
case = {"model": "cnn", "batch": 64, "threads": 1, "optimizer": "sgd lr 0.05 momentum 0.9",
        "samples": samples, "pairs": runs,
        "hetps_samples_per_second": statistics.median(r["hetps_samples_per_second"] for r in runs),
        "local_loop_samples_per_second": statistics.median(r["local_loop_samples_per_second"] for r in runs),
        "ratio": statistics.median(r["ratio"] for r in runs)}
print("| model | batch | threads | samples | hetps samples/s (1 trainer, 1 server, sync) | "
      "single-process loop samples/s | hetps / loop |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in runs:
    print(f"| cnn | 64 | 1 | {samples} | {r['hetps_samples_per_second']:.0f} | "
          f"{r['local_loop_samples_per_second']:.0f} | {r['ratio']:.2f} |")
if pairs > 1:
    print(f"| median of {pairs} pairs | | | | {case['hetps_samples_per_second']:.0f} | "
          f"{case['local_loop_samples_per_second']:.0f} | {case['ratio']:.2f} |")
json.dump([case], open(sys.argv[3], "w"), indent=2)
PY
    ;;
  scaling)
    for program in hetps-scheduler hetps-server hetps-trainer hetps-bench-local-loop; do need "$program"; done
    if ((quick)); then models="mlp"; trainer_counts="1 2"; cnn_steps=10; mlp_steps=20
    else models="cnn mlp"; trainer_counts="1 2 4"; cnn_steps=${steps_flag:-100}; mlp_steps=$((4 * ${steps_flag:-100})); fi
    modes="sync async"; server_counts="1 2"; batch=64
    work=$(mktemp -d)
    # Each job runs in a network namespace of its own when one can be made (root), so that its
    # loopback's byte counter counts its traffic alone (TCP/IP headers included); otherwise on
    # the host's loopback, and bytes per sample are then only the payload's (from the model).
    ns=hetps-scaling-$$
    netns=()
    trap 'rm -rf "$work"; ((${#netns[@]})) && ip netns del "$ns" 2>/dev/null; true' EXIT
    trap 'exit 130' INT TERM
    if ip netns add "$ns" 2>/dev/null; then
      netns=(ip netns exec "$ns")
      ip -n "$ns" link set lo up
    else
      echo "run.sh: no network namespace (not root?): bytes on the wire are not measured, only the payload's"
    fi
    lo_bytes() { ((${#netns[@]})) && "${netns[@]}" cat /sys/class/net/lo/statistics/tx_bytes || echo 0; }
    # The plain single-process loop (same model, batch, optimizer, 1 thread) alone and two of it at
    # once on the same cores, right before the 1-server 2-trainer job of each model and mode: the
    # baselines of that job (the two loops' evaluations may overlap the other's training, which
    # favours the baseline).
    plain_loops() {
      local loop=("$bin/hetps-bench-local-loop" --model "$1" --batch "$batch" --steps "$2" --threads 1
                  --lr 0.05 --momentum 0.9)
      "${loop[@]}" > "$3.alone.json"
      "${loop[@]}" > "$3.first.json" & local first=$!
      "${loop[@]}" > "$3.second.json" || { wait "$first"; return 1; }
      wait "$first"
    }
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    for model in $models; do
      steps=$cnn_steps; [[ $model == mlp ]] && steps=$mlp_steps
      for mode in $modes; do
        for servers in $server_counts; do
          for trainers in $trainer_counts; do
            case=$model-$mode-$servers-$trainers
            if ((servers == 1 && trainers == 2)); then
              plain_loops "$model" "$steps" "$work/$model-$mode-plain" || {
                echo "run.sh: the plain $model loop failed" >&2; exit 1; }
            fi
            before=$(lo_bytes)
            "${netns[@]}" "$root/scripts/launch_local.sh" --no-build --build-dir "$build_dir" --device "$device" \
              --config "$root/configs/fashion_mnist.yaml" --model "$model" --mode "$mode" \
              --servers "$servers" --trainers "$trainers" --global-batch-size $((batch * trainers)) \
              --max-train-samples $((batch * trainers * steps)) --no-checkpoints --progress none \
              --summary "$work/$case.json" --run-dir "$work/$case" > "$work/launch.out" 2>&1 || {
              echo "run.sh: the $case job failed:" >&2; tail -n 20 "$work/launch.out" >&2; exit 1; }
            echo $(($(lo_bytes) - before)) > "$work/$case.bytes"
            echo "run.sh: $case done"
          done
        done
      done
    done
    /usr/bin/python3 - "$work" "$json" "$batch" "$((${#netns[@]} ? 1 : 0))" "$load_before" \
      "$(cut -d' ' -f1-3 /proc/loadavg)" "$(lscpu | sed -n 's/^Model name: *//p')" "$(nproc)" \
      "$models" "$modes" "$server_counts" "$trainer_counts" <<'PY'
import glob, json, re, statistics, sys
work, out, batch, measured, load_before, load_after, cpu, cores = sys.argv[1:9]
models, modes, servers, trainers = (a.split() for a in sys.argv[9:13])
batch, measured, cores = int(batch), measured == "1", int(cores)
# The trainer's last line (StepRunner::Timings), and the scheduler's line on the model.
split = re.compile(r"step time: compute ([\d.]+) ms, device-to-host ([\d.]+) ms, wire ([\d.]+) ms, "
                   r"host-to-device ([\d.]+) ms per step \(batch ([\d.]+) ms, forward ([\d.]+) ms, "
                   r"backward ([\d.]+) ms, hand-off ([\d.]+) ms\)")
sizes = re.compile(r"model \w+ has \d+ tensors, (\d+) parameters in (\d+) partitions")
keys = ("compute", "device_to_host", "wire", "host_to_device", "batch", "forward", "backward", "hand_off")
cases = []
for model in models:
    for mode in modes:
        for s in map(int, servers):
            for t in map(int, trainers):
                name = f"{model}-{mode}-{s}-{t}"
                summary = json.load(open(f"{work}/{name}.json"))
                assert summary["status"] == "ok", f"{name}: {summary.get('error')}"
                found = sizes.search(open(f"{work}/{name}/scheduler.log").read())
                assert found, f"{name}: the scheduler's log names no model size"
                parameters, partitions = map(int, found.groups())
                splits = []
                for log in sorted(glob.glob(f"{work}/{name}/trainer-*.log")):
                    m = split.search(open(log).read())
                    assert m, f"{log}: no step time line"
                    splits.append(dict(zip(keys, map(float, m.groups()))))
                assert len(splits) == t, f"{name}: {len(splits)} trainer logs with a step time, expected {t}"
                steps = statistics.mean(d["steps"] for d in summary["trainer_details"])
                samples = sum(summary["samples"])
                step_ms = {k: statistics.mean(d[k] for d in splits) for k in keys}
                step_ms["step"] = 1e3 * summary["train_seconds"] / steps
                wire_bytes = int(open(f"{work}/{name}.bytes").read())
                cases.append({
                    "model": model, "mode": mode, "servers": s, "trainers": t, "batch_per_trainer": batch,
                    "parameters": parameters, "partitions": partitions, "samples": samples,
                    "steps_per_trainer": steps, "train_seconds": summary["train_seconds"],
                    "samples_per_second": summary["samples_per_second"], "step_ms": step_ms,
                    "wire_bytes": wire_bytes if measured else None,
                    "bytes_per_sample": wire_bytes / samples if measured else None,
                    "payload_bytes_per_sample": 2 * 4 * parameters / batch,
                    "staleness_p99": summary["staleness_p99"]})
for c in cases:
    one = next(o for o in cases if (o["model"], o["mode"], o["servers"], o["trainers"]) ==
               (c["model"], c["mode"], c["servers"], 1))
    c["ratio"] = c["samples_per_second"] / (c["trainers"] * one["samples_per_second"])
# The 1-server 2-trainer jobs against the plain loop measured right before each.
rate = lambda path: json.load(open(path))["train_samples_per_second"]
baselines = []
for c in cases:
    if (c["servers"], c["trainers"]) != (1, 2):
        continue
    base = f"{work}/{c['model']}-{c['mode']}-plain"
    alone, pair = rate(f"{base}.alone.json"), rate(f"{base}.first.json") + rate(f"{base}.second.json")
    baselines.append({"model": c["model"], "mode": c["mode"], "samples_per_second": c["samples_per_second"],
                      "plain_loop_samples_per_second": alone, "two_plain_loops_samples_per_second": pair,
                      "ratio_vs_twice_plain_loop": c["samples_per_second"] / (2 * alone),
                      "ratio_vs_two_plain_loops": c["samples_per_second"] / pair})
print(f"{cores} cores shared by the scheduler, the servers and the trainers of each job (load before "
      f"{load_before}, after {load_after}); ratio: samples/s over trainers x the 1-trainer job's.\n")
print("| model | mode | servers | trainers | samples/s | ratio | step ms | compute | hand-off | wire | "
      "bytes/sample (payload) |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for c in cases:
    m = c["step_ms"]
    wire = f"{c['bytes_per_sample']:.0f}" if c["bytes_per_sample"] is not None else "-"
    print(f"| {c['model']} | {c['mode']} | {c['servers']} | {c['trainers']} | {c['samples_per_second']:.0f} | "
          f"{c['ratio']:.2f} | {m['step']:.1f} | {m['compute']:.1f} | {m['hand_off']:.2f} | {m['wire']:.1f} | "
          f"{wire} ({c['payload_bytes_per_sample']:.0f}) |")
print("\n1 server and 2 trainers against the plain loop (1 thread) measured right before, alone and "
      "two at once:\n")
print("| model | mode | hetps samples/s | plain loop | two plain loops at once | hetps / (2 x plain) | "
      "hetps / two loops |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for b in baselines:
    print(f"| {b['model']} | {b['mode']} | {b['samples_per_second']:.0f} | {b['plain_loop_samples_per_second']:.0f} | "
          f"{b['two_plain_loops_samples_per_second']:.0f} | {b['ratio_vs_twice_plain_loop']:.2f} | "
          f"{b['ratio_vs_two_plain_loops']:.2f} |")
json.dump({"machine": cpu, "cores": cores, "cores_shared": True, "load_before": load_before,
           "load_after": load_after, "wire_measured": measured, "batch_per_trainer": batch, "cases": cases,
           "baselines": baselines},
          open(out, "w"), indent=1)
PY
    /usr/bin/python3 "$root/benchmarks/scaling_model.py" "$json"
    ;;
  torch)
    for dir in "$build_dir" "$pip_build_dir"; do
      [[ -x $dir/bin/hetps-bench-local-loop ]] || {
        echo "run.sh: $dir/bin/hetps-bench-local-loop is missing; build both (scripts/build.sh --torch" \
             "system --build-dir $build_dir; scripts/build.sh --torch pip --build-dir $pip_build_dir)" >&2
        exit 1; }
    done
    steps=$( ((quick)) && echo 5 || echo 150 )
    pairs=$( ((quick)) && echo 1 || echo 3 )
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # Both builds run in the same environment (the same allocator settings, GLIBC_TUNABLES
    # included when set), one after the other in each pair, so that drift hits both alike.
    for model in cnn mlp; do
      for threads in 1 2; do
        for ((pair = 1; pair <= pairs; pair++)); do
          for build in system pip; do
            dir=$build_dir; [[ $build == pip ]] && dir=$pip_build_dir
            "$dir/bin/hetps-bench-local-loop" --model "$model" --batch 64 --steps "$steps" \
              --threads "$threads" --eval-batch 250 > "$work/$model-$threads-$pair-$build.json"
          done
        done
      done
    done
    /usr/bin/python3 - "$work" "$pairs" "$json" "$steps" <<'PY'
import json, statistics, sys
work, pairs, out, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
cases = []
print("| model | threads | system samples/s | pip samples/s | pip / system (median, range) |")
print("| --- | ---: | ---: | ---: | ---: |")
for model in ("cnn", "mlp"):
    for threads in (1, 2):
        runs = []
        for pair in range(1, pairs + 1):
            r = {b: json.load(open(f"{work}/{model}-{threads}-{pair}-{b}.json")) for b in ("system", "pip")}
            runs.append({"system_samples_per_second": r["system"]["train_samples_per_second"],
                         "pip_samples_per_second": r["pip"]["train_samples_per_second"],
                         "system_libtorch": r["system"]["libtorch"], "pip_libtorch": r["pip"]["libtorch"]})
            runs[-1]["ratio"] = runs[-1]["pip_samples_per_second"] / runs[-1]["system_samples_per_second"]
        ratios = [r["ratio"] for r in runs]
        case = {"model": model, "threads": threads, "batch": 64, "steps": steps, "pairs": runs,
                "system_samples_per_second": statistics.median(r["system_samples_per_second"] for r in runs),
                "pip_samples_per_second": statistics.median(r["pip_samples_per_second"] for r in runs),
                "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
        cases.append(case)
        print(f"| {model} | {threads} | {case['system_samples_per_second']:.0f} | "
              f"{case['pip_samples_per_second']:.0f} | {case['ratio']:.2f} "
              f"({case['ratio_min']:.2f}-{case['ratio_max']:.2f}) |")
print(f"\nsystem: {cases[0]['pairs'][0]['system_libtorch']}; pip: {cases[0]['pairs'][0]['pip_libtorch']}")
json.dump(cases, open(out, "w"), indent=2)
PY
    ;;
esac
echo
echo "run.sh: figures in $json"
