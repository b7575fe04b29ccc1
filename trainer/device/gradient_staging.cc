#include "trainer/device/gradient_staging.h"

#include <torch/torch.h>

#include "common/dtype.h"

namespace hetps {
namespace {

c10::ScalarType ScalarTypeOf(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::BF16:
      return torch::kBFloat16;
    case wire::DType::F16:
      return torch::kFloat16;
    default:
      return torch::kFloat32;
  }
}

}  // namespace

GradientStaging::GradientStaging(const std::vector<TensorInfo>& signature, torch::Device device,
                                 wire::DType wire_dtype, CopyStream& stream)
    : signature_(signature),
      device_(device),
      wire_dtype_(wire_dtype),
      host_dtype_(ScalarTypeOf(wire_dtype)),
      stream_(stream) {}

Result<std::unique_ptr<GradientStaging>> GradientStaging::Create(const std::vector<TensorInfo>& signature,
                                                                 torch::Device device, wire::DType wire_dtype,
                                                                 CopyStream& stream) {
  if (!IsWireFloat(wire_dtype)) {
    return Status::InvalidArgument(std::string("gradients cannot travel as ") + DTypeName(wire_dtype));
  }
  std::unique_ptr<GradientStaging> staging(new GradientStaging(signature, device, wire_dtype, stream));
  for (size_t t = 0; t < signature.size(); ++t) {
    try {
      auto slot = std::make_shared<Slot>();
      slot->host = HostBuffer(stream, signature[t].shape, staging->host_dtype_);
      staging->slots_.push_back(std::move(slot));
    } catch (const c10::Error& e) {
      return Status::Internal("allocating the host buffer for the gradient of " + staging->Describe(t) +
                              ": " + e.what_without_backtrace());
    }
  }
  return staging;
}

std::string GradientStaging::Describe(size_t tensor) const {
  return signature_[tensor].name + " on " + device_.str();
}

void GradientStaging::BeginStep() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    staged_.clear();
    error_ = Status::Ok();
  }
  // A buffer still referenced by a ZeroMQ message of the last step must not be overwritten: the
  // step's replies have normally been received, so this is rare.
  for (size_t t = 0; t < slots_.size(); ++t) {
    if (slots_[t].use_count() == 1) continue;
    auto slot = std::make_shared<Slot>();
    slot->host = torch::empty_like(slots_[t]->host);
    slots_[t] = std::move(slot);
    ++replaced_buffers_;
  }
}

void GradientStaging::Stage(size_t tensor, const torch::Tensor& grad) {
  Staged staged;
  staged.tensor = tensor;
  Status failed;
  try {
    // On the gradient's device and stream: the narrowing runs there, before the copy.
    staged.source = grad.detach().to(host_dtype_).contiguous();
    staged.copied = stream_.Copy(slots_[tensor]->host, staged.source);
  } catch (const c10::Error& e) {
    failed = Status::Internal("copying the gradient of " + Describe(tensor) +
                              " to the host: " + e.what_without_backtrace());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed.ok()) {
      if (error_.ok()) error_ = failed;
    } else {
      staged_.push_back(std::move(staged));
    }
  }
  staged_cv_.notify_one();
}

Result<std::optional<size_t>> GradientStaging::Next(std::chrono::milliseconds timeout) {
  Staged staged;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    staged_cv_.wait_for(lock, timeout, [this] { return !error_.ok() || !staged_.empty(); });
    if (!error_.ok()) return error_;
    if (staged_.empty()) return std::optional<size_t>();
    staged = std::move(staged_.front());
    staged_.pop_front();
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    staged.copied->Synchronize();
    copy_wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (const c10::Error& e) {
    return Status::Internal("copying the gradient of " + Describe(staged.tensor) +
                            " to the host: " + e.what_without_backtrace());
  }
  return std::optional<size_t>(staged.tensor);
}

}  // namespace hetps
