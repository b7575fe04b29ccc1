#include "trainer/data/tensor_dataset.h"

#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "common/check.h"
#include "trainer/data/token_data.h"
#include "trainer/data/token_file.h"

namespace hetps {

int64_t Dataset::size() const {
  if (is_tokens()) return host->samples;
  return targets.defined() ? targets.size(0) : 0;
}

bool Dataset::is_tokens() const {
  return host && host->tokens;
}

Dataset ToTensors(HostDataset host_data) {
  return ToTensors(std::make_shared<HostDataset>(std::move(host_data)));
}

Dataset ToTensors(std::shared_ptr<HostDataset> host) {
  Dataset data;
  if (host->tokens) {
    data.classes = host->classes;
    data.host = std::move(host);
    return data;
  }
  std::vector<int64_t> sizes = {host->samples};
  sizes.insert(sizes.end(), host->sample_shape.begin(), host->sample_shape.end());
  const auto dtype = host->feature_type == FeatureType::kUInt8 ? torch::kUInt8 : torch::kFloat;
  // The tensors borrow the host's buffers; `data.host` keeps them alive. They are never written.
  data.features = torch::from_blob(host->features.data(), sizes, torch::TensorOptions().dtype(dtype));
  if (host->float_targets) {
    std::vector<int64_t> target_sizes = {host->samples};
    if (host->target_width != 1) target_sizes.push_back(host->target_width);
    data.targets = torch::from_blob(host->float_targets_values.data(), target_sizes,
                                    torch::TensorOptions().dtype(torch::kFloat));
  } else {
    data.targets = torch::from_blob(host->class_targets.data(), {host->samples},
                                    torch::TensorOptions().dtype(torch::kInt64));
    data.classes = host->classes;
  }
  // Computed as the fused constants the trainer has always used: x * (1 / (d * std)) - mean / std.
  data.scale = 1.0 / (host->divide_by * host->std);
  data.offset = host->mean / host->std;
  data.host = std::move(host);
  return data;
}

Result<Dataset> LoadTensorDataset(const DataOptions& options, DatasetSplit split, const std::string& data_dir,
                                  uint32_t classes, const ReadLimits& limits) {
  HETPS_ASSIGN_OR_RETURN(HostDataset host, LoadDataset(options, split, data_dir, classes, limits));
  return ToTensors(std::move(host));
}

namespace {

// Each window's tokens and, one further on, its targets, read out of the mapping.
Batch MakeTokenBatch(const TokenFile& tokens, int64_t context, const int64_t* starts, size_t count,
                     torch::Device device) {
  const auto rows = static_cast<int64_t>(count);
  torch::Tensor window = torch::empty({rows, context + 1}, torch::kInt64);
  int64_t* values = window.data_ptr<int64_t>();
  for (size_t i = 0; i < count; ++i) {
    HETPS_CHECK(starts[i] >= 0 && static_cast<uint64_t>(starts[i]) < tokens.size())
        << "token window start " << starts[i] << " outside [0, " << tokens.size() << ")";
    tokens.Read(static_cast<uint64_t>(starts[i]), static_cast<size_t>(context + 1),
                values + i * (context + 1));
  }
  window = window.to(device);
  Batch batch;
  batch.input = window.narrow(1, 0, context).contiguous();
  batch.target = window.narrow(1, 1, context).contiguous();
  return batch;
}

}  // namespace

std::vector<int64_t> OrderedSampleIndices(const Dataset& data, int64_t begin, int64_t end) {
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(std::max<int64_t>(0, end - begin)));
  for (int64_t i = begin; i < end; ++i)
    indices.push_back(data.is_tokens() ? OrderedWindowStart(*data.host, i) : i);
  return indices;
}

Batch MakeBatch(const Dataset& data, const int64_t* indices, size_t count, torch::Device device) {
  if (data.is_tokens())
    return MakeTokenBatch(*data.host->tokens, data.host->sample_shape[0], indices, count, device);
  HETPS_CHECK(data.features.defined() && data.targets.defined()) << "MakeBatch on an empty Dataset";
  const int64_t size = data.size();
  torch::Tensor index = torch::empty({static_cast<int64_t>(count)}, torch::kInt64);
  int64_t* index_values = index.data_ptr<int64_t>();
  for (size_t i = 0; i < count; ++i) {
    HETPS_CHECK(indices[i] >= 0 && indices[i] < size)
        << "sample index " << indices[i] << " outside [0, " << size << ")";
    index_values[i] = indices[i];
  }
  // Gather and move the stored type first: a uint8 batch is a quarter of the float one to copy to
  // an accelerator, and the conversion then runs where the batch will be used.
  torch::Tensor gathered = data.features.index_select(0, index).to(device);
  Batch batch;
  if (gathered.scalar_type() == torch::kFloat && data.scale == 1 && data.offset == 0) {
    batch.input = gathered;
  } else {
    batch.input = gathered.to(torch::kFloat).mul_(data.scale).sub_(data.offset);
  }
  batch.target = data.targets.index_select(0, index).to(device);
  return batch;
}

}  // namespace hetps
