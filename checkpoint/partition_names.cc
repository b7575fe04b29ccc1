#include "checkpoint/partition_names.h"

namespace hetps {

std::string PartitionTensorName(const std::string& tensor, uint64_t begin, uint64_t end) {
  return tensor + "[" + std::to_string(begin) + ":" + std::to_string(end) + "]";
}

std::string PartitionStateName(const std::string& partition_name, const std::string& slot) {
  return partition_name + "." + slot;
}

}  // namespace hetps
