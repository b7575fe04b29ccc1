#include "trainer/device/model_buffers.h"

#include <torch/torch.h>

namespace hetps {

wire::DType WireDTypeOf(c10::ScalarType type) {
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

Status ModelBuffers::TorchFailure(size_t i, const std::string& what, const c10::Error& error) const {
  return Status::Internal(what + " " + signature_[i].name + " on " + device_.str() + ": " +
                          error.what_without_backtrace());
}

Result<std::unique_ptr<ModelBuffers>> ModelBuffers::Create(Model& model, torch::Device device,
                                                           CopyStream* copy_stream) {
  std::unique_ptr<ModelBuffers> buffers(new ModelBuffers());
  buffers->device_ = device;
  buffers->copy_stream_ = copy_stream;
  if (copy_stream == nullptr && !device.is_cpu()) {
    return Status::Internal("the model on " + device.str() + " needs a copy stream");
  }
  for (const auto& item : model.named_parameters()) {
    const torch::Tensor& param = item.value();
    TensorInfo info;
    info.name = item.key();
    info.shape = param.sizes().vec();
    info.dtype = WireDTypeOf(param.scalar_type());
    if (info.dtype != wire::DType::F32) {
      return Status::InvalidArgument("parameter " + info.ToString() +
                                     " is not float32; hetps servers hold float32 parameters");
    }
    if (!param.is_contiguous()) {
      return Status::InvalidArgument("parameter " + info.name + " is not contiguous");
    }
    buffers->signature_.push_back(std::move(info));
    torch::Tensor host = param;
    if (copy_stream != nullptr) {
      try {
        host = HostBuffer(*copy_stream, param.sizes(), torch::kFloat32);
      } catch (const c10::Error& e) {
        return buffers->TorchFailure(buffers->signature_.size() - 1, "allocating the host weights of", e);
      }
    }
    buffers->params_.push_back(param);
    buffers->host_.push_back(host);
    buffers->targets_.push_back(host.data_ptr<float>());
  }
  return buffers;
}

Status ModelBuffers::CommitWeights() {
  if (copy_stream_ == nullptr) return Status::Ok();
  HETPS_RETURN_IF_ERROR(FinishWeightCopies());
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    try {
      weights_copied_ = copy_stream_->Copy(params_[i], host_[i]);
    } catch (const c10::Error& e) {
      return TorchFailure(i, "copying the weights of", e);
    }
  }
  if (!weights_copied_) return Status::Ok();
  try {
    // One stream runs the copies in order: the last one finishing means all have.
    copy_stream_->ComputeWaitsFor(*weights_copied_);
  } catch (const c10::Error& e) {
    return TorchFailure(params_.size() - 1, "waiting for the weights of", e);
  }
  return Status::Ok();
}

Status ModelBuffers::FinishWeightCopies() {
  if (!weights_copied_) return Status::Ok();
  std::shared_ptr<CopyStream::Event> copied = std::move(weights_copied_);
  try {
    copied->Synchronize();
  } catch (const c10::Error& e) {
    return TorchFailure(params_.size() - 1, "copying the weights of", e);
  }
  return Status::Ok();
}

Result<HostTensors> ModelBuffers::HostWeights() {
  auto tensors = std::make_shared<std::vector<torch::Tensor>>();
  HostTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    try {
      torch::Tensor host = params_[i].detach().to(torch::kCPU).contiguous();
      out.data.push_back(host.data_ptr<float>());
      tensors->push_back(std::move(host));
    } catch (const c10::Error& e) {
      return TorchFailure(i, "copying to the host the weights of", e);
    }
  }
  out.owner = tensors;
  return out;
}

Result<std::pair<const float*, std::shared_ptr<const void>>> ModelBuffers::HostGradient(size_t i) {
  try {
    const torch::Tensor& param = params_[i];
    torch::Tensor grad = param.grad();
    auto host =
        std::make_shared<torch::Tensor>(grad.defined() ? grad.detach().to(torch::kCPU).contiguous()
                                                       : torch::zeros(param.sizes(), torch::kFloat32));
    return std::pair<const float*, std::shared_ptr<const void>>(host->data_ptr<float>(), host);
  } catch (const c10::Error& e) {
    return TorchFailure(i, "copying to the host the gradient of", e);
  }
}

Result<HostTensors> ModelBuffers::HostGradients() {
  auto owners = std::make_shared<std::vector<std::shared_ptr<const void>>>();
  HostTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    HETPS_ASSIGN_OR_RETURN(auto gradient, HostGradient(i));
    out.data.push_back(gradient.first);
    owners->push_back(std::move(gradient.second));
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
