// DelayedNesterov: the outer optimizer of diloco's asynchronous rounds (diloco: {async: true}),
// after the Delayed Nesterov update of Liu et al. 2024 ("Asynchronous Local-SGD Training for
// Language Modeling"). Each trainer's round arrives alone; with N live trainers, one push stands
// for 1/N of a synchronous round:
//   - every push steps the weights at once by lr * d / N (d its pseudo-gradient), so a push moves
//     the weights as far as it would in a synchronous round's plain average;
//   - with momentum, the pushes since the last refresh gather in a sum D of their d / N, and once
//     per N pushes the buffer is refreshed, m = momentum * m + D, and the weights take the
//     momentum's part of the step, lr * momentum * m (Nesterov: the new buffer; without nesterov:
//     the buffer before the refresh), and D starts again from zero.
// So N pushes that all start from the same weights move them exactly as one synchronous round of
// torch's SGD on their mean (lr * (D + momentum * m) for Nesterov), while a push that arrives
// stale cannot reach the momentum on its own: the buffer changes once per N of them.
//
// Only SGD without weight decay or dampening is an outer optimizer here. Immutable after Create;
// Apply may run concurrently on disjoint buffers.
#pragma once

#include <cstddef>

#include "common/optimizer_options.h"
#include "common/status.h"

namespace hetps {

class DelayedNesterov {
 public:
  // InvalidArgument naming the field ("outer_optimizer.<field>") unless `outer` is SGD without
  // weight decay or dampening.
  static Result<DelayedNesterov> Create(const OptimizerOptions& outer);

  // Floats of state per element: the momentum buffer, then the sum of pushes since its last
  // refresh (2); none without momentum.
  int state_slots() const { return momentum_ > 0 ? 2 : 0; }
  // The names of those slots in a checkpoint (the buffer's is torch's).
  static constexpr const char* kBufferName = "momentum_buffer";
  static constexpr const char* kSumName = "delayed_sum";

  // One push on n elements, in place: `share` * grad is its d / N (the caller folds 1/N and an
  // int8 frame's scale into it); `refresh`: this push completes N since the last refresh.
  // `state` is state_slots() * n floats, slot-major, zeros at first.
  void Apply(float* weights, const float* grad, float share, float* state, size_t n, bool refresh) const;

 private:
  DelayedNesterov(double lr, double momentum, bool nesterov) : lr_(lr), momentum_(momentum), nesterov_(nesterov) {}

  double lr_;
  double momentum_;
  bool nesterov_;
};

}  // namespace hetps
