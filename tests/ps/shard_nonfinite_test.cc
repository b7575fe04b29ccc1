// Shard: a push whose gradients hold a NaN, an infinity or an element beyond kLargestGradient is
// left out (accepted as a push of no samples, so a round goes on without it and an async or ssp
// clock moves on, the weights untouched), named, and counted per trainer in all and in a row;
// pushes of more samples than the job's and initial weights that are not finite are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "common/dtype.h"
#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const Floats kInitial = Ramp(1.0f, 0.5f);

Floats With(Floats values, size_t at, float value) {
  values[at] = value;
  return values;
}

// Pushes `grads` (partitions 0 and 2) as trainer `trainer`'s step `clock`; the reason it was
// left out, if it was, in `left_out`.
Status PushNoting(Shard& shard, uint32_t trainer, uint64_t clock, uint32_t batch,
                  const std::vector<Floats>& grads, std::string* left_out,
                  wire::DType dtype = wire::DType::F32) {
  WireMessage push;
  if (dtype == wire::DType::F32) {
    push = MakePush(clock, batch, {0, 2}, grads);
  } else {
    // The same values as 16-bit floats: two floats' bytes hold four.
    flatbuffers::FlatBufferBuilder fbb;
    const std::vector<uint32_t> ids = {0, 2};
    const std::vector<uint64_t> versions(2, 0);
    fbb.Finish(wire::CreatePushDirect(fbb, clock, batch, &ids, &versions, dtype, true));
    push.buffer.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    for (const Floats& f : grads) {
      zmq::message_t bytes(f.size() * DTypeSize(dtype));
      PackFloats(f.data(), f.size(), dtype, bytes.data());
      push.frames->push_back(std::move(bytes));
    }
  }
  Shard::Pushed pushed;
  Status status = shard.Push(trainer, push.root<wire::Push>(), push.frames, &pushed);
  *left_out = pushed.left_out;
  return status;
}

Floats Stepped(const Floats& weights, const Floats& grad, float lr) {
  Floats out = weights;
  for (size_t i = 0; i < out.size(); ++i) out[i] -= lr * grad[i];
  return out;
}

bool AllFinite(const Floats& values) {
  for (float v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

}  // namespace

CATCH_TEST_CASE("A sync round goes on without a push of NaN gradients, whichever arrives first",
                "[ps][shard][nonfinite]") {
  const Floats good = Ramp(0.1f, 0.02f);
  for (bool bad_first : {true, false}) {
    CATCH_INFO("the NaN push arrives " << (bad_first ? "first" : "second"));
    const ShardMap map = TestMap();
    auto shard = MakeShard(map, ConsistencyMode::kSync, [](Shard::Options& o) { o.global_batch_size = 64; });
    shard->SetLiveTrainers({0, 1});
    CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
    std::string left_out;
    auto bad = [&] { return PushNoting(*shard, 1, 0, 32, {good, With(good, 5, kNan)}, &left_out); };
    std::string none;
    auto fine = [&] { return PushNoting(*shard, 0, 0, 32, {good, good}, &none); };
    if (bad_first) CATCH_REQUIRE(bad().ok());
    CATCH_REQUIRE(fine().ok());
    if (!bad_first) CATCH_REQUIRE(bad().ok());
    CATCH_CHECK(none.empty());
    CATCH_CHECK(left_out == "element 5 of partition 2 (b[0:16]) is NaN");
    shard->workers().Flush();
    CATCH_CHECK(shard->CompletedRounds() == 1);
    // The round is trainer 0's 32 samples alone: its gradient, at its share of the global batch.
    for (uint32_t partition : {0u, 2u}) {
      const Floats weights = WeightsOf(*shard, partition);
      CATCH_CHECK(AllFinite(weights));
      const Floats expected = Stepped(kInitial, good, kLr * 0.5f);
      for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(weights[i] == Approx(expected[i]).epsilon(1e-6));
    }
    auto reply = Build(*shard, {0});
    CATCH_CHECK(reply->body().round_samples() == 32);
    CATCH_CHECK(shard->LeftOutSteps(1) == 1);
    CATCH_CHECK(shard->LeftOutSteps(0) == 0);
    const auto stats = shard->stats();
    CATCH_REQUIRE(stats.left_out.count(1) == 1);
    CATCH_CHECK(stats.left_out.at(1).steps == 1);
    CATCH_CHECK(stats.left_out.at(1).in_a_row == 1);
    CATCH_CHECK(stats.left_out.count(0) == 0);
    CATCH_CHECK(stats.pushes == 2);
  }
}

CATCH_TEST_CASE("An async push of infinities or of huge values moves its trainer's clock and nothing else",
                "[ps][shard][nonfinite]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Floats good = Ramp(0.3f, -0.01f);
  const float huge = std::nextafter(Shard::kLargestGradient, kInf);
  struct Case {
    const char* what;
    std::vector<Floats> grads;
    wire::DType dtype;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"+inf, float32",
       {With(good, 0, kInf), good},
       wire::DType::F32,
       "element 0 of partition 0 (w[0:16]) is inf"},
      {"-inf, bfloat16",
       {good, With(good, 15, -kInf)},
       wire::DType::BF16,
       "element 15 of partition 2 (b[0:16]) is -inf"},
      {"NaN, float16",
       {With(good, 7, kNan), good},
       wire::DType::F16,
       "element 7 of partition 0 (w[0:16]) is NaN"},
      {"beyond 2^100, float32",
       {good, With(good, 3, -huge)},
       wire::DType::F32,
       "element 3 of partition 2 (b[0:16]) is -1.26765e+30"},
  };
  uint64_t clock = 0;
  for (const Case& c : cases) {
    CATCH_INFO(c.what);
    std::string left_out;
    CATCH_REQUIRE(PushNoting(*shard, 0, clock++, 64, c.grads, &left_out, c.dtype).ok());
    CATCH_CHECK(left_out == c.reason);
    shard->workers().Flush();
    CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
    CATCH_CHECK(WeightsOf(*shard, 2) == kInitial);
  }
  CATCH_CHECK(shard->stats().version == 0);
  CATCH_CHECK(shard->stats().left_out.at(0).steps == 4);
  CATCH_CHECK(shard->stats().left_out.at(0).in_a_row == 4);
  // 2^100 itself is taken, as is the next step's finite push.
  std::string left_out;
  CATCH_REQUIRE(
      PushNoting(*shard, 0, clock++, 64, {With(good, 1, Shard::kLargestGradient), good}, &left_out).ok());
  CATCH_CHECK(left_out.empty());
  shard->workers().Flush();
  CATCH_CHECK(shard->stats().version == 1);
  CATCH_CHECK(AllFinite(WeightsOf(*shard, 0)));
  const Floats stepped = WeightsOf(*shard, 2);
  const Floats expected = Stepped(kInitial, good, kLr);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(stepped[i] == Approx(expected[i]).epsilon(1e-6));
  CATCH_CHECK(shard->LeftOutSteps(0) == 4);
}

CATCH_TEST_CASE("In ssp a push left out counts as its trainer's step for the bound",
                "[ps][shard][nonfinite]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSsp, [](Shard::Options& o) { o.staleness = 0; });
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Floats good = Ramp(0.3f, -0.01f);
  std::string left_out;
  CATCH_REQUIRE(PushNoting(*shard, 0, 0, 32, {good, good}, &left_out).ok());
  CATCH_CHECK_FALSE(shard->PullReady({0, 2}, 1, false));  // trainer 1 has not pushed step 0
  CATCH_REQUIRE(PushNoting(*shard, 1, 0, 32, {With(good, 2, kNan), good}, &left_out).ok());
  CATCH_CHECK_FALSE(left_out.empty());
  CATCH_CHECK(shard->PullReady({0, 2}, 1, false));
  shard->workers().Flush();
  CATCH_CHECK(shard->stats().version == 1);  // trainer 0's push alone
}

CATCH_TEST_CASE("Steps left out are counted once per step, and in a row only while consecutive",
                "[ps][shard][nonfinite]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0, 1});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Floats good = Ramp(0.3f, -0.01f);
  const Floats bad = With(good, 4, kNan);
  std::string left_out;
  auto push = [&](uint64_t clock, const Floats& grad) {
    CATCH_REQUIRE(PushNoting(*shard, 1, clock, 32, {grad, grad}, &left_out).ok());
  };
  auto counts = [&] { return shard->stats().left_out.at(1); };
  push(0, bad);
  push(1, bad);
  push(2, bad);
  CATCH_CHECK(counts().steps == 3);
  CATCH_CHECK(counts().in_a_row == 3);
  push(3, good);
  push(4, bad);
  CATCH_CHECK(counts().steps == 4);
  CATCH_CHECK(counts().in_a_row == 1);
  // A step pushed in two messages (one partition each), both bad, is one step.
  CATCH_REQUIRE(Push(*shard, 1, MakePush(5, 32, {0}, {bad})).ok());
  CATCH_REQUIRE(Push(*shard, 1, MakePush(5, 32, {2}, {bad})).ok());
  CATCH_CHECK(counts().steps == 5);
  CATCH_CHECK(counts().in_a_row == 2);
  // A trainer that leaves the job ends its run; its steps stay counted.
  shard->SetLiveTrainers({0});
  CATCH_CHECK(counts().in_a_row == 0);
  CATCH_CHECK(counts().steps == 5);
  CATCH_CHECK(shard->LeftOutSteps(1) == 5);
}

CATCH_TEST_CASE("A diloco round goes on without a NaN pseudo-gradient; async rounds ignore one",
                "[ps][shard][nonfinite][diloco]") {
  const Floats delta = Ramp(0.05f, 0.01f);
  const Floats bad = With(delta, 9, kInf);
  {
    const ShardMap map = TestMap();
    auto shard = MakeDilocoShard(map, /*lr=*/1.0, /*momentum=*/0);
    shard->SetLiveTrainers({0, 1});
    CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
    CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(0, 64, 4, bad)).ok());
    CATCH_REQUIRE(Push(*shard, 0, MakeRoundPush(0, 64, 4, delta)).ok());
    shard->workers().Flush();
    CATCH_CHECK(shard->CompletedRounds() == 1);
    const Floats weights = WeightsOf(*shard, 0);
    const Floats expected = Stepped(kInitial, delta, 1.0f);  // trainer 0's weights
    for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(weights[i] == Approx(expected[i]).epsilon(1e-6));
    CATCH_CHECK(shard->LeftOutSteps(1) == 1);
  }
  {
    const ShardMap map = TestMap();
    auto shard = MakeDilocoShard(map, /*lr=*/0.7, /*momentum=*/0.9, /*async=*/true);
    shard->SetLiveTrainers({0, 1});
    CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
    CATCH_REQUIRE(Push(*shard, 1, MakeRoundPush(0, 64, 4, bad)).ok());
    shard->workers().Flush();
    CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
    CATCH_CHECK(shard->stats().version == 0);
    CATCH_CHECK(shard->LeftOutSteps(1) == 1);
  }
}

CATCH_TEST_CASE("Pushes of more samples than the job's are refused and change nothing",
                "[ps][shard][nonfinite]") {
  const Floats good = Ramp(0.3f, -0.01f);
  struct Case {
    const char* what;
    ConsistencyMode mode;
    uint32_t batch;
    Status::Code code;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"sync, the global batch and one", ConsistencyMode::kSync, 65, Status::Code::kInvalidArgument,
       "a push of 65 samples; in sync a push carries at most 64 in this job (the global batch of 64)"},
      {"async, 2^32 - 1", ConsistencyMode::kAsync, 0xffffffffu, Status::Code::kInvalidArgument,
       "carries at most 65536 in this job (1024 local steps of the global batch of 64)"},
      {"ssp, 1024 global batches and one", ConsistencyMode::kSsp, 65537, Status::Code::kInvalidArgument,
       "at most 65536"},
  };
  for (const Case& c : cases) {
    CATCH_INFO(c.what);
    const ShardMap map = TestMap();
    auto shard = MakeShard(map, c.mode, [](Shard::Options& o) { o.global_batch_size = 64; });
    shard->SetLiveTrainers({0});
    CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
    const Status refused = PushBoth(*shard, 0, 0, c.batch, good);
    CATCH_CHECK(refused.code() == c.code);
    CATCH_CHECK(refused.message().find(c.reason) != std::string::npos);
    CATCH_CHECK(RefusalReasonOf(refused) == Refusal::Invalid);
    shard->workers().Flush();
    CATCH_CHECK(shard->stats().pushes == 0);
    CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
    // The largest a push may carry is taken.
    CATCH_CHECK(PushBoth(*shard, 0, 0, c.mode == ConsistencyMode::kSync ? 64 : 65536, good).ok());
  }
  const ShardMap map = TestMap();
  auto diloco = MakeDilocoShard(map, 1.0, 0);  // global batch 64
  diloco->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*diloco, kInitial).ok());
  const Status over = Push(*diloco, 0, MakeRoundPush(0, 129, 2, good));
  CATCH_CHECK(over.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(over.message().find("the global batch of 64 per inner step") != std::string::npos);
  const Status steps = Push(*diloco, 0, MakeRoundPush(0, 3, 4, good));
  CATCH_CHECK(steps.code() == Status::Code::kProtocol);
  CATCH_CHECK(steps.message().find("an inner step takes at least one sample") != std::string::npos);
  CATCH_CHECK(Push(*diloco, 0, MakeRoundPush(0, 128, 2, good)).ok());
}

CATCH_TEST_CASE("Initial weights with a NaN or an infinity are refused, and nothing is initialised",
                "[ps][shard][nonfinite]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0});
  const Status refused = InitBoth(*shard, With(kInitial, 3, -kInf));
  CATCH_CHECK(refused.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(
      refused.message() ==
      "initial weights: element 3 of partition 0 (w[0:16]) is -inf; a model's weights must be finite");
  const Status push = PushBoth(*shard, 0, 0, 8, Ramp(0.1f, 0.1f));
  CATCH_CHECK(push.code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(push.message().find("no initial weights yet") != std::string::npos);
  CATCH_CHECK(InitBoth(*shard, kInitial).ok());
}

}  // namespace hetps
