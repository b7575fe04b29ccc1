#include "scheduler/stall_watch.h"

#include <algorithm>
#include <cstdio>

namespace hetps {

std::vector<StallWatch::Verdict> StallWatch::Judge(
    const std::string& server, const flatbuffers::Vector<flatbuffers::Offset<wire::TrainerWait>>& waits,
    const std::function<std::optional<uint64_t>(uint32_t)>& first_clock) {
  std::vector<Verdict> verdicts;
  if (limits_.floor.count() == 0) return verdicts;
  for (const wire::TrainerWait* wait : waits) {
    // In double: a server's figures are bounded by nothing here, and no product may overflow.
    const double pace = static_cast<double>(wait->pace_ms()) / 1000.0;
    const double floor = static_cast<double>(limits_.floor.count()) / 1000.0;
    const double limit = std::max(floor, limits_.pace_factor * pace);
    const double waited = static_cast<double>(wait->waited_ms()) / 1000.0;
    if (waited <= limit) continue;
    const std::optional<uint64_t> first = first_clock(wait->trainer());
    if (!first || wait->until() <= *first) continue;
    const bool judged = std::any_of(verdicts.begin(), verdicts.end(),
                                    [&](const Verdict& v) { return v.trainer == wait->trainer(); });
    if (judged) continue;
    Verdict verdict;
    verdict.trainer = wait->trainer();
    verdict.drop = ++stalls_[wait->trainer()] >= 2;
    verdict.step = wait->step();
    verdict.until = wait->until();
    verdict.waited_seconds = waited;
    verdict.limit_seconds = limit;
    char line[320];
    std::snprintf(line, sizeof(line),
                  "%s waited %.1f s for its step %llu (limit %.1f s: stall_pace_factor %u times its pace of "
                  "%.3f s a step%s, and at least stall_floor_s %.0f)",
                  server.c_str(), waited, static_cast<unsigned long long>(wait->step()), limit,
                  limits_.pace_factor, pace, wait->pace_ms() == 0 ? " (not yet measured)" : "", floor);
    verdict.reason = line;
    verdicts.push_back(std::move(verdict));
  }
  return verdicts;
}

double StallWatch::EvaluationLimitSeconds(uint64_t test_samples, double samples_per_second) const {
  const double floor = static_cast<double>(limits_.floor.count()) / 1000.0;
  if (floor == 0) return 0;
  const bool known = test_samples > 0 && samples_per_second > 0;
  const double seconds = known ? static_cast<double>(test_samples) / samples_per_second : floor;
  return std::min(kMaxEvaluationSeconds, std::max(floor, limits_.pace_factor * seconds));
}

uint32_t StallWatch::StallsOf(uint32_t trainer) const {
  auto it = stalls_.find(trainer);
  return it == stalls_.end() ? 0 : it->second;
}

}  // namespace hetps
