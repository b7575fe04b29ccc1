// The bound on a data cache's root (hetps-trainer --data-cache-limit): what the data set
// directories under the root hold, when each was last used, and the removal of whole ones, least
// recently used first. DataCache calls it on the trainer's loop thread when it opens and when it
// would grow past the bound. Several trainer processes may share a root, each evicting: none
// removes a data set used within the last hour (kDataSetInUse), which another may be reading.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/file_system.h"
#include "common/status.h"

namespace hetps {

// The bound on a cache root unless --data-cache-limit says otherwise: 20 GiB.
constexpr uint64_t kDefaultDataCacheLimitBytes = uint64_t{20} << 30;
// A data set used more recently than this is never removed.
constexpr std::chrono::hours kDataSetInUse{1};
// The file in each data set's directory whose mtime is the data set's last use: written by every
// DataCache::Open of it (and now and then while a trainer stores pieces).
constexpr char kDataSetStampName[] = "last-used";

// Parses a --data-cache-limit value: bytes, or a whole number followed by K, M, G or T (powers of
// 1024), e.g. "20G"; "0" or "none": no limit, returned as 0. InvalidArgument quoting the value
// when it is none of these or more than 64 bits hold.
Result<uint64_t> ParseDataCacheLimit(const std::string& text);

// "512 bytes", "20.0 GiB": a size for a log line.
std::string DescribeBytes(uint64_t bytes);

// Whether `name` is that of a data set's directory: "crc32-" and 16 lowercase hex digits.
bool IsDataSetDirName(const std::string& name);

struct CachedDataSet {
  std::string dir;
  uint64_t bytes = 0;                               // the lengths of the files in it, at any depth
  std::chrono::system_clock::time_point last_used;  // its stamp's mtime; without one, the directory's
};

// The data set directories under `root`: entries with a data set's name that are directories (not
// links to one). Everything else is left out, as is a directory that vanishes during the scan.
// IoError naming the root when it cannot be listed; none when it does not exist.
Result<std::vector<CachedDataSet>> ScanDataCacheRoot(FileSystem& fs, const std::string& root);

// Removes whole data sets of `sets`, least recently used first, until those left hold at most
// `target_bytes`; never the one whose directory is `keep`, nor one used after now - kDataSetInUse
// (its stamp read again just before removing it). Logs each removal at INFO with the directory,
// its size and its last use; a removal that fails is a warning. Returns what the sets left hold.
uint64_t EvictLeastRecentlyUsed(FileSystem& fs, std::vector<CachedDataSet> sets, const std::string& keep,
                                uint64_t target_bytes, std::chrono::system_clock::time_point now);

}  // namespace hetps
