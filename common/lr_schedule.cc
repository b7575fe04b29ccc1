#include "common/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace hetps {
namespace {

std::string Number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

bool LrScheduleEnabled(const LrScheduleOptions& options) {
  return options.warmup_steps > 0 || options.decay == LrScheduleOptions::Decay::kCosine;
}

double ScheduledLr(const LrScheduleOptions& o, double lr, double steps) {
  const auto warmup = static_cast<double>(o.warmup_steps);
  // The first step of a warm-up of N steps runs at lr / N, its last at lr: none runs at 0.
  if (steps < warmup) return lr * std::min(1.0, (steps + 1) / warmup);
  if (o.decay != LrScheduleOptions::Decay::kCosine) return lr;
  const double span = static_cast<double>(o.decay_steps) - warmup;
  if (span <= 0) return o.min_lr;
  const double progress = std::min(1.0, (steps - warmup) / span);
  return o.min_lr + (lr - o.min_lr) * 0.5 * (1 + std::cos(M_PI * progress));
}

std::string DescribeLrSchedule(const LrScheduleOptions& o) {
  if (!LrScheduleEnabled(o)) return "";
  std::string text = "lr";
  if (o.warmup_steps > 0) text += " warm-up over " + std::to_string(o.warmup_steps) + " steps";
  if (o.decay == LrScheduleOptions::Decay::kCosine) {
    text += std::string(o.warmup_steps > 0 ? ", then" : "") + " cosine decay to " + Number(o.min_lr) +
            " at step " + std::to_string(o.decay_steps);
  }
  return text;
}

const char* LrDecayName(LrScheduleOptions::Decay decay) {
  return decay == LrScheduleOptions::Decay::kCosine ? "cosine" : "none";
}

Result<LrScheduleOptions::Decay> ParseLrDecay(const std::string& name) {
  if (name == "none") return LrScheduleOptions::Decay::kNone;
  if (name == "cosine") return LrScheduleOptions::Decay::kCosine;
  return Status::InvalidArgument("lr_schedule.decay: '" + name + "' is not a decay; allowed: none, cosine");
}

Status ValidateLrSchedule(const LrScheduleOptions& o, double lr) {
  const bool cosine = o.decay == LrScheduleOptions::Decay::kCosine;
  if (!std::isfinite(o.min_lr) || o.min_lr < 0) {
    return Status::InvalidArgument("lr_schedule.min_lr: " + Number(o.min_lr) +
                                   " is out of range; allowed: >= 0");
  }
  if (o.min_lr > lr) {
    return Status::InvalidArgument("lr_schedule.min_lr: " + Number(o.min_lr) +
                                   " is larger than optimizer.lr (" + Number(lr) +
                                   "); the decay goes down to it");
  }
  if (!cosine && o.min_lr != 0) {
    return Status::InvalidArgument("lr_schedule.min_lr: " + Number(o.min_lr) +
                                   " needs decay: cosine; without a decay the lr stays optimizer.lr");
  }
  if (!cosine && o.decay_steps != 0) {
    return Status::InvalidArgument("lr_schedule.decay_steps: " + std::to_string(o.decay_steps) +
                                   " needs decay: cosine");
  }
  if (cosine && o.decay_steps != 0 && o.decay_steps <= o.warmup_steps) {
    return Status::InvalidArgument("lr_schedule.decay_steps: " + std::to_string(o.decay_steps) +
                                   " is not larger than warmup_steps (" + std::to_string(o.warmup_steps) +
                                   "); the decay runs from the warm-up's end to decay_steps");
  }
  return Status::Ok();
}

Result<LrScheduleOptions> ResolveLrSchedule(const LrScheduleOptions& options, uint64_t total_steps) {
  LrScheduleOptions resolved = options;
  if (resolved.decay != LrScheduleOptions::Decay::kCosine || resolved.decay_steps != 0) return resolved;
  if (total_steps <= resolved.warmup_steps) {
    return Status::InvalidArgument(
        "lr_schedule.decay_steps: unset, and the job's " + std::to_string(total_steps) +
        " steps of its global batch are not more than warmup_steps (" +
        std::to_string(resolved.warmup_steps) + "); set decay_steps or a shorter warm-up");
  }
  resolved.decay_steps = total_steps;
  return resolved;
}

uint64_t TotalSteps(uint32_t epochs, uint64_t train_samples, uint32_t global_batch_size) {
  if (global_batch_size == 0) return 0;
  return static_cast<uint64_t>(epochs) * ((train_samples + global_batch_size - 1) / global_batch_size);
}

flatbuffers::Offset<wire::LrScheduleConfig> LrScheduleToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                             const LrScheduleOptions& o) {
  const auto decay =
      o.decay == LrScheduleOptions::Decay::kCosine ? wire::LrDecay::Cosine : wire::LrDecay::None;
  return wire::CreateLrScheduleConfig(fbb, o.warmup_steps, decay, o.min_lr, o.decay_steps);
}

LrScheduleOptions LrScheduleFromWire(const wire::LrScheduleConfig* config) {
  LrScheduleOptions o;
  if (config == nullptr) return o;
  o.warmup_steps = config->warmup_steps();
  o.decay = config->decay() == wire::LrDecay::Cosine ? LrScheduleOptions::Decay::kCosine
                                                     : LrScheduleOptions::Decay::kNone;
  o.min_lr = config->min_lr();
  o.decay_steps = config->decay_steps();
  return o;
}

}  // namespace hetps
