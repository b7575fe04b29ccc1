// SmallCheckpoint: a small model (tensors w [10] and b [3]) sharded over two servers, and server
// states for a checkpoint of it whose partition p holds `fill + p` everywhere. For checkpoint
// tests; used by one test thread.
#pragma once

#include <cstdint>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/shard_map.h"

namespace hetps::testing {

struct SmallCheckpoint {
  SmallCheckpoint();

  // A manifest of the model (id 0, files not filled in).
  Manifest MakeManifest() const;
  // One state per server; the buffers stay valid until the next call.
  std::vector<ServerState> States(float fill);
  // The first weight of partition `id` in a loaded checkpoint.
  float WeightOf(const LoadedCheckpoint& checkpoint, uint32_t id) const;

  ShardMap map;
  std::vector<std::vector<float>> buffers;  // one per partition
};

}  // namespace hetps::testing
