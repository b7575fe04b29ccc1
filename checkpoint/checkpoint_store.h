// CheckpointStore: a job's checkpoints in one directory, one subdirectory each:
//
//   DIR/checkpoint-000012/server-0.safetensors   one file per server (see partition_names.h)
//   DIR/checkpoint-000012/server-1.safetensors
//   DIR/checkpoint-000012/manifest.json          written last, atomically: the commit point
//
// A checkpoint without its manifest was never committed (a crash during its write) and is
// ignored; a committed one whose manifest or files are damaged is refused, never loaded in part,
// and a store's newest intact checkpoint is taken instead.
// Ids grow across restarts of the job. Pruning keeps the newest `keep` committed checkpoints.
//
// Not thread-safe: one thread (the scheduler's checkpoint writer, or a tool) uses a store at a
// time. Every file operation goes through the FileSystem given, so tests can inject crashes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/file_system.h"
#include "checkpoint/manifest.h"
#include "checkpoint/safetensors_reader.h"
#include "common/status.h"

namespace hetps {

class CheckpointStore {
 public:
  static constexpr const char* kManifestName = "manifest.json";

  CheckpointStore(FileSystem& fs, std::string dir) : fs_(fs), dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  FileSystem& fs() { return fs_; }
  // DIR/checkpoint-000012
  std::string PathOf(uint64_t id) const;
  // "server-3.safetensors"
  static std::string ServerFileName(uint32_t rank);

  // One more than the largest id of any checkpoint directory present, committed or not (1 when
  // there is none). Creates the store's directory when missing.
  Result<uint64_t> NextId();
  // Creates checkpoint `id`'s directory and makes its entry durable.
  Status Prepare(uint64_t id);
  // Writes `manifest` into checkpoint manifest.id's directory atomically (temporary file, sync,
  // rename, sync of the directory): once this returns OK the checkpoint is committed.
  Status Commit(const Manifest& manifest);
  // Ids of the committed checkpoints (those with a manifest), ascending.
  Result<std::vector<uint64_t>> Committed();
  // Deletes all but the newest `keep` committed checkpoints, and every uncommitted one older
  // than the newest committed (left by crashes). A checkpoint is uncommitted (its manifest
  // removed) before its files go.
  Status Prune(uint32_t keep);

 private:
  Status Remove(uint64_t id, bool committed);

  FileSystem& fs_;
  std::string dir_;
};

// A committed checkpoint read back and verified whole.
struct LoadedCheckpoint {
  std::string path;  // its directory
  Manifest manifest;
  std::vector<SafetensorsFile> files;  // by server rank
  // From a store's directory: why each newer committed checkpoint was passed over, newest first.
  std::vector<std::string> skipped;
};

// Loads the checkpoint at `path`: either a checkpoint's own directory (holding manifest.json) or
// a store's directory, whose newest committed checkpoint that is intact is taken (the damaged
// newer ones are listed in `skipped`, with why). Every server file must have
// the size and CRC-32 the manifest gives, parse as safetensors, carry the checkpoint's id and its
// rank in its metadata, and hold a float32 tensor for each partition the manifest gives its rank.
// NotFound when there is no committed checkpoint; InvalidArgument naming the file and the problem
// for anything damaged or inconsistent (in a store: when every committed checkpoint is, each
// named with its problem).
Result<LoadedCheckpoint> LoadCheckpoint(FileSystem& fs, const std::string& path);

// The manifest alone, of a checkpoint directory, or of the checkpoint LoadCheckpoint takes from a
// store's directory (which it verifies whole to choose it).
Result<Manifest> LoadManifest(FileSystem& fs, const std::string& path, std::string* checkpoint_dir = nullptr);

}  // namespace hetps
