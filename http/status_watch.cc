#include "http/status_watch.h"

namespace hetps {
namespace {

constexpr const char* kShuttingDown = "shutting down";
constexpr const char* kFinalEvaluation = "final evaluation";

}  // namespace

std::optional<std::string> StatusWatch::Answered(const StatusSnapshot& snapshot) {
  answered_ = true;
  misses_ = 0;
  last_phase_ = snapshot.phase;
  if (snapshot.phase != kShuttingDown) return std::nullopt;
  return snapshot.failed ? "the job failed: " + snapshot.failure : std::string("the job has finished");
}

std::optional<std::string> StatusWatch::NoAnswer(const Status& status, const std::string& source) {
  if (!answered_) return std::nullopt;
  ++misses_;
  const bool ending = last_phase_ == kFinalEvaluation || last_phase_ == kShuttingDown;
  if (!ending && misses_ < 2) return std::nullopt;
  return "the job has ended: the scheduler at " + source + " no longer answers (last seen " +
         (last_phase_.empty() ? "running" : last_phase_) + ")";
}

void DrawScreen(std::FILE* out, bool terminal, const std::vector<std::string>& lines) {
  if (!terminal) {
    for (const std::string& line : lines) std::fprintf(out, "%s\n", line.c_str());
    std::fprintf(out, "\n");
    std::fflush(out);
    return;
  }
  // Home, then each line over the old one (erasing the rest of it), then erase below.
  std::fprintf(out, "\033[H");
  for (const std::string& line : lines) std::fprintf(out, "%s\033[K\n", line.c_str());
  std::fprintf(out, "\033[J");
  std::fflush(out);
}

}  // namespace hetps
