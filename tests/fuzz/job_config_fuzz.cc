// Fuzz target: a job file's YAML text through the loader the scheduler uses (ParseJobYaml), and
// for every job it accepts, the round trip through JobOptionsToYaml (which a checkpoint's
// manifest stores and --resume reads back) must be accepted and give the same YAML.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/job_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto job = hetps::ParseJobYaml(text, "job.yaml");
  if (!job.ok()) return 0;
  const std::string yaml = hetps::JobOptionsToYaml(*job);
  auto again = hetps::ParseJobYaml(yaml, "resolved job");
  if (!again.ok()) {
    std::fprintf(stderr, "fuzz check failed: an accepted job's YAML is refused: %s\n%s\n",
                 again.status().message().c_str(), yaml.c_str());
    std::abort();
  }
  if (hetps::JobOptionsToYaml(*again) != yaml) {
    std::fprintf(stderr, "fuzz check failed: an accepted job's YAML changes when read back:\n%s\n",
                 yaml.c_str());
    std::abort();
  }
  return 0;
}
