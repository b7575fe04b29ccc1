// The Shard in mode diloco with async rounds (diloco: {async: true}): each trainer's
// pseudo-gradient is stepped on alone when it arrives, by DelayedNesterov, as one of N live
// trainers. Part of the Shard class (ps/shard.h), called on the I/O thread like the rest; the
// steps run on the partitions' owners.
#include <algorithm>

#include "common/dtype.h"
#include "ps/shard.h"

namespace hetps {

void Shard::PostDelayedStep(Slot& slot, const void* grad, wire::DType dtype, float scale, Frames keep,
                            const std::shared_ptr<ApplyTally>& tally) {
  // N: the trainers live now. The momentum is refreshed on every N-th push to the partition, by
  // its update count, which checkpoints keep, so a resumed job refreshes where it would have.
  const auto trainers = static_cast<uint64_t>(std::max<size_t>(1, live_trainers_.size()));
  ++slot.version;
  ++slot.round;
  // In auto the count starts with its diloco phase, whose state starts there too.
  const uint64_t pushes = automatic() ? ++slot.outer_steps : slot.version;
  const bool refresh = pushes % trainers == 0;
  const float share = 1.0f / static_cast<float>(trainers);
  Slot* stepping = &slot;
  // In auto the slot's state is the per-step optimizer's; the diloco phase's is apart.
  float* state = automatic() ? slot.outer_state.data() : slot.state.data();
  PostTimed(slot, tally, [this, stepping, grad, dtype, scale, share, refresh, state, keep] {
    const size_t n = stepping->info->length;
    // Widened (and an int8 frame scaled) once into the owner's scratch.
    std::vector<float>& scratch = scratch_[stepping->owner];
    scratch.resize(n);
    ScaleInto(grad, n, dtype, scale, /*assign=*/true, scratch.data());
    delayed_->Apply(stepping->weights.get(), scratch.data(), share, state, n, refresh);
  });
}

}  // namespace hetps
