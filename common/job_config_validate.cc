// The relations between a job's fields (ValidateJobOptions), and the quantities derived from them
// (declared in common/job_config.h).
#include <cmath>
#include <cstdio>
#include <string>

#include "common/endpoint.h"
#include "common/job_config.h"

namespace hetps {
namespace {

// "ADDR:PORT" with a port of 1 to 5 digits, at most 65535.
bool LooksLikeHostPort(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string port = text.substr(colon + 1);
  return !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos &&
         std::stoul(port) <= 65535;
}

std::string FormatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

Status ValidateAsyncOuterOptimizer(const OptimizerOptions& outer) {
  const std::string why = "diloco's asynchronous rounds step the outer optimizer as Delayed Nesterov: SGD, ";
  if (outer.kind != OptimizerOptions::Kind::kSgd) {
    return Status::InvalidArgument("outer_optimizer.name: " + why + "not " + OptimizerKindName(outer.kind));
  }
  if (outer.weight_decay != 0) {
    return Status::InvalidArgument("outer_optimizer.weight_decay: " + why + "without weight decay (not " +
                                   FormatNumber(outer.weight_decay) + ")");
  }
  if (outer.dampening != 0) {
    return Status::InvalidArgument("outer_optimizer.dampening: " + why + "without dampening (not " +
                                   FormatNumber(outer.dampening) + ")");
  }
  return ValidateOptimizerOptions(outer, "outer_optimizer");
}

namespace {

Status ValidateDiloco(const JobOptions& o) {
  const DilocoOptions& d = o.diloco;
  if (d.round_steps > 0 && d.round_seconds > 0) {
    return Status::InvalidArgument("diloco: round_steps (" + std::to_string(d.round_steps) +
                                   ") and round_seconds (" + FormatNumber(d.round_seconds) +
                                   ") both set; a round is measured in one or the other");
  }
  if (d.int8_pseudo_gradients && o.mode != ConsistencyMode::kDiloco) {
    return Status::InvalidArgument(std::string("diloco.pseudo_gradient_dtype: int8 needs mode diloco, "
                                               "not ") +
                                   ModeName(o.mode) +
                                   "; per-step gradients have no error feedback to carry int8's rounding "
                                   "(wire_dtype: bf16 or fp16 narrows them)");
  }
  if (d.async_rounds() && o.mode != ConsistencyMode::kDiloco && o.mode != ConsistencyMode::kAuto) {
    return Status::InvalidArgument(
        std::string("diloco.async: asynchronous rounds need mode diloco or auto, not ") + ModeName(o.mode));
  }
  if (d.async_rounds()) HETPS_RETURN_IF_ERROR(ValidateAsyncOuterOptimizer(o.outer_optimizer));
  if (d.min_round_seconds > d.max_round_seconds) {
    return Status::InvalidArgument("diloco.min_round_seconds: " + FormatNumber(d.min_round_seconds) +
                                   " is larger than max_round_seconds (" + FormatNumber(d.max_round_seconds) +
                                   ")");
  }
  return Status::Ok();
}

// Token data goes with a sequence loss and a model of sequences, and model gpt with token data.
Status ValidateLanguageModel(const JobOptions& o) {
  const bool tokens = o.data.format == "tokens";
  if (o.model == "gpt" && !tokens) {
    return Status::InvalidArgument(
        "model: gpt needs token data (data: {format: tokens, ...}); this job's data is " +
        (o.data.format.empty() ? o.dataset : "format " + o.data.format));
  }
  if (tokens && (o.model == "mlp" || o.model == "cnn")) {
    return Status::InvalidArgument(
        "model: " + o.model +
        " takes images; token data needs model gpt or a TorchScript model of sequences");
  }
  if (tokens && o.loss == Loss::kMse) {
    return Status::InvalidArgument(
        "loss: mse does not take token data; its targets are the next tokens "
        "(cross_entropy or nll)");
  }
  HETPS_RETURN_IF_ERROR(ValidateModelOptions(o.model_options));
  if (o.model == "gpt" && o.model_options.context != 0 && o.model_options.context < o.data.context) {
    return Status::InvalidArgument("model_options.context: " + std::to_string(o.model_options.context) +
                                   " positions are fewer than data.context (" +
                                   std::to_string(o.data.context) + " tokens per sample)");
  }
  return Status::Ok();
}

}  // namespace

Status ValidateJobOptions(const JobOptions& o) {
  HETPS_RETURN_IF_ERROR(ValidateOptimizerOptions(o.optimizer));
  HETPS_RETURN_IF_ERROR(ValidateOptimizerOptions(o.outer_optimizer, "outer_optimizer"));
  HETPS_RETURN_IF_ERROR(ValidateDiloco(o));
  HETPS_RETURN_IF_ERROR(ValidateLrSchedule(o.lr_schedule, o.optimizer.lr));
  if (!std::isfinite(o.clip_grad_norm) || o.clip_grad_norm < 0) {
    return Status::InvalidArgument("clip_grad_norm: " + FormatNumber(o.clip_grad_norm) +
                                   " is out of range; allowed: > 0, or 0 for no clipping");
  }
  if (o.global_batch_size < MaxTrainers(o)) {
    const char* field = o.max_trainers > o.trainers ? "max_trainers" : "trainers";
    return Status::InvalidArgument("global_batch_size: " + std::to_string(o.global_batch_size) +
                                   " is smaller than " + field + " (" + std::to_string(MaxTrainers(o)) +
                                   "); every trainer needs at least one sample per step");
  }
  if (o.max_trainers != 0 && o.max_trainers < o.trainers) {
    return Status::InvalidArgument("max_trainers: " + std::to_string(o.max_trainers) +
                                   " is smaller than trainers (" + std::to_string(o.trainers) +
                                   "); it counts the trainers waited for at the start too");
  }
  if (o.partition_bytes > o.max_message_bytes) {
    return Status::InvalidArgument("partition_bytes: " + std::to_string(o.partition_bytes) +
                                   " is larger than max_message_bytes (" +
                                   std::to_string(o.max_message_bytes) +
                                   "); a partition travels in one frame, and larger frames are dropped");
  }
  if (o.request_timeout_ms < 100 || o.request_timeout_ms > kMaxRequestTimeoutMs) {
    return Status::InvalidArgument("request_timeout_ms: " + std::to_string(o.request_timeout_ms) +
                                   " is out of range; allowed 100.." + std::to_string(kMaxRequestTimeoutMs));
  }
  if (o.heartbeat_timeout_ms < 2 * o.heartbeat_interval_ms) {
    return Status::InvalidArgument("heartbeat_timeout_ms: " + std::to_string(o.heartbeat_timeout_ms) +
                                   " must be at least twice heartbeat_interval_ms (" +
                                   std::to_string(o.heartbeat_interval_ms) + ")");
  }
  if (DatasetTrainSamples(o.dataset) == 0) {
    return Status::InvalidArgument("dataset: '" + o.dataset + "' is unknown; allowed: fashion-mnist");
  }
  HETPS_RETURN_IF_ERROR(ValidateDataOptions(o.data));
  if (!o.model_file.empty()) {
    if (o.model != "torchscript") {
      return Status::InvalidArgument("model: '" + o.model + "' with a TorchScript file " + o.model_file +
                                     "; give one or the other");
    }
  } else if (o.model != "mlp" && o.model != "cnn" && o.model != "gpt") {
    return Status::InvalidArgument("model: '" + o.model + "' is unknown; allowed: mlp, cnn, gpt, or " +
                                   "{torchscript: FILE, loss: ...}");
  } else if (o.loss != Loss::kCrossEntropy) {
    return Status::InvalidArgument(std::string("loss: ") + LossName(o.loss) +
                                   " needs a TorchScript model (model: {torchscript: FILE, loss: ...}); "
                                   "the built-in models train with cross_entropy");
  }
  HETPS_RETURN_IF_ERROR(ValidateLanguageModel(o));
  if (auto listen = NormalizeEndpoint(o.listen); !listen.ok()) return listen.status().WithContext("listen");
  if (!o.http.listen.empty() && !LooksLikeHostPort(o.http.listen)) {
    return Status::InvalidArgument("http.listen: '" + o.http.listen +
                                   "' is not ADDR:PORT (e.g. 127.0.0.1:7480; empty: no HTTP)");
  }
  if (o.security.curve && o.security.keys_dir.empty()) {
    return Status::InvalidArgument("security.keys_dir: required with curve: true (or give --curve-keys DIR)");
  }
  if (o.staleness_aware_lr == true && HasRounds(o.mode, o.diloco)) {
    return Status::InvalidArgument(std::string("staleness_aware_lr: true needs mode async or ssp; ") +
                                   ModeName(o.mode) + " pushes are never stale");
  }
  if (o.async_batch == AsyncBatch::kWhole && o.mode == ConsistencyMode::kSync) {
    return Status::InvalidArgument(
        "async_batch: whole needs mode async, ssp or auto; a sync round splits the global batch");
  }
  if (o.balance == Balance::kSpeed && o.mode != ConsistencyMode::kSync && o.mode != ConsistencyMode::kAuto) {
    return Status::InvalidArgument(std::string("balance: speed needs mode sync, not ") + ModeName(o.mode) +
                                   "; other modes let each trainer run at its own pace");
  }
  return Status::Ok();
}

uint64_t DatasetTrainSamples(const std::string& dataset) {
  return dataset == "fashion-mnist" ? 60000 : 0;
}

bool StalenessAwareLr(const JobOptions& options) {
  return options.staleness_aware_lr.value_or(options.mode == ConsistencyMode::kAuto);
}

AsyncBatch AsyncBatchOf(const JobOptions& options) {
  return options.async_batch.value_or(options.mode == ConsistencyMode::kAuto ? AsyncBatch::kWhole
                                                                             : AsyncBatch::kShare);
}

bool AsyncRoundsOf(const JobOptions& options) {
  // Auto's diloco phase too: asynchronous rounds measured slower there (docs/decisions.md).
  return options.diloco.async.value_or(false);
}

uint32_t MaxTrainers(const JobOptions& options) {
  return options.max_trainers == 0 ? options.trainers : options.max_trainers;
}

uint32_t EvenBatchShare(uint32_t global_batch, uint32_t trainers, uint32_t rank) {
  return global_batch / trainers + (rank < global_batch % trainers ? 1 : 0);
}

OptimizerOptions OuterOptimizerDefaults(OptimizerOptions::Kind kind) {
  OptimizerOptions options = DefaultOptimizerOptions(kind);
  if (kind == OptimizerOptions::Kind::kSgd) options.lr = 1;
  return options;
}

const OptimizerOptions& ServerOptimizer(const JobOptions& options) {
  return options.mode == ConsistencyMode::kDiloco ? options.outer_optimizer : options.optimizer;
}

Result<OptimizerOptions> ScheduledOptimizer(const JobOptions& options, uint64_t train_samples,
                                            bool for_servers) {
  const bool rounds = options.mode == ConsistencyMode::kDiloco;
  OptimizerOptions optimizer = for_servers ? ServerOptimizer(options) : options.optimizer;
  if (for_servers && rounds) return optimizer;
  HETPS_ASSIGN_OR_RETURN(LrScheduleOptions schedule,
                         ResolveLrSchedule(options.lr_schedule, TotalSteps(options.epochs, train_samples,
                                                                           options.global_batch_size)));
  if (!for_servers && (rounds || options.mode == ConsistencyMode::kAuto) && options.trainers > 1) {
    auto share = [&options](uint64_t steps) { return (steps + options.trainers - 1) / options.trainers; };
    schedule.warmup_steps = share(schedule.warmup_steps);
    schedule.decay_steps = share(schedule.decay_steps);
    if (schedule.decay == LrScheduleOptions::Decay::kCosine &&
        schedule.decay_steps <= schedule.warmup_steps) {
      schedule.decay_steps = schedule.warmup_steps + 1;
    }
  }
  optimizer.schedule = schedule;
  return optimizer;
}

uint32_t UnbalancedBatch(ConsistencyMode mode, AsyncBatch async_batch, uint32_t global_batch,
                         uint32_t trainers, uint32_t rank) {
  const bool whole = mode == ConsistencyMode::kDiloco ||
                     (async_batch == AsyncBatch::kWhole && mode != ConsistencyMode::kSync);
  return whole ? global_batch : EvenBatchShare(global_batch, trainers, rank);
}

}  // namespace hetps
