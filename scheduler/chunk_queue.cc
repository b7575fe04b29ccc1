#include "scheduler/chunk_queue.h"

#include <algorithm>

namespace hetps {

ChunkQueue::ChunkQueue(uint64_t samples, uint32_t chunk_samples, uint32_t epochs)
    : samples_(samples),
      chunk_samples_(std::max<uint32_t>(chunk_samples, 1)),
      epochs_(epochs),
      chunks_per_epoch_(static_cast<uint32_t>((samples + chunk_samples_ - 1) / chunk_samples_)) {}

ChunkQueue::EpochState& ChunkQueue::State(uint32_t epoch) {
  auto [it, created] = epochs_state_.try_emplace(epoch);
  if (created) {
    for (uint32_t c = 0; c < chunks_per_epoch_; ++c) it->second.pending.push_back(c);
  }
  return it->second;
}

ChunkQueue::Grant ChunkQueue::MakeGrant(uint32_t epoch, uint32_t index) const {
  Grant grant;
  grant.epoch = epoch;
  grant.chunk = epoch * chunks_per_epoch_ + index;
  grant.begin = uint64_t{index} * chunk_samples_;
  grant.end = std::min<uint64_t>(grant.begin + chunk_samples_, samples_);
  return grant;
}

std::optional<ChunkQueue::Grant> ChunkQueue::Next(uint32_t trainer, uint32_t epoch) {
  if (epoch >= epochs_) return std::nullopt;
  // Returned chunks of earlier epochs come first: otherwise they would be lost once every trainer
  // has moved on.
  for (auto& [e, state] : epochs_state_) {
    if (e >= epoch) break;
    if (state.pending.empty()) continue;
    const uint32_t index = state.pending.front();
    state.pending.pop_front();
    state.held[index] = trainer;
    return GrantFrom(e, state, index);
  }
  EpochState& state = State(epoch);
  if (state.pending.empty()) return std::nullopt;
  const uint32_t index = state.pending.front();
  state.pending.pop_front();
  state.held[index] = trainer;
  return GrantFrom(epoch, state, index);
}

ChunkQueue::Grant ChunkQueue::GrantFrom(uint32_t epoch, const EpochState& state, uint32_t index) const {
  Grant grant = MakeGrant(epoch, index);
  auto partial = state.resume_at.find(index);
  if (partial != state.resume_at.end()) grant.begin = std::clamp(partial->second, grant.begin, grant.end - 1);
  return grant;
}

bool ChunkQueue::Complete(uint32_t trainer, uint32_t chunk) {
  if (chunks_per_epoch_ == 0) return false;
  const uint32_t epoch = chunk / chunks_per_epoch_;
  const uint32_t index = chunk % chunks_per_epoch_;
  auto it = epochs_state_.find(epoch);
  if (it == epochs_state_.end()) return false;
  auto held = it->second.held.find(index);
  if (held == it->second.held.end() || held->second != trainer) return false;
  it->second.held.erase(held);
  it->second.completed.insert(index);
  it->second.resume_at.erase(index);
  // The whole chunk counts: samples before a partial chunk's resume position were trained before.
  const Grant grant = MakeGrant(epoch, index);
  completed_samples_ += grant.end - grant.begin;
  return true;
}

bool ChunkQueue::Holds(uint32_t trainer, uint32_t chunk) const {
  if (chunks_per_epoch_ == 0) return false;
  auto it = epochs_state_.find(chunk / chunks_per_epoch_);
  if (it == epochs_state_.end()) return false;
  auto held = it->second.held.find(chunk % chunks_per_epoch_);
  return held != it->second.held.end() && held->second == trainer;
}

bool ChunkQueue::IsComplete(uint32_t chunk) const {
  if (chunks_per_epoch_ == 0) return false;
  auto it = epochs_state_.find(chunk / chunks_per_epoch_);
  return it != epochs_state_.end() && it->second.completed.count(chunk % chunks_per_epoch_) > 0;
}

uint64_t ChunkQueue::HeldSamples(uint32_t trainer) const {
  uint64_t samples = 0;
  for (const auto& [epoch, state] : epochs_state_) {
    for (const auto& [index, holder] : state.held) {
      if (holder != trainer) continue;
      const Grant grant = GrantFrom(epoch, state, index);
      samples += grant.end - grant.begin;
    }
  }
  return samples;
}

size_t ChunkQueue::Requeue(uint32_t trainer) {
  size_t returned = 0;
  for (auto& [epoch, state] : epochs_state_) {
    // Walk backwards so pushing to the front keeps the chunks in their original order.
    for (auto it = state.held.rbegin(); it != state.held.rend(); ++it) {
      if (it->second == trainer) {
        state.pending.push_front(it->first);
        ++returned;
      }
    }
    for (auto it = state.held.begin(); it != state.held.end();) {
      it = it->second == trainer ? state.held.erase(it) : std::next(it);
    }
  }
  return returned;
}

bool ChunkQueue::EpochComplete(uint32_t epoch) const {
  auto it = epochs_state_.find(epoch);
  return it != epochs_state_.end() && it->second.completed.size() == chunks_per_epoch_;
}

std::vector<DataPosition::EpochChunks> ChunkQueue::Completed() const {
  std::vector<DataPosition::EpochChunks> completed;
  for (const auto& [epoch, state] : epochs_state_) {
    if (state.completed.empty()) continue;
    completed.push_back({epoch, std::vector<uint32_t>(state.completed.begin(), state.completed.end())});
  }
  return completed;
}

void ChunkQueue::Restore(const DataPosition& position) {
  epochs_state_.clear();
  completed_samples_ = 0;
  for (const DataPosition::EpochChunks& e : position.completed) {
    if (e.epoch >= epochs_) continue;
    EpochState& state = State(e.epoch);
    for (uint32_t index : e.chunks) {
      if (index >= chunks_per_epoch_ || !state.completed.insert(index).second) continue;
      const Grant grant = MakeGrant(e.epoch, index);
      completed_samples_ += grant.end - grant.begin;
    }
    state.pending.erase(std::remove_if(state.pending.begin(), state.pending.end(),
                                       [&](uint32_t c) { return state.completed.count(c) > 0; }),
                        state.pending.end());
  }
  // Partly trained chunks first, in the order given, so they are finished before new ones start.
  for (auto it = position.partial.rbegin(); it != position.partial.rend(); ++it) {
    if (it->epoch >= epochs_ || it->chunk >= chunks_per_epoch_) continue;
    EpochState& state = State(it->epoch);
    if (state.completed.count(it->chunk) > 0) continue;
    state.pending.erase(std::remove(state.pending.begin(), state.pending.end(), it->chunk),
                        state.pending.end());
    state.pending.push_front(it->chunk);
    state.resume_at[it->chunk] = it->next;
  }
}

}  // namespace hetps
