// Writes safetensors files: an 8-byte little-endian header length, a JSON header naming every
// tensor's dtype, shape and byte range (and a `__metadata__` map of strings), padded with spaces
// to a multiple of 8 bytes, then the tensors' raw little-endian bytes back to back.
//
// Streams the tensors from the caller's buffers (nothing is copied into one big buffer) and
// computes the file's CRC-32 on the way. Stateless; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/file_system.h"
#include "common/status.h"

namespace hetps {

// A tensor to write; its bytes belong to the caller and must stay valid during the write.
struct TensorView {
  std::string name;
  std::string dtype;           // a safetensors dtype: "F32", "I64", ...
  std::vector<int64_t> shape;  // [] for a scalar
  const void* data = nullptr;
  size_t bytes = 0;  // must be the product of `shape` times the dtype's size
};

struct WrittenFile {
  uint64_t bytes = 0;  // the whole file
  uint32_t crc32 = 0;  // of the whole file (checkpoint/checksum.h)
};

// Writes `tensors`, in the order given, and `metadata` to `path`, syncs and closes it.
// InvalidArgument naming the tensor for an empty, duplicate or reserved name ("__metadata__"),
// an unknown dtype or a byte count that does not match the shape; IoError from the file system.
Result<WrittenFile> WriteSafetensors(FileSystem& fs, const std::string& path,
                                     const std::map<std::string, std::string>& metadata,
                                     const std::vector<TensorView>& tensors);

}  // namespace hetps
