#include "trainer/data/dataset.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trainer/data/csv.h"
#include "trainer/data/idx.h"
#include "trainer/data/npy.h"
#include "trainer/data/token_data.h"

namespace hetps {
namespace {

std::string Resolve(const std::string& dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(dir) / path).string();
}

std::string Gigabytes(uint64_t bytes) {
  std::ostringstream out;
  out.precision(3);
  out << static_cast<double>(bytes) / 1e9 << " GB";
  return out.str();
}

}  // namespace

const char* DatasetSplitName(DatasetSplit split) {
  return split == DatasetSplit::kTrain ? "train" : "test";
}

size_t FeatureTypeBytes(FeatureType type) {
  return type == FeatureType::kUInt8 ? 1 : 4;
}

int64_t HostDataset::sample_elements() const {
  int64_t elements = 1;
  for (int64_t dim : sample_shape) elements *= dim;
  return elements;
}

size_t HostDataset::sample_bytes() const {
  return static_cast<size_t>(sample_elements()) * FeatureTypeBytes(feature_type);
}

size_t HostDataset::target_bytes() const {
  return float_targets ? 4 * static_cast<size_t>(target_width) : 8;
}

void HostDataset::CopyTarget(int64_t i, uint8_t* out) const {
  if (float_targets) {
    std::memcpy(out, float_targets_values.data() + i * target_width, target_bytes());
  } else {
    std::memcpy(out, class_targets.data() + i, 8);
  }
}

void HostDataset::SetTarget(int64_t i, const uint8_t* in) {
  if (float_targets) {
    std::memcpy(float_targets_values.data() + i * target_width, in, target_bytes());
  } else {
    std::memcpy(class_targets.data() + i, in, 8);
  }
}

uint64_t ServedReplyBytes(uint64_t bytes_per_sample) {
  return std::max<uint64_t>(kMaxServedReplyBytes, bytes_per_sample);
}

uint64_t AvailableMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_bytes > 0) return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_bytes);
  return UINT64_MAX;
}

Status CheckFitsInMemory(const std::string& path, uint64_t bytes, const ReadLimits& limits) {
  const uint64_t budget =
      limits.memory_budget_bytes > 0 ? limits.memory_budget_bytes : AvailableMemoryBytes();
  if (bytes <= budget) return Status::Ok();
  return Status::InvalidArgument(
      path + ": too large for memory: reading it needs " + Gigabytes(bytes) + " but only " +
      Gigabytes(budget) +
      (limits.memory_budget_bytes > 0 ? " are allowed" : " are available on this machine") +
      " (hetps holds a data set in memory; use a subset or a machine with more memory)");
}

Status FinishDataset(const DataOptions& options, uint32_t classes, const std::string& labels_path,
                     const std::function<std::string(int64_t)>& where, HostDataset* data) {
  if (!options.sample_shape.empty()) {
    int64_t wanted = 1;
    std::string text;
    for (int64_t dim : options.sample_shape) {
      wanted *= dim;
      text += (text.empty() ? "" : ", ") + std::to_string(dim);
    }
    if (wanted != data->sample_elements()) {
      return Status::InvalidArgument(data->source + ": data.sample_shape [" + text + "] holds " +
                                     std::to_string(wanted) + " values, but each sample has " +
                                     std::to_string(data->sample_elements()));
    }
    data->sample_shape = options.sample_shape;
  }
  if (!data->float_targets) {
    int64_t largest = -1;
    for (int64_t i = 0; i < data->samples; ++i) {
      const int64_t label = data->class_targets[i];
      if (label < 0) {
        return Status::InvalidArgument(labels_path + ": label " + std::to_string(label) + " at " + where(i) +
                                       " is negative; class labels are 0, 1, 2, ...");
      }
      largest = std::max(largest, label);
    }
    const uint32_t count = classes != 0 ? classes : options.classes;
    if (count != 0) {
      for (int64_t i = 0; i < data->samples; ++i) {
        if (data->class_targets[i] >= count) {
          return Status::InvalidArgument(labels_path + ": label " + std::to_string(data->class_targets[i]) +
                                         " at " + where(i) + " is out of range 0.." +
                                         std::to_string(count - 1));
        }
      }
      data->classes = count;
    } else {
      data->classes = static_cast<uint32_t>(largest + 1);
    }
  }
  const double divide_by =
      options.divide_by > 0 ? options.divide_by : (data->feature_type == FeatureType::kUInt8 ? 255.0 : 1.0);
  data->divide_by = divide_by;
  data->mean = options.mean;
  data->std = options.std;
  return Status::Ok();
}

Result<HostDataset> LoadDataset(const DataOptions& options, DatasetSplit split, const std::string& data_dir,
                                uint32_t classes, const ReadLimits& limits) {
  const DataFiles& files = split == DatasetSplit::kTrain ? options.train : options.test;
  const std::string x = Resolve(data_dir, files.x);
  const std::string y = Resolve(data_dir, files.y);
  if (options.format == "idx") return LoadIdx(options, x, y, classes, limits);
  if (options.format == "csv") return LoadCsv(options, x, classes, limits);
  if (options.format == "npy") return LoadNpy(options, x, y, classes, limits);
  if (options.format == "tokens") return LoadTokens(options, x, split, classes);
  return Status::InvalidArgument("data.format: '" + options.format +
                                 "' is not a format; allowed: idx, csv, npy, tokens");
}

DataOptions FashionMnistOptions(const std::string& dir) {
  DataOptions options;
  options.format = "idx";
  const std::filesystem::path base(dir);
  options.train = {(base / "train-images-idx3-ubyte.gz").string(),
                   (base / "train-labels-idx1-ubyte.gz").string()};
  options.test = {(base / "t10k-images-idx3-ubyte.gz").string(),
                  (base / "t10k-labels-idx1-ubyte.gz").string()};
  options.classes = 10;
  options.divide_by = 255;
  return options;
}

}  // namespace hetps
