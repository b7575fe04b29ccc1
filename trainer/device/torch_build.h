// What the LibTorch this process runs on was built with: its version and which GPU backends
// (CUDA, MPS) it carries, for `hetps-trainer --version`, device selection and its error messages.
//
// Pure functions over the loaded LibTorch; safe from any thread.
#pragma once

#include <string>

namespace hetps {

// Whether the LibTorch in this process has the CUDA backend (its library loaded), whatever the
// machine; whether it has the MPS backend.
bool TorchHasCuda();
bool TorchHasMps();

// "LibTorch 2.15.0 (CUDA 13.2, MPS no)", "LibTorch 1.13.0 (CUDA no, MPS no)": the version and the
// CUDA runtime version the library was built with, or "no" for a backend it lacks.
std::string TorchBuildDescription();

}  // namespace hetps
