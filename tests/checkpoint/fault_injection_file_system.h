// FaultInjectionFileSystem: a FileSystem for crash tests, after leveldb's FaultInjectionTestEnv.
// It passes every call to a real FileSystem and can (a) make the n-th mutating operation and
// every later one fail, as if the process died at that point, and (b) then simulate the machine
// losing power: files lose what was appended after their last Sync, and creations, renames and
// removals in a directory not synced since are undone, newest first.
//
// Used by one test thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/file_system.h"

namespace hetps::testing {

class FaultInjectionFileSystem : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem& base) : base_(base) {}

  // Mutating operations (create, append, sync, close, rename, directory sync, mkdir, removals)
  // numbered from 0 since construction or the last ResetCount(); from `n` on each fails with
  // IoError "injected crash". -1: never.
  void CrashAtOperation(int64_t n) { crash_at_ = n; }
  int64_t operations() const { return operations_; }
  void ResetCount() { operations_ = 0; }

  // Power loss: undoes what a crash would lose (see above), then forgets every record, so the
  // file system is durable as it stands. Also lifts CrashAtOperation.
  Status DropUnsyncedChanges();

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override { return base_.ReadFile(path); }
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& dir) override;
  Status MakeDirs(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& dir) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override { return base_.ListDir(dir); }
  bool Exists(const std::string& path) override { return base_.Exists(path); }
  Result<FileInfo> Stat(const std::string& path) override { return base_.Stat(path); }

  // Called by the files it hands out.
  Status Count(const std::string& what);
  void Appended(const std::string& path, size_t bytes) { sizes_[path].size += bytes; }
  void Synced(const std::string& path) { sizes_[path].synced = sizes_[path].size; }

 private:
  struct Sizes {
    uint64_t size = 0;
    uint64_t synced = 0;
  };
  // One change to a directory's entries that a crash would undo until the directory is synced.
  struct Change {
    enum class Kind { kCreate, kRename, kRemove, kMakeDir, kRemoveDir } kind;
    std::string dir;                      // whose entries changed
    std::string path;                     // created, removed, or renamed to
    std::string from;                     // rename: the old name
    std::optional<std::string> previous;  // content that `path` had before, if any
    std::optional<Sizes> previous_sizes;
  };

  std::optional<std::string> Content(const std::string& path);
  void Restore(const std::string& path, const std::optional<std::string>& content);

  FileSystem& base_;
  int64_t crash_at_ = -1;
  int64_t operations_ = 0;
  std::map<std::string, Sizes> sizes_;  // files written through this wrapper
  std::vector<Change> changes_;         // oldest first
};

}  // namespace hetps::testing
