#include "trainer/device/device.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include <cctype>
#include <limits>

#include "trainer/device/torch_build.h"

#if TORCH_VERSION_MAJOR >= 2
#include <torch/mps.h>
#else
#include <ATen/Context.h>
#endif

namespace hetps {
namespace {

constexpr const char* kAcceptedForms = "auto, cpu, cuda, cuda:N or mps";

bool MpsAvailable() {
#if TORCH_VERSION_MAJOR >= 2
  return torch::mps::is_available();
#else
  return at::hasMPS();
#endif
}

std::string Devices(int64_t count) {
  return std::to_string(count) + (count == 1 ? " device" : " devices");
}

// Why CUDA device `index` cannot be used (without the "--device" prefix), or empty.
std::string CudaProblem(int64_t index) {
  if (!TorchHasCuda()) return "this LibTorch build has no CUDA support";
  const int64_t count = static_cast<int64_t>(torch::cuda::device_count());
  if (count == 0) return "no CUDA device is visible";
  if (index >= count) return "no CUDA device " + std::to_string(index) + " is visible, " + Devices(count);
  return "";
}

std::string MpsProblem() {
  if (!TorchHasMps()) return "this LibTorch build has no MPS support";
  if (!MpsAvailable()) return "no MPS device is available (needs Apple silicon and macOS 12.3 or newer)";
  return "";
}

Status Unusable(const std::string& spec, const std::string& problem) {
  return Status::Unavailable("--device " + spec + ": " + problem + " (" + TorchBuildDescription() + ")");
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

Result<torch::Device> SelectAuto(std::string* why) {
  const std::string cuda = CudaProblem(0);
  if (cuda.empty()) {
    *why = "auto: cuda:0, the first of " + Devices(static_cast<int64_t>(torch::cuda::device_count())) +
           " (CUDA before MPS and the CPU)";
    return torch::Device(torch::kCUDA, 0);
  }
  const std::string mps = MpsProblem();
  if (mps.empty()) {
    *why = "auto: mps, the Apple GPU (CUDA: " + cuda + ")";
    return torch::Device(torch::kMPS, 0);
  }
  *why = "auto: the CPU (CUDA: " + cuda + "; MPS: " + mps + "; " + TorchBuildDescription() + ")";
  return torch::Device(torch::kCPU);
}

}  // namespace

Result<torch::Device> SelectDevice(const std::string& spec, std::string* why) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  if (spec == "auto") return SelectAuto(why);
  *why = "asked for " + spec;
  if (spec == "cpu") return torch::Device(torch::kCPU);
  if (spec == "mps") {
    const std::string problem = MpsProblem();
    if (!problem.empty()) return Unusable(spec, problem);
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
  const std::string problem = CudaProblem(index);
  if (!problem.empty()) return Unusable(spec, problem);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string DeviceDescription(const torch::Device& device) {
  return device.str();
}

}  // namespace hetps
