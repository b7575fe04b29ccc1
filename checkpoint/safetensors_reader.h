// Reads safetensors files defensively: every field of the header is checked before any tensor
// byte is trusted, so a truncated, corrupt or hostile file is refused with an error that names the
// file and what is wrong, and never read out of bounds. Checked: the header length (8 bytes,
// at most 100 MB, within the file), the header is a JSON object with no duplicate keys, every
// entry has exactly a known dtype, a shape of non-negative integers and data_offsets [begin, end]
// with end - begin = elements x dtype size, and the byte ranges tile the data exactly (no overlap,
// no gap, nothing beyond the file, nothing left over); `__metadata__` maps strings to strings.
//
// A SafetensorsFile owns the file's bytes; it is immutable once parsed and safe to share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/file_system.h"
#include "common/status.h"

namespace hetps {

class SafetensorsFile {
 public:
  struct Tensor {
    std::string name;
    std::string dtype;           // "F32", "I64", ...
    std::vector<int64_t> shape;  // [] for a scalar
    uint64_t elements = 0;
    uint64_t offset = 0;  // into data()
    uint64_t bytes = 0;
  };

  // Largest header accepted, as in the format's reference implementation.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Parses `bytes`, a whole file; `source` names it in errors (usually its path).
  // InvalidArgument "<source>: <what is wrong>" for anything the checks above refuse.
  static Result<SafetensorsFile> Parse(std::string bytes, const std::string& source);
  // Reads and parses the file at `path`; NotFound or IoError from the file system.
  static Result<SafetensorsFile> Read(FileSystem& fs, const std::string& path);

  const std::string& source() const { return source_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // In the order of their bytes in the file.
  const std::vector<Tensor>& tensors() const { return tensors_; }
  // The tensor called `name`, or nullptr.
  const Tensor* Find(const std::string& name) const;
  // The first byte of `tensor`'s data.
  const char* data(const Tensor& tensor) const { return bytes_.data() + data_start_ + tensor.offset; }
  uint64_t file_bytes() const { return bytes_.size(); }

 private:
  std::string source_;
  std::string bytes_;
  size_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<Tensor> tensors_;
  std::map<std::string, size_t> index_;
};

}  // namespace hetps
