#include "tests/checkpoint/fault_injection_file_system.h"

#include <algorithm>

namespace hetps::testing {
namespace {

class FaultInjectionFile : public WritableFile {
 public:
  FaultInjectionFile(FaultInjectionFileSystem& fs, std::string path, std::unique_ptr<WritableFile> base)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)) {}

  Status Append(const void* data, size_t size) override {
    HETPS_RETURN_IF_ERROR(fs_.Count("append to " + path_));
    HETPS_RETURN_IF_ERROR(base_->Append(data, size));
    fs_.Appended(path_, size);
    return Status::Ok();
  }
  Status Sync() override {
    HETPS_RETURN_IF_ERROR(fs_.Count("sync " + path_));
    HETPS_RETURN_IF_ERROR(base_->Sync());
    fs_.Synced(path_);
    return Status::Ok();
  }
  Status Close() override {
    HETPS_RETURN_IF_ERROR(fs_.Count("close " + path_));
    return base_->Close();
  }

 private:
  FaultInjectionFileSystem& fs_;
  std::string path_;
  std::unique_ptr<WritableFile> base_;
};

}  // namespace

Status FaultInjectionFileSystem::Count(const std::string& what) {
  const int64_t n = operations_++;
  if (crash_at_ >= 0 && n >= crash_at_) {
    return Status::IoError("injected crash at operation " + std::to_string(n) + " (" + what + ")");
  }
  return Status::Ok();
}

std::optional<std::string> FaultInjectionFileSystem::Content(const std::string& path) {
  auto content = base_.ReadFile(path);
  if (!content.ok()) return std::nullopt;
  return *content;
}

void FaultInjectionFileSystem::Restore(const std::string& path, const std::optional<std::string>& content) {
  if (!content) {
    if (base_.Exists(path)) (void)base_.RemoveFile(path);
    return;
  }
  auto file = base_.NewWritableFile(path);
  if (!file.ok()) return;
  (void)(*file)->Append(content->data(), content->size());
  (void)(*file)->Close();
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(const std::string& path) {
  HETPS_RETURN_IF_ERROR(Count("create " + path));
  Change change{Change::Kind::kCreate, DirName(path), path, "", Content(path), std::nullopt};
  if (sizes_.count(path)) change.previous_sizes = sizes_[path];
  auto file = base_.NewWritableFile(path);
  if (!file.ok()) return file.status();
  changes_.push_back(std::move(change));
  sizes_[path] = Sizes{};
  return std::unique_ptr<WritableFile>(new FaultInjectionFile(*this, path, std::move(*file)));
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  HETPS_RETURN_IF_ERROR(Count("rename " + from + " to " + to));
  Change change{Change::Kind::kRename, DirName(to), to, from, Content(to), std::nullopt};
  if (sizes_.count(to)) change.previous_sizes = sizes_[to];
  HETPS_RETURN_IF_ERROR(base_.Rename(from, to));
  changes_.push_back(std::move(change));
  auto moved = sizes_.find(from);
  if (moved != sizes_.end()) {
    sizes_[to] = moved->second;
    sizes_.erase(from);
  } else {
    sizes_.erase(to);
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& dir) {
  HETPS_RETURN_IF_ERROR(Count("sync directory " + dir));
  HETPS_RETURN_IF_ERROR(base_.SyncDir(dir));
  changes_.erase(
      std::remove_if(changes_.begin(), changes_.end(), [&](const Change& c) { return c.dir == dir; }),
      changes_.end());
  return Status::Ok();
}

Status FaultInjectionFileSystem::MakeDirs(const std::string& dir) {
  HETPS_RETURN_IF_ERROR(Count("create directory " + dir));
  std::vector<std::string> missing;
  for (std::string d = dir; !d.empty() && d != "." && d != "/" && !base_.Exists(d); d = DirName(d)) {
    missing.push_back(d);
  }
  HETPS_RETURN_IF_ERROR(base_.MakeDirs(dir));
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    changes_.push_back({Change::Kind::kMakeDir, DirName(*it), *it, "", std::nullopt, std::nullopt});
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  HETPS_RETURN_IF_ERROR(Count("remove " + path));
  Change change{Change::Kind::kRemove, DirName(path), path, "", Content(path), std::nullopt};
  if (sizes_.count(path)) change.previous_sizes = sizes_[path];
  HETPS_RETURN_IF_ERROR(base_.RemoveFile(path));
  changes_.push_back(std::move(change));
  sizes_.erase(path);
  return Status::Ok();
}

Status FaultInjectionFileSystem::RemoveDir(const std::string& dir) {
  HETPS_RETURN_IF_ERROR(Count("remove directory " + dir));
  HETPS_RETURN_IF_ERROR(base_.RemoveDir(dir));
  changes_.push_back({Change::Kind::kRemoveDir, DirName(dir), dir, "", std::nullopt, std::nullopt});
  return Status::Ok();
}

Status FaultInjectionFileSystem::DropUnsyncedChanges() {
  for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) {
    const Change& c = *it;
    auto restore_sizes = [&](const std::string& path) {
      if (c.previous_sizes) {
        sizes_[path] = *c.previous_sizes;
      } else {
        sizes_.erase(path);  // untracked: as durable as before this wrapper saw it
      }
    };
    switch (c.kind) {
      case Change::Kind::kCreate:
      case Change::Kind::kRemove:
        Restore(c.path, c.previous);
        restore_sizes(c.path);
        break;
      case Change::Kind::kRename:
        if (base_.Exists(c.path)) (void)base_.Rename(c.path, c.from);
        if (sizes_.count(c.path)) sizes_[c.from] = sizes_[c.path];
        Restore(c.path, c.previous);
        restore_sizes(c.path);
        break;
      case Change::Kind::kMakeDir:
        (void)RemoveTree(base_, c.path);
        break;
      case Change::Kind::kRemoveDir:
        (void)base_.MakeDirs(c.path);
        break;
    }
  }
  changes_.clear();
  for (const auto& [path, sizes] : sizes_) {
    auto content = Content(path);
    if (content && content->size() > sizes.synced) Restore(path, content->substr(0, sizes.synced));
  }
  sizes_.clear();
  crash_at_ = -1;
  return Status::Ok();
}

}  // namespace hetps::testing
