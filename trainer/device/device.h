// Choosing the device a trainer computes on from the --device flag, and describing it for logs.
//
// Pure functions over the LibTorch build and the devices visible to this process; they own
// nothing and may be called from any thread.
#pragma once

#include <string>

#include <torch/types.h>

#include "common/status.h"

namespace hetps {

// Parses and checks a device spec:
//   "auto"    CUDA device 0 if CUDA is usable, else MPS if usable, else the CPU;
//   "cpu";
//   "cuda"    CUDA device 0;  "cuda:N"  CUDA device N (decimal);
//   "mps"     the Apple GPU.
// InvalidArgument naming the spec and the accepted forms when it is malformed (e.g. "gpu",
// "cuda:x"); Unavailable with the reason and the build's capabilities when the device cannot be
// used here, e.g. "--device cuda: this LibTorch build has no CUDA support (LibTorch 1.13.0 (CUDA
// no, MPS no))", "--device cuda:1: no CUDA device 1 is visible, 1 device (LibTorch ...)".
// When `why` is given it receives why this device was chosen, e.g. for "auto": "auto: cuda:0,
// the first of 2 CUDA devices" or "auto: the CPU; CUDA: no CUDA device is visible; MPS: this
// LibTorch build has no MPS support".
Result<torch::Device> SelectDevice(const std::string& spec, std::string* why = nullptr);

// "cpu", "cuda:0", "mps:0": the device as torch prints it. The CUDA device name is not reachable
// through torch's device-generic API, so it is not included.
std::string DeviceDescription(const torch::Device& device);

}  // namespace hetps
