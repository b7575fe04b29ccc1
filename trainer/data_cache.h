// DataCache: a trainer machine's copy on disk of the data the scheduler serves (data.serve), so
// that a trainer started again, or the next job on the same data, reads it from disk instead of
// asking the scheduler for it over the network. One directory per data set under the cache's root,
// named by the checksum the scheduler announces (DataLayout.checksum), so another data set never
// reads it; in it, one file ("piece") per reply received, as received, with a CRC-32 of the whole
// file. Pieces are written to a temporary name and renamed into place, and every piece is checked
// when read: a piece cut short (a crash, a full disk) or damaged is removed and its samples are
// fetched again. Nothing is synced: after a power loss a piece may be lost, never trusted damaged.
// The root is bounded (DataCacheOptions::limit_bytes): the data sets least recently used go first,
// whole (trainer/data_cache_eviction.h).
//
// Owned by a DataFetcher, on the trainer's loop thread. Several trainers (processes or threads)
// may share a directory: each writes whole pieces under names of its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/file_system.h"
#include "common/status.h"
#include "trainer/data/dataset.h"
#include "trainer/data_cache_eviction.h"

namespace hetps {

// The cache's default root: $XDG_CACHE_HOME/hetps/data when that is set (and absolute), else
// $HOME/.cache/hetps/data; empty (no cache) when neither is. main() passes the environment's values.
std::string DefaultDataCacheRoot(const char* xdg_cache_home, const char* home);

struct DataCacheOptions {
  // The most that the data set directories under the root may hold together
  // (--data-cache-limit); 0: no limit. Other files under the root are neither counted nor removed.
  uint64_t limit_bytes = kDefaultDataCacheLimitBytes;
};

class DataCache {
 public:
  // Opens the cache of the data set whose checksum is `dataset_checksum` ("crc32:" and 16 hex
  // digits) under `root`, creating its directory, marks the data set used now (its stamp,
  // kDataSetStampName) and removes temporary files that processes which have ended left behind.
  // When the root's data sets hold more than the limit, evicts others (EvictLeastRecentlyUsed);
  // when that cannot bring the root within it, warns once, and Store() stores nothing. InvalidArgument
  // for a checksum of another form; IoError naming the directory or stamp when it cannot be
  // created. `fs` must outlive the cache.
  static Result<std::unique_ptr<DataCache>> Open(FileSystem& fs, const std::string& root,
                                                 const std::string& dataset_checksum,
                                                 const DataCacheOptions& options = DataCacheOptions());

  // The data set's directory: root/crc32-<16 hex digits>.
  const std::string& dir() const { return dir_; }

  struct LoadCounts {
    uint64_t pieces = 0;     // read and used
    uint64_t samples = 0;    // samples they made present that were not
    uint64_t discarded = 0;  // removed: damaged, cut short, or not of this data set and layout
    uint64_t redundant = 0;  // removed: every sample also in a piece read before
  };
  // Reads every piece of `split` into `data` (allocated at its full size) and sets present[i] for
  // each sample it holds. A piece that fails its CRC-32, is cut short, or does not fit this data set
  // (its checksum, sample or target size, an index beyond the split) is removed with a warning that
  // names it and says why; its samples stay missing, to be fetched again.
  LoadCounts Load(DatasetSplit split, HostDataset& data, std::vector<bool>& present);

  // Writes the samples `indices` of `split` as one piece: `features` (the samples' bytes one after
  // another) and `targets` (theirs, as stored), as a reply carried them. IoError naming the file
  // when it cannot be written; what was written is then removed. A piece that would take the root
  // past the limit first evicts others as Open() does; when that cannot make room (this data set
  // alone is too large, or the others were used within the hour), it warns once and from then on
  // stores nothing, returning OK: what is cached stays. The root's size is a running total of what
  // Open() found and this cache stored since, measured again only when it would pass the limit.
  Status Store(DatasetSplit split, const std::vector<uint64_t>& indices, const uint8_t* features,
               size_t feature_bytes, const uint8_t* targets, size_t target_bytes);

 private:
  DataCache(FileSystem& fs, std::string root, std::string dir, std::string dataset_checksum,
            const DataCacheOptions& options)
      : fs_(fs),
        root_(std::move(root)),
        dir_(std::move(dir)),
        checksum_(std::move(dataset_checksum)),
        options_(options) {}
  void RemoveAbandonedTemporaries(const std::vector<std::string>& names);
  // Why `contents` cannot be used as a piece of `data`, or empty when it can.
  std::string Invalid(const std::string& contents, DatasetSplit split, const HostDataset& data) const;
  // Writes the stamp: the data set is used now.
  Status MarkUsed();
  // Measures the root and evicts until `incoming_bytes` more fit within the limit; false, after
  // the one warning, when they cannot (full_).
  bool MakeRoom(uint64_t incoming_bytes);

  FileSystem& fs_;
  std::string root_;
  std::string dir_;
  std::string checksum_;
  DataCacheOptions options_;
  uint64_t root_bytes_ = 0;  // the root's data sets, this one included, as last measured plus stored since
  bool full_ = false;        // stores nothing more
  std::chrono::steady_clock::time_point marked_used_;
};

}  // namespace hetps
