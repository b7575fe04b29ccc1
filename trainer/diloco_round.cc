#include "trainer/diloco_round.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <torch/torch.h>

namespace hetps {
namespace {

// The job's optimizer as torch::optim builds it, on the trainer's own copy of the weights.
std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const std::vector<torch::Tensor>& parameters,
                                                       const OptimizerOptions& o) {
  switch (o.kind) {
    case OptimizerOptions::Kind::kSgd:
      return std::make_unique<torch::optim::SGD>(parameters, torch::optim::SGDOptions(o.lr)
                                                                 .momentum(o.momentum)
                                                                 .dampening(o.dampening)
                                                                 .nesterov(o.nesterov)
                                                                 .weight_decay(o.weight_decay));
    case OptimizerOptions::Kind::kAdam:
      return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(o.lr)
                                                                  .betas({o.beta1, o.beta2})
                                                                  .eps(o.eps)
                                                                  .weight_decay(o.weight_decay)
                                                                  .amsgrad(o.amsgrad));
    case OptimizerOptions::Kind::kAdamW:
      return std::make_unique<torch::optim::AdamW>(parameters, torch::optim::AdamWOptions(o.lr)
                                                                   .betas({o.beta1, o.beta2})
                                                                   .eps(o.eps)
                                                                   .weight_decay(o.weight_decay)
                                                                   .amsgrad(o.amsgrad));
    case OptimizerOptions::Kind::kAdagrad:
      return std::make_unique<torch::optim::Adagrad>(
          parameters, torch::optim::AdagradOptions(o.lr)
                          .lr_decay(o.lr_decay)
                          .weight_decay(o.weight_decay)
                          .initial_accumulator_value(o.initial_accumulator_value)
                          .eps(o.eps));
  }
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<DilocoRound>> DilocoRound::Create(std::vector<torch::Tensor> parameters,
                                                         const OptimizerOptions& inner,
                                                         const DilocoOptions& rounds, uint64_t steps_before) {
  HETPS_RETURN_IF_ERROR(ValidateOptimizerOptions(inner));
  if (inner.schedule.decay == LrScheduleOptions::Decay::kCosine && inner.schedule.decay_steps == 0) {
    return Status::InvalidArgument(
        "lr_schedule.decay_steps: the scheduler sent a cosine decay without its end");
  }
  auto optimizer = MakeOptimizer(parameters, inner);
  if (optimizer == nullptr)
    return Status::InvalidArgument("optimizer.name: not an optimizer torch::optim has");
  return std::unique_ptr<DilocoRound>(
      new DilocoRound(std::move(parameters), std::move(optimizer), inner, rounds, steps_before));
}

DilocoRound::DilocoRound(std::vector<torch::Tensor> parameters,
                         std::unique_ptr<torch::optim::Optimizer> optimizer, const OptimizerOptions& inner,
                         const DilocoOptions& rounds, uint64_t steps_before)
    : parameters_(std::move(parameters)),
      optimizer_(std::move(optimizer)),
      inner_(inner),
      inner_steps_(steps_before),
      rounds_(rounds),
      chosen_seconds_(rounds.min_round_seconds) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : parameters_) {
    first_.push_back(p.detach().clone());
    servers_.push_back(p.detach().clone());
  }
}

DilocoRound::~DilocoRound() = default;

void DilocoRound::Restart() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    first_[i].copy_(parameters_[i]);
    servers_[i].copy_(parameters_[i]);
  }
}

void DilocoRound::Begin(double chosen_seconds) {
  if (chosen_seconds > 0) chosen_seconds_ = chosen_seconds;
  began_ = Clock::now();
  steps_ = 0;
  samples_ = 0;
}

double DilocoRound::length_seconds() const {
  if (rounds_.round_steps > 0) return 0;
  return rounds_.round_seconds > 0 ? rounds_.round_seconds : chosen_seconds_;
}

bool DilocoRound::Over() const {
  if (steps_ == 0) return false;
  if (rounds_.round_steps > 0) return steps_ >= rounds_.round_steps;
  // The step that would end nearest the round's end is the last: stop when half a step's time
  // or less is left.
  const double elapsed = std::chrono::duration<double>(Clock::now() - began_).count();
  return elapsed + 0.5 * step_seconds_ >= length_seconds();
}

double DilocoRound::current_lr() const {
  return ScheduledLr(inner_.schedule, inner_.lr, static_cast<double>(inner_steps_));
}

void DilocoRound::Step(uint64_t samples) {
  if (LrScheduleEnabled(inner_.schedule)) {
    const double lr = current_lr();
    for (torch::optim::OptimizerParamGroup& group : optimizer_->param_groups()) group.options().set_lr(lr);
  }
  optimizer_->step();
  ++inner_steps_;
  ++steps_;
  samples_ += samples;
}

void DilocoRound::Timed(double step_seconds) {
  // Smoothed over a few steps, so one slow step (a chunk request, a report) does not end a round early.
  step_seconds_ = step_seconds_ == 0 ? step_seconds : 0.7 * step_seconds_ + 0.3 * step_seconds;
}

void DilocoRound::SetPseudoGradients() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    parameters_[i].mutable_grad() = first_[i] - parameters_[i].detach();
    first_[i].copy_(parameters_[i]);
  }
}

void DilocoRound::Rebase(const std::vector<torch::Tensor>& servers) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    servers_[i].copy_(servers[i].view_as(servers_[i]));
    // weights = servers' + (weights - first): the progress since the push, on the servers' weights.
    parameters_[i].sub_(first_[i]).add_(servers_[i]);
    first_[i].copy_(servers_[i]);
  }
}

std::vector<std::vector<float>> DilocoRound::ServersWeightsOnHost() const {
  std::vector<std::vector<float>> host;
  host.reserve(servers_.size());
  for (const torch::Tensor& w : servers_) {
    const torch::Tensor cpu = w.to(torch::kCPU).contiguous();
    const float* data = cpu.data_ptr<float>();
    host.emplace_back(data, data + cpu.numel());
  }
  return host;
}

}  // namespace hetps
