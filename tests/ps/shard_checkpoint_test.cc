// Shard checkpoints without sockets: a sync snapshot is cut exactly at the round asked for, even
// when pushes of later rounds follow; a restore brings back weights, optimizer state and update
// counts, so training goes on exactly as from the cut; a restore that does not fit the shard
// changes nothing; a reset returns to uninitialised partitions.
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <vector>

#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

std::unique_ptr<Shard> MomentumShard(const ShardMap& map, ConsistencyMode mode) {
  return MakeShard(map, mode, [](Shard::Options& o) { o.optimizer.momentum = 0.9; });
}

// Takes a snapshot, flushing the workers until it is done (or not, when a round is awaited).
void Snap(Shard& shard, std::optional<uint64_t> round, std::optional<Shard::Snapshot>* out) {
  CATCH_REQUIRE(shard.TakeSnapshot(round, [out](Shard::Snapshot& s) { *out = std::move(s); }).ok());
  shard.workers().Flush();
}

Floats FloatsOf(const Shard::Snapshot& s, const std::string& name) {
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    if (s.tensors[i].name != name) continue;
    const auto* data = static_cast<const float*>(s.frames[i].data());
    return Floats(data, data + s.frames[i].size() / sizeof(float));
  }
  CATCH_FAIL("no tensor " << name);
  return {};
}

CATCH_TEST_CASE("A sync snapshot is cut at its round and a restore goes on exactly from there",
                "[ps][shard][checkpoint]") {
  const ShardMap map = TestMap();
  auto shard = MomentumShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1.0f, 0.5f)).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 4, Ramp(0.1f, 0.01f)).ok());

  std::optional<Shard::Snapshot> snapshot;
  Snap(*shard, /*round=*/2, &snapshot);
  CATCH_CHECK_FALSE(snapshot.has_value());  // waits for round 2
  CATCH_REQUIRE(PushBoth(*shard, 0, 1, 4, Ramp(-0.2f, 0.03f)).ok());
  shard->workers().Flush();
  CATCH_REQUIRE(snapshot.has_value());
  const Floats at_cut = WeightsOf(*shard, 0);
  CATCH_REQUIRE(PushBoth(*shard, 0, 2, 4, Ramp(0.3f, -0.02f)).ok());  // after the cut
  const Floats after_one_more = WeightsOf(*shard, 0);

  CATCH_CHECK(snapshot->round == 2);
  CATCH_CHECK(snapshot->version == 2);
  // Weights, the momentum buffer and the step of each of the shard's two partitions.
  CATCH_REQUIRE(snapshot->tensors.size() == 6);
  CATCH_CHECK(FloatsOf(*snapshot, "w[0:16]") == at_cut);
  CATCH_CHECK(FloatsOf(*snapshot, "w[0:16].momentum_buffer").size() == kLength);
  int64_t step = 0;
  for (size_t i = 0; i < snapshot->tensors.size(); ++i) {
    if (snapshot->tensors[i].name == "b[0:16].step") std::memcpy(&step, snapshot->frames[i].data(), 8);
  }
  CATCH_CHECK(step == 2);
  CATCH_CHECK_FALSE(shard->TakeSnapshot(1, [](Shard::Snapshot&) {}).ok());  // past round 1

  // Another shard restored from the snapshot takes the same step to the same weights.
  auto restored = MomentumShard(map, ConsistencyMode::kSync);
  restored->SetLiveTrainers({0});
  CATCH_REQUIRE(restored->Restore(snapshot->tensors, snapshot->frames, snapshot->round).ok());
  CATCH_CHECK(WeightsOf(*restored, 0) == at_cut);
  CATCH_CHECK(restored->stats().version == 2);
  CATCH_CHECK_FALSE(PushBoth(*restored, 0, 1, 4, Ramp(0.3f, -0.02f)).ok());  // it is at round 2
  CATCH_REQUIRE(PushBoth(*restored, 0, 2, 4, Ramp(0.3f, -0.02f)).ok());
  CATCH_CHECK(WeightsOf(*restored, 0) == after_one_more);
}

CATCH_TEST_CASE("A restore that does not fit the shard is refused whole", "[ps][shard][checkpoint]") {
  const ShardMap map = TestMap();
  auto shard = MomentumShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1.0f, 0.5f)).ok());
  std::optional<Shard::Snapshot> snapshot;
  Snap(*shard, std::nullopt, &snapshot);
  CATCH_REQUIRE(snapshot.has_value());
  const Floats before = WeightsOf(*shard, 0);

  auto without = [&](const std::string& name) {
    std::vector<TensorInfo> tensors;
    std::vector<zmq::message_t> frames;
    for (size_t i = 0; i < snapshot->tensors.size(); ++i) {
      if (snapshot->tensors[i].name == name) continue;
      tensors.push_back(snapshot->tensors[i]);
      frames.emplace_back(snapshot->frames[i].data(), snapshot->frames[i].size());
    }
    return shard->Restore(tensors, frames, 0);
  };
  Status missing = without("b[0:16].momentum_buffer");
  CATCH_CHECK(missing.message().find("no tensor b[0:16].momentum_buffer") != std::string::npos);
  // Plain SGD has no momentum buffer: the checkpoint's is not this shard's.
  auto plain = MakeShard(map, ConsistencyMode::kAsync);
  Status foreign = plain->Restore(snapshot->tensors, snapshot->frames, 0);
  CATCH_CHECK(foreign.message().find("momentum_buffer is no partition state") != std::string::npos);
  CATCH_CHECK(WeightsOf(*shard, 0) == before);

  shard->Reset();
  CATCH_CHECK_FALSE(shard->PullReady({0}, 0, true));  // uninitialised until weights are offered
  CATCH_REQUIRE(InitBoth(*shard, Ramp(2.0f, 0.0f)).ok());
  CATCH_CHECK(WeightsOf(*shard, 0) == Ramp(2.0f, 0.0f));
  CATCH_CHECK(shard->stats().version == 0);
}

}  // namespace
}  // namespace hetps
