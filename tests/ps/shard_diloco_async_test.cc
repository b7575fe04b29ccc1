// Shard in mode diloco with async rounds (diloco.async), fed with hand-built pushes: each
// pseudo-gradient applied alone on arrival by Delayed Nesterov, N pushes from one start equal to a
// synchronous round's outer step on their mean, the momentum refreshed once per N pushes,
// empty pushes, checkpoints of the momentum and its pending sum, and what is refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

std::unique_ptr<Shard> MakeAsyncShard(const ShardMap& map, double lr, double momentum, bool nesterov = true) {
  return MakeDilocoShard(map, lr, momentum, /*async=*/true, nesterov);
}

std::vector<double> Mean(const Floats& a, const Floats& b) {
  std::vector<double> mean(kLength);
  for (size_t i = 0; i < kLength; ++i) mean[i] = (static_cast<double>(a[i]) + b[i]) / 2;
  return mean;
}

void CheckNear(Shard& shard, uint32_t partition, const std::vector<double>& expected, double tolerance) {
  const Floats weights = WeightsOf(shard, partition);
  for (size_t i = 0; i < kLength; ++i) {
    CATCH_INFO("partition " << partition << ", element " << i);
    CATCH_CHECK(std::abs(weights[i] - expected[i]) < tolerance);
  }
}

const Floats kInitial = Ramp(0.5f, 0.25f);

}  // namespace

CATCH_TEST_CASE("An async diloco push is applied on arrival, alone, as one of N trainers' rounds",
                "[ps][shard][diloco][async]") {
  const ShardMap map = TestMap();
  auto shard = MakeAsyncShard(map, 1.0, 0.0);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_CHECK(!shard->has_rounds());
  const Floats delta = Ramp(0.04f, -0.002f);
  // Trainer 0's third round, while trainer 1 has pushed none: nobody waits for anybody.
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(2, 640, 10, delta)).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 3, /*latest=*/false));
  shard->workers().Flush();
  std::vector<double> expected(kLength);
  for (size_t i = 0; i < kLength; ++i) expected[i] = kInitial[i] - delta[i] / 2.0;
  CheckNear(*shard, 0, expected, 1e-6);
  CheckNear(*shard, 2, expected, 1e-6);
  CATCH_CHECK(shard->stats().rounds == 1);  // pushes applied
  // A round without data (a trainer out of it) changes nothing.
  CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(0, 0, 0, {})).ok());
  shard->workers().Flush();
  CheckNear(*shard, 0, expected, 1e-6);
  CATCH_CHECK(shard->stats().rounds == 1);
}

CATCH_TEST_CASE(
    "Delayed Nesterov: N async pushes from one start move the weights as one synchronous outer "
    "Nesterov step on their mean",
    "[ps][shard][diloco][async]") {
  const bool nesterov = GENERATE(true, false);
  CATCH_INFO((nesterov ? "Nesterov" : "heavy ball"));
  const ShardMap map = TestMap();
  auto shard = MakeAsyncShard(map, 0.7, 0.9, nesterov);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  MomentumReference reference{0.7, 0.9, std::vector<double>(kInitial.begin(), kInitial.end()),
                              std::vector<double>(kLength, 0.0), nesterov};
  for (uint64_t round = 0; round < 3; ++round) {
    const float r = static_cast<float>(round);
    const Floats d0 = Ramp(0.02f + 0.01f * r, 0.001f);
    const Floats d1 = Ramp(-0.01f, 0.002f * (r + 1));
    const std::vector<double> before(reference.weights);
    CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(round, 2560, 40, d0, 0, 2 * round)).ok());
    shard->workers().Flush();
    // The first of the pair: its share, lr * d / N, and no momentum yet.
    std::vector<double> half(kLength);
    for (size_t i = 0; i < kLength; ++i) half[i] = WeightsOf(*shard, 0)[i];
    reference.Step(Mean(d0, d1));
    CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(round, 640, 10, d1, 0, 2 * round)).ok());
    shard->workers().Flush();
    for (size_t i = 0; i < kLength; ++i) {
      CATCH_INFO("round " << round << ", element " << i);
      if (round == 0) CATCH_CHECK(std::abs(half[i] - (before[i] - 0.7 * d0[i] / 2)) < 1e-6);
    }
    CheckNear(*shard, 0, reference.weights, 1e-6);
    CheckNear(*shard, 2, reference.weights, 1e-6);
  }
  CATCH_CHECK(shard->stats().rounds == 6);
  CATCH_CHECK(shard->state_names() == std::vector<std::string>{"momentum_buffer", "delayed_sum"});
}

CATCH_TEST_CASE("A checkpoint of async diloco keeps the momentum and the pushes not yet in it",
                "[ps][shard][diloco][async][checkpoint]") {
  const ShardMap map = TestMap();
  auto first = MakeAsyncShard(map, 0.7, 0.9);
  auto uninterrupted = MakeAsyncShard(map, 0.7, 0.9);
  for (Shard* shard : {first.get(), uninterrupted.get()}) {
    shard->SetLiveTrainers({0, 1});
    CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  }
  const Floats d0 = Ramp(0.03f, 0.001f), d1 = Ramp(-0.02f, 0.003f), d2 = Ramp(0.01f, -0.002f);
  // Three pushes, so the cut falls between a refresh and the next.
  for (Shard* shard : {first.get(), uninterrupted.get()}) {
    CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 640, 10, d0)).ok());
    CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(0, 640, 10, d1)).ok());
    CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(1, 640, 10, d2, 0, 2)).ok());
  }
  Shard::Snapshot snapshot;
  bool taken = false;
  CATCH_REQUIRE(first
                    ->TakeSnapshot(std::nullopt,
                                   [&](Shard::Snapshot& s) {
                                     snapshot = std::move(s);
                                     taken = true;
                                   })
                    .ok());
  first->workers().Flush();
  CATCH_REQUIRE(taken);
  auto resumed = MakeAsyncShard(map, 0.7, 0.9);
  resumed->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(resumed->Restore(snapshot.tensors, snapshot.frames, snapshot.round).ok());
  // The fourth push refreshes the momentum with the third's share in it, resumed or not.
  for (Shard* shard : {resumed.get(), uninterrupted.get()}) {
    CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(1, 640, 10, d0, 0, 2)).ok());
    shard->workers().Flush();
  }
  for (uint32_t partition : {0u, 2u}) {
    const Floats a = WeightsOf(*resumed, partition), b = WeightsOf(*uninterrupted, partition);
    for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(a[i] == b[i]);
  }
}

CATCH_TEST_CASE("Async diloco takes only SGD without weight decay outside", "[ps][shard][diloco][async]") {
  const ShardMap map = TestMap();
  Shard::Options options;
  options.mode = ConsistencyMode::kDiloco;
  options.diloco.async = true;
  options.optimizer = OuterOptimizerDefaults(OptimizerOptions::Kind::kAdam);
  auto adam = Shard::Create(map, 0, options);
  CATCH_REQUIRE(!adam.ok());
  CATCH_CHECK(adam.status().message().find("outer_optimizer.name") != std::string::npos);
  options.optimizer = DefaultOuterOptimizer();
  options.optimizer.weight_decay = 0.01;
  auto decayed = Shard::Create(map, 0, options);
  CATCH_REQUIRE(!decayed.ok());
  CATCH_CHECK(decayed.status().message().find("outer_optimizer.weight_decay") != std::string::npos);
}

}  // namespace hetps
