#include "trainer/step_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include <torch/torch.h>

#include "trainer/device/device.h"
#include "trainer/grad_clip.h"
#include "trainer/models/loss.h"

namespace hetps {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::string StepRunner::Timings::ToString() const {
  const double n = steps > 0 ? static_cast<double>(steps) : 1;
  char text[320];
  std::snprintf(text, sizeof(text),
                "compute %.1f ms, device-to-host %.1f ms, wire %.1f ms, host-to-device %.1f ms per step "
                "(batch %.2f ms, forward %.2f ms, backward %.2f ms, hand-off %.2f ms)",
                1e3 * compute / n, 1e3 * device_to_host / n, 1e3 * wire / n, 1e3 * host_to_device / n,
                1e3 * batch / n, 1e3 * forward / n, 1e3 * backward / n, 1e3 * hand_off / n);
  return text;
}

StepRunner::StepRunner(Model& model, ModelBuffers& buffers, PsClient& client, const Dataset& train,
                       torch::Device device, Options options)
    : model_(model),
      buffers_(buffers),
      client_(client),
      train_(train),
      device_(device),
      options_(std::move(options)),
      // Without staging, hooks push from the thread that runs backward, which must then be the
      // loop thread: only the CPU runs them there.
      overlapping_(options_.overlap && options_.clip_grad_norm == 0 &&
                   (options_.staging != nullptr || device.is_cpu())),
      pacer_(options_.slowdown),
      tensors_(buffers.signature().size()),
      loop_thread_(std::this_thread::get_id()) {
  if (options_.staging != nullptr) compute_ = std::make_unique<ComputeThread>();
  if (options_.local_steps > 1) {
    local_ = std::make_unique<LocalSgd>(buffers_.parameters(), options_.lr_per_sample);
  }
  // Weights received while the model computes on: forward_during_pull's, and diloco's rounds'.
  if (options_.forward_during_pull || options_.round != nullptr) AllocateWeightsAhead();
  if (overlapping_) {
    buffers_.SetGradientHook([this](size_t tensor, const torch::Tensor& grad) { OnGradient(tensor, grad); });
  }
}

void StepRunner::AllocateWeightsAhead() {
  if (!weights_ahead_.empty()) return;
  for (const TensorInfo& tensor : buffers_.signature()) {
    weights_ahead_.emplace_back(static_cast<size_t>(tensor.numel()));
    weights_ahead_targets_.push_back(weights_ahead_.back().data());
  }
}

void StepRunner::BeginRounds(DilocoRound* round) {
  HETPS_CHECK(round != nullptr && !travelling_);
  options_.round = round;
  AllocateWeightsAhead();
}

StepRunner::~StepRunner() {
  if (overlapping_) buffers_.SetGradientHook(nullptr);
}

Result<StepRunner::Outcome> StepRunner::Run(uint64_t clock, const std::vector<int64_t>& indices,
                                            const std::vector<int64_t>& next) {
  Outcome outcome;
  const bool ahead = options_.forward_during_pull && !indices.empty();
  if (!ahead) HETPS_RETURN_IF_ERROR(Drain().status());
  step_clock_ = clock;
  step_batch_ = static_cast<uint32_t>(indices.size());
  begun_ = false;
  const double copy_wait_before = options_.staging ? options_.staging->copy_wait_seconds() : 0;
  if (!indices.empty()) {
    HETPS_RETURN_IF_ERROR(local_             ? ComputeLocal(indices, &outcome)
                          : options_.staging ? ComputeStaged(indices, &outcome)
                                             : Compute(indices, &outcome));
  }
  HETPS_RETURN_IF_ERROR(BeginPushes());  // a step without data pushes nothing
  if (ahead) {
    HETPS_RETURN_IF_ERROR(client_.SendStep());
    travelling_ = true;
    const auto start = Clock::now();
    const bool committed = received_;
    HETPS_RETURN_IF_ERROR(CommitWeightsAhead());
    ++timings_.steps;
    timings_.host_to_device += SecondsSince(start);
    if (options_.staging) timings_.device_to_host += options_.staging->copy_wait_seconds() - copy_wait_before;
    if (!next.empty()) Prepare(next);
    outcome.weights_written = committed;
    if (committed) outcome.pulled = model_pulled_;
    return outcome;
  }
  if (!next.empty()) Prepare(next);
  HETPS_ASSIGN_OR_RETURN(outcome.pulled, AwaitWeights(!indices.empty(), copy_wait_before));
  if (!indices.empty()) ++timings_.steps;
  return outcome;
}

Result<PsClient::PullResult> StepRunner::AwaitWeights(bool timed, double copy_wait_before) {
  auto start = Clock::now();
  HETPS_RETURN_IF_ERROR(buffers_.FinishWeightCopies());
  double host_to_device = SecondsSince(start);
  start = Clock::now();
  auto pulled = client_.FinishStep(buffers_.weight_targets());
  if (!pulled.ok()) return pulled.status();
  const double wire = SecondsSince(start);
  start = Clock::now();
  HETPS_RETURN_IF_ERROR(buffers_.CommitWeights());
  host_to_device += SecondsSince(start);
  if (timed) {
    timings_.wire += wire;
    timings_.host_to_device += host_to_device;
    if (options_.staging) timings_.device_to_host += options_.staging->copy_wait_seconds() - copy_wait_before;
  }
  return *pulled;
}

Status StepRunner::BeginPushes() {
  if (begun_) return Status::Ok();
  begun_ = true;
  if (travelling_) {
    const auto start = Clock::now();
    auto pulled = client_.AwaitStep(weights_ahead_targets_);
    travelling_ = false;
    if (!pulled.ok()) return pulled.status();
    timings_.wire += SecondsSince(start);
    received_pulled_ = *pulled;
    received_versions_ = client_.versions();
    received_ = true;
    client_.set_versions(model_versions_);  // this step's gradients follow the model's weights
  } else if (options_.forward_during_pull) {
    model_versions_ = client_.versions();
  }
  client_.BeginStep(step_clock_, step_batch_, options_.forward_during_pull && step_batch_ > 0 ? 1 : 0,
                    step_round_);
  return Status::Ok();
}

Status StepRunner::CommitWeightsAhead() {
  if (!received_) return Status::Ok();  // the first step: the model has the weights pulled last
  HETPS_RETURN_IF_ERROR(buffers_.FinishWeightCopies());
  const std::vector<float*>& targets = buffers_.weight_targets();
  for (size_t t = 0; t < tensors_; ++t) {
    std::memcpy(targets[t], weights_ahead_[t].data(), weights_ahead_[t].size() * sizeof(float));
  }
  HETPS_RETURN_IF_ERROR(buffers_.CommitWeights());
  received_ = false;
  model_versions_ = received_versions_;
  model_pulled_ = received_pulled_;
  return Status::Ok();
}

Result<std::optional<PsClient::PullResult>> StepRunner::Drain() {
  if (round_travelling_) {
    HETPS_RETURN_IF_ERROR(AwaitRound());
    return std::optional<PsClient::PullResult>(round_pulled_);
  }
  if (!travelling_) return std::optional<PsClient::PullResult>();
  const auto start = Clock::now();
  HETPS_RETURN_IF_ERROR(buffers_.FinishWeightCopies());
  auto pulled = client_.AwaitStep(buffers_.weight_targets());
  travelling_ = false;
  if (!pulled.ok()) return pulled.status();
  HETPS_RETURN_IF_ERROR(buffers_.CommitWeights());
  timings_.wire += SecondsSince(start);
  model_pulled_ = *pulled;
  return std::optional<PsClient::PullResult>(*pulled);
}

Status StepRunner::ForwardBackward(const std::vector<int64_t>& indices, double* loss_value) {
  const auto start = Clock::now();
  // Weights taken in by a hook (BeginPushes) on this thread; with staging the loop thread takes
  // them in while this one computes.
  const bool on_loop_thread = std::this_thread::get_id() == loop_thread_;
  const double wire_before = on_loop_thread ? timings_.wire : 0;
  try {
    Batch batch = TakeBatch(indices);
    buffers_.ClearGradients();
    const auto forward_start = Clock::now();
    torch::Tensor loss = BatchLoss(options_.loss, model_.forward(batch.input), batch.target);
    const auto backward_start = Clock::now();
    const double hand_off_before = timings_.hand_off;
    in_backward_ = true;
    loss.backward();
    in_backward_ = false;
    if (options_.clip_grad_norm > 0) ClipGradNorm(buffers_.parameters(), options_.clip_grad_norm);
    *loss_value = loss.item<double>();  // waits for the device to finish
    timings_.batch += std::chrono::duration<double>(forward_start - start).count();
    timings_.forward += std::chrono::duration<double>(backward_start - forward_start).count();
    const double awaited = on_loop_thread ? timings_.wire - wire_before : 0;
    timings_.backward += SecondsSince(backward_start) - (timings_.hand_off - hand_off_before) - awaited;
    timings_.compute += SecondsSince(start) - awaited;
  } catch (const c10::Error& e) {
    in_backward_ = false;
    return Status::Internal("LibTorch failed in a training step of model " + options_.model_name + " on " +
                            DeviceDescription(device_) + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {  // e.g. std::bad_alloc, on the compute thread too
    in_backward_ = false;
    return Status::Internal("a training step of model " + options_.model_name + " on " +
                            DeviceDescription(device_) + " failed: " + e.what());
  }
  return Status::Ok();
}

void StepRunner::Prepare(const std::vector<int64_t>& indices) {
  const auto start = Clock::now();
  try {
    prepared_ = MakeBatch(train_, indices.data(), indices.size(), device_);
    prepared_indices_ = indices;
  } catch (const std::exception&) {
    // Not this step's business: the next step assembles its own batch and reports the failure.
    prepared_.reset();
    return;
  }
  const double seconds = SecondsSince(start);
  timings_.batch += seconds;  // a step's batch, assembled early
  timings_.compute += seconds;
}

Batch StepRunner::TakeBatch(const std::vector<int64_t>& indices) {
  std::optional<Batch> prepared = std::exchange(prepared_, std::nullopt);
  if (prepared && prepared_indices_ == indices) {
    ++timings_.prepared;
    return std::move(*prepared);
  }
  return MakeBatch(train_, indices.data(), indices.size(), device_);
}

Status StepRunner::Compute(const std::vector<int64_t>& indices, Outcome* outcome) {
  pacer_.Start();
  push_status_ = Status::Ok();
  HETPS_RETURN_IF_ERROR(ForwardBackward(indices, &outcome->loss));
  HETPS_RETURN_IF_ERROR(push_status_);
  pacer_.Wait();
  HETPS_RETURN_IF_ERROR(PushRemaining());
  outcome->compute_seconds = pacer_.Seconds();
  return Status::Ok();
}

Status StepRunner::ComputeStaged(const std::vector<int64_t>& indices, Outcome* outcome) {
  GradientStaging& staging = *options_.staging;
  pacer_.Start();
  staging.BeginStep();
  compute_->Start([this, &indices, outcome] { return ForwardBackward(indices, &outcome->loss); });
  size_t pushed = 0;
  // The weights of the step still travelling are taken in while forward runs.
  Status status = BeginPushes();
  // Each gradient as its copy finishes, until backward is over; then what was staged last.
  while (status.ok() && overlapping_ && !compute_->Done()) {
    status = PushStaged(std::chrono::milliseconds(5), &pushed);
  }
  Status computed = compute_->Wait();
  if (status.ok() && overlapping_) status = PushStaged(std::chrono::milliseconds(0), &pushed);
  HETPS_RETURN_IF_ERROR(computed);
  HETPS_RETURN_IF_ERROR(status);
  if (!overlapping_) HETPS_RETURN_IF_ERROR(StageAll(&pushed));
  pacer_.Wait();
  HETPS_RETURN_IF_ERROR(PushRemaining());
  outcome->compute_seconds = pacer_.Seconds();
  return Status::Ok();
}

Status StepRunner::StageAll(size_t* pushed) {
  // Staged after backward, in order; the copies still overlap the pushes of earlier tensors.
  size_t staged = 0;
  for (size_t t = 0; t < tensors_; ++t) {
    torch::Tensor grad = buffers_.DeviceGradient(t);
    if (!grad.defined()) continue;
    options_.staging->Stage(t, grad);
    ++staged;
  }
  pacer_.Wait();
  while (*pushed < staged) HETPS_RETURN_IF_ERROR(PushStaged(std::chrono::milliseconds(1000), pushed));
  return Status::Ok();
}

Status StepRunner::ComputeLocal(const std::vector<int64_t>& indices, Outcome* outcome) {
  const size_t steps = std::min<size_t>(options_.local_steps, indices.size());
  const size_t micro = (indices.size() + steps - 1) / steps;
  pacer_.Start();
  local_round_ = true;
  Status status;
  double loss_sum = 0;
  try {
    local_->Begin();
    for (size_t at = 0; at < indices.size(); at += micro) {
      const auto begin = indices.begin() + static_cast<std::ptrdiff_t>(at);
      const std::vector<int64_t> part(
          begin, begin + static_cast<std::ptrdiff_t>(std::min(micro, indices.size() - at)));
      double loss = 0;
      status = ForwardBackward(part, &loss);
      if (!status.ok()) break;
      loss_sum += loss * static_cast<double>(part.size());
      local_->Step(static_cast<int64_t>(part.size()));
    }
    if (status.ok()) local_->Finish(static_cast<int64_t>(indices.size()));
  } catch (const c10::Error& e) {
    status = Status::Internal("LibTorch failed in a local step of model " + options_.model_name + " on " +
                              DeviceDescription(device_) + ": " + e.what_without_backtrace());
  }
  local_round_ = false;
  HETPS_RETURN_IF_ERROR(status);
  outcome->loss = loss_sum / static_cast<double>(indices.size());
  if (options_.staging != nullptr) {
    options_.staging->BeginStep();
    HETPS_RETURN_IF_ERROR(BeginPushes());
    size_t pushed = 0;
    HETPS_RETURN_IF_ERROR(StageAll(&pushed));
  }
  pacer_.Wait();
  HETPS_RETURN_IF_ERROR(PushRemaining());
  outcome->compute_seconds = pacer_.Seconds();
  return Status::Ok();
}

Status StepRunner::PushStaged(std::chrono::milliseconds timeout, size_t* pushed) {
  GradientStaging& staging = *options_.staging;
  while (true) {
    HETPS_ASSIGN_OR_RETURN(std::optional<size_t> tensor, staging.Next(timeout));
    if (!tensor) return Status::Ok();
    pacer_.Wait();
    HETPS_RETURN_IF_ERROR(
        client_.PushTensor(*tensor, staging.data(*tensor), staging.wire_dtype(), staging.owner(*tensor)));
    ++*pushed;
    timeout = std::chrono::milliseconds(0);
  }
}

Status StepRunner::PushRemaining() {
  HETPS_RETURN_IF_ERROR(BeginPushes());
  const auto start = Clock::now();
  for (size_t t = 0; t < tensors_; ++t) {
    if (client_.Pushed(t)) continue;
    HETPS_ASSIGN_OR_RETURN(auto gradient, buffers_.HostGradient(t));
    HETPS_RETURN_IF_ERROR(client_.PushTensor(t, gradient.first, std::move(gradient.second)));
  }
  timings_.hand_off += SecondsSince(start);
  return Status::Ok();
}

void StepRunner::OnGradient(size_t tensor, const torch::Tensor& grad) {
  if (!in_backward_ || local_round_) return;
  const bool push_here = options_.staging == nullptr && std::this_thread::get_id() == loop_thread_;
  // Before the first push, the weights of a step still travelling: wire time, not hand-off.
  if (push_here && push_status_.ok()) push_status_ = BeginPushes();
  const auto start = Clock::now();
  if (options_.staging != nullptr) {
    options_.staging->Stage(tensor, grad);
  } else if (push_here && push_status_.ok()) {
    pacer_.Wait();
    auto held = std::make_shared<torch::Tensor>(grad.detach().contiguous());
    push_status_ = client_.PushTensor(tensor, held->data_ptr<float>(), held);
  }
  timings_.hand_off += SecondsSince(start);  // on the thread that runs backward, as compute is
}

}  // namespace hetps
