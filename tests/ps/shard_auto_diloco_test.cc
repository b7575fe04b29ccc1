// A Shard in mode: auto switched to diloco: from the switch's step on each step is a round of
// pseudo-gradients combined as in mode diloco and stepped by the outer optimizer (apart from the
// per-step phases' optimizer), after a barrier; empty rounds take part in them; the switch is the
// last the schedule takes. With diloco.async each round is stepped alone as it arrives, by Delayed
// Nesterov on a state of the phase's own.
#include <catch2/catch.hpp>

#include <vector>

#include "ps/mode_schedule.h"
#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
using namespace testing;  // NOLINT: the helpers of shard_wire.h

CATCH_TEST_CASE("A switch to diloco is the last a mode schedule takes", "[ps][auto][diloco]") {
  ModeSchedule schedule(ConsistencyMode::kAsync, 0);
  CATCH_CHECK(schedule.Switch(10, ConsistencyMode::kDiloco, 0, uint64_t{4}).value() == 10);
  CATCH_CHECK(schedule.At(9).mode == ConsistencyMode::kAsync);
  CATCH_CHECK(schedule.At(10).mode == ConsistencyMode::kDiloco);
  const auto again = schedule.Switch(20, ConsistencyMode::kSync, 0, uint64_t{12});
  CATCH_CHECK(again.status().code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(schedule.At(1000).mode == ConsistencyMode::kDiloco);
}

CATCH_TEST_CASE(
    "An auto shard switched to diloco runs rounds of pseudo-gradients stepped by the outer optimizer",
    "[ps][auto][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAuto, [](Shard::Options& o) {
    o.outer_optimizer = DefaultOuterOptimizer();  // plain averaging
    o.global_batch_size = 8;
  });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  const Floats g = Ramp(0.5f, 0);
  // Async steps: trainer 0 at steps 0 and 1, trainer 1 at step 0.
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 1, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 8, g).ok());
  // Diloco from step 3; step 2 is still async.
  CATCH_CHECK(shard->SwitchMode(3, ConsistencyMode::kDiloco, 0).value() == 3);
  CATCH_REQUIRE(PushBoth(*shard, 0, 2, 8, g).ok());
  // The first round starts from one state: its pull waits for every trainer's step 2.
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 3, false));
  CATCH_REQUIRE(PushBoth(*shard, 1, 1, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 2, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 3, false));
  shard->workers().Flush();
  const Floats start = WeightsOf(*shard, 0);
  const uint64_t version = shard->stats().version;
  // Round 3: both trainers' pseudo-gradients, of equal samples and steps, averaged.
  const Floats d0 = Ramp(0.02f, 0.001f), d1 = Ramp(-0.01f, 0.003f);
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(3, 80, 10, d0)).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 4, false));
  CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(3, 80, 10, d1)).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 4, false));
  shard->workers().Flush();
  Floats weights = WeightsOf(*shard, 0);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(weights[i] == Approx(start[i] - (d0[i] + d1[i]) / 2));
  CATCH_CHECK(shard->stats().version == version + 1);
  // The weights after a diloco round say how long the next lasts (RoundLength: at first the least).
  CATCH_CHECK(Build(*shard, {0, 2})->body().round_seconds() == DilocoOptions{}.min_round_seconds);

  // Round 4: a trainer out of data pushes an empty round, which takes part in it (it is no idle
  // mark): the round is the other's pseudo-gradient as it is.
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(4, 0, 0, {})).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 5, false));
  CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(4, 40, 5, d1)).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 5, false));
  shard->workers().Flush();
  const Floats before = weights;
  weights = WeightsOf(*shard, 0);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(weights[i] == Approx(before[i] - d1[i]));

  // A per-step gradient (no inner steps) in a diloco round is refused; so is any later switch.
  CATCH_CHECK_FALSE(PushBoth(*shard, 0, 5, 8, g).ok());
  CATCH_CHECK_FALSE(shard->SwitchMode(20, ConsistencyMode::kAsync, 0).ok());
}

CATCH_TEST_CASE("An auto shard's diloco rounds step an outer optimizer of their own", "[ps][auto][diloco]") {
  const ShardMap map = TestMap();
  // The per-step phases' SGD has momentum; the outer optimizer is plain SGD at lr 0.5.
  auto shard = MakeShard(map, ConsistencyMode::kAuto, [](Shard::Options& o) {
    o.optimizer.momentum = 0.9;
    o.outer_optimizer = DefaultOuterOptimizer();
    o.outer_optimizer.lr = 0.5;
  });
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 8, Ramp(0.5f, 0)).ok());
  CATCH_CHECK(shard->SwitchMode(1, ConsistencyMode::kDiloco, 0).value() == 1);
  shard->workers().Flush();
  const Floats start = WeightsOf(*shard, 0);
  const Floats d = Ramp(0.04f, 0.002f);
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(1, 64, 4, d)).ok());
  shard->workers().Flush();
  // No momentum from the per-step steps enters the round's step: lr 0.5 times the pseudo-gradient.
  const Floats weights = WeightsOf(*shard, 0);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(weights[i] == Approx(start[i] - 0.5f * d[i]));
}

CATCH_TEST_CASE("An auto shard's asynchronous diloco rounds step Delayed Nesterov, each push alone",
                "[ps][auto][diloco]") {
  const ShardMap map = TestMap();
  constexpr float kOuterLr = 0.5f, kMomentum = 0.9f;
  auto shard = MakeShard(map, ConsistencyMode::kAuto, [&](Shard::Options& o) {
    o.optimizer.momentum = 0.9;  // the per-step phases', whose state the rounds leave alone
    o.outer_optimizer = DefaultOuterOptimizer();
    o.outer_optimizer.lr = kOuterLr;
    o.outer_optimizer.momentum = kMomentum;
    o.outer_optimizer.nesterov = true;
    o.diloco.async = true;
  });
  CATCH_CHECK(shard->state_slots() == 1);  // checkpoints hold the per-step optimizer's state
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 8, Ramp(0.5f, 0)).ok());
  CATCH_CHECK(Build(*shard, {0, 2})->body().round_seconds() == 0);  // no rounds in a per-step phase
  CATCH_CHECK(shard->SwitchMode(1, ConsistencyMode::kDiloco, 0).value() == 1);
  shard->workers().Flush();
  const Floats start = WeightsOf(*shard, 0);
  // Trainer 0's round is stepped at once, by lr * d / N; nobody waits for trainer 1.
  const Floats d0 = Ramp(0.04f, 0.002f), d1 = Ramp(-0.02f, 0.004f);
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(1, 64, 4, d0)).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 2, false));
  shard->workers().Flush();
  Floats weights = WeightsOf(*shard, 0);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(weights[i] == Approx(start[i] - kOuterLr * d0[i] / 2));
  CATCH_CHECK(Build(*shard, {0, 2})->body().round_seconds() > 0);
  // The phase's second push is its N-th: the momentum buffer is refreshed with both (no momentum
  // from the per-step phase in it), and the weights take its Nesterov part.
  CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(1, 64, 4, d1)).ok());
  shard->workers().Flush();
  const Floats after_first = weights;
  weights = WeightsOf(*shard, 0);
  for (size_t i = 0; i < kLength; ++i) {
    const float buffer = d0[i] / 2 + d1[i] / 2;
    CATCH_CHECK(weights[i] == Approx(after_first[i] - kOuterLr * d1[i] / 2 - kOuterLr * kMomentum * buffer));
  }
}

}  // namespace hetps
