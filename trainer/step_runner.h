// StepRunner: one training step of a trainer. A batch goes through forward and backward; every
// gradient is handed to the PS client, from an autograd hook as backward produces it when
// overlapping (CPU), or after backward otherwise; then the weights that follow the step are
// written back into the model. --slowdown's sleeps (Pacer) happen here too.
//
// Borrows the model, its buffers, the PS client and the training data, which must outlive it.
// Used by the trainer's loop thread only, which owns the client's sockets: a hook that runs on
// another thread (a device thread of LibTorch) pushes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "common/status.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/device/model_buffers.h"
#include "trainer/models/models.h"
#include "trainer/pacer.h"
#include "trainer/ps_client.h"

namespace hetps {

class StepRunner {
 public:
  struct Options {
    bool overlap = true;     // push each gradient as backward produces it (CPU only)
    double slowdown = 1;     // >= 1: see Pacer
    std::string model_name;  // for error messages
  };

  // What a step did.
  struct Outcome {
    PsClient::PullResult pulled;  // the weights written back
    double loss = 0;              // mean training loss of the batch (0 without data)
    double compute_seconds = 0;   // forward, backward and the slowdown sleeps
  };

  StepRunner(Model& model, ModelBuffers& buffers, PsClient& client, const Dataset& train,
             torch::Device device, Options options);
  ~StepRunner();

  // Whether gradients are pushed during backward (overlap asked for, on the CPU).
  bool overlapping() const { return overlapping_; }

  // Step `clock` on the samples `indices` (none: takes part in the sync round without data).
  // A LibTorch failure is an Internal error naming the model's device; a failed push or pull is
  // the PS client's error.
  Result<Outcome> Run(uint64_t clock, const std::vector<int64_t>& indices);

 private:
  // Forward and backward on `indices`, pushing every gradient of the step under way.
  Status Compute(const std::vector<int64_t>& indices, Outcome* outcome);
  // The autograd hook: pushes tensor `tensor`'s gradient now, when overlapping on this thread.
  void OnGradient(size_t tensor, const torch::Tensor& grad);

  Model& model_;
  ModelBuffers& buffers_;
  PsClient& client_;
  const Dataset& train_;
  torch::Device device_;
  Options options_;
  bool overlapping_;
  Pacer pacer_;
  size_t tensors_;
  std::thread::id loop_thread_;  // the thread that owns the client's sockets
  bool in_backward_ = false;
  Status push_status_;  // the first failed push of the step under way
};

}  // namespace hetps
