// ModelFetcher: a trainer's copy of the job's TorchScript file when its machine has none. Fetched
// files are kept in a cache directory under their checksum (DIR/1a2b3c4d.pt for crc32:1a2b3c4d):
// a copy there whose checksum matches is used as it is; otherwise the file is asked of the
// scheduler piece by piece (ModelFileRequest, at most the job's model_piece_bytes each), each piece
// checked against its CRC-32 and asked for again when it differs, the whole file checked against
// the checksum the scheduler announced, then written to a temporary file beside the cached name,
// synced and renamed into place, so that another trainer on the machine (or the next start) finds
// the whole file or none.
//
// Torch-free. Used by the trainer's loop thread during setup, with the ControlChannel it uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "checkpoint/file_system.h"
#include "common/control_channel.h"
#include "common/message.h"
#include "common/status.h"

namespace hetps {

// What the scheduler told a trainer about the job's model file (TrainerJob).
struct AnnouncedModelFile {
  std::string path;      // on the scheduler's machine; for messages only
  std::string checksum;  // "crc32:1a2b3c4d"
  uint64_t bytes = 0;
  uint64_t piece_bytes = 0;  // the most one ModelFilePiece carries
};

class ModelFetcher {
 public:
  struct Options {
    std::string cache_dir = "hetps-cache/models";       // where fetched files are kept; made if missing
    std::chrono::milliseconds request_timeout{120000};  // the longest wait for one piece
    int max_attempts = 5;                               // per piece whose checksum differs
  };

  // `control` and `sender` must outlive the fetcher.
  ModelFetcher(ControlChannel* control, Sender* sender, Options options);

  // The path of a copy of `file` on this machine: the cached one when its checksum matches,
  // otherwise one fetched from the scheduler now. Every error names the file, the scheduler and
  // the problem: Protocol for an implausible announcement or reply; FailedPrecondition when the
  // scheduler refuses a request (with its reason); Timeout or Unavailable when it does not
  // answer; Internal when a piece fails its checksum max_attempts times in a row, or the whole
  // file differs from the announced checksum; IoError when the cache directory cannot be
  // made or written (nothing is left behind but a file the next start replaces).
  Result<std::string> Fetch(const AnnouncedModelFile& file);

  // Whether the last Fetch() found the file in the cache (asking the scheduler nothing).
  bool used_cache() const { return used_cache_; }
  // Pieces received (those that failed their checksum included), their bytes, and checksum failures.
  uint64_t requests() const { return requests_; }
  uint64_t bytes_received() const { return bytes_received_; }
  uint64_t checksum_failures() const { return checksum_failures_; }

 private:
  // Asks for the file's pieces in order and appends each to `out` once its checksum matches;
  // the CRC-32 of everything appended.
  Result<uint32_t> Download(const AnnouncedModelFile& file, WritableFile& out);
  // "the model file F from the scheduler at E", for messages.
  std::string Describe(const AnnouncedModelFile& file) const;
  // The context of an error of the cache directory's.
  std::string CacheProblem(const AnnouncedModelFile& file) const;

  ControlChannel* control_;
  Sender* sender_;
  Options options_;
  bool used_cache_ = false;
  uint64_t requests_ = 0;
  uint64_t bytes_received_ = 0;
  uint64_t checksum_failures_ = 0;
};

// Where hetps-trainer keeps fetched model files unless told (--model-cache), from the values of
// XDG_CACHE_HOME and HOME (either may be null): XDG_CACHE_HOME/hetps/models when it is an absolute
// path, else HOME/.cache/hetps/models, else hetps-cache/models under the working directory.
std::string DefaultModelCacheDir(const char* xdg_cache_home, const char* home);

}  // namespace hetps
