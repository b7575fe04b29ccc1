// Checksums of checkpoint files: CRC-32 (the IEEE polynomial of zip and PNG, computed by zlib),
// extended piece by piece as a file is written. Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace hetps {

// The CRC-32 of `size` bytes at `data` following bytes whose CRC-32 was `crc` (0 to start).
uint32_t ExtendCrc32(uint32_t crc, const void* data, size_t size);
inline uint32_t Crc32(const void* data, size_t size) {
  return ExtendCrc32(0, data, size);
}

// "crc32:1a2b3c4d", as manifests record it.
std::string FormatCrc32(uint32_t crc);

// FormatCrc32 of the whole file at `path` (a TorchScript model, say): NotFound or IoError naming
// the file when it cannot be read.
Result<std::string> FileChecksum(const std::string& path);

}  // namespace hetps
