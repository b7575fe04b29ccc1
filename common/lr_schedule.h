// LrSchedule: the job's learning-rate schedule (the job file's `lr_schedule`): a linear warm-up
// from almost 0 to the optimizer's lr over warmup_steps, then a cosine decay to min_lr that ends
// at step decay_steps, or a constant lr after the warm-up.
//
// A plain value type and pure functions; any thread may call them. Servers apply it to their
// optimizer steps (ps/shard.cc) and trainers to mode diloco's inner steps (trainer/diloco_round.cc),
// so the job's optimizer follows one schedule whichever side runs it (docs/job_config.md,
// "Learning-rate schedule").
#pragma once

#include <cstdint>
#include <string>

#include <flatbuffers/flatbuffers.h>

#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

struct LrScheduleOptions {
  enum class Decay { kNone, kCosine };

  uint64_t warmup_steps = 0;  // steps of linear warm-up; 0: none
  Decay decay = Decay::kNone;
  double min_lr = 0;         // cosine: the lr at decay_steps and after; in [0, optimizer.lr]
  uint64_t decay_steps = 0;  // cosine: the step the decay ends at (> warmup_steps); 0: the job's
                             // total steps of its global batch (ResolveLrSchedule)
};

// Whether `options` changes the lr at all (a warm-up or a decay).
bool LrScheduleEnabled(const LrScheduleOptions& options);

// The lr of the step that follows `steps` steps already taken (0 for the first; fractional step
// counts, e.g. a short round's share of a step, interpolate), for an optimizer whose lr is `lr`:
// lr * (steps + 1) / warmup_steps during the warm-up, then with cosine
// min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2, p = (steps - warmup_steps) /
// (decay_steps - warmup_steps) up to 1, so min_lr from decay_steps on; lr without decay.
// Needs decay_steps resolved (> warmup_steps) with cosine.
double ScheduledLr(const LrScheduleOptions& options, double lr, double steps);

// For logs: "lr warm-up over 30 steps, then cosine decay to 0.0002 at step 384"; "" without one.
std::string DescribeLrSchedule(const LrScheduleOptions& options);

// "none", "cosine"; and back: InvalidArgument naming the value and the choices.
const char* LrDecayName(LrScheduleOptions::Decay decay);
Result<LrScheduleOptions::Decay> ParseLrDecay(const std::string& name);

// OK, or InvalidArgument naming the field as "lr_schedule.<field>": min_lr outside [0, lr], or
// with decay none; decay_steps set and not larger than warmup_steps.
Status ValidateLrSchedule(const LrScheduleOptions& options, double lr);

// `options` with decay_steps resolved: a cosine decay without decay_steps ends at `total_steps`
// (the job's steps of its global batch, computed by whoever knows its data). InvalidArgument
// naming lr_schedule.decay_steps when that is not larger than warmup_steps.
Result<LrScheduleOptions> ResolveLrSchedule(const LrScheduleOptions& options, uint64_t total_steps);

// The steps of a job: epochs of ceil(train_samples / global_batch_size) steps.
uint64_t TotalSteps(uint32_t epochs, uint64_t train_samples, uint32_t global_batch_size);

// The schedule as OptimizerConfig.schedule carries it, and back (absent: none).
flatbuffers::Offset<wire::LrScheduleConfig> LrScheduleToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                             const LrScheduleOptions& options);
LrScheduleOptions LrScheduleFromWire(const wire::LrScheduleConfig* config);

}  // namespace hetps
