// Shard on its own, fed with hand-built wire messages and no sockets: when a sync round is
// applied and how its gradients are weighted, what is refused (and that a refusal changes
// nothing), how membership changes close rounds, async pushes, initial weights, pull checks, and
// who owns the bytes of a Weights reply.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

struct Snapshot {
  Floats weights0, weights2;
  uint64_t version = 0, rounds = 0, pushes = 0;

  bool operator==(const Snapshot& o) const {
    return weights0 == o.weights0 && weights2 == o.weights2 && version == o.version && rounds == o.rounds &&
           pushes == o.pushes;
  }
};

Snapshot Take(Shard& shard) {
  const Shard::Stats stats = shard.stats();
  return {WeightsOf(shard, 0), WeightsOf(shard, 2), stats.version, stats.rounds, stats.pushes};
}

struct Contribution {
  uint32_t batch_size;
  Floats grad;
};

// Plain SGD on the batch-weighted mean gradient: w - lr * sum(b * g) / sum(b).
Floats SgdStep(const Floats& weights, const std::vector<Contribution>& contributions) {
  Floats result(weights.size());
  double samples = 0;
  for (const Contribution& c : contributions) samples += c.batch_size;
  for (size_t i = 0; i < weights.size(); ++i) {
    double sum = 0;
    for (const Contribution& c : contributions) sum += c.batch_size * double{c.grad[i]};
    result[i] = static_cast<float>(weights[i] - double{kLr} * sum / samples);
  }
  return result;
}

float MaxDifference(const Floats& a, const Floats& b) {
  CATCH_REQUIRE(a.size() == b.size());
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const Floats kInitial = Ramp(0.5f, 0.25f);
const Floats kGradA = Ramp(1.0f, 0.1f);
const Floats kGradB = Ramp(-2.0f, 0.05f);
const Floats kGradC = Ramp(3.0f, -0.3f);

}  // namespace

CATCH_TEST_CASE("A sync round is applied when the last live trainer pushes, weighted by batch size",
                "[ps][shard][sync]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());

  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
  CATCH_CHECK(WeightsOf(*shard, 2) == kInitial);
  CATCH_CHECK(shard->stats().version == 0);
  CATCH_CHECK(shard->stats().rounds == 0);
  CATCH_CHECK(shard->PullReady({0, 2}, 0, false));
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 1, false));
  CATCH_CHECK(shard->PullReady({0, 2}, 1, /*latest=*/true));

  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 30, kGradB).ok());
  const Floats expected = SgdStep(kInitial, {{10, kGradA}, {30, kGradB}});
  CATCH_INFO("largest difference from w - lr * (10 g1 + 30 g2) / 40: " << MaxDifference(WeightsOf(*shard, 0),
                                                                                        expected));
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), expected) < 1e-6f);
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 2), expected) < 1e-6f);
  // The plain mean of the two gradients would be off by far more than the tolerance.
  CATCH_CHECK(MaxDifference(expected, SgdStep(kInitial, {{1, kGradA}, {1, kGradB}})) > 1e-2f);
  CATCH_CHECK(shard->stats().version == 1);
  CATCH_CHECK(shard->stats().rounds == 1);
  CATCH_CHECK(shard->stats().pushes == 2);
  CATCH_CHECK(shard->PullReady({0, 2}, 1, false));
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 2, false));

  auto built = Build(*shard, {2, 0});
  const auto* weights = &built->body();
  const std::vector<zmq::message_t>& frames = built->frames;
  CATCH_CHECK(weights->round_samples() == 40);
  CATCH_CHECK(weights->dtype() == wire::DType::F32);
  CATCH_REQUIRE(weights->partitions()->size() == 2);
  CATCH_CHECK(weights->partitions()->Get(0) == 2);
  CATCH_CHECK(weights->partitions()->Get(1) == 0);
  CATCH_REQUIRE(weights->versions()->size() == 2);
  CATCH_CHECK(weights->versions()->Get(0) == 1);
  CATCH_CHECK(weights->versions()->Get(1) == 1);
  CATCH_REQUIRE(frames.size() == 2);
  for (const zmq::message_t& frame : frames) {
    CATCH_REQUIRE(frame.size() == kLength * sizeof(float));
    const auto* data = static_cast<const float*>(frame.data());
    CATCH_CHECK(MaxDifference(Floats(data, data + kLength), expected) < 1e-6f);
  }
}

CATCH_TEST_CASE("A refused sync push changes nothing and maps to the wire error naming its cause",
                "[ps][shard][sync]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  bool trainer0_pushed = false;
  Status refused;
  wire::ErrorCode expected_code = wire::ErrorCode::Unexpected;
  std::vector<std::string> mentions;
  Snapshot before = Take(*shard);

  CATCH_SECTION("an unknown partition id") {
    refused = Push(*shard, 0, MakePush(0, 10, {0, 99}, {kGradA, kGradA}));
    expected_code = wire::ErrorCode::UnknownPartition;
    mentions = {"partition 99", "not in the shard map"};
  }
  CATCH_SECTION("a partition of another server") {
    refused = Push(*shard, 0, MakePush(0, 10, {1}, {kGradA}));
    expected_code = wire::ErrorCode::UnknownPartition;
    mentions = {"partition 1", "belongs to server 1"};
  }
  CATCH_SECTION("a frame of the wrong length") {
    refused = Push(*shard, 0, MakePush(0, 10, {0, 2}, {kGradA, Ramp(0, 1, kLength - 1)}));
    expected_code = wire::ErrorCode::BadLength;
    mentions = {"partition 2 (b[0:16])", "60 bytes", "expected 64"};
  }
  CATCH_SECTION("fewer frames than partitions") {
    refused = Push(*shard, 0, MakePush(0, 10, {0, 2}, {kGradA}));
    expected_code = wire::ErrorCode::Malformed;
    mentions = {"2 partitions", "1 tensor frames"};
  }
  CATCH_SECTION("a partition listed twice") {
    refused = Push(*shard, 0, MakePush(0, 10, {2, 2}, {kGradA, kGradA}));
    expected_code = wire::ErrorCode::Malformed;
    mentions = {"twice"};
  }
  CATCH_SECTION("a clock other than the open round") {
    refused = Push(*shard, 0, MakePush(1, 10, {0, 2}, {kGradA, kGradA}));
    mentions = {"push for round 1", "is at round 0"};
  }
  CATCH_SECTION("a second push by the same trainer in one round") {
    CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
    trainer0_pushed = true;
    before = Take(*shard);
    refused = PushBoth(*shard, 0, 0, 10, kGradC);
    mentions = {"trainer 0 already pushed round 0"};
  }
  CATCH_SECTION("a trainer that is not live") {
    refused = PushBoth(*shard, 5, 0, 10, kGradC);
    mentions = {"trainer 5", "not a live member"};
  }
  CATCH_SECTION("gradients of a dtype that cannot travel") {
    refused = Push(*shard, 0, MakePush(0, 10, {0, 2}, {kGradA, kGradA}, wire::DType::I32));
    mentions = {"float32, bfloat16 or float16, not int32"};
  }
  CATCH_SECTION("float32 bytes announced as float16") {
    refused = Push(*shard, 0, MakePush(0, 10, {0, 2}, {kGradA, kGradA}, wire::DType::F16));
    mentions = {"frame has 64 bytes, expected 32 (float16)"};
    expected_code = wire::ErrorCode::BadLength;
  }
  CATCH_SECTION("a push of batch size 0 that carries gradient bytes") {
    refused = PushBoth(*shard, 0, 0, 0, kGradC);
    expected_code = wire::ErrorCode::BadLength;
    mentions = {"batch_size 0", "empty frames"};
  }

  CATCH_INFO(refused.ToString());
  CATCH_REQUIRE_FALSE(refused.ok());
  CATCH_CHECK(RefusalCode(refused) == expected_code);
  for (const std::string& mention : mentions) CATCH_CHECK(Contains(refused.message(), mention));
  CATCH_CHECK(Take(*shard) == before);

  // The refused push left no trace in the open round either: the round completes with exactly
  // the accepted gradients.
  if (!trainer0_pushed) CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 30, kGradB).ok());
  const Floats expected = SgdStep(kInitial, {{10, kGradA}, {30, kGradB}});
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), expected) < 1e-6f);
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 2), expected) < 1e-6f);
  CATCH_CHECK(shard->stats().rounds == 1);
  CATCH_CHECK(shard->stats().pushes == 2);
}

CATCH_TEST_CASE("A push before the initial weights is refused", "[ps][shard][init]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0});
  CATCH_CHECK_FALSE(shard->PullReady({0}, 0, true));
  Status refused = PushBoth(*shard, 0, 0, 10, kGradA);
  CATCH_INFO(refused.ToString());
  CATCH_REQUIRE_FALSE(refused.ok());
  CATCH_CHECK(RefusalCode(refused) == wire::ErrorCode::Unexpected);
  CATCH_CHECK(Contains(refused.message(), "no initial weights"));
  CATCH_CHECK(shard->stats().pushes == 0);
  CATCH_CHECK(shard->stats().rounds == 0);
  CATCH_CHECK_FALSE(shard->PullReady({0}, 0, true));
}

CATCH_TEST_CASE("A push is checked for every partition before any partition changes", "[ps][shard][sync]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  Status refused;
  Snapshot before = Take(*shard);

  CATCH_SECTION("the second partition's frame has the wrong length") {
    refused = Push(*shard, 0, MakePush(0, 10, {0, 2}, {kGradA, Ramp(0, 1, 3)}));
    CATCH_CHECK(RefusalCode(refused) == wire::ErrorCode::BadLength);
  }
  CATCH_SECTION("the second partition belongs to another server") {
    refused = Push(*shard, 0, MakePush(0, 10, {0, 1}, {kGradA, kGradA}));
    CATCH_CHECK(RefusalCode(refused) == wire::ErrorCode::UnknownPartition);
  }
  CATCH_SECTION("the second partition is at another round") {
    // Partition 0 alone completes round 0 (the only live trainer pushed it); 2 stays at round 0.
    CATCH_REQUIRE(Push(*shard, 0, MakePush(0, 10, {0}, {kGradA})).ok());
    CATCH_REQUIRE(shard->PullReady({0}, 1, false));
    before = Take(*shard);
    refused = Push(*shard, 0, MakePush(0, 10, {2, 0}, {kGradB, kGradB}));
    CATCH_CHECK(RefusalCode(refused) == wire::ErrorCode::Unexpected);
    CATCH_CHECK(Contains(refused.message(), "partition 0"));
    CATCH_CHECK(Take(*shard) == before);
    // Had partition 2 taken its part of the refused push, this push would be a repeat.
    CATCH_CHECK(Push(*shard, 0, MakePush(0, 10, {2}, {kGradC})).ok());
    CATCH_CHECK(MaxDifference(WeightsOf(*shard, 2), SgdStep(kInitial, {{10, kGradC}})) < 1e-6f);
    return;
  }

  CATCH_INFO(refused.ToString());
  CATCH_REQUIRE_FALSE(refused.ok());
  CATCH_CHECK(Take(*shard) == before);
  CATCH_CHECK_FALSE(shard->PullReady({0}, 1, false));
}

CATCH_TEST_CASE("A sync round waiting only for trainers that left completes at once",
                "[ps][shard][membership]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0, 1, 2});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 30, kGradB).ok());
  CATCH_REQUIRE(shard->stats().rounds == 0);

  shard->SetLiveTrainers({1, 0});
  CATCH_CHECK(shard->stats().rounds == 1);
  CATCH_CHECK(shard->stats().version == 1);
  const Floats expected = SgdStep(kInitial, {{10, kGradA}, {30, kGradB}});
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), expected) < 1e-6f);
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 2), expected) < 1e-6f);
  CATCH_CHECK(shard->PullReady({0, 2}, 1, false));
  CATCH_CHECK_FALSE(shard->IsLive(2));
  CATCH_CHECK(RefusalCode(PushBoth(*shard, 2, 1, 20, kGradC)) == wire::ErrorCode::Unexpected);
}

// A departed trainer's gradient was computed on this round's weights, so it stays in the round;
// but its departure alone must not close a round the surviving trainers have not pushed yet.
CATCH_TEST_CASE("A gradient pushed by a trainer that then leaves is applied with the survivors' round",
                "[ps][shard][membership]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0, 1, 2});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_REQUIRE(PushBoth(*shard, 2, 0, 20, kGradC).ok());

  shard->SetLiveTrainers({0, 1});
  CATCH_CHECK(shard->stats().rounds == 0);
  CATCH_CHECK(shard->stats().version == 0);
  CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 1, false));

  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_CHECK(shard->stats().rounds == 0);
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 30, kGradB).ok());
  CATCH_CHECK(shard->stats().rounds == 1);
  CATCH_CHECK(shard->stats().version == 1);
  const Floats expected = SgdStep(kInitial, {{10, kGradA}, {30, kGradB}, {20, kGradC}});
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), expected) < 1e-6f);
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 2), expected) < 1e-6f);
  CATCH_CHECK(Build(*shard, {0})->body().round_samples() == 60);
}

CATCH_TEST_CASE("Sync rounds in which nobody had data advance the round but not the weights",
                "[ps][shard][sync]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  auto round_samples = [&shard] { return Build(*shard, {0, 2})->body().round_samples(); };
  // A first real round leaves its gradient sum behind in the shard's scratch space.
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 10, kGradB).ok());
  const Floats after_round0 = WeightsOf(*shard, 0);
  CATCH_REQUIRE(round_samples() == 20);

  CATCH_REQUIRE(PushBoth(*shard, 0, 1, 0, {}).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 1, 0, {}).ok());
  CATCH_CHECK(shard->stats().rounds == 2);
  CATCH_CHECK(shard->stats().version == 1);
  CATCH_CHECK(WeightsOf(*shard, 0) == after_round0);
  CATCH_CHECK(WeightsOf(*shard, 2) == after_round0);
  CATCH_CHECK(round_samples() == 0);
  CATCH_CHECK(shard->PullReady({0, 2}, 2, false));

  // Mixed: the empty push does not dilute the other; its gradient counts at full weight.
  CATCH_SECTION("the empty push comes first") {
    CATCH_REQUIRE(PushBoth(*shard, 0, 2, 0, {}).ok());
    CATCH_REQUIRE(PushBoth(*shard, 1, 2, 8, kGradC).ok());
  }
  CATCH_SECTION("the empty push comes last") {
    CATCH_REQUIRE(PushBoth(*shard, 1, 2, 8, kGradC).ok());
    CATCH_REQUIRE(PushBoth(*shard, 0, 2, 0, {}).ok());
  }
  CATCH_CHECK(shard->stats().rounds == 3);
  CATCH_CHECK(shard->stats().version == 2);
  const Floats expected = SgdStep(after_round0, {{8, kGradC}});
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), expected) < 1e-6f);
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 2), expected) < 1e-6f);
  CATCH_CHECK(round_samples() == 8);
}

CATCH_TEST_CASE("The first initial weights win and a frame of the wrong length is refused",
                "[ps][shard][init]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  const Floats other = Ramp(-7.0f, 1.0f);

  // Refused whole: partition 0's good frame is not stored either.
  WireMessage bad = MakeInit({0, 2}, {kInitial, Ramp(0, 1, kLength + 1)});
  Status refused = shard->Init(bad.root<wire::InitWeights>(), bad.frames);
  CATCH_INFO(refused.ToString());
  CATCH_CHECK(RefusalCode(refused) == wire::ErrorCode::BadLength);
  CATCH_CHECK(Contains(refused.message(), "68 bytes, expected 64"));
  CATCH_CHECK_FALSE(shard->PullReady({0}, 0, true));

  WireMessage foreign = MakeInit({1}, {kInitial});
  CATCH_CHECK(RefusalCode(shard->Init(foreign.root<wire::InitWeights>(), foreign.frames)) ==
              wire::ErrorCode::UnknownPartition);

  WireMessage first = MakeInit({0}, {kInitial});
  CATCH_REQUIRE(shard->Init(first.root<wire::InitWeights>(), first.frames).ok());
  CATCH_CHECK(shard->PullReady({0}, 0, true));
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 0, true));

  // A later offer fills only what is still missing.
  CATCH_REQUIRE(InitBoth(*shard, other).ok());
  CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
  CATCH_CHECK(WeightsOf(*shard, 2) == other);
  CATCH_CHECK(InitBoth(*shard, Ramp(100.0f, 1.0f)).ok());
  CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
  CATCH_CHECK(WeightsOf(*shard, 2) == other);
  CATCH_CHECK(shard->stats().version == 0);
}

CATCH_TEST_CASE("Async mode applies every push on arrival", "[ps][shard][async]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0, 1});
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 0, false));
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 0, false));
  CATCH_CHECK(shard->PullReady({0, 2}, 1000, false));

  // Each push is a mean gradient applied as it stands, whatever its batch size.
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  Floats expected = SgdStep(kInitial, {{1, kGradA}});
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), expected) < 1e-6f);
  CATCH_CHECK(shard->stats().version == 1);
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 30, kGradB).ok());
  CATCH_REQUIRE(PushBoth(*shard, 1, 1, 30, kGradB).ok());
  expected = SgdStep(SgdStep(expected, {{1, kGradB}}), {{1, kGradB}});
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), expected) < 1e-6f);
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 2), expected) < 1e-6f);
  CATCH_CHECK(shard->stats().version == 3);
  CATCH_CHECK(shard->stats().pushes == 3);
  CATCH_CHECK(shard->stats().rounds == 0);
  CATCH_CHECK(shard->PullReady({0, 2}, 1000, false));

  const Snapshot before = Take(*shard);
  Status empty = PushBoth(*shard, 0, 1, 0, {});
  CATCH_INFO(empty.ToString());
  CATCH_CHECK(RefusalCode(empty) == wire::ErrorCode::Unexpected);
  CATCH_CHECK(Contains(empty.message(), "batch_size 0"));
  CATCH_CHECK(RefusalCode(PushBoth(*shard, 4, 0, 10, kGradA)) == wire::ErrorCode::Unexpected);
  CATCH_CHECK(Take(*shard) == before);
}

CATCH_TEST_CASE("Async mode replies with copies of the weights", "[ps][shard][async]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  auto first = Build(*shard, {0});
  CATCH_REQUIRE(first->frames.size() == 1);
  const auto* built = static_cast<const float*>(first->frames[0].data());

  // Async pushes land at any time, including while a reply is still queued in ZeroMQ.
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 1, kGradA).ok());
  CATCH_CHECK(Floats(built, built + kLength) == kInitial);
  CATCH_CHECK(WeightsOf(*shard, 0) != kInitial);
  auto later = Build(*shard, {0});
  CATCH_CHECK(later->frames[0].data() != first->frames[0].data());
}

// The zero-copy contract of sync mode: a Weights reply references the partition's buffer instead
// of copying it, and keeps that buffer alive while ZeroMQ holds the frame. This is safe because a
// sync round cannot complete (and change the weights) before every live trainer has received its
// reply and pushed again.
CATCH_TEST_CASE("Sync mode replies borrow the weights without copying them", "[ps][shard][sync]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  std::vector<zmq::message_t> first = std::move(Build(*shard, {0})->frames);
  std::vector<zmq::message_t> second = std::move(Build(*shard, {0})->frames);
  CATCH_REQUIRE(first.size() == 1);
  CATCH_REQUIRE(second.size() == 1);
  CATCH_CHECK(first[0].data() == second[0].data());

  // The same bytes: a completed round shows through a frame built before it.
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 4, kGradA).ok());
  shard->workers().Flush();
  const Floats expected = SgdStep(kInitial, {{4, kGradA}});
  const auto* borrowed = static_cast<const float*>(first[0].data());
  CATCH_CHECK(MaxDifference(Floats(borrowed, borrowed + kLength), expected) < 1e-6f);

  // The frame owns a reference to the buffer, so it outlives the shard.
  shard.reset();
  CATCH_CHECK(MaxDifference(Floats(borrowed, borrowed + kLength), expected) < 1e-6f);
}

CATCH_TEST_CASE("A pull must come from a live trainer and name distinct partitions of this shard",
                "[ps][shard][pull]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0, 3});
  auto validate = [&shard](uint32_t trainer, const WireMessage& pull) {
    return shard->ValidatePull(trainer, pull.root<wire::Pull>());
  };
  // Validity does not depend on the weights being there yet.
  CATCH_CHECK(validate(0, MakePull({2, 0})).ok());
  CATCH_CHECK(validate(3, MakePull({0})).ok());

  Status unknown = validate(0, MakePull({0, 7}));
  CATCH_CHECK(RefusalCode(unknown) == wire::ErrorCode::UnknownPartition);
  CATCH_CHECK(Contains(unknown.message(), "partition 7"));
  Status foreign = validate(0, MakePull({1}));
  CATCH_CHECK(RefusalCode(foreign) == wire::ErrorCode::UnknownPartition);
  CATCH_CHECK(Contains(foreign.message(), "belongs to server 1"));
  Status duplicate = validate(0, MakePull({0, 2, 0}));
  CATCH_CHECK(RefusalCode(duplicate) == wire::ErrorCode::Malformed);
  CATCH_CHECK(Contains(duplicate.message(), "twice"));
  Status stranger = validate(1, MakePull({0}));
  CATCH_CHECK(RefusalCode(stranger) == wire::ErrorCode::Unexpected);
  CATCH_CHECK(Contains(stranger.message(), "trainer 1"));
  CATCH_CHECK(validate(0, MakePull({0}, wire::DType::F16)).ok());
  CATCH_CHECK(validate(0, MakePull({0}, wire::DType::BF16)).ok());
  Status wide = validate(0, MakePull({0}, wire::DType::F64));
  CATCH_CHECK_FALSE(wide.ok());
  CATCH_CHECK(RefusalCode(wide) == wire::ErrorCode::Unexpected);
  CATCH_CHECK(Contains(wide.message(), "float64"));

  shard->SetLiveTrainers({3});
  CATCH_CHECK_FALSE(validate(0, MakePull({0})).ok());
}

CATCH_TEST_CASE("A trainer that joins at round 2 is waited for from round 2 on, not before",
                "[ps][shard][membership]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_REQUIRE(shard->CheckFromClock(1, 2).ok());
  shard->SetLiveTrainers({0, 1}, {{1, 2}});
  CATCH_CHECK(shard->IsLive(1));
  // Rounds 0 and 1 complete with trainer 0 alone; a push of the newcomer's before its round is refused.
  CATCH_CHECK(RefusalCode(PushBoth(*shard, 1, 0, 20, kGradC)) == wire::ErrorCode::Unexpected);
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 1, 10, kGradA).ok());
  CATCH_CHECK(shard->stats().rounds == 2);
  // Round 2 waits for it, and weighs both.
  CATCH_REQUIRE(PushBoth(*shard, 0, 2, 10, kGradA).ok());
  CATCH_CHECK(shard->stats().rounds == 2);
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 3, false));
  const Floats before = WeightsOf(*shard, 0);
  CATCH_REQUIRE(PushBoth(*shard, 1, 2, 30, kGradB).ok());
  CATCH_CHECK(shard->stats().rounds == 3);
  CATCH_CHECK(MaxDifference(WeightsOf(*shard, 0), SgdStep(before, {{10, kGradA}, {30, kGradB}})) < 1e-6f);
}

CATCH_TEST_CASE("A trainer cannot join at a round a partition has already completed",
                "[ps][shard][membership]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 1, 10, kGradA).ok());
  Status late = shard->CheckFromClock(1, 1);
  CATCH_INFO(late.ToString());
  CATCH_CHECK(late.code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(Contains(late.message(), "trainer 1 would start at round 1 but partition"));
  CATCH_CHECK(Contains(late.message(), "has completed 2 rounds"));
  // The open round is still to come: joining there is fine, and so is a trainer already known.
  CATCH_CHECK(shard->CheckFromClock(1, 2).ok());
  CATCH_CHECK(shard->CheckFromClock(0, 0).ok());
  // After a restore everyone goes on together from the restored round.
  shard->SetLiveTrainers({0, 1}, {{1, 2}});
  shard->Reset();
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_CHECK(shard->stats().rounds == 0);
  CATCH_REQUIRE(PushBoth(*shard, 1, 0, 30, kGradB).ok());
  CATCH_CHECK(shard->stats().rounds == 1);
}

CATCH_TEST_CASE("An ssp trainer that joins counts from its first clock, so it holds nobody back",
                "[ps][shard][membership]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSsp, [](Shard::Options& o) { o.staleness = 1; });
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  for (uint64_t clock = 0; clock < 5; ++clock) CATCH_REQUIRE(PushBoth(*shard, 0, clock, 10, kGradA).ok());
  shard->SetLiveTrainers({0, 1}, {{1, 5}});
  // Trainer 0 at clock 6 may go on: the newcomer counts as 5 steps along.
  CATCH_CHECK(shard->PullReady({0, 2}, 6, false));
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 7, false));
}

CATCH_TEST_CASE("An ssp pull waits for the slowest trainer's step on each partition it asks for",
                "[ps][shard][ssp]") {
  // A step's gradients come in several pushes (one per tensor as backward makes them): a trainer
  // that has pushed part of step 0 has not pushed step 0 to the partitions still to come.
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSsp, [](Shard::Options& o) { o.staleness = 0; });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  CATCH_REQUIRE(PushBoth(*shard, 0, 0, 10, kGradA).ok());
  CATCH_REQUIRE(Push(*shard, 1, MakePush(0, 10, {0}, {kGradB})).ok());
  CATCH_CHECK(shard->PullReady({0}, 1, false));
  CATCH_CHECK_FALSE(shard->PullReady({2}, 1, false));
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 1, false));
  CATCH_REQUIRE(Push(*shard, 1, MakePush(0, 10, {2}, {kGradB})).ok());
  CATCH_CHECK(shard->PullReady({0, 2}, 1, false));
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 2, false));
}

}  // namespace hetps
