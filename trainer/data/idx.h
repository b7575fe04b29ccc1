// The IDX reader (the MNIST family's format: a magic number giving the element type and the
// number of dimensions, big-endian dimension sizes, then the elements), gzipped or plain.
// Free functions; safe to call from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/dataset.h"

namespace hetps {

// One IDX file's contents: elements converted to the host's byte order.
struct IdxArray {
  uint8_t type_code = 0;      // 0x08 ubyte, 0x09 byte, 0x0B short, 0x0C int, 0x0D float, 0x0E double
  std::vector<int64_t> dims;  // dims[0]: the samples
  std::vector<uint8_t> bytes;
};

// Reads `path`, checking the magic number, that the header's size fits in memory before
// anything that large is allocated, that the file holds exactly the elements it announces, and
// (gzip) its checksum. `what` names the file's role in errors ("images", "labels").
Result<IdxArray> ReadIdx(const std::string& path, const std::string& what, const ReadLimits& limits,
                         const std::string& missing_hint = "");

// A split from an IDX features file (at least 2 dimensions; ubyte features stay bytes, any
// other type becomes float32) and an IDX labels file (1 dimension, or 2 for float targets).
Result<HostDataset> LoadIdx(const DataOptions& options, const std::string& x_path, const std::string& y_path,
                            uint32_t classes, const ReadLimits& limits, const std::string& missing_hint = "");

}  // namespace hetps
