#include "scheduler/checkpoint_cut.h"

#include <algorithm>

#include "checkpoint/safetensors_dtype.h"
#include "common/dtype.h"
#include "common/shard_map.h"

namespace hetps {

CheckpointCut::CheckpointCut(Options options, const std::vector<DataPosition::EpochChunks>& completed)
    : options_(std::move(options)) {
  options_.chunks_per_epoch = std::max<uint32_t>(options_.chunks_per_epoch, 1);
  for (const auto& e : completed) completed_[e.epoch].insert(e.chunks.begin(), e.chunks.end());
}

void CheckpointCut::NoteCompleted(uint32_t trainer, uint32_t chunk) {
  // After its report the trainer is past the cut: its completions belong to later checkpoints.
  if (positions_.count(trainer) > 0) return;
  completed_[chunk / options_.chunks_per_epoch].insert(chunk % options_.chunks_per_epoch);
}

Status CheckpointCut::AddPosition(uint32_t trainer, const wire::DataPosition& position) {
  if (options_.round && position.clock() != *options_.round) {
    return Status::FailedPrecondition("trainer " + std::to_string(trainer) + " reported its data at step " +
                                      std::to_string(position.clock()) + ", not at the cut's round " +
                                      std::to_string(*options_.round));
  }
  const uint32_t per_epoch = options_.chunks_per_epoch;
  if (position.finished() != nullptr) {
    for (uint32_t chunk : *position.finished()) completed_[chunk / per_epoch].insert(chunk % per_epoch);
  }
  const auto* held = position.held();
  const auto* next = position.held_next();
  const size_t held_count = held == nullptr ? 0 : held->size();
  if (held_count != (next == nullptr ? 0 : next->size())) {
    return Status::Protocol("trainer " + std::to_string(trainer) + " reported " + std::to_string(held_count) +
                            " held chunks with a different number of positions");
  }
  for (size_t i = 0; i < held_count; ++i) {
    partial_.push_back({held->Get(i) / per_epoch, held->Get(i) % per_epoch, next->Get(i)});
  }
  positions_[trainer] = Report{position.clock(), position.epoch(), position.samples()};
  return Status::Ok();
}

Status CheckpointCut::AddState(uint32_t server, Message message) {
  const auto* state = message.body<wire::CheckpointState>();
  const auto& specs = *state->tensors();
  if (specs.size() != message.tensors.size()) {
    return Status::Protocol("server " + std::to_string(server) + " sent " + std::to_string(specs.size()) +
                            " tensors in " + std::to_string(message.tensors.size()) + " frames");
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const wire::TensorSpec* spec = specs.Get(i);
    uint64_t elements = 1;
    if (spec->shape() != nullptr) {
      for (int64_t d : *spec->shape()) elements *= d < 0 ? 0 : static_cast<uint64_t>(d);
    }
    if (SafetensorsDType(spec->dtype()).empty() ||
        elements * DTypeSize(spec->dtype()) != message.tensors[i].size()) {
      return Status::Protocol("server " + std::to_string(server) + " sent tensor " + spec->name()->str() +
                              " as " + std::to_string(message.tensors[i].size()) +
                              " bytes, which its description does not fit");
    }
  }
  states_[server] = std::make_shared<Message>(std::move(message));
  return Status::Ok();
}

DataPosition CheckpointCut::Position(uint32_t epochs) const {
  DataPosition position;
  for (const auto& [epoch, chunks] : completed_) {
    if (!chunks.empty())
      position.completed.push_back({epoch, std::vector<uint32_t>(chunks.begin(), chunks.end())});
  }
  for (const DataPosition::Partial& p : partial_) {
    auto done = completed_.find(p.epoch);
    if (done == completed_.end() || done->second.count(p.chunk) == 0) position.partial.push_back(p);
  }
  position.epoch = options_.final ? epochs : 0;
  bool first = true;
  for (const auto& [trainer, report] : positions_) {
    position.epoch = first ? report.epoch : std::min(position.epoch, report.epoch);
    first = false;
    position.samples_trained += report.samples;
  }
  return position;
}

std::vector<ServerState> CheckpointCut::States() const {
  std::vector<ServerState> states;
  for (const auto& [rank, message] : states_) {
    const auto* body = message->body<wire::CheckpointState>();
    ServerState state;
    state.rank = rank;
    state.version = body->version();
    state.round = body->round();
    state.owner = message;
    state.metadata = {{"version", std::to_string(body->version())}, {"round", std::to_string(body->round())}};
    const auto& specs = *body->tensors();
    for (size_t i = 0; i < specs.size(); ++i) {
      const wire::TensorSpec* spec = specs.Get(i);
      TensorView view;
      view.name = spec->name()->str();
      view.dtype = SafetensorsDType(spec->dtype());
      if (spec->shape() != nullptr) view.shape.assign(spec->shape()->begin(), spec->shape()->end());
      view.data = message->tensors[i].data();
      view.bytes = message->tensors[i].size();
      state.tensors.push_back(std::move(view));
    }
    states.push_back(std::move(state));
  }
  return states;
}

bool CheckpointCut::AwaitsPosition(uint32_t trainer) const {
  const auto& expected = options_.trainers;
  return std::find(expected.begin(), expected.end(), trainer) != expected.end() && !positions_.count(trainer);
}

std::string CheckpointCut::Missing() const {
  std::string missing;
  auto add = [&missing](const char* who, uint32_t rank) {
    missing += (missing.empty() ? "" : ", ") + std::string(who) + " " + std::to_string(rank);
  };
  for (uint32_t rank = 0; rank < options_.servers; ++rank) {
    if (states_.count(rank) == 0) add("server", rank);
  }
  for (uint32_t rank : options_.trainers) {
    if (positions_.count(rank) == 0) add("trainer", rank);
  }
  return missing;
}

uint64_t CheckpointCut::Version() const {
  uint64_t version = 0;
  for (const auto& [rank, message] : states_) {
    version = std::max(version, message->body<wire::CheckpointState>()->version());
  }
  return version;
}

}  // namespace hetps
