#include "trainer/chunk_sampler.h"

#include <algorithm>

#include "common/permutation.h"

namespace hetps {

ChunkSampler::ChunkSampler(ControlChannel* control, Sender* sender, uint64_t train_samples, uint64_t seed,
                           std::chrono::milliseconds request_timeout)
    : control_(control),
      sender_(sender),
      train_samples_(train_samples),
      seed_(seed),
      request_timeout_(request_timeout) {}

const std::vector<int64_t>& ChunkSampler::Permutation(uint32_t epoch) {
  auto it = permutations_.find(epoch);
  if (it != permutations_.end()) return it->second;
  // Older epochs are only needed for chunks a dead trainer left behind; keep two at most.
  while (permutations_.size() >= 2) permutations_.erase(permutations_.begin());
  std::vector<int64_t>& order = permutations_[epoch] = EpochPermutation(train_samples_, seed_, epoch);
  if (sample_map_) {
    for (int64_t& sample : order) sample = sample_map_(epoch, sample);
  }
  return order;
}

Result<bool> ChunkSampler::Request(uint32_t epoch, uint64_t clock) {
  flatbuffers::FlatBufferBuilder fbb(128 + 4 * finished_.size());
  auto body = wire::CreateChunkRequestDirect(fbb, epoch, &finished_, clock);
  auto reply = control_->Request(sender_->Seal(fbb, wire::Body::ChunkRequest, body.Union()),
                                 wire::Body::ChunkGrant, request_timeout_);
  if (!reply.ok()) return reply.status();
  finished_.clear();
  const auto* grant = reply->body<wire::ChunkGrant>();
  if (grant->exhausted()) {
    last_epoch_complete_ = grant->epoch_complete();
    return false;
  }
  if (grant->end() > train_samples_ || grant->begin() >= grant->end()) {
    return Status::Protocol("the scheduler granted chunk " + std::to_string(grant->chunk()) +
                            " with positions outside the epoch");
  }
  held_.push_back({grant->epoch(), grant->chunk(), grant->begin(), grant->end()});
  if (on_grant_) {
    const std::vector<int64_t>& order = Permutation(grant->epoch());
    HETPS_RETURN_IF_ERROR(
        on_grant_(grant->epoch(), order.data() + grant->begin(), grant->end() - grant->begin()));
  }
  return true;
}

Result<std::vector<int64_t>> ChunkSampler::Next(uint32_t epoch, size_t count, uint64_t clock) {
  finished_.insert(finished_.end(), drained_.begin(), drained_.end());
  drained_.clear();
  std::vector<int64_t> indices;
  indices.reserve(count);
  while (indices.size() < count) {
    if (held_.empty()) {
      // Asked even after an "exhausted" answer: a trainer that died may have returned chunks.
      auto granted = Request(epoch, clock);
      if (!granted.ok()) return granted.status();
      if (!*granted) break;
      continue;
    }
    Held& chunk = held_.front();
    const std::vector<int64_t>& order = Permutation(chunk.epoch);
    const uint64_t take = std::min<uint64_t>(count - indices.size(), chunk.end - chunk.next);
    indices.insert(indices.end(), order.begin() + chunk.next, order.begin() + chunk.next + take);
    chunk.next += take;
    if (chunk.next == chunk.end) {
      drained_.push_back(chunk.chunk);
      held_.pop_front();
    }
  }
  handed_out_ += indices.size();
  return indices;
}

std::vector<int64_t> ChunkSampler::Peek(size_t count) {
  std::vector<int64_t> indices;
  indices.reserve(count);
  for (const Held& chunk : held_) {
    if (indices.size() == count) break;
    const std::vector<int64_t>& order = Permutation(chunk.epoch);
    const uint64_t take = std::min<uint64_t>(count - indices.size(), chunk.end - chunk.next);
    indices.insert(indices.end(), order.begin() + chunk.next, order.begin() + chunk.next + take);
  }
  if (indices.size() < count) indices.clear();
  return indices;
}

Result<bool> ChunkSampler::FlushAndCheckComplete(uint32_t epoch, uint64_t clock) {
  finished_.insert(finished_.end(), drained_.begin(), drained_.end());
  drained_.clear();
  if (!held_.empty()) return false;
  auto granted = Request(epoch, clock);
  if (!granted.ok()) return granted.status();
  // A chunk granted now (one a dead trainer returned) is trained by the next call of Next().
  return !*granted && last_epoch_complete_;
}

}  // namespace hetps

namespace hetps {

ChunkSampler::Position ChunkSampler::CurrentPosition() const {
  Position position;
  position.finished = finished_;
  position.finished.insert(position.finished.end(), drained_.begin(), drained_.end());
  for (const Held& chunk : held_) {
    position.held.push_back(chunk.chunk);
    position.held_next.push_back(chunk.next);
  }
  return position;
}

void ChunkSampler::Reset() {
  held_.clear();
  finished_.clear();
  drained_.clear();
  last_epoch_complete_ = false;
}

}  // namespace hetps
