// Shard in mode diloco with int8 pseudo-gradients (Push.dtype I8, one scale per partition): a push
// is combined exactly as the float32 push of its dequantised values would be, the Weights answer
// comes as the push's weights_dtype, and malformed int8 pushes (no scales, a wrong count, a scale
// that is not finite, is negative or would overflow float32 times 127, frames of the wrong length, int8
// outside diloco, scales on a float push) are refused whole, as invalid requests, and change nothing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/int8.h"
#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

using Int8s = std::vector<int8_t>;

const std::vector<uint32_t> kIds = {0, 2};

// An int8 push of round `round` to partitions 0 and 2 of server 0, frames and scales as given.
WireMessage MakeInt8Push(uint64_t round, uint32_t samples, uint32_t inner_steps, const std::vector<Int8s>& q,
                         const std::vector<float>* scales, wire::DType weights_dtype = wire::DType::F32,
                         size_t frame_bytes = kLength) {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<uint64_t> versions(kIds.size(), 0);
  fbb.Finish(wire::CreatePushDirect(fbb, round, samples, &kIds, &versions, wire::DType::I8, /*pull=*/true,
                                    /*ahead=*/0, inner_steps, /*sync_us=*/0, scales, weights_dtype));
  WireMessage message;
  message.buffer.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  for (const Int8s& frame : q) {
    zmq::message_t bytes(frame_bytes);
    std::memcpy(bytes.data(), frame.data(), std::min(frame_bytes, frame.size()));
    message.frames->push_back(std::move(bytes));
  }
  return message;
}

WireMessage MakeFloatRoundPush(uint64_t round, uint32_t samples, uint32_t inner_steps,
                               const std::vector<Floats>& d) {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<uint64_t> versions(kIds.size(), 0);
  return Finish(fbb,
                wire::CreatePushDirect(fbb, round, samples, &kIds, &versions, wire::DType::F32, /*pull=*/true,
                                       /*ahead=*/0, inner_steps),
                d);
}

// A pseudo-gradient quantised as a trainer would send it, and its dequantised values.
struct Quantised {
  std::vector<Int8s> q;
  std::vector<float> scales;
  std::vector<Floats> values;
};

Quantised Quantise(const std::vector<Floats>& exact) {
  Quantised out;
  for (const Floats& x : exact) {
    const float scale = Int8Scale(x.data(), x.size());
    Int8s q(x.size());
    QuantizeInt8(x.data(), x.size(), scale, q.data());
    Floats back(x.size());
    DequantizeInt8(q.data(), q.size(), scale, back.data());
    out.q.push_back(q);
    out.scales.push_back(scale);
    out.values.push_back(back);
  }
  return out;
}

std::unique_ptr<Shard> MakeOuterShard(const ShardMap& map, ConsistencyMode mode = ConsistencyMode::kDiloco) {
  return MakeShard(map, mode, [](Shard::Options& o) {
    o.optimizer = DefaultOuterOptimizer();
    o.optimizer.lr = 0.7;
    o.optimizer.momentum = 0.9;
    o.optimizer.nesterov = true;
  });
}

const Floats kInitial = Ramp(0.5f, 0.25f);

}  // namespace

CATCH_TEST_CASE("A diloco round of int8 pushes steps as the float32 pushes of their dequantised values",
                "[ps][shard][diloco][int8]") {
  const ShardMap map = TestMap();
  auto int8 = MakeOuterShard(map);
  auto reference = MakeOuterShard(map);
  for (Shard* shard : {int8.get(), reference.get()}) {
    shard->SetLiveTrainers({0, 1});
    CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  }
  for (uint64_t round = 0; round < 3; ++round) {
    const float r = static_cast<float>(round);
    // Trainer 0 sends int8, trainer 1 float32 (a job's trainers all send alike; the sums do not care).
    const Quantised fast = Quantise({Ramp(0.02f + 0.01f * r, 0.003f), Ramp(-0.05f, 0.001f * (r + 1))});
    const std::vector<Floats> slow = {Ramp(-0.01f, 0.002f), Ramp(0.03f, -0.002f)};
    CATCH_REQUIRE(Push(*int8, 0, MakeInt8Push(round, 2560, 40, fast.q, &fast.scales)).ok());
    CATCH_REQUIRE(Push(*int8, 1, MakeFloatRoundPush(round, 640, 10, slow)).ok());
    CATCH_REQUIRE(Push(*reference, 0, MakeFloatRoundPush(round, 2560, 40, fast.values)).ok());
    CATCH_REQUIRE(Push(*reference, 1, MakeFloatRoundPush(round, 640, 10, slow)).ok());
    for (Shard* shard : {int8.get(), reference.get()}) {
      shard->workers().Flush();
      CATCH_CHECK(shard->CompletedRounds() == round + 1);
    }
    for (uint32_t id : kIds) {
      const Floats got = WeightsOf(*int8, id);
      const Floats want = WeightsOf(*reference, id);
      for (size_t i = 0; i < kLength; ++i) {
        CATCH_INFO("round " << round << ", partition " << id << ", element " << i);
        CATCH_CHECK(std::abs(got[i] - want[i]) <= 1e-6);
      }
    }
  }
  CATCH_CHECK(int8->stats().pushes == 6);
}

CATCH_TEST_CASE("An int8 push's scale of 0 and an all-equal frame are combined as their float values",
                "[ps][shard][diloco][int8]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kDiloco,
                         [](Shard::Options& o) { o.optimizer = DefaultOuterOptimizer(); });
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Quantised d = Quantise({Floats(kLength, 0.0f), Floats(kLength, -0.125f)});
  CATCH_REQUIRE(d.scales[0] == 0.0f);
  CATCH_REQUIRE(Push(*shard, 0, MakeInt8Push(0, 64, 4, d.q, &d.scales)).ok());
  shard->workers().Flush();
  // Plain averaging (SGD, lr 1): weights minus the pseudo-gradient.
  CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
  const Floats moved = WeightsOf(*shard, 2);
  for (size_t i = 0; i < kLength; ++i) CATCH_CHECK(std::abs(moved[i] - (kInitial[i] + 0.125f)) <= 1e-6);
}

CATCH_TEST_CASE("The Weights that answer an int8 push come as its weights_dtype",
                "[ps][shard][diloco][int8]") {
  const ShardMap map = TestMap();
  auto shard = MakeOuterShard(map);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Quantised d = Quantise({Ramp(0.1f, 0.01f), Ramp(0.1f, 0.01f)});
  const WireMessage push = MakeInt8Push(0, 64, 4, d.q, &d.scales, wire::DType::BF16);
  CATCH_REQUIRE(Push(*shard, 0, push).ok());
  CATCH_CHECK(push.root<wire::Push>().weights_dtype() == wire::DType::BF16);
  // The server answers as the push asks (Server: weights_dtype for I8 pushes): 2 bytes each.
  CATCH_CHECK(Build(*shard, kIds, push.root<wire::Push>().weights_dtype())->frames[0].size() == 2 * kLength);
  // A weights_dtype that cannot travel is refused.
  auto other = MakeOuterShard(map);
  other->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*other, kInitial).ok());
  const Status refused = Push(*other, 0, MakeInt8Push(0, 64, 4, d.q, &d.scales, wire::DType::I8));
  CATCH_CHECK(refused.code() == Status::Code::kProtocol);
  CATCH_CHECK(refused.message().find("asks for weights as int8") != std::string::npos);
}

CATCH_TEST_CASE("Malformed int8 pushes are refused whole as invalid requests and change nothing",
                "[ps][shard][diloco][int8]") {
  const ShardMap map = TestMap();
  auto shard = MakeOuterShard(map);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
  const Quantised d = Quantise({Ramp(0.1f, 0.01f), Ramp(-0.2f, 0.02f)});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> one = {d.scales[0]};
  const std::vector<float> three = {d.scales[0], d.scales[1], d.scales[1]};
  const std::vector<float> with_nan = {d.scales[0], nan};
  const std::vector<float> with_inf = {inf, d.scales[1]};
  const std::vector<float> negative = {d.scales[0], -d.scales[1]};
  // 127 times it overflows float32.
  const std::vector<float> huge = {d.scales[0], std::numeric_limits<float>::max() / 100};
  struct Case {
    const char* what;
    WireMessage push;
    Status::Code code;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {"no scales", MakeInt8Push(0, 64, 4, d.q, nullptr), Status::Code::kProtocol,
       "2 partitions but 0 scales"},
      {"one scale", MakeInt8Push(0, 64, 4, d.q, &one), Status::Code::kProtocol, "2 partitions but 1 scales"},
      {"three scales", MakeInt8Push(0, 64, 4, d.q, &three), Status::Code::kProtocol, "but 3 scales"},
      {"a NaN scale", MakeInt8Push(0, 64, 4, d.q, &with_nan), Status::Code::kProtocol, "finite, at least 0"},
      {"an infinite scale", MakeInt8Push(0, 64, 4, d.q, &with_inf), Status::Code::kProtocol, "finite"},
      {"a negative scale", MakeInt8Push(0, 64, 4, d.q, &negative), Status::Code::kProtocol, "at least 0"},
      {"a scale beyond FLT_MAX / 127", MakeInt8Push(0, 64, 4, d.q, &huge), Status::Code::kProtocol,
       "at most FLT_MAX / 127"},
      {"float32-sized frames", MakeInt8Push(0, 64, 4, d.q, &d.scales, wire::DType::F32, 4 * kLength),
       Status::Code::kInvalidArgument, "expected 16 (int8)"},
      {"short frames", MakeInt8Push(0, 64, 4, d.q, &d.scales, wire::DType::F32, kLength - 1),
       Status::Code::kInvalidArgument, "has 15 bytes"},
  };
  for (const Case& c : cases) {
    CATCH_INFO(c.what);
    const Status refused = Push(*shard, 0, c.push);
    CATCH_CHECK(refused.code() == c.code);
    CATCH_CHECK(refused.message().find(c.reason) != std::string::npos);
    // The server answers Error and counts it among its invalid requests (Server::Refuse).
    CATCH_CHECK(RefusalReasonOf(refused) == Refusal::Invalid);
    CATCH_CHECK(RefusalCode(refused) != wire::ErrorCode::Unexpected);
  }
  // A float push that carries scales is malformed too.
  {
    flatbuffers::FlatBufferBuilder fbb;
    const std::vector<uint64_t> versions(kIds.size(), 0);
    WireMessage push = Finish(
        fbb, wire::CreatePushDirect(fbb, 0, 64, &kIds, &versions, wire::DType::F32, true, 0, 4, 0, &d.scales),
        d.values);
    const Status refused = Push(*shard, 0, push);
    CATCH_CHECK(refused.code() == Status::Code::kProtocol);
    CATCH_CHECK(refused.message().find("carries scales") != std::string::npos);
  }
  shard->workers().Flush();
  CATCH_CHECK(shard->stats().pushes == 0);
  CATCH_CHECK(WeightsOf(*shard, 0) == kInitial);
  CATCH_CHECK(shard->CompletedRounds() == 0);
  // The trainer's proper push of the same round is still taken.
  CATCH_REQUIRE(Push(*shard, 0, MakeInt8Push(0, 64, 4, d.q, &d.scales)).ok());
  shard->workers().Flush();
  CATCH_CHECK(shard->CompletedRounds() == 1);
}

CATCH_TEST_CASE("int8 pushes outside mode diloco are refused", "[ps][shard][int8]") {
  const ShardMap map = TestMap();
  for (ConsistencyMode mode : {ConsistencyMode::kSync, ConsistencyMode::kAsync, ConsistencyMode::kSsp}) {
    CATCH_INFO(ModeName(mode));
    auto shard = MakeShard(map, mode);
    shard->SetLiveTrainers({0});
    CATCH_REQUIRE(InitBoth(*shard, kInitial).ok());
    const Quantised d = Quantise({Ramp(0.1f, 0.01f), Ramp(0.1f, 0.01f)});
    const Status refused = Push(*shard, 0, MakeInt8Push(0, 64, 1, d.q, &d.scales));
    CATCH_CHECK(refused.code() == Status::Code::kFailedPrecondition);
    CATCH_CHECK(refused.message().find("diloco's pseudo-gradients only") != std::string::npos);
    CATCH_CHECK(shard->stats().pushes == 0);
  }
}

}  // namespace hetps
