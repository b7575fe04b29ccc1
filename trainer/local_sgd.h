// LocalSgd: a trainer's local steps (hetps-trainer --local-steps). Between two pushes the trainer
// steps its own copy of the weights by plain SGD, a micro-batch of m samples by lr * m / global
// batch (what the servers' SGD does with a push of m samples, less its momentum and weight
// decay), and sums the micro-batches' gradients, each weighted by its samples. The push then
// carries that sum over the step's n samples as its gradient: the servers' step of
// lr * n / global batch on it moves their weights as far as the local steps moved the trainer's,
// and their momentum and weight decay take it once, as any push of n samples.
//
// Used by the trainer's loop thread only (StepRunner). LibTorch failures throw c10::Error.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace hetps {

class LocalSgd {
 public:
  // `parameters`: the model's, on its device; `lr_per_sample`: the optimizer's lr over the
  // global batch.
  LocalSgd(std::vector<torch::Tensor> parameters, double lr_per_sample);

  // Before a step's first micro-batch: the sums start at zero.
  void Begin();
  // After the backward of a micro-batch of `samples` samples: adds its gradients to the sums and
  // steps the weights by them.
  void Step(int64_t samples);
  // After the last: every parameter's gradient becomes its sum over the step's `samples`
  // samples, ready to be pushed; the weights stay where the steps took them.
  void Finish(int64_t samples);

 private:
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> sums_;  // sample-weighted gradient sums, allocated once
  double lr_per_sample_;
};

}  // namespace hetps
