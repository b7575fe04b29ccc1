#!/usr/bin/env bash
# The whole loop, from a PyTorch model to a trained one back in Python:
#   1. define the model and script it (mynet.py -> mynet.pt)
#   2. the job file names it (job.yaml)
#   3. launch a local cluster: a scheduler, 2 servers and 2 trainers (scripts/launch_local.sh)
#   4. load the exported model.safetensors into the same class and evaluate it (evaluate.py)
#
#   examples/python/walkthrough.sh [RUN_DIR] [extra scripts/launch_local.sh flags]
#
# e.g. a quick run on the first 4,000 training images:
#   examples/python/walkthrough.sh runs/example --max-train-samples 4000
#
# Needs Python with torch and safetensors (Debian: python3-torch, and `pip install safetensors`),
# and hetps built (scripts/build.sh). PYTHON picks the interpreter (default /usr/bin/python3,
# Debian's, whose torch 1.13 writes files that both of hetps's LibTorch builds load).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "${HETPS_ROOT:-$here/../..}" && pwd)  # the hetps checkout (for a copy of this directory)
python=${PYTHON:-/usr/bin/python3}
run_dir=${1:-$root/runs/python-example}
shift $(($# > 0 ? 1 : 0))

# 1. The model, scripted next to the job file that names it.
"$python" "$here/mynet.py" "$here/mynet.pt"
# 2-3. The job; the trained model goes to RUN_DIR/model.safetensors.
"$root/scripts/launch_local.sh" --config "$here/job.yaml" --run-dir "$run_dir" \
  --summary "$run_dir/summary.json" --progress plain "$@"
# 4. Back in Python.
"$python" "$here/evaluate.py" "$run_dir/model.safetensors"
