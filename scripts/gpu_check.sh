#!/usr/bin/env bash
# The checks only a machine with an NVIDIA GPU can run, in one command: builds hetps against
# PyPI's LibTorch (--torch pip), runs the GPU tests, a FashionCNN job with 1 server and 2 trainers,
# one on cuda and one on the CPU (the heterogeneous case in one box), and the overhead and
# pushpull benchmarks on the GPU, and writes every figure to a JSON file: samples/s per trainer,
# each trainer's step time split into compute, device-to-host, wire and host-to-device, accuracy.
#   scripts/gpu_check.sh [--out FILE] [--build-dir DIR] [--no-build] [--quick] [--device cuda|cpu]
# --out        where the figures go (default gpu_check.json)
# --build-dir  the pip build (default build-pip; scripts/install-deps.sh --torch pip first)
# --no-build   use the build directory as it is (the programs must be built)
# --quick      small sizes, to check that the script works
# --device cpu runs every step with the CPU in place of the GPU (how a test exercises it here)
# On a machine without a CUDA GPU (and --device cuda, the default) it says so in one line and
# exits 0 without running anything.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=gpu_check.json
build_dir="$root/build-pip"
quick=0
build=1
device=cuda
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
need_value() { [[ $# -ge 2 && -n $2 ]] || { echo "gpu_check.sh: $1 needs a value" >&2; exit 2; }; }
while (($#)); do
  case $1 in
    --out) need_value "$@"; out=$2; shift 2 ;;
    --build-dir) need_value "$@"; build_dir=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-build) build=0; shift ;;
    --device) need_value "$@"; device=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_check.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $device == cuda || $device == cpu ]] || { echo "gpu_check.sh: --device is cuda or cpu" >&2; exit 2; }

if [[ $device == cuda ]] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
  echo "gpu_check.sh: no NVIDIA GPU on this machine (nvidia-smi lists none); nothing to check"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { echo; echo "gpu_check.sh: $*"; }

if ((!build)); then
  [[ -x $build_dir/bin/hetps-trainer ]] || { echo "gpu_check.sh: no hetps-trainer in $build_dir/bin; build first" >&2; exit 1; }
elif [[ $device == cuda ]]; then
  step "building against PyPI's LibTorch in $build_dir"
  "$root/scripts/build.sh" --torch pip --build-dir "$build_dir"
else
  step "building in $build_dir (with the CPU in place of the GPU, either LibTorch will do)"
  "$root/scripts/build.sh" --build-dir "$build_dir"
fi
"$build_dir/bin/hetps-trainer" --version | tee "$work/version.txt"

if [[ $device == cuda ]]; then
  step "GPU tests (ctest -L gpu -R cuda_test)"
  ctest --test-dir "$build_dir" -L gpu -R cuda_test --output-on-failure --output-junit "$work/gpu.xml"
  # A skipped GPU test here means the GPU was not usable: that is a failure of the check.
  if grep -q '<skipped' "$work/gpu.xml"; then
    echo "gpu_check.sh: the GPU tests were skipped although nvidia-smi lists a GPU:" >&2
    grep -o 'SKIPPED: [^<]*' "$work/gpu.xml" | head -n 1 >&2
    exit 1
  fi
else
  step "the GPU data path's host side on the CPU (ctest -R gradient_staging_test)"
  ctest --test-dir "$build_dir" -R 'gradient_staging_test' --output-on-failure --output-junit "$work/gpu.xml"
fi

samples=$( ((quick)) && echo 1024 || echo 60000 )
step "FashionCNN, 1 server, trainers on $device and cpu, $samples samples"
"$root/scripts/launch_local.sh" --no-build --build-dir "$build_dir" --config "$root/configs/fashion_mnist.yaml" \
  --servers 1 --trainers 2 --model cnn --device "$device,cpu" --max-train-samples "$samples" \
  --progress none --summary "$work/job.json" --run-dir "$work/job" > "$work/job.out" 2>&1 || {
  echo "gpu_check.sh: the job failed:" >&2; tail -n 20 "$work/job.out" >&2; exit 1; }

quick_flag=()
((quick)) && quick_flag=(--quick)
for bench in overhead pushpull; do
  step "benchmarks/run.sh $bench --device $device"
  "$root/benchmarks/run.sh" "$bench" "${quick_flag[@]}" --device "$device" --build-dir "$build_dir" --out "$work"
done

python3 - "$work" "$out" "$device" <<'PY'
import glob, json, re, sys
work, out, device = sys.argv[1:4]
job = json.load(open(f"{work}/job.json"))
split = re.compile(r"trainer (\d+): trained .*step time: compute ([\d.]+) ms, device-to-host ([\d.]+) ms, "
                   r"wire ([\d.]+) ms, host-to-device ([\d.]+) ms per step")
step_ms = {}
for log in glob.glob(f"{work}/job/trainer-*.log"):
    for m in split.finditer(open(log).read()):
        step_ms[int(m.group(1))] = dict(zip(("compute", "device_to_host", "wire", "host_to_device"),
                                            map(float, m.groups()[1:])))
trainers = []
for t in job["trainer_details"]:
    trainers.append({"rank": t["rank"], "device": t["device"], "samples": t["samples"], "steps": t["steps"],
                     "samples_per_second": t["samples"] / job["train_seconds"] if job["train_seconds"] else 0,
                     "step_ms": step_ms.get(t["rank"])})
figures = {
    "device": device,
    "libtorch": open(f"{work}/version.txt").read().strip(),
    "job": {"model": job["model"], "samples_per_second": job["samples_per_second"],
            "final_test_accuracy": job["final_test_accuracy"], "trainers": trainers},
    "overhead": json.load(open(f"{work}/overhead.json")),
    "pushpull": json.load(open(f"{work}/pushpull.json")),
}
json.dump(figures, open(out, "w"), indent=2)
print(f"\ngpu_check.sh: figures in {out}")
for t in trainers:
    print(f"  trainer {t['rank']} on {t['device']}: {t['samples_per_second']:.0f} samples/s, "
          f"step {t.get('step_ms')}")
print(f"  test accuracy {job['final_test_accuracy']:.4f}")
PY
