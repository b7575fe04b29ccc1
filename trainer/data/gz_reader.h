// GzReader: a file read through zlib, which reads gzipped and plain files alike, with errors
// that name the file. Owned by one thread at a time.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"

namespace hetps {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

class GzReader {
 public:
  // NotFound (with `missing_hint` appended) when the file does not exist, IoError when it
  // cannot be opened.
  static Result<GzReader> Open(const std::string& path, const std::string& missing_hint = "");

  const std::string& path() const { return path_; }
  bool gzipped() const;  // known after the first read

  // Reads exactly `bytes` bytes; InvalidArgument "truncated: expected N bytes of WHAT, got M"
  // when the file ends first, or the zlib / operating-system error.
  Status ReadExactly(void* destination, size_t bytes, const std::string& what);
  // Reads up to `bytes`; the count read (0 at the end), or the error.
  Result<size_t> ReadSome(void* destination, size_t bytes, const std::string& what);
  // InvalidArgument "unexpected data after PAYLOAD" unless the file ends here; for gzip files
  // this also checks the trailer's CRC and length.
  Status ExpectEnd(const std::string& payload);

  Status Error(const std::string& problem) const { return Status::InvalidArgument(path_ + ": " + problem); }

 private:
  GzReader(std::unique_ptr<gzFile_s, GzCloser> handle, std::string path)
      : handle_(std::move(handle)), path_(std::move(path)) {}
  std::string ZlibMessage(int* errnum) const;
  Status ZlibError(const std::string& during) const;
  Status Truncated(size_t expected_bytes, size_t got_bytes, const std::string& what) const;

  std::unique_ptr<gzFile_s, GzCloser> handle_;
  std::string path_;
};

}  // namespace hetps
