// Test support for the trainer's step options (--forward-during-pull, --local-steps): the small
// MLP job their tests run through real trainers, and the model weights they compare with plain
// SGD's.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

#include "tests/support/local_cluster.h"
#include "trainer/data/tensor_dataset.h"

namespace hetps::testing {

// The mlp on 4,000 samples in chunks of 500, global batch 32, SGD at lr 0.05 with momentum 0.5
// (0.9 with a step of staleness overshoots: 0.43 against 0.75 in 4,000 samples), evaluated every
// 1,000 samples, on one server. `adjust_job` may change it; trainer t gets the options
// `adjust_trainer` sets and, with `staged`, the GPU's data path on the CPU (a fake copy stream).
// The run's `job` is the cluster's failure to start, if it did not.
TrainersRun RunMlpJob(ConsistencyMode mode, uint32_t trainers,
                      const std::function<void(JobOptions&)>& adjust_job,
                      const std::function<void(uint32_t, TrainerOptions&)>& adjust_trainer,
                      bool staged = false);

// One trainer of the mlp in async, plain SGD at `lr` without momentum over a global batch of
// `batch`, joined to its started cluster, with the training split: where a StepRunner's steps
// are compared with SGD computed by the test (MlpGradient).
struct OneTrainerSgd {
  OneTrainerSgd(uint32_t batch, double lr);
  // Loads the training split, starts the cluster and joins the scripted mlp.
  Status Start();

  Dataset train;
  LocalCluster cluster;
  ScriptedModel joined;
};

// Leaves in each of the model's parameters the gradient of its cross-entropy loss on samples
// `indices` of `train`, at its current weights (earlier gradients dropped).
void MlpGradient(Model& model, const Dataset& train, const std::vector<int64_t>& indices);

// Copies of the model's parameters.
std::vector<torch::Tensor> ModelWeights(Model& model);

// Whether a and b hold the same number of tensors, each torch::allclose to its pair.
bool AllClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, double rtol,
              double atol);

}  // namespace hetps::testing
