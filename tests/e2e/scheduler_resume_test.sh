#!/usr/bin/env bash
# The scheduler killed (kill -9) in the middle of training: launch_local.sh stops the cluster and
# says how to go on; damaged copies of the checkpoint are refused naming the file; launch_local.sh
# --resume continues from the newest checkpoint (weights, optimizer state, epoch and data
# position) and the job trains every sample of the epoch.
#   scheduler_resume_test.sh BUILD_DIR MODE
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1 mode=$2
work=$(mktemp -d)
launcher=""
cleanup() {
  [[ -n $launcher ]] && kill -s INT "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
samples=12000
# Trainers 30x slower than they can be, so that the kill falls inside training (12x left a job of
# 4 s on a machine that computes an MLP step in 1.5 ms, and under load the kill came at its end).

"$root/scripts/launch_local.sh" --no-build --build-dir "$build" --config "$root/configs/fashion_mnist.yaml" \
  --servers 2 --trainers 2 --mode "$mode" --model mlp --epochs 1 --lr 0.02 --momentum 0.9 \
  --max-train-samples "$samples" --checkpoint-interval 1 --slowdown 30,30 --run-dir "$work/first" --progress plain \
  > "$work/first.out" 2>&1 &
launcher=$!
for _ in $(seq 600); do
  grep -q "checkpoint 1 committed" "$work/first/scheduler.log" 2>/dev/null && break
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
scheduler=$(pgrep -P "$launcher" -f hetps-scheduler || true)
[[ -n $scheduler ]] || { echo "scheduler_resume_test: no scheduler to kill"; cat "$work/first.out"; exit 1; }
kill -9 "$scheduler"
status=0
wait "$launcher" || status=$?
launcher=""
((status != 0)) || { echo "scheduler_resume_test: the launcher did not report the lost scheduler"; exit 1; }
grep -q -- "--resume $work/first/checkpoints" "$work/first.out" || {
  echo "scheduler_resume_test: the launcher did not say how to resume"; cat "$work/first.out"; exit 1; }

# Damaged copies of the newest checkpoint are refused at once, with an error naming the file and
# what is wrong, and an ordinary exit (1, or 2 for a file that is missing or malformed), not an abort.
newest=$(ls -d "$work"/first/checkpoints/checkpoint-* | tail -n 1)
refused() {  # refused NAME EXPECTED_TEXT: --resume of $work/NAME fails saying EXPECTED_TEXT
  local code=0
  "$build/bin/hetps-scheduler" --resume "$work/$1" --check > /dev/null 2> "$work/$1.err" || code=$?
  if ((code != 1 && code != 2)) || ! grep -qF -- "$2" "$work/$1.err"; then
    echo "scheduler_resume_test: --resume of a checkpoint with $1 exited $code, expected 1 or 2 and '$2':"
    cat "$work/$1.err"
    exit 1
  fi
  echo "scheduler_resume_test: $1 refused: $(cat "$work/$1.err")"
}
cp -r "$newest" "$work/truncated"
truncate -s -100 "$work/truncated/server-1.safetensors"
refused truncated "server-1.safetensors: "
cp -r "$newest" "$work/corrupt"
/usr/bin/python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(-8, 2); b = f.read(1); f.seek(-8, 2); f.write(bytes([b[0] ^ 0xff]))' \
  "$work/corrupt/server-0.safetensors"
refused corrupt "server-0.safetensors: checksum"
cp -r "$newest" "$work/missing"
rm "$work/missing/server-1.safetensors"
refused missing "lists server-1.safetensors, which cannot be read"
cp -r "$newest" "$work/bad-manifest"
head -c 100 "$newest/manifest.json" > "$work/bad-manifest/manifest.json"
refused bad-manifest "manifest.json"
mkdir "$work/empty"
refused empty "no committed checkpoint in $work/empty"

"$root/scripts/launch_local.sh" --no-build --build-dir "$build" --resume "$work/first/checkpoints" \
  --summary "$work/run.json" --run-dir "$work/second" --progress plain > "$work/second.out" 2>&1 || {
  cat "$work/second.out"; for log in "$work"/second/*.log; do echo "== $log"; tail -n 25 "$log"; done; exit 1; }
/usr/bin/python3 "$root/tests/e2e/check_summary.py" "$work/run.json" "$mode" 2 2 0.75 "$samples"

# The same job undisturbed, for the accuracy a resumed job should reach.
"$root/scripts/launch_local.sh" --no-build --build-dir "$build" --config "$root/configs/fashion_mnist.yaml" \
  --servers 2 --trainers 2 --mode "$mode" --model mlp --epochs 1 --lr 0.02 --momentum 0.9 \
  --max-train-samples "$samples" --no-checkpoints --summary "$work/undisturbed.json" \
  --run-dir "$work/undisturbed" --progress none > "$work/undisturbed.out" 2>&1 || {
  cat "$work/undisturbed.out"; exit 1; }
/usr/bin/python3 - "$work/run.json" "$work/first/checkpoints" "$work/undisturbed.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
undisturbed = json.load(open(sys.argv[3]))["final_test_accuracy"]
assert s["resumed_from"].startswith(sys.argv[2]), s["resumed_from"]
trained_now = sum(s["samples"])
# The resumed job trained only what the checkpoint had not: less than the whole epoch.
assert trained_now < s["samples_completed"], (trained_now, s["samples_completed"])
# Within noise of the undisturbed run (seeds alike; the order of chunks differs).
assert abs(s["final_test_accuracy"] - undisturbed) <= 0.03, (s["final_test_accuracy"], undisturbed)
print(f"scheduler_resume_test: resumed from {s['resumed_from']}, trained {trained_now} more samples, "
      f"accuracy {s['final_test_accuracy']:.4f} (undisturbed: {undisturbed:.4f})")
PY
