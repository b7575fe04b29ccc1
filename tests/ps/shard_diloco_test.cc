// Shard in mode diloco, fed with hand-built pushes of pseudo-gradients: a round's outer step on
// the trainers' combined pseudo-gradients (weighted by samples, normalised by inner steps), the
// outer optimizer's momentum across rounds, rounds without data, what is refused, and the
// length the servers choose for the rounds.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

struct RoundPart {
  uint32_t samples;
  uint32_t inner_steps;
  Floats delta;
};

// The round's combined pseudo-gradient after FedNova: sum_t(p_t * tau_t) * sum_t(p_t * d_t / tau_t),
// with p_t = samples_t / samples of the round.
std::vector<double> Combined(const std::vector<RoundPart>& parts) {
  double samples = 0;
  for (const RoundPart& p : parts) samples += p.samples;
  double mean_steps = 0;
  for (const RoundPart& p : parts) mean_steps += p.samples / samples * p.inner_steps;
  std::vector<double> combined(kLength, 0.0);
  for (const RoundPart& p : parts) {
    for (size_t i = 0; i < kLength; ++i) combined[i] += p.samples / samples * p.delta[i] / p.inner_steps;
  }
  for (double& c : combined) c *= mean_steps;
  return combined;
}

const Floats kInitial = Ramp(0.5f, 0.25f);

}  // namespace

CATCH_TEST_CASE("A diloco round with one trainer and plain averaging applies its pseudo-gradient as it is",
                "[ps][shard][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeDilocoShard(map, 1.0, 0.0);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Floats delta = Ramp(0.01f, -0.003f);
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 640, 10, delta)).ok());
  shard->workers().Flush();
  const Floats weights = WeightsOf(*shard, 0);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(weights[i] == kInitial[i] - delta[i]);
  CATCH_CHECK(shard->stats().rounds == 1);
  CATCH_CHECK(shard->CompletedRounds() == 1);
}

CATCH_TEST_CASE(
    "Diloco's outer Nesterov step over rounds equals a reference on the sample-weighted, "
    "step-normalised pseudo-gradients",
    "[ps][shard][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeDilocoShard(map, 0.7, 0.9);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  MomentumReference reference{0.7, 0.9, std::vector<double>(kInitial.begin(), kInitial.end()),
                              std::vector<double>(kLength, 0.0)};
  // A fast trainer (4x the inner steps and samples of the slow one) and a slow one, over three
  // rounds, so that the momentum of the earlier rounds enters the later ones.
  for (uint64_t round = 0; round < 3; ++round) {
    const float r = static_cast<float>(round);
    const std::vector<RoundPart> parts = {{2560, 40, Ramp(0.02f + 0.01f * r, 0.001f)},
                                          {640, 10, Ramp(-0.01f, 0.002f * (r + 1))}};
    CATCH_REQUIRE(
        Push(*shard, 0, MakeRoundPush(round, parts[0].samples, parts[0].inner_steps, parts[0].delta)).ok());
    shard->workers().Flush();
    CATCH_CHECK(shard->CompletedRounds() == round);  // waits for the slow one
    CATCH_CHECK(!shard->PullReady({0, 2}, round + 1, /*latest=*/false));
    CATCH_REQUIRE(
        Push(*shard, 1, MakeRoundPush(round, parts[1].samples, parts[1].inner_steps, parts[1].delta)).ok());
    reference.Step(Combined(parts));
    shard->workers().Flush();
    CATCH_CHECK(shard->CompletedRounds() == round + 1);
    CATCH_CHECK(shard->PullReady({0, 2}, round + 1, /*latest=*/false));
    const Floats weights = WeightsOf(*shard, 2);
    for (size_t i = 0; i < kLength; ++i) {
      CATCH_INFO("round " << round << ", element " << i);
      CATCH_CHECK(std::abs(weights[i] - reference.weights[i]) < 1e-6);
    }
  }
}

CATCH_TEST_CASE("A diloco round in which a trainer had no data is the others' pseudo-gradient",
                "[ps][shard][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeDilocoShard(map, 1.0, 0.0);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Floats delta = Ramp(0.05f, 0.01f);
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 320, 5, delta)).ok());
  CATCH_REQUIRE(Push(*shard, 1, MakePush(0, 0, {0, 2}, {{}, {}})).ok());  // out of data
  shard->workers().Flush();
  CATCH_CHECK(shard->CompletedRounds() == 1);
  const Floats weights = WeightsOf(*shard, 0);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(std::abs(weights[i] - (kInitial[i] - delta[i])) < 1e-6);
}

CATCH_TEST_CASE("A diloco push of samples without inner steps is refused and changes nothing",
                "[ps][shard][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeDilocoShard(map, 1.0, 0.0);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Status refused = Push(*shard, 0, MakeRoundPush(0, 64, 0, Ramp(1.0f, 0.0f)));
  CATCH_CHECK(refused.code() == Status::Code::kProtocol);
  CATCH_CHECK(refused.message().find("no inner steps") != std::string::npos);
  shard->workers().Flush();
  CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
  CATCH_CHECK(shard->stats().pushes == 0);
  // The trainer's proper push of the same round is still taken.
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 64, 1, Ramp(1.0f, 0.0f))).ok());
}

CATCH_TEST_CASE("The servers choose a diloco round long enough that its synchronisation is sync_share of it",
                "[ps][shard][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kDiloco, [](Shard::Options& o) {
    o.optimizer = DefaultOuterOptimizer();
    o.diloco.overlap = false;
    o.diloco.sync_share = 0.05;
    o.diloco.min_round_seconds = 1;
    o.diloco.max_round_seconds = 60;
  });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  auto round_seconds = [&] { return Build(*shard, {0, 2})->body().round_seconds(); };
  CATCH_CHECK(round_seconds() == 1.0);  // nothing measured yet: the shortest
  // Round 0's pushes measured nothing (their trainers had no previous round); round 1's did:
  // 0.2 s for one trainer, 0.1 s for the other. The longest decides: 0.2 / 0.05 = 4 s.
  const Floats delta = Ramp(0.0f, 0.001f);
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 64, 1, delta)).ok());
  CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(0, 64, 1, delta)).ok());
  shard->workers().Flush();
  CATCH_CHECK(round_seconds() == 1.0);
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(1, 64, 1, delta, 200000)).ok());
  CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(1, 64, 1, delta, 100000)).ok());
  shard->workers().Flush();
  CATCH_CHECK(std::abs(round_seconds() - 4.0) < 1e-9);
  // A synchronisation of 10 s would need 200 s rounds: max_round_seconds bounds them.
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(2, 64, 1, delta, 10000000)).ok());
  CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(2, 64, 1, delta, 100000)).ok());
  shard->workers().Flush();
  CATCH_CHECK(round_seconds() == 60.0);
}

CATCH_TEST_CASE(
    "With rounds overlapping their transfers, the servers choose rounds a little longer than "
    "their synchronisation",
    "[ps][shard][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kDiloco, [](Shard::Options& o) {
    o.optimizer = DefaultOuterOptimizer();
    o.diloco.overlap = true;
    o.diloco.min_round_seconds = 1;
  });
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  auto round_seconds = [&] { return Build(*shard, {0, 2})->body().round_seconds(); };
  const Floats delta = Ramp(0.0f, 0.001f);
  // 0.4 s to synchronise: 0.5 s would do, but no round is shorter than 1 s.
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 64, 1, delta, 400000)).ok());
  shard->workers().Flush();
  CATCH_CHECK(round_seconds() == 1.0);
  // 8 s (a slow link): 10 s rounds, where waiting for them would need 160 s.
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(1, 64, 1, delta, 8000000)).ok());
  shard->workers().Flush();
  CATCH_CHECK(std::abs(round_seconds() - 8.0 * RoundLength::kOverlapMargin) < 1e-9);
}

CATCH_TEST_CASE("Diloco rounds of a fixed length leave the choice to the trainers", "[ps][shard][diloco]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kDiloco, [](Shard::Options& o) {
    o.optimizer = DefaultOuterOptimizer();
    o.diloco.round_steps = 50;
  });
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 64, 50, Ramp(0.0f, 0.001f), 300000)).ok());
  shard->workers().Flush();
  CATCH_CHECK(Build(*shard, {0, 2})->body().round_seconds() == 0.0);
}

}  // namespace hetps
