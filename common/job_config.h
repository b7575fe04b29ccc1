// JobOptions: everything that describes one training job, read by the scheduler from a YAML job
// file (configs/*.yaml) and flags, then handed out piece by piece to servers and trainers.
//
// A plain value type. LoadJobFile and ParseJobYaml reject unknown keys and out-of-range values
// with a message naming the file, line, key, value and allowed range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/data_options.h"
#include "common/model_options.h"
#include "common/optimizer_options.h"
#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

// How sync mode splits the global batch across trainers.
enum class Balance { kNone, kSpeed };
// A trainer's batch in async and ssp: its even share of the global batch, or all of it.
enum class AsyncBatch { kShare, kWhole };

// kAuto: the scheduler chooses sync, ssp or async while the job runs (scheduler/mode_chooser.h).
// kDiloco: low-communication rounds: each trainer runs the job's optimizer on its own copy of the
// weights for a round, the servers combine the rounds' pseudo-gradients and apply the outer
// optimizer (docs/modes.md, "diloco").
enum class ConsistencyMode { kSync, kAsync, kSsp, kAuto, kDiloco };

// The training loss of a TorchScript model (built-in models train with cross entropy):
// cross_entropy and nll take class labels and outputs [B, C] (logits, and log-probabilities for
// nll); mse takes the label as a float target and an output [B] or [B, 1].
enum class Loss { kCrossEntropy, kMse, kNll };

const char* LossName(Loss loss);  // "cross_entropy", "mse", "nll"
Result<Loss> ParseLoss(const std::string& name);
wire::Loss ToWire(Loss loss);
Loss FromWire(wire::Loss loss);

const char* ModeName(ConsistencyMode mode);    // "sync", "async", "ssp", "auto", "diloco"
const char* BalanceName(Balance balance);      // "none", "speed"
const char* AsyncBatchName(AsyncBatch batch);  // "share", "whole"
// Wire dtypes by their job-file names: "fp32", "bf16", "fp16".
const char* WireDTypeName(wire::DType dtype);
Result<wire::DType> ParseWireDType(const std::string& name);
// diloco.pseudo_gradient_dtype by its job-file names: "int8" (true) or "wire_dtype" (false).
const char* PseudoGradientDTypeName(bool int8);
Result<bool> ParsePseudoGradientDType(const std::string& name);
Result<ConsistencyMode> ParseMode(const std::string& name);
wire::Mode ToWire(ConsistencyMode mode);
ConsistencyMode FromWire(wire::Mode mode);

// When and where the servers' state is checkpointed (docs/job_config.md, "Checkpoints").
struct CheckpointOptions {
  std::string dir;                    // where checkpoints go; empty: no checkpoints (and a lost
                                      // server ends the job)
  uint32_t interval_seconds = 30;     // take one this long after the previous; 0: not by time
  uint64_t interval_steps = 0;        // take one every N steps (sync rounds, or the fastest
                                      // trainer's steps); 0: not by steps
  uint32_t keep = 3;                  // committed checkpoints kept; older ones are deleted
  uint32_t recovery_timeout_s = 600;  // a lost server must be replaced within this long
  uint32_t cut_timeout_s = 60;        // a cut whose states are not all in this long after it
                                      // was asked for (sync: after its round was due) is
                                      // abandoned; the final one is asked for up to 3 times
};

// The job file's `auto` section: how mode: auto decides (scheduler/mode_chooser.h).
struct AutoModeOptions {
  double measure_seconds = 1;             // measure the trainers this long before the first decision
  double decide_interval_seconds = 4;     // then look again this often
  double steady_variation = 0.3;          // a trainer whose report speeds spread more (relative
                                          // standard deviation) is variable: ssp
  double sync_min_speed_ratio = 0.5;      // steady trainers sync when slowest / fastest speed is at
                                          // least this, and go async below it
  uint32_t max_staleness = 32;            // the largest ssp bound it chooses
  double async_min_transfer_share = 0.8;  // with whole batches in async, trainers whose steps of
                                          // the whole batch are at least this much outside
                                          // compute (their transfers) go async
  // Trainers that would train at least this many times their samples/s now in diloco (their
  // compute-only speeds, less the rounds' diloco.sync_share) switch the job to diloco for good.
  double diloco_min_speedup = 1.5;
  double stall_memory_seconds = 60;  // a trainer's stall counts this long after it ended
};

// The job file's `diloco` section: the rounds of mode: diloco (docs/job_config.md, "diloco").
// A round lasts round_steps inner steps when that is set; otherwise round_seconds when that is
// set; otherwise as long as the servers choose: the longest synchronisation a trainer measured
// (pushing its pseudo-gradient and receiving the new weights) over sync_share, within
// [min_round_seconds, max_round_seconds] (min_round_seconds until one is measured).
struct DilocoOptions {
  uint32_t round_steps = 0;      // inner steps per round (0..1,000,000); 0: rounds by time
  double round_seconds = 0;      // a round's length (0..86,400 s); 0: chosen
  double sync_share = 0.05;      // chosen: the most of a round its synchronisation may take
  double min_round_seconds = 1;  // chosen: bounds on the length (0.01..86,400 s)
  double max_round_seconds = 60;
  // The next round's inner steps run while the last round's pseudo-gradient and the servers'
  // weights after it travel, which reach the trainer a round late (docs/modes.md, "diloco");
  // false: every trainer waits for them at the end of each round.
  bool overlap = true;
  // pseudo_gradient_dtype: int8: every partition of a pseudo-gradient travels as int8 with one
  // scale, a quarter of float32's bytes, the rounding kept on the trainer and added to the next
  // round's (error feedback; docs/modes.md, "diloco"); the weights still travel as wire_dtype.
  // false (wire_dtype): pseudo-gradients travel as wire_dtype, as gradients do.
  bool int8_pseudo_gradients = false;
  // async: each trainer's round ends on its own clock; its pseudo-gradient is applied when it
  // arrives, alone, and the reply brings the newest weights (no round waits for another trainer).
  // The outer optimizer (SGD) then runs as Delayed Nesterov: each push steps by lr / N on its own,
  // and the momentum is refreshed once per N pushes, N the live trainers (ps/delayed_nesterov.h).
  // Unset: the mode's default (AsyncRoundsOf). The scheduler sets it before it sends the section
  // to servers and trainers, which act on async_rounds().
  std::optional<bool> async;
  bool async_rounds() const { return async.value_or(false); }
};

// Whether `mode` moves in rounds that wait for every live trainer (sync, and diloco unless its
// rounds are asynchronous): checkpoints cut at a round, a recovery rolls back to one, and a
// trainer joining starts at a later one. `diloco` is the job's diloco section.
inline bool HasRounds(ConsistencyMode mode, const DilocoOptions& diloco) {
  return mode == ConsistencyMode::kSync || (mode == ConsistencyMode::kDiloco && !diloco.async_rounds());
}

// The diloco section as the shard map and TrainerJob carry it, and back (absent: the defaults).
flatbuffers::Offset<wire::DilocoConfig> DilocoToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                     const DilocoOptions& options);
DilocoOptions DilocoFromWire(const wire::DilocoConfig* config);

// diloco.async's outer optimizer: SGD without weight decay or dampening, valid as
// ValidateOptimizerOptions says; InvalidArgument naming the field ("outer_optimizer.<field>").
Status ValidateAsyncOuterOptimizer(const OptimizerOptions& outer);

// The outer optimizer's defaults for `kind`: torch's, but SGD's lr is 1. The default outer
// optimizer, SGD with lr 1 and no momentum, is plain averaging: it applies the round's combined
// pseudo-gradient as it is (docs/modes.md, "diloco").
OptimizerOptions OuterOptimizerDefaults(OptimizerOptions::Kind kind);
inline OptimizerOptions DefaultOuterOptimizer() {
  return OuterOptimizerDefaults(OptimizerOptions::Kind::kSgd);
}

// The job file's `security` section.
struct SecurityOptions {
  bool curve = false;                // encrypt and authenticate every connection with CURVE
  std::string keys_dir;              // holds scheduler.key and scheduler.pub, and the public keys
                                     // (NAME.pub) of the members to admit; required with curve
  std::vector<std::string> allowed;  // names of the keys to admit; empty: every *.pub in keys_dir
};

// The job file's `http` section: the scheduler's status page, /status and /metrics.
struct HttpOptions {
  std::string listen;  // "ADDR:PORT" to serve on, e.g. 127.0.0.1:7480 (port 0: any); empty: off
};

// The largest request_timeout_ms: one day.
constexpr uint32_t kMaxRequestTimeoutMs = 24 * 3600 * 1000;

struct JobOptions {
  std::string model = "cnn";              // built-in model: mlp | cnn | gpt; "torchscript" with
                                          // model_file
  ModelOptions model_options;             // model gpt's shape (the model_options section)
  std::string model_file;                 // model: {torchscript: FILE}: a TorchScript file the
                                          // trainers load (docs/models.md); empty: built-in
  Loss loss = Loss::kCrossEntropy;        // model: {loss: ...}: TorchScript models only
  std::string dataset = "fashion-mnist";  // the built-in data set, used when data.format is empty
  DataOptions data;                       // the job's own data files (docs/job_config.md, "Data")
  ConsistencyMode mode = ConsistencyMode::kSync;
  uint32_t staleness = 3;                  // ssp: a trainer runs at most this many clocks
                                           // ahead of the slowest live one (0..10000)
  std::optional<bool> staleness_aware_lr;  // async, ssp: divide each push's gradient by its
                                           // staleness (at least 1) before the optimizer; unset:
                                           // the mode's default (StalenessAwareLr)
  AutoModeOptions auto_mode;               // mode: auto's decision rule (the `auto` section)
  Balance balance = Balance::kNone;        // sync: none (equal shares) | speed (shares in
                                           // proportion to each trainer's measured speed)
  std::optional<AsyncBatch> async_batch;   // async, ssp: a trainer's batch per step is its even
                                           // share of the global batch | the whole of it; unset:
                                           // the mode's default (AsyncBatchOf)
  uint32_t epochs = 1;                     // 1..1000
  uint32_t global_batch_size = 64;         // samples per step over all trainers; each trainer
                                           // takes an equal share (the first ones one more)
  OptimizerOptions optimizer =
      DefaultOptimizerOptions(OptimizerOptions::Kind::kSgd);  // the
                                                              // servers'; in diloco the trainers' inner one
  LrScheduleOptions lr_schedule;  // the lr over the job's steps: warm-up, decay (common/lr_schedule.h);
                                  // applied to `optimizer`, never to outer_optimizer
  double clip_grad_norm = 0;      // trainers scale each step's gradient to at most this global L2
                                  // norm before pushing or stepping on it; 0: no clipping
  DilocoOptions diloco;           // mode: diloco's rounds
  OptimizerOptions outer_optimizer = DefaultOuterOptimizer();  // mode: diloco: the servers'
  wire::DType wire_dtype = wire::DType::F32;     // gradients and weights in flight: fp32 | bf16 |
                                                 // fp16 (the servers keep float32 master weights)
  uint64_t partition_bytes = 1u << 20;           // largest partition: 1 MiB (measured best on
                                                 // loopback, docs/decisions.md); at most
                                                 // max_message_bytes
  uint64_t max_message_bytes = 64u << 20;        // largest data-plane frame (a partition's bytes):
                                                 // 64 MiB; servers and trainers drop larger ones
  uint64_t max_model_bytes = uint64_t{1} << 30;  // largest model a trainer may register: 1 GiB of
                                                 // float32 parameters (servers hold up to 4x that
                                                 // with optimizer state and sync sums)
  uint32_t servers = 1;                          // servers to wait for: 1..256
  uint32_t trainers = 1;                         // trainers to wait for at the start: 1..1024
  uint32_t max_trainers = 0;                     // trainers that may take part at once, late
                                                 // joiners included: trainers..1024; 0: trainers
  std::string listen = "tcp://127.0.0.1:7400";   // scheduler's control endpoint
  std::string summary;                           // run summary JSON path; empty: none
  uint64_t seed = 1;                             // model initialisation and epoch order
  uint32_t chunk_samples = 512;                  // samples per data chunk handed to a trainer
  uint64_t max_train_samples = 0;                // train on the first N samples only; 0: all
  uint64_t eval_interval_samples = 0;            // also evaluate every N samples trained (over
                                                 // all trainers); 0: only after each epoch
  uint32_t eval_batch_size = 250;                // batch for test-set evaluation (larger ones
                                                 // run slower on the CPU)
  uint32_t heartbeat_interval_ms = 1000;         // members send a heartbeat this often
  uint32_t heartbeat_timeout_ms = 10000;         // a member silent this long is declared dead
  uint32_t join_timeout_s = 300;                 // give up when members are missing this long
  uint32_t request_timeout_ms = 120000;          // a trainer gives up on a server silent this long
                                                 // (100 ms .. 1 day)
  uint32_t progress_interval_ms = 1000;          // how often trainers report, and the display redraws
  uint32_t nonfinite_limit = 10;                 // a trainer whose steps the servers left out this
                                                 // many times in a row (NaN or Inf gradients) is
                                                 // dropped from the job; 0: never
  // A trainer that a sync or diloco round or an ssp bound waits for longer than
  // stall_pace_factor times its own pace per step (as the servers measure it), and at least
  // stall_floor_s, is left out of that step; the second time it is dropped from the job.
  // stall_floor_s 0: never (docs/errors.md, "stalled").
  uint32_t stall_floor_s = 30;
  uint32_t stall_pace_factor = 10;
  CheckpointOptions checkpoint;  // checkpoints, and recovery from a lost server
  std::string model_out;         // write the trained model here (safetensors) at
                                 // the end; empty: not written
  SecurityOptions security;      // CURVE (docs/security.md); default: none
  HttpOptions http;              // status over HTTP (docs/operations.md); default: off
};

// Field names accepted at the top level of a job file, in documentation order.
std::vector<std::string> JobFileKeys();

// Parses YAML text; `source` names it in errors (usually the file path).
Result<JobOptions> ParseJobYaml(const std::string& text, const std::string& source);
// Reads and parses a job file; NotFound naming the path when it cannot be read. A relative
// model.torchscript path is taken relative to the job file's directory.
Result<JobOptions> LoadJobFile(const std::string& path);

// The resolved job as YAML that ParseJobYaml reads back (every key, defaults included).
std::string JobOptionsToYaml(const JobOptions& options);

// Checks the relations between fields (e.g. a global batch no smaller than the trainer count).
Status ValidateJobOptions(const JobOptions& options);

// Size of the training set of `dataset` before max_train_samples; 0 for an unknown data set.
uint64_t DatasetTrainSamples(const std::string& dataset);

// staleness_aware_lr and async_batch as the job sets them or, where it does not, as its mode
// defaults them: off and share, but on and whole in mode auto, whose async and ssp phases reach
// a target accuracy soonest so (docs/decisions.md, "auto's async phases").
bool StalenessAwareLr(const JobOptions& options);
AsyncBatch AsyncBatchOf(const JobOptions& options);
// diloco.async as the job sets it or, where it does not: off in mode diloco, on in mode auto
// (its diloco phase reached a target accuracy soonest in asynchronous rounds in every scenario
// measured; docs/decisions.md, "auto's diloco phase") unless the outer optimizer is one that
// asynchronous rounds cannot step (ValidateAsyncOuterOptimizer).
bool AsyncRoundsOf(const JobOptions& options);

// The most trainers that may take part at once: max_trainers, or trainers when it is 0.
uint32_t MaxTrainers(const JobOptions& options);

// The optimizer the servers apply: the job's, or in diloco the outer one.
const OptimizerOptions& ServerOptimizer(const JobOptions& options);

// The optimizer stepped with the job's lr_schedule, its decay_steps resolved to the job's steps
// for `train_samples` per epoch (TotalSteps). Servers (`for_servers`): ServerOptimizer, with the
// schedule except in diloco, whose outer lr stays constant. Trainers: `optimizer`, whose schedule
// mode diloco (and auto's diloco phase) follows by each trainer's own inner steps: as every inner
// step takes the whole global batch and the job's trainers share its steps, warmup_steps and
// decay_steps are then divided by `trainers` (rounded up). InvalidArgument from ResolveLrSchedule.
Result<OptimizerOptions> ScheduledOptimizer(const JobOptions& options, uint64_t train_samples,
                                            bool for_servers);

// The batch of trainer `rank` out of `trainers` when splitting `global_batch` evenly.
uint32_t EvenBatchShare(uint32_t global_batch, uint32_t trainers, uint32_t rank);

// A trainer's batch under `mode` before any balancing by speed: trainer `rank` of `trainers` takes
// its even share of `global_batch` (in sync a round's pushes then make one update of the global
// batch), except in async and ssp with `async_batch: whole`, where every push is an update of its
// own and each trainer takes all of `global_batch`, and in diloco, where each trainer's inner
// steps take all of `global_batch` (docs/modes.md).
uint32_t UnbalancedBatch(ConsistencyMode mode, AsyncBatch async_batch, uint32_t global_batch,
                         uint32_t trainers, uint32_t rank);

// The most local steps a trainer takes between pushes (hetps-trainer --local-steps): a push in
// async or ssp carries at most this many global batches.
constexpr uint32_t kMaxLocalSteps = 1024;

}  // namespace hetps
