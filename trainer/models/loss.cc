#include "trainer/models/loss.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>

namespace hetps {
namespace {

// mse compares one value per sample: [B, 1] outputs are read as [B].
torch::Tensor Flat(const torch::Tensor& output) {
  return output.dim() == 2 && output.size(1) == 1 ? output.reshape({output.size(0)}) : output;
}

// The mean over the batch, or the sum with `sum`.
torch::Tensor ComputeLoss(Loss loss, const torch::Tensor& output, const torch::Tensor& target, bool sum) {
  namespace F = torch::nn::functional;
  if (loss != Loss::kMse && target.dim() == 2 && output.dim() == 3) {
    // Sequences: every position is one more sample.
    return ComputeLoss(loss, output.reshape({-1, output.size(2)}), target.reshape({-1}), sum);
  }
  switch (loss) {
    case Loss::kMse: {
      auto options = F::MSELossFuncOptions();
      if (sum) options.reduction(torch::kSum);
      return F::mse_loss(Flat(output), target.to(output.scalar_type()), options);
    }
    case Loss::kNll: {
      auto options = F::NLLLossFuncOptions();
      if (sum) options.reduction(torch::kSum);
      return F::nll_loss(output, target, options);
    }
    default: {
      auto options = F::CrossEntropyFuncOptions();
      if (sum) options.reduction(torch::kSum);
      return F::cross_entropy(output, target, options);
    }
  }
}

}  // namespace

torch::Tensor BatchLoss(Loss loss, const torch::Tensor& output, const torch::Tensor& target) {
  return ComputeLoss(loss, output, target, /*sum=*/false);
}

void TestMeasures::Add(const torch::Tensor& output, const torch::Tensor& target) {
  samples_ += target.size(0);
  positions_ += loss_ == Loss::kMse ? target.size(0) : target.numel();
  loss_sum_ += ComputeLoss(loss_, output, target, /*sum=*/true).item<double>();
  if (loss_ == Loss::kMse) {
    const torch::Tensor y = target.to(torch::kFloat64);
    target_sum_ += y.sum().item<double>();
    target_square_sum_ += y.square().sum().item<double>();
  } else {
    correct_ += output.argmax(-1).eq(target).sum().item<int64_t>();
  }
}

double TestMeasures::mean_loss() const {
  return positions_ > 0 ? loss_sum_ / positions_ : 0;
}

double TestMeasures::accuracy() const {
  return positions_ > 0 && loss_ != Loss::kMse ? static_cast<double>(correct_) / positions_ : 0;
}

double TestMeasures::r_squared() const {
  if (loss_ != Loss::kMse || samples_ == 0) return 0;
  const double n = static_cast<double>(samples_);
  const double total = target_square_sum_ - target_sum_ * target_sum_ / n;
  if (!(total > 0)) return std::numeric_limits<double>::quiet_NaN();
  return 1 - loss_sum_ / total;
}

}  // namespace hetps
