#!/usr/bin/env bash
# End to end through scripts/launch_local.sh: one trainer reads the local Fashion-MNIST files and
# the other, started with --data-from local,scheduler, receives its data from the scheduler, as a
# machine without the data would; the mlp trains one epoch in sync mode to the usual accuracy. The
# served trainer keeps what it received in the cache directory given (--data-cache). With every
# trainer on served data, the scheduler serves the Fashion-MNIST under the launcher's --data-dir (a
# 3,000-sample subset the test writes). The launcher refuses --data-from scheduler for a job that
# does not serve its data, and a list of sources that does not match the trainers.
#   launch_local_served_data_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
launch=("$root/scripts/launch_local.sh" --no-build --build-dir "$build")
fail() { echo "FAILED: $*"; exit 1; }

# Refused before anything starts.
if "${launch[@]}" --config "$root/configs/fashion_mnist.yaml" --data-from local,scheduler \
    --run-dir "$work/refused" 2>"$work/refused.err"; then
  fail "launch_local.sh started a trainer on served data for a job that does not serve it"
fi
grep -q "needs a job that serves its data" "$work/refused.err" || { cat "$work/refused.err"; fail "no reason given"; }
{ cat "$root/configs/fashion_mnist.yaml"; echo "data: {serve: true}"; } >"$work/job.yaml"
if "${launch[@]}" --config "$work/job.yaml" --trainers 3 --data-from local,scheduler \
    --run-dir "$work/refused" 2>"$work/refused.err"; then
  fail "launch_local.sh took two data sources for three trainers"
fi
grep -q "gives 2 sources for 3 trainers" "$work/refused.err" || { cat "$work/refused.err"; fail "no reason given"; }

if ! "${launch[@]}" --config "$work/job.yaml" --servers 1 --trainers 2 --mode sync --model mlp --epochs 1 \
    --lr 0.02 --momentum 0.9 --data-from local,scheduler --data-cache "$work/cache" --no-checkpoints \
    --http off --summary "$work/run.json" --run-dir "$work/run" --progress plain; then
  for log in "$work"/run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" sync 1 2 0.80 60000
grep -q "takes its data from the scheduler" "$work/run/trainer-1.log" || fail "trainer 1 did not take served data"
grep -q "takes its data from the scheduler" "$work/run/trainer-0.log" && fail "trainer 0 took served data beside its files"
grep -q "served data cache $work/cache/crc32-" "$work/run/trainer-1.log" || fail "trainer 1 used no cache under $work/cache"
requests=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['served_data']['requests'])" "$work/run.json")
((requests > 0)) || fail "the scheduler answered no data request"
pieces=$(find "$work/cache" -name '*.piece' | wc -l)
((pieces > 0)) || fail "trainer 1 cached nothing"
echo "launch_local.sh --data-from local,scheduler ok: $requests data requests answered, $pieces pieces cached"

# Every trainer on served data: the scheduler reads the launcher's --data-dir, here the first
# 3,000 training and 500 test samples of Fashion-MNIST, so an epoch is 3,000 samples.
mkdir "$work/small"
/usr/bin/python3 - /usr/share/datasets/fashion-mnist "$work/small" <<'PY'
import gzip, struct, sys
source, target = sys.argv[1:]
for split, count in (("train", 3000), ("t10k", 500)):
    for kind, header in (("images-idx3", 16), ("labels-idx1", 8)):
        name = f"{split}-{kind}-ubyte.gz"
        with gzip.open(f"{source}/{name}", "rb") as f:
            data = f.read()
        per_item = 784 if kind.startswith("images") else 1
        head = data[:4] + struct.pack(">I", count) + data[8:header]
        with gzip.open(f"{target}/{name}", "wb") as f:
            f.write(head + data[header:header + count * per_item])
PY
if ! "${launch[@]}" --config "$work/job.yaml" --servers 1 --trainers 2 --mode sync --model mlp --epochs 1 \
    --data-dir "$work/small" --data-from scheduler --data-cache off --no-checkpoints --http off \
    --summary "$work/small.json" --run-dir "$work/small-run" --progress plain; then
  for log in "$work"/small-run/*.log; do echo "== $log"; tail -n 20 "$log"; done
  exit 1
fi
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/small.json" sync 1 2 0.50 3000 ||
  fail "the scheduler did not serve the data under --data-dir $work/small"
echo "launch_local.sh --data-dir with every trainer on served data ok: the scheduler served $work/small"
