#include "trainer/data_cache.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "checkpoint/checksum.h"
#include "common/check.h"
#include "common/logging.h"

namespace hetps {
namespace {

// A piece, in the machine's byte order (the cache never leaves the machine):
//   magic "hetpsdc1" | u32 L | the data set's checksum (L bytes) | u64 split (0 train, 1 test) |
//   u64 sample bytes | u64 target bytes | u64 count | count x u64 indices | features | targets |
//   u32 CRC-32 of everything before it
constexpr char kMagic[8] = {'h', 'e', 't', 'p', 's', 'd', 'c', '1'};
constexpr char kChecksumPrefix[] = "crc32:";
constexpr size_t kChecksumDigits = 16;
constexpr char kPieceSuffix[] = ".piece";
constexpr char kTemporaryMarker[] = ".tmp-";
// Well within kDataSetInUse, so that a data set still being stored is never evicted.
constexpr std::chrono::minutes kRemarkUsedAfter{10};

std::atomic<uint64_t> g_temporary_serial{0};  // temporary names differ between threads too

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Reads a T at `*offset` of `in` and advances past it; false when `in` ends first.
template <typename T>
bool Take(const std::string& in, size_t* offset, T* value) {
  if (*offset > in.size() || in.size() - *offset < sizeof(T)) return false;
  std::memcpy(value, in.data() + *offset, sizeof(T));
  *offset += sizeof(T);
  return true;
}

// Where a valid piece's parts start.
struct PieceLayout {
  uint64_t count = 0;
  size_t indices = 0;   // offset of the first index
  size_t features = 0;  // offset of the first sample's bytes
  size_t targets = 0;   // offset of the first target
};

// The layout of `contents` as a piece, without checking it (Invalid() has).
PieceLayout Parse(const std::string& contents) {
  size_t offset = sizeof(kMagic);
  uint32_t checksum_length = 0;
  Take(contents, &offset, &checksum_length);
  offset += checksum_length;
  uint64_t split = 0, sample_bytes = 0, target_bytes = 0;
  PieceLayout layout;
  Take(contents, &offset, &split);
  Take(contents, &offset, &sample_bytes);
  Take(contents, &offset, &target_bytes);
  Take(contents, &offset, &layout.count);
  layout.indices = offset;
  layout.features = offset + layout.count * sizeof(uint64_t);
  layout.targets = layout.features + layout.count * sample_bytes;
  return layout;
}

}  // namespace

std::string DefaultDataCacheRoot(const char* xdg_cache_home, const char* home) {
  // The XDG base directory rules: a relative $XDG_CACHE_HOME is to be ignored.
  if (xdg_cache_home != nullptr && xdg_cache_home[0] == '/') return JoinPath(xdg_cache_home, "hetps/data");
  if (home != nullptr && home[0] != '\0') return JoinPath(home, ".cache/hetps/data");
  return "";
}

Result<std::unique_ptr<DataCache>> DataCache::Open(FileSystem& fs, const std::string& root,
                                                   const std::string& dataset_checksum,
                                                   const DataCacheOptions& options) {
  const std::string prefix = kChecksumPrefix;
  bool well_formed = dataset_checksum.size() == prefix.size() + kChecksumDigits &&
                     dataset_checksum.compare(0, prefix.size(), prefix) == 0;
  for (size_t i = prefix.size(); well_formed && i < dataset_checksum.size(); ++i) {
    const char c = dataset_checksum[i];
    well_formed = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
  if (!well_formed) {
    return Status::InvalidArgument("the served data's checksum '" + dataset_checksum.substr(0, 64) +
                                   "' is not crc32: and 16 hex digits");
  }
  // The directory's name is made of hex digits only, whatever the scheduler sent.
  const std::string dir = JoinPath(root, "crc32-" + dataset_checksum.substr(prefix.size()));
  Status made = fs.MakeDirs(dir);
  if (!made.ok()) return made.WithContext("the served data's cache");
  std::unique_ptr<DataCache> cache(new DataCache(fs, root, dir, dataset_checksum, options));
  Status marked = cache->MarkUsed();
  if (!marked.ok()) return marked.WithContext("the served data's cache");
  auto names = fs.ListDir(dir);
  if (!names.ok()) return names.status().WithContext("the served data's cache");
  cache->RemoveAbandonedTemporaries(*names);
  // When it cannot make room it says so, and Store() stores nothing.
  if (options.limit_bytes > 0) (void)cache->MakeRoom(0);
  return cache;
}

Status DataCache::MarkUsed() {
  // The stamp's mtime is what counts; its text is for whoever looks.
  const std::string stamp = JoinPath(dir_, kDataSetStampName);
  const std::string text = "used by process " + std::to_string(::getpid()) + "\n";
  auto file = fs_.NewWritableFile(stamp);
  if (!file.ok()) return file.status();
  Status written = (*file)->Append(text.data(), text.size());
  Status closed = (*file)->Close();
  if (!written.ok()) return written;
  if (!closed.ok()) return closed;
  marked_used_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

bool DataCache::MakeRoom(uint64_t incoming_bytes) {
  const uint64_t limit = options_.limit_bytes;
  auto sets = ScanDataCacheRoot(fs_, root_);
  if (!sets.ok()) {
    full_ = true;
    HETPS_LOG(WARNING) << "data cache: " << sets.status().message() << "; cannot keep the cache within "
                       << DescribeBytes(limit) << " (--data-cache-limit), so storing no more of " << dir_
                       << " in this run";
    return false;
  }
  uint64_t own_bytes = 0;
  for (const CachedDataSet& set : *sets) {
    if (set.dir == dir_) own_bytes = set.bytes;
  }
  const uint64_t target = limit - std::min(limit, incoming_bytes);
  root_bytes_ =
      EvictLeastRecentlyUsed(fs_, std::move(sets).value(), dir_, target, std::chrono::system_clock::now());
  if (root_bytes_ <= target) return true;
  full_ = true;
  if (own_bytes > target) {
    std::string alone = "holds " + DescribeBytes(own_bytes);
    if (incoming_bytes > 0)
      alone = "would hold " + DescribeBytes(own_bytes + incoming_bytes) + " with its next piece";
    HETPS_LOG(WARNING) << "data cache: the data set in use, " << dir_ << ", alone " << alone
                       << ", more than the cache's limit of " << DescribeBytes(limit)
                       << " (--data-cache-limit); storing no more of it in this run (what is cached stays)";
  } else {
    HETPS_LOG(WARNING) << "data cache: " << root_ << " holds " << DescribeBytes(root_bytes_)
                       << ", more than its limit of " << DescribeBytes(limit)
                       << " (--data-cache-limit), and the other data sets in it were used within the last "
                       << "hour; storing no more of " << dir_ << " in this run (what is cached stays)";
  }
  return false;
}

void DataCache::RemoveAbandonedTemporaries(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const size_t marker = name.find(kTemporaryMarker);
    if (marker == std::string::npos) continue;
    // NAME.tmp-PID-SERIAL: a writer that is still running may yet rename it.
    const long pid = std::strtol(name.c_str() + marker + std::strlen(kTemporaryMarker), nullptr, 10);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (fs_.RemoveFile(JoinPath(dir_, name)).ok()) {
      HETPS_LOG(INFO) << "data cache: removed " << JoinPath(dir_, name)
                      << ", a piece that a process which has ended did not finish writing";
    }
  }
}

std::string DataCache::Invalid(const std::string& contents, DatasetSplit split,
                               const HostDataset& data) const {
  constexpr size_t kTrailer = sizeof(uint32_t);
  if (contents.size() < sizeof(kMagic) + kTrailer)
    return "it is cut short (" + std::to_string(contents.size()) + " bytes)";
  if (std::memcmp(contents.data(), kMagic, sizeof(kMagic)) != 0) return "it is not a piece of served data";
  // The sizes first, so that a piece cut short is called that rather than a checksum mismatch.
  size_t offset = sizeof(kMagic);
  uint32_t checksum_length = 0;
  uint64_t piece_split = 0, sample_bytes = 0, target_bytes = 0, count = 0;
  const bool whole_header =
      Take(contents, &offset, &checksum_length) && contents.size() - offset >= checksum_length;
  const std::string checksum = whole_header ? contents.substr(offset, checksum_length) : std::string();
  offset += whole_header ? checksum_length : 0;
  if (!whole_header || !Take(contents, &offset, &piece_split) || !Take(contents, &offset, &sample_bytes) ||
      !Take(contents, &offset, &target_bytes) || !Take(contents, &offset, &count)) {
    return "it is cut short within its header (" + std::to_string(contents.size()) + " bytes)";
  }
  const uint64_t body = contents.size() - offset - std::min(contents.size() - offset, kTrailer);
  const bool sizes_fit = sample_bytes <= body && target_bytes <= body && count > 0 &&
                         body % (sizeof(uint64_t) + sample_bytes + target_bytes) == 0 &&
                         body / (sizeof(uint64_t) + sample_bytes + target_bytes) == count;
  if (!sizes_fit) {
    return "it is cut short or damaged: " + std::to_string(body) + " bytes for its " + std::to_string(count) +
           " samples of " + std::to_string(sample_bytes) + " + " + std::to_string(target_bytes) + " bytes";
  }
  uint32_t stored_crc = 0;
  std::memcpy(&stored_crc, contents.data() + contents.size() - kTrailer, kTrailer);
  const uint32_t crc = Crc32(contents.data(), contents.size() - kTrailer);
  if (crc != stored_crc) {
    char why[96];
    std::snprintf(why, sizeof(why), "its CRC-32 is %08x, not the %08x it was written with", crc, stored_crc);
    return why;
  }
  if (checksum != checksum_) return "it belongs to another data set (" + checksum.substr(0, 64) + ")";
  if (piece_split != (split == DatasetSplit::kTrain ? 0u : 1u)) return "it holds samples of the other split";
  if (sample_bytes != data.sample_bytes() || target_bytes != data.target_bytes()) {
    return "its samples are " + std::to_string(sample_bytes) + " + " + std::to_string(target_bytes) +
           " bytes, not " + std::to_string(data.sample_bytes()) + " + " + std::to_string(data.target_bytes());
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t index = 0;
    Take(contents, &offset, &index);
    if (index >= static_cast<uint64_t>(data.samples)) {
      return "it names sample " + std::to_string(index) + ", beyond the split's " +
             std::to_string(data.samples);
    }
  }
  return "";
}

DataCache::LoadCounts DataCache::Load(DatasetSplit split, HostDataset& data, std::vector<bool>& present) {
  LoadCounts counts;
  auto names = fs_.ListDir(dir_);
  if (!names.ok()) {
    HETPS_LOG(WARNING) << "data cache: " << names.status().message() << "; fetching every sample again";
    return counts;
  }
  const std::string prefix = std::string(DatasetSplitName(split)) + "-";
  const size_t sample_bytes = data.sample_bytes();
  const size_t target_bytes = data.target_bytes();
  for (const std::string& name : *names) {
    if (name.compare(0, prefix.size(), prefix) != 0 || !EndsWith(name, kPieceSuffix)) continue;
    const std::string path = JoinPath(dir_, name);
    auto contents = fs_.ReadFile(path);
    if (!contents.ok()) {
      // Another trainer may have removed it as redundant since the listing.
      if (contents.status().code() != Status::Code::kNotFound) {
        HETPS_LOG(WARNING) << "data cache: " << contents.status().message() << "; fetching its samples again";
      }
      continue;
    }
    const std::string why = Invalid(*contents, split, data);
    if (!why.empty()) {
      ++counts.discarded;
      Status removed = fs_.RemoveFile(path);
      HETPS_LOG(WARNING) << "data cache: discarding " << path << ": " << why
                         << (removed.ok() ? "" : " (and it cannot be removed: " + removed.message() + ")")
                         << "; its samples are fetched again";
      continue;
    }
    const PieceLayout piece = Parse(*contents);
    const char* bytes = contents->data();
    uint64_t added = 0;
    for (uint64_t i = 0; i < piece.count; ++i) {
      uint64_t index = 0;
      std::memcpy(&index, bytes + piece.indices + i * sizeof(uint64_t), sizeof(index));
      if (present[index]) continue;
      std::memcpy(data.features.data() + index * sample_bytes, bytes + piece.features + i * sample_bytes,
                  sample_bytes);
      data.SetTarget(static_cast<int64_t>(index),
                     reinterpret_cast<const uint8_t*>(bytes + piece.targets + i * target_bytes));
      present[index] = true;
      ++added;
    }
    if (added == 0) {
      // Two trainers on this machine fetched the same samples: keep the cache from growing.
      ++counts.redundant;
      (void)fs_.RemoveFile(path);
      continue;
    }
    ++counts.pieces;
    counts.samples += added;
  }
  return counts;
}

Status DataCache::Store(DatasetSplit split, const std::vector<uint64_t>& indices, const uint8_t* features,
                        size_t feature_bytes, const uint8_t* targets, size_t target_bytes) {
  HETPS_CHECK(!indices.empty() && feature_bytes % indices.size() == 0 && target_bytes % indices.size() == 0)
      << "a piece of " << indices.size() << " samples with " << feature_bytes << " + " << target_bytes
      << " bytes";
  if (full_) return Status::Ok();
  std::string header(kMagic, sizeof(kMagic));
  Put<uint32_t>(header, static_cast<uint32_t>(checksum_.size()));
  header += checksum_;
  Put<uint64_t>(header, split == DatasetSplit::kTrain ? 0 : 1);
  Put<uint64_t>(header, feature_bytes / indices.size());
  Put<uint64_t>(header, target_bytes / indices.size());
  Put<uint64_t>(header, indices.size());
  header.append(reinterpret_cast<const char*>(indices.data()), indices.size() * sizeof(uint64_t));
  const uint64_t piece_bytes = header.size() + feature_bytes + target_bytes + sizeof(uint32_t);
  if (options_.limit_bytes > 0 && root_bytes_ + piece_bytes > options_.limit_bytes &&
      !MakeRoom(piece_bytes)) {
    return Status::Ok();
  }
  uint32_t crc = Crc32(header.data(), header.size());
  crc = ExtendCrc32(crc, features, feature_bytes);
  crc = ExtendCrc32(crc, targets, target_bytes);

  char name[96];
  std::snprintf(name, sizeof(name), "%s-%llu-%zu-%08x%s", DatasetSplitName(split),
                static_cast<unsigned long long>(indices[0]), indices.size(), crc, kPieceSuffix);
  const std::string path = JoinPath(dir_, name);
  const std::string temporary = path + kTemporaryMarker + std::to_string(::getpid()) + "-" +
                                std::to_string(g_temporary_serial.fetch_add(1));
  auto file = fs_.NewWritableFile(temporary);
  if (!file.ok()) return file.status().WithContext("the served data's cache");
  Status written = (*file)->Append(header.data(), header.size());
  if (written.ok()) written = (*file)->Append(features, feature_bytes);
  if (written.ok()) written = (*file)->Append(targets, target_bytes);
  if (written.ok()) written = (*file)->Append(&crc, sizeof(crc));
  Status closed = (*file)->Close();
  if (written.ok()) written = closed;
  if (written.ok()) written = fs_.Rename(temporary, path);
  if (!written.ok()) {
    (void)fs_.RemoveFile(temporary);
    return written.WithContext("the served data's cache");
  }
  root_bytes_ += piece_bytes;
  // A long run keeps its data set recent for other trainers' eviction; a stamp that cannot be
  // written costs at most this data set's cache, which Open() wrote one for.
  if (std::chrono::steady_clock::now() - marked_used_ > kRemarkUsedAfter) (void)MarkUsed();
  return Status::Ok();
}

}  // namespace hetps
