// ShardMap: how a model's tensors are cut into partitions and which server owns each.
//
// Built once by the scheduler (ShardMap::Build) and sent to every member, which rebuilds it from
// the wire (ShardMap::FromWire, validating it). Immutable after construction; safe to share
// between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

// Most tensors and partitions a model may have: with them the shard map stays well inside the
// largest envelope (kDefaultMaxEnvelopeBytes).
constexpr size_t kMaxTensors = 1u << 16;
constexpr uint64_t kMaxPartitions = uint64_t{1} << 18;

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  wire::DType dtype = wire::DType::F32;

  // Elements, or nothing when a dimension is negative or the product does not fit in int64.
  std::optional<int64_t> CheckedNumel() const;
  // Elements of a validated tensor (ValidateSignature); saturates at INT64_MAX, never overflows.
  int64_t numel() const;
  // "fc1.weight [512, 784] float32"
  std::string ToString() const;
};

struct PartitionInfo {
  uint32_t id = 0;      // index in ShardMap::partitions()
  uint32_t tensor = 0;  // index in ShardMap::tensors()
  uint64_t offset = 0;  // first element within the flattened tensor
  uint64_t length = 0;  // elements
  uint32_t server = 0;  // owning server's rank
};

// Validates a model signature: one to kMaxTensors tensors, unique non-empty names without control
// characters, non-negative shape dimensions whose product fits in int64, float32 parameters
// (servers hold float32).
// InvalidArgument naming the tensor; ResourceExhausted when the float32 bytes of all tensors
// together exceed `max_model_bytes` (summed without overflow).
Status ValidateSignature(const std::vector<TensorInfo>& tensors, uint64_t max_model_bytes = UINT64_MAX);

// Float32 bytes of a validated signature.
uint64_t SignatureBytes(const std::vector<TensorInfo>& tensors);

// The partitions a validated signature makes with `partition_bytes` (>= 4); ResourceExhausted
// when more than kMaxPartitions.
Result<uint64_t> CountPartitions(const std::vector<TensorInfo>& tensors, uint64_t partition_bytes);

// OK when `actual` equals `expected`; otherwise FailedPrecondition naming the first differing
// tensor (by position) and how it differs.
Status CompareSignatures(const std::vector<TensorInfo>& expected, const std::vector<TensorInfo>& actual);

// Before SignatureFromWire copies a received signature: at most kMaxTensors tensors, and names and
// shapes (their bytes, 8 per dimension) that add up to no more than `message_bytes`, the size of
// the message they came in. A verified FlatBuffer may list one TensorSpec many times (shared
// sub-tables), claiming far more than it holds: ResourceExhausted for too many tensors,
// InvalidArgument for claims beyond the message, checked without copying anything.
Status CheckSignatureClaims(const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>& specs,
                            size_t message_bytes);
std::vector<TensorInfo> SignatureFromWire(
    const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>& specs);
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>> SignatureToWire(
    flatbuffers::FlatBufferBuilder& fbb, const std::vector<TensorInfo>& tensors);

class ShardMap {
 public:
  ShardMap() = default;

  // Cuts every tensor into partitions of at most `partition_bytes` and assigns them to
  // `num_servers` servers: largest first onto the least-loaded server (ties: lowest rank; equal
  // sizes: lowest partition id), so the result is deterministic and every server's load is within
  // one partition of the ideal. InvalidArgument for an invalid signature or arguments,
  // ResourceExhausted for more than kMaxPartitions partitions.
  static Result<ShardMap> Build(std::vector<TensorInfo> tensors, uint32_t num_servers,
                                uint64_t partition_bytes);

  // Rebuilds a map received from the scheduler, checking its signature (ValidateSignature) and
  // that partitions tile every tensor exactly and name existing servers. Protocol error naming
  // the inconsistency otherwise.
  static Result<ShardMap> FromWire(const wire::ShardMap& map);

  // The tensors and partitions, for a wire::ShardMap being built in `fbb`.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>> TensorsToWire(
      flatbuffers::FlatBufferBuilder& fbb) const;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::PartitionSpec>>> PartitionsToWire(
      flatbuffers::FlatBufferBuilder& fbb) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::vector<PartitionInfo>& partitions() const { return partitions_; }
  uint32_t num_servers() const { return num_servers_; }

  // Ids of the partitions owned by `server`, ascending.
  std::vector<uint32_t> PartitionsOf(uint32_t server) const;
  // Bytes of float32 elements assigned to `server`.
  uint64_t BytesOf(uint32_t server) const;
  bool Contains(uint32_t partition) const { return partition < partitions_.size(); }

 private:
  std::vector<TensorInfo> tensors_;
  std::vector<PartitionInfo> partitions_;
  uint32_t num_servers_ = 0;
};

}  // namespace hetps
