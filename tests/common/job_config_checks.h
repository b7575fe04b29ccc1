// Checks the job file tests share (tests/common/job_config_*_test.cc): parse the text of a job
// file and require it accepted, or refused with a message that names what is wrong. They assert
// with Catch2, so they are called from inside a test case.
#pragma once

#include <string>
#include <vector>

#include "common/job_config.h"

namespace hetps::testing {

bool Contains(const std::string& text, const std::string& part);

// Parses `yaml` as the file job.yaml and requires it accepted.
JobOptions ParseOrFail(const std::string& yaml);

// Parses `yaml`, requires InvalidArgument, and requires every one of `parts` in the message.
void RequireRejected(const std::string& yaml, const std::vector<std::string>& parts);

}  // namespace hetps::testing
