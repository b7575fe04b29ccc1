// Shard with gradients and weights travelling as bfloat16 or float16: the sums and the float32
// master weights see exactly the widened values, replies carry the narrowed weights, and frames
// of the wrong dtype or length are refused.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "common/dtype.h"
#include "ps/shard.h"
#include "tests/ps/shard_wire.h"

namespace hetps {
namespace {

using namespace testing;  // NOLINT: the helpers of shard_wire.h

// `values` narrowed to `dtype`, as a frame's bytes would hold them.
std::vector<uint16_t> Narrow(const Floats& values, wire::DType dtype) {
  std::vector<uint16_t> packed(values.size());
  PackFloats(values.data(), values.size(), dtype, packed.data());
  return packed;
}

Floats Widen(const std::vector<uint16_t>& packed, wire::DType dtype) {
  Floats values(packed.size());
  UnpackFloats(packed.data(), packed.size(), dtype, values.data());
  return values;
}

// A push to both partitions of server 0 whose frames hold `grad` narrowed to `dtype`.
WireMessage NarrowPush(uint64_t clock, uint32_t batch, const Floats& grad, wire::DType dtype) {
  WireMessage push = MakePush(clock, batch, {0, 2}, {}, dtype);
  const std::vector<uint16_t> packed = Narrow(grad, dtype);
  for (int i = 0; i < 2; ++i) {
    push.frames->emplace_back(packed.data(), packed.size() * sizeof(uint16_t));
  }
  return push;
}

}  // namespace

CATCH_TEST_CASE("A sync round of 16-bit gradients applies exactly the widened values",
                "[ps][shard][wire_dtype]") {
  const ShardMap map = TestMap();
  for (wire::DType dtype : {wire::DType::BF16, wire::DType::F16}) {
    CATCH_SECTION(DTypeName(dtype)) {
      auto shard = MakeShard(map, ConsistencyMode::kSync);
      shard->SetLiveTrainers({0, 1});
      const Floats start = Ramp(1, 0.25f);
      CATCH_REQUIRE(InitBoth(*shard, start).ok());
      const Floats g0 = Ramp(0.1f, 0.013f), g1 = Ramp(-0.3f, 0.031f);
      CATCH_REQUIRE(Push(*shard, 0, NarrowPush(0, 24, g0, dtype)).ok());
      CATCH_REQUIRE(Push(*shard, 1, NarrowPush(0, 8, g1, dtype)).ok());
      // The server's own arithmetic: sum = 24 * g0' + 8 * g1', w -= lr * sum / 32.
      const Floats w0 = Widen(Narrow(g0, dtype), dtype), w1 = Widen(Narrow(g1, dtype), dtype);
      Floats expected(start.size());
      for (size_t i = 0; i < start.size(); ++i) {
        float sum = 24.0f * w0[i];
        sum += 8.0f * w1[i];
        expected[i] = start[i] - kLr * (sum * (1.0f / 32));
      }
      CATCH_CHECK(WeightsOf(*shard, 0) == expected);
      CATCH_CHECK(WeightsOf(*shard, 2) == expected);

      // The reply narrows the float32 master weights.
      auto built = Build(*shard, {0}, dtype);
      const auto* weights = &built->body();
      const std::vector<zmq::message_t>& frames = built->frames;
      CATCH_CHECK(weights->dtype() == dtype);
      CATCH_REQUIRE(frames.size() == 1);
      CATCH_REQUIRE(frames[0].size() == kLength * 2);
      std::vector<uint16_t> sent(kLength);
      std::memcpy(sent.data(), frames[0].data(), frames[0].size());
      CATCH_CHECK(sent == Narrow(expected, dtype));
    }
  }
}

CATCH_TEST_CASE("An async 16-bit push is applied as its widened gradient", "[ps][shard][wire_dtype]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kAsync);
  shard->SetLiveTrainers({0});
  const Floats start = Ramp(2, -0.125f);
  CATCH_REQUIRE(InitBoth(*shard, start).ok());
  const Floats g = Ramp(0.7f, -0.09f);
  CATCH_REQUIRE(Push(*shard, 0, NarrowPush(0, 16, g, wire::DType::BF16)).ok());
  const Floats widened = Widen(Narrow(g, wire::DType::BF16), wire::DType::BF16);
  Floats expected(start.size());
  for (size_t i = 0; i < start.size(); ++i) expected[i] = start[i] - kLr * widened[i];
  CATCH_CHECK(WeightsOf(*shard, 0) == expected);
}

CATCH_TEST_CASE("Frames of a dtype that cannot travel, or of the wrong length, are refused",
                "[ps][shard][wire_dtype]") {
  const ShardMap map = TestMap();
  auto shard = MakeShard(map, ConsistencyMode::kSync);
  shard->SetLiveTrainers({0});
  CATCH_REQUIRE(InitBoth(*shard, Ramp(1, 0)).ok());
  const Floats g = Ramp(1, 0);
  Status status = Push(*shard, 0, MakePush(0, 4, {0, 2}, {g, g}, wire::DType::F64));
  CATCH_CHECK(status.code() == Status::Code::kFailedPrecondition);
  CATCH_CHECK(status.message().find("float64") != std::string::npos);
  // float32-sized frames announced as bfloat16.
  status = Push(*shard, 0, MakePush(0, 4, {0, 2}, {g, g}, wire::DType::BF16));
  CATCH_CHECK(status.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(status.message().find("expected 32 (bfloat16)") != std::string::npos);
  CATCH_CHECK(shard->stats().pushes == 0);
  CATCH_CHECK(WeightsOf(*shard, 0) == Ramp(1, 0));
}

}  // namespace hetps
