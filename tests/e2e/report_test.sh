#!/usr/bin/env bash
# scripts/report.sh on real runs: two jobs by hand leave their histories (metrics.jsonl); the report
# draws loss, accuracy and samples/s as PNGs, writes TensorBoard event files that TensorBoard's own
# reader (tensorboard.backend.event_processing) reads back with the accuracy the summary reports,
# compares the two runs in one command, and refuses a damaged history naming the file and line.
#   report_test.sh BUILD_DIR
build=$(cd "$1" && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$build"
report=$e2e_root/scripts/report.sh
for seed in 1 2; do
  by_hand "seed-$seed" 5 --model mlp --mode async --servers 1 --trainers 1 --epochs 1 --max-train-samples 8000 \
    --eval-interval-samples 3000 --seed "$seed" --no-checkpoints --run-dir "$work/seed-$seed"
  wait_scheduler || fail "the job of seed $seed failed"
done

"$report" "$work/seed-1" --tensorboard "$work/tb" > "$work/report.out" 2>&1 || { cat "$work/report.out"; fail "report.sh failed"; }
png() {  # png FILE: a PNG image of some size
  [[ -s $1 && $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a && $(stat -c %s "$1") -gt 10000 ]]
}
for f in loss accuracy samples_per_second; do
  png "$work/seed-1/report/$f.png" || fail "no image $work/seed-1/report/$f.png"
done
/usr/bin/python3 - "$work/tb/seed-1" "$work/seed-1/summary.json" <<'PY' || fail "TensorBoard's reader does not read the run back"
import json, sys
from tensorboard.backend.event_processing import event_accumulator
events = event_accumulator.EventAccumulator(sys.argv[1])
events.Reload()
tags = events.Tags()["scalars"]
for tag in ("train/loss/trainer_0", "train/samples_per_second/trainer_0", "job/samples_per_second", "test/loss", "test/accuracy"):
    assert tag in tags, (tag, tags)
summary = json.load(open(sys.argv[2]))
accuracy = events.Scalars("test/accuracy")
assert len(accuracy) >= 3, accuracy  # two periodic evaluations at least, and the final one
assert abs(accuracy[-1].value - summary["final_test_accuracy"]) < 1e-6, (accuracy[-1], summary["final_test_accuracy"])
steps = [e.step for e in events.Scalars("train/loss/trainer_0")]
assert steps == sorted(steps) and steps[-1] > 0, steps
PY

"$report" "$work/seed-1" "$work/seed-2" --out "$work/compare" > "$work/compare.out" 2>&1 || { cat "$work/compare.out"; fail "report.sh of two runs failed"; }
for f in loss accuracy samples_per_second; do png "$work/compare/$f.png" || fail "no comparison $f.png"; done

# A damaged history: refused, naming the file and the line, exit 2.
mkdir "$work/damaged"
sed '3s/.*/{"kind": "progress", "time_s"/' "$work/seed-1/metrics.jsonl" > "$work/damaged/metrics.jsonl"
code=0
"$report" "$work/damaged" > "$work/damaged.out" 2>&1 || code=$?
((code == 2)) && grep -q "damaged/metrics.jsonl line 3: not JSON" "$work/damaged.out" ||
  { cat "$work/damaged.out"; fail "a damaged history: exit $code"; }
code=0
"$report" "$work/nowhere" > "$work/nowhere.out" 2>&1 || code=$?
((code == 2)) && grep -q "nowhere/metrics.jsonl: no such file" "$work/nowhere.out" || { cat "$work/nowhere.out"; fail "a missing run: exit $code"; }
echo "report_test: passed"
