// RoundTimer: a server's sync rounds in seconds, each from its first push to the last reply it
// released. Round c ends once every partition of the server has completed it and every pull
// that waited for it (the pulls of step c + 1) has been answered, its reply sent.
//
// Owned by the server's loop thread (the I/O thread), the only thread that calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>

#include "common/seconds_histogram.h"

namespace hetps {

class RoundTimer {
 public:
  using Clock = std::chrono::steady_clock;

  // A push of sync round `round` was accepted at `now`; the first one starts the round.
  void Pushed(uint64_t round, Clock::time_point now);
  // The reply to a pull of step `clock` is being built; ReplyDone once it is sent, or dropped.
  void ReplyStarted(uint64_t clock);
  void ReplyDone(uint64_t clock);
  // Ends at `now` each round below `completed` (the rounds every partition has completed) whose
  // replies are all sent and for whose step no pull waits any more (`waiting(step)` says whether
  // a pull of that step still waits), counting its seconds.
  void Settle(uint64_t completed, const std::function<bool(uint64_t)>& waiting, Clock::time_point now);
  // Forgets the rounds under way: a restore rolled them back, and they are never counted.
  void Forget() { open_.clear(); }

  const SecondsHistogram& seconds() const { return seconds_; }

 private:
  struct Round {
    Clock::time_point first_push;
    uint32_t replies_in_flight = 0;
  };
  std::map<uint64_t, Round> open_;
  SecondsHistogram seconds_;
};

}  // namespace hetps
