// HostDataset: one split of a data set in host memory, as the readers (idx.h, csv.h, npy.h) give
// it, without LibTorch, so the scheduler can read and serve it too. Features sit in one
// contiguous buffer, sample after sample, so a batch is one gather; targets likewise. Token data
// (token_data.h) is the exception: its ids stay in a memory-mapped file, and a sample is a window
// of them.
//
// LoadDataset picks the reader for DataOptions::format. A loaded HostDataset is read-only and may
// be shared by any number of threads; the functions here may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/data_options.h"
#include "common/status.h"

namespace hetps {

enum class DatasetSplit { kTrain, kTest };

class TokenFile;

// "train" or "test".
const char* DatasetSplitName(DatasetSplit split);

enum class FeatureType { kUInt8, kFloat32 };

// Size in bytes of one element.
size_t FeatureTypeBytes(FeatureType type);

struct HostDataset {
  std::string source;                 // the file(s) read, for messages
  int64_t samples = 0;                // N
  std::vector<int64_t> sample_shape;  // one sample's shape, e.g. [1, 28, 28]
  FeatureType feature_type = FeatureType::kUInt8;
  std::vector<uint8_t> features;  // N x prod(sample_shape) elements of feature_type
  bool float_targets = false;
  std::vector<int64_t> class_targets;       // N labels in 0..classes-1 (class targets)
  std::vector<float> float_targets_values;  // N x target_width values (float targets)
  int64_t target_width = 1;                 // float targets per sample
  uint32_t classes = 0;                     // class targets: the number of classes
  // input = (x / divide_by - mean) / std, element by element (DataOptions, resolved).
  double divide_by = 1;
  double mean = 0;
  double std = 1;
  // Token data (format tokens): the mapped file, and features and targets stay empty. A sample is
  // a window of sample_shape[0] tokens, named in batches by its first token's position;
  // `classes` is the vocabulary.
  std::shared_ptr<const TokenFile> tokens;

  int64_t sample_elements() const;  // prod(sample_shape)
  size_t sample_bytes() const;      // sample_elements() x the feature type's size
  size_t target_bytes() const;      // one sample's target: 8 (int64) or 4 x target_width (float)
  // Copies sample i's target bytes (as stored: int64 or float32, host order) to `out`, or back.
  void CopyTarget(int64_t i, uint8_t* out) const;
  void SetTarget(int64_t i, const uint8_t* in);
};

// The most feature and target bytes one served reply carries (data.serve): far below the 16 MiB
// of a control message, so that heartbeats never wait long behind one; at least one sample.
inline constexpr uint64_t kMaxServedReplyBytes = 4u << 20;
uint64_t ServedReplyBytes(uint64_t bytes_per_sample);

// How much memory a reader may use for one split; 0: what the machine has available now.
struct ReadLimits {
  uint64_t memory_budget_bytes = 0;
};

// The memory the machine can give without swapping (MemAvailable on Linux, physical memory
// elsewhere), in bytes.
uint64_t AvailableMemoryBytes();

// InvalidArgument naming `path` when `bytes` would not fit in memory (the budget, or what is
// available); said before anything that large is allocated.
Status CheckFitsInMemory(const std::string& path, uint64_t bytes, const ReadLimits& limits);

// Reads one split of the data the options describe. Relative paths are taken under `data_dir`.
// Errors name the file and the line (CSV) or index (IDX, NPY) of the problem: a missing file,
// a wrong magic number or header, ragged rows, x and y of different lengths, a label out of
// range, data too large for memory. `classes`: the class count when known (the test split takes
// the training split's); 0: options.classes, or the largest label + 1. Token files are mapped,
// not read (LoadTokens: `classes` is the vocabulary, and `limits` do not apply).
Result<HostDataset> LoadDataset(const DataOptions& options, DatasetSplit split, const std::string& data_dir,
                                uint32_t classes = 0, const ReadLimits& limits = {});

// The built-in Fashion-MNIST as DataOptions: the IDX files under `dir`, 10 classes, pixels
// divided by 255 into [0, 1] (the built-in models standardise them themselves, models.h).
DataOptions FashionMnistOptions(const std::string& dir);

// Shared by the readers: applies options.sample_shape (same element count) or keeps the reader's,
// checks the labels against the class count (errors name `labels_path` and, through `where`, the
// sample's line or index), and fills the transform.
Status FinishDataset(const DataOptions& options, uint32_t classes, const std::string& labels_path,
                     const std::function<std::string(int64_t)>& where, HostDataset* data);

}  // namespace hetps
