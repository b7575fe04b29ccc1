// ProgressReporter: sums a trainer's steps (samples, loss, compute time) and sends the scheduler
// a Progress report at most once per interval. Torch-free; used by the trainer's loop thread,
// with the ControlChannel it sends through.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/control_channel.h"
#include "common/message.h"

namespace hetps {

// Where a trainer stands, as a Progress report tells it.
struct TrainerPosition {
  uint32_t epoch = 0;
  uint64_t clock = 0;    // steps pushed
  uint64_t samples = 0;  // samples trained
  uint64_t weight_version = 0;
  uint32_t batch_size = 0;  // this trainer's current batch per step
  // Totals since the trainer started: seconds in steps, the part not computing (waiting for the
  // servers), and the tensor bytes pushed and pulled.
  double step_seconds = 0;
  double wait_seconds = 0;
  uint64_t bytes_pushed = 0;
  uint64_t bytes_pulled = 0;
  // mode diloco: inner steps taken (clock counts rounds), and those of the last round pushed.
  uint64_t inner_steps = 0;
  uint32_t last_round_inner_steps = 0;
};

class ProgressReporter {
 public:
  // `control` and `sender` must outlive the reporter.
  ProgressReporter(ControlChannel* control, Sender* sender, std::chrono::milliseconds interval);

  // Counts a step of `samples` samples (0: a sync round without data), with its mean training
  // loss, the seconds it computed (forward, backward, slowdown; no waits) and its paced seconds
  // (its wall time less the servers' hold for the consistency rule, Progress.paced_seconds). A step
  // whose batch differs from the previous one's is not timed for the balancer (see
  // Progress.timed_steps).
  void AddStep(uint64_t samples, double loss, double compute_seconds, double paced_seconds);

  // Sends a report when the interval has passed since the last one, or now when `force`. A report
  // that cannot be sent is logged, not an error: the next one will carry the totals.
  void Report(const TrainerPosition& position, bool force);

 private:
  using Clock = std::chrono::steady_clock;

  ControlChannel* control_;
  Sender* sender_;
  std::chrono::milliseconds interval_;
  Clock::time_point last_report_ = Clock::now();
  // Since the last report:
  uint64_t samples_ = 0;
  uint64_t steps_ = 0;
  double loss_sum_ = 0;
  double compute_seconds_ = 0;
  uint32_t timed_steps_ = 0;
  uint64_t timed_samples_ = 0;
  double timed_seconds_ = 0;
  double paced_seconds_ = 0;
  uint64_t last_batch_ = 0;  // samples of the last step with data
  double last_loss_ = 0;     // repeated when no step ran since
};

}  // namespace hetps
