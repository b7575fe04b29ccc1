#include "tests/checkpoint/small_checkpoint.h"

#include <cstring>

#include "checkpoint/partition_names.h"

namespace hetps::testing {

SmallCheckpoint::SmallCheckpoint() {
  map = *ShardMap::Build({{"w", {10}, wire::DType::F32}, {"b", {3}, wire::DType::F32}}, 2, 6 * sizeof(float));
}

Manifest SmallCheckpoint::MakeManifest() const {
  Manifest m;
  m.mode = "sync";
  m.round = 7;
  m.servers = 2;
  m.partition_bytes = 6 * sizeof(float);
  m.tensors = map.tensors();
  m.partitions = map.partitions();
  m.job_yaml = "model: test\n";
  m.data.epoch = 1;
  m.data.completed = {{0, {0, 1, 2}}, {1, {4}}};
  m.data.partial = {{1, 2, 1100}};
  m.created_utc = UtcNow();
  return m;
}

std::vector<ServerState> SmallCheckpoint::States(float fill) {
  buffers.clear();
  for (const PartitionInfo& p : map.partitions())
    buffers.emplace_back(p.length, fill + static_cast<float>(p.id));
  std::vector<ServerState> states(2);
  for (uint32_t s = 0; s < 2; ++s) {
    states[s].rank = s;
    states[s].version = 7;
    states[s].round = 7;
    for (const PartitionInfo& p : map.partitions()) {
      if (p.server != s) continue;
      const std::vector<float>& b = buffers[p.id];
      states[s].tensors.push_back(
          {PartitionTensorName(map.tensors()[p.tensor].name, p.offset, p.offset + p.length),
           "F32",
           {static_cast<int64_t>(p.length)},
           b.data(),
           b.size() * sizeof(float)});
    }
  }
  return states;
}

float SmallCheckpoint::WeightOf(const LoadedCheckpoint& checkpoint, uint32_t id) const {
  const PartitionInfo& p = map.partitions()[id];
  const SafetensorsFile& file = checkpoint.files[p.server];
  const auto* t = file.Find(PartitionTensorName(map.tensors()[p.tensor].name, p.offset, p.offset + p.length));
  float value = 0;
  std::memcpy(&value, file.data(*t), sizeof(value));
  return value;
}

}  // namespace hetps::testing
