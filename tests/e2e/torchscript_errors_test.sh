#!/usr/bin/env bash
# A TorchScript model that cannot train stops the job at its start with a message naming the
# file: a file that is not TorchScript, a module without parameters, a forward that fails on the
# data's batch (the message gives the input's shape), a file the scheduler cannot read, and a
# loss the built-in models do not take; and a trainer whose copy of the file differs from the
# scheduler's, or that has none.
#   torchscript_errors_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 "$root/tests/e2e/torchscript_models.py" no-parameters "$work/empty.pt"
/usr/bin/python3 "$root/tests/e2e/torchscript_models.py" wrong-input "$work/wrong.pt"
echo "not a model" > "$work/notes.pt"

expect_failure() {  # expect_failure NAME TEXT... -- FLAGS...: the job fails and says every TEXT
  local name=$1 texts=()
  shift
  while [[ $1 != -- ]]; do texts+=("$1"); shift; done
  shift
  if "$root/scripts/launch_local.sh" --no-build --build-dir "$build" --servers 1 --trainers 1 --epochs 1 \
      --max-train-samples 512 --no-checkpoints --max-restarts 0 --run-dir "$work/$name" --progress none \
      "$@" > "$work/$name.out" 2>&1; then
    cat "$work/$name.out"; echo "torchscript_errors_test: $name: the job did not fail" >&2; exit 1
  fi
  for text in "${texts[@]}"; do
    grep -qF -- "$text" "$work/$name.out" || {
      cat "$work/$name.out"; echo "torchscript_errors_test: $name: no '$text' in the output" >&2; exit 1
    }
  done
  echo "torchscript_errors_test: $name: $(grep -m1 -F -- "${texts[0]}" "$work/$name.out")"
}

expect_failure not-torchscript "model file $work/notes.pt is not a TorchScript file" -- --model-file "$work/notes.pt"
expect_failure no-parameters "model file $work/empty.pt has no parameters" -- --model-file "$work/empty.pt"
expect_failure wrong-input "model file $work/wrong.pt: forward on a batch of shape [2, 1, 28, 28] float" "fails" \
  -- --model-file "$work/wrong.pt"
expect_failure missing "$work/absent.pt" "model.torchscript" -- --model-file "$work/absent.pt"
expect_failure builtin-mse "loss: mse needs a TorchScript model" -- --model cnn --loss mse

# A trainer whose copy of the file differs from the scheduler's, or that has none, says so.
/usr/bin/python3 "$root/tests/e2e/torchscript_models.py" cnn "$work/cnn.pt"
"$build/bin/hetps-scheduler" --model-file "$work/cnn.pt" --listen 'tcp://127.0.0.1:*' --endpoint-file "$work/ep" \
  --progress none --run-dir "$work/run" 2> "$work/scheduler.log" &
scheduler_pid=$!
trap 'kill $scheduler_pid ${server_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -s $work/ep ]] && break; sleep 0.1; done
"$build/bin/hetps-server" --scheduler "$(<"$work/ep")" 2> "$work/server.log" &
server_pid=$!
expect_trainer_failure() {  # expect_trainer_failure TEXT --model-file FILE
  local text=$1
  shift
  if timeout 120 "$build/bin/hetps-trainer" --scheduler "$(<"$work/ep")" "$@" > "$work/trainer.out" 2>&1; then
    cat "$work/trainer.out"; echo "torchscript_errors_test: a trainer with $* did not fail" >&2; exit 1
  fi
  grep -qF -- "$text" "$work/trainer.out" || {
    cat "$work/trainer.out"; echo "torchscript_errors_test: no '$text' from the trainer" >&2; exit 1
  }
  echo "torchscript_errors_test: trainer $*: $(grep -m1 -F -- "$text" "$work/trainer.out")"
}
expect_trainer_failure "model file $work/notes.pt differs from the scheduler's $work/cnn.pt (crc32:" \
  --model-file "$work/notes.pt"
expect_trainer_failure "the job's model file $work/nothere.pt cannot be read on this machine" \
  --model-file "$work/nothere.pt"
