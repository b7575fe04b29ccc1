// DilocoRound: a trainer's side of the rounds of mode diloco. It keeps the weights the round
// started from, steps the model's own weights with the inner optimizer (the job's `optimizer`,
// torch::optim's, whose state lives on the trainer and carries over from round to round), tells
// when the round is over (after round_steps inner steps, or once its time is up), and turns the
// round into its pseudo-gradient: each parameter's .grad becomes the round's first weights
// minus its weights now, which the trainer pushes as it would a gradient.
//
// The next round starts from the weights the model has then (its first weights are those), so
// that it can run while the pushed round travels (diloco.overlap); when the servers' weights
// after the pushed round arrive, Rebase puts the model on them, keeping what the running round
// has trained since: each round's pseudo-gradient is its own progress, and the servers' outer
// step reaches the trainer one round late. Without overlap the trainer waits for them first, and
// the model then holds the servers' weights exactly.
//
// The inner optimizer follows its lr schedule (OptimizerOptions::schedule) by the inner steps this
// trainer has taken in the job: each step's lr is set before it, and carries on across rounds.
//
// Borrows the model's parameters (on their device). Used by the trainer's loop thread only;
// LibTorch failures throw c10::Error.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "common/job_config.h"
#include "common/optimizer_options.h"
#include "common/status.h"

namespace torch::optim {
class Optimizer;
}

namespace hetps {

class DilocoRound {
 public:
  // InvalidArgument naming the field when `inner` cannot be had from torch::optim.
  // `steps_before`: the inner steps the schedule counts as taken already (mode auto's switch to
  // diloco: the trainer's steps so far).
  static Result<std::unique_ptr<DilocoRound>> Create(std::vector<torch::Tensor> parameters,
                                                     const OptimizerOptions& inner,
                                                     const DilocoOptions& rounds, uint64_t steps_before = 0);
  ~DilocoRound();

  // The model holds the servers' weights (after the first pull, or a recovery's): the round's
  // first weights and the newest servers' weights become those.
  void Restart();
  // A round begins: its clock starts and its counts are zero. `chosen_seconds` is the length the
  // servers chose (Weights.round_seconds), used when the job fixes neither round_steps nor
  // round_seconds; 0 keeps the last one chosen.
  void Begin(double chosen_seconds);
  // Whether the round is over before its next inner step: round_steps taken, or (rounds by time)
  // the next step would end nearer past the round's end than before it. A round takes at least
  // one step.
  bool Over() const;
  // After an inner step's backward on `samples` samples: the inner optimizer steps the weights by
  // their gradients, at the lr its schedule gives the step (current_lr()).
  void Step(uint64_t samples);
  // The lr of the next inner step.
  double current_lr() const;
  // The inner step's wall time (forward, backward, the optimizer, a slowdown's sleep), for Over().
  void Timed(double step_seconds);
  // Every parameter's .grad becomes the round's first weights minus its weights now; then the
  // weights now become the next round's first weights.
  void SetPseudoGradients();
  // The servers' weights after a pushed round, one host tensor per parameter: the model moves
  // onto them with what it trained since that push, and they become the round's first weights.
  void Rebase(const std::vector<torch::Tensor>& servers);

  uint32_t steps() const { return steps_; }
  uint64_t samples() const { return samples_; }
  // The round's length in seconds (0 for rounds of round_steps).
  double length_seconds() const;
  // The newest servers' weights received (Restart, Rebase), one per parameter, copied to the host:
  // for an evaluation's snapshot, the servers' weights as they stand while a round runs.
  std::vector<std::vector<float>> ServersWeightsOnHost() const;

 private:
  using Clock = std::chrono::steady_clock;
  DilocoRound(std::vector<torch::Tensor> parameters, std::unique_ptr<torch::optim::Optimizer> optimizer,
              const OptimizerOptions& inner, const DilocoOptions& rounds, uint64_t steps_before);

  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> first_;    // the round's first weights, allocated once
  std::vector<torch::Tensor> servers_;  // the newest servers' weights received, allocated once
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  OptimizerOptions inner_;
  uint64_t inner_steps_;  // taken in the job (the schedule's count), steps_before included
  DilocoOptions rounds_;
  double chosen_seconds_;  // the servers' choice, for rounds by a chosen time
  Clock::time_point began_;
  uint32_t steps_ = 0;
  uint64_t samples_ = 0;
  double step_seconds_ = 0;  // a recent inner step's wall time (smoothed)
};

}  // namespace hetps
