#include "trainer/data_cache_eviction.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <limits>
#include <ratio>

#include "common/logging.h"

namespace hetps {
namespace {

constexpr char kDataSetDirPrefix[] = "crc32-";
constexpr size_t kDataSetDirDigits = 16;

// What the files under `path` hold, at any depth; what cannot be read counts nothing.
uint64_t TreeBytes(FileSystem& fs, const std::string& path) {
  auto info = fs.Stat(path);
  if (!info.ok()) return 0;
  if (!info->is_directory) return info->size_bytes;
  auto names = fs.ListDir(path);
  if (!names.ok()) return 0;
  uint64_t bytes = 0;
  for (const std::string& name : *names) bytes += TreeBytes(fs, JoinPath(path, name));
  return bytes;
}

// The data set's last use: its stamp's mtime, or for a directory without one (written before
// stamps existed, or being created right now) the directory's own.
std::chrono::system_clock::time_point LastUsed(FileSystem& fs, const std::string& dir,
                                               std::chrono::system_clock::time_point dir_modified) {
  auto stamp = fs.Stat(JoinPath(dir, kDataSetStampName));
  return stamp.ok() ? stamp->modified : dir_modified;
}

std::string DescribeTime(std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

}  // namespace

Result<uint64_t> ParseDataCacheLimit(const std::string& text) {
  const std::string quoted = "'" + text.substr(0, 64) + "'";
  if (text == "none") return uint64_t{0};
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  int shift = 0;
  if (digits + 1 == text.size()) {
    const std::string units = "KMGT";
    const size_t unit = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(text.back()))));
    shift = unit == std::string::npos ? -1 : 10 * static_cast<int>(unit + 1);
  }
  if (digits == 0 || shift < 0 || digits + 1 < text.size()) {
    return Status::InvalidArgument(quoted +
                                   " is not a size: give bytes, or a whole number followed by K, M, G or T "
                                   "(powers of 1024) such as 20G; 0 or none for no limit");
  }
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const auto digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (kMax - digit) / 10)
      return Status::InvalidArgument(quoted + " is more bytes than 64 bits hold");
    value = value * 10 + digit;
  }
  if (value > (kMax >> shift)) return Status::InvalidArgument(quoted + " is more bytes than 64 bits hold");
  return value << shift;
}

std::string DescribeBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

bool IsDataSetDirName(const std::string& name) {
  const std::string prefix = kDataSetDirPrefix;
  if (name.size() != prefix.size() + kDataSetDirDigits || name.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Result<std::vector<CachedDataSet>> ScanDataCacheRoot(FileSystem& fs, const std::string& root) {
  std::vector<CachedDataSet> sets;
  auto names = fs.ListDir(root);
  if (!names.ok()) {
    if (names.status().code() == Status::Code::kNotFound) return sets;
    return names.status().WithContext("the served data's cache");
  }
  for (const std::string& name : *names) {
    if (!IsDataSetDirName(name)) continue;
    const std::string dir = JoinPath(root, name);
    auto info = fs.Stat(dir);
    if (!info.ok() || !info->is_directory) continue;
    CachedDataSet set;
    set.dir = dir;
    set.bytes = TreeBytes(fs, dir);
    set.last_used = LastUsed(fs, dir, info->modified);
    sets.push_back(std::move(set));
  }
  return sets;
}

uint64_t EvictLeastRecentlyUsed(FileSystem& fs, std::vector<CachedDataSet> sets, const std::string& keep,
                                uint64_t target_bytes, std::chrono::system_clock::time_point now) {
  uint64_t total = 0;
  for (const CachedDataSet& set : sets) total += set.bytes;
  std::sort(sets.begin(), sets.end(),
            [](const CachedDataSet& a, const CachedDataSet& b) { return a.last_used < b.last_used; });
  for (const CachedDataSet& set : sets) {
    if (total <= target_bytes || now - set.last_used < kDataSetInUse) break;  // the rest are newer
    if (set.dir == keep) continue;
    // Another trainer may have opened it since the scan.
    auto dir_info = fs.Stat(set.dir);
    if (!dir_info.ok()) continue;
    if (now - LastUsed(fs, set.dir, dir_info->modified) < kDataSetInUse) continue;
    const double hours = std::chrono::duration<double, std::ratio<3600>>(now - set.last_used).count();
    char ago[32];
    std::snprintf(ago, sizeof(ago), "%.1f h ago", hours);
    Status removed = RemoveTree(fs, set.dir);
    if (!removed.ok()) {
      const uint64_t left = TreeBytes(fs, set.dir);
      total -= set.bytes - std::min(set.bytes, left);
      HETPS_LOG(WARNING) << "data cache: cannot evict " << set.dir << " (" << DescribeBytes(set.bytes)
                         << ", last used " << DescribeTime(set.last_used) << "): " << removed.message()
                         << "; " << DescribeBytes(left) << " of it stays";
      continue;
    }
    total -= set.bytes;
    HETPS_LOG(INFO) << "data cache: evicted " << set.dir << " (" << DescribeBytes(set.bytes) << ", last used "
                    << DescribeTime(set.last_used) << ", " << ago << ") to keep the cache within its limit";
  }
  return total;
}

}  // namespace hetps
