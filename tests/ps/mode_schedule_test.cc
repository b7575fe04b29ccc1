// ModeSchedule and a Shard in mode: auto: which rule each step follows, switches that never
// reach back before a push already seen, a sync phase's first round, its barrier and its end,
// and trainers out of data leaving sync rounds.
#include <catch2/catch.hpp>

#include "ps/mode_schedule.h"
#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

std::unique_ptr<Shard> AutoShard(const ShardMap& map, uint32_t staleness) {
  auto shard =
      MakeShard(map, ConsistencyMode::kAuto, [staleness](Shard::Options& o) { o.staleness = staleness; });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  return shard;
}

}  // namespace

CATCH_TEST_CASE("A mode schedule gives each step its phase's rule", "[ps][auto]") {
  ModeSchedule schedule(ConsistencyMode::kSsp, 3);
  CATCH_CHECK(schedule.At(0).mode == ConsistencyMode::kSsp);
  CATCH_CHECK(schedule.At(0).staleness == 3);
  CATCH_CHECK(schedule.Switch(10, ConsistencyMode::kSync, 0, std::nullopt).value() == 10);
  CATCH_CHECK(schedule.Switch(20, ConsistencyMode::kAsync, 0, uint64_t{12}).value() == 20);
  CATCH_CHECK(schedule.At(9).mode == ConsistencyMode::kSsp);
  CATCH_CHECK(schedule.At(10).mode == ConsistencyMode::kSync);
  CATCH_CHECK(schedule.At(19).mode == ConsistencyMode::kSync);
  CATCH_CHECK(schedule.At(20).mode == ConsistencyMode::kAsync);
  CATCH_CHECK(schedule.At(1000).mode == ConsistencyMode::kAsync);
}

CATCH_TEST_CASE("A switch never reaches back before the newest push, and replaces later plans",
                "[ps][auto]") {
  ModeSchedule schedule(ConsistencyMode::kSsp, 3);
  // Asked from step 5, but a trainer already pushed step 7: from 8.
  CATCH_CHECK(schedule.Switch(5, ConsistencyMode::kSync, 0, uint64_t{7}).value() == 8);
  CATCH_CHECK(schedule.At(7).mode == ConsistencyMode::kSsp);
  CATCH_CHECK(schedule.At(8).mode == ConsistencyMode::kSync);
  CATCH_CHECK(schedule.Switch(30, ConsistencyMode::kAsync, 0, uint64_t{9}).value() == 30);
  // A new plan from 20 replaces the one from 30.
  CATCH_CHECK(schedule.Switch(20, ConsistencyMode::kSsp, 6, uint64_t{9}).value() == 20);
  CATCH_CHECK(schedule.phases().size() == 3);
  CATCH_CHECK(schedule.At(40).mode == ConsistencyMode::kSsp);
  CATCH_CHECK(schedule.At(40).staleness == 6);
  // Before any push, the first phase itself is replaced.
  ModeSchedule fresh(ConsistencyMode::kSsp, 3);
  CATCH_CHECK(fresh.Switch(0, ConsistencyMode::kAsync, 0, std::nullopt).value() == 0);
  CATCH_CHECK(fresh.phases().size() == 1);
  CATCH_CHECK(fresh.At(0).mode == ConsistencyMode::kAsync);
  CATCH_CHECK_FALSE(fresh.Switch(3, ConsistencyMode::kAuto, 0, std::nullopt).ok());
}

CATCH_TEST_CASE("An auto shard starts as async and refuses switches outside auto", "[ps][auto]") {
  const ShardMap map = TestMap();
  auto shard = AutoShard(map, 1);
  // async: trainer 0 runs ahead of trainer 1, which has not pushed, as far as it likes (the job's
  // staleness, 1 here, is ssp's bound, not the start's); switched to ssp with bound 1, its next
  // step waits for trainer 1.
  for (uint64_t clock = 0; clock < 3; ++clock) {
    CATCH_REQUIRE(PushBoth(*shard, 0, clock, 8, Ramp(0.1f, 0)).ok());
    CATCH_CHECK(shard->PullReady({0, 2}, clock + 1, false));
  }
  CATCH_CHECK(shard->SwitchMode(4, ConsistencyMode::kSsp, 1).value() == 4);
  CATCH_REQUIRE(PushBoth(*shard, 0, 3, 8, Ramp(0.1f, 0)).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 4, false));
  auto sync_shard = MakeShard(map, ConsistencyMode::kSync);
  CATCH_CHECK_FALSE(sync_shard->SwitchMode(5, ConsistencyMode::kAsync, 0).ok());
}

CATCH_TEST_CASE("Switching an auto shard to sync starts rounds at the switch, after a barrier, and back",
                "[ps][auto]") {
  const ShardMap map = TestMap();
  auto shard = AutoShard(map, 8);
  const Floats g = Ramp(0.5f, 0);
  // Steps 0 and 1 in ssp: trainer 0 runs ahead.
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 1, 8, g).ok());
  // Sync from step 2 (asked from 2; trainer 0 pushed 1, so it stays 2).
  CATCH_CHECK(shard->SwitchMode(2, ConsistencyMode::kSync, 0).value() == 2);
  // The pull for step 2 waits until every busy trainer has pushed step 1.
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 2, false));
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 8, g).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 2, false));
  CATCH_REQUIRE(PushBoth(*shard, 1, 1, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 2, false));
  const uint64_t version_before = shard->stats().version;
  // Step 2 is a round: applied once both trainers pushed, as one update.
  CATCH_REQUIRE(PushBoth(*shard, 0, 2, 8, g).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 3, false));
  // A second push of the round by the same trainer is refused.
  CATCH_CHECK_FALSE(PushBoth(*shard, 0, 2, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 2, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 3, false));
  CATCH_CHECK(shard->stats().version == version_before + 1);
  CATCH_CHECK(shard->stats().rounds == 3);
  // Back to async from step 4: step 3 is still a round, step 4's pull waits for nobody.
  CATCH_CHECK(shard->SwitchMode(4, ConsistencyMode::kAsync, 0).value() == 4);
  CATCH_REQUIRE(PushBoth(*shard, 0, 3, 8, g).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 4, false));
  CATCH_REQUIRE(PushBoth(*shard, 1, 3, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 4, false));
  CATCH_REQUIRE(PushBoth(*shard, 0, 4, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 5, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 6, false));
  // And sync again from step 7: a new phase's first round starts at its first step.
  CATCH_CHECK(shard->SwitchMode(7, ConsistencyMode::kSync, 0).value() == 7);
  CATCH_REQUIRE(PushBoth(*shard, 0, 6, 8, g).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 7, false));  // trainer 1 is at step 4
  for (uint64_t c = 4; c <= 6; ++c) CATCH_REQUIRE(PushBoth(*shard, 1, c, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 7, false));
  CATCH_REQUIRE(PushBoth(*shard, 0, 7, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 7, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 8, false));
  CATCH_CHECK(shard->stats().rounds == 8);
}

CATCH_TEST_CASE("In an auto shard's sync phase a trainer out of data leaves the rounds", "[ps][auto]") {
  const ShardMap map = TestMap();
  auto shard = AutoShard(map, 3);
  const Floats g = Ramp(0.5f, 0);
  CATCH_CHECK(shard->SwitchMode(0, ConsistencyMode::kSync, 0).value() == 0);
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 8, g).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 1, 8, g).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 2, false));
  // Trainer 1 is out of data: its empty push marks it idle and round 1 completes without it.
  CATCH_REQUIRE(PushBoth(*shard, 1, 1, 0, Floats{}).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 2, false));
  CATCH_REQUIRE(PushBoth(*shard, 0, 2, 8, g).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 3, false));
}

}  // namespace hetps
