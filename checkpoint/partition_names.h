// How a server's checkpoint file names what it holds: partition p of tensor `fc1.weight`, elements
// [begin, end) of the flattened tensor, is `fc1.weight[begin:end]` (float32, shape [end - begin]);
// its optimizer state slots are `fc1.weight[begin:end].<slot>` (torch's names: momentum_buffer,
// exp_avg, exp_avg_sq, max_exp_avg_sq, sum), its update count `fc1.weight[begin:end].step`
// (int64 scalar) and, with an lr schedule, its position (kScheduleSlot). Pure functions; safe from any
// thread.
#pragma once

#include <cstdint>
#include <string>

namespace hetps {

// "fc1.weight[0:1024]"
std::string PartitionTensorName(const std::string& tensor, uint64_t begin, uint64_t end);
// "fc1.weight[0:1024].exp_avg"
std::string PartitionStateName(const std::string& partition_name, const std::string& slot);

// The state slot holding a partition's update count.
constexpr const char* kStepSlot = "step";
// With an lr schedule: the samples its updates have stepped on, the schedule's position (int64
// scalar, `fc1.weight[begin:end].lr_schedule_samples`).
constexpr const char* kScheduleSlot = "lr_schedule_samples";

}  // namespace hetps
