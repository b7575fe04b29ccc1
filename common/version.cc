#include "common/version.h"

namespace hetps {
namespace {

// Constant-initialised, so a static initialiser in another file may set it whatever the order.
std::string (*g_build_detail)() = nullptr;

}  // namespace

const char* HetpsVersion() {
  return HETPS_VERSION;
}

bool SetBuildDetail(std::string (*describe)()) {
  g_build_detail = describe;
  return true;
}

std::string VersionLine(const std::string& program) {
  std::string line = program + " " + HetpsVersion();
  if (g_build_detail != nullptr) line += ", " + g_build_detail();
  return line;
}

}  // namespace hetps
