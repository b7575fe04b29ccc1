#include "scheduler/metrics_log.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hetps {
namespace {

std::vector<nlohmann::json> Lines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

CATCH_TEST_CASE(
    "The run's history is one JSON object a line, appended, a number that is none written as null",
    "[scheduler][metrics_log]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hetps-metrics-log-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "metrics.jsonl").string();
  {
    MetricsLog log;
    log.Write({{"kind", "ignored"}});  // not open: nothing, no crash
    CATCH_REQUIRE(log.Open(path).ok());
    nlohmann::ordered_json a;
    a["kind"] = "progress";
    a["loss"] = std::nan("");
    log.Write(a);
    log.Write({{"kind", "job"}, {"name", "two\nlines \"quoted\""}});
  }
  {
    MetricsLog log;  // a resumed run's scheduler appends to what is there
    CATCH_REQUIRE(log.Open(path).ok());
    log.Write({{"kind", "end"}});
  }
  const std::vector<nlohmann::json> lines = Lines(path);
  CATCH_REQUIRE(lines.size() == 3);
  CATCH_CHECK(lines[0]["kind"] == "progress");
  CATCH_CHECK(lines[0]["loss"].is_null());
  CATCH_CHECK(lines[1]["name"] == "two\nlines \"quoted\"");
  CATCH_CHECK(lines[2]["kind"] == "end");

  MetricsLog refused;
  const Status status = refused.Open((dir / "no-such-dir" / "metrics.jsonl").string());
  CATCH_CHECK_FALSE(status.ok());
  CATCH_CHECK(status.message().find("no-such-dir/metrics.jsonl") != std::string::npos);
  CATCH_CHECK_FALSE(refused.is_open());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetps
