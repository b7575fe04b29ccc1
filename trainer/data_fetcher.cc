#include "trainer/data_fetcher.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "common/logging.h"

namespace hetps {
namespace {

constexpr int kMaxAttempts = 5;

Result<std::shared_ptr<HostDataset>> Allocate(const wire::DataLayout& layout, uint64_t samples,
                                              const char* split) {
  auto data = std::make_shared<HostDataset>();
  data->source = std::string("the scheduler's ") + split + " split";
  data->samples = static_cast<int64_t>(samples);
  if (layout.sample_shape() == nullptr || layout.sample_shape()->size() == 0) {
    return Status::Protocol("the scheduler's data layout has no sample shape");
  }
  data->sample_shape.assign(layout.sample_shape()->begin(), layout.sample_shape()->end());
  for (int64_t dim : data->sample_shape) {
    if (dim <= 0 || dim > (int64_t{1} << 31))
      return Status::Protocol("the scheduler's data layout has a bad shape");
  }
  if (layout.feature_dtype() != wire::DType::U8 && layout.feature_dtype() != wire::DType::F32) {
    return Status::Protocol("the scheduler's data layout has features that are neither U8 nor F32");
  }
  data->feature_type =
      layout.feature_dtype() == wire::DType::U8 ? FeatureType::kUInt8 : FeatureType::kFloat32;
  data->float_targets = layout.float_targets();
  data->target_width = layout.target_width();
  if (data->target_width < 1 || data->target_width > (1 << 20)) {
    return Status::Protocol("the scheduler's data layout has a bad target width");
  }
  data->classes = layout.classes();
  data->divide_by = layout.divide_by() > 0 ? layout.divide_by() : 1;
  data->mean = layout.mean();
  data->std = layout.std() > 0 ? layout.std() : 1;
  const long double bytes = static_cast<long double>(samples) *
                            static_cast<long double>(data->sample_bytes() + data->target_bytes());
  if (bytes > static_cast<long double>(uint64_t{1} << 62))
    return Status::Protocol("the served data set is implausibly large");
  HETPS_RETURN_IF_ERROR(CheckFitsInMemory(data->source, static_cast<uint64_t>(bytes), {}));
  data->features.assign(samples * data->sample_bytes(), 0);
  if (data->float_targets) {
    data->float_targets_values.assign(samples * static_cast<uint64_t>(data->target_width), 0.f);
  } else {
    data->class_targets.assign(samples, 0);
  }
  return data;
}

}  // namespace

Result<std::unique_ptr<DataFetcher>> DataFetcher::Create(const wire::DataLayout& layout,
                                                         ControlChannel* control, Sender* sender,
                                                         const Options& options) {
  std::unique_ptr<DataFetcher> fetcher(new DataFetcher(control, sender, options.request_timeout));
  HETPS_ASSIGN_OR_RETURN(fetcher->train_, Allocate(layout, layout.train_samples(), "training"));
  HETPS_ASSIGN_OR_RETURN(fetcher->test_, Allocate(layout, layout.test_samples(), "test"));
  fetcher->train_present_.assign(layout.train_samples(), false);
  fetcher->test_present_.assign(layout.test_samples(), false);
  fetcher->max_reply_bytes_ = layout.max_reply_bytes();
  fetcher->OpenCache(layout, options);
  return fetcher;
}

void DataFetcher::OpenCache(const wire::DataLayout& layout, const Options& options) {
  if (options.cache_root.empty()) {
    HETPS_LOG(INFO) << "no cache for the served data (--data-cache off): it is fetched in every run";
    return;
  }
  if (layout.checksum() == nullptr || layout.checksum()->size() == 0) {
    HETPS_LOG(WARNING)
        << "the scheduler names no checksum for its data (an older version?): caching none of it";
    return;
  }
  FileSystem& fs = options.fs != nullptr ? *options.fs : PosixFileSystem();
  auto cache = DataCache::Open(fs, options.cache_root, layout.checksum()->str(), options.cache);
  if (!cache.ok()) {
    HETPS_LOG(WARNING) << cache.status().message() << "; going on without a cache";
    return;
  }
  cache_ = std::move(*cache);
  const auto start = std::chrono::steady_clock::now();
  cached_train_ = cache_->Load(DatasetSplit::kTrain, *train_, train_present_);
  cached_test_ = cache_->Load(DatasetSplit::kTest, *test_, test_present_);
  HETPS_LOG(INFO) << "served data cache " << cache_->dir() << ": read " << cached_train_.samples << " of "
                  << train_->samples << " training and " << cached_test_.samples << " of " << test_->samples
                  << " test samples from " << cached_train_.pieces + cached_test_.pieces << " pieces in "
                  << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s"
                  << "; discarded " << cached_train_.discarded + cached_test_.discarded
                  << " damaged or foreign, " << cached_train_.redundant + cached_test_.redundant
                  << " redundant";
}

DataFetcher::EpochCounts DataFetcher::counts_in_epoch(uint32_t epoch) const {
  auto it = by_epoch_.find(epoch);
  return it == by_epoch_.end() ? EpochCounts{} : it->second;
}

Status DataFetcher::EnsureChunk(uint32_t epoch, const int64_t* indices, size_t count) {
  epoch_ = epoch;
  EpochCounts& counts = by_epoch_[epoch];
  for (size_t i = 0; i < count; ++i) {
    const int64_t index = indices[i];
    HETPS_CHECK(index >= 0 && index < train_->samples) << "sample " << index << " outside the served split";
    ++(train_present_[index] ? counts.held_samples : counts.fetched_samples);
  }
  return Ensure(DatasetSplit::kTrain, indices, count);
}

Status DataFetcher::EnsureAll(DatasetSplit split) {
  const int64_t n = split == DatasetSplit::kTrain ? train_->samples : test_->samples;
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[i] = i;
  return Ensure(split, all.data(), all.size());
}

Status DataFetcher::Ensure(DatasetSplit split, const int64_t* indices, size_t count) {
  const bool train = split == DatasetSplit::kTrain;
  std::vector<bool>& present = train ? train_present_ : test_present_;
  const HostDataset& data = train ? *train_ : *test_;
  const uint64_t per_sample = data.sample_bytes() + data.target_bytes();
  const size_t per_request = static_cast<size_t>(std::max<uint64_t>(1, max_reply_bytes_ / per_sample));
  std::vector<uint64_t> missing;
  for (size_t i = 0; i < count; ++i) {
    const int64_t index = indices[i];
    HETPS_CHECK(index >= 0 && index < data.samples) << "sample " << index << " outside the served split";
    if (present[index]) continue;
    present[index] = true;  // asked for once, even when a chunk repeats it
    missing.push_back(static_cast<uint64_t>(index));
    if (missing.size() == per_request) {
      HETPS_RETURN_IF_ERROR(Fetch(split, missing));
      missing.clear();
    }
  }
  if (!missing.empty()) HETPS_RETURN_IF_ERROR(Fetch(split, missing));
  return Status::Ok();
}

bool DataFetcher::Holds(DatasetSplit split, const int64_t* indices, size_t count) const {
  const std::vector<bool>& present = split == DatasetSplit::kTrain ? train_present_ : test_present_;
  for (size_t i = 0; i < count; ++i) {
    if (indices[i] < 0 || static_cast<size_t>(indices[i]) >= present.size() || !present[indices[i]])
      return false;
  }
  return true;
}

Status DataFetcher::Fetch(DatasetSplit split, const std::vector<uint64_t>& indices) {
  HostDataset& data = split == DatasetSplit::kTrain ? *train_ : *test_;
  const wire::DataSplit wire_split =
      split == DatasetSplit::kTrain ? wire::DataSplit::Train : wire::DataSplit::Test;
  const size_t sample_bytes = data.sample_bytes();
  const size_t target_bytes = data.target_bytes();
  for (int attempt = 1;; ++attempt) {
    flatbuffers::FlatBufferBuilder fbb(64 + 8 * indices.size());
    auto body = wire::CreateDataRequestDirect(fbb, wire_split, &indices, control_->served_receipt());
    auto reply = control_->Request(sender_->Seal(fbb, wire::Body::DataRequest, body.Union()),
                                   wire::Body::DataSamples, request_timeout_);
    if (!reply.ok()) return reply.status().WithContext("asking the scheduler for data");
    ++requests_;
    ++by_epoch_[epoch_].requests;
    const auto* samples = reply->body<wire::DataSamples>();
    const bool matches = samples->split() == wire_split && samples->samples() != nullptr &&
                         samples->samples()->size() == indices.size() &&
                         std::equal(indices.begin(), indices.end(), samples->samples()->begin());
    if (!matches) {
      // An answer to an earlier request that timed out: ask again.
      if (attempt < kMaxAttempts) continue;
      return Status::Protocol("the scheduler answered data requests with other samples than asked for");
    }
    const auto* features = samples->features();
    const auto* targets = samples->targets();
    if (features == nullptr || targets == nullptr || features->size() != indices.size() * sample_bytes ||
        targets->size() != indices.size() * target_bytes) {
      return Status::Protocol("the scheduler sent " + std::to_string(indices.size()) +
                              " samples with the wrong number of bytes");
    }
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32_z(crc, features->data(), features->size());
    crc = crc32_z(crc, targets->data(), targets->size());
    bytes_received_ += features->size() + targets->size();
    by_epoch_[epoch_].bytes += features->size() + targets->size();
    if (static_cast<uint32_t>(crc) != samples->crc32()) {
      ++checksum_failures_;
      HETPS_LOG(WARNING) << "served data for " << indices.size() << " samples (from sample " << indices[0]
                         << ") failed its checksum (crc32 " << crc << ", expected " << samples->crc32()
                         << "); asking again (attempt " << attempt << " of " << kMaxAttempts << ")";
      if (attempt < kMaxAttempts) continue;
      return Status::Internal("served data failed its checksum " + std::to_string(kMaxAttempts) +
                              " times in a row; the link to the scheduler corrupts data");
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      std::memcpy(data.features.data() + indices[i] * sample_bytes, features->data() + i * sample_bytes,
                  sample_bytes);
      data.SetTarget(static_cast<int64_t>(indices[i]), targets->data() + i * target_bytes);
    }
    if (cache_) {
      Status stored =
          cache_->Store(split, indices, features->data(), features->size(), targets->data(), targets->size());
      if (!stored.ok()) {
        // A full or read-only disk costs the next run its cache, never this one its data.
        HETPS_LOG(WARNING) << stored.message() << "; caching nothing more in this run";
        cache_.reset();
      }
    }
    return Status::Ok();
  }
}

}  // namespace hetps
