// Mode diloco's inner optimizer follows the lr schedule by the trainer's inner steps
// (trainer/diloco_round.cc): each SGD step moves the weights by the schedule's lr of that step,
// across rounds, and mode auto's switch starts the count at the trainer's steps so far.

// LibTorch before Catch2: LibTorch brings in glog, whose CHECK must not replace Catch2's.
// clang-format off
#include <torch/torch.h>
#include <catch2/catch.hpp>
// clang-format on

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "trainer/diloco_round.h"

namespace hetps {
namespace {

constexpr double kLr = 0.5;

OptimizerOptions ScheduledSgd() {
  OptimizerOptions o = DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);
  o.lr = kLr;
  o.schedule.warmup_steps = 4;
  o.schedule.decay = LrScheduleOptions::Decay::kCosine;
  o.schedule.min_lr = 0.05;
  o.schedule.decay_steps = 10;
  return o;
}

// The schedule above, written out.
double ReferenceLr(int step) {
  if (step < 4) return kLr * (step + 1) / 4.0;
  const double progress = std::min(1.0, (step - 4) / 6.0);
  return 0.05 + (kLr - 0.05) * 0.5 * (1 + std::cos(M_PI * progress));
}

CATCH_TEST_CASE("Each inner SGD step moves the weights by the schedule's lr of that step",
                "[trainer][diloco][lr_schedule]") {
  torch::Tensor weight = torch::zeros({3}, torch::requires_grad());
  DilocoOptions rounds;
  rounds.round_steps = 3;
  auto round = DilocoRound::Create({weight}, ScheduledSgd(), rounds);
  CATCH_REQUIRE(round.ok());
  const torch::Tensor grad = torch::tensor({1.0f, -2.0f, 0.5f});
  for (int step = 0; step < 14; ++step) {
    if (step % 3 == 0) (*round)->Begin(0);  // the count goes on across rounds
    CATCH_CHECK((*round)->current_lr() == Approx(ReferenceLr(step)));
    const torch::Tensor before = weight.detach().clone();
    weight.mutable_grad() = grad.clone();
    (*round)->Step(8);
    const torch::Tensor moved = before - weight.detach();
    CATCH_INFO("step " << step);
    CATCH_CHECK(torch::allclose(moved, grad * ReferenceLr(step), 1e-5, 1e-7));
  }
}

CATCH_TEST_CASE("An inner optimizer that starts late goes on from the steps before it",
                "[trainer][diloco][lr_schedule]") {
  torch::Tensor weight = torch::zeros({2}, torch::requires_grad());
  auto round = DilocoRound::Create({weight}, ScheduledSgd(), DilocoOptions{}, /*steps_before=*/7);
  CATCH_REQUIRE(round.ok());
  CATCH_CHECK((*round)->current_lr() == Approx(ReferenceLr(7)));
  // Without a schedule the lr is the optimizer's, always.
  OptimizerOptions plain = ScheduledSgd();
  plain.schedule = LrScheduleOptions{};
  auto constant = DilocoRound::Create({weight}, plain, DilocoOptions{}, 7);
  CATCH_REQUIRE(constant.ok());
  CATCH_CHECK((*constant)->current_lr() == kLr);
  // A cosine decay without its end cannot be followed.
  OptimizerOptions endless = ScheduledSgd();
  endless.schedule.decay_steps = 0;
  auto refused = DilocoRound::Create({weight}, endless, DilocoOptions{});
  CATCH_REQUIRE_FALSE(refused.ok());
  CATCH_CHECK_THAT(refused.status().message(), Catch::Contains("lr_schedule.decay_steps"));
}

}  // namespace
}  // namespace hetps
