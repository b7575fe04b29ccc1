// A model's pass over a whole test set: its mean loss and accuracy (R² for loss mse), for the
// trainer's evaluations, on its loop thread (trainer/evaluator.h) and on the snapshot worker's
// (trainer/snapshot_worker.h).
//
// RunTestPass may be called from any thread, each with a model of its own: a Model is used by one
// thread at a time, and a Dataset may be shared (trainer/data/tensor_dataset.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <torch/types.h>

#include "common/job_config.h"
#include "common/status.h"
#include "trainer/data/tensor_dataset.h"
#include "trainer/models/models.h"

namespace hetps {

struct TestPassOptions {
  uint32_t batch_size = 250;        // test samples per forward pass
  std::string model_name;           // for logs and error messages
  Loss loss = Loss::kCrossEntropy;  // mse: R² instead of accuracy
};

struct TestOutcome {
  double mean_loss = 0;  // per position (token data: per token); mse: the mean squared error
  double accuracy = 0;   // classification only
  double r_squared = 0;  // mse only
  uint64_t samples = 0;
  uint64_t positions = 0;  // targets scored: samples x positions per sample for sequences
  double seconds = 0;      // the pass's wall time
};

// Runs `model` over every sample of `test` in file order, `options.batch_size` at a time, in eval
// mode without gradients, the batches on `device`; the model is in training mode afterwards.
// `keep_going` is called after every batch and its error ends the pass (e.g. the scheduler gone,
// the worker stopping). Internal naming the model and the device when LibTorch fails.
Result<TestOutcome> RunTestPass(Model& model, const Dataset& test, torch::Device device,
                                const TestPassOptions& options, const std::function<Status()>& keep_going);

// "evaluated weights version V on N test samples: accuracy A, loss L (S s)", for the logs.
std::string DescribeTestOutcome(const TestOutcome& outcome, uint64_t version, Loss loss);

}  // namespace hetps
