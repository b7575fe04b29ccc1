#include "checkpoint/checkpoint_store.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "checkpoint/checksum.h"
#include "checkpoint/partition_names.h"

namespace hetps {
namespace {

constexpr const char* kPrefix = "checkpoint-";

// The id of a checkpoint directory's name, or nullopt for any other name.
std::optional<uint64_t> IdOf(const std::string& name) {
  const std::string prefix = kPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  uint64_t id = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || id > (UINT64_MAX - 9) / 10) return std::nullopt;
    id = id * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return id;
}

// Ids of every checkpoint directory in `dir`, ascending; `committed_only` keeps those with a
// manifest.
Result<std::vector<uint64_t>> ListIds(FileSystem& fs, const std::string& dir, bool committed_only) {
  auto names = fs.ListDir(dir);
  if (!names.ok()) return names.status();
  std::vector<uint64_t> ids;
  for (const std::string& name : *names) {
    auto id = IdOf(name);
    if (!id) continue;
    if (committed_only && !fs.Exists(JoinPath(JoinPath(dir, name), CheckpointStore::kManifestName))) continue;
    ids.push_back(*id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

Status CheckServerFile(const Manifest& m, const ServerFile& f, const std::string& path,
                       const SafetensorsFile& file) {
  auto fail = [&](const std::string& what) { return Status::InvalidArgument(path + ": " + what); };
  auto meta = [&](const char* key) {
    auto it = file.metadata().find(key);
    return it == file.metadata().end() ? std::string("(none)") : it->second;
  };
  if (meta("checkpoint") != std::to_string(m.id)) {
    return fail("belongs to checkpoint " + meta("checkpoint") + ", not " + std::to_string(m.id));
  }
  if (meta("server") != std::to_string(f.rank)) {
    return fail("holds server " + meta("server") + "'s state, not server " + std::to_string(f.rank) + "'s");
  }
  for (const PartitionInfo& p : m.partitions) {
    if (p.server != f.rank) continue;
    const std::string name = PartitionTensorName(m.tensors[p.tensor].name, p.offset, p.offset + p.length);
    const SafetensorsFile::Tensor* t = file.Find(name);
    if (t == nullptr) return fail("has no tensor " + name + " (partition " + std::to_string(p.id) + ")");
    if (t->dtype != "F32" || t->elements != p.length) {
      return fail("tensor " + name + " is " + t->dtype + " of " + std::to_string(t->elements) +
                  " elements, expected F32 of " + std::to_string(p.length));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string CheckpointStore::PathOf(uint64_t id) const {
  char name[40];
  std::snprintf(name, sizeof(name), "%s%06llu", kPrefix, static_cast<unsigned long long>(id));
  return JoinPath(dir_, name);
}

std::string CheckpointStore::ServerFileName(uint32_t rank) {
  return "server-" + std::to_string(rank) + ".safetensors";
}

Result<uint64_t> CheckpointStore::NextId() {
  HETPS_RETURN_IF_ERROR(fs_.MakeDirs(dir_));
  auto ids = ListIds(fs_, dir_, /*committed_only=*/false);
  if (!ids.ok()) return ids.status();
  return ids->empty() ? 1 : ids->back() + 1;
}

Status CheckpointStore::Prepare(uint64_t id) {
  HETPS_RETURN_IF_ERROR(fs_.MakeDirs(PathOf(id)));
  return fs_.SyncDir(dir_);
}

Status CheckpointStore::Commit(const Manifest& manifest) {
  const std::string dir = PathOf(manifest.id);
  // The server files' entries must be durable before the manifest that vouches for them.
  HETPS_RETURN_IF_ERROR(fs_.SyncDir(dir));
  return WriteFileAtomically(fs_, JoinPath(dir, kManifestName), manifest.ToJson());
}

Result<std::vector<uint64_t>> CheckpointStore::Committed() {
  return ListIds(fs_, dir_, /*committed_only=*/true);
}

Status CheckpointStore::Remove(uint64_t id, bool committed) {
  const std::string dir = PathOf(id);
  if (committed) {
    // Uncommit first, so that a crash half-way leaves an ignored directory, not a broken checkpoint.
    HETPS_RETURN_IF_ERROR(fs_.RemoveFile(JoinPath(dir, kManifestName)));
    HETPS_RETURN_IF_ERROR(fs_.SyncDir(dir));
  }
  auto names = fs_.ListDir(dir);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) HETPS_RETURN_IF_ERROR(fs_.RemoveFile(JoinPath(dir, name)));
  HETPS_RETURN_IF_ERROR(fs_.RemoveDir(dir));
  return fs_.SyncDir(dir_);
}

Status CheckpointStore::Prune(uint32_t keep) {
  auto committed = Committed();
  if (!committed.ok()) return committed.status();
  if (committed->empty()) return Status::Ok();
  const uint64_t newest = committed->back();
  auto all = ListIds(fs_, dir_, /*committed_only=*/false);
  if (!all.ok()) return all.status();
  const size_t drop = committed->size() > keep ? committed->size() - keep : 0;
  for (size_t i = 0; i < drop; ++i) HETPS_RETURN_IF_ERROR(Remove((*committed)[i], /*committed=*/true));
  for (uint64_t id : *all) {
    if (id < newest && !std::binary_search(committed->begin(), committed->end(), id)) {
      HETPS_RETURN_IF_ERROR(Remove(id, /*committed=*/false));
    }
  }
  return Status::Ok();
}

namespace {

Result<Manifest> ReadManifest(FileSystem& fs, const std::string& dir) {
  const std::string manifest_path = JoinPath(dir, CheckpointStore::kManifestName);
  auto text = fs.ReadFile(manifest_path);
  if (!text.ok()) return text.status();
  return Manifest::Parse(*text, manifest_path);
}

// The checkpoint in directory `dir` (holding its manifest), read and verified whole.
Result<LoadedCheckpoint> LoadOne(FileSystem& fs, const std::string& dir) {
  LoadedCheckpoint loaded;
  loaded.path = dir;
  auto manifest = ReadManifest(fs, dir);
  if (!manifest.ok()) return manifest.status();
  loaded.manifest = std::move(*manifest);
  const Manifest& m = loaded.manifest;
  for (const ServerFile& f : m.files) {
    const std::string file_path = JoinPath(loaded.path, f.file);
    auto bytes = fs.ReadFile(file_path);
    if (!bytes.ok()) {
      return Status::InvalidArgument(JoinPath(loaded.path, CheckpointStore::kManifestName) + " lists " +
                                     f.file + ", which cannot be read: " + bytes.status().message());
    }
    if (bytes->size() != f.bytes) {
      return Status::InvalidArgument(file_path + ": " + std::to_string(bytes->size()) +
                                     " bytes, but the manifest says " + std::to_string(f.bytes) +
                                     " (truncated or replaced)");
    }
    const uint32_t crc = Crc32(bytes->data(), bytes->size());
    if (crc != f.crc32) {
      return Status::InvalidArgument(file_path + ": checksum " + FormatCrc32(crc) + " differs from the " +
                                     FormatCrc32(f.crc32) + " the manifest records (corrupt)");
    }
    auto file = SafetensorsFile::Parse(std::move(*bytes), file_path);
    if (!file.ok()) return file.status();
    HETPS_RETURN_IF_ERROR(CheckServerFile(m, f, file_path, *file));
    loaded.files.push_back(std::move(*file));
  }
  return loaded;
}

}  // namespace

Result<LoadedCheckpoint> LoadCheckpoint(FileSystem& fs, const std::string& path) {
  if (fs.Exists(JoinPath(path, CheckpointStore::kManifestName))) return LoadOne(fs, path);
  auto committed = ListIds(fs, path, /*committed_only=*/true);
  if (!committed.ok()) return committed.status();
  if (committed->empty()) {
    return Status::NotFound("no committed checkpoint in " + path + " (no " + kPrefix +
                            "*/manifest.json there)");
  }
  std::vector<std::string> skipped;
  for (auto id = committed->rbegin(); id != committed->rend(); ++id) {
    auto loaded = LoadOne(fs, CheckpointStore(fs, path).PathOf(*id));
    if (loaded.ok()) {
      loaded->skipped = std::move(skipped);
      return loaded;
    }
    // Damage is skipped; a file system that fails is not: it would fail for the older ones too.
    if (loaded.status().code() != Status::Code::kInvalidArgument) return loaded.status();
    skipped.push_back(loaded.status().message());
  }
  std::string reasons;
  for (const std::string& why : skipped) reasons += (reasons.empty() ? "" : "; ") + why;
  return Status::InvalidArgument("no intact checkpoint in " + path + " (" + std::to_string(skipped.size()) +
                                 " committed, every one damaged): " + reasons);
}

Result<Manifest> LoadManifest(FileSystem& fs, const std::string& path, std::string* checkpoint_dir) {
  if (!fs.Exists(JoinPath(path, CheckpointStore::kManifestName))) {
    // The checkpoint LoadCheckpoint takes: the newest intact one, verified whole.
    auto loaded = LoadCheckpoint(fs, path);
    if (!loaded.ok()) return loaded.status();
    if (checkpoint_dir != nullptr) *checkpoint_dir = loaded->path;
    return std::move(loaded->manifest);
  }
  if (checkpoint_dir != nullptr) *checkpoint_dir = path;
  return ReadManifest(fs, path);
}

}  // namespace hetps
