#include "common/shard_map.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "common/dtype.h"

namespace hetps {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

}  // namespace

std::optional<int64_t> TensorInfo::CheckedNumel() const {
  int64_t product = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(product, d, &product)) return std::nullopt;
  }
  return product;
}

int64_t TensorInfo::numel() const {
  return CheckedNumel().value_or(std::numeric_limits<int64_t>::max());
}

std::string TensorInfo::ToString() const {
  return name + " " + ShapeString(shape) + " " + DTypeName(dtype);
}

Status ValidateSignature(const std::vector<TensorInfo>& tensors, uint64_t max_model_bytes) {
  if (tensors.empty()) return Status::InvalidArgument("the model has no parameters");
  if (tensors.size() > kMaxTensors) {
    return Status::ResourceExhausted("the model has " + std::to_string(tensors.size()) +
                                     " parameter tensors; at most " + std::to_string(kMaxTensors) +
                                     " are allowed");
  }
  std::set<std::string> names;
  uint64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    if (t.name.empty()) return Status::InvalidArgument("a model parameter has an empty name");
    // Names go into logs, JSON and checkpoint file headers, and a NUL would cut them short there.
    for (size_t at = 0; at < t.name.size(); ++at) {
      const auto byte = static_cast<unsigned char>(t.name[at]);
      if (byte < 0x20 || byte == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", byte);
        return Status::InvalidArgument("the name of parameter " + std::to_string(i) +
                                       " holds a control character (" + hex + " at byte " +
                                       std::to_string(at) + ")");
      }
    }
    if (!names.insert(t.name).second) {
      return Status::InvalidArgument("parameter name '" + t.name + "' appears twice");
    }
    for (int64_t d : t.shape) {
      if (d < 0) return Status::InvalidArgument("parameter " + t.ToString() + " has a negative dimension");
    }
    const std::optional<int64_t> numel = t.CheckedNumel();
    uint64_t tensor_bytes = 0;
    if (!numel || __builtin_mul_overflow(static_cast<uint64_t>(*numel), sizeof(float), &tensor_bytes) ||
        __builtin_add_overflow(bytes, tensor_bytes, &bytes)) {
      return Status::InvalidArgument("parameter " + t.ToString() + " has more elements than can be counted");
    }
    if (t.dtype != wire::DType::F32) {
      return Status::InvalidArgument("parameter " + t.ToString() +
                                     " is not float32; servers hold float32 parameters");
    }
    if (bytes > max_model_bytes) {
      return Status::ResourceExhausted("the model reaches " + std::to_string(bytes) + " bytes at parameter " +
                                       t.ToString() + ", more than max_model_bytes (" +
                                       std::to_string(max_model_bytes) + ")");
    }
  }
  return Status::Ok();
}

uint64_t SignatureBytes(const std::vector<TensorInfo>& tensors) {
  uint64_t bytes = 0;
  for (const TensorInfo& t : tensors) bytes += static_cast<uint64_t>(t.numel()) * sizeof(float);
  return bytes;
}

Result<uint64_t> CountPartitions(const std::vector<TensorInfo>& tensors, uint64_t partition_bytes) {
  const uint64_t elements_per_partition = partition_bytes / sizeof(float);
  if (elements_per_partition == 0) {
    return Status::InvalidArgument("partition_bytes: " + std::to_string(partition_bytes) +
                                   " is smaller than one float32 element");
  }
  uint64_t partitions = 0;
  for (const TensorInfo& t : tensors) {
    const auto numel = static_cast<uint64_t>(t.numel());
    // numel / e rounded up, without the overflow of numel + e - 1.
    partitions += numel / elements_per_partition + (numel % elements_per_partition != 0 ? 1 : 0);
    if (partitions > kMaxPartitions) {
      return Status::ResourceExhausted("the model makes more than " + std::to_string(kMaxPartitions) +
                                       " partitions of " + std::to_string(partition_bytes) +
                                       " bytes (reached at " + t.ToString() + "); raise partition_bytes");
    }
  }
  return partitions;
}

Status CompareSignatures(const std::vector<TensorInfo>& expected, const std::vector<TensorInfo>& actual) {
  const size_t common = std::min(expected.size(), actual.size());
  for (size_t i = 0; i < common; ++i) {
    const TensorInfo& e = expected[i];
    const TensorInfo& a = actual[i];
    if (e.name != a.name || e.shape != a.shape || e.dtype != a.dtype) {
      return Status::FailedPrecondition("tensor #" + std::to_string(i) + " differs: expected " +
                                        e.ToString() + ", got " + a.ToString());
    }
  }
  if (expected.size() != actual.size()) {
    const std::string first = expected.size() > actual.size() ? "missing " + expected[common].ToString()
                                                              : "extra " + actual[common].ToString();
    return Status::FailedPrecondition("model has " + std::to_string(actual.size()) + " tensors, expected " +
                                      std::to_string(expected.size()) + "; first difference: " + first);
  }
  return Status::Ok();
}

Status CheckSignatureClaims(const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>& specs,
                            size_t message_bytes) {
  if (specs.size() > kMaxTensors) {
    return Status::ResourceExhausted("the model lists " + std::to_string(specs.size()) +
                                     " parameter tensors; at most " + std::to_string(kMaxTensors) +
                                     " are allowed");
  }
  uint64_t claimed = 0;
  for (const wire::TensorSpec* spec : specs) {
    claimed += spec->name() == nullptr ? 0 : spec->name()->size();
    claimed += spec->shape() == nullptr ? 0 : uint64_t{8} * spec->shape()->size();
    if (claimed > message_bytes) {
      return Status::InvalidArgument("the model's " + std::to_string(specs.size()) +
                                     " tensors claim more bytes of names and shapes than the " +
                                     std::to_string(message_bytes) +
                                     "-byte message holds (its tensor list repeats shared entries)");
    }
  }
  return Status::Ok();
}

std::vector<TensorInfo> SignatureFromWire(
    const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>& specs) {
  std::vector<TensorInfo> tensors;
  tensors.reserve(specs.size());
  for (const wire::TensorSpec* spec : specs) {
    TensorInfo t;
    t.name = spec->name()->str();
    if (spec->shape() != nullptr) t.shape.assign(spec->shape()->begin(), spec->shape()->end());
    t.dtype = spec->dtype();
    tensors.push_back(std::move(t));
  }
  return tensors;
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>> SignatureToWire(
    flatbuffers::FlatBufferBuilder& fbb, const std::vector<TensorInfo>& tensors) {
  std::vector<flatbuffers::Offset<wire::TensorSpec>> specs;
  specs.reserve(tensors.size());
  for (const TensorInfo& t : tensors) {
    // The name with its length, not as a C string: a name is sent as it is, whatever it holds.
    auto name = fbb.CreateString(t.name);
    specs.push_back(wire::CreateTensorSpec(fbb, name, fbb.CreateVector(t.shape), t.dtype));
  }
  return fbb.CreateVector(specs);
}

Result<ShardMap> ShardMap::Build(std::vector<TensorInfo> tensors, uint32_t num_servers,
                                 uint64_t partition_bytes) {
  HETPS_RETURN_IF_ERROR(ValidateSignature(tensors));
  if (num_servers == 0) return Status::InvalidArgument("servers: 0; a job needs at least one server");
  HETPS_RETURN_IF_ERROR(CountPartitions(tensors, partition_bytes).status());
  const uint64_t elements_per_partition = partition_bytes / sizeof(float);
  ShardMap map;
  map.tensors_ = std::move(tensors);
  map.num_servers_ = num_servers;
  for (uint32_t t = 0; t < map.tensors_.size(); ++t) {
    const uint64_t numel = static_cast<uint64_t>(map.tensors_[t].numel());
    for (uint64_t offset = 0; offset < numel; offset += elements_per_partition) {
      PartitionInfo p;
      p.id = static_cast<uint32_t>(map.partitions_.size());
      p.tensor = t;
      p.offset = offset;
      p.length = std::min(elements_per_partition, numel - offset);
      map.partitions_.push_back(p);
    }
  }
  // Longest-processing-time-first greedy: each server ends within one partition of the mean.
  std::vector<uint32_t> order(map.partitions_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return map.partitions_[a].length > map.partitions_[b].length;
  });
  std::vector<uint64_t> load(num_servers, 0);
  for (uint32_t id : order) {
    const uint32_t target = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    map.partitions_[id].server = target;
    load[target] += map.partitions_[id].length;
  }
  return map;
}

Result<ShardMap> ShardMap::FromWire(const wire::ShardMap& wire_map) {
  ShardMap map;
  map.tensors_ = SignatureFromWire(*wire_map.tensors());
  Status valid = ValidateSignature(map.tensors_);
  if (!valid.ok()) return Status::Protocol("shard map: " + valid.message());
  if (wire_map.servers()->size() == 0) return Status::Protocol("shard map lists no servers");
  if (wire_map.partitions()->size() > kMaxPartitions) {
    return Status::Protocol("shard map has " + std::to_string(wire_map.partitions()->size()) +
                            " partitions; at most " + std::to_string(kMaxPartitions) + " are allowed");
  }
  map.num_servers_ = wire_map.servers()->size();
  std::vector<uint64_t> covered(map.tensors_.size(), 0);
  for (const wire::PartitionSpec* spec : *wire_map.partitions()) {
    PartitionInfo p;
    p.id = static_cast<uint32_t>(map.partitions_.size());
    p.tensor = spec->tensor();
    p.offset = spec->offset();
    p.length = spec->length();
    p.server = spec->server();
    const std::string name = "shard map partition " + std::to_string(p.id);
    if (p.tensor >= map.tensors_.size()) {
      return Status::Protocol(name + " names tensor " + std::to_string(p.tensor) + " of " +
                              std::to_string(map.tensors_.size()));
    }
    if (p.server >= map.num_servers_) {
      return Status::Protocol(name + " names server " + std::to_string(p.server) + " of " +
                              std::to_string(map.num_servers_));
    }
    if (p.length == 0) return Status::Protocol(name + " is empty");
    // Partitions of a tensor arrive in order and must tile it without gaps or overlaps.
    if (p.offset != covered[p.tensor]) {
      return Status::Protocol("shard map partition " + std::to_string(p.id) + " of " +
                              map.tensors_[p.tensor].name + " starts at " + std::to_string(p.offset) +
                              ", expected " + std::to_string(covered[p.tensor]));
    }
    // Checked before adding, so that lengths cannot wrap around to the tensor's size.
    if (p.length > static_cast<uint64_t>(map.tensors_[p.tensor].numel()) - covered[p.tensor]) {
      return Status::Protocol(name + " of " + std::to_string(p.length) + " elements runs past the end of " +
                              map.tensors_[p.tensor].name);
    }
    covered[p.tensor] += p.length;
    map.partitions_.push_back(p);
  }
  for (size_t t = 0; t < map.tensors_.size(); ++t) {
    if (covered[t] != static_cast<uint64_t>(map.tensors_[t].numel())) {
      return Status::Protocol("shard map covers " + std::to_string(covered[t]) + " of " +
                              std::to_string(map.tensors_[t].numel()) + " elements of " +
                              map.tensors_[t].name);
    }
  }
  return map;
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TensorSpec>>> ShardMap::TensorsToWire(
    flatbuffers::FlatBufferBuilder& fbb) const {
  return SignatureToWire(fbb, tensors_);
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::PartitionSpec>>> ShardMap::PartitionsToWire(
    flatbuffers::FlatBufferBuilder& fbb) const {
  std::vector<flatbuffers::Offset<wire::PartitionSpec>> specs;
  specs.reserve(partitions_.size());
  for (const PartitionInfo& p : partitions_) {
    specs.push_back(wire::CreatePartitionSpec(fbb, p.tensor, p.offset, p.length, p.server));
  }
  return fbb.CreateVector(specs);
}

std::vector<uint32_t> ShardMap::PartitionsOf(uint32_t server) const {
  std::vector<uint32_t> ids;
  for (const PartitionInfo& p : partitions_) {
    if (p.server == server) ids.push_back(p.id);
  }
  return ids;
}

uint64_t ShardMap::BytesOf(uint32_t server) const {
  uint64_t bytes = 0;
  for (const PartitionInfo& p : partitions_) {
    if (p.server == server) bytes += p.length * sizeof(float);
  }
  return bytes;
}

}  // namespace hetps
