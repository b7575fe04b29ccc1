// Model export: the whole model as one safetensors file, every tensor of the shard map under its
// own name (the names of the PyTorch module's state_dict, e.g. conv1.weight), float32, in its
// model shape, assembled from the partitions the servers hold. Python opens it with
// safetensors.torch.load_file and module.load_state_dict.
//
// Stateless functions; safe from any thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/file_system.h"
#include "checkpoint/safetensors_writer.h"
#include "common/shard_map.h"

namespace hetps {

// A tensor of the model that no server holds (a buffer that is not a parameter, such as
// BatchNorm's running statistics), with its little-endian bytes.
struct ModelBuffer {
  TensorInfo info;
  std::string dtype;  // safetensors dtype: "F32", "I64", ...
  std::vector<uint8_t> bytes;
};

// The float32 weights (any alignment) of the partition named `name` (partition_names.h) of `length` elements,
// or an error naming what is missing.
using PartitionWeights = std::function<Result<const void*>(const std::string& name, uint64_t length)>;

// Writes the model to `path` atomically (a temporary file renamed into place): a reader sees the
// old file or the whole new one, with `buffers` after the servers' tensors. Errors name the
// partition that is missing or the file.
Result<WrittenFile> WriteModelFile(FileSystem& fs, const std::string& path,
                                   const std::vector<TensorInfo>& tensors,
                                   const std::vector<PartitionInfo>& partitions,
                                   const PartitionWeights& weights,
                                   std::map<std::string, std::string> metadata,
                                   const std::vector<ModelBuffer>& buffers = {});

// The model of a checkpoint loaded with LoadCheckpoint.
Result<WrittenFile> ExportCheckpoint(FileSystem& fs, const LoadedCheckpoint& checkpoint,
                                     const std::string& path);

}  // namespace hetps
