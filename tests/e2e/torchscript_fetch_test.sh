#!/usr/bin/env bash
# Trainers on a machine without the job's TorchScript file fetch it from the scheduler. Debian's
# python3-torch scripts FashionCNN (10.9 MB: three pieces of at most 4 MiB); the scheduler reads
# it at its start, then the file goes away, so the path the scheduler names does not exist when
# the trainers start. They fetch the file into their cache directory (--model-cache), checking
# each piece and the whole file; the scheduler corrupts its first piece after computing its
# checksum (fault injection), which a trainer must notice and ask for again. The job is the
# TorchScript sync job of torchscript_cnn_test.sh and must reach the built-in cnn's accuracy
# measured there (0.8014, less that test's tolerance of 0.04; this test measured 0.7758, the
# same as that test's TorchScript run). A second job with the
# same file and cache fetches nothing: its trainer loads the cached copy.
#   torchscript_fetch_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"
samples=6000

mkdir "$work/model"
/usr/bin/python3 "$e2e_root/tests/e2e/torchscript_models.py" cnn "$work/model/cnn.pt"
model="$work/model/cnn.pt"
crc=$(/usr/bin/python3 -c 'import sys, zlib; print("%08x" % zlib.crc32(open(sys.argv[1], "rb").read()))' "$model")
cache="$work/cache"
# cnn_job SERVERS TRAINERS SAMPLES: the job of torchscript_cnn_test.sh (configs/fashion_mnist.yaml, sync).
cnn_job() {
  job "model: {torchscript: $model, loss: cross_entropy}" "mode: sync" "epochs: 1" "global_batch_size: 64" \
      "optimizer: {name: sgd, lr: 0.05, momentum: 0.9}" "seed: 1" "chunk_samples: 512" "servers: $1" "trainers: $2" \
      "max_train_samples: $3"
}

# The first job: each trainer fetches the file, or finds the other's copy in the cache.
cnn_job 2 2 "$samples"
start_scheduler --inject-corrupt-data 1
grep -q "model: TorchScript file $model (crc32:$crc, " "$work/scheduler.log" || fail "the scheduler did not read $model"
mv "$work/model" "$work/model-away"
start_member server-0 hetps-server --bind "tcp://127.0.0.1:*"
start_member server-1 hetps-server --bind "tcp://127.0.0.1:*"
start_member trainer-0 hetps-trainer --device cpu --model-cache "$cache"
start_member trainer-1 hetps-trainer --device cpu --model-cache "$cache"
wait_scheduler || fail "the first job failed"
check_summary sync 2 2 0.761 "$samples" || fail "the first job fell short"
fetched=$(grep -l "fetched the model file $model from the scheduler at " "$work"/trainer-*.log | wc -l)
((fetched >= 1)) || fail "no trainer says it fetched $model"
grep -q "corrupting the model file piece" "$work/scheduler.log" || fail "the scheduler injected no corruption"
grep -q "failed its checksum" "$work"/trainer-*.log || fail "no trainer noticed the corrupted piece"
[[ $(ls -A "$cache") == "$crc.pt" ]] || fail "the cache holds '$(ls -A "$cache")', expected only $crc.pt"
cmp -s "$cache/$crc.pt" "$work/model-away/cnn.pt" || fail "the cached copy differs from $model"
accuracy=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["final_test_accuracy"])' "$work/run.json")
echo "first job: trainers that fetched $model: $fetched of 2 (the others found the copy in the cache); crc32:$crc; test accuracy $accuracy"
grep -h "fetched the model file\|failed its checksum" "$work"/trainer-*.log

# The second job: the trainer finds the file in its cache and asks the scheduler for nothing.
mkdir "$work/first"
mv "$work"/*.log "$work/scheduler.out" "$work/run.json" "$work/first/"
rm "$work/job.yaml" "$work/endpoint"
mv "$work/model-away" "$work/model"
cnn_job 1 1 2048
start_scheduler
mv "$work/model" "$work/model-away"
start_member server-0 hetps-server --bind "tcp://127.0.0.1:*"
start_member trainer-0 hetps-trainer --device cpu --model-cache "$cache"
wait_scheduler || fail "the second job failed"
check_summary sync 1 1 0.5 2048 || fail "the second job fell short"
grep -q "using the copy fetched from the scheduler earlier, $cache/$crc.pt" "$work/trainer-0.log" ||
  fail "the second job's trainer did not use the cached copy"
grep -q "fetched the model file" "$work/trainer-0.log" && fail "the second job's trainer fetched the file again"
grep -q "sent the last piece of the model file" "$work/scheduler.log" && fail "the second scheduler sent the file"
echo "second job: the trainer loaded $cache/$crc.pt without asking the scheduler"
