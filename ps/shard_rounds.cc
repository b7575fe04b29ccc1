// The Shard's rounds (sync, diloco): when a round is complete, and its close, which steps the
// optimizer once on the round's combined gradients. Part of the Shard class (ps/shard.h), called
// on the I/O thread like the rest; the steps run on the partitions' owners.
#include <algorithm>

#include "ps/shard.h"

namespace hetps {

bool Shard::RoundAwaits(const Slot& slot, uint32_t t) const {
  if (auto from = from_clocks_.find(t); from != from_clocks_.end() && from->second > slot.round) return false;
  if (options_.mode == ConsistencyMode::kAuto) {
    auto clock = clocks_.find(t);
    if (clock != clocks_.end() && clock->second.idle) return false;  // out of data: not in the round
  }
  return std::find(slot.pushed.begin(), slot.pushed.end(), t) == slot.pushed.end();
}

bool Shard::RoundComplete(const Slot& slot) const {
  if (slot.pushed.empty()) return false;
  return std::none_of(live_trainers_.begin(), live_trainers_.end(),
                      [&](uint32_t t) { return RoundAwaits(slot, t); });
}

void Shard::CompleteRoundIfReady(Slot& slot) {
  if (!RoundComplete(slot)) return;
  float mean_scale = slot.round_samples == 0 ? 0.0f : 1.0f / static_cast<float>(slot.round_samples);
  if (RuleAt(slot.round).mode == ConsistencyMode::kDiloco && slot.round_samples > 0) {
    // FedNova: the per-step mean, sum_t(b_t / tau_t * d_t) / N, times the round's mean inner
    // steps, sum_t(b_t * tau_t) / N.
    const double samples = static_cast<double>(slot.round_samples);
    mean_scale = static_cast<float>(slot.round_step_samples / (samples * samples));
  }
  CloseRound(slot, slot.sum.data(), wire::DType::F32, mean_scale, nullptr);
}

void Shard::CloseRound(Slot& slot, const void* grad, wire::DType dtype, float grad_scale, Frames keep) {
  RoundApply& apply = round_applies_[slot.round];
  if (!apply.tally) apply.tally = std::make_shared<ApplyTally>();
  if (slot.round_samples > 0) {
    // The mean gradient of the round; a round short of the global batch (trainers running out
    // of data at the end of an epoch) is that share of a step, so that no sample counts for more.
    const bool diloco = RuleAt(slot.round).mode == ConsistencyMode::kDiloco;
    const float share = options_.global_batch_size == 0 || diloco
                            ? 1.0f
                            : static_cast<float>(slot.round_samples) / options_.global_batch_size;
    PostStep(slot, grad, dtype, grad_scale, share, Optimizer::Share::kRound, std::move(keep), apply.tally,
             slot.round_samples, /*outer=*/diloco && outer_ != nullptr);
  }
  if (++apply.closed == slots_.size()) {
    EndApply(*apply.tally);
    round_applies_.erase(slot.round);
  }
  slot.last_round_samples = slot.round_samples;
  slot.round_samples = 0;
  slot.round_step_samples = 0;
  slot.pushed.clear();
  ++slot.round;
  if (snapshot_) SnapshotIfDue(slot);
}

uint64_t Shard::CompletedRounds() const {
  if (slots_.empty()) return 0;
  uint64_t fewest = slots_.front().round;
  for (const Slot& slot : slots_) fewest = std::min(fewest, slot.round);
  return fewest;
}

}  // namespace hetps
