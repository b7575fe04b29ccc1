// Shard: the partitions one server owns — float32 weights, optimizer state, version and round
// counters — and the consistency rules that decide when a push is applied and when a pull may be
// answered (sync: one summed, batch-weighted update per round from every live trainer; async:
// every push applied on arrival; ssp: pushes applied on arrival, and a trainer's pull at clock c
// answered only once every live, busy trainer has pushed at least c - staleness steps to each
// partition the pull asks for; diloco: rounds as in sync, of pseudo-gradients combined after
// FedNova and stepped on by the outer optimizer; diloco with async rounds: each pseudo-gradient
// applied on arrival by DelayedNesterov, as async applies gradients).
//
// It also keeps the record the run summary and the metrics report: the staleness of every applied
// push, the largest clock gap between trainers that it admitted, and the optimizer's seconds per
// push or round.
//
// No sockets: the server's loop thread (the I/O thread) owns a Shard and is the only thread that
// calls it. It keeps the bookkeeping (rounds, versions, clocks) and decides at once whether a
// message is applied whole or refused whole, with a Status saying why (see RefusalCode); the
// numeric work on a partition's weights runs later, in decision order, on the partition's owner
// in PartitionWorkers, so the weights need no lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/job_config.h"
#include "common/refusals.h"
#include "common/seconds_histogram.h"
#include "common/shard_map.h"
#include "common/status.h"
#include "messages_generated.h"
#include "ps/delayed_nesterov.h"
#include "ps/mode_schedule.h"
#include "ps/optimizer.h"
#include "ps/partition_workers.h"
#include "ps/round_length.h"

namespace hetps {

class Shard {
 public:
  struct Options {
    // kAuto: each step follows the phase of the mode schedule it belongs to (SwitchMode); the
    // job starts as async (the scheduler switches it once it has measured the trainers). Sync
    // phases of auto count only busy trainers in a round: a trainer out of data says so with an
    // empty push, as in ssp, and rounds go on without it.
    ConsistencyMode mode = ConsistencyMode::kSync;
    OptimizerOptions optimizer;
    uint32_t staleness = 0;           // ssp: the largest clock gap a pull may open
    bool staleness_aware_lr = false;  // async, ssp: a push's gradient is weighted 1 / max(1, staleness)
    // A push (async, ssp) or a sync round of b samples steps by lr * b / global_batch_size, so
    // that every sample moves the weights as much whatever the mode and however the batch was
    // split; a full sync round steps by lr. 0 leaves every step at lr.
    uint32_t global_batch_size = 0;
    // Threads that own the partitions and do their numeric work (PartitionWorkers); 1 does it
    // inline on the calling thread. The weights come out bitwise the same for any number.
    size_t threads = 1;
    // optimizer.schedule: the lr of each step by the number of global batches stepped on before
    // it, the same on every partition and server (kept in checkpoints); not in kDiloco, whose
    // `optimizer` is the outer one, nor for auto's outer steps.
    // kDiloco: the rounds' length when the servers choose it (RoundLength). `optimizer` is then
    // the outer optimizer and global_batch_size is not used: every round is one outer step.
    // kAuto: the same for a diloco phase, whose rounds step `outer_optimizer` (as Delayed
    // Nesterov with diloco.async; its state apart from `optimizer`'s, zero at the phase's start).
    DilocoOptions diloco;
    OptimizerOptions outer_optimizer = DefaultOuterOptimizer();
  };

  // The tensor frames of a received message, kept alive until every task that reads them ran.
  using Frames = std::shared_ptr<const std::vector<zmq::message_t>>;

  // A Weights reply: its fields as they stood when BuildWeights was called, and one frame per
  // partition, as `dtype` (a wire float). float32 frames in sync mode borrow the weights without
  // copying (they cannot change before every live trainer has received its reply and pushed
  // again); in the other modes they are copies; 16-bit frames are converted copies.
  struct WeightsReply {
    std::vector<uint32_t> partitions;
    std::vector<uint64_t> versions;
    uint64_t round_samples = 0;
    wire::DType dtype = wire::DType::F32;
    uint64_t held_us = 0;      // set by the server: how long the request waited for the rule
    double round_seconds = 0;  // diloco: the length of the round these weights start (RoundLength)
    uint64_t left_out = 0;     // set by the server: the asking trainer's steps left out (LeftOutSteps)
    std::vector<zmq::message_t> frames;

    flatbuffers::Offset<wire::Weights> Write(flatbuffers::FlatBufferBuilder& fbb) const;
  };

  // Pushes with staleness 0 .. kStalenessBuckets - 2 are counted one value a bucket; the last
  // bucket counts every larger staleness.
  static constexpr size_t kStalenessBuckets = 64;

  // Allocates the partitions that `map` gives to `server_rank` and starts the worker threads.
  // InvalidArgument for a bad optimizer configuration or 0 threads; ResourceExhausted naming the
  // bytes when the memory cannot be had (the map was validated, so sizes cannot overflow).
  static Result<std::unique_ptr<Shard>> Create(const ShardMap& map, uint32_t server_rank,
                                               const Options& options);

  // The trainers whose pushes make up a sync round. A round waiting only for trainers that left
  // is completed (and applied) at once. `from_clocks` gives the first clock of trainers that
  // joined a running job, or that were left out of a step they held (absent: 0): sync rounds
  // before it complete without them, in ssp they count as having pushed that many steps, and
  // their pushes for steps before it are late (Push).
  void SetLiveTrainers(std::vector<uint32_t> ranks, std::map<uint32_t, uint64_t> from_clocks = {});
  bool IsLive(uint32_t trainer) const;
  // Whether SetLiveTrainers may take `trainer` with first clock `from_clock` when it is new to
  // the set or its first clock changed: in sync mode FailedPrecondition, naming the partition,
  // when one has already completed that round, since the trainer's push for it could no longer
  // count. OK otherwise, and in the other modes.
  Status CheckFromClock(uint32_t trainer, uint64_t from_clock) const;

  // Stores initial weights for partitions not yet initialised (the first trainer wins; later
  // copies are ignored). Refused when a partition is unknown, a frame's length is wrong or a
  // weight is NaN or infinite (InvalidArgument naming it).
  Status Init(const wire::InitWeights& init, Frames frames);

  // Accepts trainer `trainer`'s gradients. Sync: adds them to the open round of each partition
  // (`clock` must equal the partition's round, once per trainer) and applies the round when every
  // live trainer has pushed; a float32 push that is its round's only gradient is stepped on
  // straight from its frame. Gradients may travel as float32, bfloat16 or float16 (the sums and
  // the weights stay float32). Async and ssp: applies them now, the step scaled by the push's
  // share of the global batch, the gradient divided by its staleness (before it enters the
  // optimizer's state) when staleness_aware_lr is set. Diloco: as sync, but the frames are
  // pseudo-gradients over Push.inner_steps inner steps (at least 1 with samples); a round steps
  // the outer optimizer once, by lr, on sum_t(p_t * d_t / tau_t) * sum_t(p_t * tau_t), where
  // tau_t is trainer t's inner steps and p_t its share of the round's samples (FedNova: each
  // pseudo-gradient normalised by its steps, and the whole scaled back by the mean steps); its
  // frames may also be int8, each read as its scale (Push.scales) times its integers. Diloco with
  // async rounds: each push is applied alone on arrival, as in async, by DelayedNesterov (one of N
  // live trainers); a push with batch_size 0 changes nothing there. In ssp, a push
  // with batch_size 0 carries no gradients and marks the trainer idle (out of data): no pull waits for it
  // until it pushes gradients again. Refused (nothing changes) for an unknown or foreign partition, a bad
  // frame length, int8 frames outside diloco or without one finite scale >= 0 each (at most
  // FLT_MAX / 127), a batch_size beyond the job's (sync: the global batch; async and ssp:
  // kMaxLocalSteps global batches; diloco: a global batch per inner step, and at least a sample
  // per inner step), a push before initialisation, a repeated or out-of-turn push, or a trainer
  // that is not live. Gradient bytes are read in place, by the partitions' owners.
  //
  // A push otherwise valid whose gradients hold a NaN, an infinity or an element beyond
  // kLargestGradient is *left out* (the weights can never become non-finite from a push): it is
  // accepted as a push of no samples (a round goes on without its gradients; in async and ssp
  // it moves the trainer's clock and nothing else), counted for its trainer (nonfinite_steps),
  // and `pushed->left_out` names the first such element.
  //
  // A push for a step before the trainer's first clock (SetLiveTrainers) is *late*: the job went
  // on without that step, so it is accepted and nothing of it applied (`pushed->late`); its reply
  // is the weights of the steps that did go on.
  struct Pushed {
    std::string left_out;  // empty unless the push was left out
    bool late = false;
  };
  Status Push(uint32_t trainer, const wire::Push& push, Frames frames, Pushed* pushed = nullptr);
  // Gradient elements larger than this (2^100) are left out as infinities would be: no training
  // produces them, and sums and optimizer steps of such values could overflow float32.
  static constexpr float kLargestGradient = 0x1p100f;
  // The steps of `trainer` whose pushes this shard left out, in all.
  uint64_t LeftOutSteps(uint32_t trainer) const;
  // Whether a push may ask for weights `ahead` steps early (Push.ahead): async, or ssp with a
  // staleness of at least `ahead` (a smaller one would wait for this trainer's own next push).
  Status CheckAhead(uint32_t ahead) const;

  // mode: auto: handles steps from `from_clock` on (or from the step after the newest push, when
  // a trainer has pushed that far) by `mode`, and returns the step it takes effect from. From a
  // kDiloco switch on, each step is a round of pseudo-gradients, as in mode diloco, for good.
  // FailedPrecondition outside mode: auto and after a switch to diloco; InvalidArgument for kAuto.
  Result<uint64_t> SwitchMode(uint64_t from_clock, ConsistencyMode mode, uint32_t staleness);
  const ModeSchedule& schedule() const { return schedule_; }

  // ---- Pulls (shard_pull.cc) ----
  // Checks that a pull comes from a live trainer and names distinct partitions of this shard.
  Status ValidatePull(uint32_t trainer, const wire::Pull& pull) const;

  // Whether the weights a pull asks for exist yet: every partition initialised and, unless
  // `latest`, in sync mode round `clock` complete, in ssp mode every live, busy trainer at least
  // `clock - staleness` pushes along on each of them. (Per partition: a step's gradients arrive
  // in several pushes, and a pull answered after the first must not miss the others.)
  bool PullReady(const std::vector<uint32_t>& partitions, uint64_t clock, bool latest) const;

  // Who a pull at `clock` (not `latest`) that is not ready waits for: each live trainer that has
  // not pushed `step`, which the round (sync, diloco) or the ssp bound the pull needs takes in;
  // the pull no longer waits for it once its first clock is `until`. None while a partition
  // waits for its initial weights.
  struct Hold {
    uint32_t trainer = 0;
    uint64_t step = 0;
    uint64_t until = 0;
  };
  std::vector<Hold> Holders(const std::vector<uint32_t>& partitions, uint64_t clock) const;

  // Records that a pull at `clock` (not `latest`) was answered, for max_clock_gap.
  void RecordAdmission(uint64_t clock);

  // Builds the reply to a ready pull: each partition's owner makes its frame once the work
  // queued before it has run, then `done` gets the reply on this thread (see
  // PartitionWorkers::Dispatch: at once with one thread, else from workers().RunFinished()).
  void BuildWeights(const std::vector<uint32_t>& partitions, wire::DType dtype,
                    std::function<void(WeightsReply&)> done);

  // ---- Checkpoints (shard_checkpoint.cc) ----

  // A copy of the shard's state at a checkpoint's cut: per partition its float32 weights, each
  // optimizer state slot and its update count (int64 scalar), named as checkpoint/
  // partition_names.h says; frames[i] holds tensors[i] and borrows the copy, which it keeps alive.
  struct Snapshot {
    uint64_t version = 0;  // largest update count over the partitions
    uint64_t round = 0;    // sync rounds completed at the cut
    std::vector<TensorInfo> tensors;
    std::vector<zmq::message_t> frames;
  };

  // Copies the state for a checkpoint. Sync with `round`: each partition once it has completed
  // exactly `round` rounds (at once for those already there), so every server cuts at the same
  // round; FailedPrecondition, and nothing is taken, when a partition is already past it.
  // Otherwise at once, each partition after the updates queued before. The copies are made by the
  // partitions' owners; `done` runs on the I/O thread once all are made. A later call abandons a
  // snapshot still waiting for its round.
  Status TakeSnapshot(std::optional<uint64_t> round, std::function<void(Snapshot&)> done);

  // Replaces every partition's state with `tensors` (named as in Snapshot; frames[i] holds
  // tensors[i]), all or nothing: InvalidArgument naming a missing, unknown or mis-sized tensor.
  // In sync mode the partitions are then at round `round`. Open rounds, trainer clocks and a
  // waiting snapshot are forgotten.
  Status Restore(const std::vector<TensorInfo>& tensors, const std::vector<zmq::message_t>& frames,
                 uint64_t round);
  // Back to uninitialised partitions at round 0, as before the first InitWeights; open rounds,
  // trainer clocks and a waiting snapshot are forgotten.
  void Reset();

  struct Stats {
    uint64_t version = 0;                    // largest number of updates applied to one partition
    uint64_t rounds = 0;                     // largest number of sync rounds completed by one partition
    uint64_t pushes = 0;                     // push messages accepted
    std::vector<uint64_t> staleness_counts;  // see kStalenessBuckets; trailing zeros trimmed
    uint64_t staleness_max = 0;
    uint64_t staleness_sum = 0;  // over every applied push
    uint64_t max_clock_gap = 0;
    // Seconds of optimizer steps per push (async, ssp) or sync round, summed over its partitions
    // (with several worker threads they may run side by side: this is work, not wall time). A
    // push or round is counted once its last step has run.
    SecondsHistogram apply_seconds;
    // Per trainer whose pushes were left out (Push): its steps left out, and the length of the
    // latest run of consecutive steps (clocks) left out.
    struct LeftOut {
      uint64_t steps = 0;
      uint64_t in_a_row = 0;
    };
    std::map<uint32_t, LeftOut> left_out;
  };
  Stats stats() const;
  // Whether step `clock` is a round that waits for every live trainer (sync, diloco): the job's
  // mode, or in mode auto the schedule's phase.
  bool IsSyncStep(uint64_t clock) const { return HasRounds(RuleAt(clock).mode, options_.diloco); }
  // The sync rounds every partition has completed (the fewest over the partitions).
  uint64_t CompletedRounds() const;

  const std::vector<uint32_t>& partition_ids() const { return ids_; }
  // Optimizer state slots per element (momentum: 1, Adam: 2 or 3; async diloco's Delayed
  // Nesterov: 2 with momentum), and their names in a checkpoint, in slot order.
  int state_slots() const;
  std::vector<std::string> state_names() const;
  ConsistencyMode mode() const { return options_.mode; }
  // Whether the job's mode moves in rounds that wait for every live trainer (HasRounds).
  bool has_rounds() const { return HasRounds(options_.mode, options_.diloco); }
  bool automatic() const { return options_.mode == ConsistencyMode::kAuto; }
  // The I/O thread polls workers().wake_fd() and calls RunFinished(); Flush() waits for the work
  // queued so far (tests); Stop() ends the threads (the destructor does too).
  PartitionWorkers& workers() { return *workers_; }

 private:
  // weights, state and sum belong to the owner worker once the slot is built; the rest to the
  // I/O thread.
  struct Slot {
    const PartitionInfo* info = nullptr;
    size_t owner = 0;                  // the worker that owns weights, state and sum
    std::shared_ptr<float[]> weights;  // shared: zero-copy replies keep it alive
    std::vector<float> state;          // optimizer state, slot-major
    std::vector<float> outer_state;    // auto: the outer optimizer's (or Delayed Nesterov's) of a
                                       // diloco phase, slot-major
    uint64_t outer_steps = 0;          // auto: outer optimizer steps applied
    std::vector<float> sum;            // sync: sum of batch-weighted gradients of the round
    std::vector<uint32_t> pushed;      // sync: trainers in the open round
    uint64_t round_samples = 0;        // sync: samples in the open round
    double round_step_samples = 0;     // diloco: sum over the open round's pushes of samples * inner steps
    uint64_t last_round_samples = 0;   // sync: samples in the last completed round
    uint64_t version = 0;              // optimizer steps applied
    uint64_t schedule_samples = 0;     // samples those steps were on: the lr schedule's position
    uint64_t round = 0;                // sync rounds completed (async diloco: pushes applied)
    bool initialized = false;
    std::map<uint32_t, uint64_t> trainer_clocks;  // per trainer: its steps pushed to this partition
  };

  Shard(const ShardMap& map, uint32_t server_rank, const Options& options,
        std::unique_ptr<Optimizer> optimizer, std::unique_ptr<Optimizer> outer,
        std::optional<DelayedNesterov> delayed);

  // The slot of a partition of this shard, or NotFound naming it.
  Result<Slot*> Find(uint32_t partition);
  Result<const Slot*> Find(uint32_t partition) const;
  // A push's scales: one finite scale >= 0 per partition for int8 frames with samples (and
  // weights asked for as a wire float), none otherwise; Protocol naming what is wrong.
  Status CheckScales(const wire::Push& push, bool empty) const;
  // ---- Checks of what a member sends (shard_checks.cc) ----
  // "partition 3 (fc1.weight[0:1000])".
  std::string PartitionName(uint32_t id) const;
  // The first element of the frames (validated, of `dtype`) that is a NaN, an infinity or larger
  // in magnitude than `largest`, described with its partition; empty when there is none. int8
  // frames have none (finite integers times a scale CheckScales bounded).
  std::string FirstBeyond(const flatbuffers::Vector<uint32_t>& ids, const std::vector<zmq::message_t>& frames,
                          wire::DType dtype, float largest) const;
  // Counts trainer's push for step `clock` as left out.
  void NoteLeftOut(uint32_t trainer, uint64_t clock);
  // The most samples a push of `mode` may carry over `inner_steps` (diloco); 0: no bound (no
  // global batch).
  uint64_t MostSamples(ConsistencyMode mode, uint32_t inner_steps) const;
  // Frames must hold elements of `dtype`, one per partition listed.
  Status CheckFrames(const flatbuffers::Vector<uint32_t>& ids, const std::vector<zmq::message_t>& frames,
                     bool allow_empty, wire::DType dtype) const;
  // ---- Rounds (shard_rounds.cc) and optimizer steps (shard_apply.cc) ----
  // Whether the open round of `slot` waits for live trainer `t`: it counts from before the
  // round, is not out of data (auto) and has not pushed it.
  bool RoundAwaits(const Slot& slot, uint32_t t) const;
  // Whether every live trainer has pushed the open round (and someone has).
  bool RoundComplete(const Slot& slot) const;
  void CompleteRoundIfReady(Slot& slot);
  // The optimizer seconds of one push or round: each of its steps adds its own on the worker
  // that runs it; the last to finish, step or EndApply, records the sum in apply_seconds_.
  struct ApplyTally {
    std::atomic<int64_t> nanoseconds{0};
    // Steps posted and not yet run, plus one until EndApply: whoever brings it to 0 records.
    std::atomic<uint32_t> open{1};
    // Written by the I/O thread before each step is posted, so whoever ends the tally sees them all.
    std::atomic<uint32_t> steps{0};
  };
  // Ends the open round, stepping on n elements of `grad` (a wire float) scaled by `grad_scale`
  // when the round had samples; `keep` holds `grad`'s bytes.
  void CloseRound(Slot& slot, const void* grad, wire::DType dtype, float grad_scale, Frames keep);
  // Counts an optimizer step of `slot` and queues it on the owner: a 16-bit `grad` is widened
  // first into the owner's scratch buffer. `share` says how lr_scale enters (Optimizer::Apply).
  // The step's seconds go to `tally`.
  // `outer`: an auto job's diloco round, stepped by outer_ on the slot's outer_state.
  // `samples`: the step's, which move the lr schedule on (ScheduledStepLr).
  void PostStep(Slot& slot, const void* grad, wire::DType dtype, float grad_scale, float lr_scale,
                Optimizer::Share share, Frames keep, const std::shared_ptr<ApplyTally>& tally,
                uint64_t samples, bool outer = false);
  // Queues `step` on `slot`'s owner as one of `tally`'s steps, its seconds added to the tally.
  void PostTimed(Slot& slot, const std::shared_ptr<ApplyTally>& tally, std::function<void()> step);
  // Async diloco (shard_async_rounds.cc): queues on the owner the Delayed Nesterov step of one
  // push's pseudo-gradient, `grad` (elements of `dtype`, an int8 frame's integers times `scale`).
  void PostDelayedStep(Slot& slot, const void* grad, wire::DType dtype, float scale, Frames keep,
                       const std::shared_ptr<ApplyTally>& tally);
  // The lr of `slot`'s next step by the optimizer's schedule: at schedule_samples /
  // global_batch_size steps of the global batch (at version steps without a global batch);
  // negative (the optimizer's own) without a schedule, for outer steps and in mode diloco.
  double ScheduledStepLr(const Slot& slot, bool outer) const;
  // The push or round of `tally` has posted all its steps (I/O thread).
  void EndApply(ApplyTally& tally);
  // Any thread: the last of `tally`'s steps (or its end) has run.
  void RecordApply(const ApplyTally& tally);
  // Runs on the owner: the frame of one partition's weights as `dtype`.
  zmq::message_t WeightsFrame(const Slot& slot, wire::DType dtype) const;
  // Queues the copy of `slot` for the snapshot under way once it is at the snapshot's round.
  void SnapshotIfDue(Slot& slot);
  // Forgets everything that a restore or reset replaces: open rounds, clocks, a waiting snapshot.
  void ForgetProgress();
  // The rule of step `clock`: the job's mode, or in mode: auto the schedule's phase.
  ModeSchedule::Phase RuleAt(uint64_t clock) const;
  // The fewest steps any live trainer that is not idle (ssp) has pushed: to this shard, or to
  // every one of `partitions`; none when there is no such trainer.
  std::optional<uint64_t> SlowestClock() const;
  std::optional<uint64_t> SlowestClock(const std::vector<uint32_t>& partitions) const;
  // Calls `visit(t, steps)` for each live trainer that is not idle (ssp) and each of `partitions`:
  // the steps it counts as having pushed to that partition.
  void VisitBusySteps(const std::vector<uint32_t>& partitions,
                      const std::function<void(uint32_t, uint64_t)>& visit) const;

  struct TrainerClock {
    uint64_t pushed = 0;  // pushes accepted: the trainer's clock
    uint64_t from = 0;    // a trainer that joined a running job counts as this many steps along
    bool idle = false;    // ssp: said it has no data; no pull waits for it
  };

  const ShardMap& map_;
  uint32_t server_rank_;
  Options options_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Optimizer> outer_;        // mode: auto only: a diloco phase's synchronous outer step
  std::optional<DelayedNesterov> delayed_;  // diloco (or auto's phase) with async rounds: the outer step
  std::vector<Slot> slots_;
  std::vector<int32_t> slot_of_;  // partition id -> index in slots_, or -1
  std::vector<uint32_t> ids_;
  std::vector<uint32_t> live_trainers_;       // sorted
  std::map<uint32_t, uint64_t> from_clocks_;  // live trainers that joined a running job: first clock
  std::map<uint32_t, TrainerClock> clocks_;
  ModeSchedule schedule_;     // mode: auto only
  RoundLength round_length_;  // mode: diloco only
  uint64_t pushes_ = 0;
  std::vector<uint64_t> staleness_counts_ = std::vector<uint64_t>(kStalenessBuckets, 0);
  uint64_t staleness_max_ = 0;
  uint64_t staleness_sum_ = 0;
  uint64_t max_clock_gap_ = 0;
  struct LeftOutRun {
    Stats::LeftOut counts;
    uint64_t last_clock = 0;  // the latest step left out
  };
  std::map<uint32_t, LeftOutRun> left_out_;  // per trainer with a push left out
  // Sync: the tally of each round some partition has closed, until every partition has.
  struct RoundApply {
    std::shared_ptr<ApplyTally> tally;
    size_t closed = 0;  // partitions that closed the round
  };
  std::map<uint64_t, RoundApply> round_applies_;
  mutable std::mutex apply_mutex_;           // the workers record, the I/O thread reads
  SecondsHistogram apply_seconds_;           // guarded by apply_mutex_
  std::vector<std::vector<float>> scratch_;  // per owner: a 16-bit gradient widened to float32
  struct PendingSnapshot;
  std::shared_ptr<PendingSnapshot> snapshot_;  // the snapshot under way, if any
  // Last, so that it is destroyed first: its threads end before the slots they work on.
  std::unique_ptr<PartitionWorkers> workers_;
};

// The wire error code that a refusal Status from Shard (or the server) corresponds to.
wire::ErrorCode RefusalCode(const Status& status);
// The reason it is counted under (common/refusals.h).
Refusal RefusalReasonOf(const Status& status);

}  // namespace hetps
