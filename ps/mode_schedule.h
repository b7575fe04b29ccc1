// ModeSchedule: which consistency rule governs each step of a job in mode: auto, where the
// scheduler switches between sync, ssp and async while the job runs, and may switch to diloco
// for the rest of it (each step of a diloco phase is a round). The schedule is a list of
// phases, each from a step (clock) on; a step's pushes and the pulls that follow them are
// handled by the rule of that step's phase. Switches only ever take effect at steps no push has
// reached yet, so every step of every partition is handled by one rule.
//
// Plain data, owned by the server's Shard on its I/O thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/job_config.h"
#include "common/status.h"

namespace hetps {

class ModeSchedule {
 public:
  struct Phase {
    uint64_t from_clock = 0;
    ConsistencyMode mode = ConsistencyMode::kSsp;  // kSync, kAsync, kSsp or kDiloco, never kAuto
    uint32_t staleness = 0;                        // kSsp: the bound on clock gaps
  };

  // The first phase, from step 0.
  explicit ModeSchedule(ConsistencyMode mode, uint32_t staleness);

  // Switches to `mode` from step `from_clock`, or from the step after `newest_pushed` (the
  // latest clock any trainer has pushed) when that is later, and returns the step it takes
  // effect from. Phases that would start at or after it are replaced. InvalidArgument for kAuto;
  // FailedPrecondition once a diloco phase is in the schedule (it lasts to the end of the job:
  // its rounds and the outer optimizer's state are not handed back to a per-step rule).
  Result<uint64_t> Switch(uint64_t from_clock, ConsistencyMode mode, uint32_t staleness,
                          std::optional<uint64_t> newest_pushed);

  // The phase step `clock` belongs to.
  const Phase& At(uint64_t clock) const;
  const std::vector<Phase>& phases() const { return phases_; }

 private:
  std::vector<Phase> phases_;  // from_clock strictly increasing, the first from 0
};

}  // namespace hetps
