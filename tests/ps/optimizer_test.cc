// Tests ps/optimizer.cc against LibTorch's torch::optim, which defines the numerics we promise.

// LibTorch before Catch2: LibTorch brings in glog, whose CHECK must not replace Catch2's.
// clang-format off
#include <torch/torch.h>
#include <catch2/catch.hpp>
// clang-format on

#include "ps/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/optimizer_options.h"

namespace hetps {
namespace {

using Kind = OptimizerOptions::Kind;

// Per element |ours - torch| <= kTolerance * max(1, |torch|).
constexpr double kTolerance = 1e-6;
constexpr int kSteps = 6;
// 1 exercises the scalar tail only; 1003 the vector body plus a tail of 3.
const std::vector<size_t> kSizes = {1, 1003};

std::unique_ptr<torch::optim::Optimizer> MakeTorchOptimizer(const OptimizerOptions& o,
                                                            const torch::Tensor& param) {
  std::vector<torch::Tensor> params = {param};
  switch (o.kind) {
    case Kind::kSgd:
      return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(o.lr)
                                                             .momentum(o.momentum)
                                                             .dampening(o.dampening)
                                                             .nesterov(o.nesterov)
                                                             .weight_decay(o.weight_decay));
    case Kind::kAdam:
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(o.lr)
                                                              .betas(std::make_tuple(o.beta1, o.beta2))
                                                              .eps(o.eps)
                                                              .weight_decay(o.weight_decay)
                                                              .amsgrad(o.amsgrad));
    case Kind::kAdamW:
      return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(o.lr)
                                                               .betas(std::make_tuple(o.beta1, o.beta2))
                                                               .eps(o.eps)
                                                               .weight_decay(o.weight_decay)
                                                               .amsgrad(o.amsgrad));
    case Kind::kAdagrad:
      return std::make_unique<torch::optim::Adagrad>(
          params, torch::optim::AdagradOptions(o.lr)
                      .lr_decay(o.lr_decay)
                      .weight_decay(o.weight_decay)
                      .initial_accumulator_value(o.initial_accumulator_value)
                      .eps(o.eps));
  }
  return nullptr;
}

std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

torch::Tensor ToTensor(const std::vector<float>& v) {
  return torch::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}, torch::kFloat32)
      .clone();
}

struct Mismatch {
  double relative_error = 0;
  size_t index = 0;
  float ours = 0;
  float theirs = 0;
};

Mismatch WorstMismatch(const std::vector<float>& ours, const std::vector<float>& theirs) {
  Mismatch worst;
  for (size_t i = 0; i < ours.size(); ++i) {
    const double diff = std::abs(static_cast<double>(ours[i]) - theirs[i]);
    const double error = diff / std::max(1.0, std::abs(static_cast<double>(theirs[i])));
    if (!(error <= worst.relative_error)) worst = {error, i, ours[i], theirs[i]};
  }
  return worst;
}

// Runs kSteps steps of ours and of torch::optim on the same random weights and a fresh random
// gradient per step. Ours gets (grad, grad_scales[t]), lr_scales[t] and `share`; torch gets the
// gradient grad_scales[t] * grad and the learning rate lr * lr_scales[t], except for SGD with
// momentum, which puts k = lr_scales[t] into its buffer: torch then gets k * grad_scales[t] * grad
// and weight decay k * wd, at the learning rate lr (kSamples) or at lr * k with the momentum
// momentum^k (kRound). Checks the weights after every step.
void CheckAgainstTorch(const OptimizerOptions& options, size_t n, const std::vector<float>& grad_scales,
                       const std::vector<float>& lr_scales,
                       Optimizer::Share share = Optimizer::Share::kRound) {
  auto created = Optimizer::Create(options);
  CATCH_REQUIRE(created.ok());
  const Optimizer& ours = **created;

  torch::manual_seed(static_cast<uint64_t>(n) * 7919 + static_cast<uint64_t>(options.kind));
  std::vector<float> weights = ToVector(torch::randn({static_cast<int64_t>(n)}));
  std::vector<float> state(static_cast<size_t>(ours.state_slots()) * n);
  ours.InitState(state.data(), n);

  torch::Tensor param = ToTensor(weights).requires_grad_(true);
  std::unique_ptr<torch::optim::Optimizer> theirs = MakeTorchOptimizer(options, param);

  for (int step = 1; step <= kSteps; ++step) {
    const float grad_scale = grad_scales[static_cast<size_t>(step - 1) % grad_scales.size()];
    const float lr_scale = lr_scales[static_cast<size_t>(step - 1) % lr_scales.size()];
    std::vector<float> grad = ToVector(torch::randn({static_cast<int64_t>(n)}));
    const bool into_buffer = options.kind == Kind::kSgd && options.momentum > 0;
    const bool round = share == Optimizer::Share::kRound;
    std::vector<float> scaled_grad(n);
    for (size_t i = 0; i < n; ++i) scaled_grad[i] = (into_buffer ? lr_scale : 1.0f) * (grad_scale * grad[i]);

    ours.Apply(weights.data(), grad.data(), grad_scale, state.data(), n, step, lr_scale, share);

    param.mutable_grad() = ToTensor(scaled_grad);
    torch::optim::OptimizerOptions& group = theirs->param_groups()[0].options();
    if (into_buffer) {
      auto& sgd = static_cast<torch::optim::SGDOptions&>(group);
      sgd.weight_decay(options.weight_decay * lr_scale);
      sgd.momentum(round ? std::pow(options.momentum, static_cast<double>(lr_scale)) : options.momentum);
      sgd.lr(options.lr * (round ? static_cast<double>(lr_scale) : 1.0));
    } else {
      group.set_lr(options.lr * static_cast<double>(lr_scale));
    }
    theirs->step();

    const Mismatch worst = WorstMismatch(weights, ToVector(param));
    CATCH_INFO(std::setprecision(9) << OptimizerKindName(options.kind) << " n=" << n << " step " << step
                                    << ": worst element " << worst.index << " ours " << worst.ours
                                    << " torch " << worst.theirs << " relative error "
                                    << worst.relative_error);
    CATCH_CHECK(worst.relative_error <= kTolerance);
  }
}

void CheckAgainstTorch(const OptimizerOptions& options, size_t n) {
  CheckAgainstTorch(options, n, {1.0f}, {1.0f});
}

// Checks every named option set at every size.
void CheckAllAgainstTorch(const std::vector<std::pair<std::string, OptimizerOptions>>& cases) {
  for (const auto& [name, options] : cases) {
    for (size_t n : kSizes) {
      CATCH_INFO("case " << name);
      CheckAgainstTorch(options, n);
    }
  }
}

OptimizerOptions Options(Kind kind) {
  return DefaultOptimizerOptions(kind);
}

CATCH_TEST_CASE("SGD matches torch::optim::SGD over several steps", "[ps][optimizer]") {
  std::vector<std::pair<std::string, OptimizerOptions>> cases;
  OptimizerOptions o = Options(Kind::kSgd);
  o.lr = 0.1;
  cases.emplace_back("plain", o);
  o.momentum = 0.9;
  cases.emplace_back("momentum", o);
  o.dampening = 0.3;
  cases.emplace_back("momentum and dampening", o);
  o.dampening = 0;
  o.nesterov = true;
  cases.emplace_back("nesterov", o);
  o = Options(Kind::kSgd);
  o.lr = 0.05;
  o.weight_decay = 0.01;
  cases.emplace_back("weight decay", o);
  o.momentum = 0.5;
  o.dampening = 0.1;
  cases.emplace_back("weight decay, momentum and dampening", o);
  o.dampening = 0;
  o.nesterov = true;
  cases.emplace_back("weight decay and nesterov", o);
  CheckAllAgainstTorch(cases);
}

CATCH_TEST_CASE("Adam matches torch::optim::Adam over several steps", "[ps][optimizer]") {
  std::vector<std::pair<std::string, OptimizerOptions>> cases;
  OptimizerOptions o = Options(Kind::kAdam);
  o.lr = 0.01;
  cases.emplace_back("defaults", o);
  o.weight_decay = 0.05;
  cases.emplace_back("weight decay", o);
  o.amsgrad = true;
  cases.emplace_back("weight decay and amsgrad", o);
  o.weight_decay = 0;
  cases.emplace_back("amsgrad", o);
  o = Options(Kind::kAdam);
  o.beta1 = 0.5;
  o.beta2 = 0.9;
  o.eps = 1e-3;
  cases.emplace_back("other betas and eps", o);
  CheckAllAgainstTorch(cases);
}

CATCH_TEST_CASE("AdamW matches torch::optim::AdamW over several steps", "[ps][optimizer]") {
  std::vector<std::pair<std::string, OptimizerOptions>> cases;
  OptimizerOptions o = Options(Kind::kAdamW);
  cases.emplace_back("defaults", o);
  o.lr = 0.05;
  o.weight_decay = 0.5;
  cases.emplace_back("strong weight decay", o);
  o.amsgrad = true;
  cases.emplace_back("weight decay and amsgrad", o);
  o.weight_decay = 0;
  cases.emplace_back("amsgrad without weight decay", o);
  CheckAllAgainstTorch(cases);
}

CATCH_TEST_CASE("Adagrad matches torch::optim::Adagrad over several steps", "[ps][optimizer]") {
  std::vector<std::pair<std::string, OptimizerOptions>> cases;
  OptimizerOptions o = Options(Kind::kAdagrad);
  o.lr = 0.1;
  cases.emplace_back("defaults", o);
  o.lr_decay = 0.2;
  cases.emplace_back("lr decay", o);
  o.weight_decay = 0.05;
  cases.emplace_back("lr decay and weight decay", o);
  o.initial_accumulator_value = 0.5;
  cases.emplace_back("lr decay, weight decay and initial accumulator", o);
  o = Options(Kind::kAdagrad);
  o.initial_accumulator_value = 2.0;
  o.eps = 1e-6;
  cases.emplace_back("initial accumulator and eps", o);
  CheckAllAgainstTorch(cases);
}

// One option set per kind that exercises the most state.
std::vector<OptimizerOptions> RichOptionsOfEveryKind() {
  OptimizerOptions sgd = Options(Kind::kSgd);
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  sgd.dampening = 0.2;
  sgd.weight_decay = 0.01;
  OptimizerOptions nesterov = sgd;
  nesterov.dampening = 0;
  nesterov.nesterov = true;
  OptimizerOptions adam = Options(Kind::kAdam);
  adam.lr = 0.01;
  adam.weight_decay = 0.05;
  adam.amsgrad = true;
  OptimizerOptions adamw = Options(Kind::kAdamW);
  adamw.lr = 0.01;
  adamw.weight_decay = 0.3;
  OptimizerOptions adagrad = Options(Kind::kAdagrad);
  adagrad.lr = 0.1;
  adagrad.lr_decay = 0.1;
  adagrad.weight_decay = 0.05;
  adagrad.initial_accumulator_value = 0.1;
  return {sgd, nesterov, adam, adamw, adagrad};
}

CATCH_TEST_CASE("Apply with grad_scale s equals torch::optim on the gradient s * g", "[ps][optimizer]") {
  // Fixed and per-step scales, including ones whose product with g is not exact.
  const std::vector<std::vector<float>> scale_sets = {{0.25f}, {3.0f}, {0.37f, 1.9f, 0.01f}};
  for (const OptimizerOptions& options : RichOptionsOfEveryKind()) {
    for (const auto& grad_scales : scale_sets) {
      for (size_t n : kSizes) CheckAgainstTorch(options, n, grad_scales, {1.0f});
    }
  }
}

CATCH_TEST_CASE(
    "Apply with lr_scale k equals torch::optim at lr * k, SGD's momentum on k * g (and momentum^k: kRound)",
    "[ps][optimizer]") {
  // A fixed scale, and a per-step one as pushes of several sizes give.
  const std::vector<std::vector<float>> scale_sets = {{0.5f}, {1.0f, 0.5f, 0.333f, 0.25f, 2.0f}};
  for (const Optimizer::Share share : {Optimizer::Share::kRound, Optimizer::Share::kSamples}) {
    for (const OptimizerOptions& options : RichOptionsOfEveryKind()) {
      for (const auto& lr_scales : scale_sets) {
        for (size_t n : kSizes) CheckAgainstTorch(options, n, {1.0f}, lr_scales, share);
      }
    }
  }
}

CATCH_TEST_CASE("Apply with both scales equals torch::optim on s * g with lr * k", "[ps][optimizer]") {
  for (const OptimizerOptions& options : RichOptionsOfEveryKind()) {
    for (size_t n : kSizes) CheckAgainstTorch(options, n, {0.5f, 2.0f}, {0.8f, 0.3f, 1.0f});
  }
}

// Expects Create to refuse `options` with a message that names `field`.
void CheckRefused(const OptimizerOptions& options, const std::string& field) {
  auto created = Optimizer::Create(options);
  CATCH_INFO("expected a complaint about " << field);
  CATCH_REQUIRE_FALSE(created.ok());
  CATCH_CHECK(created.status().code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(created.status().message().find(field) != std::string::npos);
}

// SGD with lr 0.1 and momentum 0.9.
std::unique_ptr<Optimizer> MomentumSgd() {
  OptimizerOptions o = Options(Kind::kSgd);
  o.lr = 0.1;
  o.momentum = 0.9;
  auto created = Optimizer::Create(o);
  CATCH_REQUIRE(created.ok());
  return std::move(created).value();
}

CATCH_TEST_CASE("With kSamples SGD's momentum buffer takes a step's share of the batch, not the whole buffer",
                "[ps][optimizer]") {
  // A push of 8 global batches' samples (local steps, a larger batch) next to pushes of one: its
  // share must weight its own gradient, not step the gradients already buffered 8 times as far.
  const std::unique_ptr<Optimizer> created = MomentumSgd();
  const Optimizer& sgd = *created;
  std::vector<float> weights = {0.0f}, state(1), grad = {1.0f}, none = {0.0f};
  sgd.InitState(state.data(), 1);
  constexpr auto kSamples = Optimizer::Share::kSamples;
  sgd.Apply(weights.data(), grad.data(), 1.0f, state.data(), 1, 1, 1.0f, kSamples);  // buffer 1, w -0.1
  sgd.Apply(weights.data(), none.data(), 1.0f, state.data(), 1, 2, 8.0f, kSamples);  // buffer 0.9
  CATCH_CHECK(state[0] == Approx(0.9f));
  CATCH_CHECK(weights[0] == Approx(-0.1f - 0.09f));
  sgd.Apply(weights.data(), grad.data(), 1.0f, state.data(), 1, 3, 8.0f, kSamples);  // buffer 0.81 + 8
  CATCH_CHECK(state[0] == Approx(8.81f));
  CATCH_CHECK(weights[0] == Approx(-0.19f - 0.881f));
}

CATCH_TEST_CASE("With kRound a short sync round moves SGD's momentum buffer and weights in proportion",
                "[ps][optimizer]") {
  // Balanced sync's rounds of one sample of 64 must not put that sample's gradient into the
  // buffer at a whole batch's weight (the later whole rounds would step it as one).
  const std::unique_ptr<Optimizer> created = MomentumSgd();
  const Optimizer& sgd = *created;
  std::vector<float> weights = {0.0f}, state(1), grad = {1.0f}, noisy = {64.0f};
  sgd.InitState(state.data(), 1);
  constexpr auto kRound = Optimizer::Share::kRound;
  sgd.Apply(weights.data(), grad.data(), 1.0f, state.data(), 1, 1, 1.0f, kRound);  // buffer 1, w -0.1
  sgd.Apply(weights.data(), noisy.data(), 1.0f, state.data(), 1, 2, 1.0f / 64, kRound);
  const double keep = std::pow(0.9, 1.0 / 64);  // a 64th of a round's decay
  CATCH_CHECK(state[0] == Approx(keep + 1.0));
  CATCH_CHECK(weights[0] == Approx(-0.1 - 0.1 / 64 * (keep + 1.0)));
  // Two half rounds of the same gradient come close to one whole round: buffer 1.874 against 1.9,
  // weights -0.266 against -0.29 (the weights lag by half a round's step). The gradient at a
  // whole round's weight in the buffer with the step halved made the buffer 2.71, and at half
  // weight with the whole step, the weights -0.416.
  std::vector<float> halves = {0.0f}, halves_state(1), whole = {0.0f}, whole_state(1);
  sgd.InitState(halves_state.data(), 1);
  sgd.InitState(whole_state.data(), 1);
  for (int64_t step = 1; step <= 2; ++step) {
    sgd.Apply(whole.data(), grad.data(), 1.0f, whole_state.data(), 1, step, 1.0f, kRound);
  }
  sgd.Apply(halves.data(), grad.data(), 1.0f, halves_state.data(), 1, 1, 1.0f, kRound);
  for (int64_t step = 2; step <= 3; ++step) {
    sgd.Apply(halves.data(), grad.data(), 1.0f, halves_state.data(), 1, step, 0.5f, kRound);
  }
  CATCH_CHECK(halves_state[0] == Approx(whole_state[0]).epsilon(0.02));
  CATCH_CHECK(halves[0] == Approx(whole[0]).epsilon(0.1));
}

CATCH_TEST_CASE("Create refuses invalid options with a message naming the field", "[ps][optimizer]") {
  OptimizerOptions o = Options(Kind::kSgd);
  o.nesterov = true;
  CheckRefused(o, "optimizer.nesterov");
  o.momentum = 0.9;
  o.dampening = 0.5;
  CheckRefused(o, "optimizer.nesterov");

  o = Options(Kind::kSgd);
  o.lr = -0.1;
  CheckRefused(o, "optimizer.lr");
  o.lr = 0;
  CheckRefused(o, "optimizer.lr");
  o.lr = std::nan("");
  CheckRefused(o, "optimizer.lr");

  o = Options(Kind::kSgd);
  o.momentum = 1.0;
  CheckRefused(o, "optimizer.momentum");

  o = Options(Kind::kAdam);
  o.beta1 = 1.0;
  CheckRefused(o, "optimizer.beta1");
  o = Options(Kind::kAdamW);
  o.beta2 = -0.5;
  CheckRefused(o, "optimizer.beta2");
  o.beta2 = 0.999;
  o.weight_decay = -1;
  CheckRefused(o, "optimizer.weight_decay");

  o = Options(Kind::kAdagrad);
  o.lr_decay = -0.1;
  CheckRefused(o, "optimizer.lr_decay");
  o.lr_decay = 0;
  o.initial_accumulator_value = -1;
  CheckRefused(o, "optimizer.initial_accumulator_value");
  o.initial_accumulator_value = 0;
  o.eps = -1e-10;
  CheckRefused(o, "optimizer.eps");
}

CATCH_TEST_CASE("Create keeps the options it was given", "[ps][optimizer]") {
  OptimizerOptions o = Options(Kind::kAdamW);
  o.lr = 0.123;
  auto created = Optimizer::Create(o);
  CATCH_REQUIRE(created.ok());
  CATCH_CHECK((*created)->options().kind == Kind::kAdamW);
  CATCH_CHECK((*created)->options().lr == 0.123);
  CATCH_CHECK((*created)->options().weight_decay == 0.01);
}

int StateSlots(const OptimizerOptions& options) {
  auto created = Optimizer::Create(options);
  CATCH_REQUIRE(created.ok());
  return (*created)->state_slots();
}

CATCH_TEST_CASE("state_slots counts the floats of state each optimizer keeps per element",
                "[ps][optimizer]") {
  OptimizerOptions o = Options(Kind::kSgd);
  CATCH_CHECK(StateSlots(o) == 0);
  o.weight_decay = 0.1;
  o.dampening = 0.5;
  CATCH_CHECK(StateSlots(o) == 0);
  o.momentum = 0.9;
  CATCH_CHECK(StateSlots(o) == 1);

  for (Kind kind : {Kind::kAdam, Kind::kAdamW}) {
    o = Options(kind);
    CATCH_CHECK(StateSlots(o) == 2);
    o.amsgrad = true;
    CATCH_CHECK(StateSlots(o) == 3);
  }

  o = Options(Kind::kAdagrad);
  CATCH_CHECK(StateSlots(o) == 1);
}

CATCH_TEST_CASE("InitState writes zeros, and Adagrad's initial accumulator value", "[ps][optimizer]") {
  constexpr size_t kElements = 37;
  for (OptimizerOptions options : RichOptionsOfEveryKind()) {
    options.initial_accumulator_value = options.kind == Kind::kAdagrad ? 0.75 : 0.0;
    auto created = Optimizer::Create(options);
    CATCH_REQUIRE(created.ok());
    const size_t floats = static_cast<size_t>((*created)->state_slots()) * kElements;
    // One sentinel past the end checks that InitState writes exactly slots * n floats.
    std::vector<float> state(floats + 1, -7.0f);
    (*created)->InitState(state.data(), kElements);
    const float expected = static_cast<float>(options.initial_accumulator_value);
    for (size_t i = 0; i < floats; ++i) CATCH_REQUIRE(state[i] == expected);
    CATCH_CHECK(state[floats] == -7.0f);
  }
}

CATCH_TEST_CASE("A step at an explicit lr (a schedule's) is the step of an optimizer with that lr",
                "[ps][optimizer][lr_schedule]") {
  OptimizerOptions momentum = Options(Kind::kSgd);
  momentum.momentum = 0.9;
  OptimizerOptions adamw = Options(Kind::kAdamW);
  adamw.weight_decay = 0.1;  // decoupled: its decay follows the lr too
  OptimizerOptions adagrad = Options(Kind::kAdagrad);
  adagrad.lr_decay = 0.01;
  for (const OptimizerOptions& base : {Options(Kind::kSgd), momentum, Options(Kind::kAdam), adamw, adagrad}) {
    CATCH_INFO(OptimizerKindName(base.kind));
    auto scheduled = Optimizer::Create(base);
    CATCH_REQUIRE(scheduled.ok());
    const size_t n = 37;
    torch::manual_seed(11);
    std::vector<float> ours = ToVector(torch::randn({static_cast<int64_t>(n)}));
    std::vector<float> reference = ours;
    std::vector<float> our_state(static_cast<size_t>((*scheduled)->state_slots()) * n);
    std::vector<float> reference_state(our_state.size());
    (*scheduled)->InitState(our_state.data(), n);
    (*scheduled)->InitState(reference_state.data(), n);
    for (int step = 1; step <= 4; ++step) {
      const double lr = base.lr * 0.25 * step;  // a different lr every step
      OptimizerOptions at_lr = base;
      at_lr.lr = lr;
      auto fixed = Optimizer::Create(at_lr);
      CATCH_REQUIRE(fixed.ok());
      const std::vector<float> grad = ToVector(torch::randn({static_cast<int64_t>(n)}));
      (*scheduled)
          ->Apply(ours.data(), grad.data(), 1.0f, our_state.data(), n, step, 0.5f, Optimizer::Share::kSamples,
                  lr);
      (*fixed)->Apply(reference.data(), grad.data(), 1.0f, reference_state.data(), n, step, 0.5f,
                      Optimizer::Share::kSamples);
      CATCH_CHECK(ours == reference);
    }
  }
}

}  // namespace
}  // namespace hetps
