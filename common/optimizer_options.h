// OptimizerOptions: the optimizer and hyper-parameters a job asks its servers to apply.
//
// A plain value type, filled from the job file by common/job_config and sent to servers in the
// shard map. The semantics of every field are those of the torch::optim class of the same name.
#pragma once

#include <string>

#include <flatbuffers/flatbuffers.h>

#include "common/lr_schedule.h"
#include "common/status.h"
#include "messages_generated.h"

namespace hetps {

struct OptimizerOptions {
  enum class Kind { kSgd, kAdam, kAdamW, kAdagrad };

  Kind kind = Kind::kSgd;
  double lr = 0.01;                        // all; > 0
  double momentum = 0.0;                   // sgd; in [0, 1)
  double dampening = 0.0;                  // sgd; in [0, 1]
  bool nesterov = false;                   // sgd; needs momentum > 0 and dampening == 0
  double weight_decay = 0.0;               // all (AdamW: decoupled; its default is 0.01); >= 0
  double beta1 = 0.9;                      // adam, adamw; in [0, 1)
  double beta2 = 0.999;                    // adam, adamw; in [0, 1)
  double eps = 1e-8;                       // adam, adamw (adagrad's default is 1e-10); >= 0
  bool amsgrad = false;                    // adam, adamw
  double lr_decay = 0.0;                   // adagrad; >= 0
  double initial_accumulator_value = 0.0;  // adagrad; >= 0
  // How lr changes over the steps (a warm-up, a decay); none by default. Not a key of the
  // optimizer section: the job's lr_schedule, resolved, as the shard map and TrainerJob carry it
  // to whoever steps this optimizer (ScheduledOptimizer in common/job_config.h).
  LrScheduleOptions schedule;
};

// The torch::optim defaults of `kind` (AdamW: weight_decay 0.01; Adagrad: eps 1e-10).
OptimizerOptions DefaultOptimizerOptions(OptimizerOptions::Kind kind);

// "sgd", "adam", "adamw", "adagrad".
const char* OptimizerKindName(OptimizerOptions::Kind kind);
// Parses a name above; InvalidArgument naming the value and the choices otherwise.
Result<OptimizerOptions::Kind> ParseOptimizerKind(const std::string& name);

// OK, or InvalidArgument naming the first field out of its range (as "<section>.<field>", or
// "lr_schedule.<field>" for the schedule).
Status ValidateOptimizerOptions(const OptimizerOptions& options, const std::string& section = "optimizer");

// The options as the shard map carries them to the servers, and back. OptimizerFromWire copies
// the fields as they came, an unknown kind included: ValidateOptimizerOptions refuses them.
flatbuffers::Offset<wire::OptimizerConfig> OptimizerToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                           const OptimizerOptions& options);
OptimizerOptions OptimizerFromWire(const wire::OptimizerConfig& config);

}  // namespace hetps
