#include "ps/shard.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "common/dtype.h"
#include "common/transport.h"

namespace hetps {
namespace {

// The staleness-aware rate's weight for the gradient of a push applied `staleness` versions after
// the weights it was computed on, carrying `batch_share` of the global batch: 1 / (1 + the global
// batches applied since), counting the pushes in between as of this one's size (a whole global
// batch at most). Two trainers of one pace that push whole batches push at staleness 1, and at
// full weight each would be a whole step on weights a step old; at 1/2 they step per round as
// far as a sync round's average of their two gradients. Pushes of a share of the batch (1/N of
// it for N trainers) already step by their share, and count the others' in between at theirs.
// The weight goes on the gradient, not the step: with momentum, dividing the step would shrink
// the fresh gradients the buffer holds and let this one through at full weight into every later
// step.
float StalenessWeight(uint64_t staleness, float batch_share) {
  return 1.0f / (1.0f + static_cast<float>(staleness) * std::min(1.0f, batch_share));
}

}  // namespace

wire::ErrorCode RefusalCode(const Status& status) {
  switch (status.code()) {
    case Status::Code::kProtocol:
      return wire::ErrorCode::Malformed;
    case Status::Code::kNotFound:
      return wire::ErrorCode::UnknownPartition;
    case Status::Code::kInvalidArgument:
      return wire::ErrorCode::BadLength;
    case Status::Code::kResourceExhausted:
      return wire::ErrorCode::Refused;
    default:
      return wire::ErrorCode::Unexpected;
  }
}

Refusal RefusalReasonOf(const Status& status) {
  switch (status.code()) {
    case Status::Code::kProtocol:
    case Status::Code::kNotFound:
    case Status::Code::kInvalidArgument:
      return Refusal::Invalid;
    case Status::Code::kResourceExhausted:
      return Refusal::OverLimit;
    default:
      return Refusal::Unexpected;
  }
}

Result<std::unique_ptr<Shard>> Shard::Create(const ShardMap& map, uint32_t server_rank,
                                             const Options& options) {
  if (options.threads == 0) return Status::InvalidArgument("a server needs at least 1 thread");
  const LrScheduleOptions& schedule = options.optimizer.schedule;
  if (schedule.decay == LrScheduleOptions::Decay::kCosine && schedule.decay_steps == 0) {
    return Status::InvalidArgument("lr_schedule.decay_steps: a cosine decay needs the step it ends at");
  }
  auto optimizer = Optimizer::Create(options.optimizer);
  if (!optimizer.ok()) return optimizer.status();
  // Auto's diloco phase steps an outer optimizer of its own, synchronous or Delayed Nesterov; in
  // mode diloco the servers' optimizer is the outer one.
  const bool automatic = options.mode == ConsistencyMode::kAuto;
  std::unique_ptr<Optimizer> outer;
  std::optional<DelayedNesterov> delayed;
  if (options.diloco.async_rounds() && (automatic || options.mode == ConsistencyMode::kDiloco)) {
    auto created = DelayedNesterov::Create(automatic ? options.outer_optimizer : options.optimizer);
    if (!created.ok()) {
      return automatic ? created.status().WithContext("the outer optimizer of auto's diloco phase")
                       : created.status();
    }
    delayed = *created;
  } else if (automatic) {
    auto created = Optimizer::Create(options.outer_optimizer);
    if (!created.ok()) return created.status().WithContext("the outer optimizer of auto's diloco phase");
    outer = std::move(*created);
  }
  try {
    return std::unique_ptr<Shard>(
        new Shard(map, server_rank, options, std::move(*optimizer), std::move(outer), delayed));
  } catch (const std::bad_alloc&) {
    const uint64_t bytes = map.BytesOf(server_rank);
    return Status::ResourceExhausted(
        "cannot allocate the " + std::to_string(bytes) +
        " bytes of weights (and their optimizer state) of this server's partitions");
  }
}

Shard::Shard(const ShardMap& map, uint32_t server_rank, const Options& options,
             std::unique_ptr<Optimizer> optimizer, std::unique_ptr<Optimizer> outer,
             std::optional<DelayedNesterov> delayed)
    : map_(map),
      server_rank_(server_rank),
      options_(options),
      optimizer_(std::move(optimizer)),
      outer_(std::move(outer)),
      delayed_(delayed),
      schedule_(options.mode == ConsistencyMode::kAuto ? ConsistencyMode::kAsync : options.mode,
                options.staleness),
      round_length_(options.diloco),
      scratch_(options.threads),
      workers_(std::make_unique<PartitionWorkers>(options.threads)) {
  slot_of_.assign(map.partitions().size(), -1);
  ids_ = map.PartitionsOf(server_rank);
  slots_.resize(ids_.size());
  for (size_t i = 0; i < ids_.size(); ++i) {
    Slot& slot = slots_[i];
    slot.info = &map.partitions()[ids_[i]];
    slot.owner = workers_->OwnerOf(i);
    slot.weights = std::shared_ptr<float[]>(new float[slot.info->length]());
    slot.state.resize(static_cast<size_t>(state_slots()) * slot.info->length);
    if (HasRounds(options_.mode, options_.diloco) || options_.mode == ConsistencyMode::kAuto)
      slot.sum.resize(slot.info->length);
    if (options_.mode == ConsistencyMode::kAuto) {
      const int outer_slots = outer_ ? outer_->state_slots() : delayed_->state_slots();
      slot.outer_state.resize(static_cast<size_t>(outer_slots) * slot.info->length);
    }
    slot_of_[ids_[i]] = static_cast<int32_t>(i);
  }
}

void Shard::SetLiveTrainers(std::vector<uint32_t> ranks, std::map<uint32_t, uint64_t> from_clocks) {
  std::sort(ranks.begin(), ranks.end());
  for (uint32_t t : ranks) {
    auto from = from_clocks.find(t);
    if (from == from_clocks.end() || from->second == 0) continue;
    // A newcomer starts at the others' clocks, not at 0: ssp must not hold them back for it; nor
    // for a trainer left out of the steps it held.
    TrainerClock& clock = clocks_[t];
    clock.pushed = std::max(clock.pushed, from->second);
    clock.from = std::max(clock.from, from->second);
  }
  from_clocks_.clear();
  for (const auto& [t, from] : from_clocks) {
    if (from > 0 && std::binary_search(ranks.begin(), ranks.end(), t)) from_clocks_[t] = from;
  }
  live_trainers_ = std::move(ranks);
  for (auto& [t, run] : left_out_) {
    if (!IsLive(t)) run.counts.in_a_row = 0;  // a run is a live trainer's; its rank may come back
  }
  if (!HasRounds(options_.mode, options_.diloco) && options_.mode != ConsistencyMode::kAuto) return;
  for (Slot& slot : slots_) CompleteRoundIfReady(slot);
}

Status Shard::CheckFromClock(uint32_t trainer, uint64_t from_clock) const {
  if (!HasRounds(options_.mode, options_.diloco)) return Status::Ok();
  auto current = from_clocks_.find(trainer);
  const uint64_t had = current == from_clocks_.end() ? 0 : current->second;
  if (IsLive(trainer) && from_clock == had) return Status::Ok();  // nothing new about it
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].round > from_clock) {
      return Status::FailedPrecondition("trainer " + std::to_string(trainer) + " would start at round " +
                                        std::to_string(from_clock) + " but " + PartitionName(ids_[i]) +
                                        " has completed " + std::to_string(slots_[i].round) + " rounds");
    }
  }
  return Status::Ok();
}

bool Shard::IsLive(uint32_t trainer) const {
  return std::binary_search(live_trainers_.begin(), live_trainers_.end(), trainer);
}

Result<Shard::Slot*> Shard::Find(uint32_t partition) {
  if (partition >= slot_of_.size()) {
    return Status::NotFound("partition " + std::to_string(partition) + " is not in the shard map (" +
                            std::to_string(slot_of_.size()) + " partitions)");
  }
  if (slot_of_[partition] < 0) {
    return Status::NotFound(PartitionName(partition) + " belongs to server " +
                            std::to_string(map_.partitions()[partition].server) + ", not " +
                            std::to_string(server_rank_));
  }
  return &slots_[static_cast<size_t>(slot_of_[partition])];
}

Result<const Shard::Slot*> Shard::Find(uint32_t partition) const {
  auto slot = const_cast<Shard*>(this)->Find(partition);
  if (!slot.ok()) return slot.status();
  return static_cast<const Slot*>(*slot);
}

Status Shard::Init(const wire::InitWeights& init, Frames frames) {
  HETPS_RETURN_IF_ERROR(CheckFrames(*init.partitions(), *frames, /*allow_empty=*/false, wire::DType::F32));
  if (std::string bad =
          FirstBeyond(*init.partitions(), *frames, wire::DType::F32, std::numeric_limits<float>::max());
      !bad.empty()) {
    return Status::InvalidArgument("initial weights: " + bad + "; a model's weights must be finite");
  }
  for (size_t i = 0; i < frames->size(); ++i) {
    Slot* slot = *Find(init.partitions()->Get(i));
    if (slot->initialized) continue;
    slot->initialized = true;
    workers_->Post(slot->owner, [this, slot, frames, i] {
      std::memcpy(slot->weights.get(), (*frames)[i].data(), (*frames)[i].size());
      optimizer_->InitState(slot->state.data(), slot->info->length);
    });
  }
  return Status::Ok();
}

ModeSchedule::Phase Shard::RuleAt(uint64_t clock) const {
  if (options_.mode == ConsistencyMode::kAuto) return schedule_.At(clock);
  return ModeSchedule::Phase{0, options_.mode, options_.staleness};
}

Result<uint64_t> Shard::SwitchMode(uint64_t from_clock, ConsistencyMode mode, uint32_t staleness) {
  if (options_.mode != ConsistencyMode::kAuto) {
    return Status::FailedPrecondition(std::string("a mode switch in a job of mode ") +
                                      ModeName(options_.mode) + "; only mode auto switches");
  }
  std::optional<uint64_t> newest;
  for (const auto& [t, clock] : clocks_) {
    if (clock.pushed > 0) newest = std::max(newest.value_or(0), clock.pushed - 1);
  }
  return schedule_.Switch(from_clock, mode, staleness, newest);
}

Status Shard::CheckAhead(uint32_t ahead) const {
  if (options_.mode != ConsistencyMode::kAsync && options_.mode != ConsistencyMode::kSsp) {
    return Status::FailedPrecondition(std::string("a trainer may compute ahead of its weights "
                                                  "(--forward-during-pull) in mode async or ssp only, not ") +
                                      ModeName(options_.mode));
  }
  if (options_.mode == ConsistencyMode::kSsp && ahead > options_.staleness) {
    return Status::FailedPrecondition("a trainer computing " + std::to_string(ahead) +
                                      " step(s) ahead of its weights (--forward-during-pull) needs ssp "
                                      "staleness of at least " +
                                      std::to_string(ahead) + "; the job's is " +
                                      std::to_string(options_.staleness));
  }
  return Status::Ok();
}

Status Shard::Push(uint32_t trainer, const wire::Push& push, Frames frames, Pushed* pushed) {
  const bool automatic = options_.mode == ConsistencyMode::kAuto;
  const bool empty = push.batch_size() == 0;
  // In auto, an empty push is the ssp "out of data" mark (trainers of an auto job behave as in
  // ssp when they run out), except in a diloco phase, whose trainers push empty rounds as in
  // mode diloco.
  const ConsistencyMode rule = RuleAt(push.clock()).mode;
  const ConsistencyMode mode =
      automatic && empty && rule != ConsistencyMode::kDiloco ? ConsistencyMode::kSsp : rule;
  const bool sync = HasRounds(mode, options_.diloco);
  const bool diloco = mode == ConsistencyMode::kDiloco;
  const bool async_rounds = diloco && delayed_.has_value();
  const wire::DType dtype = push.dtype();
  const bool int8 = dtype == wire::DType::I8;
  if (int8 && !diloco) {
    return Status::FailedPrecondition(std::string("int8 pushes carry diloco's pseudo-gradients only; this "
                                                  "job's mode is ") +
                                      ModeName(mode));
  }
  if (!IsWireFloat(dtype) && !int8) {
    return Status::FailedPrecondition(std::string("gradients travel as float32, bfloat16 or float16, not ") +
                                      DTypeName(dtype));
  }
  if (!IsLive(trainer)) {
    return Status::FailedPrecondition("trainer " + std::to_string(trainer) +
                                      " is not a live member of the job");
  }
  if (empty && mode == ConsistencyMode::kAsync) {
    return Status::FailedPrecondition("a push with batch_size 0 only makes sense in sync or ssp mode");
  }
  if (push.ahead() > 0) HETPS_RETURN_IF_ERROR(CheckAhead(push.ahead()));
  if (diloco && !empty && push.inner_steps() == 0) {
    return Status::Protocol("a diloco push of " + std::to_string(push.batch_size()) +
                            " samples names no inner steps; its pseudo-gradient cannot be weighed");
  }
  if (diloco && !empty && push.inner_steps() > push.batch_size()) {
    return Status::Protocol("a diloco push of " + std::to_string(push.batch_size()) + " samples over " +
                            std::to_string(push.inner_steps()) +
                            " inner steps; an inner step takes at least one sample");
  }
  if (const uint64_t most = MostSamples(mode, push.inner_steps()); most > 0 && push.batch_size() > most) {
    const std::string batch = "the global batch of " + std::to_string(options_.global_batch_size);
    return Status::InvalidArgument("a push of " + std::to_string(push.batch_size()) + " samples; in " +
                                   ModeName(mode) + " a push carries at most " + std::to_string(most) +
                                   " in this job (" +
                                   (diloco ? batch + " per inner step"
                                    : sync ? batch
                                           : std::to_string(kMaxLocalSteps) + " local steps of " + batch) +
                                   ")");
  }
  auto from = from_clocks_.find(trainer);
  const bool late = from != from_clocks_.end() && push.clock() < from->second;
  const auto& ids = *push.partitions();
  const auto* versions = push.versions();
  if (!empty && versions != nullptr && versions->size() != ids.size()) {
    return Status::Protocol("push lists " + std::to_string(ids.size()) + " partitions but " +
                            std::to_string(versions->size()) + " versions");
  }
  HETPS_RETURN_IF_ERROR(CheckFrames(ids, *frames, /*allow_empty=*/empty, dtype));
  HETPS_RETURN_IF_ERROR(CheckScales(push, empty));
  for (size_t i = 0; i < ids.size(); ++i) {
    const Slot* slot = *Find(ids[i]);
    if (empty && (*frames)[i].size() != 0) {
      return Status::InvalidArgument("a push with batch_size 0 must carry empty frames");
    }
    if (!slot->initialized) {
      return Status::FailedPrecondition(PartitionName(ids[i]) +
                                        " has no initial weights yet; push InitWeights first");
    }
    if (!empty && versions != nullptr && versions->Get(i) > slot->version) {
      return Status::FailedPrecondition("push computed on version " + std::to_string(versions->Get(i)) +
                                        " of " + PartitionName(ids[i]) + ", which is only at " +
                                        std::to_string(slot->version));
    }
    if (!sync || late) continue;
    // Auto: the first push of a sync (or diloco) phase finds the round counter where the last
    // sync phase left it (other steps count no rounds); the phase's first round is its first
    // step. A partition at round 0 in a sync phase is a replacement server's (restored
    // partitions count no rounds outside pure sync): its first round is the trainers' step.
    const bool entering = automatic && slot->pushed.empty() && push.clock() > slot->round &&
                          (!HasRounds(RuleAt(slot->round).mode, options_.diloco) || slot->round == 0);
    if (push.clock() != slot->round && !entering) {
      return Status::FailedPrecondition("push for round " + std::to_string(push.clock()) + " but " +
                                        PartitionName(ids[i]) + " is at round " +
                                        std::to_string(slot->round));
    }
    if (std::find(slot->pushed.begin(), slot->pushed.end(), trainer) != slot->pushed.end()) {
      return Status::FailedPrecondition("trainer " + std::to_string(trainer) + " already pushed round " +
                                        std::to_string(slot->round) + " of " + PartitionName(ids[i]));
    }
  }
  if (late) {
    if (pushed != nullptr) pushed->late = true;
    return Status::Ok();
  }
  // Valid, and only now read for NaN and infinities: a push left out still counts as its step.
  const std::string unusable = empty ? std::string() : FirstBeyond(ids, *frames, dtype, kLargestGradient);
  const bool carries = !empty && unusable.empty();  // gradients to apply
  if (!unusable.empty()) {
    NoteLeftOut(trainer, push.clock());
    if (pushed != nullptr) pushed->left_out = unusable;
  }
  ++pushes_;
  TrainerClock& clock = clocks_[trainer];
  if (empty && mode == ConsistencyMode::kSsp) {
    clock.idle = true;  // no gradients, and no pull waits for this trainer any more
    if (automatic) {
      for (Slot& slot : slots_) CompleteRoundIfReady(slot);  // nor does a sync round
    }
    return Status::Ok();
  }
  clock.idle = false;
  clock.pushed = std::max(clock.pushed, push.clock() + 1);
  const double sync_seconds = static_cast<double>(push.sync_us()) * 1e-6;
  if (async_rounds) {
    round_length_.ObserveAlone(sync_seconds);
    if (!carries) return Status::Ok();  // out of data or left out: nothing to apply, nobody waits
  } else if (diloco) {
    round_length_.Observe(push.clock(), sync_seconds);
  }
  // A push's staleness is the largest over its partitions; each partition's step uses its own.
  uint64_t staleness = 0;
  // Async and ssp: the push's steps are timed together; sync rounds keep a tally per round.
  const auto tally = sync || !carries ? nullptr : std::make_shared<ApplyTally>();
  const float batch_share = options_.global_batch_size == 0
                                ? 1.0f
                                : static_cast<float>(push.batch_size()) / options_.global_batch_size;
  for (size_t i = 0; i < ids.size(); ++i) {
    Slot& slot = *Find(ids[i]).value();
    const uint64_t used = versions != nullptr && !empty ? versions->Get(i) : slot.version;
    const uint64_t partition_staleness = slot.version - used;
    staleness = std::max(staleness, partition_staleness);
    const void* grad = (*frames)[i].data();
    uint64_t& partition_clock = slot.trainer_clocks[trainer];
    partition_clock = std::max(partition_clock, push.clock() + 1);
    if (async_rounds) {
      PostDelayedStep(slot, grad, dtype, int8 ? push.scales()->Get(i) : 1.0f, frames, tally);
      continue;
    }
    if (!sync) {
      if (!carries) continue;  // left out: the clock moved, the weights did not
      const float weight =
          options_.staleness_aware_lr ? StalenessWeight(partition_staleness, batch_share) : 1.0f;
      PostStep(slot, grad, dtype, weight, batch_share, Optimizer::Share::kSamples, frames, tally,
               push.batch_size());
      continue;
    }
    if (automatic && slot.pushed.empty() && slot.round < push.clock()) {
      slot.round = push.clock();  // the first round of a sync phase (checked above)
      slot.round_samples = 0;
    }
    slot.pushed.push_back(trainer);
    if (!carries) {  // the round goes on without samples from this trainer
      CompleteRoundIfReady(slot);
      continue;
    }
    const bool first = slot.round_samples == 0;
    slot.round_samples += push.batch_size();
    if (diloco) slot.round_step_samples += static_cast<double>(push.batch_size()) * push.inner_steps();
    if (first && dtype == wire::DType::F32 && RoundComplete(slot)) {
      // The round's only gradient is its mean as it stands: step on the frame, without a pass
      // through the sum. (b * g / b can differ from g in the last bit, so this is exact where
      // the sum was not.)
      CloseRound(slot, grad, dtype, 1.0f, frames);
      continue;
    }
    // The round's update is sum_t(b_t * g_t) / sum_t(b_t): the mean gradient over every sample
    // of the round, as one process would compute on the concatenated batch. Diloco sums
    // b_t / tau_t * d_t, each pseudo-gradient per inner step (CompleteRoundIfReady scales it back).
    // An int8 frame's integers are scale * q: its scale joins the weight.
    const double weight = diloco ? static_cast<double>(push.batch_size()) / push.inner_steps()
                                 : static_cast<double>(push.batch_size());
    const float batch = static_cast<float>(int8 ? weight * push.scales()->Get(i) : weight);
    Slot* accumulating = &slot;
    workers_->Post(slot.owner, [accumulating, grad, dtype, batch, first, frames] {
      ScaleInto(grad, accumulating->info->length, dtype, batch, /*assign=*/first, accumulating->sum.data());
    });
    CompleteRoundIfReady(slot);
  }
  if (tally) EndApply(*tally);
  if (carries) {
    ++staleness_counts_[std::min<uint64_t>(staleness, kStalenessBuckets - 1)];
    staleness_max_ = std::max(staleness_max_, staleness);
    staleness_sum_ += staleness;
  }
  return Status::Ok();
}

Shard::Stats Shard::stats() const {
  Stats stats;
  for (const auto& [t, run] : left_out_) stats.left_out[t] = run.counts;
  stats.pushes = pushes_;
  stats.staleness_max = staleness_max_;
  stats.staleness_sum = staleness_sum_;
  stats.max_clock_gap = max_clock_gap_;
  size_t used = staleness_counts_.size();
  while (used > 0 && staleness_counts_[used - 1] == 0) --used;
  stats.staleness_counts.assign(staleness_counts_.begin(), staleness_counts_.begin() + used);
  for (const Slot& slot : slots_) {
    stats.version = std::max(stats.version, slot.version);
    stats.rounds = std::max(stats.rounds, slot.round);
  }
  std::lock_guard<std::mutex> lock(apply_mutex_);
  stats.apply_seconds = apply_seconds_;
  return stats;
}

int Shard::state_slots() const {
  return delayed_ && !automatic() ? delayed_->state_slots() : optimizer_->state_slots();
}

std::vector<std::string> Shard::state_names() const {
  if (!delayed_ || automatic()) return optimizer_->state_names();
  if (delayed_->state_slots() == 0) return {};
  return {DelayedNesterov::kBufferName, DelayedNesterov::kSumName};
}

}  // namespace hetps
