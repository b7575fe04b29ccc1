#include "trainer/model_fetcher.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>

#include "checkpoint/checksum.h"
#include "checkpoint/file_system.h"
#include "common/logging.h"

namespace hetps {
namespace {

constexpr char kCrcPrefix[] = "crc32:";
constexpr size_t kCrcPrefixLength = sizeof(kCrcPrefix) - 1;

// "crc32:" and eight lowercase hex digits, as FormatCrc32 writes: the only text that may become
// a file name in the cache.
bool IsCrc32Text(const std::string& text) {
  if (text.size() != kCrcPrefixLength + 8 || text.compare(0, kCrcPrefixLength, kCrcPrefix) != 0) return false;
  return std::all_of(text.begin() + kCrcPrefixLength, text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
  });
}

// A name for the temporary file that no other trainer, in this process or another, picks.
std::string PartSuffix() {
  std::random_device random;
  char text[48];
  std::snprintf(text, sizeof(text), ".part-%ld-%08x", static_cast<long>(::getpid()), random());
  return text;
}

}  // namespace

ModelFetcher::ModelFetcher(ControlChannel* control, Sender* sender, Options options)
    : control_(control), sender_(sender), options_(std::move(options)) {}

std::string ModelFetcher::Describe(const AnnouncedModelFile& file) const {
  return "the model file " + file.path + " from the scheduler at " + control_->scheduler_endpoint();
}

std::string ModelFetcher::CacheProblem(const AnnouncedModelFile& file) const {
  return "cannot keep " + Describe(file) + " in the cache directory " + options_.cache_dir +
         " (choose another with --model-cache)";
}

Result<std::string> ModelFetcher::Fetch(const AnnouncedModelFile& file) {
  used_cache_ = false;
  if (!IsCrc32Text(file.checksum)) {
    return Status::Protocol(Describe(file) + " comes with the checksum '" + file.checksum +
                            "', not crc32: and eight hex digits");
  }
  if (file.bytes > 0 && (file.piece_bytes == 0 || file.piece_bytes > kDefaultMaxEnvelopeBytes / 2)) {
    return Status::Protocol(Describe(file) + " comes in pieces of " + std::to_string(file.piece_bytes) +
                            " bytes, which no control message carries");
  }
  const std::string cached = JoinPath(options_.cache_dir, file.checksum.substr(kCrcPrefixLength) + ".pt");
  if (auto held = FileChecksum(cached); held.ok()) {
    if (*held == file.checksum) {
      used_cache_ = true;
      return cached;
    }
    HETPS_LOG(WARNING) << "the cached copy " << cached << " has the checksum " << *held << ", not "
                       << file.checksum << ": fetching " << Describe(file) << " again";
  }
  const std::string cache_problem = CacheProblem(file);
  FileSystem& fs = PosixFileSystem();
  HETPS_RETURN_IF_ERROR(fs.MakeDirs(options_.cache_dir).WithContext(cache_problem));
  const std::string part = cached + PartSuffix();
  auto out = fs.NewWritableFile(part);
  if (!out.ok()) return out.status().WithContext(cache_problem);
  Result<uint32_t> crc = Download(file, **out);
  Status written = crc.status();
  if (written.ok()) written = (*out)->Sync().WithContext(cache_problem);
  if (written.ok()) written = (*out)->Close().WithContext(cache_problem);
  if (written.ok() && FormatCrc32(*crc) != file.checksum) {
    written = Status::Internal(Describe(file) + " has the checksum " + FormatCrc32(*crc) +
                               " once whole, not the " + file.checksum + " the scheduler announced");
  }
  if (written.ok()) written = fs.Rename(part, cached).WithContext(cache_problem);
  if (!written.ok()) {
    out->reset();
    (void)fs.RemoveFile(part);
    return written;
  }
  // A crash now may lose the name, never leave a partial file under it.
  if (Status synced = fs.SyncDir(options_.cache_dir); !synced.ok()) HETPS_LOG(WARNING) << synced.message();
  return cached;
}

Result<uint32_t> ModelFetcher::Download(const AnnouncedModelFile& file, WritableFile& out) {
  uint32_t crc = 0;
  for (uint64_t offset = 0; offset < file.bytes;) {
    const uint64_t length = std::min(file.piece_bytes, file.bytes - offset);
    for (int attempt = 1;; ++attempt) {
      flatbuffers::FlatBufferBuilder fbb(64);
      auto body = wire::CreateModelFileRequest(fbb, offset, length, control_->served_receipt());
      auto reply = control_->Request(sender_->Seal(fbb, wire::Body::ModelFileRequest, body.Union()),
                                     wire::Body::ModelFilePiece, options_.request_timeout);
      if (!reply.ok()) return reply.status().WithContext("fetching " + Describe(file));
      ++requests_;
      const auto* piece = reply->body<wire::ModelFilePiece>();
      if (piece->offset() != offset) {
        // An answer to an earlier request that timed out: ask again.
        if (attempt < options_.max_attempts) continue;
        return Status::Protocol(Describe(file) + " came in other pieces than asked for");
      }
      if (piece->bytes() == nullptr || piece->bytes()->size() != length) {
        return Status::Protocol(Describe(file) + ": asked for " + std::to_string(length) +
                                " bytes from byte " + std::to_string(offset) + ", received " +
                                std::to_string(piece->bytes() ? piece->bytes()->size() : 0));
      }
      bytes_received_ += length;
      const uint32_t piece_crc = Crc32(piece->bytes()->data(), length);
      if (piece_crc != piece->crc32()) {
        ++checksum_failures_;
        HETPS_LOG(WARNING) << Describe(file) << ": the piece of " << length << " bytes from byte " << offset
                           << " failed its checksum (" << FormatCrc32(piece_crc) << ", expected "
                           << FormatCrc32(piece->crc32()) << "); asking again (attempt " << attempt << " of "
                           << options_.max_attempts << ")";
        if (attempt < options_.max_attempts) continue;
        return Status::Internal(Describe(file) + ": the piece of " + std::to_string(length) +
                                " bytes from byte " + std::to_string(offset) + " failed its checksum " +
                                std::to_string(options_.max_attempts) +
                                " times in a row; the link to the scheduler corrupts data");
      }
      HETPS_RETURN_IF_ERROR(out.Append(piece->bytes()->data(), length).WithContext(CacheProblem(file)));
      crc = ExtendCrc32(crc, piece->bytes()->data(), length);
      break;
    }
    offset += length;
  }
  return crc;
}

std::string DefaultModelCacheDir(const char* xdg_cache_home, const char* home) {
  if (xdg_cache_home != nullptr && xdg_cache_home[0] == '/') return JoinPath(xdg_cache_home, "hetps/models");
  if (home != nullptr && home[0] != '\0') return JoinPath(home, ".cache/hetps/models");
  return "hetps-cache/models";
}

}  // namespace hetps
