// Line-oriented logging to stderr: HETPS_LOG(INFO) << "server 0 listening on " << endpoint;
//
// Each line carries a UTC timestamp, the level and the tag of the calling thread (set by each
// component's loop, e.g. "server 1"), so several components running as threads of one test
// process stay distinguishable. Safe to call from any thread; a line is written atomically.
#pragma once

#include <sstream>
#include <string>

namespace hetps {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below `level` are dropped. Default kInfo. Call from main() before starting threads.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warning", "error"; false when `name` is none of them.
bool ParseLogLevel(const std::string& name, LogLevel* level);

// Tag of the calling thread's lines ("scheduler", "server 1", "trainer 0").
void SetThreadLogTag(std::string tag);

namespace internal {

class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace internal
}  // namespace hetps

#define HETPS_LOG_LEVEL_DEBUG ::hetps::LogLevel::kDebug
#define HETPS_LOG_LEVEL_INFO ::hetps::LogLevel::kInfo
#define HETPS_LOG_LEVEL_WARNING ::hetps::LogLevel::kWarning
#define HETPS_LOG_LEVEL_ERROR ::hetps::LogLevel::kError

// A one-shot loop rather than if/else, so `if (x) HETPS_LOG(INFO) << y; else ...` stays correct.
#define HETPS_LOG(level)                                                                      \
  for (bool hetps_log_on_ = HETPS_LOG_LEVEL_##level >= ::hetps::GetLogLevel(); hetps_log_on_; \
       hetps_log_on_ = false)                                                                 \
  ::hetps::internal::LogLine(HETPS_LOG_LEVEL_##level).stream()
