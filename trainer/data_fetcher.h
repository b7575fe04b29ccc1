// DataFetcher: a trainer's side of served data (data.serve, --data-from-scheduler). Holds both
// splits in memory at their full size, as the scheduler's DataLayout describes them, with a note
// of which samples have arrived; Ensure() asks the scheduler for the samples still missing,
// checks each reply's CRC-32 and asks again when it differs, and writes them in place. Samples
// once received stay: the next epoch trains from this copy without asking again. With a cache
// (DataCache, on by default in main()), it first reads the samples a trainer on this machine
// received before, and writes each reply there: a trainer started again asks only for the rest.
//
// Torch-free. Owned by the trainer's loop thread, with the ControlChannel it uses; the datasets it
// fills are read by MakeBatch on the same thread (or after it, on the compute thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/control_channel.h"
#include "common/message.h"
#include "common/status.h"
#include "trainer/data/dataset.h"
#include "trainer/data_cache.h"

namespace hetps {

class DataFetcher {
 public:
  struct Options {
    std::chrono::milliseconds request_timeout{30000};  // a data request unanswered this long fails
    std::string cache_root;    // the on-disk cache's root (DefaultDataCacheRoot()); empty: none
    DataCacheOptions cache;    // its bound
    FileSystem* fs = nullptr;  // the file system the cache is on; null: PosixFileSystem()
  };

  // Allocates both splits as `layout` describes them (InvalidArgument when they would not fit
  // in memory; Protocol when the layout is implausible), then reads what the cache holds of this
  // data set. A cache that cannot be opened (a directory that cannot be created, a layout without
  // a checksum) is a warning, not an error: every sample is then fetched.
  static Result<std::unique_ptr<DataFetcher>> Create(const wire::DataLayout& layout, ControlChannel* control,
                                                     Sender* sender, const Options& options);

  // Makes samples `indices[0..count)` of `split` present, asking for the missing ones in replies
  // of at most the layout's max_reply_bytes. A reply whose checksum differs is counted and asked
  // for again, up to 5 times; then DataLoss-like Internal error naming the samples.
  Status Ensure(DatasetSplit split, const int64_t* indices, size_t count);
  // Whether every one of the samples is here (or was asked for already), so Ensure() would not fetch.
  bool Holds(DatasetSplit split, const int64_t* indices, size_t count) const;
  // Every sample of `split`.
  Status EnsureAll(DatasetSplit split);

  // The splits being filled; their buffers never move.
  std::shared_ptr<HostDataset> train() const { return train_; }
  std::shared_ptr<HostDataset> test() const { return test_; }

  // Ensure() for a chunk of `epoch` as it is granted, counted per epoch.
  Status EnsureChunk(uint32_t epoch, const int64_t* indices, size_t count);
  // What fetching `epoch`'s chunks took: requests answered (checksum failures included), bytes
  // received, and the chunks' samples that had to be fetched or were held already.
  struct EpochCounts {
    uint64_t requests = 0;
    uint64_t bytes = 0;
    uint64_t fetched_samples = 0;
    uint64_t held_samples = 0;
  };
  EpochCounts counts_in_epoch(uint32_t epoch) const;

  uint64_t requests() const { return requests_; }
  uint64_t bytes_received() const { return bytes_received_; }
  uint64_t checksum_failures() const { return checksum_failures_; }

  // The cache's directory for this data set; empty when there is no cache (or writing to it
  // failed, after which it is left alone).
  std::string cache_dir() const { return cache_ ? cache_->dir() : std::string(); }
  // What Create() read from the cache, per split.
  DataCache::LoadCounts cached(DatasetSplit split) const {
    return split == DatasetSplit::kTrain ? cached_train_ : cached_test_;
  }

 private:
  DataFetcher(ControlChannel* control, Sender* sender, std::chrono::milliseconds request_timeout)
      : control_(control), sender_(sender), request_timeout_(request_timeout) {}
  void OpenCache(const wire::DataLayout& layout, const Options& options);
  // One request for `indices` (all missing), retried on a bad checksum.
  Status Fetch(DatasetSplit split, const std::vector<uint64_t>& indices);

  ControlChannel* control_;
  Sender* sender_;
  std::chrono::milliseconds request_timeout_;
  std::shared_ptr<HostDataset> train_;
  std::shared_ptr<HostDataset> test_;
  std::vector<bool> train_present_;
  std::vector<bool> test_present_;
  uint64_t max_reply_bytes_ = 0;
  uint64_t requests_ = 0;
  uint64_t bytes_received_ = 0;
  uint64_t checksum_failures_ = 0;
  uint32_t epoch_ = 0;  // of the chunk being fetched; the test split counts as epoch 0
  std::map<uint32_t, EpochCounts> by_epoch_;
  std::unique_ptr<DataCache> cache_;
  DataCache::LoadCounts cached_train_;
  DataCache::LoadCounts cached_test_;
};

}  // namespace hetps
