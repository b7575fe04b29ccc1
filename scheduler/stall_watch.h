// StallWatch: which trainer holds the job too long. Servers report the live trainers their held
// pulls wait for (ServerStats.waits: a sync or diloco round a trainer has not pushed, or an ssp
// bound it is behind), with how long the oldest such pull has waited and the trainer's own pace
// per step as that server measured it. A wait beyond pace_factor times that pace, and beyond
// `floor`, is a stall: the first time the trainer is left out of the step (its first clock moves
// past it, so the round or bound goes on without it), the second time it is dropped from the job.
// A slow trainer is not stalled: its pace is its own, and the others wait less than one of its
// steps for it.
//
// An evaluation the scheduler asks for (after an epoch, the final one) is judged the same way by
// the scheduler itself: unanswered beyond EvaluationLimitSeconds, it is a stall of the trainer.
//
// Liveness by progress, not by heartbeats: a trainer whose heartbeat thread lives while its
// compute is wedged (a hung device, a hostile member that never pushes) is found by what it holds.
//
// Owned by the scheduler's loop thread. No sockets: the scheduler applies the verdicts.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "messages_generated.h"

namespace hetps {

class StallWatch {
 public:
  struct Limits {
    std::chrono::milliseconds floor{30000};  // 0: never a stall
    uint32_t pace_factor = 10;
  };
  struct Verdict {
    uint32_t trainer = 0;
    bool drop = false;   // the second stall: out of the job; else left out of the step
    uint64_t step = 0;   // the step it did not push
    uint64_t until = 0;  // its first clock from now on (when left out)
    double waited_seconds = 0;
    double limit_seconds = 0;
    std::string reason;  // "server 0 waited 31.2 s for its step 57 (limit 30.0 s: ...)"
  };

  explicit StallWatch(Limits limits) : limits_(limits) {}

  // Judges one server's report, `server` naming it. `first_clock(t)` gives trainer t's first
  // clock as the servers were last told it, or none when t is not judged now (not a started
  // trainer of the job, or busy with what the scheduler asked of it). A wait that its first
  // clock already passes was judged before. At most one verdict per trainer.
  std::vector<Verdict> Judge(const std::string& server,
                             const flatbuffers::Vector<flatbuffers::Offset<wire::TrainerWait>>& waits,
                             const std::function<std::optional<uint64_t>(uint32_t)>& first_clock);
  // Stalls counted for `trainer` so far.
  uint32_t StallsOf(uint32_t trainer) const;
  // A stall the scheduler saw itself (an evaluation it asked for, unanswered beyond
  // EvaluationLimitSeconds), counted with Judge's: true when it is the trainer's second.
  bool Count(uint32_t trainer) { return ++stalls_[trainer] >= 2; }
  // The longest an evaluation of `test_samples` may take a trainer that trains
  // `samples_per_second`: pace_factor times the time it would take to train on them (an
  // evaluation only runs forward), at least the floor; pace_factor times the floor when either
  // figure is unknown (0), and an hour at most. 0: no limit (the floor is 0).
  double EvaluationLimitSeconds(uint64_t test_samples, double samples_per_second) const;
  static constexpr double kMaxEvaluationSeconds = 3600;
  // A rank that left the job: its count goes with it.
  void Forget(uint32_t trainer) { stalls_.erase(trainer); }

 private:
  Limits limits_;
  std::map<uint32_t, uint32_t> stalls_;
};

}  // namespace hetps
