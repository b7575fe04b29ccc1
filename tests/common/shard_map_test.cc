#include "common/shard_map.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace hetps {
namespace {

TensorInfo Tensor(const std::string& name, std::vector<int64_t> shape, wire::DType dtype = wire::DType::F32) {
  TensorInfo t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

ShardMap BuildOrFail(std::vector<TensorInfo> tensors, uint32_t servers, uint64_t partition_bytes) {
  Result<ShardMap> map = ShardMap::Build(std::move(tensors), servers, partition_bytes);
  CATCH_INFO(map.status().ToString());
  CATCH_REQUIRE(map.ok());
  return std::move(map).value();
}

// Elements owned by each server.
std::vector<uint64_t> Loads(const ShardMap& map) {
  std::vector<uint64_t> load(map.num_servers(), 0);
  for (const PartitionInfo& p : map.partitions()) load.at(p.server) += p.length;
  return load;
}

// Checks that the partitions of every tensor are in order, contiguous from 0, and sum to numel.
void RequireTiling(const ShardMap& map, uint64_t partition_bytes) {
  std::vector<uint64_t> covered(map.tensors().size(), 0);
  for (size_t i = 0; i < map.partitions().size(); ++i) {
    const PartitionInfo& p = map.partitions()[i];
    CATCH_REQUIRE(p.id == i);
    CATCH_REQUIRE(p.tensor < map.tensors().size());
    CATCH_REQUIRE(p.server < map.num_servers());
    CATCH_REQUIRE(p.length > 0);
    CATCH_REQUIRE(p.length * sizeof(float) <= partition_bytes);
    CATCH_REQUIRE(p.offset == covered[p.tensor]);
    covered[p.tensor] += p.length;
  }
  for (size_t t = 0; t < map.tensors().size(); ++t) {
    CATCH_REQUIRE(covered[t] == static_cast<uint64_t>(map.tensors()[t].numel()));
  }
}

std::vector<TensorInfo> RandomSignature(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> tensor_count(1, 12);
  std::uniform_int_distribution<int> rank(1, 3);
  std::uniform_int_distribution<int64_t> dim(1, 60);
  std::vector<TensorInfo> tensors;
  const int count = tensor_count(rng);
  for (int i = 0; i < count; ++i) {
    std::vector<int64_t> shape;
    const int dims = rank(rng);
    for (int d = 0; d < dims; ++d) shape.push_back(dim(rng));
    tensors.push_back(Tensor("t" + std::to_string(i), shape));
  }
  return tensors;
}

// A serialized wire::ShardMap; `buffer` keeps the bytes alive.
struct WireMap {
  flatbuffers::FlatBufferBuilder buffer;
  const wire::ShardMap& map() const {
    return *flatbuffers::GetRoot<wire::ShardMap>(buffer.GetBufferPointer());
  }
};

void FinishWireMap(
    WireMap& out, flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>> tensors,
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::PartitionSpec>>> partitions,
    uint32_t servers) {
  flatbuffers::FlatBufferBuilder& fbb = out.buffer;
  std::vector<flatbuffers::Offset<wire::ServerEndpoint>> endpoints;
  for (uint32_t s = 0; s < servers; ++s) {
    const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(7500 + s);
    endpoints.push_back(wire::CreateServerEndpointDirect(fbb, s, endpoint.c_str()));
  }
  auto servers_vector = fbb.CreateVector(endpoints);
  fbb.Finish(wire::CreateShardMap(fbb, /*version=*/1, tensors, partitions, servers_vector));
  flatbuffers::Verifier verifier(fbb.GetBufferPointer(), fbb.GetSize());
  CATCH_REQUIRE(verifier.VerifyBuffer<wire::ShardMap>(nullptr));
}

void ToWire(const ShardMap& map, WireMap& out) {
  auto tensors = map.TensorsToWire(out.buffer);
  auto partitions = map.PartitionsToWire(out.buffer);
  FinishWireMap(out, tensors, partitions, map.num_servers());
}

struct RawPartition {
  uint32_t tensor;
  uint64_t offset;
  uint64_t length;
  uint32_t server;
};

// A wire map of `tensors` with hand-written partitions, to feed FromWire inconsistent input.
void HandWritten(const std::vector<TensorInfo>& tensors, const std::vector<RawPartition>& raw,
                 uint32_t servers, WireMap& out) {
  flatbuffers::FlatBufferBuilder& fbb = out.buffer;
  auto tensor_specs = SignatureToWire(fbb, tensors);
  std::vector<flatbuffers::Offset<wire::PartitionSpec>> specs;
  for (const RawPartition& p : raw) {
    specs.push_back(wire::CreatePartitionSpec(fbb, p.tensor, p.offset, p.length, p.server));
  }
  auto partition_specs = fbb.CreateVector(specs);
  FinishWireMap(out, tensor_specs, partition_specs, servers);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

CATCH_TEST_CASE("Partitions never exceed partition_bytes and tile each tensor exactly",
                "[common][shard_map]") {
  // Small enough that even 4-byte partitions stay within kMaxPartitions.
  const std::vector<TensorInfo> tensors = {Tensor("fc1.weight", {512, 196}), Tensor("fc1.bias", {512}),
                                           Tensor("fc2.weight", {10, 512}), Tensor("fc2.bias", {10}),
                                           Tensor("scalar", {})};
  for (uint64_t partition_bytes : {4ull, 7ull, 40ull, 1000ull, 4096ull, 1ull << 20, 4ull << 20}) {
    CATCH_INFO("partition_bytes " << partition_bytes);
    const ShardMap map = BuildOrFail(tensors, 3, partition_bytes);
    RequireTiling(map, partition_bytes);
  }
  // A 12-element tensor in 20-byte partitions: 5 + 5 + 2 elements.
  const ShardMap map = BuildOrFail({Tensor("w", {3, 4})}, 1, 20);
  CATCH_REQUIRE(map.partitions().size() == 3);
  CATCH_CHECK(map.partitions()[0].length == 5);
  CATCH_CHECK(map.partitions()[1].length == 5);
  CATCH_CHECK(map.partitions()[2].length == 2);
  CATCH_CHECK(map.partitions()[2].offset == 10);
}

CATCH_TEST_CASE("A tensor with no elements gets no partitions", "[common][shard_map]") {
  const ShardMap map = BuildOrFail({Tensor("empty", {0, 5}), Tensor("w", {4})}, 2, 16);
  RequireTiling(map, 16);
  CATCH_REQUIRE(map.partitions().size() == 1);
  CATCH_CHECK(map.partitions()[0].tensor == 1);
}

CATCH_TEST_CASE("Every server's load is within one partition of the ideal mean", "[common][shard_map]") {
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<uint32_t> server_count(1, 16);
  std::uniform_int_distribution<uint64_t> partition_bytes_dist(4, 4096);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<TensorInfo> tensors = RandomSignature(rng);
    const uint32_t servers = server_count(rng);
    const uint64_t partition_bytes = partition_bytes_dist(rng);
    CATCH_INFO("trial " << trial << ": " << tensors.size() << " tensors, " << servers
                        << " servers, partition_bytes " << partition_bytes);
    const ShardMap map = BuildOrFail(tensors, servers, partition_bytes);
    RequireTiling(map, partition_bytes);

    uint64_t total = 0;
    uint64_t largest = 0;
    for (const PartitionInfo& p : map.partitions()) {
      total += p.length;
      largest = std::max(largest, p.length);
    }
    const double mean = static_cast<double>(total) / servers;
    const std::vector<uint64_t> load = Loads(map);
    for (uint32_t s = 0; s < servers; ++s) {
      CATCH_INFO("server " << s << " load " << load[s] << ", mean " << mean << ", largest " << largest);
      CATCH_REQUIRE(static_cast<double>(load[s]) <= mean + static_cast<double>(largest));
      CATCH_REQUIRE(static_cast<double>(load[s]) >= mean - static_cast<double>(largest));
      CATCH_REQUIRE(map.BytesOf(s) == load[s] * sizeof(float));
      for (uint32_t id : map.PartitionsOf(s)) CATCH_REQUIRE(map.partitions()[id].server == s);
    }
  }
}

CATCH_TEST_CASE("The same signature always yields the identical map", "[common][shard_map]") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<TensorInfo> tensors = RandomSignature(rng);
    const ShardMap a = BuildOrFail(tensors, 5, 256);
    const ShardMap b = BuildOrFail(tensors, 5, 256);
    CATCH_REQUIRE(a.partitions().size() == b.partitions().size());
    for (size_t i = 0; i < a.partitions().size(); ++i) {
      const PartitionInfo& pa = a.partitions()[i];
      const PartitionInfo& pb = b.partitions()[i];
      CATCH_REQUIRE(pa.id == pb.id);
      CATCH_REQUIRE(pa.tensor == pb.tensor);
      CATCH_REQUIRE(pa.offset == pb.offset);
      CATCH_REQUIRE(pa.length == pb.length);
      CATCH_REQUIRE(pa.server == pb.server);
    }
  }
}

CATCH_TEST_CASE("Ties go to the lowest rank and equal partitions go in id order", "[common][shard_map]") {
  CATCH_SECTION("three equal partitions on four servers") {
    const ShardMap map = BuildOrFail({Tensor("w", {12})}, 4, 16);
    CATCH_REQUIRE(map.partitions().size() == 3);
    CATCH_CHECK(map.partitions()[0].server == 0);
    CATCH_CHECK(map.partitions()[1].server == 1);
    CATCH_CHECK(map.partitions()[2].server == 2);
    CATCH_CHECK(map.PartitionsOf(3).empty());
    CATCH_CHECK(map.BytesOf(3) == 0);
  }
  CATCH_SECTION("five equal partitions on two servers alternate") {
    const ShardMap map = BuildOrFail({Tensor("w", {20})}, 2, 16);
    CATCH_CHECK(map.PartitionsOf(0) == std::vector<uint32_t>{0, 2, 4});
    CATCH_CHECK(map.PartitionsOf(1) == std::vector<uint32_t>{1, 3});
  }
  CATCH_SECTION("largest partitions are placed first") {
    // p0: a [3 elements]; p1, p2: b [4 + 4]. Order p1, p2, p0: p0 joins the tie at rank 0.
    const ShardMap map = BuildOrFail({Tensor("a", {3}), Tensor("b", {8})}, 2, 16);
    CATCH_REQUIRE(map.partitions().size() == 3);
    CATCH_CHECK(map.partitions()[1].server == 0);
    CATCH_CHECK(map.partitions()[2].server == 1);
    CATCH_CHECK(map.partitions()[0].server == 0);
  }
}

CATCH_TEST_CASE("Build refuses invalid arguments", "[common][shard_map]") {
  CATCH_CHECK(ShardMap::Build({Tensor("w", {4})}, 0, 16).status().code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(ShardMap::Build({Tensor("w", {4})}, 1, 3).status().code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(ShardMap::Build({}, 1, 16).status().code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(ShardMap::Build({Tensor("w", {4}, wire::DType::F16)}, 1, 16).status().code() ==
              Status::Code::kInvalidArgument);
}

CATCH_TEST_CASE("A map read back from the wire equals the original", "[common][shard_map]") {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<TensorInfo> tensors = RandomSignature(rng);
    const uint32_t servers = 1 + trial % 7;
    const ShardMap original = BuildOrFail(tensors, servers, 64 + 32 * trial);
    WireMap wire_map;
    ToWire(original, wire_map);
    Result<ShardMap> back = ShardMap::FromWire(wire_map.map());
    CATCH_INFO(back.status().ToString());
    CATCH_REQUIRE(back.ok());
    CATCH_REQUIRE(back->num_servers() == original.num_servers());
    CATCH_REQUIRE(back->tensors().size() == original.tensors().size());
    for (size_t t = 0; t < original.tensors().size(); ++t) {
      CATCH_CHECK(back->tensors()[t].name == original.tensors()[t].name);
      CATCH_CHECK(back->tensors()[t].shape == original.tensors()[t].shape);
      CATCH_CHECK(back->tensors()[t].dtype == original.tensors()[t].dtype);
    }
    CATCH_REQUIRE(back->partitions().size() == original.partitions().size());
    for (size_t i = 0; i < original.partitions().size(); ++i) {
      const PartitionInfo& a = original.partitions()[i];
      const PartitionInfo& b = back->partitions()[i];
      CATCH_CHECK(a.id == b.id);
      CATCH_CHECK(a.tensor == b.tensor);
      CATCH_CHECK(a.offset == b.offset);
      CATCH_CHECK(a.length == b.length);
      CATCH_CHECK(a.server == b.server);
    }
    CATCH_CHECK(CompareSignatures(original.tensors(), back->tensors()).ok());
  }
}

CATCH_TEST_CASE("FromWire refuses maps that do not tile the tensors or name unknown members",
                "[common][shard_map]") {
  const std::vector<TensorInfo> tensors = {Tensor("conv.weight", {8}), Tensor("conv.bias", {2})};
  auto refuse = [&](const std::vector<RawPartition>& raw, uint32_t servers,
                    const std::vector<std::string>& expected_parts) {
    WireMap wire_map;
    HandWritten(tensors, raw, servers, wire_map);
    Result<ShardMap> map = ShardMap::FromWire(wire_map.map());
    CATCH_REQUIRE_FALSE(map.ok());
    CATCH_CHECK(map.status().code() == Status::Code::kProtocol);
    for (const std::string& part : expected_parts) {
      CATCH_INFO("message: " << map.status().message() << "; expected to contain: " << part);
      CATCH_CHECK(Contains(map.status().message(), part));
    }
  };
  CATCH_SECTION("the hand-written baseline is accepted") {
    WireMap wire_map;
    HandWritten(tensors, {{0, 0, 4, 0}, {0, 4, 4, 1}, {1, 0, 2, 0}}, 2, wire_map);
    CATCH_REQUIRE(ShardMap::FromWire(wire_map.map()).ok());
  }
  CATCH_SECTION("a gap") {
    refuse({{0, 0, 4, 0}, {0, 5, 3, 1}, {1, 0, 2, 0}}, 2, {"conv.weight", "starts at 5", "expected 4"});
  }
  CATCH_SECTION("an overlap") {
    refuse({{0, 0, 4, 0}, {0, 3, 5, 1}, {1, 0, 2, 0}}, 2, {"conv.weight", "starts at 3", "expected 4"});
  }
  CATCH_SECTION("a tensor left short") {
    refuse({{0, 0, 4, 0}, {1, 0, 2, 0}}, 2, {"conv.weight", "covers 4 of 8"});
  }
  CATCH_SECTION("a tensor covered beyond its end") {
    refuse({{0, 0, 4, 0}, {0, 4, 8, 1}, {1, 0, 2, 0}}, 2,
           {"partition 1", "runs past the end of conv.weight"});
  }
  CATCH_SECTION("lengths that wrap around to the tensor's size") {
    // 4 + (2^64 - 4) + 8 elements wrap to exactly 8: the sum alone would have passed.
    refuse({{0, 0, 4, 0}, {0, 4, ~uint64_t{0} - 3, 1}, {0, 0, 8, 0}, {1, 0, 2, 0}}, 2,
           {"partition 1", "runs past the end of conv.weight"});
  }
  CATCH_SECTION("an unknown tensor") {
    refuse({{0, 0, 8, 0}, {1, 0, 2, 0}, {2, 0, 1, 0}}, 2, {"partition 2", "tensor"});
  }
  CATCH_SECTION("an unknown server") {
    refuse({{0, 0, 8, 0}, {1, 0, 2, 2}}, 2, {"partition 1", "server"});
  }
  CATCH_SECTION("an empty partition") {
    refuse({{0, 0, 8, 0}, {1, 0, 0, 0}, {1, 0, 2, 0}}, 2, {"partition 1", "empty"});
  }
  CATCH_SECTION("no servers") {
    refuse({{0, 0, 8, 0}, {1, 0, 2, 0}}, 0, {"no servers"});
  }
}

CATCH_TEST_CASE("Sizes that overflow or exceed the limits are refused without overflowing",
                "[common][shard_map][limits]") {
  // 3 x (2^62 + 1) wraps int64 to a negative count; 2^32 x 2^32 wraps to 0.
  for (const TensorInfo& t :
       {Tensor("huge", {3, (int64_t{1} << 62) + 1}), Tensor("zero", {1ll << 32, 1ll << 32})}) {
    CATCH_CHECK_FALSE(t.CheckedNumel().has_value());
    CATCH_CHECK(t.numel() == std::numeric_limits<int64_t>::max());
    const Status status = ValidateSignature({t});
    CATCH_CHECK(status.code() == Status::Code::kInvalidArgument);
    CATCH_CHECK(Contains(status.message(), t.name + " ["));
  }
  // Elements that fit in int64 whose bytes do not fit in uint64.
  CATCH_CHECK(Contains(ValidateSignature({Tensor("big", {1ll << 31, 1ll << 31, 8})}).message(),
                       "more elements than can be counted"));
  // The sum over tensors is checked too.
  const Status sum = ValidateSignature({Tensor("a", {1ll << 61}), Tensor("b", {1ll << 61})});
  CATCH_CHECK(Contains(sum.message(), "b [2305843009213693952]"));
  // max_model_bytes: bytes of float32 over every tensor.
  CATCH_CHECK(ValidateSignature({Tensor("a", {256}), Tensor("b", {256})}, 2048).ok());
  const Status over = ValidateSignature({Tensor("a", {256}), Tensor("b", {257})}, 2048);
  CATCH_CHECK(over.code() == Status::Code::kResourceExhausted);
  CATCH_CHECK(
      Contains(over.message(), "2052 bytes at parameter b [257] float32, more than max_model_bytes (2048)"));
  CATCH_CHECK(ValidateSignature(std::vector<TensorInfo>(kMaxTensors + 1, Tensor("t", {1}))).code() ==
              Status::Code::kResourceExhausted);
  // Partitions are counted before any is built.
  CATCH_CHECK(*CountPartitions({Tensor("a", {10}), Tensor("b", {4})}, 16) == 4);
  const auto too_many = CountPartitions({Tensor("w", {static_cast<int64_t>(kMaxPartitions) + 1})}, 4);
  CATCH_CHECK(too_many.status().code() == Status::Code::kResourceExhausted);
  CATCH_CHECK(Contains(too_many.status().message(), "raise partition_bytes"));
  CATCH_CHECK(
      ShardMap::Build({Tensor("w", {static_cast<int64_t>(kMaxPartitions) + 1})}, 1, 4).status().code() ==
      Status::Code::kResourceExhausted);
}

CATCH_TEST_CASE("ValidateSignature names the offending tensor", "[common][shard_map]") {
  CATCH_CHECK(ValidateSignature({Tensor("a", {2, 3}), Tensor("b", {3})}).ok());

  const Status duplicate =
      ValidateSignature({Tensor("a", {2}), Tensor("layer.w", {3}), Tensor("layer.w", {3})});
  CATCH_CHECK(duplicate.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(duplicate.message(), "layer.w"));

  const Status half = ValidateSignature({Tensor("a", {2}), Tensor("emb", {4}, wire::DType::F16)});
  CATCH_CHECK(half.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(half.message(), "emb"));
  CATCH_CHECK(Contains(half.message(), "float16"));

  const Status negative = ValidateSignature({Tensor("neg", {2, -1})});
  CATCH_CHECK(negative.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(negative.message(), "neg"));

  CATCH_CHECK(ValidateSignature({}).code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(ValidateSignature({Tensor("", {1})}).code() == Status::Code::kInvalidArgument);
}

// Found by fuzzing: "w\0a" and "w\0b" are distinct names here, but they went on the wire as C
// strings, both "w", and every server refused the map with a duplicate name.
CATCH_TEST_CASE("A parameter name with a NUL or another control character is refused",
                "[common][shard_map]") {
  const Status nul = ValidateSignature({Tensor("a", {2}), Tensor(std::string("w\0b", 3), {3})});
  CATCH_CHECK(nul.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(nul.message(), "parameter 1"));
  CATCH_CHECK(Contains(nul.message(), "0x00 at byte 1"));
  CATCH_CHECK(ValidateSignature({Tensor("tab\there", {1})}).code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(ValidateSignature({Tensor("caf\xc3\xa9.weight", {1})}).ok());  // UTF-8 is fine
}

CATCH_TEST_CASE("A name goes on the wire whole, whatever bytes it holds", "[common][shard_map]") {
  const std::vector<TensorInfo> tensors = {Tensor(std::string("w\0b", 3), {3}), Tensor("b", {2})};
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(wire::CreateRegisterModel(fbb, SignatureToWire(fbb, tensors)));
  const auto* body = flatbuffers::GetRoot<wire::RegisterModel>(fbb.GetBufferPointer());
  const std::vector<TensorInfo> back = SignatureFromWire(*body->signature());
  CATCH_REQUIRE(back.size() == 2);
  CATCH_CHECK(back[0].name == tensors[0].name);
  CATCH_CHECK(back[0].shape == tensors[0].shape);
}

CATCH_TEST_CASE("A signature listing one shared TensorSpec many times is refused before it is copied",
                "[common][shard_map]") {
  // What a hostile RegisterModel did: a valid FlatBuffer whose tensor list names one table again
  // and again, so that 800 KB claimed 163 MB of names and shapes.
  auto shared = [](size_t times, const std::string& name, const std::vector<int64_t>& shape) {
    auto fbb = std::make_unique<flatbuffers::FlatBufferBuilder>();
    auto spec = wire::CreateTensorSpecDirect(*fbb, name.c_str(), &shape, wire::DType::F32);
    std::vector<flatbuffers::Offset<wire::TensorSpec>> specs(times, spec);
    fbb->Finish(wire::CreateRegisterModel(*fbb, fbb->CreateVector(specs)));
    return fbb;
  };
  auto claims = [](const flatbuffers::FlatBufferBuilder& fbb) {
    const auto* body = flatbuffers::GetRoot<wire::RegisterModel>(fbb.GetBufferPointer());
    return CheckSignatureClaims(*body->signature(), fbb.GetSize());
  };
  const auto many = shared(kMaxTensors + 1, "w", {1});
  const Status too_many = claims(*many);
  CATCH_CHECK(too_many.code() == Status::Code::kResourceExhausted);
  CATCH_CHECK(Contains(too_many.message(), "lists 65537 parameter tensors; at most 65536"));
  const auto long_names = shared(1000, std::string(200, 'n'), {3, 4, 5});
  const Status beyond = claims(*long_names);
  CATCH_CHECK(beyond.code() == Status::Code::kInvalidArgument);
  CATCH_CHECK(Contains(beyond.message(), "claim more bytes of names and shapes than the"));
  // An ordinary signature, and a shared entry that claims no more than the message holds, pass
  // (ValidateSignature then finds the repeated name).
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(wire::CreateRegisterModel(
      fbb, SignatureToWire(fbb, {Tensor("fc.weight", {10, 784}), Tensor("fc.bias", {10})})));
  CATCH_CHECK(claims(fbb).ok());
  CATCH_CHECK(claims(*shared(3, "w", {1})).ok());
}

CATCH_TEST_CASE("CompareSignatures names the first differing tensor", "[common][shard_map]") {
  const std::vector<TensorInfo> expected = {Tensor("fc1.weight", {4, 3}), Tensor("fc1.bias", {4}),
                                            Tensor("fc2.weight", {2, 4})};
  CATCH_CHECK(CompareSignatures(expected, expected).ok());

  auto differs = [&](const std::vector<TensorInfo>& actual, const std::vector<std::string>& parts) {
    const Status status = CompareSignatures(expected, actual);
    CATCH_REQUIRE_FALSE(status.ok());
    CATCH_CHECK(status.code() == Status::Code::kFailedPrecondition);
    for (const std::string& part : parts) {
      CATCH_INFO("message: " << status.message() << "; expected to contain: " << part);
      CATCH_CHECK(Contains(status.message(), part));
    }
  };
  CATCH_SECTION("shape") {
    std::vector<TensorInfo> actual = expected;
    actual[1].shape = {5};
    actual[2].shape = {3, 4};  // a later difference must not be the one reported
    differs(actual, {"#1", "fc1.bias [4]", "fc1.bias [5]"});
  }
  CATCH_SECTION("name") {
    std::vector<TensorInfo> actual = expected;
    actual[2].name = "head.weight";
    differs(actual, {"#2", "fc2.weight", "head.weight"});
  }
  CATCH_SECTION("dtype") {
    std::vector<TensorInfo> actual = expected;
    actual[0].dtype = wire::DType::F64;
    differs(actual, {"#0", "fc1.weight", "float64"});
  }
  CATCH_SECTION("missing") {
    std::vector<TensorInfo> actual(expected.begin(), expected.end() - 1);
    differs(actual, {"missing fc2.weight", "has 2 tensors, expected 3"});
  }
  CATCH_SECTION("extra") {
    std::vector<TensorInfo> actual = expected;
    actual.push_back(Tensor("fc3.bias", {7}));
    differs(actual, {"extra fc3.bias", "has 4 tensors, expected 3"});
  }
}

}  // namespace
}  // namespace hetps
