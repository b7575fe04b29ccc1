// The servers' lr schedule (ps/shard.cc): each optimizer step of a partition runs at the lr of the
// schedule after the global batches stepped on before it, in async pushes of a share of the global
// batch and in sync rounds alike, and a checkpoint keeps the schedule's position.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

// Warm-up over 2 steps, then a cosine decay to 0.01 that ends at step 6.
LrScheduleOptions TestSchedule() {
  LrScheduleOptions s;
  s.warmup_steps = 2;
  s.decay = LrScheduleOptions::Decay::kCosine;
  s.min_lr = 0.01;
  s.decay_steps = 6;
  return s;
}

// The schedule above written out: the lr of the step after `steps` global batches (a fraction of
// the warm-up's last step is at lr).
double ReferenceLr(double steps) {
  if (steps < 2) return kLr * std::min(1.0, (steps + 1) / 2);
  const double progress = std::min(1.0, (steps - 2) / 4);
  return 0.01 + (kLr - 0.01) * 0.5 * (1 + std::cos(M_PI * progress));
}

std::unique_ptr<Shard> ScheduledShard(const ShardMap& map, ConsistencyMode mode, uint32_t global_batch) {
  return MakeShard(map, mode, [global_batch](Shard::Options& o) {
    o.optimizer.schedule = TestSchedule();
    o.global_batch_size = global_batch;
  });
}

// Plain SGD by hand: w -= lr * share * g, in float as the server rounds it.
void ReferenceStep(Floats& w, const Floats& g, double lr, float share) {
  const auto neg_lr = static_cast<float>(-(lr * share));
  for (size_t i = 0; i < w.size(); ++i) w[i] = w[i] + neg_lr * g[i];
}

void CheckNear(const Floats& ours, const Floats& reference) {
  CATCH_REQUIRE(ours.size() == reference.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    CATCH_INFO("element " << i);
    CATCH_CHECK(ours[i] == Approx(reference[i]).epsilon(1e-6).margin(1e-7));
  }
}

Floats GradientOf(int step) {
  return Ramp(0.5f - 0.1f * static_cast<float>(step), 0.03f);
}

CATCH_TEST_CASE("Async pushes of half the global batch step at the schedule's lr of the batches before them",
                "[ps][shard][lr_schedule]") {
  const ShardMap map = TestMap();
  auto shard = ScheduledShard(map, ConsistencyMode::kAsync, /*global_batch=*/8);
  shard->SetLiveTrainers({0, 1});
  const Floats initial = Ramp(1.0f, 0.25f);
  CATCH_REQUIRE(InitBoth(*shard, initial).ok());
  Floats reference = initial;
  // 16 pushes of 4 samples: 8 global batches, past the decay's end at 6.
  for (int push = 0; push < 16; ++push) {
    const Floats g = GradientOf(push);
    CATCH_REQUIRE(
        PushBoth(*shard, static_cast<uint32_t>(push % 2), static_cast<uint64_t>(push / 2), 4, g).ok());
    ReferenceStep(reference, g, ReferenceLr(push * 4 / 8.0), 0.5f);
  }
  shard->workers().Flush();
  CheckNear(WeightsOf(*shard, 0), reference);
  CheckNear(WeightsOf(*shard, 2), reference);
}

CATCH_TEST_CASE("Sync rounds step at the schedule's lr of their round, a short round by its share",
                "[ps][shard][lr_schedule]") {
  const ShardMap map = TestMap();
  auto shard = ScheduledShard(map, ConsistencyMode::kSync, /*global_batch=*/4);
  shard->SetLiveTrainers({0});
  const Floats initial = Ramp(-1.0f, 0.125f);
  CATCH_REQUIRE(InitBoth(*shard, initial).ok());
  Floats reference = initial;
  double steps = 0;
  for (int round = 0; round < 8; ++round) {
    const uint32_t batch = round == 3 ? 2 : 4;  // round 3: half a global batch
    const Floats g = GradientOf(round);
    CATCH_REQUIRE(PushBoth(*shard, 0, static_cast<uint64_t>(round), batch, g).ok());
    ReferenceStep(reference, g, ReferenceLr(steps), static_cast<float>(batch) / 4);
    steps += batch / 4.0;
  }
  shard->workers().Flush();
  CheckNear(WeightsOf(*shard, 0), reference);
}

CATCH_TEST_CASE("A checkpoint keeps the schedule's position and a restore goes on from it",
                "[ps][shard][lr_schedule][checkpoint]") {
  const ShardMap map = TestMap();
  auto shard = ScheduledShard(map, ConsistencyMode::kAsync, /*global_batch=*/8);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1.0f, 0.5f)).ok());
  for (int push = 0; push < 3; ++push) CATCH_REQUIRE(PushBoth(*shard, 0, push, 4, GradientOf(push)).ok());
  std::optional<Shard::Snapshot> snapshot;
  CATCH_REQUIRE(shard->TakeSnapshot(std::nullopt, [&](Shard::Snapshot& s) { snapshot = std::move(s); }).ok());
  shard->workers().Flush();
  CATCH_REQUIRE(snapshot.has_value());
  std::optional<int64_t> samples;
  for (size_t i = 0; i < snapshot->tensors.size(); ++i) {
    if (snapshot->tensors[i].name != "w[0:16].lr_schedule_samples") continue;
    int64_t value = 0;
    std::memcpy(&value, snapshot->frames[i].data(), sizeof value);
    samples = value;
  }
  CATCH_REQUIRE(samples.has_value());
  CATCH_CHECK(*samples == 12);

  auto restored = ScheduledShard(map, ConsistencyMode::kAsync, /*global_batch=*/8);
  restored->SetLiveTrainers({0});
  CATCH_REQUIRE(restored->Restore(snapshot->tensors, snapshot->frames, 0).ok());
  for (int push = 3; push < 6; ++push) {
    CATCH_REQUIRE(PushBoth(*shard, 0, push, 4, GradientOf(push)).ok());
    CATCH_REQUIRE(PushBoth(*restored, 0, push, 4, GradientOf(push)).ok());
  }
  CATCH_CHECK(WeightsOf(*restored, 0) == WeightsOf(*shard, 0));

  // A shard without a schedule restores the same checkpoint, ignoring the position.
  auto plain = MakeShard(map, ConsistencyMode::kAsync);
  CATCH_CHECK(plain->Restore(snapshot->tensors, snapshot->frames, 0).ok());
}

CATCH_TEST_CASE("A cosine decay without its end is refused", "[ps][shard][lr_schedule]") {
  const ShardMap map = TestMap();
  Shard::Options options;
  options.optimizer.schedule.decay = LrScheduleOptions::Decay::kCosine;
  auto shard = Shard::Create(map, 0, options);
  CATCH_REQUIRE_FALSE(shard.ok());
  CATCH_CHECK_THAT(shard.status().message(), Catch::Contains("lr_schedule.decay_steps"));
}

}  // namespace
}  // namespace hetps
