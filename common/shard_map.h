// ShardMap: how a model's tensors are cut into partitions and which server owns each.
//
// Built once by the scheduler (ShardMap::Build) and sent to every member, which rebuilds it from
// the wire (ShardMap::FromWire, validating it). Immutable after construction; safe to share
// between threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  wire::DType dtype = wire::DType::F32;

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

// Validates a model signature: at least one tensor, unique non-empty names, non-negative shape
// dimensions, float32 parameters (servers hold float32). InvalidArgument naming the tensor.
Status ValidateSignature(const std::vector<TensorInfo>& tensors);

// OK when `actual` equals `expected`; otherwise FailedPrecondition naming the first differing
// tensor (by position) and how it differs.
Status CompareSignatures(const std::vector<TensorInfo>& expected, const std::vector<TensorInfo>& actual);

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
  // one partition of the ideal. InvalidArgument for an invalid signature or arguments.
  static Result<ShardMap> Build(std::vector<TensorInfo> tensors, uint32_t num_servers,
                                uint64_t partition_bytes);

  // Rebuilds a map received from the scheduler, checking that partitions tile every tensor exactly
  // and name existing servers. Protocol error naming the inconsistency otherwise.
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
