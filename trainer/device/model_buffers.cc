#include "trainer/device/model_buffers.h"

#include <torch/torch.h>

namespace hetps {
namespace {

wire::DType ToWireDType(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return wire::DType::F32;
    case c10::ScalarType::Half:
      return wire::DType::F16;
    case c10::ScalarType::BFloat16:
      return wire::DType::BF16;
    case c10::ScalarType::Double:
      return wire::DType::F64;
    case c10::ScalarType::Long:
      return wire::DType::I64;
    case c10::ScalarType::Int:
      return wire::DType::I32;
    case c10::ScalarType::Byte:
      return wire::DType::U8;
    default:
      return wire::DType::Other;
  }
}

}  // namespace

Result<std::unique_ptr<ModelBuffers>> ModelBuffers::Create(Model& model, torch::Device device) {
  std::unique_ptr<ModelBuffers> buffers(new ModelBuffers());
  buffers->on_cpu_ = device.is_cpu();
  for (const auto& item : model.named_parameters()) {
    const torch::Tensor& param = item.value();
    TensorInfo info;
    info.name = item.key();
    info.shape = param.sizes().vec();
    info.dtype = ToWireDType(param.scalar_type());
    if (info.dtype != wire::DType::F32) {
      return Status::InvalidArgument("parameter " + info.ToString() +
                                     " is not float32; hetps servers hold float32 parameters");
    }
    if (!param.is_contiguous()) {
      return Status::InvalidArgument("parameter " + info.name + " is not contiguous");
    }
    torch::Tensor host = buffers->on_cpu_ ? param : torch::empty(param.sizes(), torch::kFloat32);
    buffers->params_.push_back(param);
    buffers->host_.push_back(host);
    buffers->targets_.push_back(host.data_ptr<float>());
    buffers->signature_.push_back(std::move(info));
  }
  return buffers;
}

void ModelBuffers::CommitWeights() {
  if (on_cpu_) return;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) params_[i].copy_(host_[i], /*non_blocking=*/false);
}

HostTensors ModelBuffers::HostWeights() {
  auto tensors = std::make_shared<std::vector<torch::Tensor>>();
  HostTensors out;
  for (const torch::Tensor& param : params_) {
    torch::Tensor host = param.detach().to(torch::kCPU).contiguous();
    out.data.push_back(host.data_ptr<float>());
    tensors->push_back(std::move(host));
  }
  out.owner = tensors;
  return out;
}

std::pair<const float*, std::shared_ptr<const void>> ModelBuffers::HostGradient(size_t i) {
  const torch::Tensor& param = params_[i];
  torch::Tensor grad = param.grad();
  auto host = std::make_shared<torch::Tensor>(grad.defined() ? grad.detach().to(torch::kCPU).contiguous()
                                                             : torch::zeros(param.sizes(), torch::kFloat32));
  return {host->data_ptr<float>(), host};
}

HostTensors ModelBuffers::HostGradients() {
  auto owners = std::make_shared<std::vector<std::shared_ptr<const void>>>();
  HostTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto [data, owner] = HostGradient(i);
    out.data.push_back(data);
    owners->push_back(std::move(owner));
  }
  out.owner = owners;
  return out;
}

void ModelBuffers::SetGradientHook(GradientHook hook) {
  if (!hook_) {
    hook_ = std::make_shared<GradientHook>();
    for (size_t i = 0; i < params_.size(); ++i) {
      params_[i].register_hook([hook = hook_, i](const torch::Tensor& grad) {
        if (*hook) (*hook)(i, grad);
      });
    }
  }
  *hook_ = std::move(hook);
}

void ModelBuffers::ClearGradients() {
  for (torch::Tensor& param : params_) param.mutable_grad() = torch::Tensor();
}

}  // namespace hetps
