#include "checkpoint/checksum.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace hetps {

uint32_t ExtendCrc32(uint32_t crc, const void* data, size_t size) {
  const auto* bytes = static_cast<const Bytef*>(data);
  // zlib takes the length as uInt; feed larger buffers in pieces.
  while (size > 0) {
    const size_t piece = std::min<size_t>(size, 1u << 30);
    crc = static_cast<uint32_t>(::crc32(crc, bytes, static_cast<uInt>(piece)));
    bytes += piece;
    size -= piece;
  }
  return crc;
}

std::string FormatCrc32(uint32_t crc) {
  char text[24];
  std::snprintf(text, sizeof(text), "crc32:%08x", crc);
  return text;
}

}  // namespace hetps
