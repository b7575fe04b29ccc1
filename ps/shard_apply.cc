// The Shard's optimizer steps: each queued on its partition's owner, at the lr its schedule
// gives, and timed into apply_seconds. Part of the Shard class (ps/shard.h); posted from the I/O
// thread, run on the owners.
#include <chrono>

#include "common/dtype.h"
#include "ps/shard.h"

namespace hetps {

void Shard::PostStep(Slot& slot, const void* grad, wire::DType dtype, float grad_scale, float lr_scale,
                     Optimizer::Share share, Frames keep, const std::shared_ptr<ApplyTally>& tally,
                     uint64_t samples, bool outer) {
  const double lr = ScheduledStepLr(slot, outer);
  slot.schedule_samples += samples;
  ++slot.version;
  // The outer optimizer counts its own steps (Adam's bias correction starts at its first round).
  const auto step = static_cast<int64_t>(outer ? ++slot.outer_steps : slot.version);
  Slot* stepping = &slot;
  PostTimed(slot, tally, [this, stepping, grad, dtype, grad_scale, lr_scale, share, step, lr, keep, outer] {
    const size_t n = stepping->info->length;
    // float32 gradients are read in place; 16-bit ones are widened once into the owner's scratch.
    const float* values = static_cast<const float*>(grad);
    if (dtype != wire::DType::F32) {
      std::vector<float>& scratch = scratch_[stepping->owner];
      scratch.resize(n);
      UnpackFloats(grad, n, dtype, scratch.data());
      values = scratch.data();
    }
    Optimizer& optimizer = outer ? *outer_ : *optimizer_;
    float* state = outer ? stepping->outer_state.data() : stepping->state.data();
    optimizer.Apply(stepping->weights.get(), values, grad_scale, state, n, step, lr_scale, share,
                    outer ? -1.0 : lr);
  });
}

void Shard::PostTimed(Slot& slot, const std::shared_ptr<ApplyTally>& tally, std::function<void()> step) {
  tally->steps.fetch_add(1, std::memory_order_relaxed);
  tally->open.fetch_add(1, std::memory_order_relaxed);
  workers_->Post(slot.owner, [this, tally, step = std::move(step)] {
    const auto start = std::chrono::steady_clock::now();
    step();
    const auto took =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    tally->nanoseconds.fetch_add(took.count(), std::memory_order_relaxed);
    if (tally->open.fetch_sub(1, std::memory_order_acq_rel) == 1) RecordApply(*tally);
  });
}

double Shard::ScheduledStepLr(const Slot& slot, bool outer) const {
  const OptimizerOptions& o = options_.optimizer;
  if (outer || options_.mode == ConsistencyMode::kDiloco || !LrScheduleEnabled(o.schedule)) return -1;
  // In steps of the global batch, so a push of a share of it (async, ssp) or a short round is
  // that share of a step, whichever way the trainers split the batch.
  const double steps = options_.global_batch_size == 0
                           ? static_cast<double>(slot.version)
                           : static_cast<double>(slot.schedule_samples) / options_.global_batch_size;
  return ScheduledLr(o.schedule, o.lr, steps);
}

void Shard::EndApply(ApplyTally& tally) {
  if (tally.open.fetch_sub(1, std::memory_order_acq_rel) == 1) RecordApply(tally);
}

void Shard::RecordApply(const ApplyTally& tally) {
  if (tally.steps.load(std::memory_order_relaxed) == 0) return;  // a round without samples: no step
  const double seconds = static_cast<double>(tally.nanoseconds.load(std::memory_order_relaxed)) * 1e-9;
  std::lock_guard<std::mutex> lock(apply_mutex_);
  apply_seconds_.Observe(seconds);
}

}  // namespace hetps
