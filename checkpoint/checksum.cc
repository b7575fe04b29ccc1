#include "checkpoint/checksum.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

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

Result<std::string> FileChecksum(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    const int error = errno;
    const std::string why = "cannot read " + path + ": " + std::strerror(error);
    return error == ENOENT ? Status::NotFound(why) : Status::IoError(why);
  }
  std::vector<unsigned char> buffer(1 << 20);
  uint32_t crc = 0;
  while (size_t got = std::fread(buffer.data(), 1, buffer.size(), file.get()))
    crc = ExtendCrc32(crc, buffer.data(), got);
  if (std::ferror(file.get())) return Status::IoError("cannot read " + path + ": read error");
  return FormatCrc32(crc);
}

}  // namespace hetps
