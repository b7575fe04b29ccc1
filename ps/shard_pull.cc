// The Shard's pull side: when a pull may be answered under the rule of the step it asks for (the
// slowest live trainer's clock against an ssp bound, a round's completion), and the weights it
// is answered with, encoded on the partitions' owners. Part of the Shard class (ps/shard.h), on
// the I/O thread like the rest.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/transport.h"
#include "ps/shard.h"

namespace hetps {

std::optional<uint64_t> Shard::SlowestClock() const {
  std::optional<uint64_t> slowest;
  for (uint32_t t : live_trainers_) {
    auto it = clocks_.find(t);
    const TrainerClock clock = it == clocks_.end() ? TrainerClock{} : it->second;
    if (clock.idle) continue;
    slowest = std::min(slowest.value_or(clock.pushed), clock.pushed);
  }
  return slowest;
}

void Shard::VisitBusySteps(const std::vector<uint32_t>& partitions,
                           const std::function<void(uint32_t, uint64_t)>& visit) const {
  for (uint32_t t : live_trainers_) {
    auto it = clocks_.find(t);
    const TrainerClock clock = it == clocks_.end() ? TrainerClock{} : it->second;
    if (clock.idle) continue;
    for (uint32_t id : partitions) {
      const Slot& slot = **Find(id);
      auto pushed = slot.trainer_clocks.find(t);
      visit(t, std::max(clock.from, pushed == slot.trainer_clocks.end() ? 0 : pushed->second));
    }
  }
}

std::optional<uint64_t> Shard::SlowestClock(const std::vector<uint32_t>& partitions) const {
  std::optional<uint64_t> slowest;
  VisitBusySteps(partitions, [&slowest](uint32_t, uint64_t steps) {
    slowest = std::min(slowest.value_or(steps), steps);
  });
  return slowest;
}

void Shard::RecordAdmission(uint64_t clock) {
  const auto slowest = SlowestClock();
  if (slowest && clock > *slowest) max_clock_gap_ = std::max(max_clock_gap_, clock - *slowest);
}

Status Shard::ValidatePull(uint32_t trainer, const wire::Pull& pull) const {
  if (!IsWireFloat(pull.dtype())) {
    return Status::FailedPrecondition(std::string("weights travel as float32, bfloat16 or float16, not ") +
                                      DTypeName(pull.dtype()));
  }
  if (!IsLive(trainer)) {
    return Status::FailedPrecondition("trainer " + std::to_string(trainer) +
                                      " is not a live member of the job");
  }
  std::vector<uint32_t> ids(pull.partitions()->begin(), pull.partitions()->end());
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
    return Status::Protocol("pull lists a partition twice");
  }
  for (uint32_t id : ids) {
    auto slot = Find(id);
    if (!slot.ok()) return slot.status();
  }
  return Status::Ok();
}

bool Shard::PullReady(const std::vector<uint32_t>& partitions, uint64_t clock, bool latest) const {
  // The pull for step `clock` follows the step just pushed (clock - 1): after a sync step it
  // waits for that round. Otherwise the rule of step `clock` decides: ssp waits for the slowest
  // within the bound, and the first step of a sync phase waits for every busy trainer to have
  // pushed the step before (a barrier), so that the phase's first round starts from one state.
  const ModeSchedule::Phase pushed = RuleAt(clock > 0 ? clock - 1 : 0);
  const ModeSchedule::Phase next = RuleAt(clock);
  const bool wait_for_round = HasRounds(pushed.mode, options_.diloco) && clock > 0 && !latest;
  for (uint32_t id : partitions) {
    const Slot* slot = *Find(id);
    if (!slot->initialized) return false;
    if (wait_for_round && slot->round < clock) return false;
  }
  if (latest || wait_for_round) return true;
  uint64_t bound = 0;
  if (next.mode == ConsistencyMode::kSsp) {
    bound = next.staleness;
  } else if (options_.mode != ConsistencyMode::kAuto || !HasRounds(next.mode, options_.diloco)) {
    return true;  // async, or a sync or diloco job's first step
  }
  if (clock <= bound) return true;
  const auto slowest = SlowestClock(partitions);
  return !slowest || *slowest >= clock - bound;
}

std::vector<Shard::Hold> Shard::Holders(const std::vector<uint32_t>& partitions, uint64_t clock) const {
  std::vector<Hold> holds;
  auto hold = [&holds](uint32_t trainer, uint64_t step, uint64_t until) {
    for (const Hold& h : holds) {
      if (h.trainer == trainer) return;  // its earliest step missing is the one named
    }
    holds.push_back({trainer, step, until});
  };
  for (uint32_t id : partitions) {
    if (!(*Find(id))->initialized) return {};
  }
  // As PullReady: a pull after a step with rounds waits for that round, else the bound of its own
  // step's rule (ssp; auto's barrier before a sync phase is a bound of 0).
  if (HasRounds(RuleAt(clock > 0 ? clock - 1 : 0).mode, options_.diloco) && clock > 0) {
    for (uint32_t id : partitions) {
      const Slot& slot = **Find(id);
      if (slot.round >= clock) continue;
      for (uint32_t t : live_trainers_) {
        if (RoundAwaits(slot, t)) hold(t, slot.round, slot.round + 1);
      }
    }
    return holds;
  }
  const ModeSchedule::Phase next = RuleAt(clock);
  uint64_t bound = 0;
  if (next.mode == ConsistencyMode::kSsp) {
    bound = next.staleness;
  } else if (options_.mode != ConsistencyMode::kAuto || !HasRounds(next.mode, options_.diloco)) {
    return holds;
  }
  if (clock <= bound) return holds;
  const uint64_t needed = clock - bound;
  VisitBusySteps(partitions, [&](uint32_t t, uint64_t steps) {
    if (steps < needed) hold(t, steps, needed);
  });
  return holds;
}

void Shard::BuildWeights(const std::vector<uint32_t>& partitions, wire::DType dtype,
                         std::function<void(WeightsReply&)> done) {
  auto reply = std::make_shared<WeightsReply>();
  reply->partitions = partitions;
  reply->dtype = dtype;
  reply->frames.resize(partitions.size());
  std::vector<PartitionWorkers::Part> parts;
  parts.reserve(partitions.size());
  for (size_t i = 0; i < partitions.size(); ++i) {
    const Slot* slot = *Find(partitions[i]);
    reply->versions.push_back(slot->version);
    reply->round_samples = std::max(reply->round_samples, slot->last_round_samples);
    // Each part writes its own element of the frames, sized before any part runs.
    parts.push_back(
        {slot->owner, [this, slot, reply, i] { reply->frames[i] = WeightsFrame(*slot, reply->dtype); }});
  }
  if (delayed_) {
    // Async rounds: no common round to follow. Auto's per-step phases have none at all.
    const bool rounds = !automatic() || schedule_.phases().back().mode == ConsistencyMode::kDiloco;
    if (rounds) reply->round_seconds = round_length_.Latest();
  } else if ((options_.mode == ConsistencyMode::kDiloco || options_.mode == ConsistencyMode::kAuto) &&
             !partitions.empty()) {
    // The weights follow the rounds their partitions have completed: they start the next one.
    uint64_t round = std::numeric_limits<uint64_t>::max();
    for (uint32_t id : partitions) round = std::min(round, (*Find(id))->round);
    if (RuleAt(round).mode == ConsistencyMode::kDiloco) reply->round_seconds = round_length_.For(round);
  }
  workers_->Dispatch(std::move(parts), [reply, done = std::move(done)] { done(*reply); });
}

zmq::message_t Shard::WeightsFrame(const Slot& slot, wire::DType dtype) const {
  const size_t n = slot.info->length;
  if (dtype != wire::DType::F32) {
    zmq::message_t frame(n * DTypeSize(dtype));
    PackFloats(slot.weights.get(), n, dtype, frame.data());
    return frame;
  }
  if (HasRounds(options_.mode, options_.diloco)) {
    return BorrowFrame(slot.weights.get(), n * sizeof(float), slot.weights);
  }
  return zmq::message_t(slot.weights.get(), n * sizeof(float));
}

flatbuffers::Offset<wire::Weights> Shard::WeightsReply::Write(flatbuffers::FlatBufferBuilder& fbb) const {
  return wire::CreateWeightsDirect(fbb, &partitions, &versions, round_samples, dtype, held_us, round_seconds,
                                   left_out);
}

}  // namespace hetps
