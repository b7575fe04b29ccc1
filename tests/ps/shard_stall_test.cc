// Shard: who a held pull waits for (Holders), and a trainer left out of the step it held: its
// first clock moves past it (SetLiveTrainers), the round or the ssp bound goes on without it,
// and its push for that step, when it comes, is late: accepted, nothing of it applied.
#include <catch2/catch.hpp>

#include <vector>

#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

const std::vector<uint32_t> kBoth = {0, 2};
const Floats kInitial = Ramp(1.0f, 0.5f);

Shard::Pushed PushNoting(Shard& shard, uint32_t trainer, uint64_t clock, const Floats& grad) {
  WireMessage push = MakePush(clock, 1, kBoth, {grad, grad});
  Shard::Pushed pushed;
  CATCH_REQUIRE(shard.Push(trainer, push.root<wire::Push>(), push.frames, &pushed).ok());
  return pushed;
}

Floats Minus(const Floats& weights, const Floats& grad, float scale) {
  Floats out = weights;
  for (size_t i = 0; i < out.size(); ++i) out[i] -= scale * grad[i];
  return out;
}

}  // namespace

CATCH_TEST_CASE(
    "A sync round held by a trainer goes on without it once it is left out; its late push is not applied",
    "[ps][shard][stall]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync, [](Shard::Options& o) { o.global_batch_size = 2; });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Floats g0 = Ramp(0.1f, 0.01f);
  const Floats g1 = Ramp(-0.3f, 0.02f);

  CATCH_CHECK(shard->Holders(kBoth, 1).size() == 2);  // a pull of step 1 before any push waits for both
  CATCH_CHECK_FALSE(PushNoting(*shard, 0, 0, g0).late);
  CATCH_CHECK_FALSE(shard->PullReady(kBoth, 1, false));
  const auto holds = shard->Holders(kBoth, 1);
  CATCH_REQUIRE(holds.size() == 1);  // one entry per trainer, though both partitions wait
  CATCH_CHECK(holds[0].trainer == 1);
  CATCH_CHECK(holds[0].step == 0);
  CATCH_CHECK(holds[0].until == 1);

  CATCH_REQUIRE(shard->CheckFromClock(1, 1).ok());
  shard->SetLiveTrainers({0, 1}, {{1, 1}});  // trainer 1 left out of round 0
  CATCH_CHECK(shard->PullReady(kBoth, 1, false));
  CATCH_CHECK(shard->Holders(kBoth, 1).empty());
  // Trainer 0's sample alone: half the global batch, half a step.
  const Floats after_round0 = Minus(kInitial, g0, kLr * 0.5f);
  CATCH_CHECK(WeightsOf(*shard, 0) == after_round0);

  // The held push arrives after all: late, accepted, nothing applied.
  CATCH_CHECK(PushNoting(*shard, 1, 0, g1).late);
  CATCH_CHECK(WeightsOf(*shard, 0) == after_round0);
  CATCH_CHECK(shard->stats().pushes == 1);

  // Round 1 is both trainers' again.
  CATCH_CHECK_FALSE(PushNoting(*shard, 1, 1, g1).late);
  CATCH_CHECK_FALSE(shard->PullReady(kBoth, 2, false));
  CATCH_CHECK(shard->Holders(kBoth, 2).at(0).trainer == 0);
  CATCH_CHECK_FALSE(PushNoting(*shard, 0, 1, g0).late);
  CATCH_CHECK(shard->PullReady(kBoth, 2, false));
  Floats mean(kLength);
  for (size_t i = 0; i < kLength; ++i) mean[i] = (g0[i] + g1[i]) / 2;
  const Floats expected = Minus(after_round0, mean, kLr);
  const Floats got = WeightsOf(*shard, 2);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(got[i] == Approx(expected[i]).epsilon(1e-6));
}

CATCH_TEST_CASE(
    "An ssp pull held by a trainer behind the bound is freed once it is left out; its late push is not "
    "applied",
    "[ps][shard][stall]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSsp, [](Shard::Options& o) {
    o.staleness = 1;
    o.global_batch_size = 2;
  });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Floats g = Ramp(0.1f, 0.01f);
  PushNoting(*shard, 0, 0, g);
  PushNoting(*shard, 0, 1, g);
  // Trainer 0's pull of step 2 needs every trainer 1 step along; trainer 1 has pushed none.
  CATCH_CHECK_FALSE(shard->PullReady(kBoth, 2, false));
  const auto holds = shard->Holders(kBoth, 2);
  CATCH_REQUIRE(holds.size() == 1);
  CATCH_CHECK(holds[0].trainer == 1);
  CATCH_CHECK(holds[0].step == 0);
  CATCH_CHECK(holds[0].until == 1);
  CATCH_CHECK(shard->Holders(kBoth, 1).empty());  // within the bound: nobody holds it

  shard->SetLiveTrainers({0, 1}, {{1, 1}});
  CATCH_CHECK(shard->PullReady(kBoth, 2, false));
  const Floats before = WeightsOf(*shard, 0);
  CATCH_CHECK(PushNoting(*shard, 1, 0, g).late);
  CATCH_CHECK(WeightsOf(*shard, 0) == before);
  // Its next step counts as ever.
  CATCH_CHECK_FALSE(PushNoting(*shard, 1, 1, g).late);
  CATCH_CHECK(WeightsOf(*shard, 0) != before);
}

CATCH_TEST_CASE("Nobody holds a pull that waits for initial weights, nor an async one",
                "[ps][shard][stall]") {
  const ShardMap map = TestMap();
  auto sync = MakeShard(map, ConsistencyMode::kSync, [](Shard::Options& o) { o.global_batch_size = 2; });
  sync->SetLiveTrainers({0, 1});
  CATCH_CHECK(sync->Holders(kBoth, 1).empty());
  auto async = MakeShard(map, ConsistencyMode::kAsync, [](Shard::Options& o) { o.global_batch_size = 2; });
  async->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*async, kInitial).ok());
  PushNoting(*async, 0, 0, Ramp(0.1f, 0.01f));
  CATCH_CHECK(async->Holders(kBoth, 5).empty());
}

}  // namespace hetps
