#include "trainer/local_sgd.h"

#include <utility>

#include <torch/torch.h>

namespace hetps {

LocalSgd::LocalSgd(std::vector<torch::Tensor> parameters, double lr_per_sample)
    : parameters_(std::move(parameters)), lr_per_sample_(lr_per_sample) {}

void LocalSgd::Begin() {
  if (sums_.empty()) {
    for (const torch::Tensor& parameter : parameters_) sums_.push_back(torch::zeros_like(parameter));
    return;
  }
  for (torch::Tensor& sum : sums_) sum.zero_();
}

void LocalSgd::Step(int64_t samples) {
  torch::NoGradGuard no_grad;
  const double weight = static_cast<double>(samples);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const torch::Tensor& grad = parameters_[i].grad();
    if (!grad.defined()) continue;  // not in this micro-batch's graph
    sums_[i].add_(grad, weight);
    parameters_[i].add_(grad, -lr_per_sample_ * weight);
  }
}

void LocalSgd::Finish(int64_t samples) {
  const double scale = 1.0 / static_cast<double>(samples);
  for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].mutable_grad() = sums_[i] * scale;
}

}  // namespace hetps
