// TrainerPace: how long each trainer takes a step, as a server sees it: the median of the
// intervals between the first pushes of its consecutive steps, over its latest kIntervals. In a
// sync job that is the round's length, waits for the slowest included; a pause (a stall, a
// recovery) is one interval among many and moves the median little. What the scheduler measures
// a trainer's stall against (docs/errors.md, "stalled").
//
// Owned by the server's loop thread (the I/O thread), the only thread that calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace hetps {

class TrainerPace {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kIntervals = 16;

  // `trainer` pushed step `step` at `now`. Further pushes of a step (its other partitions) and
  // of earlier steps are not new steps; an interval over k steps counts as k of its k-th part.
  void Pushed(uint32_t trainer, uint64_t step, Clock::time_point now);
  // The median interval per step; 0 before two steps were pushed.
  std::chrono::milliseconds Of(uint32_t trainer) const;
  // Forgets trainers not in `live` (sorted).
  void Keep(const std::vector<uint32_t>& live);

 private:
  struct Record {
    uint64_t step = 0;
    Clock::time_point at;
    std::deque<double> seconds;  // per step, the latest kIntervals
  };
  std::map<uint32_t, Record> trainers_;
};

}  // namespace hetps
