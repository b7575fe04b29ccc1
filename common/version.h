// The version line every hetps program prints for --version (common/cli.h's ParseFlags adds the
// flag): hetps's version and, in a program that links LibTorch, what that LibTorch was built with.
// The LibTorch part is registered before main() by a file that every target linking the trainer
// library compiles in (trainer/device/torch_version_line.cc), so that common/ needs no LibTorch.
// Registration happens before main(); VersionLine may be called from any thread after it.
#pragma once

#include <string>

namespace hetps {

// hetps's version, e.g. "0.1.0" (project(hetps VERSION ...) in CMakeLists.txt).
const char* HetpsVersion();

// Adds `describe`'s text (e.g. "LibTorch 1.13.0 (CUDA no, MPS no)") to every version line. Called
// from a static initialiser; a second call replaces the first. Returns true, for that initialiser.
bool SetBuildDetail(std::string (*describe)());

// "hetps-trainer 0.1.0, LibTorch 1.13.0 (CUDA no, MPS no)", or "hetps-scheduler 0.1.0" in a
// program without LibTorch.
std::string VersionLine(const std::string& program);

}  // namespace hetps
