#include "tests/common/job_config_checks.h"

#include <catch2/catch.hpp>
#include <utility>

namespace hetps::testing {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

JobOptions ParseOrFail(const std::string& yaml) {
  Result<JobOptions> options = ParseJobYaml(yaml, "job.yaml");
  CATCH_INFO("yaml:\n" << yaml << "\nstatus: " << options.status().ToString());
  CATCH_REQUIRE(options.ok());
  return std::move(options).value();
}

void RequireRejected(const std::string& yaml, const std::vector<std::string>& parts) {
  Result<JobOptions> options = ParseJobYaml(yaml, "job.yaml");
  CATCH_INFO("yaml:\n" << yaml);
  CATCH_REQUIRE_FALSE(options.ok());
  CATCH_CHECK(options.status().code() == Status::Code::kInvalidArgument);
  for (const std::string& part : parts) {
    CATCH_INFO("message: " << options.status().message() << "\nexpected to contain: " << part);
    CATCH_CHECK(Contains(options.status().message(), part));
  }
}

}  // namespace hetps::testing
