#include "trainer/step_runner.h"

#include <memory>
#include <thread>

#include <torch/torch.h>

#include "trainer/device/device.h"

namespace hetps {

StepRunner::StepRunner(Model& model, ModelBuffers& buffers, PsClient& client, const Dataset& train,
                       torch::Device device, Options options)
    : model_(model),
      buffers_(buffers),
      client_(client),
      train_(train),
      device_(device),
      options_(std::move(options)),
      // Hooks run on the thread that calls backward only on the CPU; elsewhere they would run on
      // a device thread that may not touch the client's sockets.
      overlapping_(options_.overlap && device.is_cpu()),
      pacer_(options_.slowdown),
      tensors_(buffers.signature().size()),
      loop_thread_(std::this_thread::get_id()) {
  if (overlapping_) {
    buffers_.SetGradientHook([this](size_t tensor, const torch::Tensor& grad) { OnGradient(tensor, grad); });
  }
}

StepRunner::~StepRunner() {
  if (overlapping_) buffers_.SetGradientHook(nullptr);
}

Result<StepRunner::Outcome> StepRunner::Run(uint64_t clock, const std::vector<int64_t>& indices) {
  Outcome outcome;
  client_.BeginStep(clock, static_cast<uint32_t>(indices.size()));
  if (!indices.empty()) HETPS_RETURN_IF_ERROR(Compute(indices, &outcome));
  auto pulled = client_.FinishStep(buffers_.weight_targets());
  if (!pulled.ok()) return pulled.status();
  buffers_.CommitWeights();
  outcome.pulled = *pulled;
  return outcome;
}

Status StepRunner::Compute(const std::vector<int64_t>& indices, Outcome* outcome) {
  pacer_.Start();
  push_status_ = Status::Ok();
  try {
    Batch batch = MakeBatch(train_, indices.data(), indices.size(), device_);
    buffers_.ClearGradients();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model_.forward(batch.input), batch.target);
    in_backward_ = true;
    loss.backward();
    in_backward_ = false;
    outcome->loss = loss.item<double>();  // waits for the device to finish
  } catch (const c10::Error& e) {
    in_backward_ = false;
    return Status::Internal("LibTorch failed in a training step of model " + options_.model_name + " on " +
                            DeviceDescription(device_) + ": " + e.what_without_backtrace());
  }
  HETPS_RETURN_IF_ERROR(push_status_);
  pacer_.Wait();
  // Whatever the hooks did not push: everything without overlap, a parameter without gradient.
  for (size_t t = 0; t < tensors_; ++t) {
    if (client_.Pushed(t)) continue;
    auto [data, owner] = buffers_.HostGradient(t);
    HETPS_RETURN_IF_ERROR(client_.PushTensor(t, data, std::move(owner)));
  }
  outcome->compute_seconds = pacer_.Seconds();
  return Status::Ok();
}

void StepRunner::OnGradient(size_t tensor, const torch::Tensor& grad) {
  if (!in_backward_ || !push_status_.ok() || std::this_thread::get_id() != loop_thread_) return;
  pacer_.Wait();
  auto held = std::make_shared<torch::Tensor>(grad.detach().contiguous());
  push_status_ = client_.PushTensor(tensor, held->data_ptr<float>(), held);
}

}  // namespace hetps
