#include "common/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace hetps {
namespace {

std::atomic<LogLevel> g_level{LogLevel::kInfo};
thread_local std::string t_tag;

char LevelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 'D';
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kError:
      return 'E';
  }
  return '?';
}

}  // namespace

void SetLogLevel(LogLevel level) {
  g_level.store(level);
}
LogLevel GetLogLevel() {
  return g_level.load(std::memory_order_relaxed);
}

bool ParseLogLevel(const std::string& name, LogLevel* level) {
  if (name == "debug")
    *level = LogLevel::kDebug;
  else if (name == "info")
    *level = LogLevel::kInfo;
  else if (name == "warning")
    *level = LogLevel::kWarning;
  else if (name == "error")
    *level = LogLevel::kError;
  else
    return false;
  return true;
}

void SetThreadLogTag(std::string tag) {
  t_tag = std::move(tag);
}

namespace internal {

LogLine::~LogLine() {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &utc);
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "%s.%03d %c %s%s%s\n", stamp, static_cast<int>(millis.count()), LevelLetter(level_),
               t_tag.c_str(), t_tag.empty() ? "" : ": ", stream_.str().c_str());
}

}  // namespace internal
}  // namespace hetps
