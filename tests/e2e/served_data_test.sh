#!/usr/bin/env bash
# End to end through the real binaries: a job with data: {serve: true} on the built-in
# Fashion-MNIST. Trainer 0 reads its local files; trainer 1 runs with --data-from-scheduler and a
# data directory that does not exist, so every byte it trains on comes from the scheduler. The
# scheduler corrupts its first two replies after computing their checksums (fault injection):
# the trainer must notice both and ask again. Two epochs: every sample is trained once per epoch
# (the summary's count); trainer 1 fetches each sample at most once in the whole job, and in the
# second epoch trains samples it already holds without asking for them again. Its on-disk cache is
# a fresh directory (never the user's), so the first epoch holds nothing yet.
#   served_data_test.sh BUILD_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cluster.sh" "$1"
samples=12000

job "model: mlp" "mode: sync" "epochs: 2" "global_batch_size: 64" "servers: 1" "trainers: 2" \
    "optimizer: {name: sgd, lr: 0.02, momentum: 0.9}" "max_train_samples: $samples" \
    "data: {serve: true}"
start_scheduler --inject-corrupt-data 2
start_member server-0 hetps-server --bind "tcp://127.0.0.1:*"
start_member trainer-0 hetps-trainer --device cpu
start_member trainer-1 hetps-trainer --device cpu --data-from-scheduler --data-dir "$work/no-such-dir" \
  --data-cache "$work/cache"
if ! wait_scheduler; then
  show_logs
  exit 1
fi
check_summary sync 1 2 0.70 "$samples"

grep -q "takes its data from the scheduler" "$work/trainer-1.log" || fail "trainer 1 did not take served data"
grep -q "takes its data from the scheduler" "$work/trainer-0.log" && fail "trainer 0 took served data beside its files"
corrupt=$(grep -c "failed its checksum" "$work/trainer-1.log" || true)
((corrupt == 2)) || fail "trainer 1 noticed $corrupt corrupted replies, expected 2"
grep -q "corrupting the data served" "$work/scheduler.log" || fail "the scheduler injected no corruption"
# Per epoch: "N samples fetched, M held already".
counts() { grep -o "served data in epoch $1: .* held already" "$work/trainer-1.log" | grep -o "[0-9]* samples fetched, [0-9]*" | tr -dc '0-9 \n' | awk '{print $1, $2}'; }
read -r fetched0 held0 <<<"$(counts 0)"
read -r fetched1 held1 <<<"$(counts 1)"
[[ -n $fetched0 && -n $fetched1 ]] || fail "no per-epoch counts of served data in trainer 1's log"
((fetched0 > 0 && held0 == 0)) || fail "epoch 0: $fetched0 samples fetched, $held0 held (expected some fetched, none held)"
((held1 > 0)) || fail "epoch 1: no sample of trainer 1's chunks was held from epoch 0"
((fetched0 + fetched1 <= samples)) || fail "trainer 1 fetched $((fetched0 + fetched1)) samples, more than the $samples in the epoch"
echo "served data ok: epoch 0 fetched $fetched0; epoch 1 fetched $fetched1 and found $held1 held; $corrupt corrupted replies asked again"
