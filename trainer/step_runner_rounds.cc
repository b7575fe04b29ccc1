// StepRunner in mode diloco (the rest: trainer/step_runner.cc): inner steps on the model's own
// weights, and the end of a round: its pseudo-gradient pushed, and the servers' weights after it
// taken in, at once or while the next round runs (overlap).
#include <algorithm>
#include <utility>

#include <torch/torch.h>

#include "trainer/device/device.h"
#include "trainer/step_runner.h"

namespace hetps {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Status StepRunner::InnerStep(const std::vector<int64_t>& indices, double* loss, double* seconds) {
  HETPS_CHECK(options_.round != nullptr && !indices.empty());
  pacer_.Start();
  local_round_ = true;  // the hooks leave the gradients alone: the inner optimizer takes them
  Status status = ForwardBackward(indices, loss);
  if (status.ok()) {
    try {
      options_.round->Step(indices.size());
    } catch (const c10::Error& e) {
      status = Status::Internal("LibTorch failed in an inner step of model " + options_.model_name + " on " +
                                DeviceDescription(device_) + ": " + e.what_without_backtrace());
    }
  }
  local_round_ = false;
  HETPS_RETURN_IF_ERROR(status);
  pacer_.Wait();
  *seconds = pacer_.Seconds();
  options_.round->Timed(*seconds);
  ++timings_.steps;
  return Status::Ok();
}

Result<StepRunner::Outcome> StepRunner::FinishRound(uint64_t clock, bool overlap) {
  HETPS_CHECK(options_.round != nullptr);
  DilocoRound& round = *options_.round;
  // A round's pseudo-gradient is its progress from the servers' weights of the round before: one
  // round of staleness at most.
  HETPS_RETURN_IF_ERROR(AwaitRound());
  step_clock_ = clock;
  step_batch_ = static_cast<uint32_t>(round.samples());
  step_round_ = RoundPush{round.steps(), last_sync_us_};
  begun_ = false;
  round_sent_ = std::chrono::steady_clock::now();
  if (step_batch_ > 0) {
    try {
      round.SetPseudoGradients();
    } catch (const c10::Error& e) {
      return Status::Internal("LibTorch failed computing the pseudo-gradient of model " +
                              options_.model_name + " on " + DeviceDescription(device_) + ": " +
                              e.what_without_backtrace());
    }
    if (options_.staging != nullptr) {
      options_.staging->BeginStep();
      HETPS_RETURN_IF_ERROR(BeginPushes());
      size_t pushed = 0;
      HETPS_RETURN_IF_ERROR(StageAll(&pushed));
    }
    HETPS_RETURN_IF_ERROR(PushRemaining());
  } else {
    HETPS_RETURN_IF_ERROR(BeginPushes());  // no data: takes part in the round with empty frames
  }
  HETPS_RETURN_IF_ERROR(client_.SendStep());
  round_travelling_ = true;
  Outcome outcome;
  // A round without data has nothing to overlap: its weights also say whether anyone had data.
  if (overlap && step_batch_ > 0) {
    outcome.weights_written = false;
    return outcome;
  }
  HETPS_RETURN_IF_ERROR(AwaitRound());
  outcome.pulled = round_pulled_;
  return outcome;
}

Status StepRunner::PollRound() {
  if (!round_travelling_) return Status::Ok();
  HETPS_ASSIGN_OR_RETURN(const bool arrived, client_.PollStep(weights_ahead_targets_));
  if (!arrived) return Status::Ok();
  HETPS_ASSIGN_OR_RETURN(PsClient::PullResult pulled, client_.AwaitStep(weights_ahead_targets_));
  return CommitRound(pulled);
}

Status StepRunner::AwaitRound() {
  if (!round_travelling_) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  auto pulled = client_.AwaitStep(weights_ahead_targets_);
  if (!pulled.ok()) {
    round_travelling_ = false;
    return pulled.status();
  }
  timings_.wire += SecondsSince(start);
  return CommitRound(*pulled);
}

Status StepRunner::CommitRound(const PsClient::PullResult& pulled) {
  round_travelling_ = false;
  round_pulled_ = pulled;
  const double sync = std::max(0.0, SecondsSince(round_sent_) - pulled.held_seconds);
  last_sync_us_ = static_cast<uint64_t>(sync * 1e6);
  const auto start = std::chrono::steady_clock::now();
  try {
    std::vector<torch::Tensor> servers;
    servers.reserve(weights_ahead_.size());
    for (std::vector<float>& w : weights_ahead_) {
      servers.push_back(
          torch::from_blob(w.data(), {static_cast<int64_t>(w.size())}, torch::kFloat32).to(device_));
    }
    options_.round->Rebase(servers);
  } catch (const c10::Error& e) {
    return Status::Internal("LibTorch failed taking the servers' weights into model " + options_.model_name +
                            " on " + DeviceDescription(device_) + ": " + e.what_without_backtrace());
  }
  timings_.host_to_device += SecondsSince(start);
  return Status::Ok();
}

}  // namespace hetps
