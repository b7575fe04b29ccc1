// Shard: the checks of what a member sends before anything of it is kept (frames, scales, sample
// counts) and the record of pushes left out for NaN or infinite gradients.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "common/dtype.h"
#include "common/finite.h"
#include "ps/shard.h"

namespace hetps {
namespace {

// Element `index` of a frame of `dtype` (a wire float), as a log shows it: NaN, inf, -inf or %g.
std::string ElementText(const void* frame, size_t index, wire::DType dtype) {
  float value = 0;
  UnpackFloats(static_cast<const unsigned char*>(frame) + index * DTypeSize(dtype), 1, dtype, &value);
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof(text), "%g", static_cast<double>(value));
  return text;
}

}  // namespace

std::string Shard::PartitionName(uint32_t id) const {
  const PartitionInfo& p = map_.partitions()[id];
  return "partition " + std::to_string(id) + " (" + map_.tensors()[p.tensor].name + "[" +
         std::to_string(p.offset) + ":" + std::to_string(p.offset + p.length) + "])";
}

Status Shard::CheckFrames(const flatbuffers::Vector<uint32_t>& ids, const std::vector<zmq::message_t>& frames,
                          bool allow_empty, wire::DType dtype) const {
  if (ids.size() != frames.size()) {
    return Status::Protocol("message lists " + std::to_string(ids.size()) + " partitions but carries " +
                            std::to_string(frames.size()) + " tensor frames");
  }
  std::vector<uint32_t> seen(ids.begin(), ids.end());
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) {
    return Status::Protocol("message lists a partition twice");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    auto slot = Find(ids[i]);
    if (!slot.ok()) return slot.status();
    const size_t expected = (*slot)->info->length * DTypeSize(dtype);
    const size_t got = frames[i].size();
    if (got != expected && !(allow_empty && got == 0)) {
      return Status::InvalidArgument(PartitionName(ids[i]) + " frame has " + std::to_string(got) +
                                     " bytes, expected " + std::to_string(expected) + " (" +
                                     DTypeName(dtype) + ")");
    }
  }
  return Status::Ok();
}

Status Shard::CheckScales(const wire::Push& push, bool empty) const {
  const auto* scales = push.scales();
  if (push.dtype() != wire::DType::I8 || empty) {
    if (scales != nullptr && scales->size() > 0) {
      return Status::Protocol(std::string("a push of ") + (empty ? "no samples" : DTypeName(push.dtype())) +
                              " carries scales; only int8 frames have them");
    }
    return Status::Ok();
  }
  const size_t partitions = push.partitions()->size();
  if (scales == nullptr || scales->size() != partitions) {
    return Status::Protocol("int8 push lists " + std::to_string(partitions) + " partitions but " +
                            std::to_string(scales == nullptr ? 0 : scales->size()) + " scales");
  }
  for (size_t i = 0; i < partitions; ++i) {
    const float scale = scales->Get(i);
    // 127 times a larger scale would overflow float32.
    if (!std::isfinite(scale) || scale < 0 || scale > std::numeric_limits<float>::max() / 127) {
      return Status::Protocol("int8 push gives " + PartitionName(push.partitions()->Get(i)) + " the scale " +
                              std::to_string(scale) +
                              "; a scale is finite, at least 0 and at most FLT_MAX / 127");
    }
  }
  if (push.pull() && !IsWireFloat(push.weights_dtype())) {
    return Status::Protocol(std::string("int8 push asks for weights as ") + DTypeName(push.weights_dtype()) +
                            "; they travel as float32, bfloat16 or float16");
  }
  return Status::Ok();
}

std::string Shard::FirstBeyond(const flatbuffers::Vector<uint32_t>& ids,
                               const std::vector<zmq::message_t>& frames, wire::DType dtype,
                               float largest) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    const void* data = frames[i].data();
    // int8 frames are finite integers times a scale CheckScales bounded.
    if (auto at = hetps::FirstBeyond(data, (*Find(ids[i]))->info->length, dtype, largest)) {
      return "element " + std::to_string(*at) + " of " + PartitionName(ids[i]) + " is " +
             ElementText(data, *at, dtype);
    }
  }
  return {};
}

void Shard::NoteLeftOut(uint32_t trainer, uint64_t clock) {
  LeftOutRun& run = left_out_[trainer];
  Stats::LeftOut& counts = run.counts;
  if (counts.steps > 0 && clock == run.last_clock) return;  // another push of a step counted
  counts.in_a_row =
      counts.steps > 0 && counts.in_a_row > 0 && clock == run.last_clock + 1 ? counts.in_a_row + 1 : 1;
  ++counts.steps;
  run.last_clock = clock;
}

uint64_t Shard::LeftOutSteps(uint32_t trainer) const {
  auto run = left_out_.find(trainer);
  return run == left_out_.end() ? 0 : run->second.counts.steps;
}

uint64_t Shard::MostSamples(ConsistencyMode mode, uint32_t inner_steps) const {
  const uint64_t batch = options_.global_batch_size;
  switch (mode) {
    case ConsistencyMode::kDiloco:
      return batch * inner_steps;  // every inner step takes at most the global batch
    case ConsistencyMode::kAsync:
    case ConsistencyMode::kSsp:
      return batch * kMaxLocalSteps;
    default:
      return batch;
  }
}

}  // namespace hetps
