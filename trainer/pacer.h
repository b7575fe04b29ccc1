// Pacer: --slowdown K, reproducing a device K times slower. It keeps the time since a step began
// at K times the compute time the step holds, by sleeping for the difference whenever the step is
// about to hand something on (a push, the end of the step), so a gradient leaves when a K times
// slower device would have produced it. Used by the trainer's loop thread only.
#pragma once

#include <chrono>

namespace hetps {

class Pacer {
 public:
  // `factor` >= 1; 1 never sleeps.
  explicit Pacer(double factor) : factor_(factor) {}

  // A step begins now.
  void Start();
  // Sleeps until the step's elapsed time is `factor` times the compute time it holds (the time
  // since Start() less the sleeps).
  void Wait();
  // Seconds since Start(), sleeps included.
  double Seconds() const;

 private:
  using Clock = std::chrono::steady_clock;

  double factor_;
  Clock::time_point start_;
  Clock::duration slept_{};
};

}  // namespace hetps
