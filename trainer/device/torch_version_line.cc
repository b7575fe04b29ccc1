// Puts the LibTorch this program links into its --version line (common/version.h). Compiled into
// every target that links hetps_trainer (an INTERFACE source of it, trainer/CMakeLists.txt):
// a static library's object that nothing references would be left out of the program.
#include "common/version.h"
#include "trainer/device/torch_build.h"

namespace {

[[maybe_unused]] const bool kTorchInVersionLine = hetps::SetBuildDetail(&hetps::TorchBuildDescription);

}  // namespace
