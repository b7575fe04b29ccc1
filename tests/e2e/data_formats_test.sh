#!/usr/bin/env bash
# End to end through the real binaries: Fashion-MNIST written as CSV (a header, the label last)
# or as an .npz by Debian's numpy, named in a job file's data section, trains the mlp with
# scripts/launch_local.sh (a scheduler, a server and two trainers) to the given accuracy.
#   data_formats_test.sh BUILD_DIR csv|npy MIN_ACCURACY
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1 format=$2 min_accuracy=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train_samples=12000 test_samples=2000

/usr/bin/python3 - "$work" "$format" "$train_samples" "$test_samples" <<'PY'
import gzip, sys
import numpy as np
work, fmt, n_train, n_test = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
src = "/usr/share/datasets/fashion-mnist"
def read(prefix, n):
    with gzip.open(f"{src}/{prefix}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:n]
    with gzip.open(f"{src}/{prefix}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return x, y
for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
    x, y = read(prefix, n)
    if fmt == "csv":
        rows = np.concatenate([x.reshape(n, 784), y.reshape(n, 1)], axis=1)
        header = ",".join([f"p{i}" for i in range(784)] + ["label"])
        np.savetxt(f"{work}/{split}.csv", rows, fmt="%d", delimiter=",", header=header, comments="")
    else:
        np.savez_compressed(f"{work}/{split}.npz", x=x, y=y.astype(np.int64))
PY

if [[ $format == csv ]]; then
  data="{format: csv, train: $work/train.csv, test: $work/test.csv, header: true, label_column: -1,
         sample_shape: [1, 28, 28], divide_by: 255, classes: 10}"
else
  data="{format: npy, train: $work/train.npz, test: $work/test.npz, sample_shape: [1, 28, 28],
         classes: 10}"
fi
cat >"$work/job.yaml" <<YAML
model: mlp
mode: sync
epochs: 1
global_batch_size: 64
optimizer: {name: sgd, lr: 0.02, momentum: 0.9}
data: $data
YAML

if ! "$root/scripts/launch_local.sh" --no-build --build-dir "$build" --config "$work/job.yaml" \
    --servers 1 --trainers 2 --summary "$work/run.json" --run-dir "$work/run" --progress plain; then
  for log in "$work"/run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
grep -h "training and .* test samples from" "$work"/run/trainer-*.log
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" sync 1 2 "$min_accuracy" "$train_samples"
