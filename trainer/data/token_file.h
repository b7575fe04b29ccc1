// TokenFile: a file of token ids mapped read-only into memory, never read whole: a flat file of
// little-endian uint16 or uint32 ids (as nanoGPT's prepare.py writes train.bin and val.bin), or a
// 1-D NumPy .npy array of either type. The kernel pages the ids in as windows are read and may
// drop them again, so a corpus larger than the machine's memory works.
//
// Immutable once opened: any number of threads may read one TokenFile at once. The mapping lives
// as long as the TokenFile (shared by the datasets that view it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"

namespace hetps {

enum class TokenDType { kUInt16, kUInt32 };

const char* TokenDTypeName(TokenDType dtype);  // "uint16", "uint32"
size_t TokenDTypeBytes(TokenDType dtype);      // 2, 4
// InvalidArgument naming `where` (e.g. "data.dtype") for anything but uint16 and uint32.
Result<TokenDType> ParseTokenDType(const std::string& name, const std::string& where);

class TokenFile {
 public:
  // Maps `path`. A file named *.npy is a NumPy array: it must be 1-D uint16 or uint32, and
  // `dtype`, when given, must match it. Any other file is raw ids of `dtype` (required).
  // NotFound for a missing file; InvalidArgument naming the file when it is empty, is not a whole
  // number of ids (truncated), or is an .npy whose header is damaged, whose type or shape is
  // wrong, or whose data is shorter or longer than its header says.
  static Result<std::shared_ptr<const TokenFile>> Open(const std::string& path,
                                                       std::optional<TokenDType> dtype);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const std::string& path() const { return path_; }
  TokenDType dtype() const { return dtype_; }
  uint64_t size() const { return tokens_; }  // ids in the file

  uint32_t At(uint64_t position) const;  // position < size()
  // Copies `count` ids from `start` on to `out`, read circularly: after the last id comes the
  // first again. start < size().
  void Read(uint64_t start, size_t count, int64_t* out) const;
  // The first position from `start` on whose id is `limit` or more; nullopt when none. Reads the
  // file from there to its end once, in order.
  std::optional<uint64_t> FindAtOrAbove(uint32_t limit, uint64_t start = 0) const;
  // The largest id in the file (reads all of it once).
  uint32_t MaxToken() const;

 private:
  TokenFile() = default;

  std::string path_;
  TokenDType dtype_ = TokenDType::kUInt16;
  void* mapping_ = nullptr;  // the whole file
  size_t mapping_bytes_ = 0;
  const uint8_t* ids_ = nullptr;  // the first id, past an .npy header
  uint64_t tokens_ = 0;
};

}  // namespace hetps
