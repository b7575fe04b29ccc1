// Dataset: a split as LibTorch tensors over the memory of its HostDataset (no copy), and the
// batches cut from it. A batch is one gather of the chosen samples (index_select), then the
// conversion to float and the data's scaling, which run on the batch's device. Token data
// (token_data.h) has no tensors over its file: a batch copies its windows out of the mapping.
//
// A Dataset is read-only once made and may be shared by any number of threads; MakeBatch copies
// the samples it picks. Both functions are safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "common/status.h"
#include "trainer/data/dataset.h"

namespace hetps {

struct Dataset {
  torch::Tensor features;  // [N, sample shape...], uint8 or float32, CPU, over host->features;
                           // undefined for token data
  torch::Tensor targets;   // int64 [N] (classes) or float32 [N] / [N, k] (regression), CPU;
                           // undefined for token data
  double scale = 1;        // input = features * scale - offset
  double offset = 0;
  uint32_t classes = 0;                     // class targets: the number of classes (token data: the
                                            // vocabulary); 0 for float targets
  std::shared_ptr<const HostDataset> host;  // owns the memory the tensors view
  int64_t size() const;                     // N; 0 for a default-constructed Dataset
  bool is_tokens() const;                   // token data: batches name windows by their start
};

// Wraps `host` without copying its buffers. The shared form lets the caller go on writing into
// them (served data arriving), which batches made afterwards see.
Dataset ToTensors(HostDataset host);
Dataset ToTensors(std::shared_ptr<HostDataset> host);

// Reads a split with the readers of trainer/data/ (LoadDataset) and wraps it.
Result<Dataset> LoadTensorDataset(const DataOptions& options, DatasetSplit split, const std::string& data_dir,
                                  uint32_t classes = 0, const ReadLimits& limits = {});

struct Batch {
  torch::Tensor input;   // float [count, sample shape...] on the requested device, scaled; token
                         // data: int64 ids [count, context]
  torch::Tensor target;  // int64 [count] or float [count(, k)] on the requested device; token
                         // data: int64 [count, context], the input shifted by one token
};

// Gathers the samples `indices[0..count)` of `data` into a new batch on `device`. Indices may
// repeat; each must lie in [0, data.size()) (HETPS_CHECK otherwise: indices come from the
// trainer's own sampler, never from a user). For token data an index is a window's first token,
// in [0, tokens in the file). `count` may be 0, giving empty tensors.
Batch MakeBatch(const Dataset& data, const int64_t* indices, size_t count, torch::Device device);

// The indices MakeBatch takes for samples [begin, end) in the order of the file, unshuffled (an
// evaluation's, a first check's): the numbers themselves, or token windows' first positions
// (OrderedWindowStart).
std::vector<int64_t> OrderedSampleIndices(const Dataset& data, int64_t begin, int64_t end);

}  // namespace hetps
