#include "checkpoint/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hetps {
namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::IoError("cannot " + what + " " + path + ": " + std::strerror(errno));
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(const void* data, size_t size) override {
    const char* bytes = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, bytes, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno("write", path_);
      }
      bytes += n;
      size -= static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (::fsync(fd_) != 0) return Errno("fsync", path_);
    return Status::Ok();
  }

  Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return Errno("close", path_);
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
};

class Posix : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("create", path);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<std::string> ReadFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Errno("open", path);
    }
    std::string contents;
    struct stat info {};
    if (::fstat(fd, &info) == 0 && info.st_size > 0) contents.reserve(static_cast<size_t>(info.st_size));
    char buffer[1 << 16];
    while (true) {
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n < 0) {
        if (errno == EINTR) continue;
        Status status = Errno("read", path);
        ::close(fd);
        return status;
      }
      if (n == 0) break;
      contents.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return contents;
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (std::rename(from.c_str(), to.c_str()) != 0) return Errno("rename " + from + " to", to);
    return Status::Ok();
  }

  Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("open directory", dir);
    const int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) return Errno("fsync directory", dir);
    return Status::Ok();
  }

  Status MakeDirs(const std::string& dir) override {
    if (dir.empty() || Exists(dir)) return Status::Ok();
    const std::string parent = DirName(dir);
    if (parent != dir) HETPS_RETURN_IF_ERROR(MakeDirs(parent));
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno("create directory", dir);
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Errno("remove", path);
    return Status::Ok();
  }

  Status RemoveDir(const std::string& dir) override {
    if (::rmdir(dir.c_str()) != 0) return Errno("remove directory", dir);
    return Status::Ok();
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* handle = ::opendir(dir.c_str());
    if (handle == nullptr) {
      if (errno == ENOENT) return Status::NotFound("directory " + dir + " does not exist");
      return Errno("list", dir);
    }
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(handle)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(handle);
    std::sort(names.begin(), names.end());
    return names;
  }

  bool Exists(const std::string& path) override {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0;
  }

  Result<FileInfo> Stat(const std::string& path) override {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
      if (errno == ENOENT) return Status::NotFound(path + " does not exist");
      return Errno("examine", path);
    }
#if defined(__APPLE__)
    const struct timespec& mtime = info.st_mtimespec;
#else
    const struct timespec& mtime = info.st_mtim;
#endif
    FileInfo file;
    file.is_directory = S_ISDIR(info.st_mode);
    file.size_bytes = file.is_directory ? 0 : static_cast<uint64_t>(info.st_size);
    file.modified =
        std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(mtime.tv_sec) + std::chrono::nanoseconds(mtime.tv_nsec)));
    return file;
  }
};

}  // namespace

FileSystem& PosixFileSystem() {
  static Posix* fs = new Posix();  // never destroyed: usable from static destructors too
  return *fs;
}

Status WriteFileAtomically(FileSystem& fs, const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp";
  auto file = fs.NewWritableFile(temporary);
  if (!file.ok()) return file.status();
  HETPS_RETURN_IF_ERROR((*file)->Append(contents.data(), contents.size()));
  HETPS_RETURN_IF_ERROR((*file)->Sync());
  HETPS_RETURN_IF_ERROR((*file)->Close());
  HETPS_RETURN_IF_ERROR(fs.Rename(temporary, path));
  return fs.SyncDir(DirName(path));
}

Status RemoveTree(FileSystem& fs, const std::string& path) {
  auto info = fs.Stat(path);
  if (!info.ok()) return info.status().code() == Status::Code::kNotFound ? Status::Ok() : info.status();
  Status first = Status::Ok();
  if (info->is_directory) {
    auto names = fs.ListDir(path);
    if (!names.ok() && names.status().code() != Status::Code::kNotFound) return names.status();
    if (names.ok()) {
      for (const std::string& name : *names) {
        Status removed = RemoveTree(fs, JoinPath(path, name));
        if (first.ok()) first = removed;
      }
    }
  }
  Status removed = info->is_directory ? fs.RemoveDir(path) : fs.RemoveFile(path);
  // Gone all the same when another process removed it first.
  if (!removed.ok() && fs.Exists(path) && first.ok()) first = removed;
  return first;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string DirName(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const size_t slash = trimmed.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return trimmed.substr(0, slash);
}

}  // namespace hetps
