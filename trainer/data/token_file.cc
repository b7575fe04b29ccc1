#include "trainer/data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trainer/data/npy.h"

namespace hetps {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Little-endian loads, whatever the host's byte order.
uint32_t Load(const uint8_t* p, TokenDType dtype) {
  if (dtype == TokenDType::kUInt16) return static_cast<uint32_t>(p[0] | (p[1] << 8));
  return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t{p[3]} << 24);
}

struct Layout {
  TokenDType dtype = TokenDType::kUInt16;
  uint64_t offset = 0;  // of the first id
  uint64_t tokens = 0;
};

Result<Layout> NpyLayout(const std::string& path, uint64_t file_bytes, std::optional<TokenDType> wanted) {
  Layout layout;
  HETPS_ASSIGN_OR_RETURN(NpyArray header, ReadNpyHeader(path, &layout.offset));
  if (header.kind != 'u' || (header.width != 2 && header.width != 4)) {
    return Status::InvalidArgument(path + ": an array of " + std::string(1, header.kind) +
                                   std::to_string(header.width * 8) +
                                   " values; token ids are uint16 or uint32 (numpy.uint16, numpy.uint32)");
  }
  if (header.shape.size() != 1) {
    return Status::InvalidArgument(path + ": a " + std::to_string(header.shape.size()) +
                                   "-D array; token ids are one flat 1-D array");
  }
  layout.dtype = header.width == 2 ? TokenDType::kUInt16 : TokenDType::kUInt32;
  if (wanted && *wanted != layout.dtype) {
    return Status::InvalidArgument(path + ": holds " + TokenDTypeName(layout.dtype) +
                                   " ids but data.dtype is " + TokenDTypeName(*wanted));
  }
  layout.tokens = static_cast<uint64_t>(header.shape[0]);
  const uint64_t data_bytes = file_bytes - std::min(file_bytes, layout.offset);
  if (data_bytes != layout.tokens * header.width) {
    return Status::InvalidArgument(path + ": its header promises " + std::to_string(layout.tokens) +
                                   " ids (" + std::to_string(layout.tokens * header.width) +
                                   " bytes) but it holds " + std::to_string(data_bytes) +
                                   " bytes of data: truncated or damaged");
  }
  return layout;
}

Result<Layout> RawLayout(const std::string& path, uint64_t file_bytes, std::optional<TokenDType> dtype) {
  if (!dtype) {
    return Status::InvalidArgument(path +
                                   ": a raw token file needs its id type: set data.dtype (uint16 or uint32) "
                                   "or put a vocab.json naming it beside the file");
  }
  Layout layout;
  layout.dtype = *dtype;
  const uint64_t width = TokenDTypeBytes(*dtype);
  if (file_bytes % width != 0) {
    return Status::InvalidArgument(path + ": " + std::to_string(file_bytes) +
                                   " bytes is not a whole number of " + TokenDTypeName(*dtype) + " ids (" +
                                   std::to_string(width) + " bytes each): truncated, or not a file of " +
                                   TokenDTypeName(*dtype) + " ids");
  }
  layout.tokens = file_bytes / width;
  return layout;
}

}  // namespace

const char* TokenDTypeName(TokenDType dtype) {
  return dtype == TokenDType::kUInt16 ? "uint16" : "uint32";
}

size_t TokenDTypeBytes(TokenDType dtype) {
  return dtype == TokenDType::kUInt16 ? 2 : 4;
}

Result<TokenDType> ParseTokenDType(const std::string& name, const std::string& where) {
  if (name == "uint16") return TokenDType::kUInt16;
  if (name == "uint32") return TokenDType::kUInt32;
  return Status::InvalidArgument(where + ": '" + name + "' is not a token id type; allowed: uint16, uint32");
}

Result<std::shared_ptr<const TokenFile>> TokenFile::Open(const std::string& path,
                                                         std::optional<TokenDType> dtype) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return Status::NotFound("missing token file " + path);
    return Status::IoError(path + ": " + std::strerror(errno));
  }
  const uint64_t file_bytes = static_cast<uint64_t>(info.st_size);
  Layout layout;
  if (EndsWith(path, ".npy")) {
    HETPS_ASSIGN_OR_RETURN(layout, NpyLayout(path, file_bytes, dtype));
  } else {
    HETPS_ASSIGN_OR_RETURN(layout, RawLayout(path, file_bytes, dtype));
  }
  if (layout.tokens == 0) return Status::InvalidArgument(path + ": holds no token ids");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  void* mapping = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file
  if (mapping == MAP_FAILED) return Status::IoError(path + ": cannot map: " + std::strerror(map_errno));
  // Windows are read at random places; the kernel's read-ahead for sequential reads would waste I/O.
  ::madvise(mapping, file_bytes, MADV_RANDOM);
  std::shared_ptr<TokenFile> file(new TokenFile());
  file->path_ = path;
  file->dtype_ = layout.dtype;
  file->mapping_ = mapping;
  file->mapping_bytes_ = file_bytes;
  file->ids_ = static_cast<const uint8_t*>(mapping) + layout.offset;
  file->tokens_ = layout.tokens;
  return std::shared_ptr<const TokenFile>(std::move(file));
}

TokenFile::~TokenFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
}

uint32_t TokenFile::At(uint64_t position) const {
  return Load(ids_ + position * TokenDTypeBytes(dtype_), dtype_);
}

void TokenFile::Read(uint64_t start, size_t count, int64_t* out) const {
  const size_t width = TokenDTypeBytes(dtype_);
  uint64_t position = start;
  for (size_t i = 0; i < count; ++i) {
    out[i] = Load(ids_ + position * width, dtype_);
    if (++position == tokens_) position = 0;
  }
}

std::optional<uint64_t> TokenFile::FindAtOrAbove(uint32_t limit, uint64_t start) const {
  // One pass in order: tell the kernel, then go back to random access for the windows.
  ::madvise(mapping_, mapping_bytes_, MADV_SEQUENTIAL);
  std::optional<uint64_t> found;
  for (uint64_t i = start; i < tokens_; ++i) {
    if (At(i) >= limit) {
      found = i;
      break;
    }
  }
  ::madvise(mapping_, mapping_bytes_, MADV_RANDOM);
  return found;
}

uint32_t TokenFile::MaxToken() const {
  ::madvise(mapping_, mapping_bytes_, MADV_SEQUENTIAL);
  uint32_t largest = 0;
  for (uint64_t i = 0; i < tokens_; ++i) largest = std::max(largest, At(i));
  ::madvise(mapping_, mapping_bytes_, MADV_RANDOM);
  return largest;
}

}  // namespace hetps
