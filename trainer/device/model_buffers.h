// ModelBuffers: the bridge between a model's parameters (on any torch::Device) and the host
// float32 buffers the PS client sends and fills, one per parameter in named_parameters() order.
//
// On the CPU the host buffers are the parameters themselves (no copy); on CUDA or MPS the weights
// are staged through host tensors and gradients copied to the host before sending. Owned and used
// by one trainer thread.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "common/shard_map.h"
#include "common/status.h"
#include "trainer/models/models.h"

namespace hetps {

// Host buffers and the owner that keeps them alive while ZeroMQ still sends from them.
struct HostTensors {
  std::vector<const float*> data;
  std::shared_ptr<const void> owner;
};

class ModelBuffers {
 public:
  // InvalidArgument naming the parameter when one is not float32.
  static Result<std::unique_ptr<ModelBuffers>> Create(Model& model, torch::Device device);

  // Names, shapes and dtypes of the parameters, in order.
  const std::vector<TensorInfo>& signature() const { return signature_; }

  // Where pulled weights are written; call CommitWeights() afterwards.
  const std::vector<float*>& weight_targets() const { return targets_; }
  // Moves weights written into weight_targets() onto the device (nothing to do on the CPU).
  void CommitWeights();

  // The current weights on the host, e.g. to offer as the initial model.
  HostTensors HostWeights();
  // The gradients of the last backward on the host (zeros for a parameter without one).
  HostTensors HostGradients();
  // The same for parameter i alone: its host buffer and the owner that keeps it alive.
  std::pair<const float*, std::shared_ptr<const void>> HostGradient(size_t i);

  // Called with (i, gradient) each time backward has computed parameter i's gradient, before it
  // is stored in the parameter's .grad. On the CPU, backward and so the call run on the thread
  // that called backward; on CUDA and MPS on a device thread of LibTorch's.
  using GradientHook = std::function<void(size_t, const torch::Tensor&)>;
  // Registers the autograd hooks on the first call; later calls replace `hook`, and an empty
  // one turns the calls off.
  void SetGradientHook(GradientHook hook);
  // Forgets the gradients, so the next backward allocates fresh ones and buffers still being
  // sent stay untouched.
  void ClearGradients();

 private:
  ModelBuffers() = default;

  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> host_;  // staging buffers; the parameters themselves on the CPU
  std::vector<float*> targets_;
  std::vector<TensorInfo> signature_;
  bool on_cpu_ = true;
  // Shared with the autograd hooks, which may outlive this object inside the model.
  std::shared_ptr<GradientHook> hook_;
};

}  // namespace hetps
