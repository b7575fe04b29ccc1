#include "ps/mode_schedule.h"

#include <algorithm>

namespace hetps {

ModeSchedule::ModeSchedule(ConsistencyMode mode, uint32_t staleness) {
  phases_.push_back(Phase{0, mode, staleness});
}

Result<uint64_t> ModeSchedule::Switch(uint64_t from_clock, ConsistencyMode mode, uint32_t staleness,
                                      std::optional<uint64_t> newest_pushed) {
  if (mode == ConsistencyMode::kAuto) {
    return Status::InvalidArgument("a mode switch names sync, async, ssp or diloco, not auto");
  }
  if (phases_.back().mode == ConsistencyMode::kDiloco) {
    return Status::FailedPrecondition("the job runs diloco rounds from step " +
                                      std::to_string(phases_.back().from_clock) +
                                      " to its end; no switch after");
  }
  const uint64_t from = newest_pushed ? std::max(from_clock, *newest_pushed + 1) : from_clock;
  while (phases_.size() > 1 && phases_.back().from_clock >= from) phases_.pop_back();
  if (phases_.back().from_clock >= from) {
    phases_.back() = Phase{from, mode, staleness};  // the first phase, before any push
  } else {
    phases_.push_back(Phase{from, mode, staleness});
  }
  return from;
}

const ModeSchedule::Phase& ModeSchedule::At(uint64_t clock) const {
  auto after = std::upper_bound(phases_.begin(), phases_.end(), clock,
                                [](uint64_t c, const Phase& p) { return c < p.from_clock; });
  return *(after - 1);
}

}  // namespace hetps
