#!/usr/bin/env bash
# End to end, a language model: hetps-data tokenize makes the sources of Python's logging package
# into character tokens; scripts/launch_local.sh trains the built-in gpt on them (one server, two
# trainers, sync, with a warm-up and cosine lr schedule and clipped gradients), then the
# TorchScript GPT that examples/gpt/gpt.py writes. Each job's final
# validation loss must lie clearly below the unigram entropy of the training tokens (computed
# here from train.bin: what a model that ignores the context would score), its summary must
# report the perplexity and bits per token of that loss, and examples/gpt/sample.py must load
# each job's model.safetensors strictly and print text.
#   language_model_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1
python=/usr/bin/python3  # Debian's, with python3-torch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$build/bin/hetps-data" tokenize --chars /usr/lib/python3.11/logging --include '*.py' --out "$work/data"
unigram=$("$python" - "$work/data" <<'PY'
import json, math, sys
from collections import Counter
vocab = json.load(open(sys.argv[1] + "/vocab.json"))
width = {"uint16": 2, "uint32": 4}[vocab["dtype"]]
data = open(sys.argv[1] + "/train.bin", "rb").read()
ids = Counter(int.from_bytes(data[i:i + width], "little") for i in range(0, len(data), width))
total = sum(ids.values())
print(-sum(n / total * math.log(n / total) for n in ids.values()))
PY
)
echo "unigram entropy of the training tokens: $unigram nats"

# The job: model lines first, then what both runs share.
write_job() {  # NAME MODEL_YAML
  cat >"$work/$1.yaml" <<EOF
$2
data:
  format: tokens
  train: $work/data/train.bin
  test: $work/data/val.bin
  context: 64
mode: sync
epochs: 6
global_batch_size: 32
optimizer: {name: adam, lr: 0.003}
lr_schedule: {warmup_steps: 20, decay: cosine, min_lr: 0.0003}
clip_grad_norm: 1.0
servers: 1
trainers: 2
eval_batch_size: 64
seed: 3
EOF
}

run_job() {  # NAME
  if ! "$root/scripts/launch_local.sh" --no-build --build-dir "$build" --config "$work/$1.yaml" \
      --run-dir "$work/$1" --summary "$work/$1.json" --no-checkpoints --progress plain >"$work/$1.out" 2>&1; then
    cat "$work/$1.out"
    for log in "$work/$1"/*.log; do echo "== $log"; tail -n 20 "$log"; done
    exit 1
  fi
  grep "final test perplexity" "$work/$1.out"
  "$python" - "$work/$1.json" "$unigram" <<'PY'
import json, math, sys
s = json.load(open(sys.argv[1]))
unigram = float(sys.argv[2])
assert s["status"] == "ok", s.get("error")
assert s["metric"] == "perplexity", s["metric"]
loss = s["final_test_loss"]
assert math.isclose(s["final_test_perplexity"], math.exp(loss), rel_tol=1e-9), s["final_test_perplexity"]
assert math.isclose(s["final_test_bits_per_token"], loss / math.log(2), rel_tol=1e-9)
final = [e for e in s["evaluations"] if e["final"]][0]
assert final["test_positions"] == final["test_samples"] * 64, final
assert loss < 0.8 * unigram, f"validation loss {loss:.3f} nats is not clearly below the unigram entropy {unigram:.3f}"
print(f"ok: {s['model']} {s['torchscript']}: validation loss {loss:.3f} nats "
      f"(perplexity {s['final_test_perplexity']:.2f}, {s['final_test_bits_per_token']:.3f} bits/token) "
      f"< 0.8 x unigram entropy {unigram:.3f}, in {s['wall_seconds']:.0f} s")
PY
  "$python" "$root/examples/gpt/sample.py" --model "$work/$1/model.safetensors" --vocab "$work/data/vocab.json" \
    --chars 300 --seed 2 >"$work/$1.sample"
  "$python" - "$work/$1.sample" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
assert len(text) >= 300, f"sample.py printed {len(text)} characters"
assert len(set(text)) >= 10, f"sample.py printed {len(set(text))} distinct characters: {text!r}"
print("ok: sample.py printed:\n" + text[:300])
PY
}

write_job builtin "model: gpt
model_options: {layers: 2, heads: 4, width: 64}"
run_job builtin

"$python" "$root/examples/gpt/gpt.py" --vocab "$work/data/vocab.json" --out "$work/gpt.pt" \
  --layers 2 --heads 4 --width 64 --context 64
write_job torchscript "model: {torchscript: gpt.pt}"
run_job torchscript
