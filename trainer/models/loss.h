// The losses a trainer trains with, and the test-set measures each implies: accuracy for the
// classification losses (cross_entropy, nll), mean squared error and R² for mse. The
// classification losses also take sequences (a language model's next-token targets), scored
// position by position: their mean loss in nats is what perplexity (e^loss) and bits per token
// (loss / ln 2) are computed from.
//
// Pure functions over tensors on any device, and a plain accumulator; used by one thread at a time.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "common/job_config.h"

namespace hetps {

// The batch's mean loss of `output` against the int64 labels `target` [B]:
//   cross_entropy: output [B, C] logits;  nll: output [B, C] log-probabilities;
//   mse: output [B] or [B, 1], against the labels as float32 values.
// Sequences: target [B, T] and output [B, T, C] for cross_entropy and nll, the mean over all
// B x T positions (as the loss of the flattened [B*T, C] output against [B*T] targets).
torch::Tensor BatchLoss(Loss loss, const torch::Tensor& output, const torch::Tensor& target);

// Sums over the test set's batches.
class TestMeasures {
 public:
  explicit TestMeasures(Loss loss) : loss_(loss) {}

  // Adds one batch (waits for the device).
  void Add(const torch::Tensor& output, const torch::Tensor& target);

  int64_t samples() const { return samples_; }
  // Targets scored: samples x positions per sample (sequences), else samples.
  int64_t positions() const { return positions_; }
  double mean_loss() const;  // per position; mse: the mean squared error
  double accuracy() const;   // classification, per position; 0 for mse
  // mse: 1 - SSE / SST over the samples added (SST about their mean); 0 for classification, and
  // NaN when every target is the same.
  double r_squared() const;

 private:
  Loss loss_;
  int64_t samples_ = 0;
  int64_t positions_ = 0;
  double loss_sum_ = 0;
  int64_t correct_ = 0;
  double target_sum_ = 0;
  double target_square_sum_ = 0;
};

}  // namespace hetps
