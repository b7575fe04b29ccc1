// Fuzz target: a checkpoint's manifest.json through Manifest::Parse, which --resume and a
// restarted server's recovery trust once it passes. An accepted manifest must describe its own
// job (CheckSameJob) and survive ToJson and Parse unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "checkpoint/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = hetps::Manifest::Parse(text, "manifest.json");
  if (!manifest.ok()) return 0;
  if (!hetps::CheckSameJob(*manifest, manifest->tensors, manifest->partitions).ok()) std::abort();
  const std::string json = manifest->ToJson();
  auto again = hetps::Manifest::Parse(json, "manifest.json (written again)");
  if (!again.ok()) {
    std::fprintf(stderr, "fuzz check failed: an accepted manifest is refused once written: %s\n%s\n",
                 again.status().message().c_str(), json.c_str());
    std::abort();
  }
  if (again->ToJson() != json) {
    std::fprintf(stderr, "fuzz check failed: an accepted manifest changes when written and read back:\n%s\n",
                 json.c_str());
    std::abort();
  }
  return 0;
}
