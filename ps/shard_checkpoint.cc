// The Shard's checkpoints: snapshots cut at a round, restores and resets. Part of the Shard class
// (ps/shard.h), called on the I/O thread like the rest; the copies run on the partitions' owners.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "checkpoint/partition_names.h"
#include "common/dtype.h"
#include "common/transport.h"
#include "ps/shard.h"

namespace hetps {

// A snapshot waiting for its partitions' copies.
struct Shard::PendingSnapshot {
  struct Copies {
    std::vector<std::vector<float>> data;   // per slot: weights, then each state slot
    std::vector<int64_t> steps;             // per slot: its update count at the cut
    std::vector<int64_t> schedule_samples;  // per slot: its lr schedule's position at the cut
  };
  std::optional<uint64_t> round;  // sync: cut each partition at this round
  std::vector<bool> taken;        // per slot: its copy is queued
  size_t remaining = 0;           // copies not yet made
  uint64_t cut_round = 0;         // largest round of a partition at its cut
  std::shared_ptr<Copies> copies = std::make_shared<Copies>();
  std::function<void(Snapshot&)> done;
};

namespace {

std::string NameOf(const ShardMap& map, const PartitionInfo& p) {
  return PartitionTensorName(map.tensors()[p.tensor].name, p.offset, p.offset + p.length);
}

}  // namespace

Status Shard::TakeSnapshot(std::optional<uint64_t> round, std::function<void(Snapshot&)> done) {
  const bool at_round = round.has_value() && HasRounds(options_.mode, options_.diloco);
  if (at_round) {
    for (const Slot& slot : slots_) {
      if (slot.round > *round) {
        return Status::FailedPrecondition(NameOf(map_, *slot.info) + " has completed " +
                                          std::to_string(slot.round) +
                                          " rounds, past the checkpoint's round " + std::to_string(*round));
      }
    }
  }
  auto pending = std::make_shared<PendingSnapshot>();
  if (at_round) pending->round = round;
  pending->taken.assign(slots_.size(), false);
  pending->remaining = slots_.size();
  pending->copies->data.resize(slots_.size());
  pending->copies->steps.resize(slots_.size());
  pending->copies->schedule_samples.resize(slots_.size());
  pending->done = std::move(done);
  snapshot_ = pending;
  if (slots_.empty()) {
    Snapshot empty;
    snapshot_.reset();
    pending->done(empty);
    return Status::Ok();
  }
  for (Slot& slot : slots_) {
    if (snapshot_ != pending) break;  // finished (all copies inline) or replaced
    SnapshotIfDue(slot);
  }
  return Status::Ok();
}

void Shard::SnapshotIfDue(Slot& slot) {
  std::shared_ptr<PendingSnapshot> pending = snapshot_;
  if (!pending) return;
  const size_t index = static_cast<size_t>(&slot - slots_.data());
  if (pending->taken[index] || (pending->round && slot.round != *pending->round)) return;
  pending->taken[index] = true;
  pending->copies->steps[index] = static_cast<int64_t>(slot.version);
  pending->copies->schedule_samples[index] = static_cast<int64_t>(slot.schedule_samples);
  pending->cut_round = std::max(pending->cut_round, slot.round);
  const Slot* source = &slot;
  const size_t state_floats = slot.state.size();
  auto copies = pending->copies;
  // Queued after the updates decided before, so the copy is the state at the cut.
  auto copy = [source, copies, index, state_floats] {
    const size_t n = source->info->length;
    std::vector<float>& out = copies->data[index];
    out.resize(n + state_floats);
    std::memcpy(out.data(), source->weights.get(), n * sizeof(float));
    if (state_floats > 0) std::memcpy(out.data() + n, source->state.data(), state_floats * sizeof(float));
  };
  workers_->Dispatch({{slot.owner, std::move(copy)}}, [this, pending] {
    if (snapshot_ != pending || --pending->remaining > 0) return;
    snapshot_.reset();
    Snapshot snapshot;
    snapshot.round = pending->cut_round;
    const std::vector<std::string> slot_names = state_names();
    const bool scheduled = LrScheduleEnabled(options_.optimizer.schedule);
    std::shared_ptr<const void> owner = pending->copies;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const PartitionInfo& p = *slots_[i].info;
      const std::string name = NameOf(map_, p);
      const float* data = pending->copies->data[i].data();
      const int64_t n = static_cast<int64_t>(p.length);
      snapshot.tensors.push_back({name, {n}, wire::DType::F32});
      snapshot.frames.push_back(BorrowFrame(data, p.length * sizeof(float), owner));
      for (size_t k = 0; k < slot_names.size(); ++k) {
        snapshot.tensors.push_back({PartitionStateName(name, slot_names[k]), {n}, wire::DType::F32});
        snapshot.frames.push_back(BorrowFrame(data + (k + 1) * p.length, p.length * sizeof(float), owner));
      }
      snapshot.tensors.push_back({PartitionStateName(name, kStepSlot), {}, wire::DType::I64});
      snapshot.frames.push_back(BorrowFrame(&pending->copies->steps[i], sizeof(int64_t), owner));
      if (scheduled) {
        snapshot.tensors.push_back({PartitionStateName(name, kScheduleSlot), {}, wire::DType::I64});
        snapshot.frames.push_back(BorrowFrame(&pending->copies->schedule_samples[i], sizeof(int64_t), owner));
      }
      snapshot.version = std::max(snapshot.version, static_cast<uint64_t>(pending->copies->steps[i]));
    }
    pending->done(snapshot);
  });
}

Status Shard::Restore(const std::vector<TensorInfo>& tensors, const std::vector<zmq::message_t>& frames,
                      uint64_t round) {
  if (tensors.size() != frames.size()) {
    return Status::Protocol("restore lists " + std::to_string(tensors.size()) + " tensors in " +
                            std::to_string(frames.size()) + " frames");
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!index.emplace(tensors[i].name, i).second) {
      return Status::InvalidArgument("restore lists tensor " + tensors[i].name + " twice");
    }
  }
  std::vector<bool> used(tensors.size(), false);
  auto take = [&](const std::string& name, wire::DType dtype, size_t bytes) -> Result<const void*> {
    auto it = index.find(name);
    if (it == index.end()) return Status::InvalidArgument("the checkpoint has no tensor " + name);
    const TensorInfo& t = tensors[it->second];
    if (t.dtype != dtype || frames[it->second].size() != bytes) {
      return Status::InvalidArgument("tensor " + name + " of the checkpoint holds " +
                                     std::to_string(frames[it->second].size()) + " bytes of " +
                                     DTypeName(t.dtype) + ", expected " + std::to_string(bytes) + " of " +
                                     DTypeName(dtype));
    }
    used[it->second] = true;
    return frames[it->second].data();
  };
  struct Source {
    const void* weights = nullptr;
    std::vector<const void*> state;
    int64_t step = 0;
    std::optional<int64_t> schedule_samples;
  };
  const std::vector<std::string> slot_names = state_names();
  std::vector<Source> sources(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const PartitionInfo& p = *slots_[i].info;
    const std::string name = NameOf(map_, p);
    const size_t bytes = p.length * sizeof(float);
    HETPS_ASSIGN_OR_RETURN(sources[i].weights, take(name, wire::DType::F32, bytes));
    for (const std::string& slot_name : slot_names) {
      HETPS_ASSIGN_OR_RETURN(const void* state,
                             take(PartitionStateName(name, slot_name), wire::DType::F32, bytes));
      sources[i].state.push_back(state);
    }
    HETPS_ASSIGN_OR_RETURN(const void* step, take(PartitionStateName(name, kStepSlot), wire::DType::I64, 8));
    std::memcpy(&sources[i].step, step, sizeof(int64_t));
    if (sources[i].step < 0) return Status::InvalidArgument("tensor " + name + ".step is negative");
    // Optional: checkpoints of jobs without an lr schedule have none, and a job without one
    // ignores it.
    const std::string schedule_name = PartitionStateName(name, kScheduleSlot);
    if (index.count(schedule_name) > 0) {
      HETPS_ASSIGN_OR_RETURN(const void* samples, take(schedule_name, wire::DType::I64, 8));
      int64_t value = 0;
      std::memcpy(&value, samples, sizeof(int64_t));
      if (value < 0) return Status::InvalidArgument("tensor " + schedule_name + " is negative");
      sources[i].schedule_samples = value;
    }
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!used[i]) {
      return Status::InvalidArgument("the checkpoint's tensor " + tensors[i].name +
                                     " is no partition state of server " + std::to_string(server_rank_) +
                                     " with optimizer " + OptimizerKindName(options_.optimizer.kind));
    }
  }
  // Nothing may still read or write the partitions while they are replaced.
  workers_->Flush();
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    const size_t n = slot.info->length;
    slot.weights = std::shared_ptr<float[]>(new float[n]);
    std::memcpy(slot.weights.get(), sources[i].weights, n * sizeof(float));
    for (size_t k = 0; k < sources[i].state.size(); ++k) {
      std::memcpy(slot.state.data() + k * n, sources[i].state[k], n * sizeof(float));
    }
    slot.version = static_cast<uint64_t>(sources[i].step);
    // Without a recorded position, every update counts as one of the whole global batch.
    slot.schedule_samples = sources[i].schedule_samples ? static_cast<uint64_t>(*sources[i].schedule_samples)
                                                        : slot.version * options_.global_batch_size;
    slot.round = HasRounds(options_.mode, options_.diloco) ? round : 0;
    slot.initialized = true;
  }
  ForgetProgress();
  return Status::Ok();
}

void Shard::Reset() {
  workers_->Flush();
  for (Slot& slot : slots_) {
    // A fresh buffer: replies still in flight keep the old one.
    slot.weights = std::shared_ptr<float[]>(new float[slot.info->length]());
    std::fill(slot.state.begin(), slot.state.end(), 0.0f);
    slot.version = 0;
    slot.schedule_samples = 0;
    slot.round = 0;
    slot.initialized = false;
  }
  ForgetProgress();
}

void Shard::ForgetProgress() {
  for (Slot& slot : slots_) {
    slot.pushed.clear();
    slot.trainer_clocks.clear();
    slot.round_samples = 0;
    slot.last_round_samples = 0;
  }
  clocks_.clear();
  // Every trainer goes on from the restored round (sync) together, newcomers included.
  from_clocks_.clear();
  snapshot_.reset();
  // Rounds half closed are gone: their steps still run, but no tally of theirs is recorded.
  round_applies_.clear();
}

}  // namespace hetps
