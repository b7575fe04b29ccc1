// ModelBuffers: the bridge between a model's parameters (on any torch::Device) and the host
// float32 buffers the PS client sends and fills, one per parameter in named_parameters() order.
//
// On the CPU the host buffers are the parameters themselves (no copy). With a CopyStream (CUDA,
// MPS, or a test's) the pulled weights land in host buffers allocated once (pinned on CUDA) and
// go to the device with non-blocking copies on the copy stream, which the compute stream waits
// for; gradients leave through GradientStaging. Every LibTorch failure is a Status naming the
// tensor and the device. Owned and used by one trainer thread.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "common/shard_map.h"
#include "common/status.h"
#include "trainer/device/copy_stream.h"
#include "trainer/models/models.h"

namespace hetps {

// Host buffers and the owner that keeps them alive while ZeroMQ still sends from them.
struct HostTensors {
  std::vector<const float*> data;
  std::shared_ptr<const void> owner;
};

// The wire's name for a tensor's element type; wire::DType::Other when it has none.
wire::DType WireDTypeOf(c10::ScalarType type);

class ModelBuffers {
 public:
  // InvalidArgument naming the parameter when one is not float32; Internal naming it and the
  // device when its host buffer cannot be had. `copy_stream` (may be null on the CPU) must
  // outlive the buffers.
  static Result<std::unique_ptr<ModelBuffers>> Create(Model& model, torch::Device device,
                                                      CopyStream* copy_stream = nullptr);

  // Names, shapes and dtypes of the parameters, in order.
  const std::vector<TensorInfo>& signature() const { return signature_; }

  // Where pulled weights are written; call FinishWeightCopies() before writing them and
  // CommitWeights() afterwards.
  const std::vector<float*>& weight_targets() const { return targets_; }
  // Enqueues the copies of the weights written into weight_targets() to the device and makes the
  // compute stream wait for them; the host goes on (nothing to do on the CPU).
  Status CommitWeights();
  // Waits until the last CommitWeights' copies have finished, so weight_targets() may be written.
  Status FinishWeightCopies();

  // The current weights on the host, e.g. to offer as the initial model.
  Result<HostTensors> HostWeights();
  // The gradients of the last backward on the host (zeros for a parameter without one).
  Result<HostTensors> HostGradients();
  // The same for parameter i alone: its host buffer and the owner that keeps it alive.
  Result<std::pair<const float*, std::shared_ptr<const void>>> HostGradient(size_t i);
  // Parameter i's gradient of the last backward on its device (undefined when it has none).
  torch::Tensor DeviceGradient(size_t i) const { return params_[i].grad(); }
  // The model's parameters on its device, in order.
  const std::vector<torch::Tensor>& parameters() const { return params_; }

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
  // Internal naming tensor i, the device and `what` was being done.
  Status TorchFailure(size_t i, const std::string& what, const c10::Error& error) const;

  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> host_;  // staging buffers; the parameters themselves on the CPU
  std::vector<float*> targets_;
  std::vector<TensorInfo> signature_;
  torch::Device device_{torch::kCPU};
  CopyStream* copy_stream_ = nullptr;  // null: the host buffers are the parameters
  std::shared_ptr<CopyStream::Event> weights_copied_;
  // Shared with the autograd hooks, which may outlive this object inside the model.
  std::shared_ptr<GradientHook> hook_;
};

}  // namespace hetps
