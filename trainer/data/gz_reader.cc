#include "trainer/data/gz_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace hetps {
namespace {

// gzread takes an unsigned length; large calls keep the 47 MB of Fashion-MNIST's training pixels
// to a few dozen calls, and the 1 MiB input buffer keeps read(2) calls large as well.
constexpr unsigned kReadChunkBytes = 16u << 20;
constexpr unsigned kGzInputBufferBytes = 1u << 20;

}  // namespace

Result<GzReader> GzReader::Open(const std::string& path, const std::string& missing_hint) {
  // A failed stat (e.g. no permission on the directory) is left for gzopen to report with errno.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) {
    return Status::NotFound("missing data file " + path + missing_hint);
  }
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(path + ": is a directory, not a data file");
  }
  std::unique_ptr<gzFile_s, GzCloser> handle(gzopen(path.c_str(), "rb"));
  if (!handle) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(handle.get(), kGzInputBufferBytes);
  return GzReader(std::move(handle), path);
}

bool GzReader::gzipped() const {
  return gzdirect(handle_.get()) == 0;
}

// zlib's message without the "<path>: " it puts in front, since ours names the path already.
std::string GzReader::ZlibMessage(int* errnum) const {
  std::string message = gzerror(handle_.get(), errnum);
  const std::string prefix = path_ + ": ";
  if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
  return message;
}

Status GzReader::ZlibError(const std::string& during) const {
  int errnum = Z_OK;
  const std::string message = ZlibMessage(&errnum);
  if (errnum == Z_ERRNO) return Status::IoError(path_ + ": reading " + during + ": " + std::strerror(errno));
  if (errnum != Z_OK) return Error("corrupt gzip data while reading " + during + ": " + message);
  return Status::Ok();
}

Result<size_t> GzReader::ReadSome(void* destination, size_t bytes, const std::string& what) {
  auto* out = static_cast<unsigned char*>(destination);
  size_t got = 0;
  while (got < bytes) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes - got, kReadChunkBytes));
    const int n = gzread(handle_.get(), out + got, chunk);
    if (n < 0) return ZlibError(what);
    if (n == 0) {
      // The end, or an error zlib noticed at it (a damaged trailer).
      HETPS_RETURN_IF_ERROR(ZlibError(what));
      break;
    }
    got += static_cast<size_t>(n);
  }
  return got;
}

Status GzReader::ReadExactly(void* destination, size_t bytes, const std::string& what) {
  auto* out = static_cast<unsigned char*>(destination);
  size_t got = 0;
  while (got < bytes) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes - got, kReadChunkBytes));
    const int n = gzread(handle_.get(), out + got, chunk);
    if (n < 0) return ZlibError(what);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == bytes) return Status::Ok();
  return Truncated(bytes, got, what);
}

// A short read: the file ended early, or the operating system failed us part way.
Status GzReader::Truncated(size_t expected_bytes, size_t got_bytes, const std::string& what) const {
  int errnum = Z_OK;
  const std::string message = ZlibMessage(&errnum);
  if (errnum == Z_ERRNO) return ZlibError(what);
  std::string problem = "truncated: expected " + std::to_string(expected_bytes) + " bytes of " + what +
                        ", got " + std::to_string(got_bytes);
  if (errnum != Z_OK) problem += " (" + message + ")";
  return Error(problem);
}

// Reading past the payload also makes zlib check the gzip trailer's CRC and length, which
// catches corruption that would otherwise go unnoticed in the data.
Status GzReader::ExpectEnd(const std::string& payload) {
  unsigned char extra = 0;
  const int n = gzread(handle_.get(), &extra, 1);
  if (n > 0) return Error("unexpected data after " + payload);
  if (n < 0) return ZlibError("the end of the file");
  int errnum = Z_OK;
  const std::string message = ZlibMessage(&errnum);
  if (errnum != Z_OK) return Error("damaged gzip trailer: " + message);
  return Status::Ok();
}

}  // namespace hetps
