// Optimizer: one training step of SGD, Adam, AdamW or Adagrad over raw float buffers.
//
// Each server partition owns its weights and optimizer state as flat float arrays and calls Apply
// on them; the Optimizer holds only the hyper-parameters. It is immutable after Create, so one
// instance may be shared, and Apply may be called concurrently on disjoint buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/optimizer_options.h"
#include "common/status.h"

namespace hetps {

class Optimizer {
 public:
  // Validates `options` (ValidateOptimizerOptions) and builds the optimizer of `options.kind`.
  // InvalidArgument naming the offending field ("optimizer.<field>") otherwise.
  static Result<std::unique_ptr<Optimizer>> Create(const OptimizerOptions& options);

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const OptimizerOptions& options() const { return options_; }

  // Floats of optimizer state per parameter element: SGD 0 (1 with momentum), Adam and AdamW 2
  // (3 with amsgrad), Adagrad 1.
  virtual int state_slots() const = 0;

  // The state slots' names, in slot order, as torch::optim names them in a state_dict:
  // momentum_buffer (SGD), exp_avg, exp_avg_sq, max_exp_avg_sq (Adam, AdamW), sum (Adagrad).
  // Checkpoints store each slot under its name.
  std::vector<std::string> state_names() const;

  // Writes the initial state of n elements into `state` (state_slots() * n floats, slot-major:
  // slot k of element i is state[k * n + i]). Zeros, except Adagrad's sum, which starts at
  // initial_accumulator_value. Writes nothing when state_slots() is 0 (`state` may be null).
  virtual void InitState(float* state, size_t n) const;

  // How lr_scale k, a step's share of the global batch, enters a step.
  enum class Share {
    // A sync round of k global batches is k of a step: the learning rate is lr * k and, for SGD
    // with momentum, the gradient enters the buffer weighted by k and the buffer decays by
    // momentum^k (torch's step with momentum^k, lr * k, on k * grad). A short round (trainers out
    // of data at an epoch's end, balanced sync's one-sample rounds) moves the weights and the
    // buffer in proportion to its samples, and two half rounds come close to a whole one.
    kRound,
    // SGD with momentum weights the gradient by k as it enters the buffer and steps by lr: pushes
    // of several sizes (async, ssp: local steps, larger batches) arrive side by side, not one
    // after another, so none stands for elapsed time; each sample's gradient weighs the same in
    // the buffer, instead of a large push stepping every gradient buffered as far. The other
    // optimizers (and SGD without momentum) take lr * k, as kRound.
    kSamples,
  };

  // One optimizer step on n elements, in place, in one pass over weights, gradient and state.
  // The gradient used is grad_scale * grad[i] (the caller folds the weighting of several
  // trainers' summed gradients, or a stale push's, into grad_scale); lr_scale enters as `share`
  // says. `step` is this buffer's 1-based
  // update count: it drives the bias corrections, the first-step initialisation of SGD's momentum
  // buffer and Adagrad's lr decay, so it must be 1 on the first call after InitState and grow by one.
  // `state` is as written by InitState; none of the buffers may overlap.
  // The result equals torch::optim's (LibTorch 1.13) step on the same values at lr * lr_scale,
  // up to rounding; for SGD with momentum, torch's step on lr_scale * grad with weight decay
  // lr_scale * wd, at lr (kSamples) or at lr * lr_scale with momentum^lr_scale (kRound).
  // `lr` replaces options().lr for this step (a schedule's, ScheduledLr), wherever torch's step
  // reads its param group's lr (AdamW's decoupled decay included); negative: options().lr.
  void Apply(float* weights, const float* grad, float grad_scale, float* state, size_t n, int64_t step,
             float lr_scale, Share share, double lr = -1) const {
    Step(weights, grad, grad_scale, state, n, step, lr_scale, share, lr < 0 ? options_.lr : lr);
  }

 protected:
  explicit Optimizer(const OptimizerOptions& options) : options_(options) {}

  // Apply's step at the learning rate `lr`.
  virtual void Step(float* weights, const float* grad, float grad_scale, float* state, size_t n, int64_t step,
                    float lr_scale, Share share, double lr) const = 0;

 private:
  const OptimizerOptions options_;
};

}  // namespace hetps
