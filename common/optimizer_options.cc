#include "common/optimizer_options.h"

#include <cmath>
#include <sstream>

namespace hetps {
namespace {

Status OutOfRange(const std::string& section, const char* field, double value, const char* range) {
  std::ostringstream out;
  out << section << "." << field << ": " << value << " is out of range; allowed: " << range;
  return Status::InvalidArgument(out.str());
}

}  // namespace

OptimizerOptions DefaultOptimizerOptions(OptimizerOptions::Kind kind) {
  OptimizerOptions options;
  options.kind = kind;
  switch (kind) {
    case OptimizerOptions::Kind::kSgd:
      options.lr = 0.01;
      break;
    case OptimizerOptions::Kind::kAdam:
      options.lr = 1e-3;
      break;
    case OptimizerOptions::Kind::kAdamW:
      options.lr = 1e-3;
      options.weight_decay = 1e-2;
      break;
    case OptimizerOptions::Kind::kAdagrad:
      options.lr = 1e-2;
      options.eps = 1e-10;
      break;
  }
  return options;
}

const char* OptimizerKindName(OptimizerOptions::Kind kind) {
  switch (kind) {
    case OptimizerOptions::Kind::kSgd:
      return "sgd";
    case OptimizerOptions::Kind::kAdam:
      return "adam";
    case OptimizerOptions::Kind::kAdamW:
      return "adamw";
    case OptimizerOptions::Kind::kAdagrad:
      return "adagrad";
  }
  return "unknown";
}

Result<OptimizerOptions::Kind> ParseOptimizerKind(const std::string& name) {
  for (auto kind : {OptimizerOptions::Kind::kSgd, OptimizerOptions::Kind::kAdam,
                    OptimizerOptions::Kind::kAdamW, OptimizerOptions::Kind::kAdagrad}) {
    if (name == OptimizerKindName(kind)) return kind;
  }
  return Status::InvalidArgument("optimizer.name: '" + name +
                                 "' is not an optimizer; allowed: sgd, adam, adamw, adagrad");
}

Status ValidateOptimizerOptions(const OptimizerOptions& o, const std::string& section) {
  auto out_of_range = [&section](const char* field, double value, const char* range) {
    return OutOfRange(section, field, value, range);
  };
  auto finite = [](double v) { return std::isfinite(v); };
  if (!finite(o.lr) || o.lr <= 0) return out_of_range("lr", o.lr, "> 0");
  if (!finite(o.weight_decay) || o.weight_decay < 0) {
    return out_of_range("weight_decay", o.weight_decay, ">= 0");
  }
  switch (o.kind) {
    case OptimizerOptions::Kind::kSgd:
      if (!finite(o.momentum) || o.momentum < 0 || o.momentum >= 1) {
        return out_of_range("momentum", o.momentum, "[0, 1)");
      }
      if (!finite(o.dampening) || o.dampening < 0 || o.dampening > 1) {
        return out_of_range("dampening", o.dampening, "[0, 1]");
      }
      if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
        return Status::InvalidArgument(
            section + ".nesterov: true needs momentum > 0 and dampening 0 (as in torch.optim.SGD)");
      }
      break;
    case OptimizerOptions::Kind::kAdam:
    case OptimizerOptions::Kind::kAdamW:
      if (!finite(o.beta1) || o.beta1 < 0 || o.beta1 >= 1) {
        return out_of_range("beta1", o.beta1, "[0, 1)");
      }
      if (!finite(o.beta2) || o.beta2 < 0 || o.beta2 >= 1) {
        return out_of_range("beta2", o.beta2, "[0, 1)");
      }
      if (!finite(o.eps) || o.eps < 0) return out_of_range("eps", o.eps, ">= 0");
      break;
    case OptimizerOptions::Kind::kAdagrad:
      if (!finite(o.lr_decay) || o.lr_decay < 0) return out_of_range("lr_decay", o.lr_decay, ">= 0");
      if (!finite(o.initial_accumulator_value) || o.initial_accumulator_value < 0) {
        return out_of_range("initial_accumulator_value", o.initial_accumulator_value, ">= 0");
      }
      if (!finite(o.eps) || o.eps < 0) return out_of_range("eps", o.eps, ">= 0");
      break;
  }
  return ValidateLrSchedule(o.schedule, o.lr);
}

flatbuffers::Offset<wire::OptimizerConfig> OptimizerToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                           const OptimizerOptions& o) {
  return wire::CreateOptimizerConfig(fbb, static_cast<wire::OptimizerKind>(o.kind), o.lr, o.momentum,
                                     o.dampening, o.nesterov, o.weight_decay, o.beta1, o.beta2, o.eps,
                                     o.amsgrad, o.lr_decay, o.initial_accumulator_value,
                                     LrScheduleEnabled(o.schedule) ? LrScheduleToWire(fbb, o.schedule) : 0);
}

OptimizerOptions OptimizerFromWire(const wire::OptimizerConfig& config) {
  OptimizerOptions o;
  o.kind = static_cast<OptimizerOptions::Kind>(config.kind());
  o.lr = config.lr();
  o.momentum = config.momentum();
  o.dampening = config.dampening();
  o.nesterov = config.nesterov();
  o.weight_decay = config.weight_decay();
  o.beta1 = config.beta1();
  o.beta2 = config.beta2();
  o.eps = config.eps();
  o.amsgrad = config.amsgrad();
  o.lr_decay = config.lr_decay();
  o.initial_accumulator_value = config.initial_accumulator_value();
  o.schedule = LrScheduleFromWire(config.schedule());
  return o;
}

}  // namespace hetps
