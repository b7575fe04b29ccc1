// Shard on its own in async and ssp mode: the staleness of each push (its record, and the
// staleness-aware rate that divides the gradient by it), when an ssp pull may be answered,
// and how idle trainers and membership changes release waiting pulls.
#include <catch2/catch.hpp>

#include <vector>

#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

// Plain SGD at kLr * lr_scale, in float as the server computes it.
Floats SgdStep(const Floats& weights, const Floats& grad, float lr_scale) {
  Floats result(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) result[i] = weights[i] - kLr * lr_scale * grad[i];
  return result;
}

// A push of `grad` to both partitions of server 0, computed on weight version `version`.
Status PushAt(Shard& shard, uint32_t trainer, uint64_t clock, uint64_t version, const Floats& grad) {
  return Push(shard, trainer, MakePush(clock, 8, {0, 2}, {grad, grad}, wire::DType::F32, {version, version}));
}

Status MarkIdle(Shard& shard, uint32_t trainer, uint64_t clock) {
  return Push(shard, trainer, MakePush(clock, 0, {0, 2}, {Floats{}, Floats{}}));
}

std::unique_ptr<Shard> SspShard(const ShardMap& map, uint32_t staleness) {
  auto shard =
      MakeShard(map, ConsistencyMode::kSsp, [staleness](Shard::Options& o) { o.staleness = staleness; });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  return shard;
}

}  // namespace

CATCH_TEST_CASE("The staleness-aware rate divides each step by the pushes it comes after, itself included",
                "[ps][shard][staleness]") {
  const ShardMap map = TestMap();
  for (bool aware : {false, true}) {
    CATCH_SECTION(aware ? "staleness_aware_lr on" : "staleness_aware_lr off") {
      auto shard = MakeShard(map, ConsistencyMode::kAsync,
                             [aware](Shard::Options& o) { o.staleness_aware_lr = aware; });
      shard->SetLiveTrainers({0, 1, 2});
      Floats expected = Ramp(1, 0.5f);
      CATCH_REQUIRE(InitBoth(*shard, expected).ok());
      const Floats g = Ramp(0.25f, -0.125f);
      // Staleness 0 (version 0 is current), then 1, 2 and 3: the step is lr, then lr / 2, lr / 3
      // and lr / 4 (a push that comes after s others since its weights counts as one of s + 1).
      struct Case {
        uint32_t trainer;
        uint64_t version;
        float scale;
      };
      const std::vector<Case> cases = {{0, 0, 1.0f},
                                       {1, 0, aware ? 0.5f : 1.0f},
                                       {2, 0, aware ? 1.0f / 3 : 1.0f},
                                       {0, 0, aware ? 0.25f : 1.0f}};
      uint64_t clock = 0;
      for (const Case& c : cases) {
        CATCH_REQUIRE(PushAt(*shard, c.trainer, clock++, c.version, g).ok());
        expected = SgdStep(expected, g, c.scale);
        CATCH_CHECK(WeightsOf(*shard, 0) == expected);
        CATCH_CHECK(WeightsOf(*shard, 2) == expected);
      }
      const Shard::Stats stats = shard->stats();
      CATCH_CHECK(stats.staleness_counts == std::vector<uint64_t>{1, 1, 1, 1});
      CATCH_CHECK(stats.staleness_max == 3);
    }
  }
}

CATCH_TEST_CASE("With momentum, the staleness-aware rate divides the stale gradient, not the buffer",
                "[ps][shard][staleness]") {
  const ShardMap map = TestMap();
  constexpr float kMomentum = 0.9f;
  auto shard = MakeShard(map, ConsistencyMode::kAsync, [](Shard::Options& o) {
    o.staleness_aware_lr = true;
    o.optimizer.momentum = kMomentum;
  });
  shard->SetLiveTrainers({0, 1});
  Floats expected = Ramp(1, 0.5f);
  CATCH_REQUIRE(InitBoth(*shard, expected).ok());
  const Floats fresh = Ramp(0.25f, -0.125f);
  const Floats stale = Ramp(-0.5f, 0.75f);
  // Trainer 0 steps three times on current weights; trainer 1 then pushes a gradient computed on
  // version 0 (staleness 3), and trainer 0 steps once more on current weights. The buffer takes
  // the stale gradient at a quarter of its weight, and every step moves by the full rate: a stale
  // push does not shrink the fresh gradients the buffer holds, nor does its own gradient reach
  // later steps at full weight.
  Floats buffer(fresh.size(), 0.0f);
  auto step = [&](const Floats& grad, float weight, bool first) {
    for (size_t i = 0; i < buffer.size(); ++i) {
      buffer[i] = first ? weight * grad[i] : kMomentum * buffer[i] + weight * grad[i];
      expected[i] = expected[i] - kLr * buffer[i];
    }
  };
  for (uint64_t clock = 0; clock < 3; ++clock) {
    CATCH_REQUIRE(PushAt(*shard, 0, clock, shard->stats().version, fresh).ok());
    step(fresh, 1.0f, clock == 0);
  }
  CATCH_REQUIRE(PushAt(*shard, 1, 0, 0, stale).ok());
  step(stale, 0.25f, false);
  CATCH_CHECK(WeightsOf(*shard, 0) == expected);
  CATCH_REQUIRE(PushAt(*shard, 0, 3, shard->stats().version, fresh).ok());
  step(fresh, 1.0f, false);
  CATCH_CHECK(WeightsOf(*shard, 0) == expected);
  CATCH_CHECK(WeightsOf(*shard, 2) == expected);
  CATCH_CHECK(shard->stats().staleness_max == 3);
}

CATCH_TEST_CASE(
    "An async push steps by its share of the global batch, and counts the pushes since at its size",
    "[ps][shard][staleness]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync, [](Shard::Options& o) {
    o.global_batch_size = 16;
    o.staleness_aware_lr = true;
  });
  shard->SetLiveTrainers({0, 1, 2});
  Floats expected = Ramp(1, 0.5f);
  CATCH_REQUIRE(InitBoth(*shard, expected).ok());
  const Floats g = Ramp(0.25f, -0.125f);
  // PushAt sends 8 samples: half the global batch. Two fresh pushes step by half the rate each;
  // then a push two versions stale has a global batch applied since its weights (two pushes of
  // its size) and counts as one of two: a quarter of the rate.
  CATCH_REQUIRE(PushAt(*shard, 0, 0, 0, g).ok());
  CATCH_REQUIRE(PushAt(*shard, 1, 0, 1, g).ok());
  expected = SgdStep(SgdStep(expected, g, 0.5f), g, 0.5f);
  CATCH_CHECK(WeightsOf(*shard, 0) == expected);
  CATCH_REQUIRE(PushAt(*shard, 2, 0, 0, g).ok());
  expected = SgdStep(expected, g, 0.25f);
  CATCH_CHECK(WeightsOf(*shard, 2) == expected);
  CATCH_CHECK(shard->stats().staleness_max == 2);
}

CATCH_TEST_CASE("A push computed on a version the shard has not reached is refused",
                "[ps][shard][staleness]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  Status status = PushAt(*shard, 0, 0, 5, Ramp(1, 0));
  CATCH_CHECK(status.code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(status.message().find("version 5") != std::string::npos);
  CATCH_CHECK(shard->stats().pushes == 0);
  CATCH_CHECK(WeightsOf(*shard, 0) == Ramp(1, 0));
}

CATCH_TEST_CASE("An ssp pull waits until every live, busy trainer is within the bound", "[ps][shard][ssp]") {
  const ShardMap map = TestMap();
  const std::vector<uint32_t> both = {0, 2};
  const Floats g = Ramp(0.5f, 0);
  auto shard = SspShard(map, /*staleness=*/2);
  // Trainer 0 runs ahead; trainer 1 has pushed nothing. Clocks up to 2 need nobody.
  for (uint64_t clock = 0; clock < 3; ++clock) {
    CATCH_REQUIRE(PushAt(*shard, 0, clock, shard->stats().version, g).ok());
  }
  CATCH_CHECK(shard->PullReady(both, 2, false));
  CATCH_CHECK_FALSE(shard->PullReady(both, 3, false));  // needs trainer 1 at clock 1
  CATCH_CHECK(shard->PullReady(both, 3, /*latest=*/true));
  CATCH_REQUIRE(PushAt(*shard, 1, 0, 0, g).ok());
  CATCH_CHECK(shard->PullReady(both, 3, false));
  CATCH_CHECK_FALSE(shard->PullReady(both, 4, false));
  shard->RecordAdmission(3);
  CATCH_CHECK(shard->stats().max_clock_gap == 2);

  CATCH_SECTION("an idle trainer is not waited for until it pushes again") {
    CATCH_REQUIRE(MarkIdle(*shard, 1, 1).ok());
    CATCH_CHECK(shard->PullReady(both, 5, false));  // trainer 0 itself is at 3
    CATCH_REQUIRE(PushAt(*shard, 1, 1, shard->stats().version, g).ok());
    CATCH_CHECK_FALSE(shard->PullReady(both, 5, false));
    CATCH_CHECK(shard->PullReady(both, 4, false));
  }
  CATCH_SECTION("a trainer that left is not waited for") {
    shard->SetLiveTrainers({0});
    CATCH_CHECK(shard->PullReady(both, 5, false));  // trainer 0 itself is at 3
  }
  CATCH_SECTION("the idle marker carries no gradients and changes no weights") {
    const Floats before = WeightsOf(*shard, 0);
    CATCH_REQUIRE(MarkIdle(*shard, 1, 1).ok());
    CATCH_CHECK(WeightsOf(*shard, 0) == before);
    CATCH_CHECK(shard->stats().staleness_counts.size() <= Shard::kStalenessBuckets);
  }
}

CATCH_TEST_CASE("ssp with staleness 0 answers clock c only once everyone pushed c steps",
                "[ps][shard][ssp]") {
  const ShardMap map = TestMap();
  const std::vector<uint32_t> both = {0, 2};
  auto shard = SspShard(map, /*staleness=*/0);
  CATCH_CHECK(shard->PullReady(both, 0, false));
  CATCH_REQUIRE(PushAt(*shard, 0, 0, 0, Ramp(1, 0)).ok());
  CATCH_CHECK_FALSE(shard->PullReady(both, 1, false));
  CATCH_REQUIRE(PushAt(*shard, 1, 0, 0, Ramp(1, 0)).ok());
  CATCH_CHECK(shard->PullReady(both, 1, false));
  shard->RecordAdmission(1);
  CATCH_CHECK(shard->stats().max_clock_gap == 0);
}

CATCH_TEST_CASE("An empty push is refused in async mode", "[ps][shard][staleness]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  CATCH_CHECK(MarkIdle(*shard, 0, 0).code() == Status::Code::kFailedPrecondition);
}

}  // namespace hetps
