// Int8Feedback: error feedback for pseudo-gradients sent as int8 (mode diloco,
// diloco.pseudo_gradient_dtype: int8). Per partition it keeps the residual of the last encoding,
// the exact values minus what the servers read back (scale * q), and adds it to the partition's
// next values before they are quantised, so that what a partition loses to rounding in one round
// is sent in a later one: over any number of rounds, the sum of what was sent differs from the
// sum of the exact values by the last residual only, at most half the last scale per element.
//
// The residual lives in memory only: a trainer that restarts, or leaves and rejoins, starts with
// none (it loses at most half a quantisation step per element, once). Owned by the trainer's
// loop thread (PsClient's); not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hetps {

class Int8Feedback {
 public:
  // One residual per partition, `lengths[id]` elements each, all zero.
  explicit Int8Feedback(const std::vector<uint64_t>& lengths);

  // Quantises exact[0..n) plus partition `id`'s residual into out[0..n) (n = the partition's
  // length), returns the scale sent with it, and keeps the new residual. Called once per
  // partition per round, when its frame is packed.
  float Encode(uint32_t id, const float* exact, int8_t* out);

  // Partition `id`'s residual, for tests and metrics.
  const std::vector<float>& residual(uint32_t id) const { return residuals_[id]; }
  // Forgets every residual (they start at zero again).
  void Reset();

 private:
  std::vector<std::vector<float>> residuals_;
};

}  // namespace hetps
