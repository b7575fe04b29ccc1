// Fashion-MNIST as two CPU tensors, read from the gzipped IDX files, and the batches cut from it.
//
// LoadFashionMnist returns a Dataset that owns its tensors; MakeBatch copies the samples it picks,
// so a Dataset may be shared read-only by any number of threads once it is loaded. Both functions
// are safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <torch/types.h>

#include "common/status.h"

namespace hetps {

enum class DatasetSplit { kTrain, kTest };

// "train" or "test".
const char* DatasetSplitName(DatasetSplit split);

// Mean and standard deviation of the Fashion-MNIST training pixels scaled to [0, 1].
inline constexpr double kFashionMnistPixelMean = 0.2860;
inline constexpr double kFashionMnistPixelStd = 0.3530;
inline constexpr int64_t kFashionMnistImageSide = 28;
inline constexpr int64_t kFashionMnistClasses = 10;

struct Dataset {
  torch::Tensor images;  // uint8 [N, 28, 28], CPU, contiguous
  torch::Tensor labels;  // int64 [N], CPU, values 0..9
  int64_t size() const;  // N; 0 for a default-constructed Dataset
};

// Reads {train,t10k}-images-idx3-ubyte.gz and the matching labels-idx1-ubyte.gz from `dir`
// (gzipped big-endian IDX, as Debian's dataset-fashion-mnist ships them) into a Dataset.
// Errors name the file and the problem:
//   NotFound         the file does not exist (with the full path and how to install it);
//   IoError          the operating system refused to open or read it;
//   InvalidArgument  not gzip, corrupt or truncated data (expected vs. got bytes), trailing data,
//                    a wrong IDX magic number, images that are not 28x28, more than 1,048,576
//                    samples, image and label counts that differ, a label outside 0..9.
Result<Dataset> LoadFashionMnist(const std::string& dir, DatasetSplit split);

struct Batch {
  torch::Tensor input;   // float [count, 1, 28, 28] on the requested device, normalised
  torch::Tensor target;  // int64 [count] on the requested device
};

// Gathers the samples `indices[0..count)` of `data` into a new batch on `device`: pixels scaled to
// [0, 1], then normalised with kFashionMnistPixelMean and kFashionMnistPixelStd. Indices may
// repeat; each must lie in [0, data.size()) (HETPS_CHECK otherwise: indices come from the
// trainer's own sampler, never from a user). `count` may be 0, giving empty tensors.
Batch MakeBatch(const Dataset& data, const int64_t* indices, size_t count, torch::Device device);

}  // namespace hetps
