// The names of the job's enumerations as the job file, the flags and the summary write them,
// and their wire forms (declared in common/job_config.h).
#include "common/job_config.h"

namespace hetps {

const char* ModeName(ConsistencyMode mode) {
  switch (mode) {
    case ConsistencyMode::kSync:
      return "sync";
    case ConsistencyMode::kAsync:
      return "async";
    case ConsistencyMode::kSsp:
      return "ssp";
    case ConsistencyMode::kAuto:
      return "auto";
    case ConsistencyMode::kDiloco:
      return "diloco";
  }
  return "?";
}

const char* BalanceName(Balance balance) {
  return balance == Balance::kSpeed ? "speed" : "none";
}

const char* AsyncBatchName(AsyncBatch batch) {
  return batch == AsyncBatch::kWhole ? "whole" : "share";
}

const char* WireDTypeName(wire::DType dtype) {
  switch (dtype) {
    case wire::DType::BF16:
      return "bf16";
    case wire::DType::F16:
      return "fp16";
    default:
      return "fp32";
  }
}

Result<wire::DType> ParseWireDType(const std::string& name) {
  if (name == "fp32") return wire::DType::F32;
  if (name == "bf16") return wire::DType::BF16;
  if (name == "fp16") return wire::DType::F16;
  return Status::InvalidArgument("wire_dtype: '" + name + "' is not a wire dtype; allowed: fp32, bf16, fp16");
}

const char* PseudoGradientDTypeName(bool int8) {
  return int8 ? "int8" : "wire_dtype";
}

Result<bool> ParsePseudoGradientDType(const std::string& name) {
  if (name == "int8") return true;
  if (name == "wire_dtype") return false;
  return Status::InvalidArgument("diloco.pseudo_gradient_dtype: '" + name +
                                 "' is not a pseudo-gradient dtype; allowed: wire_dtype, int8");
}

Result<ConsistencyMode> ParseMode(const std::string& name) {
  if (name == "sync") return ConsistencyMode::kSync;
  if (name == "async") return ConsistencyMode::kAsync;
  if (name == "ssp") return ConsistencyMode::kSsp;
  if (name == "auto") return ConsistencyMode::kAuto;
  if (name == "diloco") return ConsistencyMode::kDiloco;
  return Status::InvalidArgument("mode: '" + name +
                                 "' is not a mode; allowed: sync, async, ssp, auto, diloco");
}

wire::Mode ToWire(ConsistencyMode mode) {
  switch (mode) {
    case ConsistencyMode::kSync:
      return wire::Mode::Sync;
    case ConsistencyMode::kAsync:
      return wire::Mode::Async;
    case ConsistencyMode::kSsp:
      return wire::Mode::Ssp;
    case ConsistencyMode::kAuto:
      return wire::Mode::Auto;
    case ConsistencyMode::kDiloco:
      return wire::Mode::Diloco;
  }
  return wire::Mode::Sync;
}

ConsistencyMode FromWire(wire::Mode mode) {
  switch (mode) {
    case wire::Mode::Async:
      return ConsistencyMode::kAsync;
    case wire::Mode::Ssp:
      return ConsistencyMode::kSsp;
    case wire::Mode::Auto:
      return ConsistencyMode::kAuto;
    case wire::Mode::Diloco:
      return ConsistencyMode::kDiloco;
    default:
      return ConsistencyMode::kSync;
  }
}

flatbuffers::Offset<wire::DilocoConfig> DilocoToWire(flatbuffers::FlatBufferBuilder& fbb,
                                                     const DilocoOptions& d) {
  return wire::CreateDilocoConfig(
      fbb, d.round_steps, d.round_seconds, d.sync_share, d.min_round_seconds, d.max_round_seconds, d.overlap,
      d.int8_pseudo_gradients ? wire::DType::I8 : wire::DType::F32, d.async_rounds());
}

DilocoOptions DilocoFromWire(const wire::DilocoConfig* config) {
  DilocoOptions d;
  if (config == nullptr) return d;
  d.round_steps = config->round_steps();
  d.round_seconds = config->round_seconds();
  d.sync_share = config->sync_share();
  d.min_round_seconds = config->min_round_seconds();
  d.max_round_seconds = config->max_round_seconds();
  d.overlap = config->overlap();
  d.int8_pseudo_gradients = config->pseudo_gradient_dtype() == wire::DType::I8;
  d.async = config->async();
  return d;
}

const char* LossName(Loss loss) {
  switch (loss) {
    case Loss::kMse:
      return "mse";
    case Loss::kNll:
      return "nll";
    default:
      return "cross_entropy";
  }
}

Result<Loss> ParseLoss(const std::string& name) {
  if (name == "cross_entropy") return Loss::kCrossEntropy;
  if (name == "mse") return Loss::kMse;
  if (name == "nll") return Loss::kNll;
  return Status::InvalidArgument("loss: '" + name + "' is not a loss; allowed: cross_entropy, mse, nll");
}

wire::Loss ToWire(Loss loss) {
  switch (loss) {
    case Loss::kMse:
      return wire::Loss::Mse;
    case Loss::kNll:
      return wire::Loss::Nll;
    default:
      return wire::Loss::CrossEntropy;
  }
}

Loss FromWire(wire::Loss loss) {
  switch (loss) {
    case wire::Loss::Mse:
      return Loss::kMse;
    case wire::Loss::Nll:
      return Loss::kNll;
    default:
      return Loss::kCrossEntropy;
  }
}

}  // namespace hetps
