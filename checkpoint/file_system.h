// FileSystem: the file operations checkpoints are written and read with, behind an interface so
// that tests can wrap it and inject crashes at any step of a write (tests/checkpoint/
// fault_injection_file_system.h), in the manner of leveldb's Env and FaultInjectionTestEnv.
//
// PosixFileSystem() is the real one. Implementations must be safe to call from several threads
// on different files; a WritableFile is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hetps {

// A file being written, from the start. Close() does not sync: Sync() first when the data must
// survive a crash.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(const void* data, size_t size) = 0;
  // Makes everything appended so far durable (fsync).
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

// What FileSystem::Stat() tells of a path.
struct FileInfo {
  bool is_directory = false;                       // a directory itself, not a symbolic link to one
  uint64_t size_bytes = 0;                         // a file's length; 0 for a directory
  std::chrono::system_clock::time_point modified;  // its last modification (mtime)
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates (or truncates) `path` for writing. IoError naming the path on failure.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // The whole content of `path`. NotFound when it does not exist, IoError otherwise.
  virtual Result<std::string> ReadFile(const std::string& path) = 0;
  // Replaces `to` by `from` atomically (rename(2)); durable only once the directory is synced.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Makes the directory's entries (files created, renamed or removed in it) durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  // Creates `dir` and any missing parents; OK when it exists.
  virtual Status MakeDirs(const std::string& dir) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes an empty directory.
  virtual Status RemoveDir(const std::string& dir) = 0;
  // Names (not paths) of the entries of `dir`, sorted. NotFound when it does not exist.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // What `path` itself is: a symbolic link is described, not followed. NotFound when it does not
  // exist, IoError naming the path otherwise.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
};

// The operating system's file system. A process-wide instance; never null.
FileSystem& PosixFileSystem();

// Writes `contents` to `path` so that a reader sees either the old file or the whole new one, and
// the new one survives a crash once this returns: a temporary file beside it (`path` + ".tmp"),
// written and synced, renamed over `path`, then the directory synced. IoError naming the file
// and the step that failed.
Status WriteFileAtomically(FileSystem& fs, const std::string& path, const std::string& contents);

// Removes `path` and, when it is a directory, everything in it, never following a symbolic link
// (the link itself goes). An entry that another process removes meanwhile is not an error. On
// failure, what could be removed is, and the first error names its path.
Status RemoveTree(FileSystem& fs, const std::string& path);

// "a/b" + "c" -> "a/b/c"; the directory part of a path ("a/b/c" -> "a/b", "c" -> ".").
std::string JoinPath(const std::string& dir, const std::string& name);
std::string DirName(const std::string& path);

}  // namespace hetps
