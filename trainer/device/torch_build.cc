#include "trainer/device/torch_build.h"

#include <ATen/Version.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/version.h>

namespace hetps {
namespace {

// A backend registers its device guard when its library is loaded, so this tells a build without
// the backend (or one whose CUDA library the linker dropped) from a machine without the device.
bool BuiltWith(c10::DeviceType type) {
  return c10::impl::hasDeviceGuardImpl(type);
}

// The CUDA runtime version among show_config()'s build settings ("CUDA_VERSION=13.2,"); the
// CUDA headers that define it as a macro are not part of every LibTorch.
std::string CudaVersion() {
  const std::string config = at::show_config();
  const std::string key = "CUDA_VERSION=";
  const size_t at = config.find(key);
  if (at == std::string::npos) return "version unknown";
  const size_t begin = at + key.size();
  const size_t end = config.find_first_of(", \n", begin);
  return config.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace

bool TorchHasCuda() {
  return BuiltWith(c10::DeviceType::CUDA);
}

bool TorchHasMps() {
  return BuiltWith(c10::DeviceType::MPS);
}

std::string TorchBuildDescription() {
  return std::string("LibTorch ") + TORCH_VERSION + " (CUDA " + (TorchHasCuda() ? CudaVersion() : "no") +
         ", MPS " + (TorchHasMps() ? "yes" : "no") + ")";
}

}  // namespace hetps
