#include "trainer/device/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cctype>
#include <limits>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/mps.h>
#else
#include <ATen/Context.h>
#endif

namespace hetps {
namespace {

constexpr const char* kAcceptedForms = "auto, cpu, cuda, cuda:N or mps";

// A backend registers its device guard when its library is loaded, so this tells a build without
// the backend (or one whose CUDA library the linker dropped) from a machine without the device.
bool BuiltWith(c10::DeviceType type) {
  return c10::impl::hasDeviceGuardImpl(type);
}

bool MpsAvailable() {
#if TORCH_VERSION_MAJOR >= 2
  return torch::mps::is_available();
#else
  return at::hasMPS();
#endif
}

Status Unusable(const std::string& spec, const std::string& reason) {
  return Status::Unavailable("--device " + spec + ": " + reason);
}

// Why CUDA device `index` cannot be used, or Ok.
Status CheckCuda(const std::string& spec, int64_t index) {
  if (!BuiltWith(c10::DeviceType::CUDA)) {
    return Unusable(spec, "this LibTorch build has no CUDA support");
  }
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (count == 0) return Unusable(spec, "no CUDA device is visible");
  if (index >= count) {
    return Unusable(spec, "no CUDA device " + std::to_string(index) + " is visible (" +
                              std::to_string(count) + (count == 1 ? " device)" : " devices)"));
  }
  return Status::Ok();
}

Status CheckMps(const std::string& spec) {
  if (!BuiltWith(c10::DeviceType::MPS)) {
    return Unusable(spec, "this LibTorch build has no MPS support");
  }
  if (!MpsAvailable()) {
    return Unusable(spec, "no MPS device is available (needs Apple silicon and macOS 12.3 or newer)");
  }
  return Status::Ok();
}

// The N of "cuda:N": decimal digits only, so "cuda:-1", "cuda:1x" and "cuda:" are malformed
// rather than silently meaning something else.
bool ParseDeviceIndex(const std::string& digits, int64_t* index) {
  if (digits.empty() || digits.size() > 4) return false;
  int64_t value = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value > std::numeric_limits<c10::DeviceIndex>::max()) return false;
  *index = value;
  return true;
}

}  // namespace

Result<torch::Device> SelectDevice(const std::string& spec) {
  if (spec == "cpu") return torch::Device(torch::kCPU);
  if (spec == "auto") {
    if (CheckCuda(spec, 0).ok()) return torch::Device(torch::kCUDA, 0);
    if (CheckMps(spec).ok()) return torch::Device(torch::kMPS, 0);
    return torch::Device(torch::kCPU);
  }
  if (spec == "mps") {
    HETPS_RETURN_IF_ERROR(CheckMps(spec));
    return torch::Device(torch::kMPS, 0);
  }
  int64_t index = 0;
  const std::string cuda_prefix = "cuda:";
  const bool is_cuda = spec == "cuda" || (spec.compare(0, cuda_prefix.size(), cuda_prefix) == 0 &&
                                          ParseDeviceIndex(spec.substr(cuda_prefix.size()), &index));
  if (!is_cuda) {
    return Status::InvalidArgument("--device '" + spec + "' is not a device spec (expected " +
                                   kAcceptedForms + ")");
  }
  HETPS_RETURN_IF_ERROR(CheckCuda(spec, index));
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string DeviceDescription(const torch::Device& device) {
  return device.str();
}

}  // namespace hetps
