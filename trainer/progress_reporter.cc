#include "trainer/progress_reporter.h"

#include "common/logging.h"

namespace hetps {

ProgressReporter::ProgressReporter(ControlChannel* control, Sender* sender,
                                   std::chrono::milliseconds interval)
    : control_(control), sender_(sender), interval_(interval) {}

void ProgressReporter::AddStep(uint64_t samples, double loss, double compute_seconds, double paced_seconds) {
  samples_ += samples;
  if (samples == 0) return;
  ++steps_;
  loss_sum_ += loss;
  compute_seconds_ += compute_seconds;
  if (samples == last_batch_) {
    ++timed_steps_;
    timed_samples_ += samples;
    timed_seconds_ += compute_seconds;
    paced_seconds_ += paced_seconds;
  }
  last_batch_ = samples;
}

void ProgressReporter::Report(const TrainerPosition& position, bool force) {
  const auto now = Clock::now();
  if (!force && now - last_report_ < interval_) return;
  const double seconds = std::chrono::duration<double>(now - last_report_).count();
  if (steps_ > 0) last_loss_ = loss_sum_ / steps_;
  const double rate = seconds > 0 ? samples_ / seconds : 0;
  const double compute_rate = compute_seconds_ > 0 ? samples_ / compute_seconds_ : 0;
  flatbuffers::FlatBufferBuilder fbb(128);
  auto body = wire::CreateProgress(fbb, position.epoch, position.clock, position.samples, last_loss_, rate,
                                   position.weight_version, compute_rate, position.batch_size, timed_steps_,
                                   timed_samples_, timed_seconds_, position.step_seconds,
                                   position.wait_seconds, position.bytes_pushed, position.bytes_pulled,
                                   paced_seconds_, position.inner_steps, position.last_round_inner_steps);
  Status status = control_->Send(sender_->Seal(fbb, wire::Body::Progress, body.Union()));
  if (!status.ok()) HETPS_LOG(WARNING) << "progress not reported: " << status.message();
  last_report_ = now;
  samples_ = 0;
  steps_ = 0;
  loss_sum_ = 0;
  compute_seconds_ = 0;
  timed_steps_ = 0;
  timed_samples_ = 0;
  timed_seconds_ = 0;
  paced_seconds_ = 0;
}

}  // namespace hetps
